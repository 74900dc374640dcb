//! Am7990 control and status registers (CSR0–CSR3) and the MODE word of the
//! initialization block: bit positions from the Am7990 data sheet
//! ("Control and Status Registers", "Initialization Block").
//!
//! The host reaches the CSRs through two ports: it writes the register
//! number into RAP (register address port), then reads or writes the
//! register through RDP (register data port). CSR1–CSR3 may only be written
//! while CSR0's STOP bit is set.

/// Register numbers (the values written into RAP).
pub mod rap {
    /// CSR0: status and control.
    pub const CSR0: u16 = 0;
    /// CSR1: low 16 bits of the initialization block address.
    pub const CSR1: u16 = 1;
    /// CSR2: high 8 bits of the initialization block address.
    pub const CSR2: u16 = 2;
    /// CSR3: bus master interface (BSWP, ACON, BCON).
    pub const CSR3: u16 = 3;
    /// RAP decodes only its two low bits.
    pub const MASK: u16 = 0x0003;
}

/// CSR0 bits.
pub mod csr0 {
    /// Error summary: BABL | CERR | MISS | MERR (read-only).
    pub const ERR: u16 = 1 << 15;
    /// Babble: the transmitter ran past the longest legal frame (write 1 to clear).
    pub const BABL: u16 = 1 << 14;
    /// Collision error: no SQE heartbeat after a transmission (write 1 to clear).
    pub const CERR: u16 = 1 << 13;
    /// Missed frame: no receive descriptor owned by the chip (write 1 to clear).
    pub const MISS: u16 = 1 << 12;
    /// Memory error: a DMA access failed (write 1 to clear).
    pub const MERR: u16 = 1 << 11;
    /// Receive interrupt: a frame (or an error) was returned (write 1 to clear).
    pub const RINT: u16 = 1 << 10;
    /// Transmit interrupt: a frame was sent (or failed) (write 1 to clear).
    pub const TINT: u16 = 1 << 9;
    /// Initialization done (write 1 to clear).
    pub const IDON: u16 = 1 << 8;
    /// Interrupt summary: BABL | MISS | MERR | RINT | TINT | IDON (read-only;
    /// CERR does not interrupt).
    pub const INTR: u16 = 1 << 7;
    /// Interrupt enable: INTR drives the interrupt line (read/write).
    pub const INEA: u16 = 1 << 6;
    /// Receiver on (read-only).
    pub const RXON: u16 = 1 << 5;
    /// Transmitter on (read-only).
    pub const TXON: u16 = 1 << 4;
    /// Transmit demand: poll the transmit ring now (write 1; the chip clears it).
    pub const TDMD: u16 = 1 << 3;
    /// Stop: reset the chip; has precedence over INIT and STRT (write 1).
    pub const STOP: u16 = 1 << 2;
    /// Start: turn transmitter and receiver on (write 1).
    pub const STRT: u16 = 1 << 1;
    /// Initialize: read the initialization block (write 1).
    pub const INIT: u16 = 1 << 0;

    /// The write-one-to-clear status bits.
    pub const W1C: u16 = BABL | CERR | MISS | MERR | RINT | TINT | IDON;
    /// The bits summarized by ERR.
    pub const ERR_BITS: u16 = BABL | CERR | MISS | MERR;
    /// The bits summarized by INTR.
    pub const INTR_BITS: u16 = BABL | MISS | MERR | RINT | TINT | IDON;
}

/// CSR3 bits (bus master interface; only with STOP set).
pub mod csr3 {
    /// Byte swap: buffer data in big-endian byte order.
    pub const BSWP: u16 = 1 << 2;
    /// ALE control: polarity of the address latch enable pin.
    pub const ACON: u16 = 1 << 1;
    /// Byte control: BM0/BM1/BYTE pin mode.
    pub const BCON: u16 = 1 << 0;
    /// The implemented bits.
    pub const MASK: u16 = BSWP | ACON | BCON;
}

/// MODE word (initialization block word 0).
pub mod mode {
    /// Promiscuous: accept every frame.
    pub const PROM: u16 = 1 << 15;
    /// Internal loopback (with LOOP).
    pub const INTL: u16 = 1 << 6;
    /// Disable retry on collision.
    pub const DRTY: u16 = 1 << 5;
    /// Force collision (loopback test).
    pub const COLL: u16 = 1 << 4;
    /// Disable transmit CRC.
    pub const DTCR: u16 = 1 << 3;
    /// Loopback.
    pub const LOOP: u16 = 1 << 2;
    /// Disable the transmitter.
    pub const DTX: u16 = 1 << 1;
    /// Disable the receiver.
    pub const DRX: u16 = 1 << 0;
}

/// A CSR0 value decoded for display and error messages.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Csr0(pub u16);

impl std::fmt::Debug for Csr0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for Csr0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [&str; 16] = [
            "INIT", "STRT", "STOP", "TDMD", "TXON", "RXON", "INEA", "INTR", "IDON", "TINT", "RINT",
            "MERR", "MISS", "CERR", "BABL", "ERR",
        ];
        write!(f, "{:#06x}", self.0)?;
        let mut sep = " (";
        for bit in (0..16).rev() {
            if self.0 & (1 << bit) != 0 {
                write!(f, "{sep}{}", NAMES[bit])?;
                sep = "|";
            }
        }
        if sep != " (" {
            f.write_str(")")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr0_displays_its_bits() {
        assert_eq!(
            Csr0(csr0::IDON | csr0::INTR | csr0::STOP).to_string(),
            "0x0184 (IDON|INTR|STOP)"
        );
        assert_eq!(Csr0(0).to_string(), "0x0000");
    }
}
