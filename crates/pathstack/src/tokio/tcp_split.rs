//! The halves of a [`TcpStream`]: borrowed ([`ReadHalf`], [`WriteHalf`],
//! from [`TcpStream::split`]) and owned ([`OwnedReadHalf`],
//! [`OwnedWriteHalf`], from [`TcpStream::into_split`]), as tokio's.

use super::tcp_stream::TcpStream;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ::tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The reading half of a [`TcpStream`], borrowed ([`TcpStream::split`]).
#[derive(Debug)]
pub struct ReadHalf<'a>(&'a TcpStream);

/// The writing half of a [`TcpStream`], borrowed ([`TcpStream::split`]).
/// Shutting it down ([`AsyncWrite::poll_shutdown`]) sends a FIN; dropping
/// it does nothing.
#[derive(Debug)]
pub struct WriteHalf<'a>(&'a TcpStream);

/// The reading half of a [`TcpStream`], owned
/// ([`TcpStream::into_split`]): it can move into another task than the
/// writing half.
#[derive(Debug)]
pub struct OwnedReadHalf {
    inner: Arc<TcpStream>,
}

/// The writing half of a [`TcpStream`], owned
/// ([`TcpStream::into_split`]). Dropping it shuts the writing side down
/// (a FIN after the data), as tokio's does, unless
/// [`forget`](Self::forget) was called; the connection closes when both
/// halves are gone.
#[derive(Debug)]
pub struct OwnedWriteHalf {
    inner: Arc<TcpStream>,
    shutdown_on_drop: bool,
}

/// [`OwnedReadHalf::reunite`] was given halves of two different streams;
/// here they are back.
#[derive(Debug, thiserror::Error)]
#[error("tried to reunite halves that are not from the same TcpStream")]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

// The splitting calls live here, beside the halves, so the stream's file
// does not import its halves and the halves import the stream (issue 27
// item 8: no import cycle in the facade).
impl TcpStream {
    /// Splits the stream into a read half and a write half borrowing it,
    /// to read and write at once from one task (`tokio::join!`,
    /// `tokio::io::copy` between them). Costs nothing.
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf::new(self), WriteHalf::new(self))
    }

    /// Splits the stream into halves that own it (shared), to move into
    /// two tasks; [`OwnedReadHalf::reunite`] puts them back together.
    /// Dropping the write half shuts the writing side down (a FIN), as
    /// tokio's does.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        split_owned(self)
    }
}

fn split_owned(stream: TcpStream) -> (OwnedReadHalf, OwnedWriteHalf) {
    let inner = Arc::new(stream);
    (
        OwnedReadHalf {
            inner: inner.clone(),
        },
        OwnedWriteHalf {
            inner,
            shutdown_on_drop: true,
        },
    )
}

impl<'a> ReadHalf<'a> {
    pub(super) fn new(s: &'a TcpStream) -> Self {
        ReadHalf(s)
    }
}

impl<'a> WriteHalf<'a> {
    pub(super) fn new(s: &'a TcpStream) -> Self {
        WriteHalf(s)
    }
}

/// The stream methods both kinds of reading half have.
macro_rules! read_half_methods {
    () => {
        /// See [`TcpStream::readable`]. This method is cancel safe.
        pub async fn readable(&self) -> io::Result<()> {
            self.stream().readable().await
        }

        /// See [`TcpStream::poll_read_ready`].
        pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.stream().poll_read_ready(cx)
        }

        /// See [`TcpStream::try_read`].
        pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
            self.stream().try_read(buf)
        }

        /// See [`TcpStream::peek`]. This method is cancel safe.
        pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
            self.stream().peek(buf).await
        }

        /// See [`TcpStream::poll_peek`].
        pub fn poll_peek(
            &self,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<usize>> {
            self.stream().poll_peek(cx, buf)
        }

        /// The stream's peer.
        pub fn peer_addr(&self) -> io::Result<SocketAddr> {
            self.stream().peer_addr()
        }

        /// The stream's local address.
        pub fn local_addr(&self) -> io::Result<SocketAddr> {
            self.stream().local_addr()
        }
    };
}

/// The stream methods both kinds of writing half have.
macro_rules! write_half_methods {
    () => {
        /// See [`TcpStream::writable`]. This method is cancel safe.
        pub async fn writable(&self) -> io::Result<()> {
            self.stream().writable().await
        }

        /// See [`TcpStream::poll_write_ready`].
        pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.stream().poll_write_ready(cx)
        }

        /// See [`TcpStream::try_write`].
        pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            self.stream().try_write(buf)
        }

        /// See [`TcpStream::try_write_vectored`].
        pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            self.stream().try_write_vectored(bufs)
        }

        /// The stream's peer.
        pub fn peer_addr(&self) -> io::Result<SocketAddr> {
            self.stream().peer_addr()
        }

        /// The stream's local address.
        pub fn local_addr(&self) -> io::Result<SocketAddr> {
            self.stream().local_addr()
        }
    };
}

impl ReadHalf<'_> {
    read_half_methods!();

    fn stream(&self) -> &TcpStream {
        self.0
    }
}

impl WriteHalf<'_> {
    write_half_methods!();

    fn stream(&self) -> &TcpStream {
        self.0
    }
}

impl OwnedReadHalf {
    read_half_methods!();

    fn stream(&self) -> &TcpStream {
        &self.inner
    }

    /// Puts the stream back together from its two halves; fails (giving
    /// them back) if `other` is not this one's.
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.inner, &other.inner) {
            return Err(ReuniteError(self, other));
        }
        other.forget();
        // The two halves held the only references, and `other` has just
        // let go of its own.
        Ok(Arc::try_unwrap(self.inner).expect("TcpStream: a third reference to a split stream"))
    }
}

impl OwnedWriteHalf {
    write_half_methods!();

    fn stream(&self) -> &TcpStream {
        &self.inner
    }

    /// Puts the stream back together; see [`OwnedReadHalf::reunite`].
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        other.reunite(self)
    }

    /// Drops the half without shutting the writing side down: the
    /// connection stays open for writing until the stream is gone (the
    /// read half dropped too).
    pub fn forget(mut self) {
        self.shutdown_on_drop = false;
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            // A connection that already failed has nothing to shut.
            let _ = self.inner.shutdown_std(Shutdown::Write);
        }
    }
}

impl AsyncRead for ReadHalf<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.0.poll_read_shared(cx, buf)
    }
}

impl AsyncRead for OwnedReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.inner.poll_read_shared(cx, buf)
    }
}

impl AsyncWrite for WriteHalf<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write_shared(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write_vectored_shared(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts the stream's writing side: a FIN after the data.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.shutdown_std(Shutdown::Write))
    }
}

impl AsyncWrite for OwnedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_write_shared(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_write_vectored_shared(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts the stream's writing side: a FIN after the data. Dropping
    /// the half then does not shut it again.
    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = self.inner.shutdown_std(Shutdown::Write);
        self.shutdown_on_drop = false;
        Poll::Ready(r)
    }
}
