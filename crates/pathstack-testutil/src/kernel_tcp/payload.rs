//! Payloads: the deterministic stream both ends of a connection generate
//! ([`pattern_bytes`]) and hash on the fly ([`pattern_sha256`],
//! [`Transfer`]), so 100 MB never has to sit in memory; and the reading and
//! writing of such a stream on a kernel socket, with a deadline.

use sha2::{Digest, Sha256};
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// A SHA-256 digest.
pub type Sha256Digest = [u8; 32];

/// Size of the buffers the endpoints stream through.
pub(super) const CHUNK: usize = 64 * 1024;

// Payloads

/// Fills `buf` with the bytes at `offset..offset + buf.len()` of the
/// deterministic pseudo-random stream of `seed`.
///
/// Byte `i` of the stream is byte `i % 8` (little endian) of a xorshift-
/// multiply mix of `seed` and the word index `i / 8`, so any window of the
/// stream can be generated without its prefix.
pub fn pattern_bytes(seed: u64, offset: u64, buf: &mut [u8]) {
    #[inline]
    fn word(seed: u64, index: u64) -> [u8; 8] {
        let mut x = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        x ^= x >> 30;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        x.to_le_bytes()
    }
    let mut pos = offset;
    let mut out = buf;
    // A leading partial word.
    let skip = (pos % 8) as usize;
    if skip != 0 && !out.is_empty() {
        let w = word(seed, pos / 8);
        let n = (8 - skip).min(out.len());
        out[..n].copy_from_slice(&w[skip..skip + n]);
        out = &mut out[n..];
        pos += n as u64;
    }
    let mut chunks = out.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&word(seed, pos / 8));
        pos += 8;
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let n = rest.len();
        rest.copy_from_slice(&word(seed, pos / 8)[..n]);
    }
}

/// The SHA-256 of the first `len` bytes of the stream of `seed`
/// ([`pattern_bytes`]): what a peer that received them reports.
pub fn pattern_sha256(seed: u64, len: u64) -> Sha256Digest {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(CHUNK as u64) as usize;
        pattern_bytes(seed, off, &mut buf[..n]);
        h.update(&buf[..n]);
        off += n as u64;
    }
    h.finalize().into()
}

/// What one end read from a connection: the byte count and their SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes read until EOF.
    pub bytes: u64,
    /// SHA-256 of those bytes.
    pub sha256: Sha256Digest,
}

impl Transfer {
    /// The transfer of the first `len` bytes of the stream of `seed`.
    pub fn pattern(seed: u64, len: u64) -> Transfer {
        Transfer {
            bytes: len,
            sha256: pattern_sha256(seed, len),
        }
    }
}

/// Reads `s` until EOF, hashing; fails if the total time exceeds `deadline`.
pub(super) fn read_to_end_hashed(
    s: &mut TcpStream,
    deadline: Option<Instant>,
) -> io::Result<Transfer> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut bytes = 0u64;
    loop {
        check_deadline(deadline, "reading")?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                bytes += n as u64;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(annotate(e, format!("after reading {bytes} bytes"))),
        }
    }
    Ok(Transfer {
        bytes,
        sha256: h.finalize().into(),
    })
}

/// Writes the first `len` bytes of the stream of `seed` to `s`.
pub(super) fn write_pattern(
    s: &mut TcpStream,
    seed: u64,
    len: u64,
    deadline: Option<Instant>,
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < len {
        check_deadline(deadline, "writing")?;
        let n = (len - off).min(CHUNK as u64) as usize;
        pattern_bytes(seed, off, &mut buf[..n]);
        s.write_all(&buf[..n])
            .map_err(|e| annotate(e, format!("after writing {off} of {len} bytes")))?;
        off += n as u64;
    }
    Ok(())
}

fn check_deadline(deadline: Option<Instant>, what: &str) -> io::Result<()> {
    match deadline {
        Some(d) if Instant::now() > d => Err(io::Error::new(
            ErrorKind::TimedOut,
            format!("deadline passed while {what}"),
        )),
        _ => Ok(()),
    }
}

pub(super) fn annotate(e: io::Error, context: String) -> io::Error {
    if e.kind() == ErrorKind::WouldBlock {
        // What SO_RCVTIMEO / SO_SNDTIMEO report.
        return io::Error::new(
            ErrorKind::TimedOut,
            format!("timed out: the peer made no progress ({context})"),
        );
    }
    io::Error::new(e.kind(), format!("{e} ({context})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_windows_agree() {
        let mut whole = vec![0u8; 1000];
        pattern_bytes(7, 0, &mut whole);
        for (off, len) in [(0, 1), (1, 7), (3, 20), (8, 8), (13, 987), (999, 1)] {
            let mut part = vec![0u8; len];
            pattern_bytes(7, off as u64, &mut part);
            assert_eq!(part, whole[off..off + len], "window {off}+{len}");
        }
        let mut other = vec![0u8; 1000];
        pattern_bytes(8, 0, &mut other);
        assert_ne!(whole, other);
        let mut h = Sha256::new();
        h.update(&whole);
        let d: Sha256Digest = h.finalize().into();
        assert_eq!(pattern_sha256(7, 1000), d);
    }
}
