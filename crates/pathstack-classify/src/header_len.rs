//! How long a protocol header is, as a flow layout knows it: fixed, or a
//! count of 32-bit words in the header (IPv4's IHL, TCP's data offset).
//! Its own file because both the flow table (`flow.rs`, which files flows
//! by layout) and the compiled probe (`flow_probe.rs`, which checks the
//! last level's length on every frame) read it.

/// How long a header is, as far as a [`FlowLayout`](crate::FlowLayout) knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderLen {
    /// Always this many bytes (guards may pin the length field, as IPv4's
    /// version/IHL byte 0x45 pins 20 bytes).
    Fixed(u8),
    /// A 4-bit count of 32-bit words (IPv4's IHL, TCP's data offset):
    /// `((header[at] >> shift) & 0xf) * 4` bytes, at least `min`. Only the
    /// last level of a flow may vary in length: a later level must start at
    /// a fixed offset.
    Words {
        /// The byte holding the count.
        at: u8,
        /// How far the count is shifted up in that byte (4 for a high nibble).
        shift: u8,
        /// The shortest header the module accepts; bytes `0..min` hold the
        /// key spans and guards.
        min: u8,
    },
}
