//! `WORK`: a layer with a configurable code and data working set, for
//! Blackwell's synthetic five-layer benchmark (*Speeding up Protocols for
//! Small Messages*, §4: 6 KB of code and 256 bytes of data per layer, every
//! instruction of the working set executed once per message, a loop over
//! the message).
//!
//! Per message, in either direction, the stage
//! 1. sums the message (the RFC 1071 checksum loop of `HDR`: the loop over
//!    the message's bytes),
//! 2. runs its share of the *code family*: `code` bytes' worth of distinct
//!    straight-line blocks, each executed once, and
//! 3. reads and rewrites every word of its own `data`-byte array,
//!
//! and passes the message on unchanged.
//!
//! # How each layer gets distinct code
//!
//! A cache sees code by address, so five layers of 6 KB must run five
//! different 6 KB stretches of instructions. The family is
//! [`FAMILY_BLOCKS`] monomorphisations of one const-generic function
//! (`block::<N>`, generated with `seq-macro`): the same shape — a chain of
//! [`BLOCK_STEPS`] xor / multiply / rotate steps — with immediates computed
//! from `N`, so no two are identical and the compiler can neither merge
//! nor fold them, and none has a loop (each of its instructions runs once
//! per call). Layer `k` of a stack with `code=C` runs blocks
//! `k·n .. (k+1)·n` where `n = ⌈C / stride⌉` and `stride` is the distance
//! between consecutive blocks in the text segment, measured at run time
//! from their addresses ([`block_stride`]). Layers of one stack must use
//! different `layer` numbers to get disjoint code.

use super::internet_checksum;
use crate::attrs::Attrs;
use crate::error::ModuleError;
use crate::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use crate::ids::Dir;
use crate::module::{CreateCx, Created, Creation, Module, Route};
use crate::module_setup::ModuleSetup;
use crate::msg::Msg;
use crate::stage::{Cx, Stage, Verdict};
use seq_macro::seq;
use std::ops::Range;
use std::sync::OnceLock;

/// Spec of `WORK`.
pub const WORK_SPEC: ModuleSpec = ModuleSpec {
    name: "WORK",
    doc: "synthetic layer with a configurable code and data working set (Blackwell's benchmark layer)",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::optional("layer", "which share of the code family this layer runs (default 0); distinct per layer"),
        ParamSpec::optional("code", "code working set in bytes, run once per message (default 6144)"),
        ParamSpec::optional("data", "data working set in bytes, read and written per message (default 256, at most 65536)"),
    ],
    understands: &[],
};

/// Blocks in the code family (the most code all layers of a stack can run
/// together is `FAMILY_BLOCKS ×` [`block_stride`] bytes, ≈ 70 KB on x86-64).
pub const FAMILY_BLOCKS: usize = 160;

/// Xor / multiply / rotate steps in one block.
pub const BLOCK_STEPS: usize = 24;

/// Largest data working set of one layer, in bytes.
pub const MAX_DATA: usize = 65536;

/// Immediate operands of step `i` of block `n`: 31-bit values (they fit an
/// x86-64 sign-extended 32-bit immediate, so every step is a few
/// instructions with no constant loaded from memory); the multiplier is odd.
const fn key(n: u64, i: u64) -> u64 {
    (n.wrapping_mul(0x9E37_79B9) ^ i.wrapping_mul(0x85EB_CA6B)) & 0x7fff_ffff
}
const fn mul(n: u64, i: u64) -> u64 {
    ((n.wrapping_mul(0xC2B2_AE35) ^ i.wrapping_mul(0x27D4_EB2F)) & 0x7fff_ffff) | 1
}

/// Rotation of step `i` (1 to 31 bits).
const fn rot(i: u32) -> u32 {
    i % 31 + 1
}

/// Block `N` of the code family: straight-line code whose immediates
/// depend on `N`.
#[inline(never)]
fn block<const N: u64>(mut x: u64) -> u64 {
    seq!(I in 0..24 {
        x = (x ^ key(N, I)).wrapping_mul(mul(N, I)).rotate_left(rot(I));
    });
    x
}

seq!(N in 0..160 {
    /// The code family, indexed by block number.
    static FAMILY: [fn(u64) -> u64; FAMILY_BLOCKS] = [#(block::<N>,)*];
});

/// Bytes from one block of the code family to the next in the text
/// segment: the median distance between the sorted block addresses
/// (measured once). This is the code one block brings into the
/// instruction cache.
pub fn block_stride() -> usize {
    static STRIDE: OnceLock<usize> = OnceLock::new();
    *STRIDE.get_or_init(|| {
        let mut at: Vec<usize> = FAMILY.iter().map(|&f| f as usize).collect();
        at.sort_unstable();
        let mut gaps: Vec<usize> = at.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_unstable();
        gaps[gaps.len() / 2].max(1)
    })
}

/// The blocks layer `layer` runs for a code working set of `code` bytes,
/// or why it cannot.
pub fn layer_blocks(layer: usize, code: usize) -> Result<Range<usize>, String> {
    let n = code.div_ceil(block_stride());
    let start = layer.checked_mul(n).ok_or("layer × code overflows")?;
    let end = start.checked_add(n).ok_or("layer × code overflows")?;
    if end > FAMILY_BLOCKS {
        return Err(format!(
            "layer {layer} with {code} bytes of code needs blocks {start}..{end}; the family has {FAMILY_BLOCKS} of {} bytes",
            block_stride()
        ));
    }
    Ok(start..end)
}

/// The graph text of Blackwell's synthetic stack: `ECHO` (`mode`) over
/// `layers` `WORK` layers (numbered from the bottom, each with `code` and
/// `data` bytes) over `LINK` over the `DRIVER` module of device 0, which
/// takes at most `rx_burst` frames per poll.
pub fn work_graph(layers: usize, code: usize, data: usize, mode: &str, rx_burst: usize) -> String {
    let mut g = format!("name=echo module=ECHO mode={mode};\n");
    for k in (0..layers).rev() {
        g.push_str(&format!(
            "name=w{k} module=WORK layer={k} code={code} data={data};\n"
        ));
    }
    g.push_str(&format!(
        "name=link module=LINK;\nname=wire module=DRIVER device=0 rx_burst={rx_burst};\n@\n"
    ));
    let mut above = "echo".to_string();
    for k in (0..layers).rev() {
        g.push_str(&format!("{above}.down<>w{k}.up;\n"));
        above = format!("w{k}");
    }
    g.push_str(&format!("{above}.down<>link.up;\nlink.down<>wire.up;\n"));
    g
}

/// The `WORK` module: its share of the code family and its data size.
pub struct WorkModule {
    blocks: Range<usize>,
    data_words: usize,
}

impl WorkModule {
    /// Factory: parameters `layer`, `code` and `data`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let bad = |setup: &ModuleSetup<'_>, key: &str, reason: String| ModuleError::BadParam {
            instance: setup.instance().to_string(),
            key: key.into(),
            reason,
        };
        let layer: usize = setup.param("layer", 0)?;
        let code: usize = setup.param("code", 6144)?;
        let data: usize = setup.param("data", 256)?;
        let blocks = layer_blocks(layer, code).map_err(|r| bad(setup, "code", r))?;
        if data > MAX_DATA {
            return Err(bad(setup, "data", format!("{data} is above {MAX_DATA}")));
        }
        Ok(Box::new(WorkModule {
            blocks,
            data_words: data.div_ceil(8),
        }))
    }
}

impl Module for WorkModule {
    fn spec(&self) -> &'static ModuleSpec {
        &WORK_SPEC
    }

    fn create_stage(&mut self, _attrs: &mut Attrs, _cx: &mut CreateCx<'_>) -> Creation {
        Ok(Created::new(
            WorkStage::new(self.blocks.clone(), self.data_words),
            Route::Service(1),
        ))
    }
}

/// The `WORK` stage: its blocks, its data and a running digest of all it
/// computed (so that none of the work can be optimised away).
pub struct WorkStage {
    blocks: Range<usize>,
    data: Vec<u64>,
    digest: u64,
    messages: u64,
}

impl WorkStage {
    fn new(blocks: Range<usize>, data_words: usize) -> Self {
        WorkStage {
            blocks,
            data: (0..data_words as u64).collect(),
            digest: 0,
            messages: 0,
        }
    }

    /// The per-message work on `payload`.
    #[inline(never)]
    fn work(&mut self, payload: &[u8]) {
        let mut x = self.digest ^ u64::from(internet_checksum(payload));
        for f in &FAMILY[self.blocks.clone()] {
            x = f(x);
        }
        for w in &mut self.data {
            let v = *w;
            *w = v.rotate_left(7) ^ x;
            x = x.wrapping_add(v);
        }
        self.digest = x;
        self.messages += 1;
    }

    /// Digest of everything processed so far.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// Messages processed.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Code bytes run per message (blocks × [`block_stride`]).
    pub fn code_bytes(&self) -> usize {
        self.blocks.len() * block_stride()
    }
}

impl Stage for WorkStage {
    fn process(&mut self, _dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        self.work(msg.as_slice());
        Verdict::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::keys::{AddrPart, Participants, PARTICIPANTS};
    use crate::device::memory::{memory_pair, MemoryConfig};
    use crate::graph::ModuleGraph;
    use crate::stack::{ModuleTypes, Stack};
    use crate::time::Instant;

    #[test]
    fn blocks_are_distinct_code() {
        let mut at: Vec<usize> = FAMILY.iter().map(|&f| f as usize).collect();
        at.sort_unstable();
        at.dedup();
        assert_eq!(at.len(), FAMILY_BLOCKS, "two blocks share an address");
        // Each block is at least its steps' worth of instructions (three
        // per step, at least 3 bytes each on any ISA we build for).
        assert!(block_stride() >= BLOCK_STEPS * 9, "{}", block_stride());
        // And they compute different functions.
        let outs: Vec<u64> = FAMILY.iter().map(|f| f(12345)).collect();
        let mut d = outs.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), outs.len());
    }

    #[test]
    fn layers_take_disjoint_shares_of_the_family() {
        let a = layer_blocks(0, 6144).unwrap();
        let b = layer_blocks(1, 6144).unwrap();
        assert_eq!(a.end, b.start);
        assert!(a.len() * block_stride() >= 6144);
        assert!((a.len() - 1) * block_stride() < 6144);
        assert!(layer_blocks(1000, 6144).is_err());
        assert_eq!(layer_blocks(3, 0).unwrap().len(), 0);
    }

    #[test]
    fn the_work_depends_on_layer_payload_and_history() {
        let mut l0 = WorkStage::new(layer_blocks(0, 2048).unwrap(), 32);
        let mut l1 = WorkStage::new(layer_blocks(1, 2048).unwrap(), 32);
        l0.work(b"payload");
        l1.work(b"payload");
        assert_ne!(l0.digest(), l1.digest());
        let first = l0.digest();
        l0.work(b"payload");
        assert_ne!(l0.digest(), first, "the data array carries state");
        let mut again = WorkStage::new(layer_blocks(0, 2048).unwrap(), 32);
        again.work(b"payload");
        assert_eq!(again.digest(), first, "deterministic");
        let mut other = WorkStage::new(layer_blocks(0, 2048).unwrap(), 32);
        other.work(b"pbyload");
        assert_ne!(other.digest(), first);
        assert_eq!(l0.messages(), 2);
    }

    fn stack(mode: &str, dev: crate::device::memory::MemoryEnd) -> (Stack, crate::ids::PathId) {
        let types = ModuleTypes::core();
        let text = work_graph(5, 1024, 256, mode, 8);
        let graph = ModuleGraph::from_text(&text, Some("work.graph"), &types.specs()).unwrap();
        let mut s = Stack::builder(graph, types).device(dev).build().unwrap();
        let echo = s.module_id("echo").unwrap();
        let attrs = Attrs::new().with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Id(3)],
                remote: vec![],
            },
        );
        let p = s.path_create(echo, attrs).unwrap();
        (s, p)
    }

    #[test]
    fn five_work_layers_carry_messages_unchanged() {
        let (a, b) = memory_pair(MemoryConfig::default());
        let (mut tx, tp) = stack("sink", a);
        let (mut rx, rp) = stack("sink", b);
        let payload: Vec<u8> = (0..552u32).map(|i| i as u8).collect();
        for _ in 0..20 {
            let m = tx.pool().alloc_copy(&payload).unwrap();
            tx.send(tp, Dir::Down, m).unwrap();
        }
        let mut got = 0;
        for t in 1..10 {
            rx.poll(Instant::from_nanos(t * 1000));
            while let Some(m) = rx.recv(rp, Dir::Up) {
                assert_eq!(m.as_slice(), &payload[..]);
                got += 1;
            }
        }
        assert_eq!(got, 20);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let types = ModuleTypes::core();
        for (params, key) in [("code=1000000", "code"), ("data=100000", "data")] {
            let text = format!(
                "name=w module=WORK {params};\nname=link module=LINK;\nname=wire module=DRIVER device=0;\n@\nw.down<>link.up;\nlink.down<>wire.up;\n"
            );
            let graph = ModuleGraph::from_text(&text, None, &types.specs()).unwrap();
            let (a, _b) = memory_pair(MemoryConfig::default());
            let Err(e) = Stack::builder(graph, ModuleTypes::core()).device(a).build() else {
                panic!("{params} was accepted");
            };
            assert!(e.to_string().contains(key), "{e}");
        }
    }
}
