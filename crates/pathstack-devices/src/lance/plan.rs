//! Where the driver puts things in the LANCE's shared memory.
//!
//! ```text
//! LANCE address   layout   contents
//! 0x0000          gap2     initialization block (24 bytes)
//! 0x0020          gap2     receive ring  (8 bytes × rx_len, quadword aligned)
//! …               gap2     transmit ring (8 bytes × tx_len)
//! next 16-byte    gap16    rx_len receive buffers, then tx_len transmit
//!   boundary               buffers, each buf_size bytes (a multiple of 16)
//! ```
//!
//! Buffers start on 16-byte LANCE boundaries so that no 16-byte block holds
//! both gap2 and gap16 data (see [`sparse`](super::sparse)).

use super::descriptor::{DESCRIPTOR_BYTES, INIT_BLOCK_BYTES};
use super::sparse::LANCE_ADDRESS_SPACE;
use thiserror::Error;

/// Largest descriptor ring: RLEN/TLEN are three bits (2^7 = 128 entries).
pub const MAX_RING: usize = 128;
/// Smallest buffer the driver accepts (the Am7990 needs the first receive
/// buffer of a frame to hold at least the 64 bytes of a minimal frame).
pub const MIN_BUFFER: usize = 64;
/// Largest buffer the driver accepts: a multiple of 16 below BCNT's 4096.
pub const MAX_BUFFER: usize = 4080;

/// A ring or buffer size the LANCE cannot use.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PlanError {
    /// A ring length is not a power of two in 1..=128.
    #[error("{ring} ring of {len} entries: the Am7990 takes 2^n entries, 1 to 128")]
    RingLength {
        /// `receive` or `transmit`.
        ring: &'static str,
        /// The length asked for.
        len: usize,
    },
    /// The buffer size is out of range or not a multiple of 16.
    #[error("buffer size {0}: must be a multiple of 16 between 64 and 4080 bytes")]
    BufferSize(usize),
    /// Everything does not fit the 16 MiB LANCE address space.
    #[error("rings and buffers need {0} bytes, more than the LANCE's 16 MiB address space")]
    TooLarge(u64),
}

/// The driver's memory layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// LANCE address of the initialization block.
    pub init_block: u32,
    /// LANCE address of the receive ring.
    pub rx_ring: u32,
    /// LANCE address of the transmit ring.
    pub tx_ring: u32,
    /// LANCE address of receive buffer 0.
    pub rx_buffers: u32,
    /// LANCE address of transmit buffer 0.
    pub tx_buffers: u32,
    /// Receive ring entries (a power of two).
    pub rx_len: usize,
    /// Transmit ring entries (a power of two).
    pub tx_len: usize,
    /// Bytes per buffer.
    pub buf_size: usize,
    /// LANCE address space used.
    pub size: u32,
}

fn log2_ring(ring: &'static str, len: usize) -> Result<u8, PlanError> {
    if len.is_power_of_two() && len <= MAX_RING {
        Ok(len.trailing_zeros() as u8)
    } else {
        Err(PlanError::RingLength { ring, len })
    }
}

impl MemoryPlan {
    /// Lays out rings of `rx_len` and `tx_len` entries and buffers of
    /// `buf_size` bytes.
    pub fn new(rx_len: usize, tx_len: usize, buf_size: usize) -> Result<Self, PlanError> {
        log2_ring("receive", rx_len)?;
        log2_ring("transmit", tx_len)?;
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&buf_size) || buf_size % 16 != 0 {
            return Err(PlanError::BufferSize(buf_size));
        }
        let d = u64::from(DESCRIPTOR_BYTES);
        let init_block = 0u64;
        let rx_ring = u64::from(INIT_BLOCK_BYTES).div_ceil(16) * 16;
        let tx_ring = rx_ring + d * rx_len as u64;
        let rx_buffers = (tx_ring + d * tx_len as u64).div_ceil(16) * 16;
        let tx_buffers = rx_buffers + (buf_size * rx_len) as u64;
        let size = tx_buffers + (buf_size * tx_len) as u64;
        if size > u64::from(LANCE_ADDRESS_SPACE) {
            return Err(PlanError::TooLarge(size));
        }
        Ok(MemoryPlan {
            init_block: init_block as u32,
            rx_ring: rx_ring as u32,
            tx_ring: tx_ring as u32,
            rx_buffers: rx_buffers as u32,
            tx_buffers: tx_buffers as u32,
            rx_len,
            tx_len,
            buf_size,
            size: size as u32,
        })
    }

    /// log2 of the receive ring length (RLEN).
    pub fn rlen(&self) -> u8 {
        self.rx_len.trailing_zeros() as u8
    }
    /// log2 of the transmit ring length (TLEN).
    pub fn tlen(&self) -> u8 {
        self.tx_len.trailing_zeros() as u8
    }
    /// LANCE address of receive descriptor `i` (taken modulo the ring).
    #[inline]
    pub fn rmd(&self, i: usize) -> u32 {
        self.rx_ring + DESCRIPTOR_BYTES * (i & (self.rx_len - 1)) as u32
    }
    /// LANCE address of transmit descriptor `i` (taken modulo the ring).
    #[inline]
    pub fn tmd(&self, i: usize) -> u32 {
        self.tx_ring + DESCRIPTOR_BYTES * (i & (self.tx_len - 1)) as u32
    }
    /// LANCE address of receive buffer `i` (taken modulo the ring).
    #[inline]
    pub fn rx_buf(&self, i: usize) -> u32 {
        self.rx_buffers + (self.buf_size * (i & (self.rx_len - 1))) as u32
    }
    /// LANCE address of transmit buffer `i` (taken modulo the ring).
    #[inline]
    pub fn tx_buf(&self, i: usize) -> u32 {
        self.tx_buffers + (self.buf_size * (i & (self.tx_len - 1))) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_do_not_overlap_and_buffers_are_block_aligned() {
        let p = MemoryPlan::new(16, 8, 1536).unwrap();
        assert_eq!(p.rx_ring, 32);
        assert_eq!(p.tx_ring, 32 + 16 * 8);
        assert!(p.rx_buffers >= p.tx_ring + 8 * 8);
        assert_eq!(p.rx_buffers % 16, 0);
        assert_eq!(p.tx_buffers, p.rx_buffers + 16 * 1536);
        assert_eq!(p.size, p.tx_buffers + 8 * 1536);
        assert_eq!(p.rmd(17), p.rmd(1));
        assert_eq!((p.rlen(), p.tlen()), (4, 3));
    }

    #[test]
    fn bad_sizes_are_refused_with_a_reason() {
        assert!(matches!(
            MemoryPlan::new(12, 8, 1536),
            Err(PlanError::RingLength { len: 12, .. })
        ));
        assert!(MemoryPlan::new(256, 8, 1536).is_err());
        assert!(MemoryPlan::new(8, 0, 1536).is_err());
        assert_eq!(MemoryPlan::new(8, 8, 100), Err(PlanError::BufferSize(100)));
        assert!(MemoryPlan::new(8, 8, 4096).is_err());
    }
}
