//! The classic TCP services of a host, on pathstack's non-blocking TCP
//! API: echo (port 7, RFC 862), discard (port 9, RFC 863) and chargen
//! (port 19, RFC 864), each serving many connections at once; and a
//! client that echoes a file through a peer's echo service and checks it.

use pathstack::host::Host;
use pathstack::inet::tcp::Shutdown;
use pathstack::socket::ready;
use pathstack::socket::{SocketError, TcpListener, TcpStream};
use std::net::SocketAddr;

/// Echo's port (RFC 862).
pub const ECHO: u16 = 7;
/// Discard's port (RFC 863).
pub const DISCARD: u16 = 9;
/// Chargen's port (RFC 864).
pub const CHARGEN: u16 = 19;

/// Octets one echo connection holds while its peer is not reading.
const ECHO_HOLD: usize = 64 * 1024;

/// RFC 864's line: 72 printable characters then CR LF.
const LINE: usize = 74;

/// The chargen stream's octet at `offset` (RFC 864): line `n` holds the 72
/// characters of the 95 printable ASCII ones (32–126) starting at the
/// `n`-th, wrapping, then CR LF.
pub fn chargen_byte(offset: u64) -> u8 {
    let line = offset / LINE as u64;
    match (offset % LINE as u64) as usize {
        72 => b'\r',
        73 => b'\n',
        col => 32 + ((line + col as u64) % 95) as u8,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Echo,
    Discard,
    Chargen,
}

struct Conn {
    s: TcpStream,
    kind: Kind,
    /// Echo: octets read, not yet written back.
    pending: Vec<u8>,
    /// Chargen: octets of the stream sent.
    offset: u64,
    /// The peer closed its side.
    eof: bool,
}

/// Counters of the services.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServiceStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections ended by an error (reset, timeout).
    pub failed: u64,
    /// Octets echoed.
    pub echoed: u64,
    /// Octets discarded.
    pub discarded: u64,
    /// Octets of chargen sent.
    pub generated: u64,
}

/// The three listeners and their connections.
pub struct TcpServices {
    listeners: Vec<(TcpListener, Kind)>,
    conns: Vec<Conn>,
    /// What they did.
    pub stats: ServiceStats,
}

impl TcpServices {
    /// Listens on the three ports.
    pub fn open(host: &mut Host) -> Result<TcpServices, SocketError> {
        let mut listeners = Vec::new();
        for (port, kind) in [
            (ECHO, Kind::Echo),
            (DISCARD, Kind::Discard),
            (CHARGEN, Kind::Chargen),
        ] {
            listeners.push((host.tcp().listen(("0.0.0.0", port), 128)?, kind));
        }
        Ok(TcpServices {
            listeners,
            conns: Vec::new(),
            stats: ServiceStats::default(),
        })
    }

    /// Accepts new connections and moves data on every one; returns
    /// whether anything happened.
    pub fn poll(&mut self, host: &mut Host) -> bool {
        let mut busy = false;
        for &(l, kind) in &self.listeners {
            while let Ok((s, _)) = l.accept(host) {
                self.stats.accepted += 1;
                self.conns.push(Conn {
                    s,
                    kind,
                    pending: Vec::new(),
                    offset: 0,
                    eof: false,
                });
                busy = true;
            }
        }
        let stats = &mut self.stats;
        self.conns.retain_mut(|c| match serve(host, c, stats) {
            Ok((moved, keep)) => {
                busy |= moved;
                if !keep {
                    let _ = host.tcp().close(c.s);
                }
                keep
            }
            Err(_) => {
                stats.failed += 1;
                let _ = host.tcp().abort(c.s);
                false
            }
        });
        busy
    }
}

/// One connection's work: `(anything moved, keep it open)`.
fn serve(host: &mut Host, c: &mut Conn, st: &mut ServiceStats) -> std::io::Result<(bool, bool)> {
    let mut moved = false;
    let mut buf = [0u8; 16 * 1024];
    // Read what the application can take now.
    while !c.eof {
        let room = match c.kind {
            Kind::Echo => ECHO_HOLD.saturating_sub(c.pending.len()).min(buf.len()),
            _ => buf.len(),
        };
        if room == 0 {
            break;
        }
        match ready(c.s.read(host, &mut buf[..room]))? {
            Some(0) => c.eof = true,
            Some(n) => {
                moved = true;
                match c.kind {
                    Kind::Echo => c.pending.extend_from_slice(&buf[..n]),
                    Kind::Discard => st.discarded += n as u64,
                    Kind::Chargen => {} // input is ignored (RFC 864)
                }
            }
            None => break,
        }
    }
    match c.kind {
        Kind::Echo => {
            while !c.pending.is_empty() {
                match ready(c.s.write(host, &c.pending))? {
                    Some(n) => {
                        c.pending.drain(..n);
                        st.echoed += n as u64;
                        moved = true;
                    }
                    None => break,
                }
            }
            if c.eof && c.pending.is_empty() {
                host.tcp().shutdown(&c.s, Shutdown::Write)?;
                return Ok((moved, false));
            }
        }
        Kind::Discard => {
            if c.eof {
                return Ok((moved, false));
            }
        }
        Kind::Chargen => {
            if c.eof {
                return Ok((moved, false));
            }
            loop {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = chargen_byte(c.offset + i as u64);
                }
                match ready(c.s.write(host, &buf))? {
                    Some(n) if n > 0 => {
                        c.offset += n as u64;
                        st.generated += n as u64;
                        moved = true;
                    }
                    _ => break,
                }
            }
        }
    }
    Ok((moved, true))
}

/// A client that sends `data` to a peer's echo service and reads it back.
pub struct EchoClient {
    s: TcpStream,
    data: Vec<u8>,
    sent: usize,
    got: Vec<u8>,
    shut: bool,
    /// The peer's address.
    pub peer: SocketAddr,
}

impl EchoClient {
    /// Connects to `peer`.
    pub fn connect(
        host: &mut Host,
        peer: SocketAddr,
        data: Vec<u8>,
    ) -> Result<EchoClient, SocketError> {
        let s = host.tcp().connect(peer)?;
        Ok(EchoClient {
            s,
            data,
            sent: 0,
            got: Vec::new(),
            shut: false,
            peer,
        })
    }

    /// Moves data; `Ok(Some(matches))` once the echo has ended.
    pub fn poll(&mut self, host: &mut Host) -> std::io::Result<Option<bool>> {
        if !host.tcp().is_connected(&self.s)? {
            return Ok(None);
        }
        while self.sent < self.data.len() {
            match ready(self.s.write(host, &self.data[self.sent..]))? {
                Some(n) => self.sent += n,
                None => break,
            }
        }
        if self.sent == self.data.len() && !self.shut {
            host.tcp().shutdown(&self.s, Shutdown::Write)?;
            self.shut = true;
        }
        let mut buf = [0u8; 16 * 1024];
        loop {
            match ready(self.s.read(host, &mut buf))? {
                Some(0) => return Ok(Some(self.got == self.data)),
                Some(n) => self.got.extend_from_slice(&buf[..n]),
                None => return Ok(None),
            }
        }
    }

    /// Octets sent and received so far.
    pub fn progress(&self) -> (usize, usize) {
        (self.sent, self.got.len())
    }

    /// Closes the connection.
    pub fn close(self, host: &mut Host) {
        let _ = host.tcp().close(self.s);
    }
}
