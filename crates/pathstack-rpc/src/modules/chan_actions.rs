//! CHAN's engine requests turned into messages on a path: one drain for
//! both tables — the client table's, which CHAN's module drives (its
//! poll, the client stage's packets and notices), and the server
//! table's, which the server path's CHAN stage holds
//! (`modules::server_channels`). The two used to be written out twice
//! (the module's `drain` and the server stage's flush) and differed only
//! in where the saved copy comes from and which path the messages leave
//! from.

use crate::anno::{CallStatus, RpcAnno, RpcTag};
use crate::chan::{CallError, ChanAction, ChannelKey, Payload};
use crate::wire::chan::{ChanHeader, HEADER_LEN};
use pathstack_core::{Dir, Msg, MsgPool, PathId};

use super::sends::Sends;

/// Turns the engine's requests in `actions` (left empty, its capacity
/// kept) into messages from the CHAN stage at `from` (path, position),
/// pushed on `into`: a `Send` as CHAN's header followed by the channel's
/// saved copy (`saved`) when it names one, going down; a failed call
/// (only a client's fails) as an empty message going up with its
/// status. Requests with no stage to leave from (`from` is `None`: the
/// client path is not made yet) are dropped. Returns the `Reply` or
/// `Execute` about the packet being processed, if any (one per packet),
/// and how many messages could not be made for want of a buffer: a
/// resend skipped so is sent again when the channel's timer, backed off,
/// fires. `FREERESOURCES` is left to BLAST's hold timer (see the CHAN
/// module's docs).
pub(super) fn drain<'t>(
    actions: &mut Vec<ChanAction>,
    saved: impl Fn(ChannelKey) -> Option<&'t [u8]>,
    from: Option<(PathId, usize)>,
    pool: &MsgPool,
    into: &mut Sends,
) -> (Option<ChanAction>, u64) {
    let mut own = None;
    let mut failed = 0;
    for a in actions.drain(..) {
        match a {
            ChanAction::Send {
                key,
                header,
                payload,
            } => {
                let Some((path, pos)) = from else {
                    continue;
                };
                let body = match payload {
                    Payload::None => None,
                    Payload::SavedCopy => saved(key),
                };
                match message(pool, &header, body, key) {
                    Some(m) => into.push((path, pos, Dir::Down, m)),
                    None => failed += 1,
                }
            }
            ChanAction::CallFailed { key, error } => {
                let Some((path, pos)) = from else {
                    continue;
                };
                match pool.alloc(0) {
                    Ok(mut m) => {
                        let an = m.anno_mut();
                        an.set_rpc_peer(key.peer);
                        an.set_rpc_tag(RpcTag {
                            status: status_of(error),
                            ..RpcTag::slot(key.chan)
                        });
                        into.push((path, pos, Dir::Up, m));
                    }
                    Err(_) => failed += 1,
                }
            }
            r @ (ChanAction::Reply { .. } | ChanAction::Execute { .. }) => own = Some(r),
            ChanAction::FreeResources { .. } => {}
        }
    }
    (own, failed)
}

/// The message a `Send` action asks for on channel `key`: CHAN's `header`
/// and the saved copy `body`, if any (`None`: no buffer).
fn message(
    pool: &MsgPool,
    header: &ChanHeader,
    body: Option<&[u8]>,
    key: ChannelKey,
) -> Option<Msg> {
    let body = body.unwrap_or(&[]);
    let mut m = pool.alloc(HEADER_LEN + body.len()).ok()?;
    let b = m.as_mut_slice();
    header.emit(&mut b[..HEADER_LEN]);
    b[HEADER_LEN..].copy_from_slice(body);
    m.anno_mut().set_rpc_peer(key.peer);
    Some(m)
}

/// The status a failed call's outcome carries up.
pub(super) fn status_of(e: CallError) -> CallStatus {
    match e {
        CallError::PeerRebooted => CallStatus::PeerRebooted,
        CallError::TimedOut => CallStatus::TimedOut,
        CallError::TooLarge { .. } => CallStatus::TooLarge,
        CallError::Busy => CallStatus::Busy,
        CallError::Disabled | CallError::Aborted | CallError::NoChannel => CallStatus::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::chan::flags;
    use crate::Peer;
    use pathstack_core::msg::PoolConfig;
    use std::net::Ipv4Addr;

    fn key() -> ChannelKey {
        ChannelKey {
            peer: Peer::from(Ipv4Addr::new(10, 0, 0, 2)),
            prot_id: 20,
            chan: 1,
        }
    }

    /// Before the client path is made nothing can leave: the sends and
    /// failed calls are dropped (not counted as wanting a buffer), the
    /// packet's own `Reply` still comes back, and the requests are gone.
    #[test]
    fn without_a_stage_only_the_packets_own_action_comes_back() {
        let pool = MsgPool::new(PoolConfig::default());
        let mut actions = vec![
            ChanAction::Send {
                key: key(),
                header: ChanHeader {
                    chan: 1,
                    flags: flags::FROM_CLIENT | flags::USER_MSG,
                    prot_id: 20,
                    seq: 2,
                    len: 8,
                },
                payload: Payload::SavedCopy,
            },
            ChanAction::CallFailed {
                key: key(),
                error: CallError::TimedOut,
            },
            ChanAction::Reply { key: key(), len: 8 },
            ChanAction::FreeResources { ticket: 7 },
        ];
        let mut into = Sends::new();
        let (own, failed) = drain(
            &mut actions,
            |_| Some(&[1u8; 8][..]),
            None,
            &pool,
            &mut into,
        );
        assert!(matches!(own, Some(ChanAction::Reply { len: 8, .. })));
        assert_eq!(failed, 0);
        assert!(into.is_empty());
        assert!(actions.is_empty());
    }

    #[test]
    fn a_failed_call_goes_up_with_its_status() {
        assert_eq!(status_of(CallError::PeerRebooted), CallStatus::PeerRebooted);
        assert_eq!(status_of(CallError::TimedOut), CallStatus::TimedOut);
        assert_eq!(status_of(CallError::Busy), CallStatus::Busy);
        assert_eq!(status_of(CallError::Aborted), CallStatus::Failed);
    }
}
