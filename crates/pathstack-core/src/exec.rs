//! Executors: how a path's stages are called.
//!
//! A path normally holds its stages as `Box<dyn Stage>` and calls each
//! through a virtual call (`DynExec`, the modular "STD" form). The
//! path-inlining transform (thesis ch. 4) replaces that with an
//! [`Inlined`] executor over a tuple of the concrete stage types: the
//! traversal loop is monomorphized for the tuple, every stage call is
//! static, and the compiler can inline the whole path into one function
//! ("PIN").

use crate::drop_reason::{CoreDropReason, DropReason};
use crate::ids::Dir;
use crate::msg::Msg;
use crate::runtime::Env;
use crate::stage::{Cx, Stage, Verdict};
use std::any::Any;

/// How a message's trip along a path ended.
#[doc(hidden)]
#[derive(Debug, PartialEq, Eq)]
pub enum Fate {
    /// It went past the last stage in `dir`.
    Out(Dir),
    /// A stage kept it.
    Consumed,
    /// A stage dropped it.
    Dropped(DropReason),
    /// Stage `from` turned it around; it continues in `dir` from the
    /// neighbour of `from`.
    Turned { from: usize, dir: Dir },
}

impl Fate {
    /// How a trip ends when the stage at `pos`, met going `dir`, gives
    /// `verdict`; `None` when the message goes on to the next stage.
    #[inline(always)]
    pub(crate) fn after(verdict: Verdict, pos: usize, dir: Dir) -> Option<Fate> {
        match verdict {
            Verdict::Next => None,
            Verdict::Back => Some(Fate::Turned {
                from: pos,
                dir: dir.reverse(),
            }),
            Verdict::Consumed => Some(Fate::Consumed),
            Verdict::Drop(r) => Some(Fate::Dropped(r)),
        }
    }
}

/// The neighbour of `pos` in `dir` on a path of `len` stages.
#[inline(always)]
pub(crate) fn step(pos: usize, dir: Dir, len: usize) -> Option<usize> {
    match dir {
        Dir::Down => (pos + 1 < len).then_some(pos + 1),
        Dir::Up => pos.checked_sub(1),
    }
}

/// The stage a message entering in `dir` meets first.
#[inline(always)]
pub(crate) fn entry(dir: Dir, len: usize) -> usize {
    match dir {
        Dir::Down => 0,
        Dir::Up => len.saturating_sub(1),
    }
}

/// Runs `msg` from stage `pos` in `dir` until it leaves, is kept, dropped or
/// turned. Generic so that each executor gets its own copy of the loop.
#[inline(always)]
pub(crate) fn traverse<E: Exec + ?Sized>(
    e: &mut E,
    mut pos: usize,
    dir: Dir,
    msg: &mut Msg,
    env: &mut Env<'_>,
) -> Fate {
    let len = e.len();
    loop {
        if let Some(fate) = Fate::after(e.process_at(pos, dir, msg, env), pos, dir) {
            return fate;
        }
        match step(pos, dir, len) {
            Some(p) => pos = p,
            None => return Fate::Out(dir),
        }
    }
}

/// A path's stages and how they are called (internal to the core; public
/// only because [`StageTuple`] names it).
#[doc(hidden)]
pub trait Exec: Send {
    /// Number of stages.
    fn len(&self) -> usize;
    /// Whether there are no stages (never, for a created path).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Calls the stage at `pos` (LDLP calls stages one at a time).
    fn process_at(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Verdict;
    /// Runs a message through the stages from `pos` until it leaves, is
    /// kept, dropped or turned around.
    fn run_once(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate;
    /// Runs a message through the stages from `pos` (per-message
    /// scheduling); a message a stage turns around (an echo, an ACK built
    /// in place) goes on at once from the stage's neighbour when it would
    /// be the next follow-up anyway ([`Env::may_turn_in_place`]), without
    /// a second pass through the run loop. It is no longer the message the
    /// classifier matched.
    #[inline(always)]
    fn run(&mut self, mut pos: usize, mut dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate {
        let len = self.len();
        loop {
            let fate = self.run_once(pos, dir, msg, env);
            let Fate::Turned { from, dir: d } = fate else {
                return fate;
            };
            msg.anno_mut().set_classified(false);
            if !env.may_turn_in_place() {
                return fate;
            }
            match step(from, d, len) {
                Some(p) => (pos, dir) = (p, d),
                None => return Fate::Out(d),
            }
        }
    }
    /// The stage at `pos`.
    fn stage(&self, pos: usize) -> Option<&dyn Stage>;
    /// The stage at `pos`, writable (establish, destroy, timers).
    fn stage_mut(&mut self, pos: usize) -> Option<&mut dyn Stage>;
    /// Gives the stages back as trait objects (to un-inline or extend).
    fn into_stages(self: Box<Self>) -> Vec<Box<dyn Stage>>;
    /// Whether this executor is path-inlined.
    fn is_inlined(&self) -> bool;
    /// Messages a fused fast form handled per direction (down, up), or
    /// `None` if this executor has none
    /// ([`Specialized`](crate::fused::Specialized)).
    fn fast_hits(&self) -> Option<[u64; 2]> {
        None
    }
}

/// Which stages pass messages on unchanged, per direction
/// ([`Stage::passes`]): bit `pos` of `mask[dir]`. Asked once when an
/// executor is built, so that a stage with nothing to do in a direction
/// costs no call there. Stages past position 63 are always called.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Passes {
    mask: [u64; 2],
}

impl Passes {
    fn of<'s>(stages: impl Iterator<Item = &'s dyn Stage>) -> Self {
        let mut p = Passes::default();
        for (pos, s) in stages.enumerate().take(64) {
            for dir in [Dir::Down, Dir::Up] {
                if s.passes(dir) {
                    p.mask[dir.index()] |= 1 << pos;
                }
            }
        }
        p
    }

    #[inline(always)]
    fn skips(&self, pos: usize, dir: Dir) -> bool {
        pos < 64 && (self.mask[dir.index()] >> pos) & 1 == 1
    }
}

/// The modular executor: one virtual call per stage.
pub(crate) struct DynExec {
    stages: Vec<Box<dyn Stage>>,
    passes: Passes,
}

impl DynExec {
    /// The modular executor over `stages`.
    pub(crate) fn new(stages: Vec<Box<dyn Stage>>) -> Self {
        let passes = Passes::of(stages.iter().map(|s| &**s));
        DynExec { stages, passes }
    }
}

impl Exec for DynExec {
    fn len(&self) -> usize {
        self.stages.len()
    }
    #[inline]
    fn process_at(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Verdict {
        if self.passes.skips(pos, dir) {
            return Verdict::Next;
        }
        let mut cx = Cx { env, pos };
        match self.stages.get_mut(pos) {
            Some(s) => s.process(dir, msg, &mut cx),
            None => Verdict::Drop(CoreDropReason::BadPosition.into()),
        }
    }
    #[inline(always)]
    fn run_once(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate {
        traverse(self, pos, dir, msg, env)
    }
    fn stage(&self, pos: usize) -> Option<&dyn Stage> {
        self.stages.get(pos).map(|s| &**s)
    }
    fn stage_mut(&mut self, pos: usize) -> Option<&mut dyn Stage> {
        match self.stages.get_mut(pos) {
            Some(s) => Some(&mut **s),
            None => None,
        }
    }
    fn into_stages(self: Box<Self>) -> Vec<Box<dyn Stage>> {
        self.stages
    }
    fn is_inlined(&self) -> bool {
        false
    }
}

/// A tuple of concrete stage types that can be built from a path's boxed
/// stages (implemented for tuples of 1 to 10 stages).
pub trait StageTuple: Send + Sized + 'static {
    /// Number of stages.
    const LEN: usize;
    /// Whether each stage has the tuple's type at its position.
    fn matches_refs(stages: &[&dyn Stage]) -> bool;
    /// [`matches_refs`](Self::matches_refs) over `len` stages given by
    /// position, without collecting them.
    fn matches_at<'s>(len: usize, stage: impl Fn(usize) -> Option<&'s dyn Stage>) -> bool;
    /// Moves the boxed stages into the tuple; gives them back unchanged if
    /// a type does not match.
    fn from_stages(stages: Vec<Box<dyn Stage>>) -> Result<Self, Vec<Box<dyn Stage>>>;
    /// The inlined executor over these stages.
    #[doc(hidden)]
    fn into_exec(stages: Vec<Box<dyn Stage>>) -> Result<Box<dyn Exec>, Vec<Box<dyn Stage>>>;
}

/// The path-inlined executor over the concrete stage tuple `T`.
pub struct Inlined<T> {
    stages: T,
    passes: Passes,
}

impl<T> Inlined<T> {
    /// The stages.
    pub fn stages(&self) -> &T {
        &self.stages
    }

    /// The stages, writable (for a fast form over them).
    pub(crate) fn stages_mut(&mut self) -> &mut T {
        &mut self.stages
    }

    /// Whether the stage at `pos` passes every message going `dir` on
    /// unchanged ([`Stage::passes`]).
    pub(crate) fn passes_at(&self, pos: usize, dir: Dir) -> bool {
        self.passes.skips(pos, dir)
    }
}

impl<T: StageTuple> Inlined<T> {
    /// The inlined executor over `stages`, which must be of the types of
    /// `T`; gives them back otherwise.
    pub(crate) fn build(stages: Vec<Box<dyn Stage>>) -> Result<Self, Vec<Box<dyn Stage>>> {
        let passes = Passes::of(stages.iter().map(|s| &**s));
        T::from_stages(stages).map(|stages| Inlined { stages, passes })
    }
}

fn downcast<S: Stage>(b: Box<dyn Stage>) -> S {
    match (b as Box<dyn Any>).downcast::<S>() {
        Ok(s) => *s,
        // `from_stages` checks every type with `matches` first.
        Err(_) => unreachable!("stage type checked by StageTuple::matches"),
    }
}

/// One stage of an unrolled traversal ([`Inlined`]'s `run_once`): calls
/// stage `$idx` in direction `$dir` unless it passes, and returns with
/// the fate unless the message goes on to the next stage.
macro_rules! inlined_step {
    ($self:ident, $idx:tt, $dir:expr, $msg:ident, $env:ident) => {
        if !$self.passes.skips($idx, $dir) {
            let mut cx = Cx {
                env: &mut *$env,
                pos: $idx,
            };
            let verdict = $self.stages.$idx.process($dir, $msg, &mut cx);
            if let Some(fate) = Fate::after(verdict, $idx, $dir) {
                return fate;
            }
        }
    };
}

macro_rules! inlined {
    ($len:expr; $($idx:tt $T:ident),+; rev $($r:tt),+) => {
        impl<$($T: Stage),+> StageTuple for ($($T,)+) {
            const LEN: usize = $len;
            fn matches_refs(stages: &[&dyn Stage]) -> bool {
                stages.len() == $len $(&& (stages[$idx] as &dyn Any).is::<$T>())+
            }
            fn matches_at<'s>(len: usize, stage: impl Fn(usize) -> Option<&'s dyn Stage>) -> bool {
                len == $len $(&& stage($idx).is_some_and(|s| (s as &dyn Any).is::<$T>()))+
            }
            fn from_stages(stages: Vec<Box<dyn Stage>>) -> Result<Self, Vec<Box<dyn Stage>>> {
                if !Self::matches_at(stages.len(), |i| stages.get(i).map(|s| &**s)) {
                    return Err(stages);
                }
                let mut it = stages.into_iter();
                Ok(($(downcast::<$T>(match it.next() { Some(s) => s, None => unreachable!("length checked") }),)+))
            }
            fn into_exec(stages: Vec<Box<dyn Stage>>) -> Result<Box<dyn Exec>, Vec<Box<dyn Stage>>> {
                Inlined::<Self>::build(stages).map(|e| Box::new(e) as Box<dyn Exec>)
            }
        }

        impl<$($T: Stage),+> Exec for Inlined<($($T,)+)> {
            fn len(&self) -> usize {
                $len
            }
            #[inline(always)]
            fn process_at(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Verdict {
                if self.passes.skips(pos, dir) {
                    return Verdict::Next;
                }
                let mut cx = Cx { env, pos };
                match pos {
                    $($idx => self.stages.$idx.process(dir, msg, &mut cx),)+
                    _ => Verdict::Drop(CoreDropReason::BadPosition.into()),
                }
            }
            /// The path's stages unrolled, one straight-line sequence per
            /// direction (the thesis' output and input functions): each
            /// stage's `process` is called with a constant direction, so
            /// its other direction's code folds away when it is inlined.
            /// Same fates as [`traverse`].
            // `pos >= 0` is the last step of every upward sequence.
            #[allow(unused_comparisons)]
            #[inline(always)]
            fn run_once(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate {
                if pos >= $len {
                    return Fate::Dropped(CoreDropReason::BadPosition.into());
                }
                match dir {
                    Dir::Down => {
                        $(if pos <= $idx {
                            inlined_step!(self, $idx, Dir::Down, msg, env);
                        })+
                        Fate::Out(Dir::Down)
                    }
                    Dir::Up => {
                        $(if pos >= $r {
                            inlined_step!(self, $r, Dir::Up, msg, env);
                        })+
                        Fate::Out(Dir::Up)
                    }
                }
            }
            fn stage(&self, pos: usize) -> Option<&dyn Stage> {
                match pos {
                    $($idx => Some(&self.stages.$idx),)+
                    _ => None,
                }
            }
            fn stage_mut(&mut self, pos: usize) -> Option<&mut dyn Stage> {
                match pos {
                    $($idx => Some(&mut self.stages.$idx),)+
                    _ => None,
                }
            }
            fn into_stages(self: Box<Self>) -> Vec<Box<dyn Stage>> {
                let s = self.stages;
                vec![$(Box::new(s.$idx) as Box<dyn Stage>),+]
            }
            fn is_inlined(&self) -> bool {
                true
            }
        }

    };
}

inlined!(1; 0 A; rev 0);
inlined!(2; 0 A, 1 B; rev 1, 0);
inlined!(3; 0 A, 1 B, 2 C; rev 2, 1, 0);
inlined!(4; 0 A, 1 B, 2 C, 3 D; rev 3, 2, 1, 0);
inlined!(5; 0 A, 1 B, 2 C, 3 D, 4 E; rev 4, 3, 2, 1, 0);
inlined!(6; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F; rev 5, 4, 3, 2, 1, 0);
inlined!(7; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G; rev 6, 5, 4, 3, 2, 1, 0);
inlined!(8; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H; rev 7, 6, 5, 4, 3, 2, 1, 0);
inlined!(9; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I; rev 8, 7, 6, 5, 4, 3, 2, 1, 0);
inlined!(10; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J; rev 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
