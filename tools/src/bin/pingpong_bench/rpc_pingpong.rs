//! The RPC ping-pong of `pingpong_bench --transport rpc`: the x-kernel's
//! XRPCTEST — a client calls procedure [`XRPCTEST_ID`] on a server that
//! registered the [`Echo`] procedure, one call at a time, zero-byte
//! requests unless `--size` asks for more. Both hosts run the RPC stack
//! (RPC / MSELECT / VCHAN / CHAN / BID / BLAST over ETH, or over IP / ARP /
//! ETH with `--rpc-net ip`) and nothing else above IP.
//!
//! The client sends each call down its `RPC` client path and reads the
//! outcome from the path's sink, as the UDP ping-pong reads its echo (the
//! application works on the path itself, the thesis' XRPCTEST role); the
//! server's `RPC` stage turns the request around as its reply inside the
//! server path. Every reply is checked: the call's tag, an `Ok` status,
//! and the request's length and bytes.
//!
//! The warm-up begins with the first call, which cannot go out until the
//! hosts have exchanged boot ids (BIDCTL, spec §5): CHAN holds it and
//! sends it again on `FIRST_CONTACT`. That call runs on the real clock
//! with a budget of [`FIRST_CALL_TIMEOUT`]; only then does `--count-only`
//! switch the hosts to the 1 µs-per-poll clock.
//!
//! A module of the `pingpong_bench` tool (`main.rs`); it
//! uses that file's measuring and configurations, and plugs into its TAP
//! runner as a [`TapPingPong`].

use super::{
    config_name, configs, count, measure, path_names, poll_until, Args, BoxError, End, Hosts,
    Result1, TapPingPong,
};
use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::core::device::{WireStage, WIRE_SPEC};
use pathstack::core::{Dir, PathId, SchedKind, SendError};
use pathstack::devices::lance::{LanceStage, LANCE_SPEC};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use pathstack::rpc::{Echo, Peer, RpcNet};
use pathstack::rpc_protocols::anno::{CallStatus, RpcAnno, RpcTag};
use pathstack::rpc_protocols::modules::inline;
use pathstack::rpc_protocols::modules::protocol::XRPCTEST_ID;
use pathstack::rpc_protocols::modules::rpc::RpcModule;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long the first call (with the boot-id handshake) may take.
pub const FIRST_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long any later call may take over TAP before the run fails: CHAN
/// retransmits a lost request or reply itself, so a call is never
/// counted as lost; one that does not complete means something is wrong.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The host configuration of either end: the RPC stack over `net`, no UDP
/// or TCP.
fn config(
    cidr: &str,
    mac: Option<MacAddr>,
    sched: SchedKind,
    args: &RpcArgs,
) -> Result<HostConfig, BoxError> {
    let mut c = HostConfig::parse(cidr)?;
    c.mac = mac;
    c.sched = sched;
    c.nic = args.nic;
    c.rx_burst = args.rx_burst;
    c.udp = false;
    c.tcp = false;
    c.rpc = Some(args.net);
    Ok(c)
}

/// What the RPC ping-pong takes from the command line.
#[derive(Clone, Copy, Debug)]
pub struct RpcArgs {
    /// ETH or IP below BLAST and BIDCTL.
    pub net: RpcNet,
    /// Request (and reply) bytes.
    pub size: usize,
    /// The adapter under ETH.
    pub nic: Nic,
    /// Frames per driver poll.
    pub rx_burst: Option<usize>,
}

impl RpcArgs {
    /// From the example's arguments.
    pub fn of(args: &Args) -> Result<RpcArgs, BoxError> {
        let net = match &args.rpc_net {
            Some(n) => n.parse().map_err(|e| format!("--rpc-net: {e}"))?,
            None => RpcNet::Eth,
        };
        Ok(RpcArgs {
            net,
            size: args.size.unwrap_or(0),
            nic: args.nic,
            rx_burst: args.rx_burst,
        })
    }

    /// The request every call sends: `size` bytes of a pattern.
    fn request(&self) -> Vec<u8> {
        (0..self.size).map(|i| (i * 7 + 1) as u8).collect()
    }

    /// `eth` or `ip`, as `--rpc-net` takes it.
    pub fn net_name(&self) -> &'static str {
        match self.net {
            RpcNet::Eth => "eth",
            RpcNet::Ip => "ip",
        }
    }

    /// The heading's description of the workload.
    pub fn workload(&self) -> String {
        format!(
            "{}-byte RPC (XRPCTEST, procedure {XRPCTEST_ID}) ping-pong, RPC over {}",
            self.size,
            self.net_name().to_uppercase()
        )
    }
}

/// The `RPC` client and server paths of `h`.
fn rpc_paths(h: &Host) -> Result<(PathId, PathId), BoxError> {
    let s = h.stack();
    let rpc = s
        .module_id("rpc")
        .and_then(|id| s.module::<RpcModule>(id))
        .ok_or("the host has no RPC module")?;
    Ok((
        rpc.client_path().ok_or("RPC made no client path")?,
        rpc.server_path().ok_or("RPC made no server path")?,
    ))
}

/// Specializes (PIN) the `RPC` client and server paths of `h` — the
/// stages path-inlined, an established channel's short calls and replies
/// in the fused fast form (`inline::fast_rules`) — or says why it could
/// not.
fn inline_rpc(h: &mut Host, args: &RpcArgs) -> Result<(), BoxError> {
    let rules = match args.nic {
        Nic::Device => inline::fast_rules::<WireStage>(args.net, WIRE_SPEC.name),
        Nic::Lance(_) => inline::fast_rules::<LanceStage>(args.net, LANCE_SPEC.name),
    };
    for r in rules {
        h.stack_mut().add_rule(r);
    }
    let (client, server) = rpc_paths(h)?;
    for path in [client, server] {
        if h.stack_mut().path_optimize(path)?.is_empty() {
            return Err(format!(
                "--form pin: the RPC inlining rule did not apply to the path {}",
                path_names(h, path)
            )
            .into());
        }
    }
    Ok(())
}

/// The calling side: the client path, the peer, the request, and the tag
/// of the call in flight.
struct Caller {
    path: PathId,
    peer: Peer,
    request: Vec<u8>,
    slot: u16,
}

impl Caller {
    fn new(host: &Host, peer: Peer, args: &RpcArgs) -> Result<Caller, BoxError> {
        Ok(Caller {
            path: rpc_paths(host)?.0,
            peer,
            request: args.request(),
            slot: 0,
        })
    }

    /// Sends the next call down the client path. A call dropped below
    /// CHAN (the peer's boot id not known yet) is held by CHAN and sent
    /// again: it is under way all the same.
    fn start(&mut self, host: &mut Host) -> Result<(), BoxError> {
        self.slot = self.slot.wrapping_add(1);
        let mut m = host
            .stack()
            .pool()
            .alloc_copy(&self.request)
            .map_err(|e| format!("allocating a request: {e:?}"))?;
        let a = m.anno_mut();
        a.set_rpc_peer(self.peer);
        a.set_procedure(XRPCTEST_ID);
        a.set_rpc_tag(RpcTag::slot(self.slot));
        match host.stack_mut().send(self.path, Dir::Down, m) {
            Ok(()) | Err(SendError::Dropped(_)) => Ok(()),
            Err(e) => Err(format!("sending a call: {e}").into()),
        }
    }

    /// The outcome of the call in flight, if it has come: `Ok(true)` for
    /// the exact echo, an error for anything else.
    fn outcome(&self, host: &mut Host) -> Result<bool, BoxError> {
        let Some(r) = host.stack_mut().recv(self.path, Dir::Up) else {
            return Ok(false);
        };
        let tag = r.anno().rpc_tag().ok_or("an outcome without a call tag")?;
        if tag.slot != self.slot {
            return Err(format!(
                "the outcome of call {} while call {} is in flight",
                tag.slot, self.slot
            )
            .into());
        }
        if tag.status != CallStatus::Ok {
            return Err(format!("call {} failed: {:?}", tag.slot, tag.status).into());
        }
        if r.as_slice() != self.request.as_slice() {
            return Err(format!(
                "call {}: a reply of {} bytes that is not the request's {} bytes",
                tag.slot,
                r.len(),
                self.request.len()
            )
            .into());
        }
        Ok(true)
    }
}

/// The RPC ping-pong's hosts and the client's calls.
struct Pair {
    hosts: Hosts,
    caller: Caller,
    /// The first wrong outcome, if any (a counted run reports it at the
    /// end).
    error: Option<BoxError>,
}

fn pair(sched: SchedKind, pin: bool, args: &RpcArgs) -> Result<Pair, BoxError> {
    let (a, b) = wire_pair(WireConfig::default());
    let mac = |n| Some(MacAddr([0x02, 0, 0, 0, 0, n]));
    let mut client = Host::new(config("10.0.0.1/24", mac(1), sched, args)?, a)?;
    let mut server = Host::new(config("10.0.0.2/24", mac(2), sched, args)?, b)?;
    server.rpc().server()?.register(XRPCTEST_ID, Echo)?;
    if pin {
        inline_rpc(&mut client, args)?;
        inline_rpc(&mut server, args)?;
    }
    let peer = server.rpc().peer()?;
    let caller = Caller::new(&client, peer, args)?;
    Ok(Pair {
        hosts: Hosts::new(client, server),
        caller,
        error: None,
    })
}

impl Pair {
    /// The first call: on the real clock, with time for the boot-id
    /// handshake and CHAN's resend.
    fn first_call(&mut self) -> Result<(), BoxError> {
        let Hosts { client, server, .. } = &mut self.hosts;
        self.caller.start(client)?;
        let t0 = Instant::now();
        while t0.elapsed() < FIRST_CALL_TIMEOUT {
            server.poll();
            client.poll();
            if self.caller.outcome(client)? {
                return Ok(());
            }
        }
        Err(format!(
            "the first call got no reply within {FIRST_CALL_TIMEOUT:?}\nclient:\n{}server:\n{}",
            client.report(),
            server.report()
        )
        .into())
    }

    /// One call; `Ok(false)` if its reply did not come in 8 polls of each
    /// host.
    fn round_trip(&mut self) -> Result<bool, BoxError> {
        self.caller.start(&mut self.hosts.client)?;
        let caller = &self.caller;
        self.hosts.exchange(|client| caller.outcome(client))
    }

    /// [`Pair::round_trip`] for a counted run: a wrong outcome is kept
    /// for the end and counts as lost.
    fn counted_round_trip(&mut self) -> bool {
        match self.round_trip() {
            Ok(ok) => ok,
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }
}

/// Both hosts in this process, on the in-memory wire.
pub fn run_memory(args: &Args, row: &mut dyn FnMut(&Result1)) -> Result<Vec<Result1>, BoxError> {
    let rpc = RpcArgs::of(args)?;
    let mut results = Vec::new();
    for (sched, pin) in configs(args, false)? {
        let mut p = pair(sched, pin, &rpc)?;
        p.first_call()?;
        if args.count_only {
            p.hosts.fake_clock();
        }
        for _ in 1..args.warmup {
            if !p.round_trip()? {
                return Err(format!(
                    "warm-up call {} did not complete in 8 polls of each host",
                    p.caller.slot
                )
                .into());
            }
        }
        let config = config_name(sched, pin);
        let r = if args.count_only {
            count(config, args.rounds, || p.counted_round_trip())
        } else {
            measure(config, args.rounds, || p.round_trip())?
        };
        if let Some(e) = p.error.take() {
            return Err(e);
        }
        // LDLP runs the stages one at a time (the modular reference):
        // the fast form serves the per-message scheduler only.
        if pin && sched == SchedKind::PerMessage {
            fast_form_ran(&p.hosts, args.rounds)?;
        }
        if r.rec.lost_count() > 0 {
            return Err(format!(
                "{} calls did not complete in 8 polls of each host",
                r.rec.lost_count()
            )
            .into());
        }
        row(&r);
        results.push(r);
    }
    Ok(results)
}

/// Checks that the measured calls ran through the fast form: on the
/// client's client path and the server's server path it handled at
/// least `rounds` messages each way (a short call or reply that declined
/// would run the inlined stages and be measured as such).
fn fast_form_ran(hosts: &Hosts, rounds: u64) -> Result<(), BoxError> {
    let paths = [
        ("client", &hosts.client, rpc_paths(&hosts.client)?.0),
        ("server", &hosts.server, rpc_paths(&hosts.server)?.1),
    ];
    for (who, h, path) in paths {
        let hits = h.stack().path(path).and_then(|p| p.fast_hits());
        if hits.is_none_or(|[down, up]| down < rounds || up < rounds) {
            return Err(format!(
                "--form pin: the fast form of the {who} path {} handled {hits:?} \
                 messages (down, up) in {rounds} round trips",
                path_names(h, path)
            )
            .into());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Over TAP/veth.

/// One call over TAP: `Ok(true)` once its exact reply came, an error if
/// none came within `timeout`.
fn tap_call(host: &mut Host, caller: &mut Caller, timeout: Duration) -> Result<bool, BoxError> {
    let t0 = Instant::now();
    caller.start(host)?;
    // Run the path (transmit) without a full poll: the reply cannot be
    // there yet.
    host.stack_mut().run_pending();
    loop {
        let left = timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return Err(format!("call {} got no reply within {timeout:?}", caller.slot).into());
        }
        host.wait(left.min(Duration::from_millis(20)))?;
        host.poll();
        if caller.outcome(host)? {
            return Ok(true);
        }
    }
}

impl RpcArgs {
    /// Builds the RPC host of `end`, specialized with `--form pin`.
    fn tap_host(&self, end: &End, who: &str) -> Result<Host, BoxError> {
        let mut host = end.host(who, |mac| config(&end.cidr(), Some(mac), end.sched, self))?;
        if end.pin {
            inline_rpc(&mut host, self)?;
        }
        Ok(host)
    }
}

impl TapPingPong for RpcArgs {
    type Peer = Peer;

    /// Answers calls until `stop`; sends how it is named as a peer when
    /// it is ready.
    fn serve(
        self,
        end: End,
        ready: mpsc::Sender<Peer>,
        stop: Arc<AtomicBool>,
    ) -> Result<String, BoxError> {
        let mut host = self.tap_host(&end, "server")?;
        host.rpc().server()?.register(XRPCTEST_ID, Echo)?;
        let _ = ready.send(host.rpc().peer()?);
        poll_until(&mut host, &stop)
    }

    /// The first call (boot ids; ARP over IP) and the rest of the
    /// warm-up, then the measured calls.
    fn client(
        self,
        end: End,
        peer: Peer,
        warmup: u64,
        rounds: u64,
        interrupted: Arc<AtomicBool>,
    ) -> Result<(Result1, String), BoxError> {
        let mut host = self.tap_host(&end, "client")?;
        let mut caller = Caller::new(&host, peer, &self)?;
        if let Err(e) = tap_call(&mut host, &mut caller, FIRST_CALL_TIMEOUT) {
            return Err(format!(
                "the first call to {peer}: {e} (topology?)\n{}",
                host.report()
            )
            .into());
        }
        for _ in 1..warmup {
            tap_call(&mut host, &mut caller, CALL_TIMEOUT)?;
        }
        let r = measure(config_name(end.sched, end.pin), rounds, || {
            if interrupted.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            tap_call(&mut host, &mut caller, CALL_TIMEOUT)
        })?;
        Ok((r, host.report()))
    }
}
