//! The kernel's own account of its connections: per socket from `ss -tin`
//! ([`ss_retransmissions`], [`parse_ss`]) and namespace-wide from
//! `/proc/net/snmp` ([`tcp_snmp`], [`parse_snmp_tcp`]).

use super::ns_exec::ns_output;
use crate::output::text;
use crate::Topology;
use std::collections::HashMap;
use std::io;
// ss and /proc/net/snmp

/// One TCP socket as `ss -tin` shows it. Counters `ss` did not print
/// (it omits zeros and fields of states that have none) are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SsInfo {
    /// State column (`ESTAB`, `SYN-SENT`, `FIN-WAIT-1`, ...).
    pub state: String,
    /// Local address as printed (`10.77.1.2:41200`).
    pub local: String,
    /// Peer address as printed.
    pub peer: String,
    /// `retrans:a/b`, a: segments being retransmitted now (unacked).
    pub retrans_now: u64,
    /// `retrans:a/b`, b: the connection's total retransmissions.
    pub retrans_total: u64,
    /// `bytes_retrans`.
    pub bytes_retrans: u64,
    /// `segs_out`.
    pub segs_out: u64,
    /// `data_segs_out`.
    pub data_segs_out: u64,
    /// `lost`: segments the sender currently considers lost.
    pub lost: u64,
    /// `sacked`: segments SACKed (without SACK: the duplicate ACKs counted).
    pub sacked: u64,
    /// `dsack_dups`: retransmissions the receiver reported as duplicates.
    pub dsack_dups: u64,
    /// The option flag `sack` was printed. Note that the `ss` of iproute2
    /// 6.1 on some kernels prints neither `ts` nor `sack`; do not rely on
    /// its presence, only on its absence.
    pub sack: bool,
    /// The option flag `ts` (timestamps) was printed.
    pub timestamps: bool,
    /// Every `key:value` of the info line, as printed.
    pub fields: HashMap<String, String>,
}

/// The TCP sockets of namespace `ns_key` with their retransmission counters:
/// runs `ss -tin` there and parses it ([`parse_ss`]).
pub fn ss_retransmissions(topo: &Topology, ns_key: &str) -> Vec<SsInfo> {
    ss_in(topo.var(ns_key)).unwrap_or_else(|e| panic!("ss -tin in {ns_key}: {e}"))
}

pub(super) fn ss_in(ns: &str) -> io::Result<Vec<SsInfo>> {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-tin"])
        .output()?;
    if !o.status.success() {
        return Err(io::Error::other(text(&o)));
    }
    Ok(parse_ss(&String::from_utf8_lossy(&o.stdout)))
}

/// Parses the output of `ss -tin` (with or without the header line, with
/// or without the state column): a socket line, then its indented info line.
pub fn parse_ss(output: &str) -> Vec<SsInfo> {
    let mut v: Vec<SsInfo> = Vec::new();
    for line in output.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some(info) = v.last_mut() {
                parse_ss_info(info, line);
            }
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.first() == Some(&"State") || cols.first() == Some(&"Recv-Q") {
            continue; // Header.
        }
        // State Recv-Q Send-Q Local Peer [Process], the state column
        // absent when a state filter was given.
        let has_state = cols.first().is_some_and(|c| c.parse::<u64>().is_err());
        let rest = if has_state { &cols[1..] } else { &cols[..] };
        if rest.len() < 4 {
            continue;
        }
        v.push(SsInfo {
            state: if has_state {
                cols[0].to_string()
            } else {
                String::new()
            },
            local: rest[2].to_string(),
            peer: rest[3].to_string(),
            ..SsInfo::default()
        });
    }
    v
}

fn parse_ss_info(info: &mut SsInfo, line: &str) {
    // Skip the parenthesised groups (`bbr:(bw:...,mrtt:...)`), whose inner
    // keys are not the connection's.
    let mut depth = 0usize;
    let mut flat = String::with_capacity(line.len());
    for ch in line.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => flat.push(ch),
            _ => {}
        }
    }
    for tok in flat.split_whitespace() {
        match tok.split_once(':') {
            Some((k, val)) => {
                info.fields.insert(k.to_string(), val.to_string());
                let num = || val.parse::<u64>().unwrap_or(0);
                match k {
                    "retrans" => {
                        let (a, b) = val.split_once('/').unwrap_or(("0", val));
                        info.retrans_now = a.parse().unwrap_or(0);
                        info.retrans_total = b.parse().unwrap_or(0);
                    }
                    "bytes_retrans" => info.bytes_retrans = num(),
                    "segs_out" => info.segs_out = num(),
                    "data_segs_out" => info.data_segs_out = num(),
                    "lost" => info.lost = num(),
                    "sacked" => info.sacked = num(),
                    "dsack_dups" => info.dsack_dups = num(),
                    _ => {}
                }
            }
            None => match tok {
                "sack" => info.sack = true,
                "ts" => info.timestamps = true,
                _ => {}
            },
        }
    }
}

/// The namespace-wide TCP counters of `/proc/net/snmp` (the `Tcp:` lines;
/// `nstat`'s `TcpOutSegs`, `TcpRetransSegs`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpSnmp {
    /// `OutSegs`: segments sent, retransmissions excluded.
    pub out_segs: u64,
    /// `RetransSegs`: segments retransmitted.
    pub retrans_segs: u64,
    /// `InSegs`: segments received.
    pub in_segs: u64,
    /// `InErrs`: segments received in error.
    pub in_errs: u64,
    /// `OutRsts`: resets sent.
    pub out_rsts: u64,
    /// Every `Tcp:` counter by name.
    pub all: HashMap<String, i64>,
}

/// Reads `/proc/net/snmp` inside namespace `ns_key` (`ip netns exec NS cat`).
pub fn tcp_snmp(topo: &Topology, ns_key: &str) -> TcpSnmp {
    parse_snmp_tcp(&ns_output(topo.var(ns_key), &["cat", "/proc/net/snmp"]))
}

/// Parses the `Tcp:` header and value lines of `/proc/net/snmp`.
pub fn parse_snmp_tcp(snmp: &str) -> TcpSnmp {
    let tcp: Vec<&str> = snmp
        .lines()
        .filter_map(|l| l.strip_prefix("Tcp:"))
        .collect();
    let mut s = TcpSnmp::default();
    if let [names, values, ..] = tcp[..] {
        for (k, v) in names.split_whitespace().zip(values.split_whitespace()) {
            s.all.insert(k.to_string(), v.parse().unwrap_or(0));
        }
    }
    let get = |k: &str| s.all.get(k).copied().unwrap_or(0).max(0) as u64;
    s.out_segs = get("OutSegs");
    s.retrans_segs = get("RetransSegs");
    s.in_segs = get("InSegs");
    s.in_errs = get("InErrs");
    s.out_rsts = get("OutRsts");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured with `ip netns exec ps-b-t1 ss -tin` on this machine
    // (iproute2 6.1, kernel 6.18, bbr), 5% loss installed by `Loss`.
    const SS_LOSSY: &str = "State Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
ESTAB 0      0          10.77.1.2:39048    10.77.1.4:5004
\t bbr wscale:10,10 rto:204 rtt:0.69/0.46 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:246 ssthresh:136 bytes_sent:20752448 bytes_retrans:752448 bytes_acked:20000001 segs_out:14539 segs_in:808 data_segs_out:14537 bbr:(bw:17376000000bps,mrtt:0.006,pacing_gain:1.25,cwnd_gain:2) send 4129947826bps lastsnd:432 lastrcv:2004 lastack:432 pacing_rate 21502800000bps delivery_rate 3407058816bps delivered:14012 busy:1568ms retrans:0/531 dsack_dups:5 rcv_space:14480 rcv_ssthresh:64088 minrtt:0.006 snd_wnd:2096128
";

    // In recovery (lost, sacked, retrans now > 0), next to a SYN-SENT whose
    // SYN was dropped.
    const SS_RECOVERY: &str = "State    Recv-Q Send-Q  Local Address:Port  Peer Address:PortProcess
SYN-SENT 0      1           10.77.1.2:37940    10.77.1.4:5006
\t bbr rto:1000 mss:524 pmtu:1500 rcvmss:88 advmss:1460 cwnd:10 segs_out:1 bbr:(bw:0bps,mrtt:0) lastsnd:19909432 lastrcv:19909432 lastack:19909432 app_limited unacked:1 rcv_ssthresh:64240
ESTAB    0      1449488     10.77.1.2:51018    10.77.1.4:5005
\t bbr wscale:10,10 rto:204 rtt:0.788/0.455 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:4 ssthresh:229 bytes_sent:67475712 bytes_retrans:3250432 bytes_acked:64209393 segs_out:47147 segs_in:2302 data_segs_out:47145 bbr:(bw:3564307472bps,mrtt:0.006,pacing_gain:1.25,cwnd_gain:2) send 58802030bps lastsnd:80 lastrcv:4480 lastack:80 pacing_rate 4410830504bps delivery_rate 3564307688bps delivered:44971 busy:4460ms unacked:11 retrans:4/2269 lost:5 sacked:6 dsack_dups:99 reordering:135 reord_seen:2 rcv_space:14480 rcv_ssthresh:64088 notsent:1433600 minrtt:0.006 snd_wnd:3016704
";

    // The receiving side (no retransmissions at all), with a state filter
    // (`ss -tin state established`: no state column).
    const SS_RECEIVER_NO_STATE: &str = "Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
0      0          10.77.1.4:5003    10.77.1.2:42020
\t bbr wscale:10,10 rto:200 rtt:0.036/0.018 ato:40 mss:1448 pmtu:1500 rcvmss:1448 advmss:1448 cwnd:10 bytes_received:20000000 segs_out:1818 segs_in:14405 data_segs_in:14403 bbr:(bw:0bps,mrtt:0.036) send 3217777778bps lastsnd:2004 lastrcv:1864 lastack:1864 pacing_rate 9195929712bps delivered:1 app_limited rcv_rtt:0.519 rcv_space:369968 rcv_ssthresh:2431691 minrtt:0.036 rcv_ooopack:183 snd_wnd:64512
";

    // The classic layout with option flags (cubic, `ts sack`).
    const SS_CUBIC_OPTS: &str = "ESTAB 0 0 192.168.1.5:22 192.168.1.9:50412
\t ts sack cubic wscale:7,7 rto:204 rtt:0.5/0.25 mss:1448 cwnd:10 bytes_acked:1 segs_out:3 segs_in:2 data_segs_out:1 retrans:0/2 lost:1
";

    #[test]
    fn ss_lossy_sender() {
        let v = parse_ss(SS_LOSSY);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(s.state, "ESTAB");
        assert_eq!(s.local, "10.77.1.2:39048");
        assert_eq!(s.peer, "10.77.1.4:5004");
        assert_eq!((s.retrans_now, s.retrans_total), (0, 531));
        assert_eq!(s.bytes_retrans, 752448);
        assert_eq!(s.segs_out, 14539);
        assert_eq!(s.data_segs_out, 14537);
        assert_eq!((s.lost, s.sacked, s.dsack_dups), (0, 0, 5));
        assert!(!s.sack && !s.timestamps);
        assert_eq!(s.fields["cwnd"], "246");
        // The keys inside bbr:(...) are not the connection's.
        assert!(!s.fields.contains_key("mrtt"));
    }

    #[test]
    fn ss_recovery_and_syn_sent() {
        let v = parse_ss(SS_RECOVERY);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].state, "SYN-SENT");
        assert_eq!(v[0].segs_out, 1);
        assert_eq!(
            (v[0].retrans_total, v[0].bytes_retrans, v[0].lost),
            (0, 0, 0)
        );
        let s = &v[1];
        assert_eq!(s.state, "ESTAB");
        assert_eq!(s.local, "10.77.1.2:51018");
        assert_eq!((s.retrans_now, s.retrans_total), (4, 2269));
        assert_eq!((s.lost, s.sacked, s.dsack_dups), (5, 6, 99));
        assert_eq!(s.bytes_retrans, 3250432);
    }

    #[test]
    fn ss_receiver_without_state_column() {
        let v = parse_ss(SS_RECEIVER_NO_STATE);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(s.state, "");
        assert_eq!(s.local, "10.77.1.4:5003");
        assert_eq!(s.peer, "10.77.1.2:42020");
        assert_eq!(
            (s.retrans_total, s.bytes_retrans, s.data_segs_out),
            (0, 0, 0)
        );
        assert_eq!(s.segs_out, 1818);
    }

    #[test]
    fn ss_option_flags() {
        let v = parse_ss(SS_CUBIC_OPTS);
        assert_eq!(v.len(), 1);
        assert!(v[0].sack && v[0].timestamps);
        assert_eq!(
            (v[0].retrans_total, v[0].lost, v[0].data_segs_out),
            (2, 1, 1)
        );
    }

    #[test]
    fn snmp_tcp_counters() {
        // `ip netns exec ps-b-t1 cat /proc/net/snmp`, abridged to its Ip and
        // Tcp lines.
        let snmp = "Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 2270
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 1 0 0 0 0 2266 22666 9 0 0 0
Udp: InDatagrams NoPorts
Udp: 0 0
";
        let s = parse_snmp_tcp(snmp);
        assert_eq!(s.out_segs, 22666);
        assert_eq!(s.retrans_segs, 9);
        assert_eq!(s.in_segs, 2266);
        assert_eq!(s.all["MaxConn"], -1);
    }
}
