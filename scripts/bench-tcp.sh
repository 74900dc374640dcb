#!/usr/bin/env bash
# bench-tcp.sh — TCP bulk throughput against the Linux kernel across the
# veth of scripts/netns.sh: pathstack and smoltcp 0.14 on TAP_A (PS_A_IP,
# namespace NS_A) against the kernel of NS_B (KERNEL_B_IP), both
# directions, without loss and with random loss; plus kernel A <-> kernel
# B over the same veth for reference.
#
#   scripts/bench-tcp.sh [--seconds S] [--quick] [--loss PCT]... [--cpus S,C]
#                        [--busy-poll] [--repeat K] [--name NAME] [--no-build]
#
#   --seconds S   seconds per run (default 5)
#   --quick       2 seconds per run
#   --loss PCT    a loss rate to run, in percent; repeatable (default: 0 and
#                 1). PCT > 0 installs an nftables table (family bridge) in
#                 NS_A dropping PCT% of the TCP/IPv4 frames at random on
#                 the bridge's input, forward and output hooks — the rule of
#                 pathstack-testutil's kernel_tcp::Loss: so it drops frames
#                 between TAP_A and the veth both ways (the kernel rows:
#                 frames to and from kernel A; kernel frames are GSO
#                 super-packets there, so one drop can be many segments).
#   --cpus S,C    CPU of the stack under test (side A), CPU of the kernel
#                 peer program (side B) (default 0,1), pinned with taskset
#   --busy-poll   the user-space stacks poll and yield instead of sleeping
#                 in epoll on the TAP (default: they sleep)
#   --repeat K    run every row K times, interleaved (all rows, then all
#                 again: against drift in a shared machine's load); a row's
#                 value is the median of its K runs, all kept in "runs"
#                 (default 1)
#   --name NAME   output file stem (default tcp)
#   --no-build    use the binaries already built
#
# Tests (the "stack" is the system on side A; for the kernel row, kernel A):
#   bulk-to-stack         kernel B sends (kernel_tcp_bulk source), the stack
#                         receives (sink)
#   bulk-from-stack       the stack sends (source), kernel B receives
#   ...-lossN             the same under N% loss
#
# The programs: examples/tcp_bulk.rs (pathstack, default TCP options: 256 KB
# buffers, window scaling, timestamps, SACK, RACK-TLP, CUBIC),
# examples/smoltcp_peer.rs tcp-sink/tcp-source (256 KB buffers each way,
# CUBIC), examples/kernel_tcp_bulk.rs (std::net, kernel defaults). Each
# prints {"bytes","seconds","gbps",...}; a row's value is the receiver's
# figure (bytes received / time from the first octet to the end).
# TCP_BULK_ARGS (environment): extra arguments for tcp_bulk, e.g.
# TCP_BULK_ARGS="--offload on" for the pathstack rows with TAP offloads.
#
# Writes target/pathstack-bench/NAME.json ({"results": [{"system", "test",
# "value", "unit": "Gbit/s", ...}]}; BENCH_OUT overrides the directory) and
# prints a table with the ratio pathstack/smoltcp. Needs root.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=5 losses=() cpus=0,1 busy= name=tcp build=1 rt=0 repeat=1
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds|--loss|--cpus|--name|--repeat)
            [ $# -ge 2 ] || { echo "bench-tcp.sh: $1 needs a value (try --help)" >&2; exit 2; } ;;&
        --seconds) seconds=$2; shift 2 ;;
        --quick) seconds=2; shift ;;
        --loss) losses+=("$2"); shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --busy-poll) busy=--busy-poll; shift ;;
        --repeat) repeat=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -e/{/^set -e/d;p}' "$0"; exit 0 ;;
        *) echo "bench-tcp.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ ${#losses[@]} -gt 0 ] || losses=(0 1)
cpu_s=${cpus%,*} cpu_c=${cpus#*,}
ncpu=$(nproc)
for c in "$cpu_s" "$cpu_c"; do
    if ! [[ "$c" =~ ^[0-9]+$ ]] || [ "$c" -ge "$ncpu" ]; then
        echo "bench-tcp.sh: CPU '$c' does not exist (CPUs 0 to $((ncpu - 1)))" >&2
        exit 2
    fi
done
[ "$(id -u)" -eq 0 ] || { echo "bench-tcp.sh: must run as root" >&2; exit 1; }
command -v nft >/dev/null || { echo "bench-tcp.sh: nft not found" >&2; exit 1; }

me=bench-tcp.sh
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
if [ "$build" = 1 ]; then
    echo "$me: building tcp_bulk smoltcp_peer kernel_tcp_bulk (release)" >&2
    (cd "$root" && cargo build --release -q -p pathstack \
        --example tcp_bulk --example smoltcp_peer --example kernel_tcp_bulk)
fi
bench_topology "bt$$" 78

loss_table=pst_bench_loss
set_loss() {
    ip netns exec "$NS_A" nft delete table bridge "$loss_table" 2>/dev/null || true
    [ "$1" = 0 ] && return 0
    local rule="ip protocol tcp numgen random mod 100 < $1 counter drop" script
    script="table bridge $loss_table {"$'\n'
    for ch in "loss_in input" "loss_fwd forward" "loss_out output"; do
        set -- $ch
        script+="  chain $1 { type filter hook $2 priority 0; policy accept; $rule; }"$'\n'
    done
    script+="}"
    ip netns exec "$NS_A" nft -f - <<<"$script"
}
dropped() {
    { ip netns exec "$NS_A" nft list table bridge "$loss_table" 2>/dev/null || true; } \
        | awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }'
}

results=$tmp/results.jsonl
: >"$results"
port=5000

# run SYSTEM TEST LOSS RECEIVER-SIDE SERVER_CMD... -- CLIENT_CMD...: the
# server (sink) starts first in its namespace and prints "ready"; then the
# client (source) runs. RECEIVER-SIDE (server|client) says whose JSON is
# the row's value; both are kept.
run() {
    local system=$1 test=$2 loss=$3 server_ns=$4 server_cpu=$5 client_ns=$6 client_cpu=$7
    shift 7
    local server=() client=()
    while [ "$1" != -- ]; do server+=("$1"); shift; done
    shift
    client=("$@")
    local slog=$tmp/$system.$test.server.log clog=$tmp/$system.$test.client.log
    echo "$me: $system $test (loss $loss%, run $run/$repeat)" >&2
    set_loss "$loss"
    ip netns exec "$server_ns" taskset -c "$server_cpu" "${server[@]}" >"$slog" 2>&1 &
    server_pid=$!
    local i ok=0
    for i in $(seq 1 50); do
        if grep -q ready "$slog" 2>/dev/null; then ok=1; break; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ $ok = 0 ]; then
        echo "$me: $system $test: the sink did not start:" >&2; cat "$slog" >&2
        stop_server; return 0
    fi
    if ! timeout $((seconds + 60)) ip netns exec "$client_ns" taskset -c "$client_cpu" "${client[@]}" >"$clog" 2>&1; then
        echo "$me: $system $test: the source failed:" >&2; cat "$clog" >&2
    fi
    # The sink ends by itself at the end of the stream.
    for i in $(seq 1 100); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    stop_server
    local drops
    drops=$(dropped)
    set_loss 0
    python3 - "$system" "$test" "$loss" "$drops" "$slog" "$clog" >>"$results" <<'EOF'
import json, sys
system, test, loss, drops, slog, clog = sys.argv[1:]
def last_json(f):
    r = None
    for line in open(f, errors="replace"):
        line = line.strip()
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except ValueError:
                pass
    return r
sink, source = last_json(slog), last_json(clog)
if sink is None:
    print(f"bench-tcp.sh: {system} {test}: no result from the sink", file=sys.stderr)
    sys.exit(0)
row = {"system": system, "test": test, "value": round(sink["gbps"], 4), "unit": "Gbit/s",
       "loss_pct": float(loss), "frames_dropped": int(drops), "bytes": sink["bytes"],
       "seconds": sink["seconds"], "sink": sink, "source": source}
print(json.dumps(row))
print(f"bench-tcp.sh:   {row['value']:.3f} Gbit/s ({drops} frames dropped)", file=sys.stderr)
EOF
}

tap_args=(--tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24")
for run in $(seq 1 "$repeat"); do
for loss in "${losses[@]}"; do
    suffix=
    [ "$loss" = 0 ] || suffix=-loss$loss
    for system in pathstack smoltcp kernel; do
        port=$((port + 1))
        case $system in
            pathstack) sink=("$bin/tcp_bulk" sink "${tap_args[@]}" $busy ${TCP_BULK_ARGS:-})
                       source=("$bin/tcp_bulk" source "${tap_args[@]}" $busy ${TCP_BULK_ARGS:-}) ;;
            smoltcp)   sink=("$bin/smoltcp_peer" tcp-sink "${tap_args[@]}" $busy)
                       source=("$bin/smoltcp_peer" tcp-source "${tap_args[@]}" $busy) ;;
            kernel)    sink=("$bin/kernel_tcp_bulk" sink)
                       source=("$bin/kernel_tcp_bulk" source) ;;
        esac
        # kernel B -> the stack
        if [ $system = kernel ]; then s_addr=(--bind "$KERNEL_A_IP:$port"); peer=$KERNEL_A_IP
        else s_addr=(--port "$port"); peer=$PS_A_IP; fi
        run "$system" "bulk-to-stack$suffix" "$loss" "$NS_A" "$cpu_s" "$NS_B" "$cpu_c" \
            "${sink[@]}" "${s_addr[@]}" -- \
            "$bin/kernel_tcp_bulk" source --peer "$peer:$port" --seconds "$seconds"
        port=$((port + 1))
        # the stack -> kernel B
        run "$system" "bulk-from-stack$suffix" "$loss" "$NS_B" "$cpu_c" "$NS_A" "$cpu_s" \
            "$bin/kernel_tcp_bulk" sink --bind "$KERNEL_B_IP:$port" -- \
            "${source[@]}" --peer "$KERNEL_B_IP:$port" --seconds "$seconds"
    done
done
done

python3 - "$results" "$out/$name.json" "$seconds" "$cpu_s" "$cpu_c" "${busy:-blocking}" "$(uname -r)" "$repeat" <<'EOF'
import json, statistics, sys
src, dst, seconds, cpu_s, cpu_c, mode, kernel, repeat = sys.argv[1:]
runs = [json.loads(l) for l in open(src) if l.strip()]
# One row per (system, test): the median run's figures, all runs kept.
rows, seen = [], {}
for r in runs:
    seen.setdefault((r["system"], r["test"]), []).append(r)
for (system, test), rs in seen.items():
    rs_sorted = sorted(rs, key=lambda r: r["value"])
    med = dict(rs_sorted[(len(rs_sorted) - 1) // 2])
    med["value"] = round(statistics.median(r["value"] for r in rs), 4)
    med["runs"] = [r["value"] for r in rs]
    rows.append(med)
json.dump({"meta": {"seconds": float(seconds), "stack_cpu": int(cpu_s), "peer_cpu": int(cpu_c),
                    "repeat": int(repeat), "user_space_wait": mode, "kernel": kernel,
                    "topology": "TAP_A (NS_A) - bridge - veth - bridge - kernel B (NS_B)"},
           "results": rows}, open(dst, "w"), indent=1)
tests = []
for r in rows:
    if r["test"] not in tests:
        tests.append(r["test"])
val = {(r["system"], r["test"]): r for r in rows}
print(f"\nTCP bulk throughput, Gbit/s, median of {repeat} ({seconds} s per run; stack on CPU {cpu_s}, kernel peer on CPU {cpu_c}; user-space stacks {mode})")
print(f"{'test':<24}{'pathstack':>10}{'smoltcp':>10}{'kernel':>10}{'ps/smol':>9}  pathstack's connection (median run)")
for t in tests:
    cells = []
    for s in ("pathstack", "smoltcp", "kernel"):
        r = val.get((s, t))
        cells.append(r["value"] if r else None)
    ratio = f"{cells[0] / cells[1]:.2f}" if cells[0] is not None and cells[1] else "-"
    fmt = lambda v: f"{v:10.3f}" if v is not None else f"{'-':>10}"
    p = val.get(("pathstack", t))
    rt = "-"
    if p:
        side = p["source"] if "from-stack" in t else p["sink"]
        if side and "retrans_segs" in side:
            rt = f"{side['retrans_segs']} retrans, {side.get('timeouts', 0)} RTOs, {side.get('tlp_probes', 0)} TLPs"
    print(f"{t:<24}{''.join(fmt(c) for c in cells)}{ratio:>9}  {rt}")
if int(repeat) > 1:
    print("\nall runs (Gbit/s):")
    for t in tests:
        print(f"  {t:<22}" + "  ".join(f"{s}: " + ",".join(f"{v:.2f}" for v in val[(s, t)]["runs"])
                                        for s in ("pathstack", "smoltcp", "kernel") if (s, t) in val))
print(f"\nwritten: {dst}")
EOF
