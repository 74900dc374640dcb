//! The twin of `http.rs` on the Linux kernel's TCP: the same hyper
//! service ([`http::respond`]) served from a `tokio::net::TcpListener`,
//! with hyper's defaults and Nagle on, on a current-thread runtime as the
//! example runs. `scripts/bench-http.sh` measures both with `wrk`.
//!
//! ```text
//! cargo run --release -p pathstack-tools --bin http_kernel_twin -- --listen 10.77.1.4:80 [--seconds S]
//! ```

use pathstack_tools::http;

use clap::Parser;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;

#[derive(Parser, Debug)]
#[command(about = "http.rs's hyper service on the kernel's TCP (tokio::net)")]
struct Args {
    /// Address and port to listen on.
    #[arg(long)]
    listen: SocketAddr,
    /// Stop after this many seconds (default: when killed).
    #[arg(long)]
    seconds: Option<u64>,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(args.listen).await?;
        println!("http_kernel_twin on {}", listener.local_addr()?);
        let forever = Duration::from_secs(u64::MAX / 4);
        let stop = tokio::time::sleep(args.seconds.map_or(forever, Duration::from_secs));
        tokio::pin!(stop);
        let mut accepted = 0u64;
        loop {
            let (stream, peer) = tokio::select! {
                got = listener.accept() => got?,
                () = &mut stop => break,
            };
            accepted += 1;
            tokio::spawn(async move {
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(http::respond));
                if let Err(e) = conn.await {
                    eprintln!("http_kernel_twin: connection from {peer}: {e}");
                }
            });
        }
        println!("served {accepted} connections");
        Ok(())
    })
}
