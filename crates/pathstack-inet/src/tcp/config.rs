//! What an application may choose about a connection (the socket
//! options), with Linux's defaults.
//!
//! Its times are `std::time::Duration`s, what an application has at
//! hand (issue 27, problem 7); the engine converts them to the stack's
//! own `pathstack_core::Duration` (nanoseconds) where it sets a timer.

use super::congestion::CongestionKind;
use super::rto::RtoConfig;
use std::time::Duration;

/// Keepalive (RFC 9293 §3.8.4): off unless asked for; when on, probes
/// after `idle` without traffic, every `interval`, giving up after
/// `probes` unanswered (Linux: 7200 s, 75 s, 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    /// Quiet time before the first probe (RFC 9293: no less than two
    /// hours by default; shorter when the application asks).
    pub idle: Duration,
    /// Time between probes.
    pub interval: Duration,
    /// Unanswered probes before the connection is declared dead.
    pub probes: u32,
}

impl Keepalive {
    /// Probes after `idle` of quiet (Linux's `TCP_KEEPIDLE`), with the
    /// default interval and count (75 s, 9; RFC 9293 §3.8.4, Linux's
    /// defaults). Takes a `std::time::Duration`, as `socket2` does.
    pub fn after(idle: Duration) -> Keepalive {
        Keepalive {
            idle,
            ..Keepalive::default()
        }
    }
}

impl Default for Keepalive {
    fn default() -> Self {
        Keepalive {
            idle: Duration::from_secs(7200),
            interval: Duration::from_secs(75),
            probes: 9,
        }
    }
}

/// What the device under a connection's path does for TCP (checksum and
/// segmentation offload, `pathstack_core::device::offload`). Not a socket
/// option: the `TCP` module sets it on every connection from its
/// `csum_offload` and `tso_max` parameters, which a host takes from its
/// device's capabilities; whatever an application passes is overridden.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOffload {
    /// Leave segment checksums partial for the device to finish.
    pub checksum: bool,
    /// Largest IPv4 datagram the device segments (TSO); 0: none. With it
    /// (and `checksum`), new data goes down in super-segments of whole
    /// MSS-sized segments, as many as the windows allow and fit.
    pub tso_max: u32,
}

impl TcpOffload {
    /// Most payload octets of one super-segment: the datagram limit less
    /// the largest IPv4 and TCP headers (20 + 60 octets); 0 without TSO.
    pub fn tso_payload_max(&self) -> u32 {
        if self.checksum && self.tso_max > 0 {
            self.tso_max.saturating_sub(20 + 60)
        } else {
            0
        }
    }
}

/// A connection's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    /// The MSS we announce (RFC 9293 §3.7.1): the route MTU less 40
    /// (the module clamps it to the interface's MTU).
    pub mss: u16,
    /// Send buffer size in octets (data written and not yet
    /// acknowledged): the most the ring grows to. It is allocated as the
    /// writes need it, from nothing (issue 28 item 3, `tcp::ring`).
    pub send_buffer: usize,
    /// Receive buffer size in octets: the largest window we advertise, and
    /// the most the ring grows to. The window is advertised from this
    /// size; the ring is allocated as data arrives, from nothing.
    pub recv_buffer: usize,
    /// Out-of-order octets held at most.
    pub max_ooo_bytes: usize,
    /// Out-of-order ranges (holes apart) held at most (≤ 16).
    pub max_ooo_ranges: usize,
    /// Offer window scaling (RFC 7323 §2).
    pub window_scaling: bool,
    /// Offer timestamps (RFC 7323 §3).
    pub timestamps: bool,
    /// Offer SACK (RFC 2018).
    pub sack: bool,
    /// RACK-TLP loss detection (RFC 8985), on by default as in Linux.
    pub rack: bool,
    /// The congestion controller (CUBIC by default, as Linux).
    pub congestion: CongestionKind,
    /// Send small segments at once instead of coalescing them while data
    /// is unacknowledged (RFC 896 Nagle off, `TCP_NODELAY`).
    pub nodelay: bool,
    /// Keepalive, off by default (RFC 9293 §3.8.4).
    pub keepalive: Option<Keepalive>,
    /// The retransmission timer's bounds (RFC 6298; Linux's 200 ms
    /// minimum by default).
    pub rto: RtoConfig,
    /// How long TIME-WAIT lasts: 2·MSL (RFC 9293 §3.4.2; Linux 60 s).
    pub time_wait: Duration,
    /// The longest an ACK is delayed (RFC 9293 §3.8.6.3: under 0.5 s;
    /// Linux's minimum delayed-ACK timer, 40 ms).
    pub delayed_ack: Duration,
    /// Full-sized segments one ACK may cover when they arrive in one
    /// receive burst (what the device held when the stack polled it). The
    /// ACK RFC 5681 §4.2 asks for every second segment then waits for the
    /// end of the burst, up to this many segments — the stretch ACKs a
    /// Linux receiver sends for a GRO-merged burst. It halves and more the
    /// ACKs a bulk receiver writes, and each one costs a system call and
    /// the sender's ACK processing on a TAP. 2 is RFC 5681's strict rule.
    pub max_stretch_ack: u16,
    /// Restart after idle (RFC 5681 §4.1: "TCP SHOULD set cwnd to no
    /// more than RW before beginning transmission if the TCP has not sent
    /// data in an interval exceeding the retransmission timeout"), with
    /// RW = min(IW, cwnd); Linux's `tcp_slow_start_after_idle` (on by
    /// default; Linux halves cwnd per idle RTO down to IW instead,
    /// `tcp_cwnd_restart`). Off keeps the window across idle periods, as
    /// RFC 7661's alternative for application-limited senders lets a
    /// sender do in part (it halves the window only after it has not been
    /// validated for a while).
    pub slow_start_after_idle: bool,
    /// Linux's quick-ACK mode (`quick_ack.rs`): the first segments of a
    /// connection, and those after an idle gap or out-of-order data, are
    /// ACKed at once unless the connection is interactive. Off: every
    /// in-order segment waits for the second full-sized one or
    /// `delayed_ack` (RFC 9293 §3.8.6.3 allows both).
    pub quick_ack: bool,
    /// PRR's slow-start reduction bound (one segment beyond what an ACK
    /// delivered, RFC 6937 PRR-SSRB) only on a SafeACK, one that advances
    /// SND.UNA (RFC 6937bis; Linux's `tcp_cwnd_reduction`); other ACKs in
    /// recovery get the conservative bound (PRR-CRB). Off (the default):
    /// SSRB on every ACK within recovery, which the loss study measured
    /// faster (`tcp/prr.rs`). The ACK that enters recovery gets CRB
    /// either way.
    pub prr_safe_ack: bool,
    /// The tail-loss probe (RFC 8985 §7) also while recovering from a
    /// retransmission timeout. On (the default): a probe goes when the
    /// ACK clock stops after the timeout's retransmission, which the loss
    /// study measured faster (5 % loss median 3.98 s against 4.53 s
    /// without, `LOSS_STUDY_SEEDS=31`). Off: no probe from the timeout
    /// until the cumulative ACK reaches the RecoveryPoint it set, as RFC
    /// 8985 §7.2 ("the connection is not in loss recovery") and Linux
    /// (`TCP_CA_Loss`, packetdrill `fr-4pkt-fack-last-byte`).
    pub probe_after_timeout: bool,
    /// SYN retransmissions before a connect fails (Linux `tcp_syn_retries`).
    pub syn_retries: u32,
    /// Data retransmissions of one segment before the connection is given
    /// up (RFC 9293 §3.8.3 R2; Linux `tcp_retries2`).
    pub retries: u32,
    /// Challenge ACKs sent per second at most (RFC 5961 §7; Linux
    /// `tcp_challenge_ack_limit`).
    pub challenge_ack_limit: u32,
    /// `close` resets the connection instead of the FIN handshake
    /// (`SO_LINGER` with a zero timeout).
    pub linger_zero: bool,
    /// The device's offloads (set by the module, see [`TcpOffload`]).
    pub offload: TcpOffload,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            max_ooo_bytes: 256 * 1024,
            max_ooo_ranges: 16,
            window_scaling: true,
            timestamps: true,
            sack: true,
            rack: true,
            congestion: CongestionKind::Cubic,
            nodelay: false,
            keepalive: None,
            rto: RtoConfig::linux(),
            time_wait: Duration::from_secs(60),
            delayed_ack: Duration::from_millis(40),
            max_stretch_ack: 16,
            quick_ack: true,
            prr_safe_ack: false,
            probe_after_timeout: true,
            slow_start_after_idle: true,
            syn_retries: 6,
            retries: 15,
            challenge_ack_limit: 1000,
            linger_zero: false,
            offload: TcpOffload::default(),
        }
    }
}

impl TcpConfig {
    /// The window shift to announce for our receive buffer (RFC 7323
    /// §2.3): the least that lets the buffer's size fit the 16-bit field.
    pub fn window_shift(&self) -> u8 {
        let mut shift = 0u8;
        while shift < 14 && (self.recv_buffer >> shift) > 65535 {
            shift += 1;
        }
        shift
    }
}
