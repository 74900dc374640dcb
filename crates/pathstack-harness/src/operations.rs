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

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the loop asks of it.
    #[derive(Default)]
    struct Log {
        applied: Vec<(u8, u8)>,
        settled: usize,
        advanced: Vec<Duration>,
    }

    impl Target for Log {
        const MAX_OPS: usize = 3;
        const RUN_OUT_ROUNDS: usize = 2;
        fn apply(&mut self, op: u8, inp: &mut Input<'_>) {
            // Every operation takes one operand byte.
            self.applied.push((op, inp.u8()));
        }
        fn settle(&mut self) {
            self.settled += 1;
        }
        fn advance(&mut self, by: Duration) {
            self.advanced.push(by);
        }
    }

    #[test]
    fn operations_stop_at_the_bound_then_time_runs_out() {
        let mut t = Log::default();
        run(&mut t, &mut Input::new(&[1, 10, 2, 20, 3, 30, 4, 40]));
        assert_eq!(
            t.applied,
            [(1, 10), (2, 20), (3, 30)],
            "MAX_OPS bounds the input"
        );
        assert_eq!(t.settled, 3 + 2, "a settle after each operation and round");
        assert_eq!(t.advanced, [RUN_OUT_STEP, RUN_OUT_STEP]);
    }

    #[test]
    fn a_short_input_is_a_whole_run() {
        let mut t = Log::default();
        // The operand past the end reads as zero.
        run(&mut t, &mut Input::new(&[7]));
        assert_eq!(t.applied, [(7, 0)]);
        let mut t = Log::default();
        run(&mut t, &mut Input::new(&[]));
        assert!(t.applied.is_empty());
        assert_eq!(t.settled, 2, "an empty input still runs the timers out");
    }
}
