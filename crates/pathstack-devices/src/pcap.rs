//! pcap capture as a device wrapper.
//!
//! [`PcapCapture`] wraps any [`Device`] and writes every frame it receives
//! and every frame handed to it for transmission to a classic pcap file
//! (link type Ethernet, nanosecond timestamps) that tcpdump, tshark and
//! Wireshark read. Frames are written from the borrowed message bytes into a
//! buffered writer, so capturing allocates nothing per frame.
//!
//! Transmitted frames are recorded when they are handed over, before the
//! inner device can refuse them, as a sniffer on the sending host would; the
//! inner device's `dropped_*` counters tell which ones did not leave.
//!
//! Capture is an observer: a failing capture write never fails the frame. It
//! is counted ([`CaptureStats::write_errors`]) and the first such error is
//! kept for [`PcapCapture::flush`] to report.

use byteorder_slice::{BigEndian, LittleEndian};
use pathstack_core::device::{Device, DeviceError};
use pathstack_core::{Instant, Msg, MsgPool};
use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Largest number of bytes of one frame stored in the file (the pcap
/// "snaplen"); longer frames are cut, with their real length recorded.
/// libpcap's maximum (`MAXIMUM_SNAPLEN`), so that frames of the default
/// pool's largest buffers (72 KiB, reassembled datagrams on a loopback-like
/// device) are kept whole.
pub const SNAPLEN: u32 = 262_144;

/// What went wrong with a capture file.
#[derive(Debug, Error)]
pub enum CaptureError {
    /// The capture file could not be created.
    #[error("cannot create pcap capture file {path}: {source}")]
    Create {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Writing the pcap header or a frame failed.
    #[error("writing pcap capture: {0}")]
    Write(#[source] PcapError),
    /// Flushing buffered frames to the file failed.
    #[error("flushing pcap capture: {0}")]
    Flush(#[source] std::io::Error),
}

/// Where capture timestamps come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CaptureClock {
    /// The wall clock (`SystemTime`): pcap readers expect times since the
    /// Unix epoch, and they line up with kernel-side captures.
    #[default]
    Wall,
    /// The stack time passed to `transmit`/`receive`, added to `origin`
    /// (a time since the Unix epoch): reproducible captures under virtual time.
    Stack {
        /// What stack time zero maps to, as time since the Unix epoch.
        origin: std::time::Duration,
    },
}

/// Counters of a capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Received frames written.
    pub frames_in: u64,
    /// Transmitted frames written.
    pub frames_out: u64,
    /// Frames that could not be written.
    pub write_errors: u64,
}

/// A device wrapper that records every frame in and out to a pcap file.
///
/// The file format is pcap-file's ([`PcapHeader::write_to`],
/// [`PcapPacket::write_to`]); the writer is kept here rather than inside a
/// `pcap_file::pcap::PcapWriter` because that type (2.x) gives no access to
/// its writer for flushing short of consuming it.
pub struct PcapCapture<D, W: Write = BufWriter<File>> {
    inner: D,
    writer: W,
    clock: CaptureClock,
    stats: CaptureStats,
    first_error: Option<PcapError>,
}

impl<D: Device> PcapCapture<D, BufWriter<File>> {
    /// Wraps `inner`, capturing into a new file at `path` (truncated if it
    /// exists), buffered. Buffered frames are written when the capture is
    /// dropped (or on [`flush`](Self::flush)).
    pub fn create(inner: D, path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| CaptureError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        Self::new(inner, BufWriter::with_capacity(64 * 1024, file))
    }
}

impl<D: Device, W: Write> PcapCapture<D, W> {
    /// Wraps `inner`, capturing into `writer` (the pcap file header is
    /// written now).
    pub fn new(inner: D, writer: W) -> Result<Self, CaptureError> {
        let mut writer = writer;
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: if cfg!(target_endian = "big") {
                Endianness::Big
            } else {
                Endianness::Little
            },
            ..PcapHeader::default()
        };
        header.write_to(&mut writer).map_err(CaptureError::Write)?;
        Ok(PcapCapture {
            inner,
            writer,
            clock: CaptureClock::Wall,
            stats: CaptureStats::default(),
            first_error: None,
        })
    }

    /// Uses `clock` for the timestamps of frames captured from now on.
    pub fn with_clock(mut self, clock: CaptureClock) -> Self {
        self.clock = clock;
        self
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably. Frames moved through it directly are not
    /// captured.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// The capture counters.
    pub fn capture_stats(&self) -> CaptureStats {
        self.stats
    }

    /// Writes buffered frames out. Reports the first frame write that failed
    /// since the last flush, if any.
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        if let Some(e) = self.first_error.take() {
            return Err(CaptureError::Write(e));
        }
        self.writer.flush().map_err(CaptureError::Flush)
    }

    /// Flushes and returns the wrapped device and the writer.
    pub fn finish(mut self) -> Result<(D, W), CaptureError> {
        self.flush()?;
        Ok((self.inner, self.writer))
    }

    fn record(&mut self, frame: &[u8], now: Instant, outgoing: bool) {
        let timestamp = match self.clock {
            CaptureClock::Wall => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
            CaptureClock::Stack { origin } => {
                origin + std::time::Duration::from_nanos(now.as_nanos())
            }
        };
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let kept = frame.len().min(SNAPLEN as usize);
        let packet = PcapPacket::new(timestamp, orig_len, &frame[..kept]);
        let written = if cfg!(target_endian = "big") {
            packet.write_to::<_, BigEndian>(&mut self.writer, TsResolution::NanoSecond, SNAPLEN)
        } else {
            packet.write_to::<_, LittleEndian>(&mut self.writer, TsResolution::NanoSecond, SNAPLEN)
        };
        match written {
            Ok(_) if outgoing => self.stats.frames_out += 1,
            Ok(_) => self.stats.frames_in += 1,
            Err(e) => {
                self.stats.write_errors += 1;
                self.first_error.get_or_insert(e);
            }
        }
    }
}

impl<D: Device, W: Write + Send + 'static> Device for PcapCapture<D, W> {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        self.record(frame.as_slice(), now, true);
        self.inner.transmit(frame, now)
    }

    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        let frame = self.inner.receive(pool, now)?;
        if let Some(f) = &frame {
            self.record(f.as_slice(), now, false);
        }
        Ok(frame)
    }

    // The inner device's; `discard` too: the capture holds what the stack
    // received, so frames the device discards are not in it. Not
    // `receive_into`: it would bypass the capture.
    pathstack_core::forward_device!((inner) caps, poll_at, stats, rx_waiter, discard);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::device::{DeviceCaps, DeviceStats};
    use pathstack_core::PoolConfig;
    use pcap_file::pcap::PcapReader;
    use std::collections::VecDeque;

    /// A test device: what is transmitted comes back on receive (bounded).
    #[derive(Default)]
    struct Loopback {
        q: VecDeque<Msg>,
        stats: DeviceStats,
    }

    impl Device for Loopback {
        fn transmit(&mut self, frame: Msg, _now: Instant) -> Result<(), DeviceError> {
            if self.q.len() >= 4 {
                self.stats.dropped_full += 1;
                return Err(DeviceError::QueueFull { capacity: 4 });
            }
            self.stats.tx_frames += 1;
            self.q.push_back(frame);
            Ok(())
        }
        fn receive(&mut self, _pool: &MsgPool, _now: Instant) -> Result<Option<Msg>, DeviceError> {
            let m = self.q.pop_front();
            self.stats.rx_frames += u64::from(m.is_some());
            Ok(m)
        }
        fn caps(&self) -> DeviceCaps {
            DeviceCaps {
                mtu: 1500,
                link_header: 14,
                mac: None,
                offload: pathstack_core::device::OffloadCaps::NONE,
            }
        }
        fn stats(&self) -> DeviceStats {
            self.stats
        }
    }

    const ORIGIN: std::time::Duration = std::time::Duration::from_secs(1_700_000_000);

    fn frame(pool: &MsgPool, i: u8, len: usize) -> Msg {
        let mut m = pool.alloc(len).unwrap();
        m.as_mut_slice().fill(i);
        m
    }

    #[test]
    fn every_frame_in_and_out_is_captured_with_stack_timestamps() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let mut cap = PcapCapture::new(Loopback::default(), Vec::new())
            .unwrap()
            .with_clock(CaptureClock::Stack { origin: ORIGIN });
        for i in 0..3u8 {
            let t = Instant::from_nanos(1_000 * u64::from(i) + 7);
            cap.transmit(frame(&pool, i, 60 + usize::from(i)), t)
                .unwrap();
        }
        let mut got = 0;
        while let Some(f) = cap.receive(&pool, Instant::from_millis(5)).unwrap() {
            assert_eq!(f.len(), 60 + got);
            got += 1;
        }
        assert_eq!(got, 3);
        assert_eq!(
            cap.capture_stats(),
            CaptureStats {
                frames_in: 3,
                frames_out: 3,
                write_errors: 0
            }
        );
        // Device counters are the inner device's.
        assert_eq!(cap.stats().tx_frames, 3);
        let (_, bytes) = cap.finish().unwrap();

        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().datalink, DataLink::ETHERNET);
        assert_eq!(r.header().ts_resolution, TsResolution::NanoSecond);
        let mut packets = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            packets.push((p.timestamp, p.orig_len, p.data.into_owned()));
        }
        assert_eq!(packets.len(), 6);
        for i in 0..3usize {
            let (ts, len, data) = &packets[i];
            assert_eq!(
                *ts,
                ORIGIN + std::time::Duration::from_nanos(1_000 * i as u64 + 7)
            );
            assert_eq!(*len as usize, 60 + i);
            assert_eq!(data, &vec![i as u8; 60 + i]);
            let (ts, _, data) = &packets[3 + i];
            assert_eq!(*ts, ORIGIN + std::time::Duration::from_millis(5));
            assert_eq!(data, &vec![i as u8; 60 + i]);
        }
    }

    #[test]
    fn refused_frames_are_still_captured_as_sent() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let mut cap = PcapCapture::new(Loopback::default(), Vec::new()).unwrap();
        for i in 0..5u8 {
            let r = cap.transmit(frame(&pool, i, 60), Instant::ZERO);
            assert_eq!(r.is_err(), i == 4);
        }
        assert_eq!(cap.capture_stats().frames_out, 5);
        assert_eq!(cap.stats().dropped_full, 1);
    }

    #[test]
    fn frames_longer_than_snaplen_are_cut_with_true_length() {
        let pool = MsgPool::new(PoolConfig {
            headroom: 0,
            classes: vec![pathstack_core::msg::SizeClass {
                buf_size: 300_000,
                prealloc: 1,
                max: 1,
            }],
        });
        let mut cap = PcapCapture::new(Loopback::default(), Vec::new()).unwrap();
        cap.transmit(frame(&pool, 9, 300_000), Instant::ZERO)
            .unwrap();
        let (_, bytes) = cap.finish().unwrap();
        // Record header after the 24-byte file header: ts_sec, ts_frac,
        // incl_len, orig_len (native byte order, as written).
        let word = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(word(24 + 8), SNAPLEN);
        assert_eq!(word(24 + 12), 300_000);
        assert_eq!(bytes.len(), 24 + 16 + SNAPLEN as usize);
    }

    /// A writer that accepts the file header and then fails.
    struct FailingWriter {
        budget: usize,
    }

    impl Write for FailingWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.budget < buf.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.budget -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn capture_write_errors_are_counted_not_fatal() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let mut cap = PcapCapture::new(Loopback::default(), FailingWriter { budget: 24 }).unwrap();
        cap.transmit(frame(&pool, 1, 60), Instant::ZERO).unwrap();
        cap.transmit(frame(&pool, 2, 60), Instant::ZERO).unwrap();
        assert_eq!(cap.capture_stats().write_errors, 2);
        assert_eq!(cap.stats().tx_frames, 2);
        let err = cap.flush().unwrap_err();
        assert!(matches!(err, CaptureError::Write(_)), "{err}");
        // The error is reported once.
        cap.flush().unwrap();
    }

    #[test]
    fn unwritable_path_is_a_clear_error() {
        let err = PcapCapture::create(Loopback::default(), "/nonexistent-dir/x.pcap")
            .err()
            .unwrap();
        assert!(err.to_string().contains("/nonexistent-dir/x.pcap"), "{err}");
    }
}
