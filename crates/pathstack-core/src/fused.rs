//! Specialized paths: an established path's common case run as one fused
//! function, with the modular stages behind it for everything else.
//!
//! Scout decides at path creation what can be decided then, so that the
//! common case is cheap (thesis §2.2, §3.3.8). Path-inlining ([`Inlined`])
//! removes the dispatch between stages but leaves each stage doing its
//! general work on every message: parsing its header, looking up its
//! module, checking cases that an established path never meets. A
//! [`FastForm`] is the transformation carried to its end (thesis §4.2,
//! the "fused headers" and "verify-only receive path" of TR 95-02's
//! closing list): for one protocol sequence it writes all the headers
//! of a message going down in one step from what the path fixed when it
//! was made, and on the way up checks a received frame's headers against
//! what the path expects in one step. Whatever it does not handle it
//! declines, *before changing anything*, and the message runs through the
//! modular stages unchanged — they remain the reference, and decide and
//! count as before.
//!
//! The fast form covers the stages strictly between a path's top stage
//! (an application module, a socket) and its bottom one (the device
//! driver): the top stage and the driver are called as in the inlined
//! form, so a fast form is written once per protocol sequence and serves
//! every application and device above and below it (it is generic over
//! their stage types, and monomorphized for each).

use crate::exec::{Exec, Fate, Inlined, StageTuple};
use crate::ids::Dir;
use crate::msg::Msg;
use crate::runtime::Env;
use crate::stage::{Cx, Stage, Verdict};
use crate::time::Instant;

/// The context a fast form works in: the stack's state as each stage of
/// the path would see it, by position.
pub struct FastCx<'a, 'e> {
    env: &'a mut Env<'e>,
}

impl<'e> FastCx<'_, 'e> {
    /// Current stack time.
    #[inline]
    pub fn now(&self) -> Instant {
        self.env.ops.now
    }

    /// The context the stage at `pos` would get: its module, the path's
    /// attributes. A fast form asks it for the module state its stages
    /// would have used (a neighbour cache, an identification counter).
    #[inline]
    pub fn stage(&mut self, pos: usize) -> Cx<'_, 'e> {
        Cx {
            env: &mut *self.env,
            pos,
        }
    }
}

/// The fused fast form of a protocol sequence: the stages `1..LEN-1` of a
/// path whose stages are the tuple `T` (stage 0 its top, stage `LEN-1`
/// its device driver).
///
/// Both methods either handle the message completely for the stages they
/// cover, with exactly the effect the modular stages would have had on
/// it (bytes, annotations, module state such as the identification
/// counter), or decline and leave the message and every state untouched.
/// They never drop: a message they do not like goes to the modular
/// stages, which drop it with their reason. The differential tests of
/// the implementing crate hold them to this.
pub trait FastForm<T>: Send + 'static {
    /// What the fast form keeps per path (header templates made from the
    /// first message, the peer they were made for).
    type State: Send + Default + 'static;

    /// A message the top stage passed down: writes every header of the
    /// covered stages and returns `true`, the frame then goes to the
    /// driver; or returns `false`, untouched, for the modular stages.
    fn send(stages: &mut T, state: &mut Self::State, msg: &mut Msg, cx: &mut FastCx) -> bool;

    /// A frame the driver passed up: checks and strips every header of
    /// the covered stages, writes the annotations they would have
    /// written, and returns `true`, the message then goes to the top
    /// stage; or returns `false`, untouched, for the modular stages.
    fn receive(stages: &mut T, state: &mut Self::State, msg: &mut Msg, cx: &mut FastCx) -> bool;
}

/// The specialized executor: the path-inlined stages `T` with the fast
/// form `F` in front of their middle (what the specialization rule,
/// [`Rule::specialize`](crate::rules::Rule::specialize), installs).
pub struct Specialized<T, F: FastForm<T>> {
    inner: Inlined<T>,
    state: F::State,
    /// Whether the driver passes received frames up untouched, so that the
    /// fast form may take them straight from the device.
    fuse_up: bool,
    /// Messages the fast form handled, per direction (down, up).
    hits: [u64; 2],
}

impl<T, F> Specialized<T, F>
where
    T: StageTuple,
    F: FastForm<T>,
    Inlined<T>: Exec,
{
    /// The specialized executor over `stages`, which must be of the types
    /// of `T`; gives them back otherwise.
    pub(crate) fn build(stages: Vec<Box<dyn Stage>>) -> Result<Box<dyn Exec>, Vec<Box<dyn Stage>>> {
        let inner = Inlined::<T>::build(stages)?;
        let fuse_up = inner.passes_at(T::LEN - 1, Dir::Up);
        Ok(Box::new(Specialized::<T, F> {
            inner,
            state: F::State::default(),
            fuse_up,
            hits: [0; 2],
        }))
    }

    /// The inlined stages from `pos` in `dir`: the general way (a message
    /// the fast form declined, a message entering mid-path), out of line.
    /// Inlined, every stage of the path would be in the fused common
    /// case's function, whose prologue and epilogue would then save and
    /// restore what the whole path uses on every message, and its frame
    /// hold every stage's locals (issue 26 item 1: the common case pays
    /// only for its own work).
    #[inline(never)]
    fn general(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate {
        self.inner.run_once(pos, dir, msg, env)
    }

    /// Stage `pos`'s verdict on a message going `dir`, as a trip's fate
    /// (`None`: on to the next stage).
    #[inline(always)]
    fn call(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Option<Fate> {
        Fate::after(self.inner.process_at(pos, dir, msg, env), pos, dir)
    }
}

impl<T, F> Exec for Specialized<T, F>
where
    T: StageTuple,
    F: FastForm<T>,
    Inlined<T>: Exec,
{
    fn len(&self) -> usize {
        T::LEN
    }

    #[inline(always)]
    fn process_at(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Verdict {
        // LDLP calls stages one at a time: the modular reference.
        self.inner.process_at(pos, dir, msg, env)
    }

    /// One run from `pos` in `dir` to the message's fate: the fast form
    /// where it applies, the inlined stages otherwise. (`Exec::run` goes
    /// on with a turned message, so an echo leaves by the fast form too.)
    #[inline(always)]
    fn run_once(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate {
        let last = T::LEN - 1;
        match dir {
            Dir::Down if pos <= 1 && last >= 2 => {
                if pos == 0 {
                    if let Some(fate) = self.call(0, Dir::Down, msg, env) {
                        return fate;
                    }
                }
                let fused = F::send(
                    self.inner.stages_mut(),
                    &mut self.state,
                    msg,
                    &mut FastCx { env: &mut *env },
                );
                if !fused {
                    return self.general(1, Dir::Down, msg, env);
                }
                self.hits[Dir::Down.index()] += 1;
                self.call(last, Dir::Down, msg, env)
                    .unwrap_or(Fate::Out(Dir::Down))
            }
            Dir::Up if pos == last && last >= 2 && self.fuse_up => {
                let fused = F::receive(
                    self.inner.stages_mut(),
                    &mut self.state,
                    msg,
                    &mut FastCx { env: &mut *env },
                );
                if !fused {
                    return self.general(pos, Dir::Up, msg, env);
                }
                self.hits[Dir::Up.index()] += 1;
                self.call(0, Dir::Up, msg, env)
                    .unwrap_or(Fate::Out(Dir::Up))
            }
            _ => self.general(pos, dir, msg, env),
        }
    }

    fn stage(&self, pos: usize) -> Option<&dyn Stage> {
        self.inner.stage(pos)
    }

    fn stage_mut(&mut self, pos: usize) -> Option<&mut dyn Stage> {
        self.inner.stage_mut(pos)
    }

    fn into_stages(self: Box<Self>) -> Vec<Box<dyn Stage>> {
        Box::new(self.inner).into_stages()
    }

    fn is_inlined(&self) -> bool {
        true
    }

    fn fast_hits(&self) -> Option<[u64; 2]> {
        Some(self.hits)
    }
}
