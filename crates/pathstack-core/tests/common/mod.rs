//! Test support: a `PROBE` module type whose routing decisions come from its
//! instance parameters and whose stages log what happens to them, plus
//! helpers to build stacks from graph text.
#![allow(dead_code)]

use pathstack_core::attrs::{keys, AttrKey, Attrs};
use pathstack_core::demux::{DemuxKey, Key, KeyMode, PartialClassifier};
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::module::{EndRoute, RouteCx};
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::*;
use std::sync::{Arc, Mutex};

/// A limited key only `PROBE` understands.
pub const PROBE_NOTE: AttrKey<String> = AttrKey::limited("PROBE_NOTE");

pub const PROBE_SPEC: ModuleSpec = ModuleSpec {
    name: "PROBE",
    doc: "test module: routes by parameter, logs stage events",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::Any),
    ],
    params: &[
        ParamSpec::optional("route", "down | up | end"),
        ParamSpec::optional("extend", "down | up | end: decision when extended"),
        ParamSpec::optional("key", "demux key byte (absent: pass through)"),
        ParamSpec::optional("fail", "create | establish"),
        ParamSpec::optional("reroute", "classify again at path ends"),
    ],
    understands: &["PROBE_NOTE", "PROBE_KEY"],
};

/// The demux key byte of a PROBE stage (overrides the `key` parameter).
pub const PROBE_KEY: AttrKey<u8> = AttrKey::limited("PROBE_KEY");

/// The shared event log of every probe in a test.
pub type Log = Arc<Mutex<Vec<String>>>;

thread_local! {
    pub static LOG: Log = Arc::new(Mutex::new(Vec::new()));
}

pub fn log() -> Vec<String> {
    LOG.with(|l| l.lock().unwrap().clone())
}
pub fn clear_log() {
    LOG.with(|l| l.lock().unwrap().clear())
}

pub struct Probe {
    name: String,
    route: Route,
    extend: Route,
    key: Option<u8>,
    fail: Option<String>,
    reroute: bool,
    log: Log,
    pub seen_note: Vec<bool>,
}

fn parse_route(s: Option<&String>) -> Route {
    match s.map(String::as_str) {
        Some("down") => Route::Service(1),
        Some("up") => Route::Service(0),
        _ => Route::End,
    }
}

impl Probe {
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let p = setup.params();
        Ok(Box::new(Probe {
            name: setup.instance().to_string(),
            route: parse_route(p.get("route")),
            extend: parse_route(p.get("extend")),
            key: match p.get("key") {
                Some(k) => Some(k.parse().map_err(|_| ModuleError::BadParam {
                    instance: setup.instance().into(),
                    key: "key".into(),
                    reason: "not a byte".into(),
                })?),
                None => None,
            },
            fail: p.get("fail").cloned(),
            reroute: p.contains_key("reroute"),
            log: LOG.with(Arc::clone),
            seen_note: Vec::new(),
        }))
    }
}

struct ProbeDemux;
impl PartialClassifier for ProbeDemux {
    fn extract(&self, msg: &[u8], _: KeyMode) -> Option<(Key, usize)> {
        Some((Key::from_array([*msg.first()?]), 1))
    }
}

impl Module for Probe {
    fn spec(&self) -> &'static ModuleSpec {
        &PROBE_SPEC
    }
    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        self.seen_note.push(attrs.contains(&PROBE_NOTE));
        if self.fail.as_deref() == Some("create") {
            return Err(cx.refuse("told to fail"));
        }
        self.log
            .lock()
            .unwrap()
            .push(format!("create {} entry={:?}", self.name, cx.entry()));
        Ok(Created::new(
            ProbeStage {
                name: self.name.clone(),
                key: attrs.remove(&PROBE_KEY).or(self.key),
                fail_establish: self.fail.as_deref() == Some("establish"),
                log: Arc::clone(&self.log),
            },
            self.route,
        ))
    }
    fn extend_route(&mut self, _entry: Option<usize>, growth: Dir, _attrs: &Attrs) -> Route {
        // The `extend` decision holds for growth at end[1] only.
        if growth == Dir::Down {
            self.extend
        } else {
            Route::End
        }
    }
    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        self.key
            .map(|_| Box::new(ProbeDemux) as Box<dyn PartialClassifier>)
    }
    fn route_end(&mut self, _dir: Dir, msg: &mut Msg, cx: &mut RouteCx<'_>) -> EndRoute {
        let Some(key) = self.key.filter(|_| self.reroute) else {
            return EndRoute::Sink;
        };
        // The stage popped our key byte: put it back and classify the
        // message as it arrived at this module (thesis §3.4.2: IP runs its
        // own classifier on the reassembled datagram). The message goes on
        // after this module's stage on the new path, so pop the byte again.
        let Ok(b) = msg.push(1) else {
            return EndRoute::Sink;
        };
        b[0] = key;
        match cx.classify(msg.as_slice()) {
            Some((p, d)) => {
                let _ = msg.pop(1);
                EndRoute::Continue(p, d)
            }
            None => EndRoute::Sink,
        }
    }
}

pub struct ProbeStage {
    name: String,
    key: Option<u8>,
    fail_establish: bool,
    log: Log,
}

pathstack_core::drop_reasons! {
    /// Why a probe stage dropped a message.
    pub enum ProbeDropReason in "probe" {
        /// No key byte to pop on the way back.
        Short => "short",
    }
}

impl Stage for ProbeStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        self.log
            .lock()
            .unwrap()
            .push(format!("process {} {:?}", self.name, dir));
        if dir == Dir::Up && self.key.is_some() && msg.pop(1).is_err() {
            return Verdict::Drop(ProbeDropReason::Short.into());
        }
        Verdict::Next
    }
    fn establish(
        &mut self,
        aux: &mut Attrs,
        _cx: &mut stage::EstablishCx<'_>,
    ) -> Result<(), PathError> {
        const ORDER: AttrKey<Vec<String>> = AttrKey::limited("TEST_ORDER");
        let mut seen = aux.remove(&ORDER).unwrap_or_default();
        seen.push(self.name.clone());
        self.log.lock().unwrap().push(format!(
            "establish {} after {:?}",
            self.name,
            &seen[..seen.len() - 1]
        ));
        aux.insert(&ORDER, seen);
        if self.fail_establish {
            return Err(PathError::refused(&self.name, "establish told to fail"));
        }
        Ok(())
    }
    fn demux_key(&self, _mode: KeyMode) -> DemuxKey {
        match self.key {
            Some(k) => DemuxKey::Key(Key::from_array([k])),
            None => DemuxKey::Pass,
        }
    }
    fn destroy(&mut self, _cx: &mut Cx<'_, '_>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("destroy {}", self.name));
    }
}

pub fn types() -> ModuleTypes {
    let mut t = ModuleTypes::core();
    t.register(&PROBE_SPEC, Probe::create);
    t
}

pub fn graph(text: &str) -> ModuleGraph {
    ModuleGraph::from_text(text, Some("test.graph"), &types().specs())
        .unwrap_or_else(|e| panic!("{e}"))
}

pub fn stack(text: &str) -> Stack {
    Stack::builder(graph(text), types())
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

pub fn participants(channel: u32) -> Attrs {
    Attrs::new().with(
        &keys::PARTICIPANTS,
        keys::Participants {
            local: vec![keys::AddrPart::Id(channel)],
            remote: vec![],
        },
    )
}
