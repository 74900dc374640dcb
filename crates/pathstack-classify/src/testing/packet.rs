//! Builds Ethernet frames for classification tests.
//!
//! Hand-written instead of etherparse's `PacketBuilder` because tests need
//! what a builder refuses to make: IPv4 options of any length, fragments and
//! truncated frames. The test `inet_matches_etherparse` parses the output
//! with etherparse to check the layout.

/// The transport carried by a test frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// An ARP frame (ethertype 0x0806, 28 zero bytes).
    Arp,
    /// IPv4 with the given protocol and 8 bytes of opaque payload (ICMP, ...).
    Ip(u8),
    /// IPv4 + TCP (20-byte header plus `tcp_options` 32-bit words).
    Tcp,
    /// IPv4 + UDP.
    Udp,
}

/// A frame as seen by the receiving host: `laddr`/`lport` are the
/// destination (local) side, `raddr`/`rport` the source (remote) side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketSpec {
    /// What the frame carries.
    pub payload: Payload,
    /// Local (destination) IPv4 address.
    pub laddr: [u8; 4],
    /// Remote (source) IPv4 address.
    pub raddr: [u8; 4],
    /// Local (destination) port.
    pub lport: u16,
    /// Remote (source) port.
    pub rport: u16,
    /// IPv4 option words (0..=10), padding the header past 20 bytes.
    pub ip_options: u8,
    /// TCP option words (0..=10).
    pub tcp_options: u8,
    /// Set the IPv4 more-fragments flag.
    pub fragment: bool,
    /// Drop this many bytes from the end of the frame.
    pub truncate: u16,
}

impl PacketSpec {
    /// A TCP segment from `raddr:rport` to `laddr:lport`.
    pub fn tcp(laddr: [u8; 4], lport: u16, raddr: [u8; 4], rport: u16) -> Self {
        PacketSpec {
            payload: Payload::Tcp,
            laddr,
            raddr,
            lport,
            rport,
            ip_options: 0,
            tcp_options: 0,
            fragment: false,
            truncate: 0,
        }
    }

    /// A UDP datagram from `raddr:rport` to `laddr:lport`.
    pub fn udp(laddr: [u8; 4], lport: u16, raddr: [u8; 4], rport: u16) -> Self {
        PacketSpec {
            payload: Payload::Udp,
            ..Self::tcp(laddr, lport, raddr, rport)
        }
    }

    /// Writes the frame into `out` (cleared first).
    pub fn build_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&[0x02, 0, 0, 0, 0, 1]); // dst MAC
        out.extend_from_slice(&[0x02, 0, 0, 0, 0, 2]); // src MAC
        let ethertype: u16 = if self.payload == Payload::Arp {
            0x0806
        } else {
            0x0800
        };
        out.extend_from_slice(&ethertype.to_be_bytes());
        let (proto, l4): (u8, Vec<u8>) = match self.payload {
            Payload::Arp => {
                out.extend_from_slice(&[0; 28]);
                return self.truncate_frame(out);
            }
            Payload::Ip(p) => (p, vec![0; 8]),
            Payload::Tcp => {
                let words = self.tcp_options.min(10);
                let mut h = vec![0; 20 + 4 * usize::from(words)];
                h[0..2].copy_from_slice(&self.rport.to_be_bytes());
                h[2..4].copy_from_slice(&self.lport.to_be_bytes());
                h[12] = (5 + words) << 4;
                h[13] = 0x10; // ACK
                h[14..16].copy_from_slice(&1024u16.to_be_bytes());
                for w in h[20..].chunks_mut(4) {
                    w.copy_from_slice(&[1, 1, 1, 1]); // NOPs
                }
                h.extend_from_slice(b"data");
                (6, h)
            }
            Payload::Udp => {
                let mut h = vec![0; 8];
                h[0..2].copy_from_slice(&self.rport.to_be_bytes());
                h[2..4].copy_from_slice(&self.lport.to_be_bytes());
                h[4..6].copy_from_slice(&12u16.to_be_bytes());
                h.extend_from_slice(b"data");
                (17, h)
            }
        };
        let words = self.ip_options.min(10);
        let ihl = 5 + words;
        let total = usize::from(ihl) * 4 + l4.len();
        let start = out.len();
        out.push(0x40 | ihl);
        out.push(0);
        out.extend_from_slice(&(total as u16).to_be_bytes());
        out.extend_from_slice(&[0, 1]); // identification
        out.extend_from_slice(&[if self.fragment { 0x20 } else { 0x40 }, 0]); // MF or DF
        out.push(64);
        out.push(proto);
        out.extend_from_slice(&[0, 0]); // checksum, filled below
        out.extend_from_slice(&self.raddr);
        out.extend_from_slice(&self.laddr);
        for _ in 0..words {
            out.extend_from_slice(&[1, 1, 1, 1]); // NOP options
        }
        let sum = ipv4_checksum(&out[start..]);
        out[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
        out.extend_from_slice(&l4);
        self.truncate_frame(out);
    }

    /// The frame as a new vector.
    pub fn build(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.build_into(&mut v);
        v
    }

    fn truncate_frame(&self, out: &mut Vec<u8>) {
        let keep = out.len().saturating_sub(usize::from(self.truncate));
        out.truncate(keep);
    }
}

/// RFC 791 header checksum (one's complement of the one's complement sum).
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
