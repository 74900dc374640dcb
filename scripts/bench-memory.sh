#!/usr/bin/env bash
# bench-memory.sh — wall-clock round trips over the in-memory wire (two
# stacks in one thread, no device, no system call), pathstack beside
# smoltcp 0.14 in the same run: the 1-byte UDP ping-pong (pathstack's STD
# and PIN forms against `smoltcp_peer memory`), the 1-byte TCP ping-pong
# over one nodelay connection (STD and PIN against `smoltcp_peer
# memory-tcp`: Nagle off, delayed ACK on at both, two frames per round
# trip) and the
# zero-byte RPC call (pathstack only). The counterpart of scripts/instr.sh
# in time rather than instructions.
#
#   scripts/bench-memory.sh [--rounds N] [--repeat K] [--cpu C] [--no-build]
#
#   --rounds N   measured round trips per run (default 200000; 5000 warm-up)
#   --repeat K   runs of every configuration, interleaved (default 5); a
#                figure is the median over the runs of each run's median
#                (p50) or p99, the spread is max - min of the run medians
#   --cpu C      the CPU every run is pinned to (default 0)
#   --no-build   use the binaries already built
#
# Per-message scheduling. Prints one table (p50 and p99 ns per round trip,
# and ns per packet operation — a round trip is two sends and two
# receives) with the ratios to smoltcp; writes
# target/pathstack-bench/memory.json (BENCH_OUT overrides the directory).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=bench-memory.sh
rounds=200000 repeat=5 cpu=0 build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds|--repeat|--cpu)
            [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "$me: $1 needs a number (try --help)" >&2; exit 2; } ;;&
        --rounds) rounds=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --cpu) cpu=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
[ "$repeat" -ge 1 ] || { echo "$me: --repeat must be at least 1" >&2; exit 2; }
[ "$cpu" -lt "$(nproc)" ] || { echo "$me: CPU $cpu does not exist" >&2; exit 2; }

bin=${CARGO_TARGET_DIR:-$root/target}/release
out=${BENCH_OUT:-$root/target/pathstack-bench}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$build" = 1 ]; then
    echo "$me: building (cargo build --release -p pathstack-tools --bin pingpong_bench --bin smoltcp_peer)" >&2
    (cd "$root" && cargo build --release -q -p pathstack-tools --bin pingpong_bench --bin smoltcp_peer)
fi

# CONFIG|EXAMPLE|ARGUMENTS: each run writes its JSON to a file.
configs=(
    "udp pathstack std|pingpong_bench|--transport udp --sched per-message --form std"
    "udp pathstack pin|pingpong_bench|--transport udp --sched per-message --form pin"
    "udp smoltcp|smoltcp_peer|memory"
    "tcp pathstack std|pingpong_bench|--transport tcp --sched per-message --form std"
    "tcp pathstack pin|pingpong_bench|--transport tcp --sched per-message --form pin"
    "tcp smoltcp|smoltcp_peer|memory-tcp"
    "rpc pathstack std|pingpong_bench|--transport rpc --sched per-message --form std"
    "rpc pathstack pin|pingpong_bench|--transport rpc --sched per-message --form pin"
)
specs=()
for run in $(seq 1 "$repeat"); do
    for c in "${configs[@]}"; do
        IFS='|' read -r name example args <<<"$c"
        file="$tmp/${name// /-}.$run.json"
        echo "$me: $name (run $run/$repeat)" >&2
        # shellcheck disable=SC2086 # args is a word list
        taskset -c "$cpu" "$bin/$example" $args --rounds "$rounds" --warmup 5000 --json "$file" >/dev/null
        specs+=("$name|$file")
    done
done

python3 - "$out/memory.json" "$rounds" "$repeat" "$cpu" "${specs[@]}" <<'EOF'
import json
import statistics
import sys

dest, rounds, repeat, cpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
runs = {}
for spec in sys.argv[5:]:
    name, path = spec.split("|")
    doc = json.load(open(path))
    # pingpong writes {"results": [{...}]}, smoltcp_peer one object.
    r = doc["results"][0] if "results" in doc else doc
    runs.setdefault(name, []).append(r["rtt_ns"])
rows = []
for name, rs in runs.items():
    p50s = [r["p50"] for r in rs]
    rows.append({"config": name, "p50_ns": statistics.median(p50s),
                 "p99_ns": statistics.median(r["p99"] for r in rs),
                 "p50_spread_ns": max(p50s) - min(p50s), "runs": rs})
by = {r["config"]: r for r in rows}
print(f"\nround trips over the in-memory wire, per-message, CPU {cpu}; {rounds} rounds, "
      f"median of {repeat} run(s)")
head = f"{'config':<20}{'p50 ns':>9}{'p99 ns':>9}{'ns/pkt op':>11}{'spread':>8}{'p50/smoltcp':>13}"
print(head)
print("-" * len(head))
for r in rows:
    proto = r["config"].split()[0]
    smol = by.get(f"{proto} smoltcp")
    ratio = f"{r['p50_ns'] / smol['p50_ns']:.2f}x" if smol else "-"
    print(f"{r['config']:<20}{r['p50_ns']:>9.0f}{r['p99_ns']:>9.0f}{r['p50_ns'] / 4:>11.0f}"
          f"{r['p50_spread_ns']:>8.0f}{ratio:>13}")
json.dump({"workload": "1-byte UDP, 1-byte TCP (nodelay) and zero-byte RPC ping-pong, in-memory wire, "
                       "per-message scheduling",
           "rounds": rounds, "repeat": repeat, "cpu": cpu, "results": rows},
          open(dest, "w"), indent=1)
print(f"\nwrote {dest}")
EOF
