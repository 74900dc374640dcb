//! Parsing of the address parameters the Internet modules take from the
//! graph (`addr=10.0.0.1/24`, `mac=02:00:00:00:00:01`).

use pathstack_core::error::ModuleError;
use pathstack_core::stack::ModuleSetup;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// Why an `ADDR/PREFIX` string did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an IPv4 address with prefix length (expected e.g. 10.0.0.1/24)")]
pub struct CidrError(pub String);

/// Parses `A.B.C.D/P` into the address and the prefix length (0..=32).
///
/// ```
/// use pathstack_inet::modules::parse_cidr;
/// assert_eq!(parse_cidr("10.77.1.1/24").unwrap(), ("10.77.1.1".parse().unwrap(), 24));
/// assert!(parse_cidr("10.77.1.1").is_err());
/// ```
pub fn parse_cidr(s: &str) -> Result<(Ipv4Addr, u8), CidrError> {
    let err = || CidrError(s.to_string());
    let (a, p) = s.split_once('/').ok_or_else(err)?;
    let addr = Ipv4Addr::from_str(a.trim()).map_err(|_| err())?;
    let len: u8 = p.trim().parse().map_err(|_| err())?;
    if len > 32 {
        return Err(err());
    }
    Ok((addr, len))
}

/// A required parameter parsed with `parse`, with an error naming the
/// instance and the key.
pub(crate) fn required<T, E: std::fmt::Display>(
    setup: &ModuleSetup<'_>,
    key: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, ModuleError> {
    let bad = |reason: String| ModuleError::BadParam {
        instance: setup.instance().to_string(),
        key: key.to_string(),
        reason,
    };
    let v = setup
        .params()
        .get(key)
        .ok_or_else(|| bad("missing (required)".to_string()))?;
    parse(v).map_err(|e| bad(e.to_string()))
}

/// An optional parameter parsed with `parse`.
pub(crate) fn optional<T, E: std::fmt::Display>(
    setup: &ModuleSetup<'_>,
    key: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<Option<T>, ModuleError> {
    match setup.params().get(key) {
        None => Ok(None),
        Some(_) => required(setup, key, parse).map(Some),
    }
}

/// Takes the port off the end of a `PARTICIPANTS` address (the transport
/// module's part, RFC 768/RFC 9293 ports); `None` when the address does not
/// end in one.
pub(crate) fn pop_port(parts: &mut Vec<pathstack_core::attrs::keys::AddrPart>) -> Option<u16> {
    match parts.last() {
        Some(pathstack_core::attrs::keys::AddrPart::Port(p)) => {
            let p = *p;
            parts.pop();
            Some(p)
        }
        _ => None,
    }
}

/// What a transport module (UDP, TCP) takes from a path's `PARTICIPANTS`:
/// the local port and the remote port, popped off, and the remote address,
/// left for IP (which pops it) but needed here for the pseudo-header
/// checksum (RFC 768, RFC 9293 §3.1).
pub(crate) fn transport_ends(
    attrs: &mut pathstack_core::attrs::Attrs,
) -> (Option<u16>, Option<u16>, Option<std::net::Ipv4Addr>) {
    use pathstack_core::attrs::keys::{AddrPart, PARTICIPANTS};
    let Some(p) = attrs.get_mut(&PARTICIPANTS) else {
        return (None, None, None);
    };
    let local = pop_port(&mut p.local);
    let remote = pop_port(&mut p.remote);
    let remote_ip = match p.remote.last() {
        Some(AddrPart::Ipv4(a)) => Some(std::net::Ipv4Addr::from(*a)),
        _ => None,
    };
    (local, remote, remote_ip)
}

#[cfg(test)]
mod tests {
    use super::parse_cidr;

    #[test]
    fn cidr_forms() {
        assert_eq!(
            parse_cidr("192.168.0.7/0").unwrap(),
            (std::net::Ipv4Addr::new(192, 168, 0, 7), 0)
        );
        for bad in ["", "1.2.3.4/33", "1.2.3/8", "1.2.3.4/x", "/24"] {
            assert!(parse_cidr(bad).is_err(), "{bad}");
        }
    }
}
