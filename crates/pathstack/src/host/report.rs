//! The host's statistics report: per-module counters and drops, per-path
//! messages and drops.

use super::Host;
use pathstack_core::stack::Stack;
use std::fmt::Write as _;

impl Host {
    /// Per-module and per-path statistics, one line each, zeros left out.
    pub fn report(&self) -> String {
        report(&self.stack)
    }
}

/// Per-module and per-path statistics of `stack`, one line each, under a
/// legend: module counters and drops by reason (`drop.<layer>.<reason>`),
/// then each path's messages in and out per direction (down: from the
/// application towards the device; up: arrived from the device) and its
/// drops.
pub fn report(stack: &Stack) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "modules (counter=value; drop.<reason>=count, zero counters left out):"
    );
    for i in stack.graph().instances() {
        let Some(m) = stack.module_id(&i.name) else {
            continue;
        };
        let mut line = String::new();
        for (k, n) in stack.module_stats(m).unwrap_or_default() {
            if n > 0 {
                let _ = write!(line, " {k}={n}");
            }
        }
        for (r, n) in stack
            .module_drops(m)
            .map(|d| d.iter().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            let _ = write!(line, " drop.{}={n}", r.as_str());
        }
        let _ = writeln!(out, "  {:<6}{line}", i.name);
    }
    let _ = writeln!(
        out,
        "paths (#id modules; messages in/out travelling down = sent, up = received; drops):"
    );
    for id in stack.path_ids() {
        let Some(p) = stack.path(id) else { continue };
        let names: Vec<&str> = p
            .modules()
            .iter()
            .filter_map(|&m| stack.module_name(m))
            .collect();
        let s = p.stats();
        let mut line = format!(
            "  #{:<3} {:<28} down in/out {}/{}  up in/out {}/{}",
            id.index(),
            names.join("/"),
            s.msgs_in[0],
            s.msgs_out[0],
            s.msgs_in[1],
            s.msgs_out[1]
        );
        for (r, n) in s.drops.iter() {
            let _ = write!(line, " drop.{}={n}", r.as_str());
        }
        let _ = writeln!(out, "{line}");
    }
    out
}
