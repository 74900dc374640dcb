//! The user-space host's hardware address behind a TAP.

/// A MAC for the user-space host, distinct from the kernel-side address.
///
/// The kernel's TAP interface is a bridge port, and a bridge delivers frames
/// addressed to a port's own MAC locally instead of forwarding them out of
/// that port; so the host behind the TAP must not reuse the kernel's address.
/// Flipping the low bit of the last byte gives a different, stable address;
/// setting the locally-administered bit and clearing the multicast bit keeps
/// it a valid unicast address of our own (IEEE 802, clause 9.2).
pub fn host_mac_for(kernel_mac: [u8; 6]) -> [u8; 6] {
    let mut mac = kernel_mac;
    mac[0] = (mac[0] | 0x02) & !0x01;
    mac[5] ^= 0x01;
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_mac_differs_from_kernel_mac_and_is_local_unicast() {
        for kmac in [
            [0u8; 6],
            [0xff; 6],
            [0x02, 0, 0, 0, 0, 1],
            [0x5a, 1, 2, 3, 4, 5],
        ] {
            let mac = host_mac_for(kmac);
            assert_ne!(mac, kmac);
            assert_eq!(mac[0] & 0x01, 0, "unicast");
            assert_eq!(mac[0] & 0x02, 0x02, "locally administered");
        }
    }
}
