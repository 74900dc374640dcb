//! Frames a test plays the peer with: the Internet checksum, Ethernet
//! framing and ARP (shared by the fast-form differential tests).

/// The Internet checksum (RFC 1071) of the concatenation of `parts`, as
/// the value to store (big-endian); an odd part's last byte pairs with the
/// next part's first, as in one buffer.
pub fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    let mut odd: Option<u8> = None;
    for p in parts {
        for &b in *p {
            match odd.take() {
                Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet II frame carrying an IPv4 datagram (`ip` header, then
/// `payload`), padded to the 60-byte minimum.
pub fn ipv4_frame(dst_mac: [u8; 6], src_mac: [u8; 6], ip: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + ip.len() + payload.len());
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(ip);
    f.extend_from_slice(payload);
    f.resize(f.len().max(60), 0);
    f
}

/// An ARP packet (RFC 826, `op` 1 request, 2 reply) from `ip` at `mac`,
/// sent to `dst_mac`, asking for or answering the host at `us_ip`,
/// `us_mac`.
pub fn arp(
    op: u8,
    dst_mac: [u8; 6],
    mac: [u8; 6],
    ip: [u8; 4],
    us_mac: [u8; 6],
    us_ip: [u8; 4],
) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, op]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&ip);
    f.extend_from_slice(if op == 1 { &[0; 6] } else { &us_mac });
    f.extend_from_slice(&us_ip);
    f.resize(60, 0);
    f
}
