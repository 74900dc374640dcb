//! A UDP echo server and its client written for `tokio::net::UdpSocket`:
//! the twin of `tokio_echo_port.rs`, which runs the same program on
//! pathstack. They differ only in the lines marked `// port` and the block
//! between `// port: begin` and `// port: end`.
//!
//! ```text
//! cargo run --example tokio_echo_twin
//! ```

use std::io;
use std::net::SocketAddr;
use tokio::net::UdpSocket; // port

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
// port: end

/// Runs the server and the client for `rounds` round trips.
pub async fn run(rounds: u32) -> io::Result<u32> {
    let server = UdpSocket::bind("127.0.0.1:0").await?; // port
    let server_addr: SocketAddr = server.local_addr()?; // port
    let sock = UdpSocket::bind("127.0.0.1:0").await?; // port
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
