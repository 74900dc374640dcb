//! The TCP ping-pong of `pingpong_bench --transport tcp`: one connection with
//! `TCP_NODELAY` (RFC 896's Nagle off) on both ends, one octet each way per
//! round trip; the server's application echoes what it reads.
//!
//! A module of the `pingpong_bench` tool (`main.rs`).

use pathstack::host::Host;
use pathstack::inet::tcp::TcpConfig;
use pathstack::socket::ready;
use pathstack::socket::{SocketError, TcpListener, TcpStream};

/// Errors cross the hosts' threads.
type PingError = Box<dyn std::error::Error + Send + Sync>;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The options of both ends: the defaults with `TCP_NODELAY`.
pub fn nodelay() -> TcpConfig {
    TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    }
}

/// The server: a listener and the connection it accepted.
pub struct TcpEchoServer {
    listener: TcpListener,
    conn: Option<TcpStream>,
}

impl TcpEchoServer {
    /// Listens on `port`.
    pub fn listen(host: &mut Host, port: u16) -> Result<TcpEchoServer, SocketError> {
        let listener = host.tcp().listen_with(("0.0.0.0", port), 4, nodelay())?;
        Ok(TcpEchoServer {
            listener,
            conn: None,
        })
    }

    /// The accepted connection, if any.
    pub fn conn(&self) -> Option<TcpStream> {
        self.conn
    }

    /// Accepts the connection if it has come and echoes what it has read;
    /// whether it echoed anything.
    pub fn serve(&mut self, host: &mut Host) -> Result<bool, PingError> {
        if self.conn.is_none() {
            self.conn = ready(self.listener.accept(host))?.map(|(s, _)| s);
        }
        let Some(s) = self.conn else {
            return Ok(false);
        };
        let mut buf = [0u8; 64];
        let mut echoed = false;
        while let Some(n) = ready(s.read(host, &mut buf))? {
            if n == 0 {
                // The client is gone: wait for the next one.
                let _ = host.tcp().close(s);
                self.conn = None;
                break;
            }
            // 1-octet rounds never fill the 256 KB send buffer.
            if ready(s.write(host, &buf[..n]))? != Some(n) {
                return Err("the echo did not fit the send buffer".into());
            }
            echoed = true;
        }
        Ok(echoed)
    }
}

/// The client's end: the connection and the octet of the current round.
pub struct TcpPinger {
    /// The connection.
    pub s: TcpStream,
    seq: u8,
}

impl TcpPinger {
    /// Starts connecting to `peer`:`port`.
    pub fn connect(host: &mut Host, peer: Ipv4Addr, port: u16) -> Result<TcpPinger, SocketError> {
        let s = host
            .tcp()
            .connect_with("0.0.0.0:0", SocketAddrV4::new(peer, port), nodelay())?;
        Ok(TcpPinger { s, seq: 0 })
    }

    /// Sends the next round's octet (the round number mod 256, so that an
    /// echo out of step is seen).
    pub fn send(&mut self, host: &mut Host) -> Result<(), PingError> {
        self.seq = self.seq.wrapping_add(1);
        match ready(self.s.write(host, &[self.seq]))? {
            Some(1) => Ok(()),
            _ => Err("the send buffer is full with one octet in flight".into()),
        }
    }

    /// `Ok(true)` once the round's echo has been read.
    pub fn echoed(&mut self, host: &mut Host) -> Result<bool, PingError> {
        let mut b = [0u8; 1];
        match ready(self.s.read(host, &mut b))? {
            None => Ok(false),
            Some(0) => Err("the server closed the connection".into()),
            Some(_) if b[0] == self.seq => Ok(true),
            Some(_) => {
                Err(format!("echo {} out of step with round octet {}", b[0], self.seq).into())
            }
        }
    }
}
