//! When a host stays silent: the datagrams RFC 1122 §3.2.2 says an ICMP
//! error MUST NOT be sent about, checked before any error is built. The
//! error rate limit is the other reason for silence
//! ([`crate::ip::rate_limit::TokenBucket`]).

use crate::wire::icmp::is_error_type;
use crate::wire::ipv4::{self, Ipv4Packet, MIN_HEADER_LEN};

pathstack_core::drop_reasons! {
    /// Why an ICMP error was not generated. Named like drop reasons
    /// (`icmp.error_suppressed.*`), so that statistics can say why a host
    /// stayed silent.
    #[derive(thiserror::Error)]
    pub enum ErrorSuppressed in "icmp.error_suppressed" {
        /// The offending datagram is itself an ICMP error (RFC 1122 §3.2.2 MUST NOT).
        #[error("datagram is an ICMP error")]
        AboutIcmpError => "about_icmp_error",
        /// It was sent to a broadcast or multicast address, IP or link layer (RFC 1122 §3.2.2 MUST NOT).
        #[error("datagram was broadcast or multicast")]
        Broadcast => "broadcast",
        /// It is a fragment other than the first (RFC 1122 §3.2.2 MUST NOT).
        #[error("datagram is a non-initial fragment")]
        NonInitialFragment => "non_initial_fragment",
        /// Its source does not name a single host: zero, loopback, broadcast,
        /// multicast or class E (RFC 1122 §3.2.2 MUST NOT).
        #[error("datagram source is not a single host")]
        InvalidSource => "invalid_source",
        /// The offending bytes are not a readable IPv4 header.
        #[error("offending datagram unreadable")]
        Malformed => "malformed",
    }
}

/// Whether a host may send an ICMP error about `datagram` (the offending
/// datagram from its IP header on). `link_or_subnet_broadcast` says whether
/// it arrived as a link-layer broadcast or to a directed subnet broadcast
/// address, which only the caller can know.
///
/// Applies the RFC 1122 §3.2.2 list: never about an ICMP error, a datagram
/// to a broadcast or multicast address, a non-initial fragment, or one whose
/// source does not define a single host. Rate limiting is separate
/// ([`crate::ip::rate_limit::TokenBucket`]).
pub fn may_send_error(
    datagram: &[u8],
    link_or_subnet_broadcast: bool,
) -> Result<(), ErrorSuppressed> {
    if datagram.len() < MIN_HEADER_LEN {
        return Err(ErrorSuppressed::Malformed);
    }
    // 20 bytes are there: every fixed field can be read.
    let ip = Ipv4Packet::new_unchecked(datagram);
    let ihl = ip.header_len();
    if ip.version() != 4 || ihl < MIN_HEADER_LEN || datagram.len() < ihl {
        return Err(ErrorSuppressed::Malformed);
    }
    let (src, dst) = (ip.src(), ip.dst());
    if link_or_subnet_broadcast || dst.is_broadcast() || dst.is_multicast() {
        return Err(ErrorSuppressed::Broadcast);
    }
    if ip.frag_offset() != 0 {
        return Err(ErrorSuppressed::NonInitialFragment);
    }
    if src.is_unspecified() || src.is_loopback() || !ipv4::is_valid_source(src) {
        return Err(ErrorSuppressed::InvalidSource);
    }
    if ip.protocol() == ipv4::protocol::ICMP {
        // Without the type we cannot tell an error from a query: stay silent.
        match datagram.get(ihl) {
            Some(&t) if !is_error_type(t) => {}
            _ => return Err(ErrorSuppressed::AboutIcmpError),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::icmp::types;
    use crate::wire::ipv4::{protocol, tests::datagram, tests::A, tests::B, Ipv4Repr};
    use std::net::Ipv4Addr;

    #[test]
    fn rfc1122_suppression_rules() {
        let udp = |src, dst| datagram(&Ipv4Repr::new(src, dst, protocol::UDP, 1, 0), &[0; 8]);
        assert_eq!(may_send_error(&udp(B, A), false), Ok(()));
        assert_eq!(
            may_send_error(&udp(B, A), true),
            Err(ErrorSuppressed::Broadcast)
        );
        assert_eq!(
            may_send_error(&udp(B, Ipv4Addr::BROADCAST), false),
            Err(ErrorSuppressed::Broadcast)
        );
        assert_eq!(
            may_send_error(&udp(B, Ipv4Addr::new(239, 1, 1, 1)), false),
            Err(ErrorSuppressed::Broadcast)
        );
        assert_eq!(
            may_send_error(&udp(Ipv4Addr::UNSPECIFIED, A), false),
            Err(ErrorSuppressed::InvalidSource)
        );
        assert_eq!(
            may_send_error(&udp(Ipv4Addr::LOCALHOST, A), false),
            Err(ErrorSuppressed::InvalidSource)
        );
        let mut frag = Ipv4Repr::new(B, A, protocol::UDP, 1, 0);
        frag.frag_offset = 1480;
        assert_eq!(
            may_send_error(&datagram(&frag, &[0; 8]), false),
            Err(ErrorSuppressed::NonInitialFragment)
        );
        let icmp = |t: u8| {
            datagram(
                &Ipv4Repr::new(B, A, protocol::ICMP, 1, 0),
                &[t, 0, 0, 0, 0, 0, 0, 0],
            )
        };
        assert_eq!(
            may_send_error(&icmp(types::DEST_UNREACHABLE), false),
            Err(ErrorSuppressed::AboutIcmpError)
        );
        assert_eq!(may_send_error(&icmp(types::ECHO_REQUEST), false), Ok(()));
        assert_eq!(
            may_send_error(&[0x45; 10], false),
            Err(ErrorSuppressed::Malformed)
        );
    }
}
