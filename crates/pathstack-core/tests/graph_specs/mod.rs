//! Module types for the graph tests. DRIVER, HDR, LINK and ECHO are the specs
//! of the synthetic modules, so `graphs/synthetic5.graph` is checked here; the others
//! exercise interface subtyping and every connection-count constraint.
#![allow(dead_code)]

use pathstack_core::graph::spec::*;

/// The real synthetic module types, so `graphs/synthetic5.graph` is
/// checked against what the stack instantiates.
pub static DRIVER: ModuleSpec = pathstack_core::device::DRIVER_SPEC;
/// See [`DRIVER`].
pub static HDR: ModuleSpec = pathstack_core::synthetic::HDR_SPEC;
/// See [`DRIVER`].
pub static LINK: ModuleSpec = pathstack_core::synthetic::LINK_SPEC;
/// See [`DRIVER`].
pub static ECHO: ModuleSpec = pathstack_core::synthetic::ECHO_SPEC;

pub static STREAM: ModuleSpec = ModuleSpec {
    name: "STREAM",
    doc: "windowed byte stream",
    services: &[ServiceSpec::new(
        "up",
        ServiceType {
            provides: Some(&WINDOWED_AIO),
            expects: Some(&AIO),
        },
        Count::Any,
    )],
    params: &[],
    understands: &[],
};

/// A user that needs window control: only connects to a windowed provider.
pub static TUNER: ModuleSpec = ModuleSpec {
    name: "TUNER",
    doc: "adjusts flow-control windows",
    services: &[ServiceSpec::new(
        "down",
        ServiceType {
            provides: Some(&AIO),
            expects: Some(&WINDOWED_AIO),
        },
        Count::AtMostOne,
    )],
    params: &[],
    understands: &[],
};

/// The thesis' CAMERA: `cam` needs at least one consumer.
pub static CAMERA: ModuleSpec = ModuleSpec {
    name: "CAMERA",
    doc: "camera driver",
    services: &[ServiceSpec::new("cam", ServiceType::AIO, Count::AtLeastOne)],
    params: &[],
    understands: &[],
};

/// The thesis' MONITOR: at most one picture source.
pub static MONITOR: ModuleSpec = ModuleSpec {
    name: "MONITOR",
    doc: "monitoring display",
    services: &[ServiceSpec::new("data", ServiceType::AIO, Count::AtMostOne)],
    params: &[],
    understands: &[],
};

/// A module without `<` in its spec, for connection-level markers.
pub static PEER: ModuleSpec = ModuleSpec {
    name: "PEER",
    doc: "symmetric peer",
    services: &[
        ServiceSpec::new("a", ServiceType::AIO, Count::Any),
        ServiceSpec::new("b", ServiceType::AIO, Count::Any),
    ],
    params: &[],
    understands: &[],
};

pub fn registry() -> SpecRegistry {
    let mut r = SpecRegistry::new();
    for s in [
        &DRIVER, &HDR, &LINK, &ECHO, &STREAM, &TUNER, &CAMERA, &MONITOR, &PEER,
    ] {
        r.register(s);
    }
    r
}

/// Names of `ids` in `g`, for readable assertions.
pub fn names(
    g: &pathstack_core::graph::ModuleGraph,
    ids: &[pathstack_core::graph::InstanceId],
) -> Vec<String> {
    ids.iter().map(|&i| g.instance(i).name.clone()).collect()
}
