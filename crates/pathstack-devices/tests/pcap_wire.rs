//! pcap capture over the in-memory wire (no root needed): the floor
//! responder on one end, captured; hand-built requests from the other end.
//! The file must read back with pcap-file and open in tshark with no
//! malformed frame and no bad checksum.

use etherparse::PacketBuilder;
use pathstack_core::device::memory::{memory_pair, MemoryConfig};
use pathstack_core::device::Device;
use pathstack_core::{Instant, MsgPool, PoolConfig};
use pathstack_devices::raw_responder::{Answer, RawResponder, Served};
use pathstack_devices::PcapCapture;
use pathstack_testutil::{assert_tshark_clean, have_tshark, tshark_frames, TempFile};
use pcap_file::pcap::PcapReader;
use pcap_file::DataLink;

const PEER: [u8; 4] = [10, 77, 1, 2];
const HOST: [u8; 4] = [10, 77, 1, 1];

fn arp_request(src: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&PEER);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&HOST);
    f.resize(60, 0);
    f
}

#[test]
fn captured_floor_session_over_the_wire_is_clean() {
    let config = MemoryConfig::default();
    let (mut peer, host) = memory_pair(config);
    let pool = MsgPool::new(PoolConfig::small(32));
    let path = TempFile::new("wire-session.pcap");
    let mut host = PcapCapture::create(host, &path).expect("create capture");
    let mut floor = RawResponder::new(config.mac_b, HOST.into());

    let mut icmp = Vec::new();
    PacketBuilder::ethernet2(config.mac_a, config.mac_b)
        .ipv4(PEER, HOST, 64)
        .icmpv4_echo_request(0x77, 1)
        .write(&mut icmp, &[0xab; 56])
        .unwrap();
    let mut udp = Vec::new();
    PacketBuilder::ethernet2(config.mac_a, config.mac_b)
        .ipv4(PEER, HOST, 64)
        .udp(40_000, 7)
        .write(&mut udp, b"hello pathstack")
        .unwrap();

    let expected = [Answer::ArpReply, Answer::IcmpEchoReply, Answer::UdpEcho];
    for (frame, want) in [arp_request(config.mac_a), icmp, udp].iter().zip(expected) {
        peer.transmit(pool.alloc_copy(frame).unwrap(), Instant::ZERO)
            .unwrap();
        let served = floor.serve(&mut host, &pool, Instant::ZERO).unwrap();
        assert_eq!(served, Served::Answered(want));
        let reply = peer
            .receive(&pool, Instant::ZERO)
            .unwrap()
            .expect("a reply");
        assert_eq!(reply.len(), frame.len());
        assert_eq!(&reply.as_slice()[0..6], &config.mac_a);
    }
    let stats = host.capture_stats();
    assert_eq!(
        (stats.frames_in, stats.frames_out, stats.write_errors),
        (3, 3, 0)
    );
    drop(host); // flushes the buffered file

    let file = std::fs::File::open(&path).unwrap();
    let mut reader = PcapReader::new(file).expect("pcap header");
    assert_eq!(reader.header().datalink, DataLink::ETHERNET);
    let mut n = 0;
    let mut last = std::time::Duration::ZERO;
    while let Some(p) = reader.next_packet() {
        let p = p.expect("pcap record");
        assert!(p.timestamp >= last, "timestamps go forward");
        assert!(
            p.timestamp.as_secs() > 1_600_000_000,
            "wall-clock timestamps"
        );
        last = p.timestamp;
        n += 1;
    }
    assert_eq!(n, 6);

    if let Some(frames) = assert_tshark_clean(&path) {
        assert_eq!(frames, 6);
        assert_eq!(tshark_frames(&path, "arp.opcode == 2").len(), 1);
        assert_eq!(tshark_frames(&path, "icmp.type == 0").len(), 1);
        assert_eq!(tshark_frames(&path, "udp.srcport == 7").len(), 1);
    } else {
        assert!(!have_tshark());
    }
}
