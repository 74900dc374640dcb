#!/usr/bin/env python3
"""priority-report.py — the table, JSON and SVG of scripts/study-priority.sh
(standard library only).

    priority-report.py --runs DIR --json OUT.json --svg OUT.svg [--meta K=V ...]

DIR holds one receiver JSON per run, CONFIG-FLOOD-ROUND.json (FLOOD is
none, ping-f or raw), as tools/src/priority_stream.rs writes it, and the
flood's output beside it (CONFIG-FLOOD-ROUND.flood.txt: ping's summary or
icmp_flood's JSON). Per configuration and flood, the figures are medians
over the rounds; delta_pct compares the loaded rate with the same
configuration's unloaded rate (Table 5.5's "Δ"). The goal of the study is
checked and printed: the high-priority path loses at most 1 % under each
flood, while pathstack-single and linux lose measurably more (here: at
least 2 percentage points more).
"""
import argparse
import json
import os
import re
import statistics
import sys
from html import escape

CONFIGS = ["pathstack-priority", "pathstack-single", "linux"]
FLOODS = ["ping-f", "raw"]
# Thesis Table 5.5 (Mosberger 1997, §5.2): frame rate drop under ping -f.
THESIS = {"pathstack-priority": "Scout: -0.2 %", "linux": "Linux: -42.1 %"}
COLOURS = {"none": "#9aa5b1", "ping-f": "#3b75af", "raw": "#d1495b"}


def flood_volume(path):
    """Echo requests the flood sent, and per second, from its output."""
    try:
        text = open(path).read()
    except OSError:
        return None, None
    m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    t = re.search(r"time (\d+)ms", text)
    if m:
        sent = int(m.group(1))
        secs = int(t.group(1)) / 1000 if t else None
        return sent, (sent / secs if secs else None)
    try:
        j = json.loads(text.strip().splitlines()[-1])
        return j["sent"], j["rate"]
    except (ValueError, KeyError, IndexError):
        return None, None


def load(runs):
    """{(config, flood): [run dicts]}"""
    got = {}
    for name in sorted(os.listdir(runs)):
        m = re.fullmatch(r"(.+)-(none|ping-f|raw)-(\d+)\.json", name)
        if not m:
            continue
        with open(os.path.join(runs, name)) as f:
            r = json.load(f)
        r["flood_sent"], r["flood_rate"] = flood_volume(
            os.path.join(runs, name[:-5] + ".flood.txt"))
        got.setdefault((m.group(1), m.group(2)), []).append(r)
    return got


def med(rows, f):
    vals = [f(r) for r in rows if f(r) is not None]
    return statistics.median(vals) if vals else None


def icmp_in(r):
    p = r.get("paths", {}).get("icmp")
    return p.get("msgs_in_up") if p else None


def icmp_discarded(r):
    """Echo requests discarded at classification (ICMP's queue full)."""
    p = r.get("paths", {}).get("icmp")
    return p.get("source_full") if p else None


def icmp_tap_discards(r):
    """Times the TAP's kernel filter took over discarding echo requests."""
    p = r.get("paths", {}).get("icmp")
    return p.get("device_discards") if p else None


def stream_discarded(r):
    p = r.get("paths", {}).get("stream")
    return p.get("source_full") if p else None


def summarise(got):
    results = []
    for c in CONFIGS:
        base = got.get((c, "none"))
        if not base:
            continue
        un = med(base, lambda r: r["msgs_per_s"])
        for fl in FLOODS:
            rows = got.get((c, fl))
            if not rows:
                continue
            lo = med(rows, lambda r: r["msgs_per_s"])
            results.append({
                "config": c,
                "flood": fl,
                "unloaded_msgs_per_s": round(un, 1),
                "loaded_msgs_per_s": round(lo, 1),
                "delta_pct": round(100.0 * (lo - un) / un, 2) if un else None,
                "rounds": len(rows),
                "unloaded_latency_p50_us": med(base, lambda r: r["latency_us"]["p50"]),
                "unloaded_latency_p99_us": med(base, lambda r: r["latency_us"]["p99"]),
                "loaded_latency_p50_us": med(rows, lambda r: r["latency_us"]["p50"]),
                "loaded_latency_p99_us": med(rows, lambda r: r["latency_us"]["p99"]),
                "unloaded_cpu_busy": round(med(base, lambda r: r["cpu_busy"]), 3),
                # The receiver's CPU share under the flood: what the flood's
                # frames cost it (device discard saves their reads).
                "loaded_cpu_busy": round(med(rows, lambda r: r["cpu_busy"]), 3),
                "loaded_lost": med(rows, lambda r: r.get("lost")),
                "flood_sent": med(rows, lambda r: r["flood_sent"]),
                "flood_per_s": med(rows, lambda r: r["flood_rate"]),
                "icmp_path_msgs_in": med(rows, icmp_in),
                "icmp_early_discards": med(rows, icmp_discarded),
                "icmp_tap_discard_periods": med(rows, icmp_tap_discards),
                "stream_early_discards": med(rows, stream_discarded),
                "work_in": rows[0].get("work_in"),
            })
    return results


def table(results):
    lines = ["Table 5.5 in our terms: messages/s the application finished while the stream ran",
             f"{'config':<20} {'flood':<7} {'unloaded':>10} {'loaded':>10} {'delta':>8} "
             f"{'p99 us (un/loaded)':>20} {'busy':>5} {'flood/s':>8} {'icmp in':>8} {'icmp disc':>9} {'tap':>5}  thesis"]
    for r in results:
        fr = r["flood_per_s"]
        ic = r["icmp_path_msgs_in"]
        dc = r["icmp_early_discards"]
        td = r["icmp_tap_discard_periods"]
        lines.append(
            f"{r['config']:<20} {r['flood']:<7} {r['unloaded_msgs_per_s']:>10.0f} "
            f"{r['loaded_msgs_per_s']:>10.0f} {r['delta_pct']:>+7.1f}% "
            f"{str(r['unloaded_latency_p99_us']) + ' / ' + str(r['loaded_latency_p99_us']):>20} "
            f"{r['unloaded_cpu_busy']:>5.2f} {fr if fr is None else round(fr):>8} "
            f"{'-' if ic is None else int(ic):>8} {'-' if dc is None else int(dc):>9} "
            f"{'-' if td is None else int(td):>5}  "
            f"{THESIS.get(r['config'], '') if r['flood'] == 'ping-f' else ''}")
    return "\n".join(lines)


def goal(results):
    out = []
    by = {(r["config"], r["flood"]): r["delta_pct"] for r in results}
    for fl in FLOODS:
        p = by.get(("pathstack-priority", fl))
        s = by.get(("pathstack-single", fl))
        k = by.get(("linux", fl))
        if None in (p, s, k):
            continue
        keep = p >= -1.0
        worse = s <= p - 2.0 and k <= p - 2.0
        out.append(f"goal under {fl}: pathstack-priority {p:+.1f}% "
                   f"({'met' if keep else 'NOT met'}: at most 1% lost); "
                   f"pathstack-single {s:+.1f}%, linux {k:+.1f}% "
                   f"({'both' if worse else 'NOT both'} at least 2 points worse)")
    return "\n".join(out)


def versus_thesis(results):
    """Our ping -f figures beside Table 5.5's, saying where they differ."""
    by = {(r["config"], r["flood"]): r["delta_pct"] for r in results}
    out = []
    p, k = by.get(("pathstack-priority", "ping-f")), by.get(("linux", "ping-f"))
    if p is not None:
        out.append(f"thesis Table 5.5, Scout under ping -f: -0.2%; ours (pathstack-priority): "
                   f"{p:+.1f}% -> {'agrees (at most 1% lost)' if p >= -1.0 else 'DISAGREES'}")
    if k is not None:
        verdict = ("agrees within 10 points" if abs(k + 42.1) <= 10
                   else "DISAGREES: Linux loses " + ("less" if k > -42.1 else "more")
                   + " here than in the thesis")
        out.append(f"thesis Table 5.5, Linux under ping -f: -42.1%; ours (linux): {k:+.1f}% -> "
                   f"{verdict}")
    return "\n".join(out)


def svg(results, title):
    """Grouped bars: per configuration, per flood, unloaded vs loaded."""
    rows = [(r["config"], r["flood"], r["unloaded_msgs_per_s"], r["loaded_msgs_per_s"],
             r["delta_pct"]) for r in results]
    top = max([max(u, lo) for _, _, u, lo, _ in rows] + [1.0])
    bar_h, gap, left, width = 14, 10, 230, 420
    h = 60 + len(rows) * (2 * bar_h + gap) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 120}" '
             f'height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
             '<text x="10" y="38">messages/s finished while the stream ran '
             '(higher is better); grey: unloaded</text>']
    y = 55
    for c, fl, u, lo, d in rows:
        parts.append(f'<text x="10" y="{y + bar_h + 4}">{escape(c)} / {escape(fl)}</text>')
        for val, col in ((u, COLOURS["none"]), (lo, COLOURS[fl])):
            w = width * val / top
            parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                         f'fill="{col}"/>')
            parts.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}">{val:.0f}</text>')
            y += bar_h
        parts.append(f'<text x="{left + width + 60}" y="{y - 4}">{d:+.1f}%</text>')
        y += gap
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--svg", required=True)
    ap.add_argument("--meta", nargs="*", default=[])
    a = ap.parse_args()
    results = summarise(load(a.runs))
    if not results:
        sys.exit("priority-report.py: no runs found in " + a.runs)
    meta = dict(kv.split("=", 1) for kv in a.meta)
    with open(a.json, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=2)
        f.write("\n")
    with open(a.svg, "w") as f:
        f.write(svg(results, "Priority under an ICMP flood (thesis Table 5.5)"))
    print(table(results))
    for extra in (goal(results), versus_thesis(results)):
        if extra:
            print(extra)


if __name__ == "__main__":
    main()
