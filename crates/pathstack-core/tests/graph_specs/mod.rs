//! Module types for the graph tests. WIRE, HDR, LINK and ECHO mirror the
//! specs of the synthetic modules (same services, counts, markers and
//! parameters) so `graphs/synthetic5.graph` can be checked here; the others
//! exercise interface subtyping and every connection-count constraint.
#![allow(dead_code)]

use pathstack_core::graph::spec::*;

pub static WIRE: ModuleSpec = ModuleSpec {
    name: "WIRE",
    doc: "device driver over an in-memory wire",
    services: &[ServiceSpec::new("up", ServiceType::NETDEV, Count::Any)],
    params: &[ParamSpec {
        key: "device",
        doc: "index into the devices given to the stack",
        required: true,
    }],
    understands: &[],
};

pub static HDR: ModuleSpec = ModuleSpec {
    name: "HDR",
    doc: "synthetic layer pushing a checksummed header",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after(),
    ],
    params: &[
        ParamSpec {
            key: "size",
            doc: "header bytes",
            required: false,
        },
        ParamSpec {
            key: "tag",
            doc: "header tag",
            required: false,
        },
    ],
    understands: &[],
};

pub static LINK: ModuleSpec = ModuleSpec {
    name: "LINK",
    doc: "synthetic link layer on a driver",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::NETDEV, Count::ExactlyOne).init_after(),
    ],
    params: &[],
    understands: &[],
};

pub static ECHO: ModuleSpec = ModuleSpec {
    name: "ECHO",
    doc: "echoes what it receives",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after()],
    params: &[],
    understands: &[],
};

/// Provides a windowed stream (a subtype of aio), like the thesis' TCP.
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
        &WIRE, &HDR, &LINK, &ECHO, &STREAM, &TUNER, &CAMERA, &MONITOR, &PEER,
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
