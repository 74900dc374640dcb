//! `ECHO`: the top of a path; echoes or sinks what arrives from below.

use crate::attrs::Attrs;
use crate::error::ModuleError;
use crate::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use crate::ids::Dir;
use crate::module::{CreateCx, Created, Creation, Module, Route};
use crate::module_setup::ModuleSetup;
use crate::msg::Msg;
use crate::stage::{Cx, Stage, Verdict};

/// Spec of `ECHO`.
pub const ECHO_SPEC: ModuleSpec = ModuleSpec {
    name: "ECHO",
    doc: "top of a path: echoes arriving messages back down (mode=echo) or queues them for the application (mode=sink)",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after()],
    params: &[ParamSpec::optional("mode", "`echo` (default) or `sink`")],
    understands: &[],
};

/// The `ECHO` module.
pub struct EchoModule {
    echo: bool,
}

impl EchoModule {
    /// Factory: parameter `mode`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let echo = match setup.params().get("mode").map(String::as_str) {
            None | Some("echo") => true,
            Some("sink") => false,
            Some(other) => {
                return Err(ModuleError::BadParam {
                    instance: setup.instance().to_string(),
                    key: "mode".into(),
                    reason: format!("`{other}`: expected `echo` or `sink`"),
                })
            }
        };
        Ok(Box::new(EchoModule { echo }))
    }
}

impl Module for EchoModule {
    fn spec(&self) -> &'static ModuleSpec {
        &ECHO_SPEC
    }

    /// `route_end` is the default: what passes the top goes to the sink.
    fn ends_in_sink(&self) -> bool {
        true
    }

    fn create_stage(&mut self, _attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_top("ECHO is the top of a path: create the path at it")?;
        Ok(Created::new(
            EchoStage {
                echo: self.echo,
                echoed: 0,
            },
            Route::Service(0),
        ))
    }
}

/// The `ECHO` stage.
pub struct EchoStage {
    echo: bool,
    echoed: u64,
}

impl EchoStage {
    /// Messages echoed so far.
    pub fn echoed(&self) -> u64 {
        self.echoed
    }
}

impl Stage for EchoStage {
    fn passes(&self, dir: Dir) -> bool {
        dir != Dir::Up || !self.echo
    }

    #[inline(always)]
    fn process(&mut self, dir: Dir, _msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Up && self.echo {
            self.echoed += 1;
            Verdict::Back
        } else {
            Verdict::Next
        }
    }
}
