//! The operation loop every target runs: the input is a list of
//! operations, each an operation byte and its operands, applied one at a
//! time with the system under test settling after each; then time runs
//! out so that every timer fires.

use crate::input::Input;
use pathstack_core::time::Duration;

/// What an input drives, one operation at a time.
pub(crate) trait Target {
    /// Operations per input at most: keeps one execution short.
    const MAX_OPS: usize;
    /// Rounds of [`RUN_OUT_STEP`] after the input, each followed by
    /// [`Target::settle`], so that the timers the input armed fire.
    const RUN_OUT_ROUNDS: usize;

    /// Applies operation `op`, reading its operands from `inp`.
    fn apply(&mut self, op: u8, inp: &mut Input<'_>);

    /// What follows every operation: the host polls (and the harness
    /// reads what it sent), the control block emits.
    fn settle(&mut self);

    /// Moves the clock on by `by`.
    fn advance(&mut self, by: Duration);
}

/// How far the clock moves per round once the input is spent: longer
/// than any retransmission or delayed-ACK timer, so that a few rounds
/// reach the give-up timers.
pub(crate) const RUN_OUT_STEP: Duration = Duration::from_secs(30);

/// Runs the operations of `inp` on `target`, then lets time run out.
pub(crate) fn run<T: Target>(target: &mut T, inp: &mut Input<'_>) {
    let mut ops = 0;
    while !inp.is_empty() && ops < T::MAX_OPS {
        ops += 1;
        let op = inp.u8();
        target.apply(op, inp);
        target.settle();
    }
    for _ in 0..T::RUN_OUT_ROUNDS {
        target.advance(RUN_OUT_STEP);
        target.settle();
    }
}
