//! A module's own path: BID and BLAST each open, at initialization, a
//! passive path that starts at them and serves every peer, to take the
//! traffic no upper protocol's path claims (empty BID messages; BLAST's
//! fragments, NACKs and retransmissions, reassembled there). The path is
//! marked with the module's limited-scope `own` key, so that its
//! `create_stage` knows it makes the stage of its own path (no upper
//! `PROT_ID` to carry).

use pathstack_core::attrs::{keys, AttrKey, Attrs};
use pathstack_core::module::ModCx;

/// Asks the stack for the module's own passive path, marked with `own`.
pub(super) fn request_own_path(cx: &mut ModCx<'_>, own: &AttrKey<bool>) {
    let attrs = Attrs::new().with(&keys::PASSIVE_OPEN, true).with(own, true);
    cx.request_path(attrs, 0);
}
