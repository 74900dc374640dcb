//! Frames with a `virtio_net_hdr` in front (offloads on): the header our
//! offload annotations ask for on the way out, and on the way in the
//! annotations the kernel's header gives, with small frames copied out of
//! the large super-segment buffer (see the [module docs](super)).

use super::{TapDevice, ETHERTYPE_IPV4, ETH_HEADER_LEN, GSO_FRAME_MAX};
use crate::vnet_hdr::{self, VnetHeader, VnetRepr};
use pathstack_core::device::DeviceError;
use pathstack_core::{Msg, MsgPool};
use std::io::{self, IoSlice};

impl TapDevice {
    /// The `virtio_net_hdr` for `frame`: what its offload annotation asks
    /// for, with `csum_start` found from the frame's own headers
    /// (Ethernet, then the IPv4 header length) so that the stages above
    /// need not know what the layers below them push.
    fn tx_vnet_repr(&self, frame: &Msg) -> Result<VnetRepr, &'static str> {
        let o = frame.anno().offload();
        if o.tx_csum_offset == 0 && o.tx_gso_size == 0 {
            return Ok(VnetRepr::default());
        }
        let b = frame.as_slice();
        if b.get(12..14) != Some(&ETHERTYPE_IPV4[..]) {
            return Err("offload asked for a frame that is not IPv4");
        }
        let ihl = usize::from(b.get(ETH_HEADER_LEN).ok_or("truncated IPv4 header")? & 0x0f) * 4;
        let start = ETH_HEADER_LEN + ihl;
        if ihl < 20 || start + usize::from(o.tx_csum_offset) + 2 > b.len() {
            return Err("checksum offload outside the frame");
        }
        // Only the offsets matter to the kernel; the casts hold because the
        // frame is at most GSO_FRAME_MAX bytes (checked by the caller).
        let needs_csum =
            (o.tx_csum_offset != 0).then_some((start as u16, u16::from(o.tx_csum_offset)));
        let gso_tcpv4 = if o.tx_gso_size != 0 {
            if needs_csum.is_none() {
                // The kernel refuses a TCP GSO frame without a partial
                // checksum (it must redo the checksum of every segment).
                return Err("segmentation offload without checksum offload");
            }
            let data_off = b.get(start + 12).ok_or("truncated TCP header")?;
            let hdr_len = start + usize::from(data_off >> 4) * 4;
            if hdr_len > b.len() {
                return Err("truncated TCP header");
            }
            Some((o.tx_gso_size, hdr_len as u16))
        } else {
            None
        };
        Ok(VnetRepr {
            needs_csum,
            data_valid: false,
            gso_tcpv4,
            ecn: false,
        })
    }

    /// `transmit` of a frame already checked against the size limit, with
    /// the `hl`-byte header in front: one `writev(2)`.
    pub(super) fn transmit_vnet(&mut self, frame: &Msg, hl: usize) -> Result<(), DeviceError> {
        let len = frame.len();
        let repr = match self.tx_vnet_repr(frame) {
            Ok(r) => r,
            Err(what) => {
                let e = io::Error::new(io::ErrorKind::InvalidInput, what);
                return Err(self.io_error("writing to", e));
            }
        };
        let mut hdr = [0u8; vnet_hdr::LEN_MRG];
        match VnetHeader::new_checked(&mut hdr[..hl], hl) {
            Ok(mut h) => repr.emit(&mut h),
            Err(e) => {
                let e = io::Error::new(io::ErrorKind::InvalidInput, e);
                return Err(self.io_error("writing to", e));
            }
        }
        self.write_frame(
            &[IoSlice::new(&hdr[..hl]), IoSlice::new(frame.as_slice())],
            len,
        )
    }

    /// `receive` with a `virtio_net_hdr` in front of each frame.
    pub(super) fn receive_vnet(&mut self, pool: &MsgPool) -> Result<Option<Msg>, DeviceError> {
        let hl = self.offloads.vnet_hdr_len;
        let mut big = self.rx_buffer(pool, hl + GSO_FRAME_MAX)?;
        let n = match self.read_into(&mut big) {
            Ok(Some(n)) => n,
            other => {
                big.truncate(0);
                self.spare = Some(big);
                return other.map(|_| None);
            }
        };
        let parsed =
            VnetHeader::new_checked(big.as_slice(), hl).and_then(|h| VnetRepr::parse(&h, n - hl));
        let repr = match parsed {
            Ok(r) => r,
            Err(e) => {
                big.truncate(0);
                self.spare = Some(big);
                let e = io::Error::new(io::ErrorKind::InvalidData, e);
                return Err(self.io_error("parsing the virtio-net header from", e));
            }
        };
        let frame_len = n - hl;
        let small = self.mtu + ETH_HEADER_LEN;
        let mut msg = if frame_len <= small && repr.gso_tcpv4.is_none() {
            // Copy the frame out and keep the large buffer for the next read.
            let copied = pool.alloc_empty(small).and_then(|mut m| {
                m.extend_from_slice(&big.as_slice()[hl..])?;
                Ok(m)
            });
            big.truncate(0);
            self.spare = Some(big);
            copied.map_err(|e| {
                self.stats.errors += 1;
                DeviceError::NoBuffer(e)
            })?
        } else {
            if let Err(e) = big.pop(hl) {
                self.stats.errors += 1;
                return Err(DeviceError::NoBuffer(e));
            }
            big
        };
        let mut o = msg.anno().offload();
        // A partial checksum comes from the local kernel (another
        // namespace's TCP, forwarded to us in memory): the data never
        // crossed a wire, so there is nothing to verify, and the field
        // holds only the pseudo-header sum (virtio 1.2 §5.1.6.2.1).
        o.rx_csum_verified = repr.needs_csum.is_some() || repr.data_valid;
        o.rx_gso_size = repr.gso_tcpv4.map_or(0, |(size, _)| size);
        msg.anno_mut().set_offload(o);
        self.stats.rx_frames += 1;
        self.stats.rx_bytes += frame_len as u64;
        Ok(Some(msg))
    }
}
