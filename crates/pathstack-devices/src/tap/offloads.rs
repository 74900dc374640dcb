//! The offloads a TAP negotiates with the kernel (`IFF_VNET_HDR`,
//! `TUNSETVNETHDRSZ`, `TUNSETOFFLOAD`) and the device capabilities they
//! amount to.

#[cfg(doc)] // only named in the docs
use super::TapDevice;
use super::IPV4_MAX;
use crate::sys;
use crate::vnet_hdr;
use pathstack_core::device::OffloadCaps;
use std::fs::File;

/// The offloads a [`TapDevice`] negotiated with the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapOffloads {
    /// Bytes of `virtio_net_hdr` in front of every frame: 12 or 10, 0 when
    /// the TAP was opened without `IFF_VNET_HDR` (offloads off or not
    /// supported).
    pub vnet_hdr_len: usize,
    /// The kernel accepted `TUN_F_CSUM`: it hands us frames with partial
    /// checksums (flagged `NEEDS_CSUM`) and completes ours.
    pub csum: bool,
    /// The kernel accepted `TUN_F_TSO4`: it hands us merged TCP/IPv4
    /// super-segments and segments ours.
    pub tso4: bool,
}

impl TapOffloads {
    /// The device capabilities these amount to.
    ///
    /// Writing partial checksums and GSO frames needs only the header (the
    /// kernel takes them from any `IFF_VNET_HDR` writer), but we offer them
    /// only when the kernel accepted the matching receive offload too: a
    /// kernel that refuses `TUN_F_CSUM` is one we do not trust to finish
    /// our checksums either.
    pub fn caps(&self) -> OffloadCaps {
        let csum = self.vnet_hdr_len != 0 && self.csum;
        let tso = csum && self.tso4;
        OffloadCaps {
            tx_checksum: csum,
            rx_checksum: csum,
            tso4_max: if tso { IPV4_MAX } else { 0 },
            rx_gro: tso,
        }
    }
}

/// Asks the kernel for the 12-byte header (10 if refused), then for
/// checksum and TSO4 offload, checksum alone, or nothing, taking what it
/// accepts (see [`TapOffloads`]).
pub(super) fn negotiate(file: &File) -> TapOffloads {
    let vnet_hdr_len = if sys::tun_set_vnet_hdr_sz(file, vnet_hdr::LEN_MRG as libc::c_int).is_ok() {
        vnet_hdr::LEN_MRG
    } else {
        // The kernel's default size.
        vnet_hdr::LEN_LEGACY
    };
    let (csum, tso4) = if sys::tun_set_offload(file, libc::TUN_F_CSUM | libc::TUN_F_TSO4).is_ok() {
        (true, true)
    } else if sys::tun_set_offload(file, libc::TUN_F_CSUM).is_ok() {
        (true, false)
    } else {
        (false, false)
    };
    TapOffloads {
        vnet_hdr_len,
        csum,
        tso4,
    }
}
