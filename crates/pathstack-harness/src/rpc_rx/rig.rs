//! The `rpc_rx` rig: host A running the RPC stack after a call exchange
//! with host B, two calls of A in flight to B, and B gone: the harness
//! speaks for B.

use super::boot_ids::set_boot_ids;
use super::track::Track;
use super::{RpcRxReach, ECHO};
use crate::frames::{a_mac, eth, ipv4, A_IP};
use crate::host_on_wire::HostOnWire;
use crate::host_pair::HostPair;
use crate::input::pattern;
use pathstack::host::HostConfig;
use pathstack::rpc::{Echo, RpcCall, RpcError};
use pathstack_core::device::wire::WireConfig;
use pathstack_rpc::modules::{protocol, RpcNet};
use pathstack_rpc::Peer;

pub(crate) struct Rig {
    pub(crate) wire: HostOnWire,
    pub(crate) net: RpcNet,
    pub(crate) b_peer: Peer,
    pub(crate) calls: Vec<RpcCall>,
    pub(crate) track: Track,
    /// A's BLAST fragment payload.
    pub(crate) frag_len: usize,
    pub(crate) max_request: usize,
    /// What B sent during the setup (the seeds replay it).
    pub(crate) b_frames: Vec<Vec<u8>>,
    ip_id: u16,
    /// Procedure runs on A during the setup.
    pub(crate) setup_runs: u64,
    pub(crate) reach: RpcRxReach,
}

impl Rig {
    pub(crate) fn new(net: RpcNet) -> Option<Rig> {
        let mut hosts = HostPair::new(|cidr| {
            Some(HostConfig {
                rpc: Some(net),
                udp: false,
                tcp: false,
                ..HostConfig::parse(cidr).ok()?
            })
        })?;
        hosts.a.rpc().server().ok()?.register(ECHO, Echo).ok()?;
        hosts.b.rpc().server().ok()?.register(ECHO, Echo).ok()?;
        let a_peer = hosts.a.rpc().peer().ok()?;
        let b_peer = hosts.b.rpc().peer().ok()?;
        // A's reply of 3,000 octets is fragmented: the fragment length
        // is read from it.
        let ab = hosts.a.rpc().start(b_peer, ECHO, &pattern(100, 1)).ok()?;
        let ba = hosts.b.rpc().start(a_peer, ECHO, &pattern(3000, 2)).ok()?;
        let (mut ab_done, mut ba_done) = (false, false);
        for _ in 0..2000 {
            hosts.step(1);
            // A handle is spent once its outcome was read.
            if !ab_done {
                ab_done = hosts.a.rpc().poll(&ab).ok()?.is_some();
            }
            if !ba_done {
                ba_done = hosts.b.rpc().poll(&ba).ok()?.is_some();
            }
            if ab_done && ba_done {
                break;
            }
        }
        if !(ab_done && ba_done) {
            return None;
        }
        let (mut wire, log) = hosts.part();
        let calls = vec![
            wire.a.rpc().start(b_peer, ECHO, &pattern(10, 3)).ok()?,
            wire.a.rpc().start(b_peer, ECHO, &pattern(5000, 4)).ok()?,
        ];
        let b_mac = WireConfig::default().mac_b;
        let mut track = Track::default();
        let (mut a_bid, mut b_bid) = (None, None);
        let mut b_frames = Vec::new();
        for f in log {
            if f.get(6..12) == Some(&b_mac[..]) {
                b_bid = b_bid.or(Track::sender_bid(&f));
                b_frames.push(f);
            } else {
                a_bid = a_bid.or(Track::sender_bid(&f));
                track.see(&f);
            }
        }
        // The boot ids come from the wall clock: the setup's frames say
        // them.
        track.a_bid = a_bid?;
        track.b_bid = b_bid?;
        let frag_len = track.frag_len?;
        let max_request = wire.a.rpc().max_request().ok()?;
        let setup_runs = wire.a.rpc().server().ok()?.calls();
        let mut rig = Rig {
            wire,
            net,
            b_peer,
            calls,
            track,
            frag_len,
            max_request,
            b_frames,
            ip_id: 1,
            setup_runs,
            reach: RpcRxReach::default(),
        };
        rig.poll();
        Some(rig)
    }

    /// Reads `call`'s outcome into the counts; whether it had one.
    pub(crate) fn outcome(&mut self, call: &RpcCall) -> bool {
        match self.wire.a.rpc().poll(call) {
            Ok(None) => false,
            Ok(Some(_)) => {
                self.reach.replies += 1;
                true
            }
            Err(e) => {
                self.reach.failures += 1;
                if matches!(e, RpcError::PeerRebooted { .. }) {
                    self.reach.peer_rebooted += 1;
                }
                true
            }
        }
    }

    /// A polls; what it sent is read back into the track.
    pub(crate) fn poll(&mut self) {
        let track = &mut self.track;
        self.wire.poll(|f| track.see(f));
    }

    /// A BLAST (`bidctl` false) or BIDCTL message from B to A, on the
    /// rig's network or, with `other`, on the other one.
    pub(crate) fn frame(&mut self, bidctl: bool, other: bool, msg: &[u8]) -> Vec<u8> {
        let ip = (self.net == RpcNet::Ip) != other;
        if ip {
            let proto = if bidctl {
                protocol::IP_BIDCTL
            } else {
                protocol::IP_BLAST
            };
            self.ip_id = self.ip_id.wrapping_add(1);
            ipv4(proto, self.ip_id, 0x4000, 64, A_IP, msg)
        } else {
            let ethertype = if bidctl {
                protocol::ETHERTYPE_BIDCTL
            } else {
                protocol::ETHERTYPE_BLAST
            };
            eth(a_mac(), ethertype, msg)
        }
    }

    /// Puts B's and A's boot ids into a frame (and the answered query's
    /// tag into a BIDCTL response), recomputing the checksums: a recorded
    /// frame then speaks to this rig's incarnations.
    pub(crate) fn fix_up(&self, f: &mut [u8]) {
        let t = self.track;
        set_boot_ids(f, t.b_bid, t.a_bid, |m| {
            if m[1] & 2 != 0 {
                m[16..20].copy_from_slice(&t.a_query_tag.to_be_bytes());
            }
        });
    }
}
