//! The send lane: the first message an application's call into a stage
//! emits, held by value and run through its path as soon as the call
//! returns, instead of going through the follow-up list.
//!
//! An application reaches a stage with
//! [`Stack::with_stage`](crate::Stack::with_stage) (a TCP write: the
//! connection's stage queues the data and emits the segment the windows
//! allow). The stage is borrowed from its path's executor while it runs, so
//! what it emits cannot run at once; it is a follow-up, run when the call
//! returns. Through the follow-up list that is a push, the list's drain
//! (its loop, its order bookkeeping), a pop and a trip resolved from
//! scratch: some 250 instructions of a TCP round trip for what is, in the
//! common case, the only message of the call (issue 26 item 2: "a send ...
//! hands the frame to the device in the same call").
//!
//! The lane is the receive side's turn in place (`Exec::run`) for the send
//! side: the message that would be the next follow-up anyway runs next,
//! with nothing in between. Order is that of the list exactly: the lane
//! takes a message only while it is open (during an application's call)
//! and nothing is in the list, so it holds the *first* follow-up of the
//! call; everything emitted after it goes to the list behind it, and the
//! lane's message runs before the list is drained, with those others
//! visible to it as waiting (no turn in place past them). It holds one
//! message, so the follow-ups of one call are bounded by the list's bound
//! plus one.
//!
//! The lane holds a follow-up without looking into it, so it is generic
//! over what it holds (`SendLane<FollowUp>` in
//! [`Shared`](crate::runtime::Shared)) and needs nothing of the run-time
//! state that holds it.

/// The lane of one stack, holding at most one `F` (a follow-up).
pub(crate) struct SendLane<F> {
    /// An application's call into a stage is running: its first emission
    /// may be held here.
    open: bool,
    held: Option<F>,
}

impl<F> Default for SendLane<F> {
    fn default() -> Self {
        SendLane {
            open: false,
            held: None,
        }
    }
}

impl<F> SendLane<F> {
    /// Opens the lane for the call about to run.
    #[inline(always)]
    pub(crate) fn open(&mut self) {
        self.open = true;
    }

    /// Holds `f` if the lane is open and empty and nothing waits before it
    /// (`list_empty`); gives it back otherwise, for the list.
    #[inline(always)]
    pub(crate) fn offer(&mut self, f: F, list_empty: bool) -> Result<(), F> {
        if self.open && list_empty && self.held.is_none() {
            self.held = Some(f);
            return Ok(());
        }
        Err(f)
    }

    /// Closes the lane after the call and takes what it holds: it runs
    /// next, before the follow-up list.
    #[inline(always)]
    pub(crate) fn close(&mut self) -> Option<F> {
        self.open = false;
        // A call that emitted nothing (most reads) returns without moving
        // the empty slot out and writing it back.
        self.held.as_ref()?;
        self.held.take()
    }
}
