//! `ICMP`: echo (RFC 792) and the receiving side of ICMP errors.
//!
//! ICMP creates its path through IP when it initializes (thesis §4.1.2): a
//! passive path for IP protocol 1 that answers echo requests in place —
//! turned around at the ICMP stage, back down the same path to the peer IP
//! recorded on the way up — and leaves echo replies and errors in the
//! path's sink queue for the application (a `ping` client). IP sends the
//! errors it generates down this path too.

use crate::anno::InetAnno;
use crate::wire::icmp::{
    echo_reply_in_place, reply_form, types, IcmpDropReason, IcmpPacket, HEADER_LEN, REPLY_FORM_MAX,
};
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::device::FrameMatch;
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{
    CreateCx, Created, Creation, EndRoute, ModCx, Module, Route, RouteCx,
};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg, MsgError, MsgPool, PathId};
use std::net::Ipv4Addr;

/// Spec of `ICMP`.
pub const ICMP_SPEC: ModuleSpec = ModuleSpec {
    name: "ICMP",
    doc: "ICMP (RFC 792): answers echo requests; echo replies and errors go to the path's sink",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after()],
    params: &[],
    understands: &[],
};

/// Counters of the `ICMP` module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IcmpCounters {
    /// Echo requests answered.
    pub echo_replies_sent: u64,
    /// Echo replies received (for the application).
    pub echo_replies_received: u64,
    /// ICMP errors received (for the application).
    pub errors_received: u64,
    /// Of those, errors handed to the path of the UDP datagram or TCP
    /// segment they quote.
    pub errors_delivered: u64,
    /// Messages the application sent.
    pub sent: u64,
}

/// The `ICMP` module: its path and counters.
pub struct IcmpModule {
    path: Option<PathId>,
    counters: IcmpCounters,
}

impl IcmpModule {
    /// Factory (no parameters).
    pub fn create(_: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(IcmpModule {
            path: None,
            counters: IcmpCounters::default(),
        }))
    }

    /// ICMP's path: send echo requests on it `Dir::Down` (with
    /// [`InetAnno::peer_ip`] set) and read replies from
    /// its `Dir::Up` sink.
    pub fn path(&self) -> Option<PathId> {
        self.path
    }

    /// The counters.
    pub fn counters(&self) -> IcmpCounters {
        self.counters
    }

    /// The frames of echo requests to `local` over Ethernet, as a device
    /// can recognise them ([`Stack::set_device_discard`] on ICMP's path):
    /// EtherType IPv4, a 20-byte IP header (a header with options is
    /// left to the stack's own classifier), protocol ICMP, destination
    /// `local`, ICMP type echo request. Only requests: the ICMP errors
    /// on the same path tell other paths what became of their traffic.
    ///
    /// [`Stack::set_device_discard`]: pathstack_core::Stack::set_device_discard
    pub fn echo_requests_to(local: Ipv4Addr) -> FrameMatch {
        use crate::wire::{eth, ipv4};
        let ip = eth::HEADER_LEN;
        let icmp = ip + ipv4::MIN_HEADER_LEN;
        FrameMatch::new()
            .with_u16(eth::field::ETHERTYPE.start as u16, eth::EtherType::IPV4.0)
            .with_u8((ip + ipv4::field::VER_IHL) as u16, 0x45)
            .with_u8((ip + ipv4::field::PROTOCOL) as u16, ipv4::protocol::ICMP)
            .with_u32((ip + ipv4::field::DST_ADDR.start) as u16, u32::from(local))
            .with_u8(icmp as u16, types::ECHO_REQUEST)
    }

    /// An echo request to `dst` with `data` (RFC 792), ready to send on
    /// [`IcmpModule::path`]; the checksum is filled in on the way down.
    ///
    /// ```
    /// use pathstack_core::{MsgPool, PoolConfig};
    /// use pathstack_inet::modules::IcmpModule;
    /// let pool = MsgPool::new(PoolConfig::small(4));
    /// let m = IcmpModule::echo_request(&pool, "10.0.0.2".parse().unwrap(), 7, 1, b"hi").unwrap();
    /// assert_eq!(&m.as_slice()[..2], &[8, 0]);
    /// assert_eq!(m.len(), 10);
    /// ```
    pub fn echo_request(
        pool: &MsgPool,
        dst: Ipv4Addr,
        ident: u16,
        seq: u16,
        data: &[u8],
    ) -> Result<Msg, MsgError> {
        let mut m = pool.alloc(HEADER_LEN + data.len())?;
        let mut p = IcmpPacket::new_unchecked(m.as_mut_slice());
        p.set_msg_type(types::ECHO_REQUEST);
        p.set_code(0);
        p.set_checksum(0);
        p.set_echo_ident(ident);
        p.set_echo_seq(seq);
        p.payload_mut().copy_from_slice(data);
        m.anno_mut().set_peer_ip(dst);
        Ok(m)
    }
}

impl Module for IcmpModule {
    fn spec(&self) -> &'static ModuleSpec {
        &ICMP_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        cx.request_path(Attrs::new().with(&keys::PASSIVE_OPEN, true), 0);
        Ok(())
    }

    /// An ICMP message left ICMP's path upward, for its sink. An error
    /// quoting a UDP datagram or TCP segment this host sent also goes, as
    /// a copy marked [`InetAnno::icmp_error`], to the path that sent it,
    /// found by classifying the quote turned around (RFC 1122 §4.1.3.3:
    /// UDP MUST pass ICMP errors to the application; §4.2.3.9: TCP MUST
    /// act on them). The original stays in the sink for the application
    /// that reads ICMP (`Host::echo_replies`).
    fn route_end(&mut self, dir: Dir, msg: &mut Msg, cx: &mut RouteCx<'_>) -> EndRoute {
        if dir == Dir::Up {
            let mut buf = [0u8; REPLY_FORM_MAX];
            let found = reply_form(msg.as_slice(), &mut buf).and_then(|q| cx.classify_below(q));
            if let Some((path, dir, below)) = found {
                // One copy per error from the pool (errors are rare and
                // bounded by the path's sink and the pool).
                if let Ok(mut copy) = msg.try_clone() {
                    copy.anno_mut().set_icmp_error(true);
                    if cx.send_after(path, below, dir, copy).is_ok() {
                        self.counters.errors_delivered += 1;
                    }
                }
            }
        }
        EndRoute::Sink
    }

    fn path_created(&mut self, _tag: u64, result: Result<PathId, &PathError>) {
        if let Ok(p) = result {
            self.path = Some(p);
        }
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_top("ICMP is the top of its path")?;
        attrs.insert(&keys::PROT_ID, u32::from(crate::wire::ipv4::protocol::ICMP));
        Ok(Created::new(IcmpStage {}, Route::Service(0)))
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        vec![
            ("echo_replies_sent".into(), c.echo_replies_sent),
            ("echo_replies_received".into(), c.echo_replies_received),
            ("errors_received".into(), c.errors_received),
            ("errors_delivered".into(), c.errors_delivered),
            ("sent".into(), c.sent),
        ]
    }
}

/// The `ICMP` stage.
pub struct IcmpStage {}

impl IcmpStage {
    fn receive(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let (ty, is_error) = match IcmpPacket::new_checked(msg.as_slice()) {
            Ok(p) => (p.msg_type(), p.is_error()),
            Err(e) => return Verdict::Drop(e.into()),
        };
        let Some(m) = cx.module::<IcmpModule>() else {
            return Verdict::Drop(IcmpDropReason::UnknownType.into());
        };
        match ty {
            types::ECHO_REQUEST => {
                // RFC 1122 §3.2.2.6: an echo request to a broadcast address
                // MAY be silently discarded; we do (no smurf amplifier).
                let a = msg.anno();
                if a.link_broadcast() || a.local_ip().is_some_and(|d| d.is_broadcast()) {
                    return Verdict::Drop(IcmpDropReason::BroadcastEcho.into());
                }
                match echo_reply_in_place(msg.as_mut_slice()) {
                    Ok(()) => {
                        m.counters.echo_replies_sent += 1;
                        Verdict::Back
                    }
                    Err(e) => Verdict::Drop(e.into()),
                }
            }
            types::ECHO_REPLY => {
                m.counters.echo_replies_received += 1;
                Verdict::Next
            }
            _ if is_error => {
                m.counters.errors_received += 1;
                Verdict::Next
            }
            // RFC 1122 §3.2.2: unknown types MUST be silently discarded.
            _ => Verdict::Drop(IcmpDropReason::UnknownType.into()),
        }
    }
}

impl Stage for IcmpStage {
    #[inline]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Up {
            return self.receive(msg, cx);
        }
        // From the application: fill in the checksum (RFC 792: over the
        // whole ICMP message with the checksum field zero).
        let b = msg.as_mut_slice();
        if b.len() < HEADER_LEN {
            return Verdict::Drop(IcmpDropReason::Truncated.into());
        }
        IcmpPacket::new_unchecked(b).fill_checksum();
        if let Some(m) = cx.module::<IcmpModule>() {
            m.counters.sent += 1;
        }
        Verdict::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn frame(dst: [u8; 4], request: bool) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]).ipv4(
            [10, 0, 0, 2],
            dst,
            64,
        );
        let b = if request {
            b.icmpv4_echo_request(7, 1)
        } else {
            b.icmpv4_echo_reply(7, 1)
        };
        let mut out = Vec::new();
        b.write(&mut out, b"ping").unwrap();
        out
    }

    #[test]
    fn the_device_match_is_echo_requests_to_the_address_only() {
        let m = IcmpModule::echo_requests_to(Ipv4Addr::new(10, 0, 0, 1));
        assert!(m.matches(&frame([10, 0, 0, 1], true)));
        assert!(!m.matches(&frame([10, 0, 0, 9], true)), "another address");
        assert!(!m.matches(&frame([10, 0, 0, 1], false)), "a reply");
    }
}
