//! The shim's options: packetdrill's `--so_flags` string, handed to
//! [`packetdrill_interface_init`](crate::packetdrill_interface_init).
#![deny(unsafe_code)]

use std::net::Ipv4Addr;

/// What the host under test looks like. packetdrill does not tell a
/// shared object its `--local_ip` (it only uses it to build packets), so
/// `scripts/packetdrill.sh` passes the same address both ways:
/// `--local_ip=192.168.0.1 --so_flags=local_ip=192.168.0.1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShimFlags {
    /// The host's address (`local_ip=`; default 192.168.0.1, the kernel
    /// selftests' `ksft_runner.sh` value).
    pub local_ip: Ipv4Addr,
    /// Prefix length of the host's network (`prefix_len=`; default 16,
    /// `ksft_runner.sh`'s netmask 255.255.0.0).
    pub prefix_len: u8,
    /// The (fictive) router every remote address is reached through
    /// (`gateway=`; default the last address of the local network). The
    /// scripts' remote end, 192.0.2.1 by default, is off-link, and its
    /// next hop's hardware address is the shim's end of the wire.
    pub gateway: Option<Ipv4Addr>,
    /// Seed of TCP's initial sequence numbers (`seed=`; default 1), so a
    /// run repeats exactly. packetdrill maps whatever ISN we choose onto
    /// the script's, so the value does not matter to the scripts.
    pub seed: u64,
    /// The receive buffer of every connection (`rcvbuf=` bytes; default
    /// [`LINUX_RMEM_MAX`]). Linux chooses its window scale from the most
    /// its buffer may grow to, `tcp_rmem`'s maximum (15 MiB in the
    /// selftests' `defaults.sh`: a shift of 8), and pathstack from its
    /// buffer; this buffer makes the two offer the same scale.
    pub rcvbuf: usize,
    /// Offer timestamps (`timestamps=0|1`; default on, Linux's
    /// `tcp_timestamps=1`).
    pub timestamps: bool,
    /// Offer SACK (`sack=0|1`; default on, `tcp_sack=1`).
    pub sack: bool,
    /// Offer window scaling (`wscale=0|1`; default on,
    /// `tcp_window_scaling=1`).
    pub window_scaling: bool,
    /// The device segments on transmit (`tso=0|1`; default on, as
    /// packetdrill's tun; `ethtool -K tun0 tso off gso off` in a script
    /// is `tso=0`).
    pub tso: bool,
    /// Restart the congestion window after an idle period (`idle_restart=0|1`;
    /// default off as `defaults.sh`'s `tcp_slow_start_after_idle=0`, on
    /// where a script sets the sysctl to 1; RFC 5681 §4.1).
    pub idle_restart: bool,
    /// Log every packet in and out, with its time, to stderr (`trace`).
    pub trace: bool,
}

/// `tcp_rmem`'s maximum in the kernel selftests' `defaults.sh`: 15 MiB.
pub const LINUX_RMEM_MAX: usize = 15 * 1024 * 1024;

impl Default for ShimFlags {
    fn default() -> Self {
        ShimFlags {
            local_ip: Ipv4Addr::new(192, 168, 0, 1),
            prefix_len: 16,
            gateway: None,
            seed: 1,
            rcvbuf: LINUX_RMEM_MAX,
            timestamps: true,
            sack: true,
            window_scaling: true,
            tso: true,
            idle_restart: false,
            trace: false,
        }
    }
}

/// `0` or `1`.
fn switch(v: &str) -> Option<bool> {
    match v {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

impl ShimFlags {
    /// Parses `key=value` words separated by spaces or commas; an empty
    /// string is the defaults. An unknown key or a bad value is an error
    /// (packetdrill then aborts with the message, rather than running
    /// against a host set up other than asked).
    pub fn parse(s: &str) -> Result<ShimFlags, String> {
        let mut f = ShimFlags::default();
        for word in s.split([' ', ',']).filter(|w| !w.is_empty()) {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            let bad = |what: &str| format!("so_flags: bad {what} '{value}'");
            match key {
                "local_ip" => f.local_ip = value.parse().map_err(|_| bad("local_ip"))?,
                "prefix_len" => {
                    f.prefix_len = value
                        .parse()
                        .ok()
                        .filter(|p| (1..=30).contains(p))
                        .ok_or_else(|| bad("prefix_len"))?
                }
                "gateway" => f.gateway = Some(value.parse().map_err(|_| bad("gateway"))?),
                "seed" => f.seed = value.parse().map_err(|_| bad("seed"))?,
                "rcvbuf" => f.rcvbuf = value.parse().map_err(|_| bad("rcvbuf"))?,
                "timestamps" => f.timestamps = switch(value).ok_or_else(|| bad("timestamps"))?,
                "sack" => f.sack = switch(value).ok_or_else(|| bad("sack"))?,
                "wscale" => f.window_scaling = switch(value).ok_or_else(|| bad("wscale"))?,
                "tso" => f.tso = switch(value).ok_or_else(|| bad("tso"))?,
                "idle_restart" => {
                    f.idle_restart = switch(value).ok_or_else(|| bad("idle_restart"))?
                }
                "trace" => f.trace = true,
                _ => return Err(format!("so_flags: unknown option '{key}'")),
            }
        }
        Ok(f)
    }

    /// The gateway: the one given, or the last host address of the local
    /// network (never the host's own).
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway.unwrap_or_else(|| {
            let mask = u32::MAX << (32 - u32::from(self.prefix_len));
            let last = (u32::from(self.local_ip) & mask) | (!mask - 1);
            Ipv4Addr::from(last)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        assert_eq!(ShimFlags::parse("").unwrap(), ShimFlags::default());
        let f = ShimFlags::parse("local_ip=10.1.2.3, prefix_len=24 trace").unwrap();
        assert_eq!(f.local_ip, Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(f.gateway(), Ipv4Addr::new(10, 1, 2, 254));
        assert!(f.trace);
        assert_eq!(
            ShimFlags::default().gateway(),
            Ipv4Addr::new(192, 168, 255, 254)
        );
        assert!(ShimFlags::parse("local_ip=x").is_err());
        assert!(ShimFlags::parse("prefix_len=0").is_err());
        assert!(ShimFlags::parse("color=blue").is_err());
        let f = ShimFlags::parse("timestamps=0 sack=0 wscale=0 tso=0").unwrap();
        assert!(!f.timestamps && !f.sack && !f.window_scaling && !f.tso);
        assert!(!f.idle_restart, "defaults.sh: tcp_slow_start_after_idle=0");
        assert!(ShimFlags::parse("idle_restart=1").unwrap().idle_restart);
        assert!(ShimFlags::parse("tso=2").is_err());
    }
}
