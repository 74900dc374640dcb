//! The text format: comments, parameters, defaults, the standard graph
//! files, equality with the builder, round trips, DOT and the summary.

mod graph_specs;

use pathstack_core::graph::{GraphBuilder, Link, ModuleGraph, ServiceRef};

fn parse(text: &str) -> ModuleGraph {
    ModuleGraph::from_text(text, Some("t.graph"), &graph_specs::registry())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn synthetic5_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../graphs/synthetic5.graph")
}

#[test]
fn the_former_driver_name_wire_still_parses() {
    let g = parse("name=dev module=WIRE device=0;");
    let dev = g.instance(g.instance_by_name("dev").unwrap());
    assert_eq!(dev.spec.name, "DRIVER");
    assert_eq!(dev.param("device"), Some("0"));
}

#[test]
fn comments_params_quotes_and_default_names() {
    let g = parse(
        "# a header comment\n\
         module=DRIVER device=0 ; # trailing comment; with a semicolon\n\
         name = h1   module=HDR\n    size=8 tag=\"a b;#\\\"c\\\\\";\n\
         ;;\n\
         module=LINK;module=ECHO;\n\
         @ # connections\n\
         ECHO . < down <> h1.up ; h1.down<>LINK.up; LINK.down<>DRIVER.up;",
    );
    let names: Vec<&str> = g.instances().iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["DRIVER", "h1", "LINK", "ECHO"]);
    let wire = g.instance(g.instance_by_name("DRIVER").unwrap());
    assert_eq!(wire.spec.name, "DRIVER");
    assert_eq!(wire.param("device"), Some("0"));
    assert_eq!(wire.location.as_ref().unwrap().line, 2);
    let h1 = g.instance(g.instance_by_name("h1").unwrap());
    assert_eq!(h1.param("size"), Some("8"));
    assert_eq!(h1.param("tag"), Some("a b;#\"c\\"));
    assert_eq!(h1.location.as_ref().unwrap().line, 3);
    assert_eq!(g.connections().len(), 3);
    assert!(g.connections()[0].marked[0], "`<` written on ECHO.down");
    assert_eq!(g.connections()[0].location.as_ref().unwrap().line, 8);
    assert_eq!(g.file(), Some("t.graph"));
}

#[test]
fn values_may_hold_dots_colons_and_slashes() {
    let g = parse("module=DRIVER device=10.0.0.1/24:02:00;\n");
    assert_eq!(g.instances()[0].param("device"), Some("10.0.0.1/24:02:00"));
    // No `@` and no connections is a valid (if lonely) graph.
    assert!(g.connections().is_empty());
}

#[test]
fn links_follow_the_thesis_layout() {
    // Thesis Fig. 3.4: CAMERA.cam connected twice; links[cam][n] in order.
    let g = parse(
        "module=CAMERA; module=MONITOR; name=m2 module=MONITOR;\n@\n\
         CAMERA.cam<>MONITOR.data;\nCAMERA.cam<>m2.data;\n",
    );
    let cam = g.instance(g.instance_by_name("CAMERA").unwrap());
    let mon = g.instance_by_name("MONITOR").unwrap();
    let m2 = g.instance_by_name("m2").unwrap();
    assert_eq!(
        cam.links[0],
        [
            Link {
                instance: mon,
                service: 0
            },
            Link {
                instance: m2,
                service: 0
            }
        ]
    );
    assert_eq!(cam.connection_counts(), [2]);
    assert_eq!(
        g.instance(m2).service_links("data"),
        Some(
            &[Link {
                instance: g.instance_by_name("CAMERA").unwrap(),
                service: 0
            }][..]
        )
    );
    assert_eq!(g.link_name(cam.links[0][1]), "m2.data");
}

#[test]
fn synthetic5_file_is_a_clean_linear_stack() {
    let g = ModuleGraph::from_file(synthetic5_path(), &graph_specs::registry())
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = g.instances().iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["echo", "h2", "h1", "link", "wire"]);
    assert_eq!(
        graph_specs::names(&g, g.init_order()),
        ["wire", "link", "h1", "h2", "echo"]
    );
    // Linear: every connection joins a `down` to the next instance's `up`.
    for (i, c) in g.connections().iter().enumerate() {
        assert_eq!(c.ends[0].instance.index(), i);
        assert_eq!(c.ends[1].instance.index(), i + 1);
        assert_eq!(g.link_name(c.ends[0]), format!("{}.down", names[i]));
        assert_eq!(g.link_name(c.ends[1]), format!("{}.up", names[i + 1]));
    }
}

#[test]
fn builder_and_text_give_equal_graphs() {
    let text = std::fs::read_to_string(synthetic5_path()).unwrap();
    let from_text = parse(&text);
    let r = graph_specs::registry();
    let mut b = GraphBuilder::new(&r);
    b.instance("echo", "ECHO").param("mode", "echo");
    for (n, tag) in [("h2", 2), ("h1", 1)] {
        b.instance(n, "HDR").param("size", 8).param("tag", tag);
    }
    b.instance("link", "LINK");
    b.instance("wire", "DRIVER").param("device", 0);
    b.connect(("echo", "down"), ("h2", "up"))
        .connect(("h2", "down"), ("h1", "up"))
        .connect(("h1", "down"), ("link", "up"))
        .connect(("link", "down"), ("wire", "up"));
    let built = b.build().unwrap();
    assert_eq!(built, from_text);

    // Markers are part of the graph: an explicit `<` makes it differ.
    let mut b2 = b.clone();
    b2.connection(
        ServiceRef::new("wire", "up").init_after(),
        ServiceRef::new("echo", "down"),
        None,
    );
    assert!(b2.build().is_err(), "echo.down would have two connections");
}

#[test]
fn to_text_round_trips() {
    let g = parse(
        "module=DRIVER device=\"two words\";\nname=p module=PEER;\nname=q module=PEER;\n@\np.<a<>q.b;\nq.a<>p.b;\n",
    );
    let text = g.to_text();
    assert!(
        text.contains("name=DRIVER module=DRIVER device=\"two words\";"),
        "{text}"
    );
    assert!(text.contains("p.<a<>q.b;"), "{text}");
    assert_eq!(parse(&text), g);
}

#[test]
fn dot_has_nodes_and_edges() {
    let g = parse(
        "name=p module=PEER;\nname=q module=PEER;\nmodule=CAMERA;\n@\np.<a<>q.b;\nCAMERA.cam<>q.a;\n",
    );
    let dot = g.to_dot();
    assert!(dot.starts_with("digraph \"t.graph\" {"), "{dot}");
    assert!(dot.contains("n0 [label=\"p\\n(PEER)\"];"), "{dot}");
    assert!(dot.contains("n2 [label=\"CAMERA\\n(CAMERA)\"];"), "{dot}");
    // Ordered edge: solid arrow from the later-initialized p to q.
    assert!(dot.contains("n0 -> n1 [label=\"<a <> b\"];"), "{dot}");
    // Unordered edge: dashed, no arrowhead.
    assert!(
        dot.contains("n2 -> n1 [label=\"cam <> a\", dir=none, style=dashed];"),
        "{dot}"
    );
    assert!(dot.trim_end().ends_with('}'));
    assert_eq!(dot.matches("->").count(), 2);
}

#[test]
fn dot_marks_spec_level_ordering_too() {
    let g = ModuleGraph::from_file(synthetic5_path(), &graph_specs::registry()).unwrap();
    let dot = g.to_dot();
    // echo.down is `<` in ECHO's spec: arrow echo -> h2.
    assert!(dot.contains("n0 -> n1 [label=\"<down <> up\"];"), "{dot}");
    assert!(!dot.contains("dashed"), "{dot}");
}

#[test]
fn summary_lists_instances_connections_and_order() {
    let g = ModuleGraph::from_file(synthetic5_path(), &graph_specs::registry()).unwrap();
    let s = g.summary();
    assert!(s.contains(": 5 instances, 4 connections"), "{s}");
    assert!(s.contains("wire  DRIVER device=0"), "{s}");
    assert!(s.contains("h2    HDR size=8 tag=2"), "{s}");
    assert!(s.contains("echo.<down <> h2.up"), "{s}");
    assert!(s.contains("init order: wire, link, h1, h2, echo"), "{s}");
}

#[test]
fn synthetic5_checks_against_the_real_synthetic_specs() {
    use pathstack_core::device::DRIVER_SPEC;
    use pathstack_core::graph::spec::SpecRegistry;
    use pathstack_core::synthetic::{ECHO_SPEC, HDR_SPEC, LINK_SPEC};
    let mut specs = SpecRegistry::new();
    specs
        .register(&ECHO_SPEC)
        .register(&HDR_SPEC)
        .register(&LINK_SPEC)
        .register(&DRIVER_SPEC);
    let real = ModuleGraph::from_file(synthetic5_path(), &specs).unwrap_or_else(|e| panic!("{e}"));
    let mirror = ModuleGraph::from_file(synthetic5_path(), &graph_specs::registry()).unwrap();
    assert_eq!(real, mirror);
}
