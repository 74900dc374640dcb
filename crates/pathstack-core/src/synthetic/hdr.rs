//! `HDR`: a generic protocol layer that does real header work.
//!
//! Header (`size` bytes, at least 6): tag (u8), flags (u8, zero), payload
//! length (u16), Internet checksum of the payload (u16, RFC 1071), then
//! zero padding to `size`. On the way up the header is checked and popped.

use crate::attrs::Attrs;
use crate::error::ModuleError;
use crate::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use crate::ids::Dir;
use crate::module::{CreateCx, Created, Creation, Module, Route};
use crate::module_setup::ModuleSetup;
use crate::msg::Msg;
use crate::stage::{Cx, Stage, Verdict};

/// Spec of `HDR`.
pub const HDR_SPEC: ModuleSpec = ModuleSpec {
    name: "HDR",
    doc: "synthetic layer: pushes a header with tag, length and Internet checksum",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::optional("size", "header bytes, 6 to 64 (default 8)"),
        ParamSpec::optional("tag", "tag byte written and checked (default 0)"),
    ],
    understands: &[],
};

crate::drop_reasons! {
    /// Why `HDR` dropped a message.
    pub enum HdrDropReason in "hdr" {
        /// Shorter than the header.
        Short => "short",
        /// The tag is not this layer's.
        BadTag => "bad_tag",
        /// The length field disagrees with the payload, or a payload is too
        /// long for the 16-bit field.
        BadLength => "bad_length",
        /// The payload checksum does not verify.
        BadChecksum => "bad_checksum",
        /// No room in front of the message for the header.
        NoHeadroom => "no_headroom",
    }
}

/// The Internet checksum (RFC 1071) of `data`: the ones' complement of the
/// ones' complement sum of its 16-bit big-endian words.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The `HDR` module: header size and tag per instance.
pub struct HdrModule {
    size: usize,
    tag: u8,
}

impl HdrModule {
    /// Factory: parameters `size` and `tag`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let size: usize = setup.param("size", 8)?;
        if !(6..=64).contains(&size) {
            return Err(ModuleError::BadParam {
                instance: setup.instance().to_string(),
                key: "size".into(),
                reason: format!("{size} is outside 6..=64"),
            });
        }
        let tag: u8 = setup.param("tag", 0)?;
        Ok(Box::new(HdrModule { size, tag }))
    }
}

impl Module for HdrModule {
    fn spec(&self) -> &'static ModuleSpec {
        &HDR_SPEC
    }

    fn create_stage(&mut self, _attrs: &mut Attrs, _cx: &mut CreateCx<'_>) -> Creation {
        Ok(Created::new(
            HdrStage {
                size: self.size,
                tag: self.tag,
            },
            Route::Service(1),
        ))
    }
}

/// The `HDR` stage.
pub struct HdrStage {
    size: usize,
    tag: u8,
}

impl Stage for HdrStage {
    #[inline]
    fn process(&mut self, dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            let Ok(len) = u16::try_from(msg.len()) else {
                return Verdict::Drop(HdrDropReason::BadLength.into());
            };
            let sum = internet_checksum(msg.as_slice());
            let Ok(h) = msg.push(self.size) else {
                return Verdict::Drop(HdrDropReason::NoHeadroom.into());
            };
            h[0] = self.tag;
            h[1] = 0;
            h[2..4].copy_from_slice(&len.to_be_bytes());
            h[4..6].copy_from_slice(&sum.to_be_bytes());
            h[6..].fill(0);
            Verdict::Next
        } else {
            let (tag, len, sum) = match msg.pop(self.size) {
                Ok(h) => (
                    h[0],
                    u16::from_be_bytes([h[2], h[3]]) as usize,
                    u16::from_be_bytes([h[4], h[5]]),
                ),
                Err(_) => return Verdict::Drop(HdrDropReason::Short.into()),
            };
            if tag != self.tag {
                return Verdict::Drop(HdrDropReason::BadTag.into());
            }
            if len != msg.len() {
                return Verdict::Drop(HdrDropReason::BadLength.into());
            }
            if internet_checksum(msg.as_slice()) != sum {
                return Verdict::Drop(HdrDropReason::BadChecksum.into());
            }
            Verdict::Next
        }
    }
}

#[cfg(test)]
mod tests {
    use super::internet_checksum;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of 0001 f203 f4f5 f6f7 is ddf2 (complement 220d).
        assert_eq!(
            internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
        assert_eq!(internet_checksum(&[]), 0xffff);
        assert_eq!(internet_checksum(&[0xff]), !0xff00);
    }
}
