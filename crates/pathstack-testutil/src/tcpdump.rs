//! A tcpdump capture (of TCP, or of what a filter selects) inside one of
//! a [`Topology`]'s namespaces.

use crate::Topology;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A tcpdump writing the TCP frames of one interface in a namespace to a
/// pcap file; interrupted (SIGINT, so it flushes the file) by
/// [`TcpdumpCapture::stop`] or on drop.
pub struct TcpdumpCapture(Child);

impl TcpdumpCapture {
    /// Starts tcpdump on `iface` in the namespace named by `ns_key`,
    /// writing to `pcap`; returns once it listens, so that nothing sent
    /// afterwards is missed. Panics if tcpdump cannot be run or exits
    /// before listening.
    pub fn start(topo: &Topology, ns_key: &str, iface: &str, pcap: &Path) -> TcpdumpCapture {
        Self::start_filtered(topo, ns_key, iface, pcap, "tcp")
    }

    /// [`TcpdumpCapture::start`] with a pcap filter expression of one's
    /// own instead of `tcp` (an empty one captures every frame).
    pub fn start_filtered(
        topo: &Topology,
        ns_key: &str,
        iface: &str,
        pcap: &Path,
        filter: &str,
    ) -> TcpdumpCapture {
        // `-U`: each packet is written out as it comes, so an interrupted
        // capture is whole; `-B`: a 64 MB kernel buffer, as 64 KB
        // super-segments cut to MTU size come in bursts.
        let mut child = topo
            .command_in(ns_key, "tcpdump")
            .args(["-i", iface, "-U", "-B", "65536", "-w"])
            .arg(pcap)
            .args(filter.split_whitespace())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run tcpdump");
        // It says "listening on ..." on stderr once the capture is open.
        let mut err = child.stderr.take().expect("tcpdump's stderr");
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !String::from_utf8_lossy(&seen).contains("listening on") {
            match err.read(&mut byte) {
                Ok(1) => seen.push(byte[0]),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("tcpdump did not start: {}", String::from_utf8_lossy(&seen));
                }
            }
        }
        // Keep draining stderr so that tcpdump never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        TcpdumpCapture(child)
    }

    /// Stops the capture, waiting until tcpdump has flushed the file.
    pub fn stop(mut self) {
        self.interrupt();
    }

    fn interrupt(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for TcpdumpCapture {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            self.interrupt();
        }
    }
}
