//! The classic TCP services of a host, on pathstack's non-blocking TCP
//! API: echo (port 7, RFC 862), discard (port 9, RFC 863) and chargen
//! (port 19, RFC 864), each serving many connections at once; and a
//! client that echoes a file through a peer's echo service and checks it.

use pathstack::host::Host;
use pathstack::inet::tcp::Shutdown;
use pathstack::socket::ready;
use pathstack::socket::{SocketError, TcpListener, TcpStream};
use std::collections::VecDeque;
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

/// The chargen stream repeats after 95 lines (each line starts one
/// character later, of 95).
const PERIOD: usize = LINE * 95;

/// Octets a service reads or writes in one call: large, so that a bulk
/// measurement through these services measures the stack, not the
/// service's calls (issue 28, item 5).
const CHUNK: usize = 64 * 1024;

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

/// Chargen's stream from `offset`, one chunk of it, out of `pattern`
/// (the stream from 0, `PERIOD + CHUNK` octets).
fn chargen_from(pattern: &[u8], offset: u64) -> &[u8] {
    let at = (offset % PERIOD as u64) as usize;
    &pattern[at..at + CHUNK]
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
    /// Echo: octets read, not yet written back (a ring, so a partial
    /// write moves nothing).
    pending: VecDeque<u8>,
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
    /// One read buffer for every connection.
    scratch: Box<[u8]>,
    /// Chargen's stream from offset 0, one period plus a chunk, so the
    /// stream from any offset is one slice of it.
    pattern: Box<[u8]>,
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
            scratch: vec![0; CHUNK].into(),
            pattern: (0..(PERIOD + CHUNK) as u64).map(chargen_byte).collect(),
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
                    pending: VecDeque::new(),
                    offset: 0,
                    eof: false,
                });
                busy = true;
            }
        }
        let stats = &mut self.stats;
        let (buf, pattern) = (&mut self.scratch[..], &self.pattern[..]);
        self.conns
            .retain_mut(|c| match serve(host, c, buf, pattern, stats) {
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

/// One connection's work: `(anything moved, keep it open)`. `buf` is
/// the read buffer, `pattern` chargen's stream (`TcpServices::pattern`).
fn serve(
    host: &mut Host,
    c: &mut Conn,
    buf: &mut [u8],
    pattern: &[u8],
    st: &mut ServiceStats,
) -> std::io::Result<(bool, bool)> {
    let mut moved = false;
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
                    Kind::Echo => c.pending.extend(&buf[..n]),
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
                let (front, back) = c.pending.as_slices();
                let bufs = [std::io::IoSlice::new(front), std::io::IoSlice::new(back)];
                match ready(c.s.write_vectored(host, &bufs))? {
                    Some(0) => break,
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
                match ready(c.s.write(host, chargen_from(pattern, c.offset)))? {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_gives_the_stream_from_any_offset() {
        let pattern: Vec<u8> = (0..(PERIOD + CHUNK) as u64).map(chargen_byte).collect();
        for offset in [0, 1, 73, 74, PERIOD as u64 - 1, PERIOD as u64, 1_000_003] {
            let got = chargen_from(&pattern, offset);
            assert_eq!(got.len(), CHUNK);
            for (i, &b) in got.iter().enumerate().step_by(97) {
                assert_eq!(b, chargen_byte(offset + i as u64), "offset {offset} + {i}");
            }
        }
    }
}
