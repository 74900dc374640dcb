//! One test per graph error kind: the kind, the line and the items named.

mod graph_specs;

use pathstack_core::graph::spec::{Count, ServiceType};
use pathstack_core::graph::{GraphBuilder, GraphError, GraphErrorKind, ModuleGraph};

fn errors(text: &str) -> Vec<GraphError> {
    match ModuleGraph::from_text(text, Some("bad.graph"), &graph_specs::registry()) {
        Ok(g) => panic!("expected errors, got a graph:\n{}", g.summary()),
        Err(e) => e.0,
    }
}

/// The single error `text` has, with its line.
fn only(text: &str) -> (u32, GraphErrorKind) {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "expected one error, got: {errs:#?}");
    let e = errs.into_iter().next().unwrap();
    let loc = e.location.expect("text errors have a location");
    assert_eq!(loc.file.as_deref(), Some("bad.graph"));
    (loc.line, e.kind)
}

const STACK_OK: &str = "\
module=ECHO;
module=HDR name=h1;
module=DRIVER name=w device=0;
module=LINK;
@
ECHO.down<>h1.up;
h1.down<>LINK.up;
LINK.down<>w.up;
";

#[test]
fn the_reference_stack_is_valid() {
    ModuleGraph::from_text(STACK_OK, None, &graph_specs::registry()).unwrap();
}

#[test]
fn syntax_error_names_line_and_column() {
    let (line, kind) = only("module=ECHO;\nmodule=HDR name=h1 size;\n");
    assert_eq!(line, 2);
    let GraphErrorKind::Syntax { message } = kind else {
        panic!("{kind:?}")
    };
    assert!(message.contains("`=` after `size`"), "{message}");
    let e = &errors("module=ECHO;\nmodule=HDR name=h1 size;\n")[0];
    assert_eq!(e.location.as_ref().unwrap().column, Some(24));
    assert_eq!(
        e.to_string(),
        "bad.graph:2:24: syntax error: expected `=` after `size`, found `;`"
    );
}

#[test]
fn syntax_errors_are_all_reported_with_recovery() {
    let text = "module=ECHO\n@\nECHO.down<>h1.up\nh1.down<>;\nx.y<>z.w;\n@\n";
    let errs = errors(text);
    let lines: Vec<u32> = errs
        .iter()
        .map(|e| e.location.as_ref().unwrap().line)
        .collect();
    // A missing `;` is reported where it belongs, just after the statement
    // (lines 1 and 3); recovery then skips to the next `;` (line 4, so its
    // missing service name is not reported again) and goes on to find the
    // second `@` on line 6.
    assert_eq!(lines, [1, 3, 6], "{errs:#?}");
    assert!(errs
        .iter()
        .all(|e| matches!(e.kind, GraphErrorKind::Syntax { .. })));
    assert!(errs[0]
        .to_string()
        .contains("missing `;` at the end of the declaration (found `@`)"));
    assert!(errs[1]
        .to_string()
        .contains("missing `;` after `ECHO.down<>h1.up` (found `h1`)"));
    assert!(errs[2].to_string().contains("second `@`"));
}

#[test]
fn declaration_without_module_is_a_syntax_error() {
    let (line, kind) = only("\n\nname=x size=3;");
    assert_eq!(line, 3);
    assert_eq!(
        kind,
        GraphErrorKind::Syntax {
            message: "instance declaration without `module=`".into()
        }
    );
}

#[test]
fn unknown_module_type() {
    let (line, kind) = only("module=DRIVER device=0;\n# typo\nname=h1 module=HRD;\n");
    assert_eq!(line, 3);
    let GraphErrorKind::UnknownModuleType {
        instance,
        module,
        known,
    } = kind
    else {
        panic!("{kind:?}")
    };
    assert_eq!((instance.as_str(), module.as_str()), ("h1", "HRD"));
    assert!(known.contains(&"HDR".to_string()));
}

#[test]
fn unknown_module_type_does_not_cascade_into_connections() {
    // `h1` exists (with a bad type): its connection is not reported again.
    let errs = errors("module=ECHO;\nname=h1 module=HRD;\n@\nECHO.down<>h1.up;\n");
    assert_eq!(errs.len(), 1, "{errs:#?}");
}

#[test]
fn duplicate_instance_names_both_lines() {
    let errs = errors("module=HDR name=h1;\nmodule=ECHO;\n\nmodule=HDR name=h1;\n");
    let e = errs
        .iter()
        .find(|e| matches!(e.kind, GraphErrorKind::DuplicateInstance { .. }))
        .expect("duplicate reported");
    assert_eq!(e.location.as_ref().unwrap().line, 4);
    assert_eq!(
        e.kind,
        GraphErrorKind::DuplicateInstance {
            name: "h1".into(),
            first_line: Some(1)
        }
    );
    assert_eq!(
        e.to_string(),
        "bad.graph:4: duplicate instance `h1` (first declared at line 1)"
    );
}

#[test]
fn default_names_collide_too() {
    let (line, kind) = only("module=DRIVER device=0;\nmodule=DRIVER device=1;\n");
    assert_eq!(line, 2);
    assert_eq!(
        kind,
        GraphErrorKind::DuplicateInstance {
            name: "DRIVER".into(),
            first_line: Some(1)
        }
    );
}

#[test]
fn invalid_instance_name() {
    let (line, kind) = only("module=ECHO name=a.b;\n");
    assert_eq!(line, 1);
    assert_eq!(kind, GraphErrorKind::InvalidName { name: "a.b".into() });
}

#[test]
fn unknown_instance() {
    let text = STACK_OK.replace("ECHO.down<>h1.up;", "ECHO.down<>h9.up;");
    let errs = errors(&text);
    // Only the unknown instance: ECHO.down's count is not judged, since the
    // connection meant for it failed to resolve.
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].location.as_ref().unwrap().line, 6);
    assert_eq!(
        errs[0].kind,
        GraphErrorKind::UnknownInstance {
            name: "h9".into(),
            connection: "ECHO.down<>h9.up".into()
        }
    );
}

#[test]
fn unknown_service_lists_the_real_ones() {
    let text = STACK_OK.replace("h1.down<>LINK.up;", "h1.dwn<>LINK.up;");
    let (line, kind) = only(&text);
    assert_eq!(line, 7);
    assert_eq!(
        kind,
        GraphErrorKind::UnknownService {
            instance: "h1".into(),
            module: "HDR".into(),
            service: "dwn".into(),
            available: vec!["up".into(), "down".into()],
        }
    );
    assert_eq!(
        GraphError {
            location: Some(pathstack_core::graph::Location::new(Some("bad.graph"), 7)),
            kind
        }
        .to_string(),
        "bad.graph:7: unknown service `h1.dwn` (module type HDR has services: up, down)"
    );
}

#[test]
fn unknown_param() {
    let (line, kind) = only(&STACK_OK.replace("name=h1;", "name=h1 sz=8;"));
    assert_eq!(line, 2);
    assert_eq!(
        kind,
        GraphErrorKind::UnknownParam {
            instance: "h1".into(),
            module: "HDR".into(),
            key: "sz".into(),
            accepted: vec!["size".into(), "tag".into()],
        }
    );
}

#[test]
fn duplicate_param() {
    let (line, kind) = only(&STACK_OK.replace("name=h1;", "name=h1 size=8\n  size=4;"));
    assert_eq!(line, 2);
    assert_eq!(
        kind,
        GraphErrorKind::DuplicateParam {
            instance: "h1".into(),
            key: "size".into()
        }
    );
}

#[test]
fn missing_param() {
    let (line, kind) = only("\nname=w module=DRIVER;\n");
    assert_eq!(line, 2);
    let GraphErrorKind::MissingParam {
        instance, key, doc, ..
    } = kind
    else {
        panic!("{kind:?}")
    };
    assert_eq!((instance.as_str(), key.as_str()), ("w", "device"));
    assert!(doc.contains("index"));
}

#[test]
fn incompatible_services_show_both_types() {
    // An aio service straight onto a netdev-expecting driver... is fine
    // one way (netdev is an aio) but the driver expects netdev from it.
    let text = STACK_OK.replace("h1.down<>LINK.up;", "h1.down<>w.up;");
    let errs = errors(&text);
    let e = errs
        .iter()
        .find(|e| matches!(e.kind, GraphErrorKind::IncompatibleServices { .. }))
        .unwrap_or_else(|| panic!("{errs:#?}"));
    assert_eq!(e.location.as_ref().unwrap().line, 7);
    assert_eq!(
        e.kind,
        GraphErrorKind::IncompatibleServices {
            a: "h1.down".into(),
            a_type: ServiceType::AIO,
            b: "w.up".into(),
            b_type: ServiceType::NETDEV,
        }
    );
    assert!(e
        .to_string()
        .contains("`h1.down` is <aio, aio> but `w.up` is <netdev, netdev>"));
}

#[test]
fn subtyping_allows_a_windowed_provider_but_not_the_reverse() {
    let r = graph_specs::registry();
    let ok = "module=STREAM; module=TUNER;\n@\nTUNER.down<>STREAM.up;";
    ModuleGraph::from_text(ok, None, &r).unwrap();
    // A plain aio provider (HDR.up) does not satisfy TUNER's windowed need.
    let text = STACK_OK.replace("@\n", "module=TUNER;\n@\n") + "TUNER.down<>h1.up;\n";
    let (line, kind) = only(&text);
    assert_eq!(line, 10);
    assert!(matches!(kind, GraphErrorKind::IncompatibleServices { .. }));
}

#[test]
fn connection_count_exactly_one_too_many() {
    let text = "module=ECHO;\nmodule=HDR name=a;\nmodule=HDR name=b;\nmodule=LINK;\nmodule=DRIVER device=0;\n@\n\
                ECHO.down<>a.up;\nECHO.down<>b.up;\na.down<>LINK.up;\nb.down<>LINK.up;\nLINK.down<>DRIVER.up;\n";
    let (line, kind) = only(text);
    assert_eq!(line, 1, "reported at the instance declaration");
    assert_eq!(
        kind,
        GraphErrorKind::ConnectionCount {
            service: "ECHO.down".into(),
            module: "ECHO".into(),
            constraint: Count::ExactlyOne,
            actual: 2,
            lines: vec![7, 8],
        }
    );
}

#[test]
fn connection_count_exactly_one_missing() {
    let (line, kind) = only("module=ECHO;\n");
    assert_eq!(line, 1);
    assert_eq!(
        kind.to_string(),
        "service `ECHO.down` (ECHO) takes exactly one connection but has 0"
    );
}

#[test]
fn connection_count_at_least_one_and_at_most_one() {
    let r = graph_specs::registry();
    let errs = ModuleGraph::from_text(
        "module=CAMERA;\nname=m module=MONITOR;\nname=c2 module=CAMERA;\n@\nc2.cam<>m.data;\nc2.cam<>m.data;\n",
        None,
        &r,
    )
    .unwrap_err()
    .0;
    let kinds: Vec<_> = errs
        .iter()
        .map(|e| (e.location.as_ref().unwrap().line, &e.kind))
        .collect();
    assert_eq!(kinds.len(), 2, "{errs:#?}");
    assert_eq!(
        kinds[0],
        (
            1,
            &GraphErrorKind::ConnectionCount {
                service: "CAMERA.cam".into(),
                module: "CAMERA".into(),
                constraint: Count::AtLeastOne,
                actual: 0,
                lines: vec![],
            }
        )
    );
    assert_eq!(
        kinds[1],
        (
            2,
            &GraphErrorKind::ConnectionCount {
                service: "m.data".into(),
                module: "MONITOR".into(),
                constraint: Count::AtMostOne,
                actual: 2,
                lines: vec![5, 6],
            }
        )
    );
    // Thesis Fig. 3.4: a camera feeding two consumers is fine.
    ModuleGraph::from_text(
        "module=CAMERA; module=MONITOR; name=m2 module=MONITOR;\n@\nCAMERA.cam<>MONITOR.data; CAMERA.cam<>m2.data;",
        None,
        &r,
    )
    .unwrap();
}

#[test]
fn init_cycle_lists_the_instances() {
    let text = "module=PEER name=a;\nmodule=PEER name=b;\nmodule=PEER name=c;\n@\n\
                a.<a<>b.a;\nb.<b<>c.a;\nc.<b<>a.b;\n";
    let (line, kind) = only(text);
    assert_eq!(line, 5);
    assert_eq!(
        kind,
        GraphErrorKind::InitCycle {
            instances: vec!["a".into(), "b".into(), "c".into(), "a".into()],
            lines: vec![5, 6, 7],
        }
    );
    assert_eq!(
        kind.to_string(),
        "cycle in `<` initialization order: a -> b -> c -> a (each is initialized after the next) (lines 5, 6, 7)"
    );
}

#[test]
fn init_cycle_from_spec_markers_and_self_loops() {
    // Two HDRs whose `down`s (marked `<` in the spec) point at each other.
    let errs = errors(
        "name=x module=HDR;\nname=y module=HDR;\nmodule=PEER;\n@\nx.down<>y.up;\ny.down<>x.up;\nPEER.<a<>PEER.b;\n",
    );
    let cycles: Vec<_> = errs
        .iter()
        .filter_map(|e| match &e.kind {
            GraphErrorKind::InitCycle { instances, .. } => Some(instances.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(cycles, [vec!["x", "y", "x"], vec!["PEER", "PEER"]]);
}

#[test]
fn every_error_is_reported_in_source_order() {
    let text = "\
module=ECHO;
module=BOGUS name=z;
module=DRIVER;
module=HDR name=h1 colour=red;
@
ECHO.down<>h1.up;
h1.down<>nobody.up;
";
    let errs = errors(text);
    let got: Vec<(u32, &str)> = errs
        .iter()
        .map(|e| {
            let k = match e.kind {
                GraphErrorKind::UnknownModuleType { .. } => "type",
                GraphErrorKind::MissingParam { .. } => "missing",
                GraphErrorKind::UnknownParam { .. } => "param",
                GraphErrorKind::UnknownInstance { .. } => "instance",
                _ => "other",
            };
            (e.location.as_ref().unwrap().line, k)
        })
        .collect();
    assert_eq!(
        got,
        [(2, "type"), (3, "missing"), (4, "param"), (7, "instance")],
        "{errs:#?}"
    );
}

#[test]
fn builder_errors_have_no_location_but_name_the_items() {
    let r = graph_specs::registry();
    let mut b = GraphBuilder::new(&r);
    b.instance("e", "ECHO");
    b.instance("e", "ECHO");
    b.connect(("e", "up"), ("e", "down"));
    let errs = b.build().unwrap_err();
    let text = errs.to_string();
    assert!(errs.iter().all(|e| e.location.is_none()));
    assert!(
        text.contains("duplicate instance `e` (declared twice)"),
        "{text}"
    );
    assert!(text.contains("unknown service `e.up`"), "{text}");
    assert_eq!(text.lines().count(), errs.len());
}

#[test]
fn missing_file_is_an_io_error() {
    let errs =
        ModuleGraph::from_file("/nonexistent/x.graph", &graph_specs::registry()).unwrap_err();
    assert!(matches!(errs.0[0].kind, GraphErrorKind::Io { .. }));
    assert!(errs.to_string().contains("/nonexistent/x.graph"));
}
