//! The start-up shared by the tokio servers on a TAP device (the `http`
//! tool, the `udp_echo` example): their common command-line options
//! ([`TapArgs`], flattened into each one's own), opening the TAP device and the [`Net`] on it
//! ([`TapArgs::open`]), when to stop ([`Stop`]: SIGINT, SIGTERM or
//! `--seconds`), and the current-thread runtime `main` runs them on
//! ([`run_current_thread`]).
//!
//! In the tools' library so that the `http` tool and the `udp_echo`
//! example share it.

use pathstack::devices::{TapDevice, TapOptions};
use pathstack::host::HostConfig;
use pathstack::inet::MacAddr;
use pathstack::tokio::Net;
use std::error::Error;
use std::future::Future;
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a waiting example wakes to notice a signal or the deadline.
pub const STOP_POLL: Duration = Duration::from_millis(200);

/// The TAP device, the address on it and how long to run.
#[derive(clap::Args, Debug)]
pub struct TapArgs {
    /// TAP interface name (created if absent).
    #[arg(long)]
    pub tap: String,
    /// Our address and prefix length, e.g. 10.77.1.1/24.
    #[arg(long)]
    pub ip: String,
    /// Network namespace to open the TAP device in.
    #[arg(long)]
    pub netns: Option<String>,
    /// Default gateway.
    #[arg(long)]
    pub gateway: Option<Ipv4Addr>,
    /// Stop after this many seconds (default: on SIGINT/SIGTERM).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// TAP offloads (vnet header: checksum, TSO out, GRO in): on or off.
    #[arg(long, value_name = "on|off", default_value = "off",
          value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set,
          hide_possible_values = true)]
    pub offload: bool,
}

impl TapArgs {
    /// Opens the TAP device (in `--netns` if given) and a [`Net`] with our
    /// address on it, and says so on stdout: `NAME on ADDR:PORT on TAP
    /// (mac …, mtu …)`, `port` being the one the example serves on.
    pub fn open(&self, name: &str, port: u16) -> Result<Net, Box<dyn Error>> {
        let mut opts = TapOptions::new().offload(self.offload);
        if let Some(ns) = &self.netns {
            opts = opts.netns(ns.clone());
        }
        let tap = TapDevice::open(&self.tap, opts)?;
        let mut cfg = HostConfig::parse(&self.ip)?;
        cfg.gateway = self.gateway;
        cfg.mac = Some(MacAddr(tap.mac()));
        println!(
            "{name} on {}:{port} on {} (mac {}, mtu {})",
            cfg.addr,
            tap.name(),
            MacAddr(tap.mac()),
            tap.mtu()
        );
        Ok(Net::tap(cfg, tap)?)
    }

    /// When to stop: on SIGINT or SIGTERM, or after `--seconds`.
    pub fn stop(&self) -> Result<Stop, Box<dyn Error>> {
        let signalled = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&signalled))?;
        signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&signalled))?;
        Ok(Stop {
            signalled,
            deadline: self.seconds.map(Duration::from_secs),
            started: tokio::time::Instant::now(),
        })
    }
}

/// Whether an example should stop: a signal came or its time is up.
pub struct Stop {
    signalled: Arc<AtomicBool>,
    deadline: Option<Duration>,
    started: tokio::time::Instant,
}

impl Stop {
    /// Whether it is time to stop.
    pub fn now(&self) -> bool {
        self.signalled.load(Ordering::Relaxed)
            || self.deadline.is_some_and(|d| self.started.elapsed() >= d)
    }

    /// Resolves once it is time to stop, checking every [`STOP_POLL`].
    pub async fn wait(&self) {
        while !self.now() {
            tokio::time::sleep(STOP_POLL).await;
        }
    }
}

/// Runs `fut` on a current-thread tokio runtime (one single-threaded stack
/// per core), reporting a failure on stderr prefixed with `name`.
pub fn run_current_thread<F>(name: &str, fut: F) -> ExitCode
where
    F: Future<Output = Result<(), Box<dyn Error>>>,
{
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(fut) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}
