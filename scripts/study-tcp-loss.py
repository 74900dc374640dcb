#!/usr/bin/env python3
"""study-tcp-loss.py — a TCP sender's time under loss, from a capture of
the sender's own view (scripts/study-tcp-loss.sh makes them).

    study-tcp-loss.py PCAP SENDER_IP [--source-log F] [--sink-log F]
                      [--nstat BEFORE AFTER] [--ss F] [--json]

From the capture (pcap, Ethernet; no dependencies: the file is read here):
data segments sent (a GSO super-packet counts as len/MSS segments),
retransmissions (segments starting below the highest sequence sent),
segments retransmitted more than once (lost retransmissions), the gaps in
the sender's transmissions longer than 10 ms (how many, their total and
median, and how many end in a retransmission of SND.UNA — a timeout's
signature: the sender was silent, then resent the first hole), the time
from the first ACK that SACKs above a hole to the hole's first
retransmission (how fast losses are repaired), the share of duplicate ACKs
carrying SACK blocks, and the unSACKed flight (highest sent − cum ACK −
SACKed, in segments) when each data segment went out: what cwnd − pipe
let through. The counters: the last JSON line of the sender's log
(tcp_bulk: TcpStats), Linux's TcpExt deltas from `nstat -asz` snapshots,
and cwnd/ssthresh/rto from `ss -tin` samples.
"""

import argparse
import json
import re
import statistics
import struct
import sys

GAP = 0.010  # a silence longer than this is a gap (the veth RTT is ~0.1 ms)
RTO_LIKE = 0.150  # a gap this long ending in SND.UNA's retransmission: a timeout (min RTO 200 ms)


def seq_lt(a, b):
    return ((a - b) & 0xFFFFFFFF) > 0x7FFFFFFF


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    else:
        end = ">"
        magic = struct.unpack(">I", data[:4])[0]
    nano = magic == 0xA1B23C4D
    link = struct.unpack(end + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        ts, frac, incl, _orig = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        frame = data[off:off + incl]
        off += incl
        t = ts + frac / (1e9 if nano else 1e6)
        if link == 1:
            if len(frame) < 14:
                continue
            etype = struct.unpack(">H", frame[12:14])[0]
            ip = frame[14:]
            if etype != 0x0800:
                continue
        elif link == 113:  # Linux cooked
            ip = frame[16:]
        else:
            ip = frame
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack(">H", ip[2:4])[0]
        src = ".".join(map(str, ip[12:16]))
        tcp = ip[ihl:]
        if len(tcp) < 20:
            continue
        seq, ack = struct.unpack(">II", tcp[4:12])
        doff = (tcp[12] >> 4) * 4
        flags = tcp[13]
        plen = tot - ihl - doff
        sacks = []
        opts = tcp[20:doff]
        i = 0
        while i < len(opts):
            k = opts[i]
            if k == 0:
                break
            if k == 1:
                i += 1
                continue
            if i + 1 >= len(opts):
                break
            n = opts[i + 1]
            if n < 2:
                break
            if k == 5:
                body = opts[i + 2:i + n]
                for j in range(0, len(body) - 7, 8):
                    sacks.append(struct.unpack(">II", body[j:j + 8]))
            i += n
        yield t, src, seq, ack, flags, plen, sacks


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def ms(x):
    return None if x is None else round(x * 1000, 2)


def analyse(path, sender):
    sent = []  # (t, seq, len) of data from the sender
    acks = []  # (t, ack, sacks) from the receiver
    for t, src, seq, ack, flags, plen, sacks in packets(path):
        if src == sender:
            if plen > 0:
                sent.append((t, seq, plen))
        elif flags & 0x10:
            acks.append((t, ack, sacks, plen))
    if not sent:
        return {"error": "no data segments from the sender in the capture"}
    lens = [n for _, _, n in sent if n <= 1460]
    mss = statistics.mode(lens) if lens else 1448
    isn = sent[0][1]

    def rel(s):
        return (s - isn) & 0xFFFFFFFF

    # Merge the two directions in time order.
    events = [(t, 0, (s, n)) for t, s, n in sent] + [(t, 1, (a, sk, pl)) for t, a, sk, pl in acks]
    events.sort(key=lambda e: (e[0], e[1]))
    high = 0  # highest relative end sent
    cum = 0  # cumulative ACK (relative)
    sacked = []  # merged SACKed ranges above cum (relative)
    rtx_count = {}  # relative start -> times retransmitted
    hole_seen = {}  # relative start of an unSACKed range below a SACK -> first time seen
    repair = []  # first SACK beyond a hole -> its first retransmission
    rexmit_after_gap = 0
    gaps = []
    gap_detail = []
    rto_spans = []  # (gap start, end, cum, high, last retransmission of cum, segments sent after it)
    last_rtx_of = {}
    sent_after_rtx = {}
    last_ack_t = None
    gap_kinds = {"rtx_snd_una": 0, "rtx_other": 0, "new_data": 0}
    rto_like = []
    flight_at_send = []
    last_send = None
    segs = rtx_segs = 0
    dup = dup_sack = 0
    first_t, last_t = sent[0][0], sent[-1][0]

    def add_sack(l, r):
        nonlocal sacked
        sacked.append((l, r))
        sacked.sort()
        m = []
        for a, b in sacked:
            if m and a <= m[-1][1]:
                m[-1] = (m[-1][0], max(m[-1][1], b))
            else:
                m.append((a, b))
        sacked = [(a, b) for a, b in m if b > cum]

    for t, kind, v in events:
        if kind == 1:
            a, sk, pl = v
            last_ack_t = t
            a = rel(a)
            if a > (1 << 31):
                continue
            if a == cum and a < high and pl == 0:
                dup += 1
                if sk:
                    dup_sack += 1
            if a > cum:
                cum = a
                sacked = [(x, y) for x, y in sacked if y > cum]
            for l, r in sk:
                l, r = rel(l), rel(r)
                if r <= cum or r - l > (1 << 30):
                    continue  # D-SACK or stale
                add_sack(l, r)
            # Holes now known: [cum, first sacked left), and between blocks.
            if sacked:
                lo = cum
                for l, r in sacked:
                    if l > lo:
                        hole_seen.setdefault(lo, t)
                    lo = r
            continue
        s, n = v
        s = rel(s)
        k = max(1, -(-n // mss))
        segs += k
        if last_send is not None and t - last_send > GAP:
            g = t - last_send
            gaps.append(g)
            sk_segs = sum(min(r, high) - max(l, cum) for l, r in sacked if r > cum) / mss
            gap_detail.append({
                "at_s": round(last_send - first_t, 4), "gap_ms": ms(g),
                "ends_with": "rtx snd_una" if s < high and s == cum else ("rtx" if s < high else "new"),
                "outstanding_segs": round((high - cum) / mss, 1), "sacked_segs": round(sk_segs, 1),
                "snd_una_retransmitted_before": rtx_count.get(cum, 0),
                "last_ack_before_end_ms": None if last_ack_t is None else ms(t - last_ack_t),
                "segs_in_next_10ms": sum(1 for x, _, _ in sent if t <= x < t + 0.01)})
            if s < high and s == cum:
                gap_kinds["rtx_snd_una"] += 1
                if g >= RTO_LIKE:
                    rto_like.append(g)
                    rto_spans.append((last_send, t, cum, high, last_rtx_of.get(cum), sent_after_rtx.get(cum, 0)))
            elif s < high:
                gap_kinds["rtx_other"] += 1
            else:
                gap_kinds["new_data"] += 1
        last_send = t
        for key in sent_after_rtx:
            sent_after_rtx[key] += 1
        if s < high:
            last_rtx_of[s] = t
            sent_after_rtx[s] = 0
            rtx_segs += k
            c = rtx_count.get(s, 0) + 1
            rtx_count[s] = c
            if c == 1 and s in hole_seen:
                repair.append(t - hole_seen[s])
        else:
            sacked_bytes = sum(min(r, high) - max(l, cum) for l, r in sacked if r > cum)
            flight_at_send.append(max(0, high - cum - sacked_bytes) / mss)
        high = max(high, s + n)
    dur = max(last_t - first_t, 1e-9)
    idle = sum(gaps)
    multi = sum(1 for c in rtx_count.values() if c >= 2)
    analyse.rto_spans = [(a, b, isn + c, isn + h, r, n) for a, b, c, h, r, n in rto_spans]
    return {
        "mss": mss,
        "seconds": round(dur, 3),
        "bytes_acked": cum,
        "goodput_mbit_s": round(cum * 8 / dur / 1e6, 2),
        "data_segs_sent": segs,
        "retrans_segs": rtx_segs,
        "retrans_pct": round(100 * rtx_segs / max(segs, 1), 2),
        "ranges_retransmitted_twice_or_more": multi,
        "gaps_over_10ms": len(gaps),
        "gap_seconds_total": round(idle, 3),
        "gap_share_of_time_pct": round(100 * idle / dur, 1),
        "gap_median_ms": ms(pct(gaps, 50)),
        "gap_p90_ms": ms(pct(gaps, 90)),
        "gap_max_ms": ms(max(gaps) if gaps else None),
        "gaps_ending_in": gap_kinds,
        "gaps": gap_detail,
        "timeouts_per_s": round(len(rto_like) / dur, 2),
        "timeout_gap_median_ms": ms(pct(rto_like, 50)),
        "timeout_gap_min_ms": ms(min(rto_like) if rto_like else None),
        "hole_to_first_retransmission_median_ms": ms(pct(repair, 50)),
        "hole_to_first_retransmission_p90_ms": ms(pct(repair, 90)),
        "holes_repaired_without_timeout": sum(1 for x in repair if x < 0.1),
        "holes_repaired": len(repair),
        "dup_acks": dup,
        "dup_acks_with_sack_pct": round(100 * dup_sack / max(dup, 1), 1),
        "unsacked_flight_at_new_send_segs": {
            "median": pct(flight_at_send, 50) and round(pct(flight_at_send, 50), 1),
            "p10": pct(flight_at_send, 10) and round(pct(flight_at_send, 10), 1),
            "share_le_2_pct": round(100 * sum(1 for f in flight_at_send if f <= 2) / max(len(flight_at_send), 1), 1),
        },
    }


def classify_timeouts(rx_path, sender, spans):
    """Each timeout of the sender's capture against the receiver's view
    (a capture at the receiver): whether the receiver ACKed during the
    silence (then every such ACK was lost on the way back: the sender saw
    none), whether that ACK covered all data sent, whether SND.UNA's last
    retransmission reached the receiver, and whether anything was sent
    after that retransmission (RACK can only find it lost if a segment
    sent later is delivered)."""
    rx = list(packets(rx_path))
    out = {"timeouts": len(spans), "receiver_acked_in_silence_acks_lost": 0,
           "of_which_acked_everything": 0, "snd_una_retransmission_lost": 0,
           "snd_una_retransmitted_before": 0, "nothing_sent_after_that_retransmission": 0,
           "receiver_acks_per_silence": []}
    for start, end, cum, high, last_rtx, n_after in spans:
        acked = [a for t, src, _s, a, fl, pl, _sk in rx
                 if src != sender and fl & 0x10 and start <= t < end]
        out["receiver_acks_per_silence"].append(len(acked))
        if acked:
            out["receiver_acked_in_silence_acks_lost"] += 1
            if any(not seq_lt(a, high) for a in acked):
                out["of_which_acked_everything"] += 1
        if last_rtx is not None:
            out["snd_una_retransmitted_before"] += 1
            out["nothing_sent_after_that_retransmission"] += int(n_after == 0)
            got = any(src == sender and sq == cum and pl > 0 and last_rtx - 0.0005 <= t < end
                      for t, src, sq, _a, _f, pl, _sk in rx)
            out["snd_una_retransmission_lost"] += int(not got)
    return out


def last_json(path):
    r = None
    try:
        for line in open(path, errors="replace"):
            line = line.strip()
            if line.startswith("{"):
                try:
                    r = json.loads(line)
                except ValueError:
                    pass
    except OSError:
        pass
    return r


NSTAT = ["TcpRetransSegs", "TcpOutSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes",
         "TcpExtTCPLossProbeRecovery", "TcpExtTCPSackRecovery", "TcpExtTCPLostRetransmit",
         "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans", "TcpExtTCPSackRecoveryFail",
         "TcpExtTCPSpuriousRTOs", "TcpExtTCPDSACKUndo", "TcpExtTCPFullUndo",
         "TcpExtTCPPartialUndo", "TcpExtTCPSACKReorder", "TcpExtTCPLossUndo"]


def nstat(before, after):
    def read(p):
        d = {}
        for line in open(p):
            f = line.split()
            if len(f) >= 2 and f[1].isdigit():
                d[f[0]] = int(f[1])
        return d
    b, a = read(before), read(after)
    return {k: a.get(k, 0) - b.get(k, 0) for k in NSTAT}


def ss(path):
    cw, st, rto = [], [], []
    for line in open(path, errors="replace"):
        m = re.search(r"\bcwnd:(\d+)", line)
        if m:
            cw.append(int(m.group(1)))
        m = re.search(r"\bssthresh:(\d+)", line)
        if m:
            st.append(int(m.group(1)))
        m = re.search(r"\brto:(\d+)", line)
        if m:
            rto.append(int(m.group(1)))
    if not cw:
        return None
    return {"samples": len(cw), "cwnd_median": pct(cw, 50), "cwnd_p10": pct(cw, 10),
            "cwnd_le_2_pct": round(100 * sum(1 for c in cw if c <= 2) / len(cw), 1),
            "ssthresh_median": pct(st, 50), "rto_ms_min": min(rto) if rto else None,
            "rto_ms_median": pct(rto, 50)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("sender")
    ap.add_argument("--source-log")
    ap.add_argument("--sink-log")
    ap.add_argument("--nstat", nargs=2)
    ap.add_argument("--ss")
    ap.add_argument("--rx", help="a capture of the same transfer at the receiver")
    a = ap.parse_args()
    r = {"capture": analyse(a.pcap, a.sender)}
    if a.rx:
        r["timeouts_by_cause"] = classify_timeouts(a.rx, a.sender, getattr(analyse, "rto_spans", []))
    if a.sink_log:
        r["sink"] = last_json(a.sink_log)
    if a.source_log:
        r["source"] = last_json(a.source_log)
    if a.nstat:
        r["linux_nstat_delta"] = nstat(*a.nstat)
    if a.ss:
        r["linux_ss"] = ss(a.ss)
    json.dump(r, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
