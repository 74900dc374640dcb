//! Frames from the drivers: received one by one and run where they lie,
//! or, while ranked paths exist or LDLP schedules, a burst classified
//! onto the paths' queues first and then scheduled.

use super::pending::enqueue;
use super::trip::{let_go, release, Entered};
use super::{Polled, Stack};
use crate::device::Received;
use crate::drop_reason::CoreDropReason;
use crate::ids::ModuleId;
use crate::msg::Msg;
use crate::sched::SchedKind;

impl Stack {
    /// A frame received by driver module `m`, run where it lies (the
    /// driver wrote it there, [`Module::receive`](crate::module::Module::receive)):
    /// classified once, then run. Whatever the run left of it (a refused
    /// frame) goes back to its pool, so `frame` is empty afterwards, ready
    /// for the driver's next frame.
    ///
    /// A driver's frames on the per-message way run the same body inlined
    /// into the poll (`Stack::receive_frame_here`).
    #[inline]
    pub(super) fn receive_frame(&mut self, m: ModuleId, frame: &mut Msg) {
        self.receive_frame_here(m, frame);
    }

    /// [`Stack::receive_frame`]'s body, inlined where a driver hands its
    /// frames over one at a time on the per-message way: the ring pop, the
    /// probe and the path's run in one function, with no call, prologue
    /// and epilogue of its own per frame (issue 26 item 1).
    #[inline(always)]
    fn receive_frame_here(&mut self, m: ModuleId, frame: &mut Msg) {
        let Some((id, dir)) = self.demux.classify(m, frame.as_slice()) else {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
            release(frame);
            return;
        };
        // Every key of the path matched: its stages need not compare those
        // fields again (parse once).
        frame.anno_mut().set_classified(true);
        // Other outcomes are counted on the path.
        if let Entered::NoPath = self.enter(id, dir, frame) {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
        }
        release(frame);
    }

    /// A frame of a burst received by driver module `m`: classified onto
    /// its path's source queue, to run when the scheduler picks the path.
    /// Early discard (thesis §5.2.1, §5.2.3): when the queue is full or the
    /// path holds its memory budget, the frame is dropped here, counted on
    /// the path, before any stage has seen it.
    #[inline(never)]
    fn queue_frame(&mut self, m: ModuleId, mut frame: Msg) {
        // Not inlined, and the only other caller of the classifier on
        // received frames: `receive_frame` keeps its classifier inlined
        // as before, so the fast path's code is that of a stack without
        // ranked paths.
        let Some((id, dir)) = self.demux.classify(m, frame.as_slice()) else {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
            return;
        };
        frame.anno_mut().set_classified(true);
        let now = self.now;
        match self.paths.get_mut(id) {
            Some(path) => match enqueue(path, &mut self.runq, dir, frame, now) {
                Ok(()) => path.refused_in_row = 0,
                // Counted on the path; a run of them may move the discard
                // into the device.
                Err(_) => self.refused_at_classification(m, id),
            },
            None => self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath),
        }
    }

    /// The frames driver modules handed over in their polls, while ranked
    /// paths exist or LDLP schedules: a burst is classified onto the
    /// paths' queues first and then scheduled; a lone frame runs at once.
    #[inline(never)]
    fn receive_handed_over(&mut self) -> usize {
        let mut work = 0;
        if self.shared.rx.len() > 1 {
            // A burst: classify it all, then run by rank (thesis §5.2.2.1).
            while let Some((from, frame)) = self.shared.rx.pop_front() {
                work += 1;
                self.queue_frame(from, frame);
            }
            self.run_pending();
        }
        while let Some((from, mut frame)) = self.shared.rx.pop_front() {
            work += 1;
            self.receive_frame(from, &mut frame);
        }
        work
    }

    /// Frames handed over one at a time by driver module `m` while ranked
    /// paths exist or LDLP schedules: a burst (up to `rx_cap` frames) is
    /// classified onto the paths' queues first, then the scheduler runs
    /// the pending paths — in rank order, so a frame of an important path
    /// does not wait behind those of less important ones that arrived
    /// before it (thesis §5.2.2.1), and under LDLP in batches of like
    /// paths. A single frame (nothing behind it) still runs at once: under
    /// LDLP too, where a batch of one would gain nothing from the queues.
    /// `first` is the frame the driver has already handed over and `got`
    /// what it said of it (the caller asks for it, so that a poll with
    /// nothing received costs one module call; `Last`: nothing behind it,
    /// so it runs alone).
    #[inline(never)]
    fn receive_burst(&mut self, m: ModuleId, mut first: Msg, got: Received) -> usize {
        let mut next = Msg::default();
        let mut got = match got {
            Received::Frame => self.call_module(m, |module, cx| module.receive(cx, &mut next)),
            Received::Nothing | Received::Last => Received::Nothing,
        };
        if got == Received::Nothing {
            self.receive_frame(m, &mut first);
            return 1;
        }
        self.queue_frame(m, first);
        self.queue_frame(m, std::mem::take(&mut next));
        let cap = self.config.rx_cap.max(2);
        let mut work = 2;
        let mut burst = 2;
        loop {
            while burst < cap && got == Received::Frame {
                got = self.call_module(m, |module, cx| module.receive(cx, &mut next));
                if got == Received::Nothing {
                    break;
                }
                self.queue_frame(m, std::mem::take(&mut next));
                burst += 1;
                work += 1;
            }
            self.run_pending();
            if burst < cap || got != Received::Frame {
                break;
            }
            burst = 0;
        }
        work
    }

    /// The next frame of driver module `m`, written into `frame`: through
    /// the driver's lane when it offers one (its device asked directly,
    /// counted against its burst: no module call per frame,
    /// `crate::device::rx_lane`), else by its `receive`.
    #[inline(always)]
    fn receive_one(&mut self, m: ModuleId, frame: &mut Msg) -> Received {
        let now = self.now;
        let lane = match self.modules[m.0 as usize].rx_lane() {
            Some(mut lane) => match lane.device.receive_into(&self.shared.pool, now, frame) {
                Ok(got) => return lane.burst.count(got),
                Err(e) => {
                    lane.burst.reset();
                    Some(e)
                }
            },
            None => None,
        };
        match lane {
            Some(e) => {
                self.call_module(m, |module, cx| module.rx_failed(e, cx));
                Received::Nothing
            }
            None => self.call_module(m, |module, cx| module.receive(cx, frame)),
        }
    }

    /// Polls the modules with background work and asks the drivers for
    /// their frames; the frames a driver receives run one by one as it
    /// hands them over. A driver that only receives is not polled, and a
    /// driver that knows nothing more is ready says so with the frame
    /// ([`Received::Last`]): a poll that finds one frame is one module
    /// call (the driver's fast lane, issue 26).
    ///
    /// A poll in which no module has work of its own — none polls every
    /// time, none with a deadline is due or was reached writably since its
    /// deadline was last asked — only asks the drivers for frames: what
    /// the loop over all the modules would have done, in the same order,
    /// without looking at each timed module (issue 26 item 5).
    #[inline(always)]
    pub(super) fn poll_modules(&mut self) -> usize {
        if self.polling.idle(&self.modules, self.now) {
            // The usual stack has one driver: asked without a loop, whose
            // set-up (the addresses its inlined body uses, hoisted and
            // spilled) cost 16 instructions a poll (issue 26 item 6).
            if let [m] = self.polling.receivers[..] {
                return self.receive_from(m, true);
            }
            let mut work = 0;
            for k in 0..self.polling.receivers.len() {
                let m = self.polling.receivers[k];
                work += self.receive_from(m, true);
            }
            return work;
        }
        self.poll_all_modules()
    }

    /// [`Stack::poll_modules`] when some module may have work: each in
    /// turn, polled when it has work, then asked for its frames. Inlined
    /// into `poll` as before the idle poll existed: on a stack whose timed
    /// modules are reached by every message (RPC's CHAN, BIDCTL, BLAST)
    /// every poll comes here, and must cost what it did.
    #[inline(always)]
    fn poll_all_modules(&mut self) -> usize {
        let mut work = 0;
        // Whether some timed module was touched or due: the next poll
        // makes the full pass too, without looking first.
        let mut busy = false;
        for k in 0..self.polled.len() {
            let Polled {
                index,
                polls,
                receives,
                when_due,
                ..
            } = self.polled[k];
            if when_due {
                // A deadline is the module's own state: it can only have
                // moved if the module was reached writably since it was
                // last asked (its poll, its stages, `module_mut`). An idle
                // poll asks no module for it (issue 26 item 6).
                let slot = &mut self.modules[index];
                if slot.touched {
                    slot.touched = false;
                    busy = true;
                    self.polled[k].due = slot.get().poll_at();
                }
                if self.polled[k].due.is_none_or(|t| t > self.now) {
                    continue;
                }
                busy = true;
            }
            let m = ModuleId(index as u32);
            if polls {
                // Path creation errors went to `path_created`.
                work += self.run_module(m, |module, cx| module.poll(cx)).0;
                // Module polls may have sent messages (ARP retries) or
                // handed over frames in a batch.
                self.drain_follow_ups();
            }
            work += self.receive_from(m, receives);
        }
        self.polling.quiet = !busy;
        if !busy {
            // Only a quiet pass is followed by idle polls, which compare
            // the clock with this one deadline; a stack whose polls are
            // all full (RPC's) never gathers it.
            self.polling.gather_next_due(&self.polled);
        }
        work
    }

    /// The frames handed over during module calls and, when `receives`,
    /// those driver module `m` has for this poll.
    #[inline(always)]
    fn receive_from(&mut self, m: ModuleId, receives: bool) -> usize {
        let mut work = 0;
        // The driver's burst is looked at before it runs when its order
        // matters (ranked paths) or it is to be batched (LDLP).
        if self.ranked > 0 || self.sched != SchedKind::PerMessage {
            if !self.shared.rx.is_empty() {
                work += self.receive_handed_over();
            }
            if receives {
                let mut first = Msg::default();
                let got = self.call_module(m, |module, cx| module.receive(cx, &mut first));
                if got != Received::Nothing {
                    work += self.receive_burst(m, first, got);
                }
            }
        } else {
            while let Some((from, mut frame)) = self.shared.rx.pop_front() {
                work += 1;
                self.receive_frame(from, &mut frame);
            }
            // Drivers that hand over one frame at a time: each is
            // written into `frame` and runs there.
            if receives {
                let mut frame = Msg::default();
                loop {
                    let got = self.receive_one(m, &mut frame);
                    if got == Received::Nothing {
                        break;
                    }
                    work += 1;
                    self.receive_frame_here(m, &mut frame);
                    if got == Received::Last {
                        break;
                    }
                }
                let_go(frame);
            }
        }
        if receives {
            // Path creation errors went to `path_created`.
            let _ = self.create_requested_paths();
        }
        work
    }
}
