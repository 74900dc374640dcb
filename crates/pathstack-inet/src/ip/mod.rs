//! The IPv4 engines the `IP` and `ICMP` modules wrap, each independent of
//! the path machinery and tested alone (as TCP's are in [`crate::tcp`]):
//! fragmentation ([`frag`]) and reassembly ([`reassembly`]), routing
//! ([`route`]), identification ([`ipv4_ident`]), when not to send an ICMP
//! error ([`icmp_suppression`]) and the error rate limit ([`rate_limit`]).

pub mod frag;
pub mod icmp_suppression;
pub mod ipv4_ident;
pub mod rate_limit;
pub mod reassembly;
pub mod route;
