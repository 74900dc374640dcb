//! `LINK`: a minimal link layer with a demultiplexing channel field.
//!
//! Header (4 bytes, network order): channel (u16), payload length (u16).
//! The length lets the receiver strip padding a device may add.

use crate::attrs::{keys, Attrs};
use crate::demux::{DemuxKey, Key, KeyMode, PartialClassifier};
use crate::error::ModuleError;
use crate::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use crate::ids::Dir;
use crate::module::{CreateCx, Created, Creation, Module, Route};
use crate::module_setup::ModuleSetup;
use crate::msg::Msg;
use crate::stage::{Cx, Stage, Verdict};

/// Spec of `LINK`.
pub const LINK_SPEC: ModuleSpec = ModuleSpec {
    name: "LINK",
    doc: "synthetic link layer: 4-byte header (channel, length), demultiplexed on the channel",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::NETDEV, Count::ExactlyOne).init_after(),
    ],
    params: &[],
    understands: &[],
};

/// Bytes of the `LINK` header.
pub const LINK_HEADER: usize = 4;

crate::drop_reasons! {
    /// Why `LINK` dropped a frame.
    pub enum LinkDropReason in "link" {
        /// Shorter than the header.
        Short => "short",
        /// The length field disagrees with the frame, or a payload is too
        /// long for the 16-bit field.
        BadLength => "bad_length",
        /// The frame's channel is not the path's.
        WrongChannel => "wrong_channel",
        /// No room in front of the message for the header.
        NoHeadroom => "no_headroom",
    }
}

/// The `LINK` module.
pub struct LinkModule;

impl LinkModule {
    /// Factory.
    pub fn create(_: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(LinkModule))
    }
}

/// Partial classifier of `LINK`: the channel, then skip the header.
struct LinkDemux;

impl PartialClassifier for LinkDemux {
    fn extract(&self, msg: &[u8], _mode: KeyMode) -> Option<(Key, usize)> {
        let h = msg.get(..LINK_HEADER)?;
        Some((Key::from_array([h[0], h[1]]), LINK_HEADER))
    }
}

impl Module for LinkModule {
    fn spec(&self) -> &'static ModuleSpec {
        &LINK_SPEC
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let channel = attrs
            .get_mut(&keys::PARTICIPANTS)
            .and_then(|p| match p.local.pop() {
                Some(keys::AddrPart::Id(c)) => u16::try_from(c).ok(),
                _ => None,
            })
            .ok_or_else(|| cx.refuse("PARTICIPANTS must name a channel (AddrPart::Id < 65536)"))?;
        Ok(Created::new(LinkStage { channel }, Route::Service(1)))
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(LinkDemux))
    }
}

/// The `LINK` stage of one path: its channel.
pub struct LinkStage {
    channel: u16,
}

impl Stage for LinkStage {
    #[inline]
    fn process(&mut self, dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            let Ok(len) = u16::try_from(msg.len()) else {
                return Verdict::Drop(LinkDropReason::BadLength.into());
            };
            let Ok(h) = msg.push(LINK_HEADER) else {
                return Verdict::Drop(LinkDropReason::NoHeadroom.into());
            };
            h[..2].copy_from_slice(&self.channel.to_be_bytes());
            h[2..].copy_from_slice(&len.to_be_bytes());
            Verdict::Next
        } else {
            let (channel, len) = match msg.pop(LINK_HEADER) {
                Ok(h) => (
                    u16::from_be_bytes([h[0], h[1]]),
                    u16::from_be_bytes([h[2], h[3]]) as usize,
                ),
                Err(_) => return Verdict::Drop(LinkDropReason::Short.into()),
            };
            if channel != self.channel {
                return Verdict::Drop(LinkDropReason::WrongChannel.into());
            }
            if len > msg.len() {
                return Verdict::Drop(LinkDropReason::BadLength.into());
            }
            msg.truncate(len);
            Verdict::Next
        }
    }

    fn demux_key(&self, _mode: KeyMode) -> DemuxKey {
        DemuxKey::Key(Key::from_array(self.channel.to_be_bytes()))
    }
}
