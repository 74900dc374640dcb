//! A module's path requests (`ModCx::request_path`, how ICMP makes its path
//! through IP at initialization, thesis §4.1.2) go through the same bounded
//! list of path operations as a stage's `Cx::open_path`: created when the
//! module's call returns, each result reported to `Module::path_created`
//! with its tag, a failure at initialization failing the stack's build, and
//! requests beyond the bound dropped and counted against the module.

use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::*;

const ASKER_SPEC: ModuleSpec = ModuleSpec {
    name: "ASKER",
    doc: "test: asks for `n` paths at initialization",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::Any)],
    params: &[
        ParamSpec::required("n", "paths to ask for"),
        ParamSpec::optional("unroutable", "ask for paths that cannot be made"),
    ],
    understands: &[],
};

/// Asks for `n` paths in `init`, tagged 0..n, and keeps what it hears.
struct Asker {
    n: u64,
    unroutable: bool,
    created: Vec<(u64, bool)>,
}

impl Module for Asker {
    fn spec(&self) -> &'static ModuleSpec {
        &ASKER_SPEC
    }
    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        for tag in 0..self.n {
            let mut attrs = Attrs::new();
            if self.unroutable {
                attrs = attrs.with(&keys::PATHNAME, vec!["nowhere".to_string()]);
            }
            cx.request_path(attrs, tag);
        }
        Ok(())
    }
    fn create_stage(&mut self, _: &mut Attrs, _: &mut CreateCx<'_>) -> Creation {
        Ok(Created::new(Nothing, Route::End))
    }
    fn path_created(&mut self, tag: u64, result: Result<PathId, &PathError>) {
        self.created.push((tag, result.is_ok()));
    }
}

struct Nothing;

impl Stage for Nothing {
    fn process(&mut self, _: Dir, _: &mut Msg, _: &mut Cx<'_, '_>) -> Verdict {
        Verdict::Consumed
    }
}

fn build(params: &str, follow_up_cap: usize) -> Result<Stack, StackError> {
    let mut types = ModuleTypes::new();
    types.register(&ASKER_SPEC, |setup: &mut ModuleSetup<'_>| {
        Ok(Box::new(Asker {
            n: setup.param("n", 0)?,
            unroutable: setup.params().contains_key("unroutable"),
            created: Vec::new(),
        }))
    });
    let text = format!("name=a module=ASKER {params}; @");
    let graph = ModuleGraph::from_text(&text, None, &types.specs()).unwrap();
    let config = StackConfig {
        follow_up_cap,
        ..StackConfig::default()
    };
    Stack::builder(graph, types).config(config).build()
}

#[test]
fn requested_paths_are_made_when_init_returns_and_reported_by_tag() {
    let s = build("n=3", 8).unwrap();
    let a = s.module_id("a").unwrap();
    let asker = s.module::<Asker>(a).unwrap();
    assert_eq!(asker.created, [(0, true), (1, true), (2, true)]);
    assert_eq!(s.module_drops(a).unwrap().total(), 0);
}

#[test]
fn requests_beyond_the_bound_are_dropped_and_counted_against_the_module() {
    let s = build("n=6", 4).unwrap();
    let a = s.module_id("a").unwrap();
    let asker = s.module::<Asker>(a).unwrap();
    assert_eq!(asker.created, [(0, true), (1, true), (2, true), (3, true)]);
    let drops = s.module_drops(a).unwrap();
    assert_eq!(drops.get(CoreDropReason::FollowUpOverflow), 2, "{drops:?}");
}

#[test]
fn a_path_that_cannot_be_made_at_init_fails_the_build() {
    let err = match build("n=1 unroutable=yes", 8) {
        Ok(_) => panic!("the stack was built"),
        Err(e) => e,
    };
    assert!(
        matches!(err, StackError::Module(ModuleError::InitPath { .. })),
        "{err}"
    );
}
