//! Module initialization order (thesis §3.2.3.2): `<` markers from specs
//! and from connections, deterministic ties, and create/link/init.

mod graph_specs;

use graph_specs::names;
use pathstack_core::graph::{GraphBuilder, ModuleGraph};

fn parse(text: &str) -> ModuleGraph {
    ModuleGraph::from_text(text, None, &graph_specs::registry()).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts that in `g`'s order, every `<` end comes after its other end.
fn assert_honours_markers(g: &ModuleGraph) {
    let pos = |id: pathstack_core::graph::InstanceId| {
        g.init_order().iter().position(|&x| x == id).unwrap()
    };
    assert_eq!(g.init_order().len(), g.instances().len());
    for c in g.connections() {
        for side in 0..2 {
            if c.init_after[side] {
                assert!(pos(c.ends[side].instance) > pos(c.ends[1 - side].instance));
            }
        }
    }
}

#[test]
fn spec_markers_order_a_stack_bottom_up_whatever_the_declaration_order() {
    let g = parse(
        "module=ECHO; module=DRIVER device=0; name=h1 module=HDR; module=LINK;\n@\n\
         ECHO.down<>h1.up; h1.down<>LINK.up; LINK.down<>DRIVER.up;",
    );
    assert_eq!(names(&g, g.init_order()), ["DRIVER", "LINK", "h1", "ECHO"]);
    assert_honours_markers(&g);
}

#[test]
fn connection_markers_order_unmarked_services() {
    // PEER has no `<` in its spec: without markers, declaration order.
    let plain = parse(
        "name=a module=PEER; name=b module=PEER; name=c module=PEER;\n@\na.a<>b.a; b.b<>c.a;",
    );
    assert_eq!(names(&plain, plain.init_order()), ["a", "b", "c"]);
    // a after b, b after c: reversed.
    let g = parse(
        "name=a module=PEER; name=b module=PEER; name=c module=PEER;\n@\na.<a<>b.a; b.<b<>c.a;",
    );
    assert_eq!(names(&g, g.init_order()), ["c", "b", "a"]);
    // The marker may sit on the right-hand end too.
    let g = parse("name=a module=PEER; name=b module=PEER;\n@\na.a<>b.<a;");
    assert_eq!(names(&g, g.init_order()), ["a", "b"]);
    let g = parse("name=a module=PEER; name=b module=PEER;\n@\nb.a<>a.<a;");
    assert_eq!(names(&g, g.init_order()), ["b", "a"]);
}

#[test]
fn spec_and_connection_markers_combine() {
    // h1 waits for LINK (spec); an explicit marker makes the CAMERA wait for
    // h1 through an unmarked HDR.up service.
    let g = parse(
        "module=CAMERA; name=h1 module=HDR; module=LINK; module=DRIVER device=0;\n@\n\
         CAMERA.<cam<>h1.up; h1.down<>LINK.up; LINK.down<>DRIVER.up;",
    );
    assert_eq!(
        names(&g, g.init_order()),
        ["DRIVER", "LINK", "h1", "CAMERA"]
    );
    assert_honours_markers(&g);
}

#[test]
fn ties_follow_declaration_order() {
    // Two independent stacks interleaved: the least ready instance first.
    let g = parse(
        "name=e1 module=ECHO; name=e2 module=ECHO; name=w2 module=DRIVER device=1;\n\
         name=l1 module=LINK; name=w1 module=DRIVER device=0; name=l2 module=LINK;\n@\n\
         e1.down<>l1.up; e2.down<>l2.up; l1.down<>w1.up; l2.down<>w2.up;",
    );
    assert_eq!(
        names(&g, g.init_order()),
        ["w2", "w1", "l1", "e1", "l2", "e2"]
    );
    assert_honours_markers(&g);
}

#[test]
fn cyclic_graphs_are_fine_without_cyclic_markers() {
    // Thesis §3.2.3: cyclic module graphs are admissible when the
    // initialization order is still a partial order.
    let g = parse(
        "name=a module=PEER; name=b module=PEER; name=c module=PEER;\n@\n\
                   a.<a<>b.a; b.b<>c.a; c.b<>a.b;",
    );
    assert_eq!(names(&g, g.init_order()), ["b", "a", "c"]);
}

#[test]
fn instantiate_creates_all_then_initializes_in_order() {
    let g = parse(
        "module=ECHO; name=h1 module=HDR; module=LINK; module=DRIVER device=0;\n@\n\
         ECHO.down<>h1.up; h1.down<>LINK.up; LINK.down<>DRIVER.up;",
    );
    let mut log = Vec::new();
    struct Module {
        name: String,
        counts: Vec<usize>,
        ready: bool,
    }
    let modules = g
        .instantiate(
            |_, inst| {
                log.push(format!("create {}", inst.name));
                Ok::<_, String>(Module {
                    name: inst.name.clone(),
                    counts: inst.connection_counts(),
                    ready: false,
                })
            },
            |id, modules| {
                // Every neighbour this module waits for is already ready.
                for c in g.connections() {
                    for side in 0..2 {
                        if c.ends[side].instance == id && c.init_after[side] {
                            let other = c.ends[1 - side].instance.index();
                            if !modules[other].ready {
                                return Err(format!(
                                    "{} before {}",
                                    modules[id.index()].name,
                                    modules[other].name
                                ));
                            }
                        }
                    }
                }
                modules[id.index()].ready = true;
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(
        log,
        ["create ECHO", "create h1", "create LINK", "create DRIVER"]
    );
    assert!(modules.iter().all(|m| m.ready));
    assert_eq!(modules[1].counts, [1, 1]);
}

#[test]
fn instantiate_stops_at_the_first_error() {
    let r = graph_specs::registry();
    let mut b = GraphBuilder::new(&r);
    b.instance("a", "PEER");
    b.instance("b", "PEER");
    let g = b.build().unwrap();
    let mut inits = 0;
    let res = g.instantiate(
        |id, _| Ok(id),
        |id, _| {
            inits += 1;
            if id.index() == 0 {
                Err("boom")
            } else {
                Ok(())
            }
        },
    );
    assert_eq!(res.unwrap_err(), "boom");
    assert_eq!(inits, 1);
}
