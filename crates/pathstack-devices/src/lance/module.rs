//! `LANCE`: the device driver module over the emulated Am7990, the
//! counterpart of the thesis' LANCE module below ETH. Shaped like the core's
//! `DRIVER` module: one NETDEV service `up`, a stage that transmits on the
//! way down, and `poll`, which receives frames and delivers them to the
//! classifier.
//!
//! ```text
//! name=lance module=LANCE device=0 access=direct rx_ring=16 tx_ring=16;
//! ```

use super::access::Access;
use super::driver::{DriverStats, LanceConfig, LanceDriver, LanceDropReason, RxEvent};
use super::sparse::AccessCounts;
use pathstack_core::attrs::Attrs;
use pathstack_core::error::ModuleError;
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::InstanceParams;
use pathstack_core::ids::Dir;
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::msg::{Msg, MsgPool};
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::time::Instant;

/// Spec of `LANCE`.
pub const LANCE_SPEC: ModuleSpec = ModuleSpec {
    name: "LANCE",
    doc: "device driver: an emulated Am7990 LANCE (DEC 3000 sparse memory) over one device",
    services: &[ServiceSpec::new("up", ServiceType::NETDEV, Count::Any)],
    params: &[
        ParamSpec::required(
            "device",
            "index of the device given to the stack builder (the chip's wire side)",
        ),
        ParamSpec::optional(
            "access",
            "descriptor access: `copy` (dense copy and write-back) or `direct` (in place; default)",
        ),
        ParamSpec::optional(
            "rx_ring",
            "receive descriptors, a power of two up to 128 (default 16)",
        ),
        ParamSpec::optional(
            "tx_ring",
            "transmit descriptors, a power of two up to 128 (default 16)",
        ),
        ParamSpec::optional(
            "buf_size",
            "bytes per ring buffer, a multiple of 16 in 64..=4080 (default 1536)",
        ),
        ParamSpec::optional(
            "mac",
            "station address `xx:xx:xx:xx:xx:xx` (default: the device's, else 02:00:4c:41:4e:45)",
        ),
        ParamSpec::optional("promisc", "receive every frame (MODE.PROM; default false)"),
        ParamSpec::optional(
            "heartbeat",
            "the transceiver sends an SQE heartbeat (default true; false: CERR after each frame)",
        ),
        ParamSpec::optional("rx_burst", "most frames received per poll (default 64)"),
    ],
    understands: &[],
};

/// Registers `LANCE` in `types`.
pub fn register(types: &mut ModuleTypes) {
    types.register(&LANCE_SPEC, LanceModule::create);
}

/// The `LANCE` module: owns the driver, the chip and their shared memory.
pub struct LanceModule {
    driver: LanceDriver,
    /// The stack's pool, taken at `init`: the chip assembles frames for the
    /// wire in it, the driver copies received frames into it.
    pool: Option<MsgPool>,
    rx_burst: usize,
}

impl std::fmt::Debug for LanceModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanceModule")
            .field("driver", &self.driver)
            .field("rx_burst", &self.rx_burst)
            .finish_non_exhaustive()
    }
}

/// `LANCE`'s parameters as typed values ([`InstanceParams`]): the ones a
/// host sets; the rings, buffer size, promiscuity and heartbeat keep their
/// defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LanceParams {
    /// The stack's device on the chip's wire side (`device`).
    pub device: usize,
    /// How the driver reaches the descriptors (`access`).
    pub access: Access,
    /// The station address the chip's filter accepts (`mac`); `None`: the
    /// chip's default.
    pub mac: Option<[u8; 6]>,
    /// Most frames taken per poll (`rx_burst`); `None`: the default, 64.
    pub rx_burst: Option<usize>,
}

impl InstanceParams for LanceParams {
    fn spec(&self) -> &'static ModuleSpec {
        &LANCE_SPEC
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            ("device", self.device.to_string()),
            ("access", self.access.to_string()),
        ];
        if let Some(m) = self.mac {
            p.push((
                "mac",
                format!(
                    "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                    m[0], m[1], m[2], m[3], m[4], m[5]
                ),
            ));
        }
        if let Some(n) = self.rx_burst {
            p.push(("rx_burst", n.to_string()));
        }
        p
    }
}

impl LanceModule {
    /// Factory: takes device `device=N` from the stack builder as the
    /// chip's wire side; `access`, `rx_ring`, `tx_ring`, `buf_size`,
    /// `mac`, `promisc`, `heartbeat`, `rx_burst` as in [`LANCE_SPEC`].
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let index: usize = setup.param("device", usize::MAX)?;
        let d = LanceConfig::default();
        let mut config = LanceConfig {
            access: setup.param("access", d.access)?,
            rx_ring: setup.param("rx_ring", d.rx_ring)?,
            tx_ring: setup.param("tx_ring", d.tx_ring)?,
            buf_size: setup.param("buf_size", d.buf_size)?,
            promiscuous: setup.param("promisc", d.promiscuous)?,
            ..d
        };
        config.chip.heartbeat = setup.param("heartbeat", true)?;
        if let Some(text) = setup.params().get("mac") {
            config.mac = Some(parse_mac(text).ok_or_else(|| ModuleError::BadParam {
                instance: setup.instance().to_string(),
                key: "mac".into(),
                reason: format!("`{text}`: expected six hex bytes like 02:00:00:00:00:01"),
            })?);
        }
        let rx_burst = setup.param("rx_burst", 64usize)?.max(1);
        let device = setup.take_device(index)?;
        let driver = LanceDriver::new(device, config).map_err(|e| ModuleError::BadParam {
            instance: setup.instance().to_string(),
            key: "rx_ring/tx_ring/buf_size".into(),
            reason: e.to_string(),
        })?;
        Ok(Box::new(LanceModule {
            driver,
            pool: None,
            rx_burst,
        }))
    }

    /// The driver (chip, memory, counters).
    pub fn driver(&self) -> &LanceDriver {
        &self.driver
    }

    /// The station address.
    pub fn mac(&self) -> [u8; 6] {
        self.driver.mac()
    }

    /// The descriptor access strategy.
    pub fn access(&self) -> Access {
        self.driver.access()
    }

    /// The driver's counters.
    pub fn driver_stats(&self) -> DriverStats {
        self.driver.stats()
    }

    /// The driver's accesses to the shared memory.
    pub fn cpu_accesses(&self) -> AccessCounts {
        self.driver.cpu_accesses()
    }

    fn transmit(&mut self, frame: &[u8], now: Instant) -> Verdict {
        let Some(pool) = self.pool.as_ref() else {
            return Verdict::Drop(LanceDropReason::TxDown.into());
        };
        match self.driver.transmit(frame, pool, now) {
            Ok(()) => Verdict::Consumed,
            Err(r) => Verdict::Drop(r.into()),
        }
    }
}

impl Module for LanceModule {
    fn spec(&self) -> &'static ModuleSpec {
        &LANCE_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        let pool = cx.pool().clone();
        self.driver
            .start(&pool, cx.now())
            .map_err(|e| ModuleError::Init {
                instance: cx.instance().to_string(),
                reason: e.to_string(),
            })?;
        self.pool = Some(pool);
        Ok(())
    }

    fn create_stage(&mut self, _attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_entry("a LANCE path must come from above (through `up`)")?;
        Ok(Created::new(LanceStage, Route::End))
    }

    /// The LANCE delivers a burst of received frames from its ring in a
    /// poll ([`ModCx::deliver`]), so it is polled on every call.
    fn polls(&self) -> bool {
        true
    }

    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        let Some(pool) = self.pool.as_ref() else {
            return 0;
        };
        let now = cx.now();
        self.driver
            .poll(pool, now, self.rx_burst, &mut |ev| match ev {
                RxEvent::Frame(m) => {
                    cx.deliver(m);
                }
                RxEvent::Drop(r) => cx.count_drop(r),
            })
    }

    fn poll_at(&self) -> Option<Instant> {
        self.driver.poll_at()
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let s = self.driver.stats();
        let m = self.driver.cpu_accesses();
        let c = self.driver.chip_stats();
        [
            ("tx_frames", s.tx_frames),
            ("tx_bytes", s.tx_bytes),
            ("rx_frames", s.rx_frames),
            ("rx_bytes", s.rx_bytes),
            ("desc_word_reads", m.word_reads),
            ("desc_word_writes", m.word_writes),
            ("buf_bytes_written", m.buffer_bytes_written),
            ("buf_bytes_read", m.buffer_bytes_read),
            ("tx_ring_full", s.tx_ring_full),
            ("tx_refused", s.tx_refused),
            ("tx_errors", s.tx_errors),
            ("rx_errors", s.rx_errors),
            ("rx_no_buffer", s.rx_no_buffer),
            ("miss", s.miss),
            ("babble", s.babble),
            ("cerr", s.cerr),
            ("merr", s.merr),
            ("restarts", s.restarts),
            ("interrupts", s.interrupts),
            ("chip_tx_frames", c.tx_frames),
            ("chip_rx_frames", c.rx_frames),
            ("chip_missed", c.missed),
            ("chip_filtered", c.filtered),
            ("chip_wire_tx_errors", c.wire_tx_errors),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// Parses `xx:xx:xx:xx:xx:xx` (or with `-`).
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split([':', '-']);
    for b in &mut mac {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// The `LANCE` stage: the device end of a path.
pub struct LanceStage;

impl Stage for LanceStage {
    fn passes(&self, dir: Dir) -> bool {
        // Received frames reach the stack from the driver's poll.
        dir != Dir::Down
    }

    #[inline]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir != Dir::Down {
            return Verdict::Next;
        }
        let now = cx.now();
        // The frame is copied into the ring's buffers; its pool buffer goes
        // back to the pool right here.
        let frame = std::mem::take(msg);
        match cx.module::<LanceModule>() {
            Some(m) => m.transmit(frame.as_slice(), now),
            None => Verdict::Drop(LanceDropReason::TxDown.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_mac;

    #[test]
    fn mac_parameter_parses_and_refuses_junk() {
        assert_eq!(parse_mac("02:00:0a:0B:ff:1"), Some([2, 0, 10, 11, 255, 1]));
        assert_eq!(parse_mac("02-00-00-00-00-09"), Some([2, 0, 0, 0, 0, 9]));
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "02:00:00:00:00:xyz",
            "0200:00:00:00:00",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }
}
