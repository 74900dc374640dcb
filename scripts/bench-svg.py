#!/usr/bin/env python3
"""bench-svg.py — a bar chart of a benchmark JSON whose rows each carry one
value with a unit, as scripts/bench-tcp.sh writes it (standard library only).

    bench-svg.py --json IN.json --svg OUT.svg [--title T]

IN.json is {"meta": {...}, "results": [{"system", "test", "value", "unit"}]}.
The chart has one panel per test, in the order the tests first appear, with
a horizontal bar per system (in a fixed order, the same colour for a system
in every panel) and its value written at the bar's end. Each panel has its
own scale, from zero to its largest value, since the tests' units differ
(Gbit/s, us, conn/s, fraction). A panel whose unit is "fraction" draws a
line at 1.0 (no loss against the unloaded figure).
"""
import argparse
import json
import sys
from html import escape

SYSTEMS = ["pathstack", "pathstack-offload", "smoltcp", "kernel", "tap-floor"]
COLOURS = {
    "pathstack": "#3b75af",
    "pathstack-offload": "#6aa3d8",
    "smoltcp": "#e1812c",
    "kernel": "#3a923a",
    "tap-floor": "#888888",
}
# What "better" means per unit, for the panel titles.
BETTER = {"us": "lower is better", "Gbit/s": "higher is better",
          "conn/s": "higher is better", "fraction": "1.0 = unaffected"}


def fmt(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def render(doc, title):
    rows = doc.get("results", [])
    if not rows:
        raise SystemExit("bench-svg.py: no results to draw")
    tests = []
    for r in rows:
        if r["test"] not in tests:
            tests.append(r["test"])
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in rows)]
    systems += sorted({r["system"] for r in rows} - set(systems))
    width, left, right, bar_h, gap, head = 900, 200, 90, 14, 4, 24
    panel_h = [head + sum(1 for r in rows if r["test"] == t) * (bar_h + gap) + 10 for t in tests]
    top = 60
    height = top + sum(panel_h) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    # The legend.
    x = left
    for s in systems:
        out.append(f'<rect x="{x}" y="34" width="12" height="12" fill="{COLOURS.get(s, "#555")}"/>')
        out.append(f'<text x="{x + 16}" y="45">{escape(s)}</text>')
        x += 16 + 8 * len(s) + 20
    y = top
    for t, ph in zip(tests, panel_h):
        mine = [r for r in rows if r["test"] == t]
        mine.sort(key=lambda r: systems.index(r["system"]))
        unit = mine[0]["unit"]
        vmax = max([r["value"] for r in mine] + ([1.0] if unit == "fraction" else [])) or 1.0
        scale = (width - left - right) / (vmax * 1.05)
        out.append(f'<text x="10" y="{y + 15}" font-weight="bold">{escape(t)}</text>')
        out.append(f'<text x="{left}" y="{y + 15}" fill="#444">{escape(unit)}'
                   f'{" (" + BETTER[unit] + ")" if unit in BETTER else ""}</text>')
        by = y + head
        for r in mine:
            w = max(r["value"], 0) * scale
            out.append(f'<text x="{left - 8}" y="{by + bar_h - 3}" text-anchor="end">'
                       f'{escape(r["system"])}</text>')
            out.append(f'<rect x="{left}" y="{by}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{COLOURS.get(r["system"], "#555")}"/>')
            out.append(f'<text x="{left + w + 4:.1f}" y="{by + bar_h - 3}">{fmt(r["value"])}</text>')
            by += bar_h + gap
        if unit == "fraction":
            lx = left + 1.0 * scale
            out.append(f'<line x1="{lx:.1f}" y1="{y + head - 3}" x2="{lx:.1f}" y2="{by}" '
                       f'stroke="#c0392b" stroke-dasharray="4,3"/>')
        out.append(f'<line x1="10" y1="{y + ph - 4}" x2="{width - 10}" y2="{y + ph - 4}" stroke="#eee"/>')
        y += ph
    meta = doc.get("meta", {})
    if meta:
        note = "; ".join(f"{k} {v}" for k, v in meta.items()
                         if k in ("stack_cpu", "peer_cpu", "rtt_cpu_both_ends", "quick", "kernel"))
        out.append(f'<text x="10" y="{height - 14}" fill="#444" font-size="11">{escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--svg", required=True)
    ap.add_argument("--title", default="benchmark")
    args = ap.parse_args()
    with open(args.json) as f:
        doc = json.load(f)
    svg = render(doc, args.title)
    with open(args.svg, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"written: {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
