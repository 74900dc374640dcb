//! The non-blocking operations as `Result<Option<T>>` (`Ok(None)`: it
//! would block), for the crate's own layers: the handles' std-like calls
//! (`nonblocking.rs`), which turn `None` into `WouldBlock`, and the tokio
//! sockets, which register a waker on `None`.
//!
//! They call the host's public `Option` calls of the same meaning, which
//! are deprecated for applications (issue 27, problem 10) and stay one
//! release; their bodies are where the TCP read and write paths are
//! tuned (`tcp.rs`), so the one place that allows the deprecated calls is
//! here. When the aliases go, their bodies move here.
#![allow(deprecated)]

use super::{RecvInfo, SocketError, TcpListener, TcpStream, UdpSocket};
use crate::host::Host;
use std::io::IoSlice;
use std::net::SocketAddr;

impl Host {
    pub(crate) fn udp_try_recv_from_trunc(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<RecvInfo>, SocketError> {
        self.recv_from_trunc(s, buf)
    }

    pub(crate) fn udp_try_recv_from(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<(usize, SocketAddr)>, SocketError> {
        self.recv_from(s, buf)
    }

    #[cfg(feature = "tokio")]
    pub(crate) fn udp_try_recv(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        self.recv(s, buf)
    }

    pub(crate) fn udp_try_peek_from(
        &self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<(usize, SocketAddr)>, SocketError> {
        self.peek_from(s, buf)
    }

    pub(crate) fn tcp_try_accept(
        &mut self,
        l: &TcpListener,
    ) -> Result<Option<(TcpStream, SocketAddr)>, SocketError> {
        self.accept(l)
    }

    pub(crate) fn tcp_try_send(
        &mut self,
        s: &TcpStream,
        data: &[u8],
    ) -> Result<Option<usize>, SocketError> {
        self.tcp_send(s, data)
    }

    pub(crate) fn tcp_try_send_vectored(
        &mut self,
        s: &TcpStream,
        bufs: &[IoSlice<'_>],
    ) -> Result<Option<usize>, SocketError> {
        self.tcp_send_vectored(s, bufs)
    }

    pub(crate) fn tcp_try_recv(
        &mut self,
        s: &TcpStream,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        self.tcp_recv(s, buf)
    }

    pub(crate) fn tcp_try_peek(
        &self,
        s: &TcpStream,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        self.tcp_peek(s, buf)
    }
}
