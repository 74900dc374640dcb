//! Offloads: work a device does on the stack's behalf, and the per-message
//! facts that ask for it or report it.
//!
//! The model is the kernel's `virtio_net_hdr` (virtio 1.2 §5.1.6), which a
//! Linux TAP opened with `IFF_VNET_HDR` speaks:
//!
//! * **Checksum offload, transmit.** A transport stage leaves its checksum
//!   *partial*: the field holds the folded pseudo-header sum (not
//!   complemented), and [`MsgOffload::tx_csum_offset`] says where the field
//!   lies in the transport header. The device (or the kernel behind it)
//!   sums from the transport header to the end of the frame and stores the
//!   complement. The device finds the transport header itself (Ethernet +
//!   IPv4 header length), so no stage needs to know how many bytes the
//!   layers below will push.
//! * **Segmentation offload (TSO), transmit.** A TCP segment of up to 64 KB
//!   goes down as one message with [`MsgOffload::tx_gso_size`] set to the
//!   payload bytes of each wire segment (the MSS); the device cuts it into
//!   segments that fit the MTU, copying the headers and fixing sequence
//!   numbers, lengths and checksums. IP does not fragment such a message.
//! * **Receive.** A frame whose transport checksum the device (or the local
//!   kernel that made it) vouches for carries
//!   [`MsgOffload::rx_csum_verified`]: the transport stage does not check it
//!   (it may even hold a partial sum). A frame merged from several wire
//!   segments (GRO) carries [`MsgOffload::rx_gso_size`] and may be longer
//!   than the MTU; the stages take it whole.
//!
//! What a device can do is in [`DeviceCaps::offload`](super::DeviceCaps):
//! [`OffloadCaps`]. Devices without offloads (the in-memory wire, the
//! emulated LANCE) report [`OffloadCaps::NONE`] and never set the receive
//! facts; the stages then behave exactly as without this module.

/// What a device offloads (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffloadCaps {
    /// The device completes partial transport checksums of transmitted
    /// frames ([`MsgOffload::tx_csum_offset`]).
    pub tx_checksum: bool,
    /// Received frames may carry [`MsgOffload::rx_csum_verified`] (and then
    /// a partial checksum the stack must not verify).
    pub rx_checksum: bool,
    /// Largest TCP/IPv4 segment (IP header included, link header excluded)
    /// the device segments on transmit; 0: no TSO.
    pub tso4_max: usize,
    /// Received frames may be merged super-segments longer than the MTU
    /// ([`MsgOffload::rx_gso_size`]).
    pub rx_gro: bool,
}

impl OffloadCaps {
    /// No offloads at all.
    pub const NONE: OffloadCaps = OffloadCaps {
        tx_checksum: false,
        rx_checksum: false,
        tso4_max: 0,
        rx_gro: false,
    };
}

/// A message's offload facts. They travel in its [`Anno`](crate::Anno),
/// packed (read them with [`Anno::offload`](crate::Anno::offload), change
/// them with [`Anno::set_offload`](crate::Anno::set_offload)); this is
/// their readable form.
///
/// The transmit and receive facts are separate fields so that a received
/// message turned around as a reply (an ICMP echo) never asks the device
/// for an offload by accident: devices read only the `tx_` fields, stages
/// only the `rx_` fields.
///
/// ```
/// use pathstack_core::device::offload::MsgOffload;
/// let mut o = MsgOffload::default();
/// assert!(!o.wants_offload());
/// o.tx_csum_offset = 16; // TCP's checksum field
/// o.tx_gso_size = 1448;
/// assert!(o.wants_offload());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgOffload {
    /// Transmit: the transport checksum is partial; its field lies this
    /// many bytes into the transport header (16 for TCP, 6 for UDP). 0:
    /// the checksum is complete.
    pub tx_csum_offset: u8,
    /// Transmit: the message is a TCP/IPv4 super-segment to be cut into
    /// segments of this many payload bytes. 0: send as it is.
    pub tx_gso_size: u16,
    /// Receive: the transport checksum needs no verification.
    pub rx_csum_verified: bool,
    /// Receive: the frame was merged from segments of this many payload
    /// bytes (GRO) and may exceed the MTU. 0: an ordinary frame.
    pub rx_gso_size: u16,
}

impl MsgOffload {
    /// Whether the message asks the device for any transmit offload.
    #[inline]
    pub fn wants_offload(&self) -> bool {
        self.tx_csum_offset != 0 || self.tx_gso_size != 0
    }
}
