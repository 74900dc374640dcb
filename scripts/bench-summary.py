#!/usr/bin/env python3
"""bench-summary.py — the table, JSON and SVG of scripts/bench-veth.sh and
scripts/bench-ping.sh (standard library only).

    bench-summary.py --title T --json OUT.json --svg OUT.svg [--baseline floor]
                     [--meta KEY=VALUE ...] [--missing SYSTEM=REASON ...]
                     [--goal [GROUP:]A<=[F*]B ...]
                     [--group NAME=TITLE ... [--group-field KEY]]
                     SYSTEM[@GROUP]=KIND:FILE ...

KIND says what FILE holds:
  rtt       the JSON a comparison client writes (tools/src/rtt.rs):
            {"system", "rounds", "lost", "rtt_ns": {"p50", "p99", "p999", ...}}
  pingpong  the JSON of `tools/src/bin/pingpong_bench/main.rs --json`:
            {"results": [{"config", "rounds", "rtt_ns": {"p50", "p99", "p999"}}]};
            the row shows the configuration with the lowest median, and lists
            all of them
  ping      the output of `ping` (one "time=X ms" line per reply)
A SYSTEM given several times (several runs) gets the median of the runs,
per percentile (for pingpong: per configuration, then the best).

Prints one table (median, p99, p99.9 and ratios to the baseline row) and
writes {"results": [{"system", "rtt_us": {"p50", "p99", "p999"}, ...}], ...}
plus a bar chart of the medians with the p99 marked.

--goal A<=[F*]B (repeatable) checks a goal on the medians, e.g.
`pathstack<=1.05*floor`: printed under the table as met / missed and
written to the JSON as {"goals": [{"goal", "lhs_us", "rhs_us", "met"}]}
("met" is null when a row is missing).

--group NAME=TITLE (repeatable) splits the rows into tables, printed in the
order the groups are given, each under its title: every SYSTEM (of a row
and of --missing) is then written SYSTEM@NAME, a goal NAME:A<=[F*]B applies
to that table only (a goal without NAME: to every table), and each result
and goal in the JSON carries the key --group-field (default "group") with
the NAME, e.g. {"system": "kernel", "cpus": "same", ...}.
"""
import argparse
import json
import math
import re
import sys


def percentile(sorted_values, q):
    """Nearest-rank percentile (the value at or below which q of them lie)."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def load_rtt(path):
    with open(path) as f:
        d = json.load(f)
    ns = d["rtt_ns"]
    return {
        "rtt_us": {k: ns[k] / 1000.0 for k in ("p50", "p99", "p999")},
        "rounds": d.get("rounds"),
        "lost": d.get("lost", 0),
        "round_trips_per_s": d.get("round_trips_per_s"),
    }


def load_pingpong(path):
    with open(path) as f:
        d = json.load(f)
    configs = []
    for r in d.get("results", []):
        ns = r["rtt_ns"]
        configs.append({
            "config": r.get("config", "?"),
            "rounds": r.get("rounds"),
            "rtt_us": {k: ns[k] / 1000.0 for k in ("p50", "p99", "p999") if k in ns},
            "round_trips_per_s": r.get("round_trips_per_s"),
        })
    if not configs:
        raise ValueError(f"{path}: no results")
    best = min(configs, key=lambda c: c["rtt_us"]["p50"])
    return {
        "rtt_us": dict(best["rtt_us"]),
        "config": best["config"],
        "rounds": best["rounds"],
        "round_trips_per_s": best["round_trips_per_s"],
        "configs": configs,
    }


def load_ping(path):
    with open(path) as f:
        text = f.read()
    times = sorted(float(m) * 1000.0 for m in re.findall(r"time=([0-9.]+) ms", text))
    sent = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    lost = int(sent.group(1)) - int(sent.group(2)) if sent else None
    if not times:
        raise ValueError(f"{path}: no replies")
    return {
        "rtt_us": {
            "p50": percentile(times, 0.5),
            "p99": percentile(times, 0.99),
            "p999": percentile(times, 0.999),
        },
        "rounds": len(times),
        "lost": lost,
    }


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def combine_rtt(loaded):
    keys = [k for k in ("p50", "p99", "p999") if all(k in d["rtt_us"] for d in loaded)]
    return {k: median(d["rtt_us"][k] for d in loaded) for k in keys}


def combine(loaded):
    """One row from one or more runs of a system (median per percentile)."""
    if len(loaded) == 1:
        return loaded[0]
    row = {
        "runs": len(loaded),
        "p50_per_run": [d["rtt_us"]["p50"] for d in loaded],
        "rounds": loaded[0].get("rounds"),
        "lost": sum(d.get("lost") or 0 for d in loaded),
    }
    if any("configs" in d for d in loaded):
        by_config = {}
        for d in loaded:
            for c in d.get("configs", []):
                by_config.setdefault(c["config"], []).append(c)
        configs = [{"config": name, "rounds": cs[0].get("rounds"), "runs": len(cs),
                    "rtt_us": combine_rtt(cs)} for name, cs in by_config.items()]
        best = min(configs, key=lambda c: c["rtt_us"]["p50"])
        row.update(rtt_us=dict(best["rtt_us"]), config=best["config"], configs=configs)
    else:
        row["rtt_us"] = combine_rtt(loaded)
    return row


LOADERS = {"rtt": load_rtt, "pingpong": load_pingpong, "ping": load_ping}

GOAL = re.compile(r"^\s*([\w.-]+)\s*(<=|<)\s*(?:([0-9.]+)\s*\*\s*)?([\w.-]+)\s*$")


def check_goals(goals, rows):
    """Evaluates `A<=[F*]B` goals on the rows' medians (the rows of one table)."""
    median_of = {r["system"]: r["rtt_us"]["p50"] for r in rows if not r.get("missing")}
    out = []
    for g in goals:
        m = GOAL.match(g)
        if not m:
            raise SystemExit(f"bench-summary.py: bad --goal {g!r} (expected A<=[F*]B)")
        lhs, op, factor, rhs = m.group(1), m.group(2), float(m.group(3) or 1.0), m.group(4)
        a, b = median_of.get(lhs), median_of.get(rhs)
        met = None
        if a is not None and b is not None:
            met = a <= factor * b if op == "<=" else a < factor * b
        out.append({"goal": g.strip(), "lhs_us": a, "rhs_us": None if b is None else factor * b,
                    "met": met})
    return out


def print_goals(goals):
    if not goals:
        return
    print("\ngoals (medians):")
    for g in goals:
        verdict = {True: "met", False: "MISSED", None: "not measured"}[g["met"]]
        print(f"  {g['goal']:<40} {fmt(g['lhs_us']):>8} us vs {fmt(g['rhs_us']):>8} us  {verdict}")


def fmt(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


def ratio(x, base):
    if base is None or not base or x is None:
        return "-"
    return f"{x / base:.2f}x"


def print_table(title, rows, baseline):
    base = next((r for r in rows if r["system"] == baseline), None)
    b50 = base["rtt_us"]["p50"] if base else None
    b99 = base["rtt_us"]["p99"] if base else None
    print(f"\n{title}")
    head = f"{'system':<22}{'median us':>10}{'p99 us':>10}{'p99.9 us':>10}{'median/' + baseline:>16}{'p99/' + baseline:>13}  note"
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.get("missing"):
            continue
        u = r["rtt_us"]
        note = []
        if r.get("config"):
            note.append(f"best config {r['config']}")
        if r.get("runs"):
            note.append(f"median of {r['runs']} runs")
        if r.get("lost"):
            note.append(f"{r['lost']} lost")
        if r.get("failed_runs"):
            note.append(f"{len(r['failed_runs'])} failed runs")
        print(f"{r['system']:<22}{fmt(u['p50']):>10}{fmt(u['p99']):>10}{fmt(u.get('p999')):>10}"
              f"{ratio(u['p50'], b50):>16}{ratio(u['p99'], b99):>13}  {', '.join(note)}")
        for c in r.get("configs", []) if len(r.get("configs", [])) > 1 else []:
            cu = c["rtt_us"]
            print(f"  {c['config']:<20}{fmt(cu['p50']):>10}{fmt(cu['p99']):>10}{fmt(cu.get('p999')):>10}"
                  f"{ratio(cu['p50'], b50):>16}{ratio(cu['p99'], b99):>13}")
    for r in rows:
        if r.get("missing"):
            print(f"{r['system']:<22}  skipped: {r['missing']}")


def write_svg(path, title, rows, baseline):
    """Horizontal bars of the medians, a tick for each p99 (clipped values
    are drawn at the right edge with their number)."""
    rows = [r for r in rows if not r.get("missing")]
    width, left, right, top, bar_h, gap = 900, 170, 60, 50, 18, 12
    height = top + len(rows) * (bar_h + gap) + 50
    p50s = [r["rtt_us"]["p50"] for r in rows] or [1.0]
    p99s = [r["rtt_us"]["p99"] for r in rows] or [1.0]
    # Keep the medians readable when a p99 is far out: clip the axis.
    xmax = min(max(p99s), 4 * max(p50s))
    xmax = max(xmax, max(p50s)) * 1.05
    step = 10 ** math.floor(math.log10(xmax / 5)) if xmax > 0 else 1
    for m in (1, 2, 5, 10):
        if xmax / (step * m) <= 8:
            step *= m
            break
    scale = (width - left - right) / xmax
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="13">{title}</text>',
    ]
    axis_y = top + len(rows) * (bar_h + gap)
    t = 0.0
    while t <= xmax:
        x = left + t * scale
        out.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{axis_y}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 15}" text-anchor="middle" fill="#444">{t:g}</text>')
        t += step
    out.append(f'<text x="{left + (width - left - right) / 2}" y="{axis_y + 34}" text-anchor="middle">'
               f'RTT (\u00b5s): bar = median, red tick = p99</text>')
    for i, r in enumerate(rows):
        y = top + i * (bar_h + gap)
        p50, p99 = r["rtt_us"]["p50"], r["rtt_us"]["p99"]
        colour = "#888" if r["system"] == baseline else "#3b75af"
        w = p50 * scale
        label = r.get("label", r["system"])
        out.append(f'<text x="{left - 8}" y="{y + bar_h - 4}" text-anchor="end">{label}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colour}"/>')
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 4}" fill="#000">{p50:.1f}</text>')
        px = left + min(p99, xmax) * scale
        out.append(f'<line x1="{px:.1f}" y1="{y - 2}" x2="{px:.1f}" y2="{y + bar_h + 2}" '
                   f'stroke="#c0392b" stroke-width="2"/>')
        if p99 > xmax:
            out.append(f'<text x="{px - 4:.1f}" y="{y - 3}" text-anchor="end" fill="#c0392b" '
                       f'font-size="10">p99 {p99:.0f} &#8594;</text>')
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def split_group(system, groups):
    """(system, group) of `SYSTEM@NAME` (group None without --group)."""
    if not groups:
        return system, None
    name, sep, group = system.rpartition("@")
    if not sep or group not in groups:
        raise SystemExit(f"bench-summary.py: {system!r}: expected SYSTEM@GROUP with GROUP one of "
                         f"{', '.join(groups)}")
    return name, group


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--title", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--svg", required=True)
    ap.add_argument("--baseline", default="floor")
    ap.add_argument("--meta", action="append", default=[], help="KEY=VALUE added to the JSON")
    ap.add_argument("--missing", action="append", default=[], help="SYSTEM=REASON: a skipped row")
    ap.add_argument("--goal", action="append", default=[], help="[GROUP:]A<=[F*]B on the medians")
    ap.add_argument("--group", action="append", default=[], help="NAME=TITLE: a table of its own")
    ap.add_argument("--group-field", default="group", help="the JSON key naming a result's group")
    ap.add_argument("rows", nargs="*", help="SYSTEM[@GROUP]=KIND:FILE")
    args = ap.parse_args()
    groups = dict(g.split("=", 1) for g in args.group)
    field = args.group_field

    # A system may come with several runs (bench-veth.sh --repeat): its row
    # is the median, per percentile, over the runs.
    runs, order, missing = {}, [], {}
    for spec in args.rows:
        system, _, rest = spec.partition("=")
        key = split_group(system, groups)
        kind, _, path = rest.partition(":")
        if key not in order:
            order.append(key)
        try:
            runs.setdefault(key, []).append(LOADERS[kind](path))
        except (OSError, ValueError, KeyError) as e:
            missing.setdefault(key, f"could not read {path}: {e}")
    rows = []
    for key in order:
        if key in runs:
            rows.append({"system": key[0], "_group": key[1], **combine(runs[key])})
        else:
            rows.append({"system": key[0], "_group": key[1], "missing": missing[key]})
    for spec in args.missing:
        system, _, reason = spec.partition("=")
        name, group = split_group(system, groups)
        row = next((r for r in rows if (r["system"], r["_group"]) == (name, group)), None)
        if row is None:
            rows.append({"system": name, "_group": group, "missing": reason})
        elif not row.get("missing"):
            row.setdefault("failed_runs", []).append(reason)

    goals = []
    if groups:
        print(args.title)
    for group in groups or [None]:
        table = [r for r in rows if r["_group"] == group]
        print_table(groups[group] if group else args.title, table, args.baseline)
        mine = []
        for g in args.goal:
            gname, sep, rest = g.partition(":")
            if not sep:
                mine.append(g)
            elif gname not in groups:
                raise SystemExit(f"bench-summary.py: goal {g!r}: no group {gname!r}")
            elif gname == group:
                mine.append(rest)
        checked = check_goals(mine, table)
        print_goals(checked)
        for c in checked:
            if group:
                c[field] = group
            goals.append(c)

    for r in rows:
        group = r.pop("_group")
        if group:
            r[field] = group
            r["label"] = f"{r['system']} ({group})"
    ok = [r for r in rows if not r.get("missing")]
    doc = {k: v for k, v in (m.split("=", 1) for m in args.meta)}
    if groups:
        doc["tables"] = [{field: name, "title": title} for name, title in groups.items()]
    doc["results"] = [{k: v for k, v in r.items() if k != "label"} for r in ok]
    if goals:
        doc["goals"] = goals
    skipped = {r.get("label", r["system"]): r["missing"] for r in rows if r.get("missing")}
    if skipped:
        doc["skipped"] = skipped
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    write_svg(args.svg, args.title, ok, args.baseline)
    print(f"\nwrote {args.json} and {args.svg}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
