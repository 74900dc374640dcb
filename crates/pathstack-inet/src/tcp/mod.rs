//! TCP protocol logic that does not depend on the path machinery, each
//! concept tested alone (RFC 9293 and the RFCs it builds on):
//!
//! * [`seq`]: sequence-number arithmetic (RFC 9293 §3.4);
//! * [`isn`]: initial sequence numbers from a keyed hash (RFC 6528);
//! * [`syn_cookie`]: stateless SYN cookies, with the window scale and
//!   SACK-permitted options carried in the timestamp, as Linux encodes
//!   them (RFC 4987 §3.6);
//! * [`rto`]: the retransmission timer estimator (RFC 6298);
//! * [`send_buffer`], [`recv_buffer`]: the send ring and the receive ring
//!   with its bounded out-of-order queue, window and SACK blocks
//!   (RFC 9293 §3.8.6, RFC 2018, RFC 2883), their positions and short copies in
//!   line (`ring`);
//! * [`congestion`]: pluggable congestion control, NewReno (RFC 5681,
//!   RFC 6582) and CUBIC (RFC 9438);
//! * [`sack_scoreboard`]: the sender's SACK scoreboard, IsLost, pipe and
//!   NextSeg (RFC 6675 §2–4), D-SACK recognition (RFC 2883 §4);
//! * [`recovery`]: SACK-based loss recovery (RFC 6675 §5);
//! * [`rack`]: RACK-TLP time-based loss detection (RFC 8985);
//! * [`config`], [`state`], [`error`], [`conn_drop_reason`]: a
//!   connection's options, its eleven states, the errors the application
//!   sees and why segments are dropped;
//! * [`tcb`]: the connection itself (RFC 9293 §3.10), built from the
//!   parts above and driven by segments, calls and time, with no I/O.
//!
//! Like the rest of the crate's protocol logic these are plain structs,
//! bounded, allocation-free, driven by an explicit `now`.

pub mod config;
pub mod congestion;
pub mod conn_drop_reason;
pub mod error;
pub mod isn;
pub mod prr;
pub mod quick_ack;
pub mod rack;
pub mod recovery;
pub mod recv_buffer;
pub(crate) mod ring;
pub mod rto;
pub mod sack_scoreboard;
pub mod send_buffer;
pub mod seq;
pub mod state;
pub mod syn_cookie;
pub mod tcb;
pub(crate) mod timers;

pub use config::{Keepalive, TcpConfig, TcpOffload};
pub use congestion::{AnyCongestion, CcConfig, CongestionControl, CongestionKind};
pub use conn_drop_reason::ConnDropReason;
pub use error::TcpError;
pub use isn::{FourTuple, IsnGenerator};
pub use rack::{Rack, Tlp, TlpVerdict};
pub use recovery::Recovery;
pub use recv_buffer::{Inserted, RecvBuffer, RecvConfig, RecvStats};
pub use rto::{RtoConfig, RtoEstimator, RttSampler};
pub use sack_scoreboard::{AckOutcome, NextSeg, Rule as NextSegRule, SackBlock, Scoreboard};
pub use send_buffer::SendBuffer;
pub use seq::SeqNumber;
pub use state::State;
pub use syn_cookie::{CookieError, CookieOptions, SynCookies};
pub use tcb::{reset_for, CookieOpen, OutSegment, Shutdown, Tcb, TcpStats};
