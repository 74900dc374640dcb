//! The tokio socket API's parity with `tokio::net::UdpSocket`, over the
//! in-memory wire: address forms, `connect` on a bound socket, peek,
//! truncation, the `try_`, `poll_` and readiness calls, options, a handle
//! used on another host, and receives cancelled without loss.
#![cfg(feature = "tokio")]

use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::Host;
use pathstack::socket::SocketError;
use pathstack::tokio::{Net, UdpSocket};
use std::future::poll_fn;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;
use tokio::io::ReadBuf;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

fn addr(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddrV4::new(ip.into(), port).into()
}

fn nets() -> (Net, Net) {
    let (da, db) = wire_pair(WireConfig::default());
    let a = Net::new(Host::new("10.0.0.1/24".parse().unwrap(), da).unwrap());
    let b = Net::new(Host::new("10.0.0.2/24".parse().unwrap(), db).unwrap());
    a.spawn();
    b.spawn();
    (a, b)
}

#[tokio::test]
async fn address_forms_connect_peek_and_truncation() {
    let (a, b) = nets();
    let srv = UdpSocket::bind(&b, "0.0.0.0:7").await.unwrap();
    let cli = UdpSocket::bind(&a, (IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0))
        .await
        .unwrap();
    let other = UdpSocket::bind(&a, SocketAddrV4::new([10, 0, 0, 1].into(), 9))
        .await
        .unwrap();
    assert_eq!(other.local_addr().unwrap(), addr([10, 0, 0, 1], 9));
    let e = UdpSocket::bind(&a, "[::]:7").await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("address family not supported"),
        "{e}"
    );

    assert_eq!(cli.send_to(b"0123456789", "10.0.0.2:7").await.unwrap(), 10);
    let mut small = [0u8; 4];
    let (n, from) = timeout(LIMIT, srv.peek_from(&mut small))
        .await
        .unwrap()
        .unwrap();
    // Bound to 0.0.0.0 it says so, as tokio's does; its datagrams come
    // from the host's address.
    let port = cli.local_addr().unwrap().port();
    assert_eq!(
        cli.local_addr().unwrap(),
        addr([0, 0, 0, 0], port),
        "local_addr of a 0.0.0.0 bind"
    );
    assert_eq!((n, from), (4, addr([10, 0, 0, 1], port)));
    let got = srv.recv_from_trunc(&mut small).await.unwrap();
    assert!(got.truncated());
    assert_eq!((got.len, got.datagram_len, &small), (4, 10, b"0123"));

    // connect is a call on the bound socket; it keeps its port.
    let port = cli.local_addr().unwrap().port();
    assert_eq!(
        cli.peer_addr().unwrap_err().kind(),
        io::ErrorKind::NotConnected
    );
    cli.connect(("10.0.0.2", 7)).await.unwrap();
    assert_eq!(cli.peer_addr().unwrap(), addr([10, 0, 0, 2], 7));
    assert_eq!(cli.local_addr().unwrap().port(), port);
    cli.send(b"hi").await.unwrap();
    let mut buf = [0u8; 16];
    let (n, peer) = timeout(LIMIT, srv.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    srv.send_to(&buf[..n], peer).await.unwrap();
    let n = timeout(LIMIT, cli.recv(&mut buf)).await.unwrap().unwrap();
    assert_eq!(&buf[..n], b"hi");
}

#[tokio::test]
async fn try_poll_and_readiness_calls() {
    let (a, b) = nets();
    let srv = UdpSocket::bind(&b, "0.0.0.0:7").await.unwrap();
    let cli = UdpSocket::bind(&a, "0.0.0.0:0").await.unwrap();
    let dst = addr([10, 0, 0, 2], 7);
    timeout(LIMIT, cli.writable()).await.unwrap().unwrap();
    assert_eq!(cli.try_send_to(b"one", dst).unwrap(), 3);
    timeout(LIMIT, srv.readable()).await.unwrap().unwrap();
    let mut buf = [0u8; 16];
    let (n, from) = srv.try_recv_from(&mut buf).unwrap();
    let me = addr([10, 0, 0, 1], cli.local_addr().unwrap().port());
    assert_eq!((&buf[..n], from), (&b"one"[..], me));
    assert_eq!(
        srv.try_recv_from(&mut buf).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );

    let n = poll_fn(|cx| cli.poll_send_to(cx, b"two", dst))
        .await
        .unwrap();
    assert_eq!(n, 3);
    let mut storage = [0u8; 16];
    let mut rb = ReadBuf::new(&mut storage);
    let from = timeout(LIMIT, poll_fn(|cx| srv.poll_recv_from(cx, &mut rb)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rb.filled(), b"two");
    assert_eq!(from, me);

    cli.set_ttl(9).unwrap();
    assert_eq!(cli.ttl().unwrap(), 9);
    let e = cli.send_to(b"x", "10.0.0.255:7").await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    cli.set_broadcast(true).unwrap();
    assert!(cli.broadcast().unwrap());
    cli.send_to(b"all", "10.0.0.255:7").await.unwrap();
    let (n, _) = timeout(LIMIT, srv.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"all");
}

#[tokio::test]
async fn a_handle_on_another_net_is_refused() {
    let (a, b) = nets();
    let sa = UdpSocket::bind(&a, "0.0.0.0:7").await.unwrap();
    let _sb = UdpSocket::bind(&b, "0.0.0.0:7").await.unwrap();
    let handle = sa.handle();
    let e = b
        .with_host(|h| h.udp().send_to(&handle, b"x", "10.0.0.1:7"))
        .unwrap_err();
    assert!(matches!(e, SocketError::WrongHost { .. }), "{e:?}");
    assert_eq!(io::Error::from(e).kind(), io::ErrorKind::InvalidInput);
    assert!(a.with_host(|h| h.udp().local_addr(&handle)).is_ok());
}

#[tokio::test]
async fn cancelled_receives_lose_no_datagram() {
    let (a, b) = nets();
    let srv = UdpSocket::bind(&b, "0.0.0.0:7").await.unwrap();
    let cli = UdpSocket::bind(&a, "0.0.0.0:0").await.unwrap();
    let sender = tokio::spawn(async move {
        for i in 0..200u32 {
            cli.send_to(&i.to_be_bytes(), "10.0.0.2:7").await.unwrap();
            if i % 8 == 7 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        cli
    });
    let mut got = Vec::new();
    let (mut buf, mut peeked) = ([0u8; 4], [0u8; 4]);
    let deadline = tokio::time::Instant::now() + LIMIT;
    while got.len() < 200 && tokio::time::Instant::now() < deadline {
        // Most of these receives are cancelled by the short timeout.
        tokio::select! {
            r = srv.recv_from(&mut buf) => {
                assert_eq!(r.unwrap().0, 4);
                got.push(u32::from_be_bytes(buf));
            }
            r = srv.peek_from(&mut peeked) => { r.unwrap(); }
            () = tokio::time::sleep(Duration::from_micros(50)) => {}
        }
    }
    let _cli = sender.await.unwrap();
    assert_eq!(got, (0..200).collect::<Vec<_>>());
}
