#!/usr/bin/env bash
# instr.sh — instructions and simulated cache misses per round trip of the
# in-memory 1-byte UDP ping-pong, pathstack against smoltcp, of the
# zero-byte RPC ping-pong (XRPCTEST) on pathstack's RPC stack, and of the
# 1-byte TCP ping-pong, under cachegrind.
#
#   scripts/instr.sh [--r1 N] [--r2 N] [--repeat K] [--quick] [--no-build] [--no-rpc] [--no-tcp]
#
#   --r1 N       the smaller round count (default 4000)
#   --r2 N       the larger round count (default 12000)
#   --repeat K   measure every configuration K times; each figure is the
#                median over the K runs (default 3)
#   --quick      --r1 1000 --r2 3000 --repeat 1 (a smoke test: noisier)
#   --no-build   use the binaries already built
#   --no-rpc     leave out the RPC configurations
#   --no-tcp     leave out the TCP configurations
#
# Configurations: pathstack's `pingpong_bench --wire memory` for the per-message
# and LDLP schedulers x the modular (std) and path-inlined (pin) forms, and
# `smoltcp_peer memory --count-only` (smoltcp 0.14, the same workload);
# then (system `rpc`) `pingpong_bench --transport rpc`, zero-byte calls of the
# echo procedure over RPC / MSELECT / VCHAN / CHAN / BID / BLAST / ETH, for
# the same schedulers and forms; then (system `tcp`) `pingpong_bench --transport
# tcp`, one octet each way over one TCP connection with TCP_NODELAY, the
# server's application echoing through the socket API, for the same
# schedulers and forms (pin: both connection paths inlined,
# `inline::tcp_rule`), beside (system `smoltcp-tcp`)
# `smoltcp_peer memory-tcp`, smoltcp's same ping-pong (Nagle off, its
# delayed ACK on as pathstack's is: two frames per round trip at both). The RPC summary sets its figures beside
# the thesis' RPC trace lengths (STD 4,291, PIN 3,471 instructions, -19%)
# and smoltcp's UDP round trip; the TCP summary beside smoltcp's TCP round
# trip, the thesis' TCP/IP trace length (STD 4,750) and pathstack's UDP
# round trip.
#
# Difference method: each configuration runs twice, with R1 and R2 measured
# round trips after the same warm-up; (total(R2) - total(R1)) / (R2 - R1)
# is the cost of one round trip, with start-up and tear-down cancelled.
# The caches are those of a DEC 3000/600 (8 KB direct-mapped I1 and D1,
# 32-byte lines, 2 MB direct-mapped LL):
#
#   valgrind --tool=cachegrind --cache-sim=yes \
#            --I1=8192,1,32 --D1=8192,1,32 --LL=2097152,1,32 PROGRAM ...
#
# Counted per round trip: instructions (Ir), I1 misses (I1mr), D1 misses
# (D1mr + D1mw), LL misses (ILmr + DLmr + DLmw). With the fake clocks the
# counts repeat closely from run to run; --repeat prints the spread.
#
# Both programs run with --count-only: no round is timed, and each stack is
# given a clock that advances 1 us per poll instead of reading the OS
# clock, so both do the same work and the counts do not depend on the
# wall clock.
#
# Prints a table and writes target/pathstack-bench/instr.json
# ({"results": [{"system", "config", "instr_per_rt", "i1_per_rt",
# "d1_per_rt", "ll_per_rt", ...}]}); BENCH_OUT overrides the directory. The
# cachegrind.out files of the last R2 run of each configuration are kept in
# its instr/ subdirectory for cg_annotate. Builds `cargo build --release -p
# pathstack-tools --bin pingpong_bench --bin smoltcp_peer` first (honours
# CARGO_TARGET_DIR) and installs valgrind if it is missing (as root).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=instr.sh
r1=4000 r2=12000 repeat=3 build=1 rpc=1 tcp=1
usage() { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; }
need_arg() { [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "$me: $1 needs a number (try --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --r1) need_arg "$@"; r1=$2; shift 2 ;;
        --r2) need_arg "$@"; r2=$2; shift 2 ;;
        --repeat) need_arg "$@"; repeat=$2; shift 2 ;;
        --quick) r1=1000 r2=3000 repeat=1; shift ;;
        --no-build) build=0; shift ;;
        --no-rpc) rpc=0; shift ;;
        --no-tcp) tcp=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
if [ "$r2" -le "$r1" ]; then
    echo "$me: --r2 ($r2) must be larger than --r1 ($r1)" >&2
    exit 2
fi
if [ "$repeat" -lt 1 ]; then
    echo "$me: --repeat must be at least 1" >&2
    exit 2
fi

if ! command -v valgrind >/dev/null; then
    "$root/scripts/install-deps.sh" --require valgrind
fi
command -v valgrind >/dev/null || { echo "$me: valgrind is not installed" >&2; exit 1; }

bin=${CARGO_TARGET_DIR:-$root/target}/release
out=${BENCH_OUT:-$root/target/pathstack-bench}
mkdir -p "$out/instr"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$build" = 1 ]; then
    echo "$me: building (cargo build --release -p pathstack-tools --bin pingpong_bench --bin smoltcp_peer)" >&2
    (cd "$root" && cargo build --release -q -p pathstack-tools --bin pingpong_bench --bin smoltcp_peer)
fi
for b in pingpong_bench smoltcp_peer; do
    [ -x "$bin/$b" ] || { echo "$me: $bin/$b is not built (run without --no-build)" >&2; exit 1; }
done

# The configurations: CONFIG|SYSTEM|EXAMPLE|ARGUMENTS (the round count is
# appended to the arguments).
configs=(
    "per-message/std|pathstack|pingpong_bench|--sched per-message --form std --count-only --rounds"
    "per-message/pin|pathstack|pingpong_bench|--sched per-message --form pin --count-only --rounds"
    "ldlp/std|pathstack|pingpong_bench|--sched ldlp --form std --count-only --rounds"
    "ldlp/pin|pathstack|pingpong_bench|--sched ldlp --form pin --count-only --rounds"
    "memory|smoltcp|smoltcp_peer|memory --warmup 100 --count-only --rounds"
)
if [ "$rpc" = 1 ]; then
    configs+=(
        "per-message/std|rpc|pingpong_bench|--transport rpc --sched per-message --form std --count-only --rounds"
        "per-message/pin|rpc|pingpong_bench|--transport rpc --sched per-message --form pin --count-only --rounds"
        "ldlp/std|rpc|pingpong_bench|--transport rpc --sched ldlp --form std --count-only --rounds"
        "ldlp/pin|rpc|pingpong_bench|--transport rpc --sched ldlp --form pin --count-only --rounds"
    )
fi
if [ "$tcp" = 1 ]; then
    configs+=(
        "per-message/std|tcp|pingpong_bench|--transport tcp --sched per-message --form std --count-only --rounds"
        "per-message/pin|tcp|pingpong_bench|--transport tcp --sched per-message --form pin --count-only --rounds"
        "ldlp/std|tcp|pingpong_bench|--transport tcp --sched ldlp --form std --count-only --rounds"
        "ldlp/pin|tcp|pingpong_bench|--transport tcp --sched ldlp --form pin --count-only --rounds"
        "memory|smoltcp-tcp|smoltcp_peer|memory-tcp --warmup 100 --count-only --rounds"
    )
fi

# count FILE CMD...: runs CMD under cachegrind, the counts going to FILE.
count() {
    local file=$1 log=$1.log
    shift
    if ! valgrind --tool=cachegrind --cache-sim=yes \
        --I1=8192,1,32 --D1=8192,1,32 --LL=2097152,1,32 \
        --cachegrind-out-file="$file" "$@" >"$log" 2>&1; then
        echo "$me: failed under cachegrind: $*" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    grep -q '^summary:' "$file" || { echo "$me: no summary line in $file" >&2; exit 1; }
}

# Runs alternate between the configurations (run 1 of each, then run 2 of
# each, ...) so that a slow drift of the machine spreads over all of them.
specs=()
for run in $(seq 1 "$repeat"); do
    for c in "${configs[@]}"; do
        IFS='|' read -r name system example args <<<"$c"
        slug=${system}-${name//\//-}
        echo "$me: $system $name (run $run/$repeat: $r1 and $r2 round trips)" >&2
        # shellcheck disable=SC2086 # args is a word list
        count "$tmp/$slug.$run.r1" "$bin/$example" $args "$r1"
        # shellcheck disable=SC2086
        count "$tmp/$slug.$run.r2" "$bin/$example" $args "$r2"
        specs+=("$system|$name|$tmp/$slug.$run.r1|$tmp/$slug.$run.r2")
        cp "$tmp/$slug.$run.r2" "$out/instr/$slug.cachegrind.out"
    done
done

PYTHONPATH="$root/scripts" python3 - "$r1" "$r2" "$repeat" "$out/instr.json" "$(valgrind --version)" "${specs[@]}" <<'EOF'
import json
import sys

import cachegrind

r1, r2, repeat, json_path, vg_version = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]


def totals(path):
    """Event totals of a cachegrind.out file."""
    return cachegrind.totals(path, "instr.sh")


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


METRICS = ("instr", "i1", "d1", "ll")
runs, order = {}, []
for spec in sys.argv[6:]:
    system, config, f1, f2 = spec.split("|")
    a, b = totals(f1), totals(f2)
    per_rt = {m: (b[m] - a[m]) / (r2 - r1) for m in METRICS}
    key = (system, config)
    if key not in runs:
        order.append(key)
    runs.setdefault(key, []).append(per_rt)

results = []
for system, config in order:
    rs = runs[(system, config)]
    row = {"system": system, "config": config}
    for m in METRICS:
        v = round(median([r[m] for r in rs]), 1)
        # A count that does not grow with the rounds comes out as -0.0.
        row[f"{m}_per_rt"] = v if v != 0 else 0.0
    row["runs"] = len(rs)
    row["instr_per_rt_runs"] = [round(r["instr"], 1) for r in rs]
    results.append(row)

smol = next((r for r in results if r["system"] == "smoltcp"), None)


def ratio(x, base):
    return f"{x / base:.2f}x" if base else "-"


print(f"\n1-byte UDP ping-pong (rpc: zero-byte RPC calls; tcp: 1-byte TCP ping-pong), in-memory wire, cachegrind (DEC 3000 geometry: I1/D1 8 KB "
      f"direct-mapped, LL 2 MB, 32-byte lines)")
print(f"per round trip = (total({r2}) - total({r1})) / {r2 - r1}, median of {repeat} run(s)")
head = (f"{'system':<12}{'config':<17}{'instr/RT':>10}{'I1/RT':>9}{'D1/RT':>9}{'LL/RT':>8}"
        f"{'instr/smoltcp':>15}{'I1/smoltcp':>12}{'spread':>9}")
print(head)
print("-" * len(head))
for r in results:
    spread = f"{max(r['instr_per_rt_runs']) - min(r['instr_per_rt_runs']):.0f}"
    print(f"{r['system']:<12}{r['config']:<17}{r['instr_per_rt']:>10.0f}{r['i1_per_rt']:>9.0f}"
          f"{r['d1_per_rt']:>9.0f}{r['ll_per_rt']:>8.1f}"
          f"{ratio(r['instr_per_rt'], smol and smol['instr_per_rt']):>15}"
          f"{ratio(r['i1_per_rt'], smol and smol['i1_per_rt']):>12}"
          f"{spread if repeat > 1 else '-':>9}")

by = {(r["system"], r["config"]): r for r in results}
print("\nPIN against STD (instructions per round trip):")
savings = []
for sched in ("per-message", "ldlp"):
    s, p = by.get(("pathstack", f"{sched}/std")), by.get(("pathstack", f"{sched}/pin"))
    if s and p:
        pct = 100.0 * (s["instr_per_rt"] - p["instr_per_rt"]) / s["instr_per_rt"]
        savings.append({"sched": sched, "pin_saving_pct": round(pct, 2)})
        print(f"  {sched:<12} std {s['instr_per_rt']:>8.0f}  pin {p['instr_per_rt']:>8.0f}  saving {pct:5.1f}%")
rpc_savings = []
rpc_rows = [r for r in results if r["system"] == "rpc"]
if rpc_rows:
    print("\nRPC, zero-byte call round trip (thesis: STD 4,291, PIN 3,471 instructions, saving 19.1%):")
    for sched in ("per-message", "ldlp"):
        s, p = by.get(("rpc", f"{sched}/std")), by.get(("rpc", f"{sched}/pin"))
        if s and p:
            pct = 100.0 * (s["instr_per_rt"] - p["instr_per_rt"]) / s["instr_per_rt"]
            rpc_savings.append({"sched": sched, "pin_saving_pct": round(pct, 2)})
            print(f"  {sched:<12} std {s['instr_per_rt']:>8.0f}  pin {p['instr_per_rt']:>8.0f}  saving {pct:5.1f}%"
                  f"  (goal >= 19%)")
    u = by.get(("pathstack", "per-message/std"))
    for r in rpc_rows:
        vs_smol = ratio(r["instr_per_rt"], smol and smol["instr_per_rt"])
        vs_udp = ratio(r["instr_per_rt"], u and u["instr_per_rt"])
        print(f"  {r['config']:<17} {r['instr_per_rt']:>8.0f} instr: {vs_smol} smoltcp's 1-byte UDP round trip"
              f" (goal <= 1.00x), {vs_udp} pathstack's")
tcp_rows = [r for r in results if r["system"] == "tcp"]
if tcp_rows:
    print("\nTCP, 1-byte ping-pong over one nodelay connection (thesis TCP/IP: STD 4,750 instructions, "
          "PIN -10.6%):")
    for sched in ("per-message", "ldlp"):
        s, p = by.get(("tcp", f"{sched}/std")), by.get(("tcp", f"{sched}/pin"))
        if s and p:
            pct = 100.0 * (s["instr_per_rt"] - p["instr_per_rt"]) / s["instr_per_rt"]
            print(f"  {sched:<12} std {s['instr_per_rt']:>8.0f}  pin {p['instr_per_rt']:>8.0f}  saving {pct:5.1f}%")
    smol_tcp = by.get(("smoltcp-tcp", "memory"))
    for r in tcp_rows:
        u = by.get(("pathstack", r["config"]))
        print(f"  {r['config']:<17} {r['instr_per_rt']:>8.0f} instr: {r['instr_per_rt'] / 4750:.2f}x the thesis' STD, "
              f"{ratio(r['instr_per_rt'], smol_tcp and smol_tcp['instr_per_rt'])} smoltcp's TCP, "
              f"{ratio(r['instr_per_rt'], u and u['instr_per_rt'])} pathstack's UDP, "
              f"{ratio(r['instr_per_rt'], smol and smol['instr_per_rt'])} smoltcp's UDP")
    if smol_tcp:
        print(f"  smoltcp's TCP     {smol_tcp['instr_per_rt']:>8.0f} instr (smoltcp_peer memory-tcp: Nagle off, "
              f"its 10 ms delayed ACK on as pathstack's 40 ms is, two frames per round trip at both)")
if repeat > 1:
    print(f"\nnoise: 'spread' is max - min of instr/RT over the {repeat} runs; "
          f"differences below it are not significant.")
else:
    print("\nnoise: one run per configuration; use --repeat 3 to see the spread.")

doc = {
    "workload": "1-byte UDP ping-pong, (system rpc) zero-byte RPC ping-pong and (system tcp) 1-byte TCP "
                "ping-pong over one nodelay connection, in-memory wire",
    "tool": vg_version + " --tool=cachegrind --cache-sim=yes --I1=8192,1,32 --D1=8192,1,32 --LL=2097152,1,32",
    "method": f"(total(R2) - total(R1)) / (R2 - R1), R1={r1}, R2={r2}, median of {repeat} runs",
    "d1": "D1 read misses + D1 write misses",
    "ll": "LL instruction + data read + data write misses",
    "results": results,
    "pin_vs_std": savings,
    "rpc_pin_vs_std": rpc_savings,
}
with open(json_path, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
print(f"\nwrote {json_path}")
EOF
