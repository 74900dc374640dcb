#!/usr/bin/env python3
"""study-ldlp.py — Blackwell's LDLP study (§4, Figures 5-7) on pathstack,
driven by scripts/study-ldlp.sh (standard library only).

    study-ldlp.py --bin LDLP_LOAD --out DIR [--quick]

1. Counts (cachegrind, DEC 3000 geometry) of `ldlp_load cost`: instructions
   and I1 / D1 misses per message for per-message scheduling at n frames
   per poll (each run to completion) and for LDLP at batch sizes n, by the
   difference method (two message counts). For the synthetic five-layer
   stack and the UDP path.
2. A per-message service time from the counts on Blackwell's machine
   (100 MHz, one cycle per instruction, 20 cycles per I1 or D1 miss):
   S(n) = (Ir + 20 (I1 + D1)) x 10 ns.
   Schedulers: per-message with one frame per poll (`per-message`), with
   up to 32 (`per-message/32`: the driver's burst amortises the poll, a
   stronger baseline at overload), and LDLP with batch limits 1..32.
3. `ldlp_load load --clock model` over a sweep of Poisson arrival rates
   (multiples of per-message's modelled capacity): throughput, latency mean
   and p99, batch sizes. Misses per message at each rate are the cachegrind
   counts weighted by the batch sizes the run formed (Figure 5).
4. `ldlp_load load --clock cpu`: the same sweep with each poll's thread CPU
   time on this machine (noisy: shared CPUs and caches).
5. Figure 7: latency and throughput at one fixed arrival rate against the
   code working set per layer (work per layer replaces CPU speed).

Writes DIR/ldlp.json, DIR/ldlp-fig5.svg, DIR/ldlp-fig6.svg,
DIR/ldlp-fig7.svg, DIR/ldlp.md, and prints every command it runs.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from html import escape

import cachegrind

CG = ["valgrind", "--tool=cachegrind", "--cache-sim=yes",
      "--I1=8192,1,32", "--D1=8192,1,32", "--LL=2097152,1,32"]
MHZ, MISS = 100.0, 20.0  # Blackwell §4: 100 MHz, 20 cycles per read miss


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def run(cmd):
    say("+ " + " ".join(shlex.quote(c) for c in cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        say(r.stdout[-2000:], r.stderr[-2000:])
        raise SystemExit(f"study-ldlp: failed: {' '.join(cmd)}")
    return r.stdout


def run_all(cmds):
    """Runs the commands concurrently; fails if any fails."""
    procs = []
    for cmd in cmds:
        say("+ " + " ".join(shlex.quote(c) for c in cmd))
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True)))
    for cmd, p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            say(out[-2000:], err[-2000:])
            raise SystemExit(f"study-ldlp: failed: {' '.join(cmd)}")


def totals(path):
    return cachegrind.totals(path, "study-ldlp")


def sched_args(name):
    """`per-message/32` -> ldlp_load's scheduler arguments."""
    if name.startswith("per-message/"):
        return ["--sched", "per-message", "--rx-burst", name.split("/")[1]]
    return ["--sched", name]


def count(binary, tmp, stack, sched, burst, code, r1, r2):
    """Per-message counts of one configuration (difference method)."""
    files = [os.path.join(tmp, f"cg.{stack}.{sched}.{burst}.{code}.{r}") for r in (r1, r2)]
    # The two runs are independent: both at once (two CPUs).
    run_all([CG + [f"--cachegrind-out-file={f}", binary, "--stack", stack,
                   "--sched", sched, "--code", str(code), "cost",
                   "--burst", str(burst), "--msgs", str(r)]
             for f, r in zip(files, (r1, r2))])
    res = [totals(f) for f in files]
    per = {k: (res[1][k] - res[0][k]) / (r2 - r1) for k in res[0]}
    per["cycles"] = per["instr"] + MISS * (per["i1"] + per["d1"])
    per["ns"] = per["cycles"] * 1e3 / MHZ
    return {k: round(v, 1) for k, v in per.items()}


def counts_for(binary, tmp, stack, code, pm_ns, ns, r1, r2):
    """{'pm': {n: counts}, 'ldlp': {n: counts}}: per message at n frames per poll."""
    out = {"pm": {}, "ldlp": {}}
    for n in pm_ns:
        out["pm"][n] = count(binary, tmp, stack, "per-message", n, code, r1, r2)
    for n in ns:
        out["ldlp"][n] = count(binary, tmp, stack, "ldlp:32", n, code, r1, r2)
    return out


def family(sched):
    return "pm" if sched.startswith("per-message") else "ldlp"


def interp(table, n, key):
    pts = sorted(table.items())
    if n <= pts[0][0]:
        return pts[0][1][key]
    for (n0, a), (n1, b) in zip(pts, pts[1:]):
        if n <= n1:
            return a[key] + (b[key] - a[key]) * (n - n0) / (n1 - n0)
    return pts[-1][1][key]


def cost_table(c, sched):
    return ",".join(f"{n}:{v['ns']}" for n, v in sorted(c[family(sched)].items()))


def load(binary, stack, sched, rates, clock, seconds, code, table=None):
    cmd = [binary, "--stack", stack] + sched_args(sched) + ["--code", str(code), "load",
           "--rates", ",".join(f"{r:.0f}" for r in rates), "--seconds", str(seconds),
           "--clock", clock]
    if table:
        cmd += ["--cost-table", table]
    return [json.loads(l) for l in run(cmd).splitlines() if l.strip()]


def misses_at(row, c):
    """Per-message counts at this run's batch sizes (Figure 5)."""
    hist = row["batch_hist"]
    msgs = sum(n * k for n, k in enumerate(hist))
    out = {}
    table = c[family(row["sched"])]
    for key in ("instr", "i1", "d1"):
        out[key] = round(sum(n * k * interp(table, n, key)
                             for n, k in enumerate(hist)) / max(msgs, 1), 1)
    return out


def saturation(rows):
    return max(r["throughput"] for r in rows)


def crossover(pm, ld):
    """Lowest rate from which LDLP's mean latency stays below per-message's."""
    pairs = sorted(zip([r["rate"] for r in pm], pm, ld))
    x = None
    for rate, a, b in pairs:
        if b["lat_mean_us"] < a["lat_mean_us"]:
            if x is None:
                x = rate
        else:
            x = None
    return x


# ---- SVG -------------------------------------------------------------------

COLOURS = ["#3b75af", "#e1812c", "#3a923a", "#c03d3e", "#9372b2", "#845b53", "#d684bd"]


def svg_lines(path, title, panels):
    """panels: [(subtitle, xlabel, ylabel, logy, [(name, [(x, y)])], notes)]"""
    import math
    W, H, L, T, B = 520, 300, 70, 40, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(panels)}" height="{H + 100}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    for p, (sub, xl, yl, logy, series, notes) in enumerate(panels):
        ox = p * W
        for i, note in enumerate(notes):
            out.append(f'<text x="{ox + L}" y="{H + 32 + 13 * i}">{escape(note)}</text>')
        xs = [x for _, s in series for x, _ in s]
        ys = [y for _, s in series for _, y in s if y > 0 or not logy]
        if not xs or not ys:
            continue
        x0, x1 = 0, max(xs) * 1.05
        if logy:
            y0, y1 = math.log10(min(ys)) - 0.1, math.log10(max(ys)) + 0.1
        else:
            y0, y1 = 0, max(ys) * 1.1 or 1
        pw, ph = W - L - 20, H - T - B

        def X(x):
            return ox + L + (x - x0) / (x1 - x0) * pw

        def Y(y):
            v = math.log10(max(y, 1e-12)) if logy else y
            return T + 20 + ph - (v - y0) / (y1 - y0) * ph
        out.append(f'<text x="{ox + L}" y="{T + 8}" font-weight="bold">{escape(sub)}</text>')
        out.append(f'<rect x="{ox + L}" y="{T + 20}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        for i in range(5):
            xv = x0 + (x1 - x0) * i / 4
            out.append(f'<text x="{X(xv):.0f}" y="{T + 20 + ph + 14}" text-anchor="middle">{xv:,.0f}</text>')
            yv = y0 + (y1 - y0) * i / 4
            lab = 10 ** yv if logy else yv
            out.append(f'<text x="{ox + L - 4}" y="{T + 20 + ph - ph * i / 4 + 4:.0f}" text-anchor="end">{lab:,.3g}</text>')
        out.append(f'<text x="{ox + L + pw / 2}" y="{H + 12}" text-anchor="middle">{escape(xl)}</text>')
        out.append(f'<text x="{ox + 12}" y="{T + 20 + ph / 2}" transform="rotate(-90 {ox + 12} {T + 20 + ph / 2})" '
                   f'text-anchor="middle">{escape(yl)}</text>')
        for k, (name, pts) in enumerate(series):
            col = COLOURS[k % len(COLOURS)]
            pts = [(x, y) for x, y in pts if y > 0 or not logy]
            d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{col}" stroke-width="1.5"/>')
            for x, y in pts:
                out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="2" fill="{col}"/>')
            out.append(f'<text x="{ox + L + 8}" y="{T + 34 + 13 * k}" fill="{col}">{escape(name)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---- main ------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    q = a.quick
    r1, r2 = (200, 600) if q else (1000, 3000)
    ns = [1, 8, 32] if q else [1, 2, 4, 8, 16, 32]
    pm_ns = [1, 32] if q else [1, 4, 32]
    limits = [1, 8, 32] if q else [1, 4, 8, 16, 32]
    mults = [0.1, 0.5, 0.9, 1.25, 2.0] if q else [0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 2.5]
    model_s, meas_s = (0.5, 0.1) if q else (2.0, 0.5)
    codes7 = [2048, 12288] if q else [1024, 2048, 4096, 6144, 8192, 12288]
    ns7 = [1, 32] if q else [1, 4, 16, 32]
    pm7 = [1] if q else [1, 32]
    scheds7 = ["per-message", "ldlp:32"] if q else ["per-message", "per-message/32", "ldlp:8", "ldlp:32"]
    scheds = ["per-message", "per-message/32"] + [f"ldlp:{l}" for l in limits]
    os.makedirs(a.out, exist_ok=True)
    result = {"meta": {"quick": q, "r1": r1, "r2": r2, "cachegrind": " ".join(CG),
                       "model": f"{MHZ:.0f} MHz, 1 cycle/instr, {MISS:.0f} cycles per I1 or D1 miss (Blackwell §4)",
                       "code_per_layer": 6144, "data_per_layer": 256, "msg_bytes": 552, "buffer": 500},
              "stacks": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for stack in ("synthetic", "udp"):
            say(f"study-ldlp: {stack}: cachegrind counts per message")
            c = counts_for(a.bin, tmp, stack, 6144, pm_ns, ns, r1, r2)
            cap_pm = 1e9 / c["pm"][1]["ns"]
            rates = [cap_pm * m for m in mults]
            model, meas = {}, {}
            for s in scheds:
                say(f"study-ldlp: {stack} {s}: modelled clock")
                model[s] = load(a.bin, stack, s, rates, "model", model_s, 6144, cost_table(c, s))
                for row in model[s]:
                    row["per_msg"] = misses_at(row, c)
            # The sweep spans the fastest scheduler's capacity on this CPU.
            cap = max(load(a.bin, stack, s, [1e7], "cpu", 0.1, 6144)[0]["capacity"]
                      for s in ("per-message", "per-message/32", f"ldlp:{limits[-1]}"))
            mrates = [cap * m for m in mults]
            for s in scheds:
                say(f"study-ldlp: {stack} {s}: thread CPU clock")
                meas[s] = load(a.bin, stack, s, mrates, "cpu", meas_s, 6144)
            best = f"ldlp:{limits[-1]}"
            summary = {}
            for clock, runs in (("model", model), ("cpu", meas)):
                summary[clock] = {
                    "saturation_msgs_per_s": {s: round(saturation(r)) for s, r in runs.items()}}
                for base in ("per-message", "per-message/32"):
                    pm, ld = runs[base], runs[best]
                    summary[clock][f"vs {base}"] = {
                        "crossover_rate": crossover(pm, ld),
                        "overload_throughput_ratio": round(ld[-1]["throughput"] / pm[-1]["throughput"], 3),
                        "low_rate_latency_ratio": round(ld[0]["lat_mean_us"] / pm[0]["lat_mean_us"], 3),
                    }
            summary["model"]["overload_i1_per_msg"] = {
                s: model[s][-1]["per_msg"]["i1"] for s in ("per-message", "per-message/32", best)}
            result["stacks"][stack] = {"counts": c, "model": model, "cpu": meas,
                                       "summary": summary}
        # Figure 7: work per layer at one rate (synthetic).
        say("study-ldlp: figure 7 (work per layer)")
        c6 = result["stacks"]["synthetic"]["counts"]
        rate7 = 0.8 * 1e9 / c6["pm"][1]["ns"]
        fig7 = []
        for code in codes7:
            c = counts_for(a.bin, tmp, "synthetic", code, pm7, ns7, r1, r2)
            for s in scheds7:
                row = load(a.bin, "synthetic", s, [rate7], "model", model_s, code, cost_table(c, s))[0]
                row["counts"] = c
                fig7.append(row)
        result["fig7"] = {"rate": round(rate7), "rows": fig7}
    stride = json.loads(run([a.bin, "cost", "--msgs", "1", "--warmup", "0"]))["block_stride"]
    result["meta"]["block_stride"] = stride
    with open(os.path.join(a.out, "ldlp.json"), "w") as f:
        json.dump(result, f, indent=1)
    plots(result, a.out)
    md = report(result)
    with open(os.path.join(a.out, "ldlp.md"), "w") as f:
        f.write(md)
    print(md)


def plots(res, out):
    syn = res["stacks"]["synthetic"]
    m = syn["model"]
    series = lambda runs, f: [(s, [(r["rate"], f(r)) for r in rows]) for s, rows in runs.items()]
    svg_lines(os.path.join(out, "ldlp-fig5.svg"),
              "Figure 5 analogue: misses per message vs arrival rate (synthetic, DEC 8 KB caches)",
              [("I1 misses / msg", "arrival rate (msg/s, modelled 100 MHz)", "I1 misses", False,
                series(m, lambda r: r["per_msg"]["i1"]), []),
               ("D1 misses / msg", "arrival rate (msg/s)", "D1 misses", False,
                series(m, lambda r: r["per_msg"]["d1"]), [])])
    panels = []

    def notes(sm):
        sat = sm["saturation_msgs_per_s"]
        out = ["saturation: " + ", ".join(f"{k} {v:,}" for k, v in list(sat.items())[:4]),
               "            " + ", ".join(f"{k} {v:,}" for k, v in list(sat.items())[4:])]
        for base in ("per-message", "per-message/32"):
            x = sm[f"vs {base}"]["crossover_rate"]
            out.append(f"crossover vs {base}: " + (f"{x:,.0f} msg/s" if x else "none in sweep"))
        return out
    for stack in ("synthetic", "udp"):
        st = res["stacks"][stack]
        panels.append((f"{stack}: mean latency (model)", "arrival rate (msg/s)", "µs (log)", True,
                       series(st["model"], lambda r: r["lat_mean_us"]), notes(st["summary"]["model"])))
        panels.append((f"{stack}: throughput (model)", "arrival rate (msg/s)", "msg/s", False,
                       series(st["model"], lambda r: r["throughput"]), []))
        panels.append((f"{stack}: mean latency (thread CPU clock)", "arrival rate (msg/s)", "µs (log)", True,
                       series(st["cpu"], lambda r: r["lat_mean_us"]), notes(st["summary"]["cpu"])))
    svg_lines(os.path.join(out, "ldlp-fig6.svg"), "Figure 6 analogue: latency vs arrival rate", panels)
    f7 = res["fig7"]["rows"]
    by = {}
    for r in f7:
        by.setdefault(r["sched"], []).append((r["code"] / 1024, r))
    svg_lines(os.path.join(out, "ldlp-fig7.svg"),
              f"Figure 7 analogue: latency vs code per layer at {res['fig7']['rate']} msg/s (model)",
              [("mean latency", "code per layer (KB)", "µs (log)", True,
                [(s, [(x, r["lat_mean_us"]) for x, r in v]) for s, v in by.items()], []),
               ("throughput", "code per layer (KB)", "msg/s", False,
                [(s, [(x, r["throughput"]) for x, r in v]) for s, v in by.items()], [])])


def report(res):
    L = []
    meta = res["meta"]
    L.append(f"Model: {meta['model']}. Cachegrind: `{meta['cachegrind']}`. "
             f"Code family block stride {meta['block_stride']} bytes. quick={meta['quick']}.\n")
    for stack, st in res["stacks"].items():
        c = st["counts"]
        L.append(f"### {stack}: per-message counts (cachegrind, difference of {meta['r1']} and {meta['r2']} messages)\n")
        L.append("| scheduler | frames per poll | instr/msg | I1 miss/msg | D1 miss/msg | modelled µs/msg |")
        L.append("|---|---:|---:|---:|---:|---:|")
        for fam, name in (("pm", "per-message"), ("ldlp", "LDLP")):
            for n, v in sorted(c[fam].items()):
                L.append(f"| {name} | {n} | {v['instr']:,.0f} | {v['i1']:,.1f} | {v['d1']:,.1f} | {v['ns'] / 1e3:,.1f} |")
        for clock in ("model", "cpu"):
            runs = st[clock]
            L.append(f"\n#### {stack}, {clock} clock: throughput (msg/s) / mean latency (µs) / p99 (µs)\n")
            scheds = list(runs)
            L.append("| rate | " + " | ".join(scheds) + " |")
            L.append("|---:|" + "---|" * len(scheds))
            for i in range(len(runs[scheds[0]])):
                rate = runs[scheds[0]][i]["rate"]
                cells = [f"{runs[s][i]['throughput']:,.0f} / {runs[s][i]['lat_mean_us']:,.0f} / {runs[s][i]['lat_p99_us']:,.0f}"
                         for s in scheds]
                L.append(f"| {rate:,.0f} | " + " | ".join(cells) + " |")
            sm = st["summary"][clock]
            L.append("\nSaturation (highest throughput reached): "
                     + ", ".join(f"{s} {v:,}" for s, v in sm["saturation_msgs_per_s"].items()) + ".")
            for base in ("per-message", "per-message/32"):
                v = sm[f"vs {base}"]
                L.append(f"LDLP:32 against {base}: mean latency lower from "
                         + (f"{v['crossover_rate']:,.0f} msg/s" if v["crossover_rate"] else "no rate in the sweep")
                         + f"; throughput ratio at the highest rate {v['overload_throughput_ratio']}"
                         + f"; mean latency ratio at the lowest rate {v['low_rate_latency_ratio']}.")
            if clock == "model":
                L.append(f" I1 misses per message at the highest rate: {sm['overload_i1_per_msg']}.")
        L.append("")
    L.append(f"### Figure 7 analogue: synthetic stack at {res['fig7']['rate']:,} msg/s (model clock)\n")
    L.append("| code/layer | scheduler | throughput | mean µs | p99 µs | mean batch |")
    L.append("|---:|---|---:|---:|---:|---:|")
    for r in res["fig7"]["rows"]:
        L.append(f"| {r['code']:,} | {r['sched']} | {r['throughput']:,.0f} | {r['lat_mean_us']:,.0f} | {r['lat_p99_us']:,.0f} | {r['mean_batch']:.2f} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
