//! Specializing the paths a host opens for its sockets, by the rules of
//! `path_form.rs` (which the host's construction adds; the calls here
//! stay on the sockets' side so that neither file imports the other's
//! reader, issue 27 item 8).

use crate::host::Host;
use pathstack_core::PathId;

impl Host {
    /// Specializes a path the host just opened for a socket or took from a
    /// listener, unless the host runs modular paths. A path no rule fits
    /// (a graph with other modules between the transport and the driver)
    /// stays as it is.
    pub(crate) fn specialize(&mut self, path: PathId) {
        if self.specializes() {
            // A rule applies only to a path of its module sequence, whose
            // stages are then of the rule's types, so rebuilding cannot
            // fail; if it did, the path would keep its stages and work on
            // in its modular form.
            let _ = self.stack_mut().path_optimize_count(path);
        }
    }
}
