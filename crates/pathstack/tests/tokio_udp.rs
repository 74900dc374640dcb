//! The tokio socket API end to end over the in-memory wire: two hosts,
//! each driven by its own task on one current-thread runtime. Every wait
//! is under `tokio::time::timeout`, so a lost wake-up fails the test
//! instead of hanging it.
#![cfg(feature = "tokio")]

#[path = "support/wire_nets.rs"]
mod wire_nets;

use pathstack::tokio::{Net, UdpSocket};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::timeout;
use wire_nets::{addr, A, B};

const LIMIT: Duration = Duration::from_secs(10);

/// Two hosts on a wire, their drivers spawned.
fn nets() -> (Net, Net) {
    let (a, b) = wire_nets::nets();
    a.spawn();
    b.spawn();
    (a, b)
}

/// An echo server on `net` port 7; returns its task.
async fn echo_server(net: &Net) -> tokio::task::JoinHandle<io::Result<()>> {
    let sock = UdpSocket::bind(net, addr(Ipv4Addr::UNSPECIFIED, 7))
        .await
        .unwrap();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 70_000];
        loop {
            let (n, peer) = sock.recv_from(&mut buf).await?;
            sock.send_to(&buf[..n], peer).await?;
        }
    })
}

#[tokio::test]
async fn echo_two_hundred_round_trips_with_send_to_recv_from() {
    let (a, b) = nets();
    let server = echo_server(&b).await;
    let client = UdpSocket::bind(&a, addr(A, 0)).await.unwrap();
    let local = client.local_addr().unwrap();
    assert_eq!(local.ip(), std::net::IpAddr::V4(A));
    assert_ne!(local.port(), 0);
    let mut buf = [0u8; 128];
    for i in 0..200u32 {
        let msg = format!("round trip {i}");
        client.send_to(msg.as_bytes(), addr(B, 7)).await.unwrap();
        let (n, from) = timeout(LIMIT, client.recv_from(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("no echo of {i}\n{}", b.with_host(|h| h.report())))
            .unwrap();
        assert_eq!(&buf[..n], msg.as_bytes());
        assert_eq!(from, addr(B, 7));
    }
    assert!(!server.is_finished(), "the echo server stopped: {server:?}");
}

#[tokio::test]
async fn connected_socket_send_and_recv() {
    let (a, b) = nets();
    let _server = echo_server(&b).await;
    let sock = UdpSocket::bind(&a, addr(Ipv4Addr::UNSPECIFIED, 5555))
        .await
        .unwrap();
    sock.connect(addr(B, 7)).await.unwrap();
    assert_eq!(sock.peer_addr().unwrap(), addr(B, 7));
    assert_eq!(sock.local_addr().unwrap(), addr(A, 5555));
    let mut buf = [0u8; 64];
    for i in 0..100u32 {
        let msg = i.to_be_bytes();
        assert_eq!(sock.send(&msg).await.unwrap(), 4);
        let n = timeout(LIMIT, sock.recv(&mut buf))
            .await
            .expect("echo on the connected socket")
            .unwrap();
        assert_eq!(&buf[..n], &msg);
    }
}

#[tokio::test]
async fn large_datagrams_are_fragmented_and_reassembled() {
    let (a, b) = nets();
    let _server = echo_server(&b).await;
    let client = UdpSocket::bind(&a, addr(Ipv4Addr::UNSPECIFIED, 0))
        .await
        .unwrap();
    let mut buf = vec![0u8; 70_000];
    for len in [1473usize, 9000, 30_000] {
        let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        client.send_to(&data, addr(B, 7)).await.unwrap();
        let (n, _) = timeout(LIMIT, client.recv_from(&mut buf))
            .await
            .expect("echo of a fragmented datagram")
            .unwrap();
        assert_eq!(n, len);
        assert_eq!(&buf[..n], &data[..]);
    }
}

#[tokio::test]
async fn a_shared_socket_receives_in_one_task_and_sends_in_another() {
    let (a, b) = nets();
    let server = Arc::new(
        UdpSocket::bind(&b, addr(Ipv4Addr::UNSPECIFIED, 9))
            .await
            .unwrap(),
    );
    let rx = Arc::clone(&server);
    let collector = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut buf = [0u8; 8];
        while got.len() < 50 {
            let (n, _) = rx.recv_from(&mut buf).await.unwrap();
            got.push(buf[..n].to_vec());
        }
        got
    });
    let client = UdpSocket::bind(&a, addr(A, 0)).await.unwrap();
    for i in 0..50u8 {
        client.send_to(&[i], addr(B, 9)).await.unwrap();
        // Some pacing: the receiving socket's queue holds 64 datagrams.
        if i % 16 == 15 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let got = timeout(LIMIT, collector)
        .await
        .expect("50 datagrams")
        .unwrap();
    let want: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i]).collect();
    assert_eq!(got, want);
    // The server socket can send while the other task held it.
    server
        .send_to(b"bye", client.local_addr().unwrap())
        .await
        .unwrap();
    let mut buf = [0u8; 8];
    let (n, _) = timeout(LIMIT, client.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"bye");
}

#[tokio::test]
async fn errors_are_io_errors_of_the_right_kind() {
    let (a, _b) = nets();
    let s = UdpSocket::bind(&a, addr(A, 7)).await.unwrap();
    let e = UdpSocket::bind(&a, addr(A, 7)).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    let e = UdpSocket::bind(&a, addr(Ipv4Addr::new(10, 9, 9, 9), 8))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrNotAvailable);
    let v6: SocketAddr = "[::1]:7".parse().unwrap();
    assert_eq!(
        s.send_to(b"x", v6).await.unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        s.send(b"x").await.unwrap_err().kind(),
        io::ErrorKind::NotConnected
    );
    assert_eq!(
        s.send_to(&vec![0; 70_000], addr(B, 7))
            .await
            .unwrap_err()
            .kind(),
        io::ErrorKind::InvalidInput
    );
    let mut buf = [0u8; 4];
    assert_eq!(
        s.try_recv_from(&mut buf).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    // Dropping a socket frees its port.
    drop(s);
    let again = UdpSocket::bind(&a, addr(A, 7)).await.unwrap();
    assert_eq!(again.local_addr().unwrap(), addr(A, 7));
}

#[tokio::test]
async fn recv_waits_until_a_datagram_arrives() {
    let (a, b) = nets();
    let server = UdpSocket::bind(&b, addr(B, 4000)).await.unwrap();
    let mut buf = [0u8; 8];
    // Nothing was sent: the receive must still be waiting.
    assert!(
        timeout(Duration::from_millis(50), server.recv_from(&mut buf))
            .await
            .is_err()
    );
    let client = UdpSocket::bind(&a, addr(A, 0)).await.unwrap();
    let sender = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.send_to(b"late", addr(B, 4000)).await.unwrap();
        client
    });
    let (n, from) = timeout(LIMIT, server.recv_from(&mut buf))
        .await
        .expect("the late datagram")
        .unwrap();
    assert_eq!(&buf[..n], b"late");
    let client = sender.await.unwrap();
    assert_eq!(from, client.local_addr().unwrap());
}
