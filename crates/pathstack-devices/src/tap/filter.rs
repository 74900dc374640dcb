//! The discard filter: a classic BPF socket filter attached to the TAP
//! (`TUNATTACHFILTER`) so the kernel drops frames the stack would only
//! discard (the program itself is built in [`crate::discard_filter`]).

use super::TapDevice;
use crate::discard_filter::discard_program;
use crate::sys;
use pathstack_core::device::{DeviceError, FrameMatch};

/// A classic BPF program attached to the TAP (TUNATTACHFILTER), kept
/// alive while attached: the kernel keeps a pointer to it and reads it
/// again when another queue attaches to the interface.
#[derive(Default)]
pub(super) struct AttachedFilter(Vec<libc::sock_filter>);

impl std::fmt::Debug for AttachedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AttachedFilter({} instructions)", self.0.len())
    }
}

impl TapDevice {
    /// [`Device::discard`](pathstack_core::device::Device::discard) for a
    /// TAP: attaches the program for `matches`, or removes it when
    /// `matches` is empty.
    pub(super) fn set_discard(&mut self, matches: &[FrameMatch]) -> Result<bool, DeviceError> {
        let io_err = |what: &str, source| DeviceError::Io {
            context: format!("{what} the discard filter of TAP {}", self.name),
            source,
        };
        if matches.is_empty() {
            if !self.discard.0.is_empty() {
                sys::tun_detach_filter(&self.file).map_err(|e| io_err("removing", e))?;
                self.discard.0.clear();
            }
            return Ok(true);
        }
        let prog: Vec<libc::sock_filter> = discard_program(matches)
            .into_iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        sys::tun_attach_filter(&self.file, &prog).map_err(|e| io_err("attaching", e))?;
        // The old program may go now: the kernel replaced it.
        self.discard.0 = prog;
        Ok(true)
    }
}
