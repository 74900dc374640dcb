//! Which driver stands between a host's ETH and its device.

use pathstack_devices::Access;
use pathstack_inet::MacAddr;
use std::str::FromStr;

/// The network adapter a host drives its device through.
///
/// ```
/// use pathstack::nic::Nic;
/// let n: Nic = "lance:copy".parse().unwrap();
/// let mac = "02:00:00:00:00:01".parse().unwrap();
/// assert_eq!(n.driver_line(0, mac), "LANCE device=0 access=copy mac=02:00:00:00:00:01");
/// assert_eq!("tap".parse::<Nic>().unwrap(), Nic::Device);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Nic {
    /// The device itself (TAP or in-memory wire) through the generic
    /// `DRIVER` module: frames go straight to and from the device.
    #[default]
    Device,
    /// The emulated Am7990 LANCE with DEC 3000 sparse memory between the
    /// driver and the device (Mosberger, Peterson and O'Malley, *Protocol
    /// Latency: MIPS and Reality*, 1995, §2.6), descriptors accessed the way
    /// `Access` says.
    Lance(Access),
}

impl Nic {
    /// The graph line of the driver instance for device `index`, whose
    /// station address is `mac` (the address ETH uses: an adapter with an
    /// address filter must accept the frames ETH expects).
    pub fn driver_line(self, index: usize, mac: MacAddr) -> String {
        match self {
            Nic::Device => format!("DRIVER device={index}"),
            Nic::Lance(a) => format!("LANCE device={index} access={a} mac={mac}"),
        }
    }

    /// What stands between ETH and the device, in words, for headings and
    /// reports. Unlike [`Nic::name`] it does not say `tap` for
    /// [`Nic::Device`], which is also the choice on the in-memory wire.
    ///
    /// ```
    /// use pathstack::nic::Nic;
    /// assert_eq!(Nic::Device.description(), "no adapter (the DRIVER module on the device itself)");
    /// ```
    pub fn description(self) -> &'static str {
        match self {
            Nic::Device => "no adapter (the DRIVER module on the device itself)",
            Nic::Lance(Access::Copy) => "emulated LANCE, descriptors copied to dense memory",
            Nic::Lance(Access::Direct) => "emulated LANCE, descriptors accessed in place",
        }
    }

    /// The name used on command lines (`tap`, `lance:copy`, `lance:direct`).
    pub fn name(self) -> &'static str {
        match self {
            Nic::Device => "tap",
            Nic::Lance(Access::Copy) => "lance:copy",
            Nic::Lance(Access::Direct) => "lance:direct",
        }
    }
}

impl std::fmt::Display for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `--nic` value.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "unknown NIC `{0}`: use `tap` (the device itself), `lance:copy` or `lance:direct` \
     (the emulated LANCE, descriptors copied to dense memory or accessed in place)"
)]
pub struct ParseNicError(pub String);

impl FromStr for Nic {
    type Err = ParseNicError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "tap" | "device" | "wire" | "memory" => Ok(Nic::Device),
            "lance" => Ok(Nic::Lance(Access::default())),
            _ => match t.strip_prefix("lance:") {
                Some(a) => a
                    .parse()
                    .map(Nic::Lance)
                    .map_err(|_| ParseNicError(s.to_string())),
                None => Err(ParseNicError(s.to_string())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in [
            Nic::Device,
            Nic::Lance(Access::Copy),
            Nic::Lance(Access::Direct),
        ] {
            assert_eq!(n.name().parse::<Nic>().unwrap(), n);
        }
        assert!("lance:dense".parse::<Nic>().is_err());
        assert!("eth0".parse::<Nic>().is_err());
    }
}
