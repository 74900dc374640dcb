//! The hyper HTTP/1.1 server of [`pathstack_tools::http`] on pathstack's
//! tokio API, on a TAP device (the server of `scripts/bench-http.sh`).
//!
//! ```text
//! cargo run --release -p pathstack-tools --bin http -- --tap NAME --ip ADDR/PREFIX \
//!     [--netns NS] [--port 80] [--gateway ADDR] [--seconds S]
//! ```
//!
//! On SIGINT/SIGTERM (or after `--seconds`) it prints how many connections
//! it served and the stack's statistics.

use clap::Parser;
use pathstack_tools::http::serve;
use pathstack_tools::tap_net;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(about = "An HTTP/1.1 server (hyper) on pathstack's tokio API, on a TAP device")]
struct Args {
    #[command(flatten)]
    tap: tap_net::TapArgs,
    /// TCP port to serve on.
    #[arg(long, default_value_t = 80)]
    port: u16,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tap_net::run_current_thread("http", run(args))
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let stop = args.tap.stop()?;
    let net = args.tap.open("http", args.port)?;
    let driver = net.spawn();
    let served = serve(&net, args.port, stop.wait()).await?;
    driver.abort();
    println!("served {served} connections");
    print!("{}", net.with_host(|h| h.report()));
    Ok(())
}
