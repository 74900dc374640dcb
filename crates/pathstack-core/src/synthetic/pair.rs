//! Two stacks joined by the in-memory wire, running the synthetic 5-stage
//! path `ECHO / HDR / HDR / LINK / DRIVER`: the client's `ECHO` sinks, the
//! server's echoes. Used by the tests, the `path_exec` benchmark and the
//! examples; one round trip is four path traversals (client down, server
//! up, server down after `ECHO` turns the message around, client up).

use super::{EchoStage, HdrStage, LinkStage};
use crate::attrs::keys::{AddrPart, Participants, PARTICIPANTS};
use crate::attrs::Attrs;
use crate::device::memory::{memory_pair, MemoryConfig};
use crate::device::DriverStage;
use crate::error::StackError;
use crate::graph::ModuleGraph;
use crate::ids::{Dir, PathId};
use crate::rules::Rule;
use crate::sched::SchedKind;
use crate::stack::{ModuleTypes, Stack, StackConfig};
use crate::time::Instant;

/// The graph of each side; `{mode}` is `echo` or `sink`.
pub const PAIR_GRAPH: &str = "
# ECHO over two HDR layers over LINK over the DRIVER module (device 0).
name=echo module=ECHO mode={mode};
name=h2 module=HDR size=8 tag=2;
name=h1 module=HDR size=8 tag=1;
name=link module=LINK;
name=wire module=DRIVER device=0;
@
echo.down<>h2.up;
h2.down<>h1.up;
h1.down<>link.up;
link.down<>wire.up;
";

/// The inlining rule for the pair's path.
pub fn inline_rule() -> Rule {
    Rule::inline::<(EchoStage, HdrStage, HdrStage, LinkStage, DriverStage)>(
        "inline ECHO/HDR/HDR/LINK/DRIVER",
        &["ECHO", "HDR", "HDR", "LINK", "DRIVER"],
    )
}

/// Two stacks, a path on each, joined by an in-memory wire.
pub struct EchoPair {
    /// The side whose `ECHO` sinks (the application reads replies here).
    pub client: Stack,
    /// The side whose `ECHO` echoes.
    pub server: Stack,
    /// The client's path.
    pub client_path: PathId,
    /// The server's path.
    pub server_path: PathId,
    now: Instant,
}

fn side(
    mode: &str,
    sched: SchedKind,
    channel: u32,
    dev: impl crate::device::Device + 'static,
) -> Result<(Stack, PathId), StackError> {
    let types = ModuleTypes::core();
    let text = PAIR_GRAPH.replace("{mode}", mode);
    let graph = ModuleGraph::from_text(&text, Some("pair.graph"), &types.specs())?;
    let mut stack = Stack::builder(graph, types)
        .device(dev)
        .config(StackConfig {
            sched,
            ..StackConfig::default()
        })
        .rule(inline_rule())
        .build()?;
    let echo = stack.module_id("echo").expect("graph has echo");
    let attrs = Attrs::new().with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Id(channel)],
            remote: vec![],
        },
    );
    let path = stack.path_create(echo, attrs).map_err(|e| {
        StackError::Module(crate::error::ModuleError::Init {
            instance: "echo".into(),
            reason: e.to_string(),
        })
    })?;
    Ok((stack, path))
}

impl EchoPair {
    /// Builds the pair with scheduler `sched`; `inline` applies the
    /// path-inlining rule to both paths.
    pub fn new(sched: SchedKind, inline: bool) -> Result<Self, StackError> {
        let (a, b) = memory_pair(MemoryConfig::default());
        let (mut client, client_path) = side("sink", sched, 7, a)?;
        let (mut server, server_path) = side("echo", sched, 7, b)?;
        if inline {
            for (s, p) in [(&mut client, client_path), (&mut server, server_path)] {
                let applied = s.path_optimize(p).map_err(|e| {
                    StackError::Module(crate::error::ModuleError::Init {
                        instance: "echo".into(),
                        reason: e.to_string(),
                    })
                })?;
                debug_assert_eq!(applied.len(), 1);
            }
        }
        Ok(EchoPair {
            client,
            server,
            client_path,
            server_path,
            now: Instant::ZERO,
        })
    }

    /// Sends `burst` copies of `payload` from the client, runs both stacks
    /// until every reply is back (or `max_polls` rounds pass), and hands each
    /// reply to `on_reply`. Returns the number of replies.
    pub fn round_trip(
        &mut self,
        payload: &[u8],
        burst: usize,
        mut on_reply: impl FnMut(&[u8]),
    ) -> usize {
        for _ in 0..burst {
            let Ok(m) = self.client.pool().alloc_copy(payload) else {
                break;
            };
            if self.client.send(self.client_path, Dir::Down, m).is_err() {
                break;
            }
        }
        let mut got = 0;
        for _ in 0..64 {
            self.now = Instant::from_nanos(self.now.as_nanos() + 1_000);
            self.client.poll(self.now);
            self.server.poll(self.now);
            self.client.poll(self.now);
            while let Some(r) = self.client.recv(self.client_path, Dir::Up) {
                on_reply(r.as_slice());
                got += 1;
            }
            if got >= burst {
                break;
            }
        }
        got
    }
}
