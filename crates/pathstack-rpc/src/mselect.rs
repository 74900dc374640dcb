//! MSELECT: Sprite RPC's procedure selection (spec §8; X32
//! `select_common.c`, `multi_select.c`).
//!
//! The client side prepends `{id, SEL_OK}` to each request and turns a
//! `SEL_FAIL` reply into an error; the server side looks the id up in a
//! bounded registry of procedures and answers an unknown id with
//! `{id, SEL_FAIL}` itself, so CHAN still completes the exchange (M1).
//! No timers: reliability and duplicate suppression are CHAN's.

use crate::wire::mselect::{MselectDropReason, MselectHeader, SEL_FAIL, SEL_OK};

/// CHAN's protocol number for MSELECT (spec §0.3).
pub const PROT_ID: u32 = 20;
/// The procedure id of the x-kernel's `xrpctest` server (spec §1.2).
pub const XRPCTEST_ID: u32 = 1002;
/// Default bound on the procedures a server registers.
pub const DEFAULT_MAX_PROCEDURES: usize = 64;

/// Why a call through MSELECT failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MselectError {
    /// The server answered `SEL_FAIL`: no such procedure, or it failed.
    #[error("procedure {id} does not exist or failed on the server")]
    Failed {
        /// The procedure id.
        id: u32,
    },
    /// The reply was malformed or for another procedure.
    #[error("bad MSELECT reply: {0}")]
    BadReply(MselectDropReason),
    /// The server's registry is full.
    #[error("MSELECT registry full ({max} procedures)")]
    RegistryFull {
        /// The bound.
        max: usize,
    },
}

impl From<MselectError> for std::io::Error {
    fn from(e: MselectError) -> Self {
        let kind = match e {
            MselectError::Failed { .. } => std::io::ErrorKind::NotFound,
            MselectError::BadReply(_) => std::io::ErrorKind::InvalidData,
            MselectError::RegistryFull { .. } => std::io::ErrorKind::OutOfMemory,
        };
        std::io::Error::new(kind, e)
    }
}

/// The client end of one procedure (an active open with `id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MselectClient {
    id: u32,
}

impl MselectClient {
    /// Calls go to procedure `id`.
    pub fn new(id: u32) -> Self {
        MselectClient { id }
    }

    /// The procedure id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The header to push on a request: `{id, SEL_OK}`.
    pub fn request_header(&self) -> MselectHeader {
        MselectHeader {
            id: self.id,
            status: SEL_OK,
        }
    }

    /// Checks a reply and returns its payload: `SEL_FAIL` fails the call
    /// ([`MselectError::Failed`]), so does a reply for another id.
    ///
    /// ```
    /// use pathstack_rpc::mselect::{MselectClient, MselectError};
    /// let c = MselectClient::new(1002);
    /// assert_eq!(c.on_reply(&[0, 0, 3, 0xea, 0, 0, 0, 1, 7]), Ok(&[7][..]));
    /// assert_eq!(c.on_reply(&[0, 0, 3, 0xea, 0, 0, 0, 2]), Err(MselectError::Failed { id: 1002 }));
    /// ```
    pub fn on_reply<'a>(&self, reply: &'a [u8]) -> Result<&'a [u8], MselectError> {
        let (h, payload) = MselectHeader::parse(reply).map_err(MselectError::BadReply)?;
        if h.id != self.id {
            return Err(MselectError::BadReply(MselectDropReason::WrongId));
        }
        if h.status == SEL_FAIL {
            return Err(MselectError::Failed { id: self.id });
        }
        Ok(payload)
    }
}

/// Where a request goes on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection<'a> {
    /// Run procedure `id` on `payload`, then reply with
    /// [`MselectServer::reply_header`].
    Procedure {
        /// The procedure.
        id: u32,
        /// The request after the MSELECT header.
        payload: &'a [u8],
    },
    /// No procedure registered for the id: reply with this header
    /// (`{id, SEL_FAIL}`) and no payload (M1).
    Unknown {
        /// The failure reply's header.
        reply: MselectHeader,
    },
}

/// The server side: the procedures registered (openEnable per id).
#[derive(Clone, Debug)]
pub struct MselectServer {
    ids: Vec<u32>,
    max: usize,
}

impl MselectServer {
    /// A registry of at most `max` procedures.
    pub fn new(max: usize) -> Self {
        MselectServer {
            ids: Vec::new(),
            max,
        }
    }

    /// Registers procedure `id`.
    pub fn register(&mut self, id: u32) -> Result<(), MselectError> {
        if self.ids.contains(&id) {
            return Ok(());
        }
        if self.ids.len() >= self.max {
            return Err(MselectError::RegistryFull { max: self.max });
        }
        self.ids.push(id);
        Ok(())
    }

    /// Removes procedure `id`.
    pub fn unregister(&mut self, id: u32) {
        self.ids.retain(|&i| i != id);
    }

    /// Selects the procedure for a request (CHAN's payload).
    ///
    /// ```
    /// use pathstack_rpc::mselect::{MselectServer, Selection};
    /// let mut s = MselectServer::new(8);
    /// s.register(1002).unwrap();
    /// let sel = s.on_request(&[0, 0, 3, 0xea, 0, 0, 0, 1, 9]).unwrap();
    /// assert_eq!(sel, Selection::Procedure { id: 1002, payload: &[9] });
    /// ```
    pub fn on_request<'a>(&self, request: &'a [u8]) -> Result<Selection<'a>, MselectDropReason> {
        let (h, payload) = MselectHeader::parse(request)?;
        if self.ids.contains(&h.id) {
            Ok(Selection::Procedure { id: h.id, payload })
        } else {
            Ok(Selection::Unknown {
                reply: Self::reply_header(h.id, false),
            })
        }
    }

    /// The reply header: `{id, SEL_OK}` if the procedure succeeded,
    /// `{id, SEL_FAIL}` if it failed.
    pub fn reply_header(id: u32, ok: bool) -> MselectHeader {
        MselectHeader {
            id,
            status: if ok { SEL_OK } else { SEL_FAIL },
        }
    }
}

impl Default for MselectServer {
    fn default() -> Self {
        MselectServer::new(DEFAULT_MAX_PROCEDURES)
    }
}
