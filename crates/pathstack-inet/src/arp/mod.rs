//! The ARP engine the `ARP` module wraps, independent of the path
//! machinery and tested alone: the cache of an interface ([`cache`]).

pub mod cache;
