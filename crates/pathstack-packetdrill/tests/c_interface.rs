//! The shim driven through its C interface, as packetdrill drives it, but
//! without packetdrill (GPL, never part of this repository): the exported
//! `packetdrill_interface_init` fills the function table, and the tests
//! call its entries with raw pointers and hand-built IP packets, checking
//! the packets that come out, the results, `errno`, and the clock.
//!
//! Calling C function pointers is `unsafe`: this file is the one place
//! besides the crate's `ffi.rs` that has it (see the crate docs); every
//! call passes live, correctly sized buffers.

use libc::{c_int, c_void, sockaddr, sockaddr_in, socklen_t};
use pathstack_packetdrill::{packetdrill_interface_init, PacketdrillInterface};
use std::mem::MaybeUninit;
use std::net::Ipv4Addr;

const LOCAL: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
const REMOTE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;

/// The function table of one session, freed on drop.
struct Shim(PacketdrillInterface);

impl Drop for Shim {
    fn drop(&mut self) {
        // SAFETY: `free` with the table's own userdata, once.
        unsafe { (self.0.free.unwrap())(self.0.userdata) }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn sin(ip: Ipv4Addr, port: u16) -> sockaddr_in {
    sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    }
}

impl Shim {
    fn new() -> Shim {
        let mut ifc = MaybeUninit::<PacketdrillInterface>::uninit();
        // SAFETY: a NUL-terminated flag string and room for the table,
        // which the call fills whole.
        unsafe {
            packetdrill_interface_init(c"local_ip=192.168.0.1".as_ptr(), ifc.as_mut_ptr());
            Shim(ifc.assume_init())
        }
    }

    fn ud(&self) -> *mut c_void {
        self.0.userdata
    }

    fn socket(&self, domain: c_int, ty: c_int) -> c_int {
        // SAFETY: plain integers.
        unsafe { (self.0.socket.unwrap())(self.ud(), domain, ty, libc::IPPROTO_TCP) }
    }

    fn setsockopt_int(&self, fd: c_int, level: c_int, name: c_int, v: c_int) -> c_int {
        // SAFETY: a live int and its size.
        unsafe {
            (self.0.setsockopt.unwrap())(self.ud(), fd, level, name, (&v as *const c_int).cast(), 4)
        }
    }

    fn getsockopt_int(&self, fd: c_int, level: c_int, name: c_int) -> (c_int, c_int) {
        let mut v: c_int = -1;
        let mut len: socklen_t = 4;
        // SAFETY: a live int and its size, both writable.
        let r = unsafe {
            (self.0.getsockopt.unwrap())(
                self.ud(),
                fd,
                level,
                name,
                (&mut v as *mut c_int).cast(),
                &mut len,
            )
        };
        (r, v)
    }

    fn bind(&self, fd: c_int, port: u16) -> c_int {
        let a = sin(Ipv4Addr::UNSPECIFIED, port);
        // SAFETY: a live sockaddr_in and its size.
        unsafe {
            (self.0.bind.unwrap())(
                self.ud(),
                fd,
                (&a as *const sockaddr_in).cast::<sockaddr>(),
                std::mem::size_of::<sockaddr_in>() as socklen_t,
            )
        }
    }

    fn listen(&self, fd: c_int) -> c_int {
        // SAFETY: plain integers.
        unsafe { (self.0.listen.unwrap())(self.ud(), fd, 16) }
    }

    fn accept(&self, fd: c_int) -> (c_int, sockaddr_in) {
        let mut a = sin(Ipv4Addr::UNSPECIFIED, 0);
        let mut len = std::mem::size_of::<sockaddr_in>() as socklen_t;
        // SAFETY: a live, writable sockaddr_in and its size.
        let r = unsafe {
            (self.0.accept.unwrap())(
                self.ud(),
                fd,
                (&mut a as *mut sockaddr_in).cast::<sockaddr>(),
                &mut len,
            )
        };
        (r, a)
    }

    fn connect(&self, fd: c_int, ip: Ipv4Addr, port: u16) -> c_int {
        let a = sin(ip, port);
        // SAFETY: a live sockaddr_in and its size.
        unsafe {
            (self.0.connect.unwrap())(
                self.ud(),
                fd,
                (&a as *const sockaddr_in).cast::<sockaddr>(),
                std::mem::size_of::<sockaddr_in>() as socklen_t,
            )
        }
    }

    fn fcntl_nonblock(&self, fd: c_int) -> c_int {
        // SAFETY: integers; F_SETFL's argument is an int (see ffi.rs).
        unsafe { (self.0.fcntl.unwrap())(self.ud(), fd, libc::F_SETFL, libc::O_NONBLOCK as _) }
    }

    fn read(&self, fd: c_int, buf: &mut [u8]) -> isize {
        // SAFETY: a live, writable buffer and its length.
        unsafe { (self.0.read.unwrap())(self.ud(), fd, buf.as_mut_ptr().cast(), buf.len()) }
    }

    fn write(&self, fd: c_int, data: &[u8]) -> isize {
        // SAFETY: a live buffer and its length.
        unsafe { (self.0.write.unwrap())(self.ud(), fd, data.as_ptr().cast(), data.len()) }
    }

    fn close(&self, fd: c_int) -> c_int {
        // SAFETY: an integer.
        unsafe { (self.0.close.unwrap())(self.ud(), fd) }
    }

    fn now_us(&self) -> i64 {
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: a live, writable timeval; the timezone may be null.
        unsafe { (self.0.gettimeofday.unwrap())(self.ud(), &mut tv, std::ptr::null_mut()) };
        tv.tv_sec * 1_000_000 + tv.tv_usec
    }

    fn usleep(&self, us: u32) {
        // SAFETY: an integer.
        unsafe { (self.0.usleep.unwrap())(self.ud(), us) };
    }

    fn inject(&self, packet: &[u8]) -> c_int {
        // SAFETY: a live buffer and its length.
        unsafe { (self.0.netdev_send.unwrap())(self.ud(), packet.as_ptr().cast(), packet.len()) }
    }

    /// The next packet the stack sends, and when (µs, gettimeofday's clock).
    fn sniff(&self) -> (Seg, i64) {
        let mut buf = vec![0u8; 70_000];
        let mut n = buf.len();
        let mut t: libc::c_longlong = 0;
        // SAFETY: a live, writable buffer whose size `n` says, two live outs.
        let r = unsafe {
            (self.0.netdev_receive.unwrap())(self.ud(), buf.as_mut_ptr().cast(), &mut n, &mut t)
        };
        assert_eq!(r, 0);
        (Seg::parse(&buf[..n]), t)
    }
}

/// A TCP segment in an IPv4 packet, as far as the tests look at it.
#[derive(Debug)]
struct Seg {
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    seq: u32,
    ack: u32,
    flags: u8,
    mss: Option<u16>,
    payload: Vec<u8>,
}

impl Seg {
    fn parse(p: &[u8]) -> Seg {
        assert_eq!(p[0] >> 4, 4, "not IPv4: {p:?}");
        assert_eq!(p[9], 6, "not TCP");
        let ihl = usize::from(p[0] & 0xf) * 4;
        let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
        let t = &p[ihl..total];
        let doff = usize::from(t[12] >> 4) * 4;
        let mut mss = None;
        let mut o = &t[20..doff];
        while let Some(&kind) = o.first() {
            match kind {
                0 => break,
                1 => o = &o[1..],
                _ => {
                    let len = usize::from(o[1]);
                    if kind == 2 {
                        mss = Some(u16::from_be_bytes([o[2], o[3]]));
                    }
                    o = &o[len..];
                }
            }
        }
        let ip = |at: usize| Ipv4Addr::new(p[at], p[at + 1], p[at + 2], p[at + 3]);
        let port = |at: usize| u16::from_be_bytes([t[at], t[at + 1]]);
        let word = |at: usize| u32::from_be_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]]);
        Seg {
            src: (ip(12), port(0)),
            dst: (ip(16), port(2)),
            seq: word(4),
            ack: word(8),
            flags: t[13],
            mss,
            payload: t[doff..].to_vec(),
        }
    }
}

fn sum16(data: &[u8], mut acc: u32) -> u32 {
    for c in data.chunks(2) {
        acc += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// An IPv4/TCP packet from the remote end, checksums right.
fn packet(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    mss: Option<u16>,
    payload: &[u8],
) -> Vec<u8> {
    let opts: Vec<u8> = mss.map_or(Vec::new(), |m| vec![2, 4, (m >> 8) as u8, m as u8]);
    packet_with(sport, dport, seq, ack, flags, &opts, payload)
}

/// NOP, NOP, timestamps (RFC 7323 §3).
fn ts(val: u32, ecr: u32) -> Vec<u8> {
    let mut o = vec![1, 1, 8, 10];
    o.extend_from_slice(&val.to_be_bytes());
    o.extend_from_slice(&ecr.to_be_bytes());
    o
}

/// [`packet`] with the options given (a multiple of four octets).
fn packet_with(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    opts: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let tcp_len = 20 + opts.len() + payload.len();
    let mut t = Vec::with_capacity(tcp_len);
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.push((((20 + opts.len()) / 4) as u8) << 4);
    t.push(flags);
    t.extend_from_slice(&32_000u16.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]);
    t.extend_from_slice(opts);
    t.extend_from_slice(payload);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&REMOTE.octets());
    pseudo.extend_from_slice(&LOCAL.octets());
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(tcp_len as u16).to_be_bytes());
    let c = fold(sum16(&t, sum16(&pseudo, 0)));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0];
    ip[2..4].copy_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
    ip.extend_from_slice(&REMOTE.octets());
    ip.extend_from_slice(&LOCAL.octets());
    let c = fold(sum16(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&t);
    ip
}

#[test]
fn passive_open_data_both_ways_and_close() {
    let shim = Shim::new();
    let l = shim.socket(libc::AF_INET, libc::SOCK_STREAM);
    assert!(l >= 0);
    assert_eq!(
        shim.setsockopt_int(l, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1),
        0
    );
    assert_eq!(shim.bind(l, 8080), 0);
    assert_eq!(shim.listen(l), 0);

    // The handshake, with a SYN from the script's remote address.
    let t0 = shim.now_us();
    assert_eq!(
        shim.inject(&packet(5000, 8080, 100, 0, SYN, Some(1000), &[])),
        0
    );
    let (syn_ack, t1) = shim.sniff();
    assert_eq!(syn_ack.flags, SYN | ACK);
    assert_eq!((syn_ack.src, syn_ack.dst), ((LOCAL, 8080), (REMOTE, 5000)));
    assert_eq!(syn_ack.ack, 101);
    assert_eq!(syn_ack.mss, Some(1460));
    assert!(t1 >= t0 && t1 - t0 < 1000, "SYN-ACK at once: {t0} -> {t1}");
    let iss = syn_ack.seq;
    assert_eq!(
        shim.inject(&packet(5000, 8080, 101, iss + 1, ACK, None, &[])),
        0
    );
    let (c, peer) = shim.accept(l);
    assert!(c >= 0 && c != l);
    assert_eq!(u16::from_be(peer.sin_port), 5000);
    assert_eq!(Ipv4Addr::from(u32::from_be(peer.sin_addr.s_addr)), REMOTE);
    assert_eq!(
        shim.getsockopt_int(c, libc::IPPROTO_TCP, libc::TCP_MAXSEG),
        (0, 1000)
    );

    // Data in: readable at once, and — the connection's first data —
    // ACKed at once (Linux's quick-ACK mode, `quick_ack.rs`).
    let t2 = shim.now_us();
    assert_eq!(
        shim.inject(&packet(5000, 8080, 101, iss + 1, ACK | PSH, None, b"hello")),
        0
    );
    let mut buf = [0u8; 64];
    assert_eq!(shim.read(c, &mut buf), 5);
    assert_eq!(&buf[..5], b"hello");
    let (ack, t3) = shim.sniff();
    assert_eq!((ack.flags & ACK, ack.ack, ack.payload.len()), (ACK, 106, 0));
    let delay = t3 - t2;
    assert!(delay < 1000, "quick ACK after {delay} µs");

    // Data out, then nothing to read (blocking socket made non-blocking).
    assert_eq!(shim.write(c, b"world"), 5);
    let (data, _) = shim.sniff();
    assert_eq!(data.payload, b"world");
    assert_eq!(data.seq, iss + 1);
    assert_eq!(shim.fcntl_nonblock(c), 0);
    assert_eq!(shim.read(c, &mut buf), -1);
    assert_eq!(errno(), libc::EAGAIN);

    // The peer ACKs and closes; we read the end and close: our FIN.
    assert_eq!(
        shim.inject(&packet(5000, 8080, 106, iss + 6, ACK | FIN, None, &[])),
        0
    );
    assert_eq!(shim.read(c, &mut buf), 0);
    assert_eq!(shim.close(c), 0);
    let fin = loop {
        let (s, _) = shim.sniff();
        if s.flags & FIN != 0 {
            break s;
        }
    };
    assert_eq!((fin.seq, fin.ack), (iss + 6, 107));
    assert_eq!(shim.close(c), -1);
    assert_eq!(errno(), libc::EBADF);
    assert_eq!(shim.close(l), 0);
}

#[test]
fn refused_nonblocking_connect_and_errno_values() {
    let shim = Shim::new();
    assert_eq!(shim.socket(libc::AF_INET6, libc::SOCK_STREAM), -1);
    assert_eq!(errno(), libc::EAFNOSUPPORT);
    let fd = shim.socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK);
    assert!(fd >= 0);
    assert_eq!(shim.connect(fd, REMOTE, 8080), -1);
    assert_eq!(errno(), libc::EINPROGRESS);
    let (syn, _) = shim.sniff();
    assert_eq!(syn.flags, SYN);
    assert_eq!(syn.dst, (REMOTE, 8080));
    assert_eq!(syn.mss, Some(1460));
    assert_eq!(shim.connect(fd, REMOTE, 8080), -1);
    assert_eq!(errno(), libc::EALREADY);

    // Nothing listens there: a reset refuses the connection.
    let rst = packet(8080, syn.src.1, 0, syn.seq + 1, RST | ACK, None, &[]);
    assert_eq!(shim.inject(&rst), 0);
    assert_eq!(
        shim.getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR),
        (0, libc::ECONNREFUSED)
    );
    let mut buf = [0u8; 8];
    assert_eq!(shim.read(99, &mut buf), -1);
    assert_eq!(errno(), libc::EBADF);
    assert_eq!(
        shim.setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 1),
        -1
    );
    assert_eq!(errno(), libc::EOPNOTSUPP);
}

#[test]
fn sleeping_moves_the_clock_and_fires_timers() {
    let shim = Shim::new();
    let fd = shim.socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK);
    assert_eq!(shim.connect(fd, REMOTE, 8080), -1);
    let (syn, t_syn) = shim.sniff();
    // No answer: the SYN is sent again after the initial RTO, 1 s
    // (RFC 6298 §2.1), and not a moment before.
    shim.usleep(900_000);
    let (again, t_again) = shim.sniff();
    assert_eq!((again.flags, again.seq), (SYN, syn.seq));
    let rto = t_again - t_syn;
    assert!(
        (1_000_000..1_001_000).contains(&rto),
        "SYN retransmitted after {rto} µs"
    );
    assert!(shim.now_us() >= t_again);
}

#[test]
fn a_segment_acknowledging_unsent_data_does_not_move_ts_recent() {
    // packetdrill's ts_recent/invalid_ack.pkt: a FIN acknowledging what
    // was never sent, with a far-future TSval, is dropped (RFC 9293
    // §3.10.7.4 fifth); had its TSval become TS.Recent, PAWS (RFC 7323
    // §5) would drop the peer's next, valid segment.
    let shim = Shim::new();
    let l = shim.socket(libc::AF_INET, libc::SOCK_STREAM);
    assert_eq!(shim.bind(l, 8080), 0);
    assert_eq!(shim.listen(l), 0);
    // MSS 1000, SACK permitted, timestamps.
    let syn_opts = [vec![2, 4, 0x03, 0xe8, 4, 2], ts(100, 0)[2..].to_vec()].concat();
    assert_eq!(
        shim.inject(&packet_with(5000, 8080, 0, 0, SYN, &syn_opts, &[])),
        0
    );
    let (syn_ack, _) = shim.sniff();
    let iss = syn_ack.seq;
    let ack = packet_with(5000, 8080, 1, iss + 1, ACK, &ts(200, 100), &[]);
    assert_eq!(shim.inject(&ack), 0);
    let (c, _) = shim.accept(l);
    assert!(c >= 0);
    let bad = packet_with(5000, 8080, 1, iss + 9999, ACK | FIN, &ts(200_000, 100), &[]);
    assert_eq!(shim.inject(&bad), 0);
    let data = packet_with(5000, 8080, 1, iss + 1, ACK, &ts(201, 100), &[7u8; 1000]);
    assert_eq!(shim.inject(&data), 0);
    let mut buf = [0u8; 2000];
    assert_eq!(shim.fcntl_nonblock(c), 0);
    assert_eq!(shim.read(c, &mut buf), 1000, "errno {}", errno());
    let acked = loop {
        let (s, _) = shim.sniff();
        if s.ack == 1001 {
            break s;
        }
    };
    assert_eq!(acked.flags & FIN, 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Nothing packetdrill injects makes the shim or the host panic
    /// (malformed input is dropped and counted): after any bytes, a
    /// listener still answers a SYN.
    #[test]
    fn any_bytes_injected_leave_the_host_working(
        junk in proptest::collection::vec(
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1600), 1..8),
        ipv4 in proptest::prelude::any::<bool>(),
    ) {
        let shim = Shim::new();
        let l = shim.socket(libc::AF_INET, libc::SOCK_STREAM);
        proptest::prop_assert_eq!(shim.bind(l, 8080), 0);
        proptest::prop_assert_eq!(shim.listen(l), 0);
        for mut p in junk {
            if ipv4 && !p.is_empty() {
                p[0] = 0x45;
            }
            let _ = shim.inject(&p);
        }
        shim.usleep(10_000);
        proptest::prop_assert_eq!(shim.inject(&packet(5000, 8080, 100, 0, SYN, Some(1000), &[])), 0);
        let syn_ack = loop {
            let (s, _) = shim.sniff();
            if s.flags == SYN | ACK {
                break s;
            }
        };
        proptest::prop_assert_eq!(syn_ack.ack, 101);
    }
}
