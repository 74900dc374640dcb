#!/usr/bin/env python3
"""study-latency-report.py — the tables, JSON and SVG of scripts/study-latency.sh.

Arguments after the options are specs:
  cg|VERSION|TRANSPORT|DM_R1|DM_R2|FA_R1|FA_R2|LAYOUT_JSON   cachegrind files
  rtt|VERSION|TRANSPORT|WIRE|PINGPONG_JSON                    a timed run

The thesis' figures (../shared/seeds/001_*, §4.3) are quoted beside ours:
Table 6 (end-to-end latency), Table 8 (cache performance), Table 9
(processing costs: length, iCPI, mCPI), Table 10 (improvements), Table 11
(outlining effectiveness). The thesis measured TCP/IP (we set both our
TCP and our UDP ping-pong beside it) and RPC.
"""
import argparse
import json
import os
import statistics
import subprocess
from collections import defaultdict

import cachegrind

VERSIONS = ["BAD", "STD", "OUT", "CLO", "PIN", "ALL"]
TRANSPORTS = ["udp", "rpc", "tcp"]
SEED_STACK = {"udp": "TCP/IP", "rpc": "RPC", "tcp": "TCP/IP"}

# Thesis Table 6: round-trip latency [us] (mean, delta % to ALL).
T6 = {
    "TCP/IP": {"BAD": (498.8, 60.5), "STD": (351.0, 12.9), "OUT": (336.1, 8.1), "CLO": (325.5, 4.7),
               "PIN": (317.1, 2.0), "ALL": (310.8, 0.0)},
    "RPC": {"BAD": (457.1, 25.1), "STD": (399.2, 9.2), "OUT": (394.6, 8.0), "CLO": (383.1, 4.8),
            "PIN": (367.3, 0.5), "ALL": (365.5, 0.0)},
}
# Thesis Table 8: i-cache (miss, acc, repl), d-cache/write buffer (miss,
# acc, repl), b-cache (miss, acc, repl).
T8 = {
    "TCP/IP": {"BAD": (700, 4718, 224, 459, 1862, 31, 863, 1390, 110),
               "STD": (586, 4750, 72, 492, 1845, 56, 800, 1286, 0),
               "OUT": (547, 4728, 69, 462, 1841, 40, 731, 1183, 0),
               "CLO": (483, 4684, 27, 455, 1862, 34, 678, 1074, 0),
               "PIN": (484, 4245, 66, 406, 1668, 27, 630, 1015, 0),
               "ALL": (414, 4215, 10, 401, 1682, 28, 596, 913, 0)},
    "RPC": {"BAD": (721, 4253, 176, 556, 1663, 19, 995, 1544, 14),
            "STD": (590, 4291, 31, 547, 1635, 14, 1004, 1379, 0),
            "OUT": (542, 4257, 26, 556, 1629, 19, 951, 1313, 0),
            "CLO": (488, 4227, 7, 547, 1664, 13, 845, 1213, 0),
            "PIN": (402, 3471, 14, 453, 1310, 19, 694, 972, 0),
            "ALL": (374, 3468, 0, 450, 1330, 13, 662, 931, 0)},
}
# Thesis Table 9: Tp [us], length, iCPI, mCPI.
T9 = {
    "TCP/IP": {"BAD": (167.0, 4718, 1.61, 4.58), "STD": (89.6, 4750, 1.72, 1.58),
               "OUT": (84.1, 4728, 1.61, 1.50), "CLO": (77.2, 4684, 1.61, 1.28),
               "PIN": (69.9, 4245, 1.57, 1.31), "ALL": (66.1, 4215, 1.57, 1.17)},
    "RPC": {"BAD": (154.2, 4253, 1.69, 4.66), "STD": (85.1, 4291, 1.78, 1.69),
            "OUT": (81.0, 4257, 1.68, 1.65), "CLO": (71.0, 4227, 1.69, 1.25),
            "PIN": (57.7, 3471, 1.66, 1.25), "ALL": (49.2, 3468, 1.67, 0.81)},
}
# Thesis Table 10: I [%], dTe [us], dTp [us], dNb, dNm.
T10 = {
    "TCP/IP": {("BAD", "CLO"): (97, 86.7, 89.8, 316, 110), ("STD", "OUT"): (114, 7.4, 5.5, 103, 0),
               ("OUT", "CLO"): (91, 5.3, 6.9, 109, 0), ("OUT", "PIN"): (70, 9.5, 14.2, 168, 0),
               ("PIN", "ALL"): (93, 3.2, 3.8, 102, 0)},
    "RPC": {("BAD", "CLO"): (99, 74.0, 83.2, 331, 14), ("STD", "OUT"): (71, 4.6, 4.1, 66, 0),
            ("OUT", "CLO"): (94, 11.5, 10.0, 100, 0), ("OUT", "PIN"): (67, 27.3, 23.3, 341, 0),
            ("PIN", "ALL"): (95, 1.8, 8.5, 41, 0)},
}
# Thesis Table 11: unused i-cache %, critical-path size [instructions],
# without and with outlining.
T11 = {"TCP/IP": (21, 5841, 15, 3856), "RPC": (22, 5085, 16, 3641)}
CLOCK_MHZ = 175.0  # 21064 (thesis §4.1.1)
BCACHE_CYCLES = 10  # b-cache access (thesis §4.1.1, lmbench)
MEMORY_CYCLES = 48  # main-memory access (same)


def totals(path):
    t = cachegrind.totals(path, "study-latency")
    t["ir"] = t["instr"]
    return t


def per_rt(f1, f2, span):
    a, b = totals(f1), totals(f2)
    return {k: (b[k] - a[k]) / span for k in a}


def fmt(x, nd=0):
    if x is None:
        return "-"
    return f"{x:,.{nd}f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--r1", type=int, required=True)
    p.add_argument("--r2", type=int, required=True)
    p.add_argument("--tool", default="valgrind")
    p.add_argument("--tap-note", default="")
    p.add_argument("--quick", default="0")
    p.add_argument("specs", nargs="*")
    a = p.parse_args()
    span = a.r2 - a.r1

    rows = {}
    rtt = defaultdict(list)
    for spec in a.specs:
        f = spec.split("|")
        if f[0] == "cg":
            _, v, t, d1, d2, f1, f2, lay = f
            dm = per_rt(d1, d2, span)
            fa = per_rt(f1, f2, span) if f1 != "-" else None
            with open(lay) as fh:
                layout = json.load(fh)
            rows[(t, v.upper())] = {"dm": dm, "fa": fa, "layout": layout}
        elif f[0] == "rtt":
            _, v, t, wire, path = f
            with open(path) as fh:
                r = json.load(fh)["results"][0]["rtt_ns"]
            rtt[(t, v.upper(), wire)].append(r)

    def rtt_of(t, v, wire):
        runs = rtt.get((t, v, wire))
        if not runs:
            return None
        return {"p50": round(statistics.median(r["p50"] for r in runs)),
                "p99": round(statistics.median(r["p99"] for r in runs)),
                "passes": len(runs)}

    results = []
    for (t, v), r in sorted(rows.items(), key=lambda kv: (TRANSPORTS.index(kv[0][0]), VERSIONS.index(kv[0][1]))):
        dm, fa, lay = r["dm"], r["fa"], r["layout"]
        seed = SEED_STACK[t]
        icpi = T9[seed][v][2]
        misses_l1 = dm["i1"] + dm["d1"]
        cycles = dm["ir"] * icpi + misses_l1 * BCACHE_CYCLES + dm["ll"] * MEMORY_CYCLES
        results.append({
            "transport": t, "version": v,
            "instr_per_rt": round(dm["ir"], 1),
            "i1_misses": round(dm["i1"], 1),
            "d1_misses": round(dm["d1"], 1),
            "ll_misses": round(dm["ll"], 1),
            "i1_repl_misses": round(dm["i1"] - fa["i1"], 1) if fa else None,
            "d1_repl_misses": round(dm["d1"] - fa["d1"], 1) if fa else None,
            "d1_accesses": round(dm["dacc"], 1),
            "unused_fetch_pct": lay["unused_fetch_pct"],
            "fetched_lines": lay["fetched_lines"],
            "path_code_bytes": lay["hot_bytes"],
            "hot_functions": lay["hot_functions"],
            "hot_functions_sharing_start_set": lay["functions_sharing_start_set"],
            "model_dec3000_us": round(cycles / CLOCK_MHZ, 2),
            "model_mcpi": round((cycles - dm["ir"] * icpi) / dm["ir"], 2) if dm["ir"] else None,
            "rtt_ns_memory": rtt_of(t, v, "memory"),
            "rtt_ns_tap": rtt_of(t, v, "tap"),
        })
    by = {(r["transport"], r["version"]): r for r in results}
    results.sort(key=lambda r: (TRANSPORTS.index(r["transport"]), VERSIONS.index(r["version"])))
    doc = {
        "workload": "udp: 1-byte UDP ping-pong; rpc: zero-byte XRPCTEST calls; tcp: 1-byte ping-pong over one "
                    "nodelay TCP connection, echoed by the server's application; in-memory wire, per-message "
                    "scheduler",
        "tool": a.tool + " --tool=callgrind --cache-sim=yes --I1=8192,1,32 --D1=8192,1,32 --LL=2097152,1,32 "
                "(replacement misses: minus the same run with --I1=8192,256,32 --D1=8192,256,32)",
        "method": f"(total(R2) - total(R1)) / (R2 - R1), R1={a.r1}, R2={a.r2}",
        "model": f"cycles = instr x iCPI(thesis Table 9) + (I1 + D1 misses) x {BCACHE_CYCLES} + LL misses x "
                 f"{MEMORY_CYCLES}, at {CLOCK_MHZ:.0f} MHz (thesis §4.1.1)",
        "notes": ([a.tap_note] if a.tap_note else []) + (["--quick: a smoke run, noisier"] if a.quick == "1" else []),
        "results": results,
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "latency.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    md = []
    w = md.append
    w("# Latency versions (thesis §4.3) on pathstack\n")
    w(f"Per round trip = {doc['method']}; {doc['tool']}. Model: {doc['model']}.\n")
    w("Thesis figures (seed 001, §4.3) beside ours: the thesis' TCP/IP stack beside our TCP and our UDP "
      "ping-pong, its RPC beside our RPC. Notes: " + "; ".join(doc["notes"]) + ".\n")
    for t in TRANSPORTS:
        seed = SEED_STACK[t]
        rs = [by[(t, v)] for v in VERSIONS if (t, v) in by]
        if not rs:
            continue
        w(f"\n## {t.upper()} (thesis: {seed})\n")
        base = by.get((t, "ALL"))
        w("\n### Table 6: round-trip latency\n")
        w("| Version | RTT memory p50 [ns] | p99 | Δ vs ALL [%] | RTT TAP p50 [ns] | p99 | thesis Te [µs] | thesis Δ [%] |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rs:
            m, tp = r["rtt_ns_memory"], r["rtt_ns_tap"]
            d = (100.0 * (m["p50"] - base["rtt_ns_memory"]["p50"]) / base["rtt_ns_memory"]["p50"]
                 if m and base and base["rtt_ns_memory"] else None)
            s = T6[seed][r["version"]]
            w(f"| {r['version']} | {fmt(m and m['p50'])} | {fmt(m and m['p99'])} | {fmt(d, 1)} | "
              f"{fmt(tp and tp['p50'])} | {fmt(tp and tp['p99'])} | {s[0]} | +{s[1]} |")
        w("\n### Table 8: cache performance per round trip (DEC 3000/600 geometry)\n")
        w("| Version | I1 miss | I1 acc | I1 repl | D1 miss | D1 acc | D1 repl | LL miss | LL acc | "
          "thesis i-cache miss/acc/repl | thesis d-cache miss/acc/repl | thesis b-cache miss/acc/repl |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
        for r in rs:
            s = T8[seed][r["version"]]
            w(f"| {r['version']} | {fmt(r['i1_misses'])} | {fmt(r['instr_per_rt'])} | {fmt(r['i1_repl_misses'])} | "
              f"{fmt(r['d1_misses'])} | {fmt(r['d1_accesses'])} | {fmt(r['d1_repl_misses'])} | {fmt(r['ll_misses'], 1)} | "
              f"{fmt(r['i1_misses'] + r['d1_misses'])} | {s[0]}/{s[1]}/{s[2]} | {s[3]}/{s[4]}/{s[5]} | {s[6]}/{s[7]}/{s[8]} |")
        std = by.get((t, "STD"))
        if std:
            w(f"\nRepl = direct-mapped misses - misses of a fully associative LRU cache of the same size and line "
              f"(\"-\": not run). The path's own code touches {std['fetched_lines']} distinct 32-byte lines "
              f"per round trip (STD), more than the 256 an 8 KB cache holds, in the same cyclic order every round trip: "
              f"LRU then evicts each line just before its reuse and misses more than the direct-mapped cache, so Repl "
              f"comes out negative. The thesis' Repl counted re-misses within one cold-started trace of one path "
              f"invocation, which a steady-state difference cannot separate. LL acc = I1 + D1 misses.")
        w("\n### Table 9: processing cost (modelled DEC 3000/600 time)\n")
        w("| Version | Length [instr] | iCPI (thesis) | model mCPI | model Tp [µs] | thesis Length | thesis Tp [µs] | thesis mCPI |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rs:
            s = T9[seed][r["version"]]
            w(f"| {r['version']} | {fmt(r['instr_per_rt'])} | {s[2]} | {fmt(r['model_mcpi'], 2)} | "
              f"{fmt(r['model_dec3000_us'], 1)} | {s[1]} | {s[0]} | {s[3]} |")
        w("\n### Table 10: improvements between versions\n")
        w("| Step | I [%] | ΔTe memory [ns] | ΔTp model [µs] | ΔNb (L1 misses) | ΔI1 | Δinstr | thesis I | thesis ΔTe [µs] | "
          "thesis ΔTp [µs] | thesis ΔNb |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for (x, y), s in T10[seed].items():
            rx, ry = by.get((t, x)), by.get((t, y))
            if not rx or not ry:
                continue
            dnb = (rx["i1_misses"] + rx["d1_misses"]) - (ry["i1_misses"] + ry["d1_misses"])
            di1 = rx["i1_misses"] - ry["i1_misses"]
            i_pct = 100.0 * di1 / dnb if abs(dnb) >= 1 else None
            dte = (rx["rtt_ns_memory"]["p50"] - ry["rtt_ns_memory"]["p50"]
                   if rx["rtt_ns_memory"] and ry["rtt_ns_memory"] else None)
            w(f"| {x} → {y} | {fmt(i_pct)} | {fmt(dte)} | {fmt(rx['model_dec3000_us'] - ry['model_dec3000_us'], 1)} | "
              f"{fmt(dnb)} | {fmt(di1)} | {fmt(rx['instr_per_rt'] - ry['instr_per_rt'])} | {s[0]} | {s[1]} | {s[2]} | {s[3]} |")
        so, oo = by.get((t, "STD")), by.get((t, "OUT"))
        if so and oo:
            s = T11[seed]
            out_share = 100.0 * (so["path_code_bytes"] - oo["path_code_bytes"]) / so["path_code_bytes"]
            w("\n### Table 11: outlining effectiveness\n")
            w("| | unused fetched bytes [%] | path code [bytes] | thesis unused [%] | thesis size [instr] |")
            w("|---|---:|---:|---:|---:|")
            w(f"| without outlining (STD) | {so['unused_fetch_pct']:.1f} | {so['path_code_bytes']:,} | {s[0]} | {s[1]} |")
            w(f"| with outlining (OUT) | {oo['unused_fetch_pct']:.1f} | {oo['path_code_bytes']:,} | {s[2]} | {s[3]} |")
            w(f"\nOutlined: {out_share:.1f}% of the path's code bytes (thesis: "
              f"{100.0 * (s[1] - s[3]) / s[1]:.0f}% of its instructions). Path code = the static size of the "
              "functions that run >= 1 instruction per round trip; unused = share of the bytes of the 32-byte "
              "lines those instructions touch that no instruction executed per round trip covers.")
        order = sorted(rs, key=lambda r: r["i1_misses"])
        w(f"\nI1 misses, fewest first: " + " < ".join(f"{r['version']} ({r['i1_misses']:.0f})" for r in order)
          + ". Thesis goal: ALL ≤ PIN < CLO < OUT ≤ STD < BAD.\n")
    with open(os.path.join(a.out, "latency.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    svg(os.path.join(a.out, "latency.svg"), results)
    print("\n".join(md))
    print(f"\nwrote {a.out}/latency.json, latency.md, latency.svg")


def svg(path, results):
    """Grouped bars: I1 misses per round trip by version, one group per transport."""
    results = [r for r in results if r["i1_misses"] is not None]
    groups = [t for t in TRANSPORTS if any(r["transport"] == t for r in results)]
    width, height, left, top, bottom = 900, 360, 60, 40, 50
    vmax = max((r["i1_misses"] for r in results), default=1) or 1
    bw = (width - left - 20) / (len(groups) * (len(VERSIONS) + 1))
    colors = {"BAD": "#c0392b", "STD": "#7f8c8d", "OUT": "#2980b9", "CLO": "#16a085", "PIN": "#8e44ad",
              "ALL": "#27ae60"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="11">',
           f'<text x="{left}" y="20" font-size="13">I1 misses per round trip, 8 KB direct-mapped I-cache '
           f'(cachegrind, DEC 3000/600 geometry)</text>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="black"/>']
    x = left + bw / 2
    for g in groups:
        x0 = x
        for v in VERSIONS:
            r = next((r for r in results if r["transport"] == g and r["version"] == v), None)
            if r:
                h = (height - top - bottom) * r["i1_misses"] / vmax
                y = height - bottom - h
                out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw * 0.9:.1f}" height="{h:.1f}" '
                           f'fill="{colors[v]}"><title>{g} {v}: {r["i1_misses"]:.0f}</title></rect>')
                out.append(f'<text x="{x + bw * 0.45:.1f}" y="{y - 3:.1f}" text-anchor="middle">'
                           f'{r["i1_misses"]:.0f}</text>')
                out.append(f'<text x="{x + bw * 0.45:.1f}" y="{height - bottom + 14}" text-anchor="middle">{v}</text>')
            x += bw
        out.append(f'<text x="{(x0 + x) / 2:.1f}" y="{height - bottom + 32}" text-anchor="middle" '
                   f'font-size="12">{g.upper()}</text>')
        x += bw
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
