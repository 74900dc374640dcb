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
//!   (RFC 9293 §3.8.6, RFC 2018, RFC 2883);
//! * [`congestion`]: pluggable congestion control, NewReno (RFC 5681,
//!   RFC 6582) and CUBIC (RFC 9438);
//! * [`sack_scoreboard`]: the sender's SACK scoreboard, IsLost, pipe and
//!   NextSeg (RFC 6675 §2–4), D-SACK recognition (RFC 2883 §4);
//! * [`recovery`]: SACK-based loss recovery (RFC 6675 §5);
//! * [`rack`]: RACK-TLP time-based loss detection (RFC 8985).
//!
//! Like the rest of the crate's protocol logic these are plain structs,
//! bounded, allocation-free, driven by an explicit `now`.

pub mod congestion;
pub mod isn;
pub mod rack;
pub mod recovery;
pub mod recv_buffer;
pub mod rto;
pub mod sack_scoreboard;
pub mod send_buffer;
pub mod seq;
pub mod syn_cookie;

pub use congestion::{AnyCongestion, CcConfig, CongestionControl, CongestionKind};
pub use isn::{FourTuple, IsnGenerator};
pub use rack::{Rack, Tlp, TlpVerdict};
pub use recovery::Recovery;
pub use recv_buffer::{Inserted, RecvBuffer, RecvConfig, RecvStats};
pub use rto::{RtoConfig, RtoEstimator, RttSampler};
pub use sack_scoreboard::{AckOutcome, NextSeg, Rule as NextSegRule, SackBlock, Scoreboard};
pub use send_buffer::SendBuffer;
pub use seq::SeqNumber;
pub use syn_cookie::{CookieError, CookieOptions, SynCookies};
