#!/usr/bin/env bash
# study-techniques.sh — the analogue of Protocol Latency: MIPS and Reality
# Table 5: instructions per round trip saved by each technique on its own,
# against STD, with the seeds' figures beside ours.
#
#   scripts/study-techniques.sh [--quick] [--no-build] [--repeat K]
#
#   --quick      100/300 round trips, one run each (a smoke run)
#   --repeat K   count every configuration K times (default 3); each figure
#                is the median, and the spread (max - min) of the K runs is
#                printed: the counts vary by some tens of instructions from
#                run to run (randomly seeded hash tables)
#   --no-build   reuse the versions scripts/study-versions.sh built
#
# Techniques (each alone, against STD = default build, --form std,
# per-message scheduler, in-memory wire, --count-only):
#   outlining       OUT binary (--features outline), --form std
#   path-inlining   STD binary, --form pin
#   cloning         CLO binary (STD re-linked with the hot path contiguous)
#   buffer refresh  the instructions spent returning message buffers to
#                   their pool (`impl Drop for Msg`: the buffer goes back on
#                   its class's free queue), inclusive, per round trip, from
#                   callgrind's call attribution: what a free refresh could
#                   save at most; and, for scale, those spent taking buffers
#                   (`MsgPool::alloc*`)
#   LANCE direct    STD binary, `--nic lance:copy` against `--nic
#                   lance:direct` (descriptors accessed in place, the
#                   paper's USC; UDP only)
# for UDP (1-byte ping-pong), RPC (zero-byte XRPCTEST calls) and TCP
# (1-byte ping-pong over one nodelay connection; path-inlining inlines
# both connection paths, `inline::tcp_rule`). Counted with
#   valgrind --tool=callgrind pingpong ... --count-only --rounds R
# at R1 and R2 round trips: (total(R2) - total(R1)) / (R2 - R1).
#
# Seeds: Table 5 of seed 000 (refresh 208, USC in the LANCE 171, various
# inlining 119 instructions per round trip); the thesis' Table 8 trace
# lengths (seed 001) for outlining (STD->OUT), cloning (OUT->CLO) and
# path-inlining (OUT->PIN). Output: target/pathstack-study/techniques.json
# and techniques.md (STUDY_OUT overrides the directory).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=study-techniques.sh
r1=1000 r2=3000 repeat=3
versions_args=()
usage() { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) r1=100 r2=300 repeat=1; shift ;;
        --repeat) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "$me: --repeat needs a number" >&2; exit 2; }
                  repeat=$2; shift 2 ;;
        --no-build) versions_args+=(--no-build); shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
out=${STUDY_OUT:-$root/target/pathstack-study}
export STUDY_OUT=$out
mkdir -p "$out/techniques"
versions_args+=(--r1 "$r1" --r2 "$r2")
echo "$me: scripts/study-versions.sh ${versions_args[*]}" >&2
STUDY_LAYOUT_DETAIL=0 "$root/scripts/study-versions.sh" "${versions_args[@]}" >/dev/null

# count NAME BINARY ARGS...: callgrind at R1 and R2 round trips, run $k.
count() {
    local name=$1.$k bin=$2 r
    shift 2
    echo "$me: $name (run $k/$repeat): $bin $* --count-only --rounds $r1|$r2" >&2
    for r in "$r1" "$r2"; do
        if ! valgrind --tool=callgrind --dump-instr=yes --dump-line=no --compress-pos=no \
            --compress-strings=no --demangle=no --callgrind-out-file="$out/techniques/$name.$r" \
            "$bin" "$@" --count-only --rounds "$r" >"$out/techniques/$name.$r.log" 2>&1; then
            echo "$me: failed under callgrind: $bin $* --rounds $r" >&2
            tail -20 "$out/techniques/$name.$r.log" >&2
            exit 1
        fi
    done
}

std=$out/bin/pingpong-std
# Runs alternate between the configurations, so drift spreads over all.
for k in $(seq 1 "$repeat"); do
    for t in udp rpc tcp; do
        tr=()
        [ "$t" != udp ] && tr=(--transport "$t")
        count "std-$t" "$std" --sched per-message --form std "${tr[@]}"
        count "out-$t" "$out/bin/pingpong-out" --sched per-message --form std "${tr[@]}"
        count "clo-$t" "$out/bin/pingpong-clo" --sched per-message --form std "${tr[@]}"
        count "pin-$t" "$std" --sched per-message --form pin "${tr[@]}"
    done
    count lance-copy "$std" --sched per-message --form std --nic lance:copy
    count lance-direct "$std" --sched per-message --form std --nic lance:direct
done

layout="python3 $root/scripts/study-layout.py"
refresh=() alloc=()
for t in udp rpc tcp; do
    refresh+=("$($layout calls-to "$std" "$out/techniques/std-$t.1.$r1" "$out/techniques/std-$t.1.$r2" "$r1" "$r2" \
        '$LT$pathstack_core..msg..Msg$u20$as$u20$core..ops..drop..Drop$GT$4drop' \
        'drop_in_place$LT$pathstack_core..msg..Msg$GT$')")
    alloc+=("$($layout calls-to "$std" "$out/techniques/std-$t.1.$r1" "$out/techniques/std-$t.1.$r2" "$r1" "$r2" \
        '3msg7MsgPool5alloc17h' '3msg7MsgPool10alloc_copy' '3msg7MsgPool11alloc_empty')")
done

python3 - "$out" "$r1" "$r2" "$repeat" "${refresh[@]}" "${alloc[@]}" <<'EOF'
import json
import statistics
import sys

out, r1, r2, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
TRANSPORTS = ("udp", "rpc", "tcp")
refresh = {t: json.loads(sys.argv[5 + i]) for i, t in enumerate(TRANSPORTS)}
alloc = {t: json.loads(sys.argv[5 + len(TRANSPORTS) + i]) for i, t in enumerate(TRANSPORTS)}
spreads = {}


def ir(name):
    def total(path):
        with open(path) as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
        raise SystemExit(f"study-techniques: no summary in {path}")
    runs = [(total(f"{out}/techniques/{name}.{k}.{r2}") - total(f"{out}/techniques/{name}.{k}.{r1}")) / (r2 - r1)
            for k in range(1, repeat + 1)]
    # One run has no spread to show: its noise is unknown, not zero.
    spreads[name] = max(runs) - min(runs) if repeat > 1 else None
    return statistics.median(runs)


rows = []


def row(technique, transport, base, with_, saved, seed, seed_src, how, noise=None):
    r = {"noise": round(noise, 1) if noise is not None else None, "technique": technique, "transport": transport,
         "instr_per_rt_without": round(base, 1) if base is not None else None,
         "instr_per_rt_with": round(with_, 1) if with_ is not None else None,
         "saved_per_rt": round(saved, 1) if saved is not None else None, "seed_saved_per_rt": seed,
         "seed_source": seed_src, "how": how}
    rows.append(r)


# Thesis Table 8 trace lengths: (TCP/IP, RPC); our TCP and UDP both beside TCP/IP.
for t, col in (("udp", 0), ("rpc", 1), ("tcp", 0)):
    std = ir(f"std-{t}")
    o, c = ir(f"out-{t}"), ir(f"clo-{t}")
    p = ir(f"pin-{t}")
    def noise(a, b):
        x, y = spreads[f"{a}-{t}"], spreads[f"{b}-{t}"]
        return None if x is None else x + y
    row("outlining", t, std, o, std - o, (4750 - 4728, 4291 - 4257)[col], "thesis Table 8 STD->OUT length",
        "STD vs OUT (--features outline), --form std", noise("std", "out"))
    row("path-inlining", t, std, p, std - p, (4728 - 4245, 4257 - 3471)[col], "thesis Table 8 OUT->PIN length",
        "STD binary, --form std vs --form pin", noise("std", "pin"))
    row("cloning", t, std, c, std - c, (4728 - 4684, 4257 - 4227)[col], "thesis Table 8 OUT->CLO length",
        "STD vs CLO (same objects, --symbol-ordering-file)", noise("std", "clo"))
    row("buffer refresh (return to pool)", t, None, None, refresh[t]["instr_per_rt"], 208,
        "seed 000 Table 5 'more efficiently refresh message'",
        f"callgrind inclusive cost of Drop for Msg ({refresh[t]['calls_per_rt']} calls per round trip); "
        f"taking buffers (MsgPool::alloc*) costs {alloc[t]['instr_per_rt']} in {alloc[t]['calls_per_rt']} calls")
cp, di = ir("lance-copy"), ir("lance-direct")
row("LANCE direct descriptor access", "udp", cp, di, cp - di, 171, "seed 000 Table 5 'USC in LANCE'",
    "STD binary, --nic lance:copy vs --nic lance:direct",
    None if spreads["lance-copy"] is None else spreads["lance-copy"] + spreads["lance-direct"])

doc = {"method": f"valgrind --tool=callgrind, (total(R2) - total(R1)) / (R2 - R1), R1={r1}, R2={r2}; "
                 f"whole program (libc included); median of {repeat} run(s); noise = the sum of the two "
                 "configurations' spreads (max - min over the runs; '-' with one run): a saving below it is not "
                 "significant",
       "notes": ["seed figures per round trip of the thesis' TCP/IP (beside our TCP and UDP) and RPC stacks",
                 "the thesis' outlining/cloning/inlining figures are trace-length differences between its versions "
                 "(Table 8), not a Table 5 row"],
       "results": rows}
with open(f"{out}/techniques.json", "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
md = ["# Instructions saved per technique (MIPS and Reality Table 5 analogue)\n",
      f"{doc['method']}. Saved = instructions per round trip without - with the technique (negative: costs "
      "instructions).\n",
      "| Technique | Transport | without | with | saved per RT | noise | seed's figure | seed source | how |",
      "|---|---|---:|---:|---:|---:|---:|---|---|"]
for r in rows:
    w = "-" if r["instr_per_rt_without"] is None else f"{r['instr_per_rt_without']:,.0f}"
    x = "-" if r["instr_per_rt_with"] is None else f"{r['instr_per_rt_with']:,.0f}"
    nz = "-" if r["noise"] is None else f"{r['noise']:,.0f}"
    sv = "n/a" if r["saved_per_rt"] is None else f"{r['saved_per_rt']:,.1f}"
    how = r["how"]
    md.append(f"| {r['technique']} | {r['transport']} | {w} | {x} | {sv} | {nz} | "
              f"{r['seed_saved_per_rt']} | {r['seed_source']} | {how} |")
with open(f"{out}/techniques.md", "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))
print(f"\nwrote {out}/techniques.json, techniques.md")
EOF
