//! Opening a TAP: the name check, the `/dev/net/tun` attach and interface
//! set-up, and doing both from inside another network namespace.

use super::offloads::{negotiate, TapOffloads};
use super::{TapError, TapOptions};
use crate::sys;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;

/// What the namespace thread hands back.
pub(super) struct Opened {
    pub(super) file: File,
    pub(super) ctl: OwnedFd,
    pub(super) name: String,
    pub(super) mtu: u32,
    pub(super) kernel_mac: [u8; 6],
    pub(super) offloads: TapOffloads,
}

/// Refuses a name the kernel would reject or truncate, before any system
/// call.
pub(super) fn check_name(name: &str) -> Result<(), TapError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name.len() > sys::MAX_IFNAME {
        Some("longer than 15 bytes (IFNAMSIZ)")
    } else if name
        .bytes()
        .any(|b| b == 0 || b == b'/' || b.is_ascii_whitespace())
    {
        Some("contains NUL, '/' or whitespace")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(TapError::InvalidName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Everything that must happen inside the interface's namespace.
pub(super) fn open_here(name: &str, opts: &TapOptions) -> Result<Opened, TapError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(|source| TapError::OpenTun { source })?;
    let ioctl_err = |op: &'static str, name: &str| {
        let name = name.to_string();
        move |source| TapError::Ioctl { op, name, source }
    };
    let features = sys::tun_get_features(&file);
    if opts.multi_queue {
        // Unlike offloads, multi-queue cannot be quietly left out: the
        // caller means to open several queues of one interface, and without
        // the flag the second open would fail (EBUSY) anyway.
        let features = features.as_ref().map_err(|e| TapError::Ioctl {
            op: "TUNGETFEATURES",
            name: name.to_string(),
            source: io::Error::new(e.kind(), e.to_string()),
        })?;
        if features & libc::IFF_MULTI_QUEUE as libc::c_uint == 0 {
            return Err(TapError::NoMultiQueue {
                name: name.to_string(),
            });
        }
    }
    // Offloads need the header; a kernel whose TUN driver cannot do it
    // (TUNGETFEATURES without IFF_VNET_HDR) gets a plain TAP.
    let vnet = opts.offload
        && features
            .as_ref()
            .is_ok_and(|f| f & libc::IFF_VNET_HDR as libc::c_uint != 0);
    let name = sys::tun_set_iff(&file, name, vnet, opts.multi_queue)
        .map_err(ioctl_err("TUNSETIFF", name))?;
    let offloads = if vnet {
        negotiate(&file)
    } else {
        // A persistent TAP keeps the offloads its last reader accepted;
        // without the header to describe them, the kernel would hand us
        // super-segments and partial checksums we could not recognise.
        // Refused only by kernels without TUNSETOFFLOAD, which then have
        // nothing to reset.
        let _ = sys::tun_set_offload(&file, 0);
        TapOffloads::default()
    };
    let ctl = sys::control_socket().map_err(ioctl_err("socket(AF_INET)", &name))?;
    if let Some(mtu) = opts.mtu {
        sys::set_mtu(&ctl, &name, mtu).map_err(ioctl_err("SIOCSIFMTU", &name))?;
    }
    if opts.bring_up {
        sys::set_up(&ctl, &name).map_err(ioctl_err("SIOCSIFFLAGS(IFF_UP)", &name))?;
    }
    let mtu = sys::get_mtu(&ctl, &name).map_err(ioctl_err("SIOCGIFMTU", &name))?;
    let kernel_mac = sys::get_hwaddr(&ctl, &name).map_err(ioctl_err("SIOCGIFHWADDR", &name))?;
    Ok(Opened {
        file,
        ctl,
        name,
        mtu,
        kernel_mac,
        offloads,
    })
}

/// Runs [`open_here`] on a thread that first enters namespace `ns`.
pub(super) fn open_in_netns(ns: &str, name: &str, opts: &TapOptions) -> Result<Opened, TapError> {
    let ns_owned = ns.to_string();
    let name_owned = name.to_string();
    let opts = opts.clone();
    let thread = std::thread::Builder::new()
        .name(format!("netns-{ns}"))
        .spawn(move || {
            let path = format!("/run/netns/{ns_owned}");
            let netns_err = |source| TapError::Netns {
                name: ns_owned.clone(),
                source,
            };
            let handle = File::open(&path).map_err(netns_err)?;
            sys::enter_netns(&handle).map_err(netns_err)?;
            // This thread ends right after, so it never has to go back.
            open_here(&name_owned, &opts)
        })
        .map_err(|source| TapError::Thread {
            name: name.to_string(),
            source,
        })?;
    thread.join().unwrap_or_else(|_| {
        Err(TapError::Thread {
            name: name.to_string(),
            source: io::Error::other("namespace thread panicked"),
        })
    })
}

/// The kernel's per-CPU input backlog bound (`net.core.netdev_max_backlog`),
/// 1000 when it cannot be read.
pub(super) fn read_backlog() -> usize {
    std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tap::TapDevice;

    #[test]
    fn names_are_checked_before_any_system_call() {
        for bad in ["", "a-name-longer-than-15", "a/b", "a b", "nul\0"] {
            let err = TapDevice::open(bad, TapOptions::new()).unwrap_err();
            assert!(
                matches!(err, TapError::InvalidName { .. }),
                "{bad:?}: {err}"
            );
        }
        assert!(
            check_name("pstap-012345678").is_ok(),
            "15 bytes is the limit"
        );
    }

    #[test]
    fn missing_namespace_is_a_clear_error() {
        let err = TapDevice::open(
            "pstest0",
            TapOptions::new().netns("pathstack-no-such-namespace"),
        )
        .unwrap_err();
        assert!(matches!(err, TapError::Netns { .. }), "{err}");
        assert!(err.to_string().contains("pathstack-no-such-namespace"));
    }
}
