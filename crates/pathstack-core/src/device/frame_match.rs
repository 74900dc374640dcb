//! [`FrameMatch`]: a test on a frame's bytes at fixed offsets, simple
//! enough for a device to run before the frame reaches the stack.
//!
//! Scout's drivers classified at interrupt time, so a frame of a path that
//! could not take it was dropped before it cost the system anything more
//! (thesis §5.2.1). A user-space stack sees a frame only after the kernel
//! has queued it, woken the reader and copied it in a `read(2)`; under a
//! flood that cost alone can overflow the kernel's queue and lose the
//! frames of the paths that matter. A `FrameMatch` is what the stack can
//! hand down instead ([`Device::discard`](super::Device::discard)): a
//! conjunction of masked comparisons at fixed offsets from the start of
//! the link-layer frame, which a TAP device compiles into a classic BPF
//! socket filter and the in-memory wire runs itself.
//!
//! Fixed offsets are enough for the protocol numbers and addresses of
//! Ethernet and the IPv4 header (whose fields before the options are at
//! fixed offsets); a test past a variable-length header cannot be written
//! here, and is not needed to discard a path's traffic early.

/// Width of one compared field, in bytes (network byte order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldWidth {
    /// One byte.
    U8,
    /// Two bytes, big-endian.
    U16,
    /// Four bytes, big-endian.
    U32,
}

impl FieldWidth {
    /// The field's length in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            FieldWidth::U8 => 1,
            FieldWidth::U16 => 2,
            FieldWidth::U32 => 4,
        }
    }
}

/// One comparison: `(field & mask) == value`, the field read big-endian
/// at `offset` bytes from the start of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldTest {
    /// Offset of the field from the first byte of the link-layer header.
    pub offset: u16,
    /// Width of the field.
    pub width: FieldWidth,
    /// Bits of the field that are compared.
    pub mask: u32,
    /// What the masked field must equal (already masked).
    pub value: u32,
}

impl FieldTest {
    /// Whether `frame` passes this test; a frame too short to hold the
    /// field does not.
    pub fn matches(&self, frame: &[u8]) -> bool {
        let at = usize::from(self.offset);
        let Some(bytes) = frame.get(at..at + self.width.bytes()) else {
            return false;
        };
        let field = bytes.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b));
        field & self.mask == self.value
    }
}

/// A conjunction of up to [`FrameMatch::MAX_TESTS`] field tests: a frame
/// matches when it passes all of them (an empty match matches every
/// frame).
///
/// ```
/// use pathstack_core::device::FrameMatch;
///
/// // IPv4 (EtherType 0x0800 at offset 12) carrying ICMP (protocol 1,
/// // byte 9 of the IP header, 14 + 9 = 23).
/// let icmp = FrameMatch::new().with_u16(12, 0x0800).with_u8(23, 1);
/// let mut frame = [0u8; 42];
/// frame[12..14].copy_from_slice(&[0x08, 0x00]);
/// frame[23] = 1;
/// assert!(icmp.matches(&frame));
/// frame[23] = 17; // UDP
/// assert!(!icmp.matches(&frame));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameMatch {
    tests: [FieldTest; FrameMatch::MAX_TESTS],
    len: u8,
}

impl Default for FrameMatch {
    fn default() -> Self {
        FrameMatch::new()
    }
}

impl FrameMatch {
    /// Most tests one match holds: enough for EtherType, protocol and
    /// both addresses, and small enough that every device filter built
    /// from a few matches stays far below the kernel's program limits.
    pub const MAX_TESTS: usize = 6;

    /// The match of every frame (no tests yet).
    pub const fn new() -> FrameMatch {
        const NONE: FieldTest = FieldTest {
            offset: 0,
            width: FieldWidth::U8,
            mask: 0,
            value: 0,
        };
        FrameMatch {
            tests: [NONE; FrameMatch::MAX_TESTS],
            len: 0,
        }
    }

    /// Adds `(field & mask) == value & mask`.
    ///
    /// # Panics
    /// When the match already holds [`FrameMatch::MAX_TESTS`] tests, or
    /// `mask` has bits outside `width`: both are errors of the code that
    /// builds the match, not of any frame.
    pub const fn with(mut self, offset: u16, width: FieldWidth, mask: u32, value: u32) -> Self {
        assert!(
            (self.len as usize) < FrameMatch::MAX_TESTS,
            "FrameMatch holds at most MAX_TESTS tests"
        );
        let full = match width {
            FieldWidth::U8 => 0xff,
            FieldWidth::U16 => 0xffff,
            FieldWidth::U32 => u32::MAX,
        };
        assert!(mask & !full == 0, "mask wider than the field");
        self.tests[self.len as usize] = FieldTest {
            offset,
            width,
            mask,
            value: value & mask,
        };
        self.len += 1;
        self
    }

    /// Adds: the byte at `offset` equals `value`.
    pub const fn with_u8(self, offset: u16, value: u8) -> Self {
        self.with(offset, FieldWidth::U8, 0xff, value as u32)
    }

    /// Adds: the big-endian 16-bit field at `offset` equals `value`.
    pub const fn with_u16(self, offset: u16, value: u16) -> Self {
        self.with(offset, FieldWidth::U16, 0xffff, value as u32)
    }

    /// Adds: the big-endian 32-bit field at `offset` equals `value`.
    pub const fn with_u32(self, offset: u16, value: u32) -> Self {
        self.with(offset, FieldWidth::U32, u32::MAX, value)
    }

    /// The tests, in the order they were added.
    pub fn tests(&self) -> &[FieldTest] {
        &self.tests[..usize::from(self.len)]
    }

    /// The length a frame needs to hold every tested field.
    pub fn min_len(&self) -> usize {
        self.tests()
            .iter()
            .map(|t| usize::from(t.offset) + t.width.bytes())
            .max()
            .unwrap_or(0)
    }

    /// Whether `frame` passes every test.
    pub fn matches(&self, frame: &[u8]) -> bool {
        self.tests().iter().all(|t| t.matches(frame))
    }
}

/// Whether `frame` matches any of `matches` (what a device discards).
pub fn any_matches(matches: &[FrameMatch], frame: &[u8]) -> bool {
    matches.iter().any(|m| m.matches(frame))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_big_endian_and_masked() {
        let frame = [0x12, 0x34, 0x56, 0x78, 0x9a];
        assert!(FrameMatch::new().with_u32(1, 0x3456_789a).matches(&frame));
        assert!(FrameMatch::new().with_u16(0, 0x1234).matches(&frame));
        assert!(FrameMatch::new()
            .with(4, FieldWidth::U8, 0xf0, 0x90)
            .matches(&frame));
        assert!(!FrameMatch::new().with_u16(0, 0x3412).matches(&frame));
    }

    #[test]
    fn a_frame_too_short_for_a_field_does_not_match() {
        let m = FrameMatch::new().with_u32(2, 0);
        assert_eq!(m.min_len(), 6);
        assert!(!m.matches(&[0; 5]));
        assert!(m.matches(&[0; 6]));
    }

    #[test]
    fn the_empty_match_matches_everything() {
        assert!(FrameMatch::new().matches(&[]));
        assert!(!any_matches(&[], &[1, 2, 3]));
    }

    #[test]
    #[should_panic(expected = "at most")]
    fn too_many_tests_is_a_programming_error() {
        let mut m = FrameMatch::new();
        for i in 0..=FrameMatch::MAX_TESTS {
            m = m.with_u8(i as u16, 0);
        }
    }
}
