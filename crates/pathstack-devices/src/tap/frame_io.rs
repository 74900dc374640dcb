//! Moving frames through the TAP file: one `read(2)` or `write(2)` (or
//! `writev(2)`) each, into and out of pool buffers, keeping a spare
//! receive buffer across empty polls, and telling a deleted interface
//! from a dropped frame.

use super::TapDevice;
use pathstack_core::device::DeviceError;
use pathstack_core::{Msg, MsgPool};
use std::io::{self, IoSlice, Read, Write};

impl TapDevice {
    pub(super) fn io_error(&mut self, what: &str, source: io::Error) -> DeviceError {
        self.stats.errors += 1;
        // The interface was deleted under us (`ip link del`): the TUN
        // driver detaches the file, and every read and write fails with
        // EBADFD from then on (ENODEV/ENXIO on older kernels). No frame
        // will pass again: a failure, not a dropped frame.
        if matches!(
            source.raw_os_error(),
            Some(libc::EBADFD | libc::ENODEV | libc::ENXIO)
        ) {
            return DeviceError::Gone(format!(
                "TAP interface {} was deleted ({what} it: {source})",
                self.name
            ));
        }
        DeviceError::Io {
            context: format!("{what} TAP interface {}", self.name),
            source,
        }
    }

    /// One `write(2)` (or `writev(2)` of header and frame) of `len` frame
    /// bytes.
    pub(super) fn write_frame(
        &mut self,
        bufs: &[IoSlice<'_>],
        len: usize,
    ) -> Result<(), DeviceError> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        loop {
            let r = if bufs.len() == 1 {
                (&self.file).write(&bufs[0])
            } else {
                (&self.file).write_vectored(bufs)
            };
            match r {
                Ok(n) if n == total => {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += len as u64;
                    return Ok(());
                }
                Ok(n) => {
                    // TAP writes are all-or-nothing; a short count means the
                    // kernel did something we do not understand.
                    let e = io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("short write: {n} of {total} bytes"),
                    );
                    return Err(self.io_error("writing to", e));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.stats.dropped_full += 1;
                    return Err(DeviceError::QueueFull {
                        capacity: self.backlog,
                    });
                }
                Err(e) => return Err(self.io_error("writing to", e)),
            }
        }
    }

    /// A receive buffer with room for `need` bytes: the spare, or a new one.
    pub(super) fn rx_buffer(&mut self, pool: &MsgPool, need: usize) -> Result<Msg, DeviceError> {
        match self.spare.take() {
            // The spare is empty; it is only too small if the MTU grew.
            Some(m) if m.tailroom() >= need => Ok(m),
            _ => pool.alloc_empty(need).map_err(|e| {
                self.stats.errors += 1;
                DeviceError::NoBuffer(e)
            }),
        }
    }

    /// One `read(2)` into `msg`'s tail room: `Ok(Some(n))` for `n` bytes,
    /// `Ok(None)` when nothing is waiting. The buffer goes back to the
    /// spare unless bytes were read.
    pub(super) fn read_into(&mut self, msg: &mut Msg) -> Result<Option<usize>, DeviceError> {
        loop {
            match (&self.file).read(msg.tailroom_mut()) {
                Ok(0) => {
                    // A TAP read never returns an empty frame while the
                    // interface exists.
                    self.stats.errors += 1;
                    return Err(DeviceError::Gone(format!(
                        "TAP interface {} returned an empty read",
                        self.name
                    )));
                }
                Ok(n) => {
                    // `n` is at most the tail room we offered, so this holds.
                    if let Err(e) = msg.commit_tail(n) {
                        self.stats.errors += 1;
                        return Err(DeviceError::NoBuffer(e));
                    }
                    return Ok(Some(n));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(self.io_error("reading from", e)),
            }
        }
    }
}
