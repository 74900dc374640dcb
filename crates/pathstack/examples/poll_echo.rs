//! A synchronous echo server over many sockets, one thread, one wait:
//! `Host::poll_ready` runs the stack until any registered socket is
//! ready, as a `mio` or `poll(2)` loop does, and the handles' calls say
//! `WouldBlock` when there is nothing more. The server and a client are
//! two hosts on the in-memory wire, each on its own thread.
//!
//! `cargo run -p pathstack --example poll_echo`

use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::Host;
use pathstack::socket::{Events, Interest, Source, TcpStream, Token, UdpSocket};
use std::io::{self, ErrorKind};
use std::time::Duration;

const PORTS: [u16; 4] = [7001, 7002, 7003, 7004];
const LISTENER: Token = Token(usize::MAX);

fn serve(mut host: Host) -> io::Result<()> {
    // Every socket is registered with a token naming it.
    let udp: Vec<UdpSocket> = PORTS
        .iter()
        .map(|&p| host.udp().bind(("0.0.0.0", p)))
        .collect::<Result<_, _>>()?;
    for (i, s) in udp.iter().enumerate() {
        host.register(*s, Token(i), Interest::READABLE)?;
    }
    let listener = host.tcp().listen("0.0.0.0:7000", 16)?;
    host.register(listener, LISTENER, Interest::READABLE)?;
    let mut streams: Vec<TcpStream> = Vec::new();

    let mut events = Events::with_capacity(64);
    let mut buf = [0u8; 1500];
    // Until the client has been quiet for a second.
    while host.poll_ready(&mut events, Some(Duration::from_secs(1)))? > 0 {
        for ev in &events {
            match ev.token() {
                LISTENER => {
                    let (s, peer) = listener.accept(&mut host)?;
                    println!("server: connection from {peer}");
                    host.register(s, Token(PORTS.len() + streams.len()), Interest::READABLE)?;
                    streams.push(s);
                }
                Token(i) if i < PORTS.len() => {
                    // Drain the socket: WouldBlock says it is empty.
                    loop {
                        match udp[i].recv_from(&mut host, &mut buf) {
                            Ok((n, from)) => udp[i].send_to(&mut host, &buf[..n], from)?,
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(e) => return Err(e),
                        };
                    }
                }
                Token(i) => {
                    let s = streams[i - PORTS.len()];
                    match s.read(&mut host, &mut buf) {
                        Ok(0) => {
                            host.deregister(Source::Tcp(s))?;
                            host.tcp().close(s)?;
                        }
                        // (A reply this small always fits the send buffer.)
                        Ok(n) => drop(s.write(&mut host, &buf[..n])?),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
    Ok(())
}

/// Waits on `host` until `f` stops saying `WouldBlock`.
fn until_ready<T>(host: &mut Host, mut f: impl FnMut(&mut Host) -> io::Result<T>) -> io::Result<T> {
    loop {
        match f(host) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                host.poll();
                host.wait(Duration::from_millis(10))?;
            }
            got => return got,
        }
    }
}

fn main() -> io::Result<()> {
    let (a, b) = wire_pair(WireConfig::default());
    let server = Host::new("10.0.0.2/24".parse().unwrap(), b)?;
    let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a)?;
    let server = std::thread::spawn(move || serve(server));

    let mut buf = [0u8; 64];
    let sock = client.udp().bind("0.0.0.0:0")?;
    for port in PORTS {
        sock.send_to(
            &mut client,
            format!("hello {port}").as_bytes(),
            ("10.0.0.2", port),
        )?;
        let (n, from) = until_ready(&mut client, |h| sock.recv_from(h, &mut buf))?;
        println!(
            "client: {from} echoed {:?}",
            String::from_utf8_lossy(&buf[..n])
        );
    }
    let stream = client.tcp().connect("10.0.0.2:7000")?;
    until_ready(&mut client, |h| stream.write(h, b"hello over TCP"))?;
    let n = until_ready(&mut client, |h| stream.read(h, &mut buf))?;
    println!(
        "client: TCP echoed {:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    client.tcp().close(stream)?;
    // Keep answering the server (the FIN handshake) until it is done.
    while !server.is_finished() {
        client.poll();
        client.wait(Duration::from_millis(10))?;
    }
    server.join().expect("the server thread")
}
