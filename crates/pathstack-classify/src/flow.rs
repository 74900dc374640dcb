//! The flow table: one exact-match probe for a message of an established
//! path, in front of the demux tree.
//!
//! A path whose every level has a key is a *flow*: its message is one
//! whose header bytes at fixed places equal the keys it registered. Most
//! flows are active paths (a TCP connection, a connected UDP socket); a
//! passive one (RPC's paths, which serve every peer; a bound UDP socket, a
//! TCP listener) answers where no active path takes its messages
//! (point 3).
//! When every module on such a path describes where its active key lies in
//! its header ([`FlowLayout`], from
//! [`PartialClassifier::flow_layout`](crate::PartialClassifier::flow_layout)),
//! the classifier also files the path under its keys, placed where they lie
//! in a message ([`FlowPlan`]). A lookup then loads a few masked 8-byte
//! windows of the message into registers, hashes once, probes once and
//! checks the entry's guard bytes and header lengths, where the tree walk
//! calls each level's partial classifier and probes per level.
//!
//! # Why a flow hit is the tree's answer
//!
//! The tree stays the authority; the flow table only answers when the tree
//! provably answers the same:
//!
//! 1. *Every level matches.* A layout's contract is that whenever it
//!    applies to a header (its guards hold, the header is all there) the
//!    module's `extract(.., Active)` returns exactly the layout's key and
//!    header length ([`FlowLayout::extract`]). A hit requires every byte of
//!    the path's registered keys to equal the message's byte where that
//!    level's layout reads it, and every level's guards and header length
//!    to hold *for the entry's own chain of modules* (the modules of the
//!    path's nodes), so the active walk, level by level, extracts the
//!    path's keys and reaches the path's last node.
//! 2. *Nothing longer matches.* The walk can only go past that node if a
//!    node names a next module there, i.e. some active path continues
//!    below the flow's last level. Demux nodes are unique per *(parent,
//!    mode, key)* and the next module after a node is unique
//!    (`NextModuleConflict`), so any longer active match passes through the
//!    same nodes and continues below the last one. A path is therefore kept
//!    in the flow table only while its last node names no next module: the
//!    classifier takes it out when a registration continues below that node
//!    and puts it back when the last continuing path goes.
//! 3. *Active beats passive.* Any matching active path wins over every
//!    passive one whatever their lengths; `Stop` levels end a chain like
//!    any last level. A lookup therefore probes every active gather of the
//!    receiving module before any passive one, and a *passive* path (filed
//!    with its modules' passive layouts,
//!    [`PartialClassifier::passive_flow_layout`], and only where the
//!    receiving module's passive layout is its active one, so that a
//!    message the layouts apply to has the same first key in both modes)
//!    answers only where the active walk would find nothing:
//!    * *unshadowed* ([`FlowMode::Passive`]): its first node has no active
//!      twin, so the active walk finds no first node at all;
//!    * *shadowed* ([`FlowMode::Shadowed`]): its first node has an active
//!      twin (a listener beside its connections, a bound socket beside a
//!      connected one). Its hit stands when every active chain the tree
//!      counts at the receiving module is a flow (so every path the active
//!      walk could find is one) and each active flow chain there either
//!      *admits* the message (its layouts apply, so the active probe,
//!      which missed, would have found its path) or *excludes* it: the
//!      levels before its last apply, and in a key bit all its flows have
//!      alike (IPv4's protocol 6 of a chain of TCP connections) the message
//!      has the other value, so the active walk never reaches a path of
//!      the chain. Otherwise the tree decides. The check runs only on a
//!      shadowed hit, over the few active chains.
//!
//!    The classifier refiles the passive flows when an active first node
//!    comes or goes (rare: the first connection of an EtherType), so each
//!    is filed under the right mode. Passive paths of fewer than three
//!    keyed levels are left to the walk: their gathers would cost every
//!    other message a probe for a saving of a level or two.
//!
//!    The passive flows are RPC's paths (BLAST/BID/CHAN over ETH or IP),
//!    bound UDP sockets and TCP listeners (ETH's EtherType, IPv4's
//!    protocol, the destination port). A listener's flow takes every
//!    segment to its port, not only SYNs, as the walk does: neither the
//!    layout nor TCP's partial classifier reads the flags, and the
//!    listener's stage answers the others.
//! 4. *One flow answers.* Two matching paths of one mode and equal length
//!    would share all their nodes, which registration refuses
//!    (`Ambiguous`); of unequal length, the shorter is not in the table
//!    (2.). So at most one active and one passive flow match a message,
//!    and the active one is probed first (3.).
//!
//! A message the layouts do not apply to (IPv4 options or a fragment, a
//! truncated header) or whose key no flow has costs the gather and one
//! probe, then takes the tree walk unchanged.
//!
//! # Layout
//!
//! Flows of one mode whose keys are read from the same windows of a
//! message arriving at the same module share a [`Gather`] and its hash
//! table, so a host with TCP connections and connected UDP sockets (whose
//! port keys lie at the same offsets) still probes once: the protocol byte
//! in the IP key tells them apart, and each entry's chain checks its own
//! guards. A gather keeps the key bits all its flows share once (the
//! EtherType, a host's address) and turns away a message without them
//! with one load; an entry, held in the gather's slot table
//! (`flow_slots.rs`), is the bytes that vary, folded into as few words as
//! they fit ([`Fold`]), and one word of path, chain and distance from
//! home: 16 bytes for a host's Ethernet/IPv4/TCP connections, over a load
//! factor between 13/24 and 13/16. Active gathers are probed before
//! passive ones, most flows first within each. Gathers and chains are few
//! (one per distinct layout, mode and module sequence) and stay when their
//! last flow goes; a changed layout rebuilds the table from the tree.
//!
//! [`PartialClassifier::passive_flow_layout`]: crate::PartialClassifier::passive_flow_layout

use crate::flow_probe::{
    Compiled, FlowProbe, Found, LastLen, ProbeKind, ProbeWindow, Probed, MAX_PROBE_GUARDS,
};
use crate::flow_slots::{Entry, FlowSlots, MAX_CHAINS};
use crate::fold::Fold;
use crate::hash::EdgeHasher;
use crate::header_len::HeaderLen;
use crate::limits::{MAX_CLASSIFIED_MODULES, MAX_DEPTH, WORDS};
use crate::node::NONE;
use crate::{Key, ModuleId};

/// Most key spans one [`FlowLayout`] may name (IPv4 needs three: protocol,
/// destination, source).
pub const MAX_KEY_SPANS: usize = 4;

/// Most guard bytes one [`FlowLayout`] may name (BLAST's short message
/// needs seven: a zero sequence number and fragment count, the SEND op).
pub const MAX_GUARDS: usize = 8;

/// A run of key bytes inside one header, each byte taken under `mask`
/// (0xff but for a key byte that is some bits of a header byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    at: u8,
    len: u8,
    mask: u8,
}

/// A header byte that must hold `value` under `mask` for a layout to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Guard {
    at: u8,
    mask: u8,
    value: u8,
}

const NO_SPAN: Span = Span {
    at: 0,
    len: 0,
    mask: 0,
};
const NO_GUARD: Guard = Guard {
    at: 0,
    mask: 0,
    value: 0,
};

/// Where a module's *active* key lies in its header, for messages whose
/// header has one fixed shape: the key's byte spans in order, the header's
/// length, and guard bytes that must hold for that shape.
///
/// **Contract.** For every `header` for which [`extract`](Self::extract)
/// returns `Some((key, len))`, the module's partial classifier returns
/// `Some((key, len))` for the same bytes in [`KeyMode::Active`]. The layout
/// may decline messages the classifier accepts (they take the tree walk);
/// it must never accept one with another key or length. Modules check this
/// with a property test against their classifier.
///
/// Built in constant context, where a malformed layout (a span or guard
/// outside the header's fixed part, too many spans, a key longer than
/// [`Key::MAX_LEN`]) fails the build:
///
/// ```
/// use pathstack_classify::{FlowLayout, HeaderLen, Key};
///
/// // A UDP header: the key is the destination port, then the source port.
/// const UDP: FlowLayout = FlowLayout::new(HeaderLen::Fixed(8)).key(2, 2).key(0, 2);
/// let h = [0x9c, 0x40, 0x00, 0x35, 0, 9, 0, 0, b'x'];
/// assert_eq!(UDP.extract(&h), Some((Key::from_array([0x00, 0x35, 0x9c, 0x40]), 8)));
/// assert_eq!(UDP.extract(&h[..7]), None);
/// ```
///
/// [`KeyMode::Active`]: crate::KeyMode::Active
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowLayout {
    header: HeaderLen,
    spans: [Span; MAX_KEY_SPANS],
    n_spans: u8,
    guards: [Guard; MAX_GUARDS],
    n_guards: u8,
    key_len: u8,
}

impl FlowLayout {
    /// The layout of a module without a partial classifier: no header, the
    /// empty key, always applies.
    pub const PASS_THROUGH: FlowLayout = FlowLayout::new(HeaderLen::Fixed(0));

    /// A header of length `header` with no key bytes and no guards yet.
    ///
    /// # Panics
    ///
    /// For a [`HeaderLen::Words`] whose count byte lies outside `0..min`
    /// or whose shift leaves no 4-bit field.
    pub const fn new(header: HeaderLen) -> Self {
        if let HeaderLen::Words { at, shift, min } = header {
            assert!(
                at < min,
                "the word count must lie in the header's fixed part"
            );
            assert!(shift <= 4, "the word count is a 4-bit field");
        }
        FlowLayout {
            header,
            spans: [NO_SPAN; MAX_KEY_SPANS],
            n_spans: 0,
            guards: [NO_GUARD; MAX_GUARDS],
            n_guards: 0,
            key_len: 0,
        }
    }

    /// The bytes every header of this layout has: the fixed length, or the
    /// minimum of a variable one.
    pub const fn fixed_len(&self) -> usize {
        match self.header {
            HeaderLen::Fixed(n) | HeaderLen::Words { min: n, .. } => n as usize,
        }
    }

    /// How the header's length is known.
    pub const fn header(&self) -> HeaderLen {
        self.header
    }

    /// Appends bytes `at..at + len` of the header to the key.
    ///
    /// # Panics
    ///
    /// If the span is empty, lies outside the header's fixed part, is one
    /// span too many, or makes the key longer than [`Key::MAX_LEN`].
    pub const fn key(self, at: u8, len: u8) -> Self {
        self.span(Span {
            at,
            len,
            mask: 0xff,
        })
    }

    /// Appends the bits `mask` of header byte `at` to the key, as one key
    /// byte `header[at] & mask` (CHAN's key names the `FROM_CLIENT` flag
    /// of its flags byte, not the byte).
    ///
    /// # Panics
    ///
    /// As [`key`](Self::key), and for an empty mask.
    pub const fn key_bits(self, at: u8, mask: u8) -> Self {
        assert!(mask != 0, "an empty key mask");
        self.span(Span { at, len: 1, mask })
    }

    const fn span(mut self, sp: Span) -> Self {
        let Span { at, len, .. } = sp;
        assert!(len > 0, "an empty key span");
        assert!(
            at as usize + len as usize <= self.fixed_len(),
            "a key span outside the header's fixed part"
        );
        assert!(
            (self.n_spans as usize) < MAX_KEY_SPANS,
            "too many key spans"
        );
        assert!(
            self.key_len as usize + len as usize <= Key::MAX_LEN,
            "key longer than Key::MAX_LEN"
        );
        self.spans[self.n_spans as usize] = sp;
        self.n_spans += 1;
        self.key_len += len;
        self
    }

    /// Requires `header[at] & mask == value` for the layout to apply.
    ///
    /// # Panics
    ///
    /// If the byte lies outside the header's fixed part, `value` has bits
    /// outside `mask` (the guard could never hold), or it is one guard too
    /// many.
    pub const fn guard(mut self, at: u8, mask: u8, value: u8) -> Self {
        assert!(
            (at as usize) < self.fixed_len(),
            "a guard outside the header's fixed part"
        );
        assert!(value & !mask == 0, "a guard that can never hold");
        assert!((self.n_guards as usize) < MAX_GUARDS, "too many guards");
        self.guards[self.n_guards as usize] = Guard { at, mask, value };
        self.n_guards += 1;
        self
    }

    /// Length of the key the layout yields.
    pub const fn key_len(&self) -> usize {
        self.key_len as usize
    }

    fn spans(&self) -> &[Span] {
        &self.spans[..usize::from(self.n_spans)]
    }

    fn guards(&self) -> &[Guard] {
        &self.guards[..usize::from(self.n_guards)]
    }

    /// The header's length if the layout applies to `header` (the message
    /// from this module's header on): its guards hold and the header is all
    /// there.
    pub fn header_len(&self, header: &[u8]) -> Option<usize> {
        let fixed = header.get(..self.fixed_len())?;
        if !self
            .guards()
            .iter()
            .all(|g| fixed[usize::from(g.at)] & g.mask == g.value)
        {
            return None;
        }
        let len = match self.header {
            HeaderLen::Fixed(n) => usize::from(n),
            HeaderLen::Words { at, shift, min } => {
                let n = usize::from((fixed[usize::from(at)] >> shift) & 0xf) * 4;
                if n < usize::from(min) || n > header.len() {
                    return None;
                }
                n
            }
        };
        Some(len)
    }

    /// The active key and header length the layout reads from `header`, or
    /// `None` where it does not apply: what the module's partial classifier
    /// must return for the same bytes (the contract above).
    pub fn extract(&self, header: &[u8]) -> Option<(Key, usize)> {
        let len = self.header_len(header)?;
        let mut key = [0u8; Key::MAX_LEN];
        let mut n = 0;
        for s in self.spans() {
            let (at, l) = (usize::from(s.at), usize::from(s.len));
            for (k, &b) in key[n..n + l].iter_mut().zip(&header[at..at + l]) {
                *k = b & s.mask;
            }
            n += l;
        }
        Some((Key::new(&key[..n])?, len))
    }
}

/// Why a chain of levels cannot be a flow: the classifier then leaves the
/// path to the tree alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotAFlow {
    /// A module has a partial classifier but no layout.
    NoLayout,
    /// A registered key is not what the layout yields (another length, a
    /// pass-through level with a key, a byte a layout names twice with two
    /// values): the active walk could never match it on a message the
    /// layouts apply to.
    KeyShape,
    /// A level before the last has a variable header length.
    VariableHeader,
    /// The headers reach beyond 64 KiB.
    TooLong,
    /// The key bytes, or the guard bytes, lie in more than [`WORDS`]
    /// 8-byte windows (or the chain is deeper than a path can be).
    Scattered,
    /// Two guards on one byte contradict each other: the layouts never
    /// apply.
    Guards,
    /// No levels at all.
    Empty,
}

/// A chain of levels laid out for one flow: what [`FlowTable::insert`]
/// files and [`FlowTable::remove`] looks for.
///
/// The flow key is not the registered keys end to end but the same bytes
/// where they lie in the message: a few 8-byte windows of it, each loaded
/// whole and masked to the key bytes. The lookup then gathers a key with a
/// load and an AND per window — no byte shuffling into the modules' key
/// order — and the entry holds the registered bytes at the same places.
/// Both name the same bytes, so they are equal exactly when every level's
/// key is (each byte's offset comes from its level's layout).
pub(crate) struct FlowPlan {
    levels: Few<ChainLevel, MAX_DEPTH>,
    last: ChainLevel,
    /// The guards, as windows like the key's: `(offset, mask, value)`.
    guards: Few<(u16, u64, u64), WORDS>,
    /// Bytes the fixed headers span from the receiving module's on.
    need: usize,
    /// `(offset in the message, mask)` of each window.
    windows: Few<(u16, u64), WORDS>,
    /// The registered keys, as the windows of a matching message read.
    key: [u64; WORDS],
    /// Where each byte of the registered keys, end to end, goes in the
    /// key: `(word, shift)`. Kept by the chain, so that filing another
    /// path of the same modules only scatters its bytes.
    scatter: Few<(u8, u8), MAX_BYTES>,
    /// Each level's key length.
    key_lens: Few<u8, MAX_DEPTH>,
    /// The bits of each window that hold key bytes of the levels before
    /// the last: what [`FlowChain::excludes`] may compare (the last
    /// level's header may be one its layout declines).
    prefix: [u64; WORDS],
    /// The guards of the levels before the last, as windows.
    prefix_guards: Few<(u16, u64, u64), WORDS>,
}

/// Most key bytes, and most guard bytes, a chain's windows can hold.
const MAX_BYTES: usize = WORDS * 8;

impl FlowPlan {
    /// Lays out the chain `levels` (receiving module first, with the keys
    /// the path registered), `layout(m)` giving module `m`'s layout. On
    /// the stack: registering a flow allocates only when a table grows.
    pub(crate) fn new(
        levels: &[(ModuleId, Key)],
        layout: impl Fn(ModuleId) -> Option<FlowLayout>,
    ) -> Result<FlowPlan, NotAFlow> {
        let mut chain = Few::new(ChainLevel {
            module: ModuleId(NONE),
            offset: 0,
            header: HeaderLen::Fixed(0),
        });
        // Every guard byte: where it lies, its mask and value.
        let mut guards = Few::<(u16, u8, u8), MAX_BYTES>::new((0, 0, 0));
        // Every key byte: where it lies in the message, its mask and
        // value, and its place in the registered keys end to end.
        let mut bytes = Few::<(u16, u8, u8, u8), MAX_BYTES>::new((0, 0, 0, 0));
        let mut key_lens = Few::new(0u8);
        let mut key_at = 0usize;
        let place = |at: usize, within: u8| {
            u16::try_from(at + usize::from(within)).map_err(|_| NotAFlow::TooLong)
        };
        let mut offset = 0usize;
        for (i, &(module, key)) in levels.iter().enumerate() {
            let l = layout(module).ok_or(NotAFlow::NoLayout)?;
            if key.len() != l.key_len() {
                return Err(NotAFlow::KeyShape);
            }
            if i + 1 < levels.len() && !matches!(l.header, HeaderLen::Fixed(_)) {
                return Err(NotAFlow::VariableHeader);
            }
            let at = u16::try_from(offset).map_err(|_| NotAFlow::TooLong)?;
            for g in l.guards() {
                guards.push((place(offset, g.at)?, g.mask, g.value))?;
            }
            // The spans in the order they lie in the header, each with
            // where its bytes start in the key.
            let spans = l.spans();
            let mut starts = [0usize; MAX_KEY_SPANS];
            let mut order = [0usize; MAX_KEY_SPANS];
            let mut n = 0;
            for (i, sp) in spans.iter().enumerate() {
                (starts[i], order[i]) = (n, i);
                n += usize::from(sp.len);
            }
            let order = &mut order[..spans.len()];
            order.sort_unstable_by_key(|&i| spans[i].at);
            let value = key.as_bytes();
            for &i in order.iter() {
                let sp = spans[i];
                for k in 0..sp.len {
                    let v = *value
                        .get(starts[i] + usize::from(k))
                        .ok_or(NotAFlow::KeyShape)?;
                    let idx = key_at + starts[i] + usize::from(k);
                    let idx = u8::try_from(idx).map_err(|_| NotAFlow::Scattered)?;
                    // A registered byte with bits outside its mask is one
                    // the layout's key never yields.
                    if v & !sp.mask != 0 {
                        return Err(NotAFlow::KeyShape);
                    }
                    bytes.push((place(offset, sp.at)? + u16::from(k), sp.mask, v, idx))?;
                }
            }
            key_at += key.len();
            // A key is at most `Key::MAX_LEN` (32) bytes.
            key_lens.push(key.len() as u8)?;
            chain.push(ChainLevel {
                module,
                offset: at,
                header: l.header,
            })?;
            offset += l.fixed_len();
        }
        let need = offset;
        u16::try_from(need).map_err(|_| NotAFlow::TooLong)?;
        let last = *chain.last().ok_or(NotAFlow::Empty)?;
        // Levels lie one after the other, so the bytes come sorted but for
        // the spans' order within a level (IPv4: protocol, destination,
        // source): sort only then.
        if !bytes.windows(2).all(|p| p[0].0 <= p[1].0) {
            bytes.sort_unstable_by_key(|b| b.0);
        }
        // A byte named twice must have been named under one mask and
        // registered the same both times (then it is one byte of the key).
        let mut distinct = Few::<(u16, u8, u8), MAX_BYTES>::new((0, 0, 0));
        for &(o, m, v, _) in bytes.iter() {
            match distinct.last() {
                Some(&(p, n, w)) if p == o && (w != v || n != m) => return Err(NotAFlow::KeyShape),
                Some(&(p, _, _)) if p == o => {}
                _ => distinct.push((o, m, v))?,
            }
        }
        let (windows, assigned) = cover(need, &distinct)?;
        let mut key = [0u64; WORDS];
        for (k, w) in key.iter_mut().zip(windows.iter()) {
            *k = w.2;
        }
        let mut scatter = Few::new((0u8, 0u8));
        for _ in 0..key_at {
            scatter.push((0, 0))?;
        }
        // Key bytes from here on are the last level's.
        let last_key_at = key_at - key_lens.last().map_or(0, |&l| usize::from(l));
        let mut prefix = [0u64; WORDS];
        let mut d = 0;
        for &(o, m, _, idx) in bytes.iter() {
            // `bytes` and `distinct` are both in offset order.
            while distinct[d].0 != o {
                d += 1;
            }
            let w = assigned[d];
            let shift = 8 * (o - windows[usize::from(w)].0);
            scatter[usize::from(idx)] = (w, shift as u8);
            if usize::from(idx) < last_key_at {
                prefix[usize::from(w)] |= u64::from(m) << shift;
            }
        }
        // Guards on one byte combine; contradicting ones never hold.
        if !guards.windows(2).all(|p| p[0].0 <= p[1].0) {
            guards.sort_unstable();
        }
        let mut merged = Few::<(u16, u8, u8), MAX_BYTES>::new((0, 0, 0));
        for &(o, m, v) in guards.iter() {
            match merged.last_mut() {
                Some(g) if g.0 == o => {
                    if (g.2 ^ v) & g.1 & m != 0 {
                        return Err(NotAFlow::Guards);
                    }
                    g.1 |= m;
                    g.2 |= v;
                }
                _ => merged.push((o, m, v))?,
            }
        }
        let mut masks = Few::new((0, 0));
        for &(o, m, _) in windows.iter() {
            masks.push((o, m))?;
        }
        let before_last = merged.iter().take_while(|g| g.0 < last.offset).count();
        let prefix_guards = cover(usize::from(last.offset), &merged[..before_last])?.0;
        Ok(FlowPlan {
            levels: chain,
            last,
            prefix_guards,
            guards: cover(need, &merged)?.0,
            need,
            windows: masks,
            key,
            scatter,
            key_lens,
            prefix,
        })
    }
}

/// Covers `bytes` — `(offset, mask, value)`, sorted by offset, one per
/// offset — with at most [`WORDS`] 8-byte windows `(offset, mask, value)`
/// from the left: each window starts at the first byte it covers, moved
/// back to end within the first `need` bytes where it can, so that a
/// message a chain admits has all 8 bytes of every window and a window is
/// one load. Also says which window each byte went to.
fn cover(need: usize, bytes: &[(u16, u8, u8)]) -> Result<Cover, NotAFlow> {
    let mut windows = Few::new((0u16, 0u64, 0u64));
    let mut assigned = Few::new(0u8);
    let mut end = 0;
    for &(o, m, v) in bytes {
        let o = usize::from(o);
        if windows.is_empty() || o >= end {
            let start = o.min(need.saturating_sub(8));
            // `need` fits in 16 bits (checked by the caller).
            windows.push((start as u16, 0, 0))?;
            end = start + 8;
        }
        // At most `WORDS` windows, so the index fits.
        assigned.push(windows.len() as u8 - 1)?;
        let w = windows.last_mut().ok_or(NotAFlow::Empty)?;
        let shift = 8 * (o - usize::from(w.0));
        w.1 |= u64::from(m) << shift;
        w.2 |= u64::from(v & m) << shift;
    }
    Ok((windows, assigned))
}

/// What [`cover`] makes: the windows `(offset, mask, value)`, and the
/// window of each byte.
type Cover = (Few<(u16, u64, u64), WORDS>, Few<u8, MAX_BYTES>);

/// Up to `N` items in an array: what a [`FlowPlan`] is built in, so that
/// planning a flow allocates nothing. A push beyond `N` is a chain too
/// scattered to be a flow.
#[derive(Clone, Copy)]
pub(crate) struct Few<T: Copy, const N: usize> {
    items: [T; N],
    len: usize,
}

impl<T: Copy, const N: usize> Few<T, N> {
    /// Empty; `filler` fills the unused places.
    fn new(filler: T) -> Self {
        Few {
            items: [filler; N],
            len: 0,
        }
    }

    fn push(&mut self, t: T) -> Result<(), NotAFlow> {
        let slot = self.items.get_mut(self.len).ok_or(NotAFlow::Scattered)?;
        *slot = t;
        self.len += 1;
        Ok(())
    }
}

impl<T: Copy, const N: usize> std::ops::Deref for Few<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items[..self.len]
    }
}

impl<T: Copy, const N: usize> std::ops::DerefMut for Few<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[..self.len]
    }
}

/// Eight bytes of `msg` from `at` as a little-endian word, the bytes past
/// its end read as zero. A message a chain admits has them all (its
/// windows end within the fixed headers); a shorter one only gets a key
/// that its chain's checks then refuse.
#[inline(always)]
fn load_le(msg: &[u8], at: usize) -> u64 {
    match msg.get(at..at + 8) {
        Some(b) => {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        }
        None => msg
            .get(at..)
            .unwrap_or(&[])
            .iter()
            .rev()
            .fold(0, |w, &b| w << 8 | u64::from(b)),
    }
}

/// One level of a flow chain, as the lookup reports it in a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChainLevel {
    pub(crate) module: ModuleId,
    /// Where its header starts in the message.
    pub(crate) offset: u16,
    header: HeaderLen,
}

/// A sequence of modules flows are filed under, with the checks that make
/// their layouts apply to a message.
pub(crate) struct FlowChain {
    /// Whether its flows are active paths, passive ones or passive ones
    /// an active path may shadow (module docs, point 3).
    mode: FlowMode,
    gather: u32,
    levels: Box<[ChainLevel]>,
    /// Every level's guards, as windows: `(offset in the message, mask,
    /// value)`, one load and compare each (one for IPv4's three).
    guards: Box<[(u16, u64, u64)]>,
    /// Bytes the fixed headers span.
    need: usize,
    /// The last level, whose header may vary in length.
    last: ChainLevel,
    /// Where each registered key byte goes ([`FlowPlan`]'s).
    scatter: Box<[(u8, u8)]>,
    /// Each level's key length.
    key_lens: Box<[u8]>,
    /// The key bits of the levels before the last ([`FlowPlan`]'s).
    prefix: [u64; WORDS],
    /// The guards of the levels before the last ([`FlowPlan`]'s).
    prefix_guards: Box<[(u16, u64, u64)]>,
    /// The prefix bits every flow filed in the chain since it was last
    /// empty has alike (`fixed`, under mask `fixed_mask`, per window of
    /// the gather): an active chain whose flows all have IPv4's protocol
    /// 6 cannot take a message with 17 there ([`excludes`](Self::excludes)).
    /// Narrowed as flows come, not widened as they go: it may say too
    /// little, never too much.
    fixed_mask: [u64; WORDS],
    fixed: [u64; WORDS],
    entries: u32,
}

impl FlowChain {
    /// The modules from the receiving end.
    pub(crate) fn levels(&self) -> &[ChainLevel] {
        &self.levels
    }

    /// Whether its flows are passive paths.
    pub(crate) fn passive(&self) -> bool {
        self.mode != FlowMode::Active
    }

    /// Whether no path of this (active) chain can take `msg`: the levels
    /// before the last are all there and their guards hold, so their
    /// layouts apply and the walk reads their keys where the layouts do
    /// (the layout contract), and in a prefix bit every flow of the chain
    /// has alike `msg` has the other value, so the active walk never
    /// reaches the chain's last level with its keys. `windows` are the
    /// chain's gather's.
    #[inline]
    fn excludes(&self, msg: &[u8], windows: &[(u16, u64)]) -> bool {
        let Some(fixed) = msg.get(..usize::from(self.last.offset)) else {
            return false;
        };
        self.prefix_guards
            .iter()
            .all(|&(at, mask, value)| load_le(fixed, usize::from(at)) & mask == value)
            && windows
                .iter()
                .zip(self.fixed_mask.iter().zip(&self.fixed))
                .any(|(&(at, _), (&mask, &value))| {
                    mask != 0 && load_le(fixed, usize::from(at)) & mask != value
                })
    }

    /// Narrows [`fixed`](Self::fixed) to the prefix bits `key` shares with
    /// the chain's other flows (all of them for the first flow).
    fn narrow(&mut self, key: &[u64; WORDS]) {
        let first = self.entries == 0;
        let words = self.fixed_mask.iter_mut().zip(&mut self.fixed);
        for ((mask, fixed), (&k, &prefix)) in words.zip(key.iter().zip(&self.prefix)) {
            if first {
                *mask = prefix;
            } else {
                *mask &= !(k ^ *fixed);
            }
            *fixed = k & *mask;
        }
    }

    /// The last level's header length if every level's layout applies to
    /// `msg` (the guards hold, every header is all there).
    #[inline]
    pub(crate) fn admits(&self, msg: &[u8]) -> Option<usize> {
        let fixed = msg.get(..self.need)?;
        for &(at, mask, value) in self.guards.iter() {
            if load_le(fixed, usize::from(at)) & mask != value {
                return None;
            }
        }
        self.last_len(fixed, msg)
    }

    /// The last level's header length in `msg` (whose first `need` bytes
    /// are `fixed`), if it is all there.
    #[inline]
    fn last_len(&self, fixed: &[u8], msg: &[u8]) -> Option<usize> {
        let last = &self.last;
        match last.header {
            HeaderLen::Fixed(n) => Some(usize::from(n)),
            HeaderLen::Words { at, shift, min } => {
                let start = usize::from(last.offset);
                let n = usize::from((fixed[start + usize::from(at)] >> shift) & 0xf) * 4;
                (n >= usize::from(min) && start + n <= msg.len()).then_some(n)
            }
        }
    }
}

/// The flows whose keys are gathered from the same windows of messages
/// arriving at one module, and the table that finds them by key.
///
/// The bits every flow of the gather has alike (the EtherType of every
/// Ethernet/IPv4 flow, a host's protocol and address) are kept once and
/// compared in registers; the entries hold only the bytes that vary,
/// folded into as few words as they fit ([`Fold`]): one word for a host's
/// TCP connections. A byte starts to vary when a flow with another value
/// comes: then the entries are laid out again, at most once per byte of
/// the windows in a gather's life.
struct Gather {
    module: ModuleId,
    /// How its flows are filed: a passive gather is probed after every
    /// active gather of the module (module docs, point 4), and a hit in a
    /// shadowed one is checked (point 3). Kept here rather than read from
    /// the hit's chain: the gather is at hand in the probe loop.
    mode: FlowMode,
    /// `(offset in the message, mask)` of each key word.
    windows: Box<[(u16, u64)]>,
    /// How a key's words are stored.
    fold: Fold,
    /// The last window with common bits as `(offset, mask, value)`: one
    /// load and compare that turns away most messages of other flows
    /// (another protocol's) before the other windows are read. Mask 0
    /// when no bit is common.
    screen: (u16, u64, u64),
    slots: FlowSlots,
}

impl Gather {
    fn new(module: ModuleId, mode: FlowMode, windows: &[(u16, u64)]) -> Self {
        Gather {
            module,
            mode,
            windows: windows.into(),
            fold: Fold::new(),
            screen: (0, 0, 0),
            slots: FlowSlots::new(0),
        }
    }

    /// Sets [`screen`](Self::screen) from the common bits.
    fn set_screen(&mut self) {
        self.screen = (0, 0, 0);
        for (w, &(at, mask)) in self.windows.iter().enumerate() {
            let (sel, value) = self.fold.common(w);
            if sel & mask != 0 {
                self.screen = (at, sel & mask, value & mask);
            }
        }
    }

    /// Whether `msg` passes the screen: it has the last common bits.
    #[inline(always)]
    fn screens(&self, msg: &[u8]) -> bool {
        let (at, mask, value) = self.screen;
        load_le(msg, usize::from(at)) & mask == value
    }

    /// `msg`'s key (of `N` windows) folded into the stored words, zero
    /// past them; `None` if it fails the screen or a common bit differs
    /// (no flow of the gather has it). What [`pack`](Self::pack) does at
    /// registration, in registers.
    #[inline(always)]
    fn key_of<const N: usize>(&self, msg: &[u8]) -> Option<[u64; WORDS]> {
        if !self.screens(msg) {
            return None;
        }
        let windows: &[(u16, u64); N] = self.windows.get(..N)?.try_into().ok()?;
        let (mut out, mut diff) = ([0u64; WORDS], 0);
        // Indexed by constants once `N` is known: no loop, no checks.
        if self.fold.stored() == 0 {
            // Every bit common (one flow, or a few alike but for bits
            // outside the windows): only the compare.
            for (w, &(at, mask)) in windows.iter().enumerate() {
                let k = load_le(msg, usize::from(at)) & mask;
                self.fold.check(w, k, &mut diff);
            }
        } else if self.fold.stored() == 1 {
            // Every window's varying bytes in one word (a host's
            // connections): no stored word to choose.
            for (w, &(at, mask)) in windows.iter().enumerate() {
                let k = load_le(msg, usize::from(at)) & mask;
                out[0] |= self.fold.add_one(w, k, &mut diff);
            }
        } else {
            for (w, &(at, mask)) in windows.iter().enumerate() {
                let k = load_le(msg, usize::from(at)) & mask;
                self.fold.add(w, k, &mut diff, &mut out);
            }
        }
        (diff == 0).then_some(out)
    }

    /// The key of `msg`: a load and a mask per window (what
    /// [`FlowTable::lookup`] does with a constant window count).
    #[cfg(test)]
    fn gather(&self, msg: &[u8]) -> [u64; WORDS] {
        let mut key = [0u64; WORDS];
        for (k, &(at, mask)) in key.iter_mut().zip(self.windows.iter()) {
            *k = load_le(msg, usize::from(at)) & mask;
        }
        key
    }

    /// The words an entry of `key` (the windows' words) stores, zero
    /// padded, and the hash it is filed under; `None` if a common bit
    /// differs (no flow of the gather has the key).
    fn pack(&self, key: &[u64; WORDS], hasher: &EdgeHasher) -> Option<([u64; WORDS], u64)> {
        let stored = self.fold.fold(key)?;
        let n = self.fold.stored();
        Some((stored, Fold::hash(hasher, &stored[..n])))
    }

    /// Lets every byte in which `key` differs from the common bits vary,
    /// laying the entries out again if any does.
    fn admit(&mut self, key: &[u64; WORDS], hasher: &EdgeHasher) {
        if self.slots.len() == 0 {
            // The first flow (again): its bits are the common ones.
            self.fold.set_common(key);
            self.set_screen();
            return;
        }
        // Most flows (another connection of a host) vary only in bytes
        // that vary already: one fold says so.
        if self.fold.fold(key).is_some() {
            return;
        }
        let masks: Few<u64, WORDS> = {
            let mut m = Few::new(0);
            for &(_, mask) in self.windows.iter() {
                // At most `WORDS` windows.
                let _ = m.push(mask);
            }
            m
        };
        let Some(wider) = self.fold.widened(key, &masks) else {
            return;
        };
        let old = self.fold;
        let relayout = |stored: &[u64], out: &mut [u64]| {
            // A key the old fold took has the new fold's common bits,
            // which are among the old ones.
            let s = wider.fold(&old.unfold(stored));
            debug_assert!(s.is_some(), "a filed key lost under a wider fold");
            if let Some(s) = s {
                out.copy_from_slice(&s[..out.len()]);
            }
        };
        let hash = |k: &[u64]| Fold::hash(hasher, k);
        self.slots
            .rebuild(self.slots.slot_count(), wider.stored(), relayout, hash);
        self.fold = wider;
        self.set_screen();
    }
}

/// How the paths of a chain are filed (module docs, point 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlowMode {
    /// Active paths.
    Active,
    /// Passive paths whose first node has no active twin: no active path
    /// can take their messages.
    Passive,
    /// Passive paths whose first node has an active twin: a hit is the
    /// tree's answer only while the active flows answer for every active
    /// path at the receiving module ([`FlowTable::lookup`]).
    Shadowed,
}

impl FlowMode {
    /// Whether the mode's paths are passive.
    pub(crate) fn passive(self) -> bool {
        self != FlowMode::Active
    }
}

/// The flow table of one classifier (see the module docs).
#[derive(Default)]
pub(crate) struct FlowTable {
    gathers: Vec<Gather>,
    /// The gathers in the order a lookup probes them: active before
    /// passive (an active match wins), most flows first within each, so
    /// that the host's many connections are not probed after its few
    /// listeners' gathers.
    order: Vec<u32>,
    chains: Vec<FlowChain>,
    len: usize,
    /// How many of the flows are passive paths.
    passive: usize,
    /// Active flows filed per receiving module (indexed by its id): set
    /// against `active_chains`, it says whether every active path at the
    /// module is a flow.
    active_at: Vec<u32>,
    /// Active chains the tree holds (complete or still being registered)
    /// per receiving module, indexed by its id, counted by the classifier
    /// as it registers and unwinds them. Kept here, where the lookup that
    /// reads them is, and through [`clear`](Self::clear).
    active_chains: Vec<u32>,
    /// What a lookup at each receiving module does, indexed by its id
    /// (below [`MAX_CLASSIFIED_MODULES`]; a module past the end takes the
    /// general lookup): rebuilt by [`refresh`](Self::refresh) whenever
    /// the module's gathers change (`flow_probe.rs`).
    probes: Vec<FlowProbe>,
}

impl FlowTable {
    /// Number of flows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Number of flows that are passive paths.
    pub(crate) fn passive_len(&self) -> usize {
        self.passive
    }

    /// Forgets every flow, chain and gather (when a layout may have
    /// changed); the tree's chain counts stay.
    pub(crate) fn clear(&mut self) {
        let active_chains = std::mem::take(&mut self.active_chains);
        *self = FlowTable {
            active_chains,
            ..FlowTable::default()
        };
    }

    /// Counts an active chain of the tree registered (`add`) or unwound at
    /// receiving module `module`. Modules too large to own a partial
    /// classifier are not counted (their active flows are never found
    /// complete, [`active_walk_fails`](Self::active_walk_fails)).
    pub(crate) fn count_active_chain(&mut self, module: ModuleId, add: bool) {
        if module.0 >= MAX_CLASSIFIED_MODULES {
            return;
        }
        let m = module.0 as usize;
        if self.active_chains.len() <= m {
            self.active_chains.resize(m + 1, 0);
        }
        if add {
            self.active_chains[m] += 1;
        } else {
            self.active_chains[m] -= 1;
        }
    }

    /// The active chains counted per receiving module.
    #[cfg(feature = "testing")]
    pub(crate) fn active_chains(&self) -> &[u32] {
        &self.active_chains
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let gathers: usize = self
            .gathers
            .iter()
            .map(|g| g.slots.heap_bytes() + g.windows.len() * 16)
            .sum();
        let chains: usize = self
            .chains
            .iter()
            .map(|c| {
                c.levels.len() * std::mem::size_of::<ChainLevel>()
                    + c.guards.len() * 24
                    + c.scatter.len() * 2
                    + c.key_lens.len()
            })
            .sum();
        gathers
            + chains
            + self.gathers.capacity() * std::mem::size_of::<Gather>()
            + self.order.capacity() * 4
            + self.chains.capacity() * std::mem::size_of::<FlowChain>()
            + (self.active_at.capacity() + self.active_chains.capacity()) * 4
            + self.probes.capacity() * std::mem::size_of::<FlowProbe>()
    }

    /// Active flows filed at receiving module `module`.
    pub(crate) fn active_at(&self, module: ModuleId) -> u32 {
        self.active_at.get(module.0 as usize).copied().unwrap_or(0)
    }

    /// Whether the active flows' miss for `msg` at `module` is the active
    /// walk's: every one of the module's active chains (as the tree counts
    /// them) is a flow, and every active chain with flows there
    /// either admits `msg` (so its flow would have been found) or
    /// [`excludes`](FlowChain::excludes) it (so none of its paths
    /// matches). Then a shadowed passive flow's hit is the passive walk's
    /// answer and the tree's (module docs, point 3).
    #[inline(never)]
    fn active_walk_fails(&self, module: ModuleId, msg: &[u8]) -> bool {
        if module.0 >= MAX_CLASSIFIED_MODULES
            || self
                .active_chains
                .get(module.0 as usize)
                .copied()
                .unwrap_or(0)
                != self.active_at(module)
        {
            return false;
        }
        self.chains
            .iter()
            .filter(|c| c.mode == FlowMode::Active && c.entries > 0 && c.levels[0].module == module)
            .all(|c| {
                c.admits(msg).is_some() || c.excludes(msg, &self.gathers[c.gather as usize].windows)
            })
    }

    /// [`active_walk_fails`](Self::active_walk_fails), by the module's
    /// compiled first gather when its main chain is the module's only
    /// active chain with flows ([`FlowProbe::first_alone`]): the same
    /// answer, without the scan of every chain.
    #[inline(always)]
    fn walk_fails(&self, module: ModuleId, msg: &[u8]) -> bool {
        let m = module.0 as usize;
        let Some(p) = self.probes.get(m).filter(|p| p.first_alone) else {
            return self.active_walk_fails(module, msg);
        };
        if self.active_chains.get(m).copied().unwrap_or(0) != self.active_at(module) {
            return false;
        }
        match p.compiled.admits_msg(msg) {
            Some(true) => true,
            _ => self.active_walk_fails(module, msg),
        }
    }

    /// The flow of `msg` arriving at `module` by the module's compiled
    /// probe (`flow_probe.rs`), the same answer as [`lookup`](Self::lookup)'s
    /// when it gives one; [`Probed::General`] when that must run.
    #[inline(always)]
    pub(crate) fn probe(&self, module: ModuleId, msg: &[u8], hasher: &EdgeHasher) -> Probed {
        let Some(p) = self.probes.get(module.0 as usize) else {
            return Probed::General;
        };
        let c = match p.kind {
            ProbeKind::One => &p.compiled,
            ProbeKind::Empty => return Probed::Miss,
            ProbeKind::General => return Probed::General,
        };
        self.probe_gather(c, module, msg, hasher)
    }

    /// Loads what [`probe`](Self::probe) of `msg` will read first — the
    /// home bit and the slot of its key in the module's compiled gather —
    /// and returns a word of them, so that a burst's loads are in flight
    /// together ([`Classifier::classify_burst`](crate::Classifier)).
    /// `0` where the probe would read no slot. A software prefetch
    /// (`_mm_prefetch`) would not wait for the load to retire, but needs
    /// `unsafe` to call (`#[target_feature]`, Rust 1.95), which the crate
    /// forbids; independent loads overlap in an out-of-order core all the
    /// same.
    #[inline(always)]
    pub(crate) fn touch(&self, module: ModuleId, msg: &[u8], hasher: &EdgeHasher) -> u64 {
        let Some(p) = self.probes.get(module.0 as usize) else {
            return 0;
        };
        if p.kind != ProbeKind::One {
            return 0;
        }
        let Some(g) = self.gathers.get(p.compiled.gather as usize) else {
            return 0;
        };
        // A table the cache holds gains nothing from the early load,
        // which hashes the key a second time (about 30 instructions).
        if !g.slots.spills() {
            return 0;
        }
        p.compiled.hash(msg, hasher).map_or(0, |h| g.slots.touch(h))
    }

    /// After the first gather's miss ([`Probed::Rest`]): the module's
    /// second gather by its compiled probe, when it has exactly two.
    #[inline(always)]
    pub(crate) fn probe_second(&self, module: ModuleId, msg: &[u8], hasher: &EdgeHasher) -> Probed {
        match self.probes.get(module.0 as usize) {
            Some(p) if p.second_kind == ProbeKind::One => {
                self.probe_gather(&p.second, module, msg, hasher)
            }
            _ => Probed::General,
        }
    }

    /// Whether chain `chain`'s layouts apply to `msg`: for an entry of a
    /// compiled gather's other chains, out of line so that the probe's
    /// acceptance of its own chain's entries stays a compare.
    #[inline(never)]
    fn chain_admits(&self, chain: u32, msg: &[u8]) -> bool {
        self.chains
            .get(chain as usize)
            .is_some_and(|c| c.admits(msg).is_some())
    }

    /// The general lookup's probe of compiled gather `c`, the tree's
    /// answer for a shadowed hit included (a shadowed hit the active walk
    /// may beat ends the lookup, as in `lookup_after`: no other gather
    /// is probed).
    #[inline(always)]
    fn probe_gather(
        &self,
        c: &Compiled,
        module: ModuleId,
        msg: &[u8],
        hasher: &EdgeHasher,
    ) -> Probed {
        let Some(g) = self.gathers.get(c.gather as usize) else {
            return Probed::General;
        };
        let found = c.find(msg, hasher, &g.slots, |e| self.chain_admits(e.chain, msg));
        match found {
            Found::Path(p) if !c.shadowed => Probed::Hit(p),
            // As in `lookup_after`: a shadowed hit is the tree's only when
            // the active walk finds nothing; else the tree walks. A hit
            // of a chain with the first's guards: the first admits the
            // message, and when its chain is the module's only active
            // one, the active walk fails (`walk_fails`) — unless some
            // active chain is no flow (the counts differ).
            Found::Path(p)
                if c.guards_of_first
                    && self
                        .active_chains
                        .get(module.0 as usize)
                        .copied()
                        .unwrap_or(0)
                        == self.active_at(module) =>
            {
                Probed::Hit(p)
            }
            Found::Path(_) if !self.walk_fails(module, msg) => Probed::Miss,
            Found::Path(p) => Probed::Hit(p),
            Found::Missed if c.rest => Probed::Rest(c.gather),
            Found::Missed => Probed::Miss,
            Found::Short => Probed::General,
        }
    }

    /// Compiles the probe of receiving module `module` again, after its
    /// gathers changed (a flow filed or removed, a fold widened).
    fn refresh(&mut self, module: ModuleId, hasher: &EdgeHasher) {
        if module.0 >= MAX_CLASSIFIED_MODULES {
            return;
        }
        let m = module.0 as usize;
        if self.probes.len() <= m {
            self.probes.resize(m + 1, FlowProbe::of(ProbeKind::General));
        }
        self.probes[m] = self.probe_of(module, hasher);
    }

    /// [`refresh`](Self::refresh) after a filing or a removal in gather
    /// `gather` that `moved` (see [`ProbeInputs`]): skipped when none of
    /// what module `module`'s compiled probe reads changed — the common
    /// case of one more (or one fewer) connection beside others of its
    /// kind, where compiling again cost about 1,000 instructions per path
    /// made (issue 28: the cost of an open). Debug builds compile anyway
    /// and check that the skipped probe is the one they would have made.
    fn refresh_if(&mut self, module: ModuleId, moved: bool, hasher: &EdgeHasher) {
        if moved {
            self.refresh(module, hasher);
            return;
        }
        debug_assert!(
            module.0 >= MAX_CLASSIFIED_MODULES
                || self.probes.get(module.0 as usize) == Some(&self.probe_of(module, hasher)),
            "a flow's filing changed module {}'s probe without moving its inputs",
            module.0
        );
    }

    /// What the compiled probe of gather `gather` reads besides the
    /// module's order of gathers: its fold and its lead chain (the one
    /// with most entries; `None` with no entry).
    fn probe_inputs(&self, gather: u32) -> ProbeInputs {
        ProbeInputs {
            fold: self.gathers[gather as usize].fold,
            lead: self.lead_chain(gather),
        }
    }

    /// The chain of `gather` with most entries (the last of equals), if
    /// any has one: the one whose guards its compiled probe holds.
    fn lead_chain(&self, gather: u32) -> Option<u32> {
        self.chains
            .iter()
            .enumerate()
            .filter(|(_, c)| c.gather == gather && c.entries > 0)
            .max_by_key(|(_, c)| c.entries)
            .map(|(i, _)| i as u32)
    }

    /// The probe of receiving module `module` as the table is now (see
    /// [`refresh`](Self::refresh)).
    fn probe_of(&self, module: ModuleId, hasher: &EdgeHasher) -> FlowProbe {
        // In the order a lookup probes them: the compiled gather is the
        // first, the others are probed after its miss.
        let mut with = self.order.iter().filter(|&&i| {
            let g = &self.gathers[i as usize];
            g.module == module && g.slots.len() > 0
        });
        let (first, second, third) = (with.next(), with.next(), with.next());
        let mut probe = FlowProbe::of(ProbeKind::General);
        match first.map(|&i| self.compile(i, second.is_some(), hasher)) {
            None => probe.kind = ProbeKind::Empty,
            Some(None) => {}
            Some(Some(c)) => {
                probe.kind = ProbeKind::One;
                probe.compiled = c;
            }
        }
        if let (Some(&i), None) = (second, third) {
            if let Some(c) = self.compile(i, false, hasher) {
                probe.second_kind = ProbeKind::One;
                probe.second = c;
            }
        }
        if probe.kind == ProbeKind::One && !probe.compiled.shadowed {
            let mut active = self.chains.iter().enumerate().filter(|(_, c)| {
                c.mode == FlowMode::Active && c.entries > 0 && c.levels[0].module == module
            });
            probe.first_alone = matches!(
                (active.next(), active.next()),
                (Some((i, _)), None) if i as u32 == probe.compiled.chain
            );
            let (first, second) = (&probe.compiled, &probe.second);
            let second_gather = probe.second.gather;
            let mut chains = self
                .chains
                .iter()
                .filter(|c| c.gather == second_gather && c.entries > 0);
            let one_chain = chains.next().is_some() && chains.next().is_none();
            probe.second.guards_of_first = probe.first_alone
                && probe.second_kind == ProbeKind::One
                && one_chain
                && first.guard_count == second.guard_count
                && first.guards[..first.guard_count] == second.guards[..second.guard_count]
                && first.last == second.last;
        }
        probe
    }

    /// The compiled probe of gather `gather` (`rest`: the module's lookup
    /// probes others after it), or `None` where it does not apply.
    fn compile(&self, gather: u32, rest: bool, hasher: &EdgeHasher) -> Option<Compiled> {
        let g = &self.gathers[gather as usize];
        let stored = g.fold.stored();
        // More stored words take the general compare loop.
        if stored > 1 {
            return None;
        }
        // The chain with most entries: usually the only one.
        let chain = self.lead_chain(gather)? as usize;
        let c = &self.chains[chain];
        if c.guards.len() > MAX_PROBE_GUARDS || g.windows.len() > WORDS {
            return None;
        }
        let mut windows = [ProbeWindow::default(); WORDS];
        let mut reach = c.need;
        for (w, (out, &(at, mask))) in windows.iter_mut().zip(g.windows.iter()).enumerate() {
            let (sel, value) = g.fold.common(w);
            let (vary, rot) = g.fold.varying(w);
            reach = reach.max(usize::from(at) + 8);
            *out = ProbeWindow {
                at,
                common_sel: sel & mask,
                common: value & mask,
                vary: if stored == 0 { 0 } else { vary & mask },
                rot,
            };
        }
        let mut guards = [(0, 0, 0); MAX_PROBE_GUARDS];
        for (out, &(at, mask, value)) in guards.iter_mut().zip(c.guards.iter()) {
            reach = reach.max(usize::from(at) + 8);
            *out = (at, mask, value);
        }
        Some(Compiled {
            gather,
            rest,
            shadowed: g.mode == FlowMode::Shadowed,
            guards_of_first: false,
            chain: chain as u32,
            reach,
            windows,
            window_count: g.windows.len(),
            stored,
            home_hash: hasher.flow(&[0; WORDS], 0),
            guards,
            guard_count: c.guards.len(),
            last: LastLen::new(usize::from(c.last.offset), c.last.header),
        })
    }

    /// The flow of `msg` arriving at `module`, with its chain, and how many
    /// probes it took (one per gather of `module` that has flows: one on a
    /// host whose flows all have the same key layout).
    #[cfg(test)]
    pub(crate) fn lookup(
        &self,
        module: ModuleId,
        msg: &[u8],
        hasher: &EdgeHasher,
    ) -> (Option<(u32, &FlowChain)>, u32) {
        self.lookup_after(module, msg, hasher, u32::MAX)
    }

    /// [`lookup`](Self::lookup) passing over gather `skip`, whose
    /// compiled probe missed already (`u32::MAX` for none).
    #[inline(always)]
    pub(crate) fn lookup_after(
        &self,
        module: ModuleId,
        msg: &[u8],
        hasher: &EdgeHasher,
        skip: u32,
    ) -> (Option<(u32, &FlowChain)>, u32) {
        let mut probes = 0;
        for &i in &self.order {
            let g = &self.gathers[i as usize];
            if g.module != module || g.slots.len() == 0 || i == skip {
                continue;
            }
            probes += 1;
            // The key's length is the gather's: each gather of the key
            // with its word count a constant, so the loads and masks are
            // straight-line code.
            let key = match g.windows.len() {
                1 => g.key_of::<1>(msg),
                2 => g.key_of::<2>(msg),
                3 => g.key_of::<3>(msg),
                4 => g.key_of::<4>(msg),
                5 => g.key_of::<5>(msg),
                _ => g.key_of::<WORDS>(msg),
            };
            let Some(key) = key else { continue };
            // Then the hash and the slots, with the stored word count a
            // constant ([`FlowSlots::find_k`]): apart from the gather, so
            // that the two constants make a few copies each, not one per
            // pair.
            let admits = |e: Entry| self.chains[e.chain as usize].admits(msg).is_some();
            let found = match g.fold.stored() {
                0 => g.slots.find_k::<0>(hasher.flow(&key, 0), &[], admits),
                1 => g.slots.find_k(hasher.flow(&key, 1), &[key[0]], admits),
                2 => g
                    .slots
                    .find_k(hasher.flow(&key, 2), &[key[0], key[1]], admits),
                3 => {
                    let k = [key[0], key[1], key[2]];
                    g.slots.find_k(hasher.flow(&key, 3), &k, admits)
                }
                n => g.slots.find(hasher.flow(&key, n), &key[..n], admits),
            };
            if let Some(e) = found {
                // Every active gather was probed before (`order`), and at
                // most one passive flow matches: a shadowed one answers if
                // the active walk would find nothing, else the tree does.
                if g.mode == FlowMode::Shadowed && !self.active_walk_fails(module, msg) {
                    return (None, probes);
                }
                return (Some((e.path, &self.chains[e.chain as usize])), probes);
            }
        }
        (None, probes)
    }

    /// Where a path with `levels` (receiving module first, with the keys
    /// it registered) is filed, passive or not: its chain and key.
    /// `Ok(None)` when no chain of these modules exists yet (then
    /// [`FlowPlan::new`] lays it out); `Err` when the keys cannot be a
    /// flow's.
    fn key_of(&self, levels: &[(ModuleId, Key)], mode: FlowMode) -> Placement {
        let Some(c) = self.chains.iter().position(|c| {
            c.mode == mode
                && c.levels.len() == levels.len()
                && c.levels
                    .iter()
                    .zip(levels)
                    .all(|(l, (m, _))| l.module == *m)
        }) else {
            return Ok(None);
        };
        let chain = &self.chains[c];
        let windows = &self.gathers[chain.gather as usize].windows;
        let (mut key, mut written) = ([0u64; WORDS], [0u64; WORDS]);
        let mut places = chain.scatter.iter();
        for ((_, k), &len) in levels.iter().zip(chain.key_lens.iter()) {
            if k.len() != usize::from(len) {
                return Err(NotAFlow::KeyShape);
            }
            for &b in k.as_bytes() {
                let &(w, shift) = places.next().ok_or(NotAFlow::KeyShape)?;
                let (w, byte) = (usize::from(w), 0xffu64 << shift);
                let v = u64::from(b) << shift;
                // A byte with bits its mask drops is never gathered.
                if v & !windows[w].1 != 0 {
                    return Err(NotAFlow::KeyShape);
                }
                // A byte two layouts name must be registered the same.
                if written[w] & byte != 0 && key[w] & byte != v {
                    return Err(NotAFlow::KeyShape);
                }
                written[w] |= byte;
                key[w] |= v;
            }
        }
        Ok(Some((c as u32, key)))
    }

    /// Files `path` with `levels` (see [`key_of`](Self::key_of)), laying
    /// out a new chain with `layout` (the modules' layouts for the path's
    /// mode) if needed; `false` if it is no flow. The caller knows it is
    /// not filed yet.
    pub(crate) fn insert(
        &mut self,
        path: u32,
        levels: &[(ModuleId, Key)],
        mode: FlowMode,
        layout: impl Fn(ModuleId) -> Option<FlowLayout>,
        hasher: &EdgeHasher,
    ) -> bool {
        let placed = self.key_of(levels, mode);
        self.insert_as(path, levels, placed, mode, layout, hasher, false)
    }

    /// Where a path with `levels` would be filed in `mode`
    /// ([`key_of`](Self::key_of)): worked out once by a registration that
    /// both asks whether a path is filed there ([`path_at`](Self::path_at))
    /// and files one ([`insert_as`](Self::insert_as)) — the key's bytes
    /// scattered once, not twice (issue 28: the cost of an open).
    pub(crate) fn place(&self, levels: &[(ModuleId, Key)], mode: FlowMode) -> Placement {
        self.key_of(levels, mode)
    }

    /// The path filed at `placed` (from [`place`](Self::place), the table
    /// unchanged since), if any.
    pub(crate) fn path_at(&self, placed: &Placement, hasher: &EdgeHasher) -> Option<u32> {
        let &Ok(Some((chain, ref key))) = placed else {
            return None;
        };
        let gather = &self.gathers[self.chains[chain as usize].gather as usize];
        let (packed, h) = gather.pack(key, hasher)?;
        let n = gather.fold.stored();
        gather
            .slots
            .find(h, &packed[..n], |e| e.chain == chain)
            .map(|e| e.path)
    }

    /// [`insert`](Self::insert), as a *leaf* entry when `leaf`: one that
    /// stands for its path's last level, which keeps no node in the tree
    /// (`classifier.rs`), so it is also found by its path
    /// ([`leaf_levels`](Self::leaf_levels)).
    /// `placed` is [`place`](Self::place)'s answer for `levels` and
    /// `mode`, the table unchanged since.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_as(
        &mut self,
        path: u32,
        levels: &[(ModuleId, Key)],
        placed: Placement,
        mode: FlowMode,
        layout: impl Fn(ModuleId) -> Option<FlowLayout>,
        hasher: &EdgeHasher,
        leaf: bool,
    ) -> bool {
        debug_assert_eq!(placed, self.key_of(levels, mode), "a stale placement");
        let (filed, moved) = self.file(path, levels, placed, mode, layout, hasher, leaf);
        // Even when it was not filed: a fold may have widened first.
        if let Some(&(module, _)) = levels.first() {
            self.refresh_if(module, moved, hasher);
        }
        filed
    }

    /// Number of leaf entries.
    pub(crate) fn leaf_len(&self) -> usize {
        self.gathers.iter().map(|g| g.slots.leaf_len()).sum()
    }

    /// Every leaf entry's path.
    pub(crate) fn leaf_paths(&self) -> Vec<u32> {
        self.gathers
            .iter()
            .flat_map(|g| g.slots.entries())
            .filter(|&(_, _, leaf)| leaf)
            .map(|(_, e, _)| e.path)
            .collect()
    }

    /// Whether `path` has a leaf entry.
    pub(crate) fn has_leaf(&self, path: u32) -> bool {
        self.find_leaf(path).is_some()
    }

    /// The gather and slot of `path`'s leaf entry.
    fn find_leaf(&self, path: u32) -> Option<(usize, usize)> {
        self.gathers
            .iter()
            .enumerate()
            .find_map(|(g, gather)| gather.slots.find_leaf(path).map(|slot| (g, slot)))
    }

    /// The levels (module, key) of `path`'s leaf entry, from the
    /// receiving module, into `out`, and its mode; how many. The keys are
    /// the entry's: its stored words unfolded into the gather's windows,
    /// and each key byte read back from where the chain's scatter put it.
    pub(crate) fn leaf_levels(
        &self,
        path: u32,
        out: &mut [(ModuleId, Key); MAX_DEPTH],
    ) -> Option<(usize, FlowMode)> {
        let (g, slot) = self.find_leaf(path)?;
        let gather = &self.gathers[g];
        let (stored, e) = gather.slots.entry_at(slot);
        let words = gather.fold.unfold(stored);
        let chain = self.chains.get(e.chain as usize)?;
        let mut places = chain.scatter.iter();
        for (d, (level, &len)) in chain.levels.iter().zip(chain.key_lens.iter()).enumerate() {
            let mut bytes = [0u8; Key::MAX_LEN];
            for b in bytes.iter_mut().take(usize::from(len)) {
                let &(w, shift) = places.next()?;
                *b = (words.get(usize::from(w))? >> shift) as u8;
            }
            *out.get_mut(d)? = (level.module, Key::new(&bytes[..usize::from(len)])?);
        }
        Some((chain.levels.len(), chain.mode))
    }

    /// Takes `path`'s leaf entry out; its levels into `out` and how many,
    /// or `None` if it has none.
    pub(crate) fn remove_leaf(
        &mut self,
        path: u32,
        out: &mut [(ModuleId, Key); MAX_DEPTH],
        hasher: &EdgeHasher,
    ) -> Option<usize> {
        let (depth, mode) = self.leaf_levels(path, out)?;
        let (g, slot) = self.find_leaf(path)?;
        self.remove_slot(g, slot, mode, out[0].0, hasher);
        Some(depth)
    }

    /// [`insert`](Self::insert) but for the probe; beside whether it was
    /// filed, whether the module's probe may have to be compiled again
    /// (`true` whenever in doubt: anything but a plain filing).
    #[allow(clippy::too_many_arguments)]
    fn file(
        &mut self,
        path: u32,
        levels: &[(ModuleId, Key)],
        placed: Placement,
        mode: FlowMode,
        layout: impl Fn(ModuleId) -> Option<FlowLayout>,
        hasher: &EdgeHasher,
        leaf: bool,
    ) -> (bool, bool) {
        let (chain, key) = match placed {
            Ok(Some(found)) => found,
            Ok(None) if self.chains.len() < MAX_CHAINS as usize => {
                match FlowPlan::new(levels, layout) {
                    Ok(plan) => (self.add_chain(&plan, mode), plan.key),
                    Err(_) => return (false, true),
                }
            }
            _ => return (false, true),
        };
        let gather = self.chains[chain as usize].gather;
        // A chain's first entry may change the module's probe in ways
        // besides its gather's inputs (which chains are alone, a second
        // gather's): compiled again whenever a chain starts.
        let starts = self.chains[chain as usize].entries == 0;
        let before = self.probe_inputs(gather);
        let g = &mut self.gathers[gather as usize];
        g.admit(&key, hasher);
        let Some((packed, h)) = g.pack(&key, hasher) else {
            return (false, true);
        };
        let n = g.fold.stored();
        let filed = g
            .slots
            .insert_growing(h, &packed[..n], Entry { path, chain }, leaf, |k| {
                Fold::hash(hasher, k)
            });
        if !filed {
            return (false, true);
        }
        let c = &mut self.chains[chain as usize];
        c.narrow(&key);
        c.entries += 1;
        self.len += 1;
        self.passive += usize::from(mode.passive());
        // Modules too large to own a partial classifier are not counted
        // (the classifier never finds their active flows complete).
        if mode == FlowMode::Active && levels[0].0 .0 < MAX_CLASSIFIED_MODULES {
            let m = levels[0].0 .0 as usize;
            if self.active_at.len() <= m {
                self.active_at.resize(m + 1, 0);
            }
            self.active_at[m] += 1;
        }
        let reordered = self.reorder(gather);
        (
            true,
            starts || reordered || self.probe_inputs(gather) != before,
        )
    }

    /// Moves `gather` to its place in [`order`](Self::order) after its
    /// flow count changed by one; whether it moved.
    fn reorder(&mut self, gather: u32) -> bool {
        // Active first, then by flows, most first.
        let len = |t: &Self, i: usize| {
            let g = &t.gathers[t.order[i] as usize];
            (usize::from(!g.mode.passive()), g.slots.len())
        };
        let Some(mut at) = self.order.iter().position(|&g| g == gather) else {
            return false;
        };
        let was = at;
        while at > 0 && len(self, at - 1) < len(self, at) {
            self.order.swap(at - 1, at);
            at -= 1;
        }
        while at + 1 < self.order.len() && len(self, at + 1) > len(self, at) {
            self.order.swap(at, at + 1);
            at += 1;
        }
        at != was
    }

    /// A chain laid out by `plan`, in the gather of its windows.
    fn add_chain(&mut self, plan: &FlowPlan, mode: FlowMode) -> u32 {
        let gather = self.gather_for(plan.levels[0].module, mode, plan);
        self.chains.push(FlowChain {
            mode,
            last: plan.last,
            gather,
            levels: plan.levels.iter().copied().collect(),
            guards: plan.guards.iter().copied().collect(),
            need: plan.need,
            scatter: plan.scatter.iter().copied().collect(),
            key_lens: plan.key_lens.iter().copied().collect(),
            prefix: plan.prefix,
            prefix_guards: plan.prefix_guards.iter().copied().collect(),
            fixed_mask: [0; WORDS],
            fixed: [0; WORDS],
            entries: 0,
        });
        self.chains.len() as u32 - 1
    }

    /// The gather of flows arriving at `module` with `plan`'s windows,
    /// made if there is none.
    fn gather_for(&mut self, module: ModuleId, mode: FlowMode, plan: &FlowPlan) -> u32 {
        if let Some(i) = self
            .gathers
            .iter()
            .position(|g| g.module == module && g.mode == mode && *g.windows == *plan.windows)
        {
            return i as u32;
        }
        self.gathers.push(Gather::new(module, mode, &plan.windows));
        let g = self.gathers.len() as u32 - 1;
        self.order.push(g);
        // Its first chain is made next, which compiles the probe anyway.
        let _ = self.reorder(g);
        g
    }

    /// The entry of `path`, filed with `levels`: its gather and slot.
    fn find(
        &self,
        path: u32,
        levels: &[(ModuleId, Key)],
        mode: FlowMode,
        hasher: &EdgeHasher,
    ) -> Option<(usize, usize)> {
        let (chain, key) = self.key_of(levels, mode).ok()??;
        let g = self.chains[chain as usize].gather as usize;
        let gather = &self.gathers[g];
        let (packed, h) = gather.pack(&key, hasher)?;
        let n = gather.fold.stored();
        let slot = gather
            .slots
            .find_slot(h, &packed[..n], |e| e.path == path && e.chain == chain)?;
        Some((g, slot))
    }

    /// `(entries, sum of displacements, largest)` over every gather's
    /// table.
    #[cfg(feature = "testing")]
    pub(crate) fn displacements(&self) -> (usize, usize, usize) {
        let (mut n, mut sum, mut max) = (0, 0, 0);
        for g in &self.gathers {
            let (gn, gsum, gmax) = g.slots.displacements();
            n += gn;
            sum += gsum;
            max = max.max(gmax);
        }
        (n, sum, max)
    }

    /// Whether `path` is filed with `levels`, under the key
    /// [`FlowPlan::new`] lays out for them (the chain's scatter agrees).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn contains(
        &self,
        path: u32,
        levels: &[(ModuleId, Key)],
        mode: FlowMode,
        layout: impl Fn(ModuleId) -> Option<FlowLayout>,
        hasher: &EdgeHasher,
    ) -> bool {
        let laid_out = FlowPlan::new(levels, layout).ok().map(|p| p.key);
        let scattered = self.key_of(levels, mode).ok().flatten().map(|(_, k)| k);
        laid_out.is_some()
            && laid_out == scattered
            && self.find(path, levels, mode, hasher).is_some()
    }

    /// Takes `path`, filed with `levels`, out; `false` if it was not filed.
    pub(crate) fn remove(
        &mut self,
        path: u32,
        levels: &[(ModuleId, Key)],
        mode: FlowMode,
        hasher: &EdgeHasher,
    ) -> bool {
        let Some((g, slot)) = self.find(path, levels, mode, hasher) else {
            return false;
        };
        self.remove_slot(g, slot, mode, levels[0].0, hasher);
        true
    }

    /// Takes the entry in `slot` of gather `g` out: a flow of `mode`
    /// arriving at `module`.
    fn remove_slot(
        &mut self,
        g: usize,
        slot: usize,
        mode: FlowMode,
        module: ModuleId,
        hasher: &EdgeHasher,
    ) {
        let before = self.probe_inputs(g as u32);
        let e = self.gathers[g].slots.remove_at(slot);
        self.chains[e.chain as usize].entries -= 1;
        // A chain's last entry gone: as a first one (`file`).
        let ends = self.chains[e.chain as usize].entries == 0;
        self.len -= 1;
        self.passive -= usize::from(mode.passive());
        if mode == FlowMode::Active {
            if let Some(n) = self.active_at.get_mut(module.0 as usize) {
                *n -= 1;
            }
        }
        let reordered = self.reorder(g as u32);
        let moved = ends || reordered || self.probe_inputs(g as u32) != before;
        self.refresh_if(module, moved, hasher);
    }
}

/// Where a path's keys are filed ([`FlowTable::place`]): its chain and
/// scattered key; `Ok(None)` when no chain of its modules exists yet;
/// `Err` when the keys cannot be a flow's.
pub(crate) type Placement = Result<Option<(u32, [u64; WORDS])>, NotAFlow>;

/// What a compiled probe reads of one gather besides the module's order
/// of gathers and which chains have entries: compared before and after a
/// filing or removal to tell whether the probe must be compiled again
/// ([`FlowTable::refresh_if`]).
#[derive(Clone, Copy, PartialEq, Eq)]
struct ProbeInputs {
    fold: Fold,
    lead: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const IPV4: FlowLayout = FlowLayout::new(HeaderLen::Fixed(20))
        .guard(0, 0xff, 0x45)
        .guard(6, 0x3f, 0)
        .guard(7, 0xff, 0)
        .key(9, 1)
        .key(16, 4)
        .key(12, 4);
    const TCP: FlowLayout = FlowLayout::new(HeaderLen::Words {
        at: 12,
        shift: 4,
        min: 20,
    })
    .key(2, 2)
    .key(0, 2);

    #[test]
    fn layout_reads_guards_and_lengths() {
        let mut h = [0u8; 24];
        h[0] = 0x45;
        h[9] = 6;
        h[12..16].copy_from_slice(&[1, 2, 3, 4]);
        h[16..20].copy_from_slice(&[5, 6, 7, 8]);
        assert_eq!(
            IPV4.extract(&h),
            Some((Key::from_array([6, 5, 6, 7, 8, 1, 2, 3, 4]), 20))
        );
        h[6] = 0x40; // DF set: still applies
        assert!(IPV4.extract(&h).is_some());
        h[6] = 0x20; // MF: a fragment
        assert_eq!(IPV4.extract(&h), None);
        h[6] = 0;
        h[7] = 1; // offset 8
        assert_eq!(IPV4.extract(&h), None);
        h[7] = 0;
        h[0] = 0x46; // options
        assert_eq!(IPV4.extract(&h), None);
        assert_eq!(IPV4.extract(&[0x45; 19]), None);

        let mut t = [0u8; 24];
        t[..4].copy_from_slice(&[0x9c, 0x40, 0, 80]);
        t[12] = 0x50;
        assert_eq!(
            TCP.extract(&t),
            Some((Key::from_array([0, 80, 0x9c, 0x40]), 20))
        );
        t[12] = 0x60;
        assert_eq!(
            TCP.extract(&t),
            Some((Key::from_array([0, 80, 0x9c, 0x40]), 24))
        );
        t[12] = 0x70; // 28 bytes, only 24 there
        assert_eq!(TCP.extract(&t), None);
        t[12] = 0x40; // below the minimum
        assert_eq!(TCP.extract(&t), None);
    }

    #[test]
    fn plans_cover_the_key_bytes_with_windows_and_refuse_what_cannot_be_a_flow() {
        let eth = FlowLayout::new(HeaderLen::Fixed(14)).key(12, 2);
        let layout = |m: ModuleId| match m.0 {
            1 => Some(eth),
            2 => Some(IPV4),
            3 => Some(TCP),
            4 => Some(FlowLayout::PASS_THROUGH),
            _ => None,
        };
        let ip_key = Key::from_array([6, 5, 6, 7, 8, 1, 2, 3, 4]);
        let levels = [
            (ModuleId(1), Key::from_array([8, 0])),
            (ModuleId(2), ip_key),
            (ModuleId(4), Key::EMPTY),
            (ModuleId(3), Key::from_array([0, 80, 0x9c, 0x40])),
        ];
        let plan = FlowPlan::new(&levels, layout).unwrap();
        // The EtherType; protocol (23) and source (26..30); destination
        // (30..34) and the ports (34..38).
        assert_eq!(
            *plan.windows,
            [
                (12, 0xffff),
                (23, 0xffff_ffff_ff00_00ff),
                (31, 0x00ff_ffff_ffff_ffff)
            ]
        );
        // IPv4's three guards: one window, one load and compare.
        assert_eq!(*plan.guards, [(14, 0xff3f_0000_0000_00ff, 0x45)]);
        assert_eq!(plan.need, 54);
        let offsets: Vec<u16> = plan.levels.iter().map(|l| l.offset).collect();
        assert_eq!(offsets, [0, 14, 34, 34]);
        // A message with those keys gathers the plan's key.
        let mut msg = [0xeeu8; 60];
        msg[12..14].copy_from_slice(&[8, 0]);
        msg[14] = 0x45;
        msg[20..22].copy_from_slice(&[0, 0]);
        msg[23] = 6;
        msg[26..30].copy_from_slice(&[1, 2, 3, 4]);
        msg[30..34].copy_from_slice(&[5, 6, 7, 8]);
        msg[34..38].copy_from_slice(&[0x9c, 0x40, 0, 80]);
        let g = Gather::new(ModuleId(1), FlowMode::Active, &plan.windows);
        assert_eq!(g.gather(&msg), plan.key);
        msg[35] ^= 1;
        assert_ne!(g.gather(&msg), plan.key);

        // A chain ending at IP: the last window moves back to end with
        // the headers (34 bytes).
        let plan = FlowPlan::new(&levels[..2], layout).unwrap();
        assert_eq!(plan.windows[2], (26, 0xffff_ff00_0000_0000));

        let mut short_ip = levels;
        short_ip[1].1 = Key::from_array([6]);
        assert_eq!(
            FlowPlan::new(&short_ip, layout).err(),
            Some(NotAFlow::KeyShape)
        );
        let mut unknown = levels;
        unknown[2].0 = ModuleId(9);
        assert_eq!(
            FlowPlan::new(&unknown, layout).err(),
            Some(NotAFlow::NoLayout)
        );
        let tcp_first = [levels[3], levels[0]];
        assert_eq!(
            FlowPlan::new(&tcp_first, layout).err(),
            Some(NotAFlow::VariableHeader)
        );
        // Key bytes in five windows.
        let wide = FlowLayout::new(HeaderLen::Fixed(40))
            .key(0, 1)
            .key(9, 1)
            .key(18, 1)
            .key(27, 1);
        let wide = |_: ModuleId| Some(wide);
        let two = [
            (ModuleId(5), Key::from_array([1, 2, 3, 4])),
            (ModuleId(5), Key::from_array([1, 2, 3, 4])),
        ];
        assert_eq!(FlowPlan::new(&two[..1], wide).unwrap().windows.len(), 4);
        assert_eq!(FlowPlan::new(&two, wide).err(), Some(NotAFlow::Scattered));
        // Guards that contradict each other.
        let never = FlowLayout::new(HeaderLen::Fixed(1))
            .guard(0, 0x0f, 0x01)
            .guard(0, 0x03, 0x02);
        assert_eq!(
            FlowPlan::new(&[(ModuleId(5), Key::EMPTY)], |_| Some(never)).err(),
            Some(NotAFlow::Guards)
        );
        let both = FlowLayout::new(HeaderLen::Fixed(1))
            .guard(0, 0x0f, 0x01)
            .guard(0, 0xf0, 0x20);
        let plan = FlowPlan::new(&[(ModuleId(5), Key::EMPTY)], |_| Some(both)).unwrap();
        assert_eq!(*plan.guards, [(0, 0xff, 0x21)]);
        // A byte named twice must be registered the same both times.
        let twice = FlowLayout::new(HeaderLen::Fixed(2)).key(0, 2).key(1, 1);
        let twice = |_: ModuleId| Some(twice);
        assert!(FlowPlan::new(&[(ModuleId(5), Key::from_array([1, 2, 2]))], twice).is_ok());
        assert_eq!(
            FlowPlan::new(&[(ModuleId(5), Key::from_array([1, 2, 3]))], twice).err(),
            Some(NotAFlow::KeyShape)
        );
    }

    /// Messages shorter than a window still gather their bytes (the rest
    /// read as zero), so a flow of a few bytes is found.
    #[test]
    fn short_messages_gather_what_they_have() {
        assert_eq!(load_le(&[1, 2, 3], 0), 0x03_02_01);
        assert_eq!(load_le(&[1, 2, 3], 2), 0x03);
        assert_eq!(load_le(&[1, 2, 3], 5), 0);
        let msg: Vec<u8> = (1..=9).collect();
        assert_eq!(
            load_le(&msg, 1),
            u64::from_le_bytes([2, 3, 4, 5, 6, 7, 8, 9])
        );
    }

    #[test]
    fn insert_find_remove_and_reuse() {
        let hasher = EdgeHasher::default();
        let layout = |_: ModuleId| Some(FlowLayout::new(HeaderLen::Fixed(2)).key(0, 2));
        let levels = |a: u8, b: u8| [(ModuleId(1), Key::from_array([a, b]))];
        let mut t = FlowTable::default();
        for p in 0..100u32 {
            assert!(t.insert(p, &levels(p as u8, 7), FlowMode::Active, layout, &hasher));
        }
        assert_eq!(t.len(), 100);
        assert_eq!(t.chains.len(), 1, "one chain for all");
        for p in 0..100u32 {
            let (hit, probes) = t.lookup(ModuleId(1), &[p as u8, 7, 0], &hasher);
            assert_eq!(hit.map(|h| h.0), Some(p));
            assert_eq!(probes, 1);
        }
        assert_eq!(t.lookup(ModuleId(2), &[3, 7], &hasher).0.map(|h| h.0), None);
        assert_eq!(t.lookup(ModuleId(1), &[3], &hasher).0.map(|h| h.0), None);
        for p in (0..100u32).step_by(2) {
            assert!(t.remove(p, &levels(p as u8, 7), FlowMode::Active, &hasher));
            assert!(!t.remove(p, &levels(p as u8, 7), FlowMode::Active, &hasher));
        }
        assert_eq!(t.len(), 50);
        for p in 0..100u32 {
            let want = (p % 2 == 1).then_some(p);
            let got = t.lookup(ModuleId(1), &[p as u8, 7], &hasher).0.map(|h| h.0);
            assert_eq!(got, want);
            assert_eq!(
                t.contains(p, &levels(p as u8, 7), FlowMode::Active, layout, &hasher),
                want.is_some()
            );
        }
        // Freed slots are reused: no growth below the load factor.
        let before = t.heap_bytes();
        assert!(t.insert(200, &levels(0, 8), FlowMode::Active, layout, &hasher));
        assert_eq!(t.heap_bytes(), before);
        // Filed passive, the same keys are another flow, found apart.
        assert!(!t.remove(200, &levels(0, 8), FlowMode::Passive, &hasher));
        assert!(t.insert(300, &levels(0, 9), FlowMode::Passive, layout, &hasher));
        assert_eq!(t.passive_len(), 1);
        assert!(t.contains(300, &levels(0, 9), FlowMode::Passive, layout, &hasher));
        assert!(!t.contains(300, &levels(0, 9), FlowMode::Active, layout, &hasher));
        assert!(t.remove(300, &levels(0, 9), FlowMode::Passive, &hasher));
        assert_eq!(t.passive_len(), 0);
        assert_eq!(
            t.lookup(ModuleId(1), &[0, 8], &hasher).0.map(|h| h.0),
            Some(200)
        );
        // A key of another length is no flow of this chain.
        assert!(!t.insert(
            201,
            &[(ModuleId(1), Key::from_array([1]))],
            FlowMode::Active,
            layout,
            &hasher
        ));
    }

    /// Lookups find flows whatever number of words their keys fold into
    /// (the probe is compiled apart for none to three stored words, and
    /// once for more): flows of five 8-byte windows, filed so that one
    /// window's bytes all vary, then two, ... then all five, each still
    /// found, a changed byte not. Single varying bytes of several windows
    /// fold into one word.
    #[test]
    fn every_count_of_stored_words_is_found() {
        let hasher = EdgeHasher::default();
        let wide = FlowLayout::new(HeaderLen::Fixed(40))
            .key(0, 8)
            .key(8, 8)
            .key(16, 8)
            .key(24, 8);
        let wider = FlowLayout::new(HeaderLen::Fixed(8)).key(0, 8);
        let layout = |m: ModuleId| Some(if m.0 == 1 { wide } else { wider });
        let levels = |k: [u8; 5]| {
            let first: Vec<u8> = k[..4].iter().flat_map(|&b| [b; 8]).collect();
            [
                (ModuleId(1), Key::new(&first).unwrap()),
                (ModuleId(2), Key::from_array([k[4]; 8])),
            ]
        };
        let msg = |k: [u8; 5]| {
            let mut m = vec![0u8; 48];
            for (w, &b) in k.iter().enumerate() {
                let at = if w < 4 { 8 * w } else { 40 };
                m[at..at + 8].fill(b);
            }
            m
        };
        let mut t = FlowTable::default();
        let mut keys = vec![[1u8; 5]];
        // Flow p differs from the first in windows 0..p.
        for p in 1..=5u8 {
            let mut k = [1u8; 5];
            for b in &mut k[..usize::from(p)] {
                *b = p + 1;
            }
            keys.push(k);
        }
        for (p, &k) in keys.iter().enumerate() {
            assert!(t.insert(p as u32, &levels(k), FlowMode::Active, layout, &hasher));
            assert_eq!(t.gathers.len(), 1);
            assert_eq!(t.gathers[0].fold.stored(), p);
            for (q, &k) in keys[..=p].iter().enumerate() {
                let found = t.lookup(ModuleId(1), &msg(k), &hasher).0.map(|h| h.0);
                assert_eq!(found, Some(q as u32), "{p} stored words");
                let mut other = msg(k);
                other[27] ^= 0x80;
                assert_eq!(t.lookup(ModuleId(1), &other, &hasher).0.map(|h| h.0), None);
            }
        }

        // One byte of each window varying: one stored word.
        let sparse = FlowLayout::new(HeaderLen::Fixed(40))
            .key(0, 1)
            .key(9, 1)
            .key(18, 1)
            .key(27, 1);
        let layout = |_: ModuleId| Some(sparse);
        let mut t = FlowTable::default();
        for p in 0..200u32 {
            let b = [p as u8, (p >> 1) as u8, (p >> 2) as u8, (p >> 3) as u8];
            let levels = [(ModuleId(1), Key::from_array(b))];
            assert!(t.insert(p, &levels, FlowMode::Active, layout, &hasher));
        }
        assert_eq!(t.gathers[0].fold.stored(), 1);
        for p in 0..200u32 {
            let mut m = vec![0u8; 40];
            for (at, b) in [0, 9, 18, 27].into_iter().zip([0, 1, 2, 3]) {
                m[at] = (p >> b) as u8;
            }
            assert_eq!(t.lookup(ModuleId(1), &m, &hasher).0.map(|h| h.0), Some(p));
            m[18] ^= 0x40;
            let other = t.lookup(ModuleId(1), &m, &hasher).0.map(|h| h.0);
            assert!(other != Some(p), "a changed byte found flow {p}");
        }
    }

    /// Filing through a known chain scatters the bytes where a fresh
    /// layout puts them, a byte two layouts name included.
    #[test]
    fn scattered_keys_are_the_laid_out_keys() {
        let eth = FlowLayout::new(HeaderLen::Fixed(14)).key(12, 2);
        let twice = FlowLayout::new(HeaderLen::Fixed(4))
            .key(2, 2)
            .key(0, 1)
            .key(3, 1);
        let layout = |m: ModuleId| match m.0 {
            1 => Some(eth),
            2 => Some(IPV4),
            3 => Some(TCP),
            _ => Some(twice),
        };
        let mut t = FlowTable::default();
        let hasher = EdgeHasher::default();
        for (p, a) in [(1u32, 5u8), (2, 6), (3, 250)] {
            let levels = [
                (ModuleId(1), Key::from_array([8, 0])),
                (ModuleId(2), Key::from_array([6, a, 6, 7, 8, 1, 2, 3, a])),
                (ModuleId(3), Key::from_array([0, 80, a, 0x40])),
            ];
            assert!(t.insert(p, &levels, FlowMode::Active, layout, &hasher));
            let laid = FlowPlan::new(&levels, layout).unwrap().key;
            assert_eq!(
                t.key_of(&levels, FlowMode::Active).unwrap().unwrap().1,
                laid
            );
            let dup = [(ModuleId(4), Key::from_array([a, 9, a, 9]))];
            assert!(t.insert(p + 10, &dup, FlowMode::Active, layout, &hasher));
            assert_eq!(
                t.key_of(&dup, FlowMode::Active).unwrap().unwrap().1,
                FlowPlan::new(&dup, layout).unwrap().key
            );
            let clash = [(ModuleId(4), Key::from_array([a, 9, a, 8]))];
            assert_eq!(
                t.key_of(&clash, FlowMode::Active).err(),
                Some(NotAFlow::KeyShape)
            );
            assert_eq!(
                FlowPlan::new(&clash, layout).err(),
                Some(NotAFlow::KeyShape)
            );
        }
    }
}
