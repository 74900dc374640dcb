//! How to open a TAP device: namespace, MTU, link state, address,
//! offloads, multi-queue.

#[cfg(doc)] // only named in the docs
use super::{TapDevice, TapError};

/// How to open a TAP device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapOptions {
    /// Open the interface inside this named network namespace
    /// (`/run/netns/NAME`, as made by `ip netns add`). `None`: the calling
    /// thread's namespace.
    pub netns: Option<String>,
    /// Set the interface MTU to this before use. `None`: keep it.
    pub mtu: Option<u32>,
    /// Set the interface administratively up (IFF_UP) if it is not.
    pub bring_up: bool,
    /// The hardware address the user-space host behind this TAP uses.
    /// `None`: derived from the kernel-side address (see [`TapDevice::mac`]).
    pub mac: Option<[u8; 6]>,
    /// Negotiate offloads (see the [module docs](super)); off by default.
    pub offload: bool,
    /// Open one queue of a multi-queue interface (`IFF_MULTI_QUEUE`; see
    /// [`TapOptions::multi_queue`]); off by default.
    pub multi_queue: bool,
}

impl Default for TapOptions {
    /// The calling thread's namespace, MTU unchanged, brought up, derived MAC.
    fn default() -> Self {
        TapOptions {
            netns: None,
            mtu: None,
            bring_up: true,
            mac: None,
            offload: false,
            multi_queue: false,
        }
    }
}

impl TapOptions {
    /// The defaults (see [`TapOptions::default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Opens the interface inside the named network namespace.
    pub fn netns(mut self, name: impl Into<String>) -> Self {
        self.netns = Some(name.into());
        self
    }
    /// Sets the interface MTU on open.
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = Some(mtu);
        self
    }
    /// Whether to bring the interface up on open.
    pub fn bring_up(mut self, up: bool) -> Self {
        self.bring_up = up;
        self
    }
    /// The user-space host's hardware address.
    pub fn mac(mut self, mac: [u8; 6]) -> Self {
        self.mac = Some(mac);
        self
    }
    /// Whether to negotiate offloads (`IFF_VNET_HDR`, `TUNSETOFFLOAD`):
    /// partial checksums and 64 KB TCP super-segments both ways, as far as
    /// the kernel accepts them ([`TapDevice::offloads`]).
    ///
    /// ```
    /// use pathstack_devices::TapOptions;
    /// assert!(!TapOptions::new().offload);
    /// assert!(TapOptions::new().offload(true).offload);
    /// ```
    pub fn offload(mut self, on: bool) -> Self {
        self.offload = on;
        self
    }
    /// Whether to open the interface as a multi-queue TAP
    /// (`IFF_MULTI_QUEUE`). Every [`TapDevice::open`] of the same name with
    /// this set attaches one more queue (the kernel allows up to 256), each
    /// its own [`TapDevice`] with its own file descriptor, so one stack per
    /// core can each own a queue. The kernel spreads frames for user space
    /// over the queues by flow: a flow goes to the queue that last wrote a
    /// frame of it, else by the frame's flow hash (`tun_select_queue`).
    /// Frames of no flow the queue's stack wrote (an ARP reply, say) may
    /// land on any queue.
    ///
    /// All opens of one interface must agree on this: the kernel refuses
    /// to attach a queue with it to an interface opened without it, and
    /// the other way round (`TUNSETIFF` fails with `EINVAL`). They should
    /// agree on [`offload`](Self::offload) too: the virtio-net header is
    /// a setting of the interface, not of a queue, so the last open
    /// decides it for every queue. A kernel without multi-queue support
    /// gives [`TapError::NoMultiQueue`].
    ///
    /// ```
    /// use pathstack_devices::TapOptions;
    /// assert!(!TapOptions::new().multi_queue);
    /// assert!(TapOptions::new().multi_queue(true).multi_queue);
    /// ```
    pub fn multi_queue(mut self, on: bool) -> Self {
        self.multi_queue = on;
        self
    }
}
