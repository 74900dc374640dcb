//! A UDP echo server and its client written for `tokio::net::UdpSocket`,
//! ported to pathstack: this file and its twin, `tokio_echo_twin.rs` (the
//! same program on the kernel's sockets), differ only in the lines marked
//! `// port` and the block between `// port: begin` and `// port: end` —
//! the `use` line and the sockets' construction. The test
//! `crates/pathstack/tests/tokio_port.rs` checks that and runs both.
//!
//! The differences that remain between the two APIs are listed in the
//! docs of `pathstack::tokio`.
//!
//! ```text
//! cargo run --example tokio_echo_port
//! ```

use pathstack::tokio::UdpSocket; // port
use std::io;
use std::net::SocketAddr;

/// The echo server: answers every datagram with itself.
async fn echo(sock: UdpSocket) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    loop {
        let (n, peer) = sock.recv_from(&mut buf).await?;
        sock.send_to(&buf[..n], peer).await?;
    }
}

/// Sends `rounds` datagrams to `server` and checks each echo.
async fn client(sock: UdpSocket, server: SocketAddr, rounds: u32) -> io::Result<u32> {
    sock.connect(server).await?;
    let mut buf = [0u8; 64];
    for i in 0..rounds {
        let msg = format!("echo {i}");
        sock.send(msg.as_bytes()).await?;
        let n = sock.recv(&mut buf).await?;
        if &buf[..n] != msg.as_bytes() {
            return Err(io::Error::other(format!("round {i}: wrong echo")));
        }
    }
    Ok(rounds)
}

// port: begin
/// Two hosts on an in-memory wire, 10.0.0.1 and 10.0.0.2, their drivers
/// running on the current runtime.
fn nets() -> (pathstack::tokio::Net, pathstack::tokio::Net) {
    use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    use pathstack::host::Host;
    let (a, b) = memory_pair(MemoryConfig::default());
    let host = |cidr: &str, dev| Host::new(cidr.parse().unwrap(), dev).unwrap();
    let (a, b) = (
        pathstack::tokio::Net::new(host("10.0.0.1/24", a)),
        pathstack::tokio::Net::new(host("10.0.0.2/24", b)),
    );
    a.spawn();
    b.spawn();
    (a, b)
}
// port: end

/// Runs the server and the client for `rounds` round trips.
pub async fn run(rounds: u32) -> io::Result<u32> {
    let (client_net, server_net) = nets(); // port
    let server = UdpSocket::bind(&server_net, "0.0.0.0:7").await?; // port
    let server_addr: SocketAddr = "10.0.0.2:7".parse().unwrap(); // port
    let sock = UdpSocket::bind(&client_net, "0.0.0.0:0").await?; // port
    let echo = tokio::spawn(echo(server));
    let n = client(sock, server_addr, rounds).await?;
    echo.abort();
    Ok(n)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> io::Result<()> {
    let n = run(1000).await?;
    println!("{n} echoes");
    Ok(())
}
