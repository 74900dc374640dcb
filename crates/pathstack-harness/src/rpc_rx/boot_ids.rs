//! Recorded frames made to speak of other incarnations: the boot ids in a
//! BIDCTL message and in the BID header of a BLAST message, and the
//! checksums after them.

use super::track::{be16, be32, rpc_payload};
use crate::frames::fix_checksums;
use pathstack_inet::wire::checksum;

/// Puts `src` and `dst` into the frame's boot ids (a BIDCTL message's, or
/// the BID header of a short BLAST message or a first fragment; a zero
/// destination, "unknown", stays zero), lets `tags` rewrite the BIDCTL
/// message's 20 octets before its checksum is recomputed, and fixes the
/// IPv4 and transport checksums.
pub(crate) fn set_boot_ids(f: &mut [u8], src: u32, dst: u32, tags: impl FnOnce(&mut [u8])) {
    if let Some((bidctl, at)) = rpc_payload(f) {
        let at = at.min(f.len());
        let m = &mut f[at..];
        if bidctl && m.len() >= 20 {
            m[4..8].copy_from_slice(&src.to_be_bytes());
            if m[8..12] != [0; 4] {
                m[8..12].copy_from_slice(&dst.to_be_bytes());
            }
            tags(&mut m[..20]);
            m[2] = 0;
            m[3] = 0;
            let c = checksum::compute(&[&m[..20]]);
            m[2..4].copy_from_slice(&c);
        } else if !bidctl && m.len() >= 32 {
            let seq = be32(m, 4).unwrap_or(0);
            let mask = be16(m, 18).unwrap_or(0);
            if seq == 0 || mask == 1 {
                m[20..24].copy_from_slice(&src.to_be_bytes());
                m[24..28].copy_from_slice(&dst.to_be_bytes());
            }
        }
    }
    fix_checksums(f);
}
