#!/usr/bin/env bash
# study-priority.sh — the priority-inversion experiment of the Scout thesis
# (Mosberger 1997, §5.2, Table 5.5: under a `ping -f` flood an MPEG video's
# frame rate fell 0.2 % on Scout, whose ICMP path ran one priority below
# the video's, and 42.1 % on Linux), against the Linux kernel.
#
#   study-priority.sh [--quick] [--rate N] [--busy PCT | --work N] [--raw-rate N]
#                     [--seconds S] [--rounds R] [--work-in path|app]
#                     [--sender-cpu 0|1] [--no-device-discard] [--no-build]
#
# The high-priority workload, in place of the thesis' video, is
# tools/src/priority_stream.rs: UDP messages at --rate per second (256
# bytes) for --seconds, from a kernel socket in namespace B, to an
# application in namespace A that does N passes of checksum + copy per
# message. N is calibrated first (--busy, default 50): short unloaded runs
# of pathstack-single find the N at which the receiver's CPU share
# ("busy") is PCT percent, so that the experiment means the same on a
# slower or busier machine; --work N fixes N instead (the calibration is
# printed and kept in the JSON's meta). The result is the rate of messages
# the application finished while the stream ran. On pathstack the work runs where
# --work-in says: `path` (default) in a STREAMWORK stage at the top of the
# stream's path, above UDP, as Scout's MPEG decoder ran on the video's
# path; `app` in the application after each poll, on what the UDP socket
# returns (the first study's setup, kept for comparison). Configurations:
#
#   pathstack-priority  pathstack host on TAP A; the stream's path at
#                       priority 1, ICMP's at 0 (the thesis' setup), and
#                       ICMP's queues two messages long (the thesis
#                       §5.2.1 rule; see priority_stream's icmp_queue_len),
#                       so a flood is discarded at classification; after
#                       16 such discards in a row the TAP's kernel filter
#                       drops echo requests for 20 ms at a time, before
#                       they cost the receiver a wake-up and a read(2)
#                       (--no-device-discard: classification only)
#   pathstack-single    the same, both paths at priority 0, default queues
#   linux               the same application on a kernel UDP socket of
#                       namespace A (the kernel answers the pings)
#
# each run unloaded, then under each flood from namespace B:
#
#   ping-f  `ping -f` (as the thesis did: as fast as replies come, at
#           least 100/s)
#   raw     tools/src/bin/icmp_flood.rs: ICMP echo requests at --raw-rate per
#           second through a raw socket
#
# A flood starts 0.5 s before the stream and ends 1 s after it.
#
# Pinning (2 CPUs): the receiver and the stream's sender on CPU 0, the
# flood on CPU 1 (--sender-cpu 1 moves the stream's sender to the flood's
# CPU, so that CPU 0 carries only the target's work); receive packet steering (RPS) makes each namespace's
# veth hand its frames to its own side's CPU (A: CPU 0, B: CPU 1), so the
# target's kernel work for the flood (the bridge to the TAP, or Linux's
# IP/ICMP and the replies) runs on the target's CPU, as it would on a
# machine of its own. All processes run SCHED_FIFO (chrt -f 20): the
# machine is shared, and other work must not decide the figures.
#
# Output: a table in the form of Table 5.5 per configuration and flood
# (unloaded, loaded, delta %), with latency p50/p99 and the flood's
# volume; target/pathstack-study/priority.json
# ({"results": [{"config", "flood", "unloaded_msgs_per_s",
# "loaded_msgs_per_s", "delta_pct", ...}]}) and priority.svg. With
# --rounds R > 1 each figure is the median of R runs (the rounds
# interleave the configurations). --quick: 3-second streams, one round
# (under three minutes with the tools built).
#
# Needs root (namespaces, TAP devices, raw sockets, SCHED_FIFO).
set -euo pipefail

me=study-priority.sh
root=$(cd "$(dirname "$0")/.." && pwd)
rate=20000
work=
busy_pct=50
raw_rate=30000
seconds=5
rounds=3
work_in=path
sender_cpu=0
device_discard=1
build=1
quick=0
args_given="$*"

usage() { sed -n '2,63p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --rate) rate=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --busy) busy_pct=$2; shift 2 ;;
        --raw-rate) raw_rate=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --work-in) work_in=$2; shift 2 ;;
        --sender-cpu) sender_cpu=$2; shift 2 ;;
        --no-device-discard) device_discard=0; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) usage ;;
        *) echo "$me: unknown argument '$1'" >&2; usage ;;
    esac
done
if [ "$quick" = 1 ]; then seconds=3; rounds=1; fi
case "$work_in" in
    path|app) ;;
    *) echo "$me: --work-in must be path or app, not '$work_in'" >&2; usage ;;
esac
case "$sender_cpu" in
    0|1) ;;
    *) echo "$me: --sender-cpu must be 0 or 1, not '$sender_cpu'" >&2; usage ;;
esac

if [ "$(id -u)" -ne 0 ]; then
    echo "$me: must run as root (it makes network namespaces and TAP devices, opens raw sockets and runs SCHED_FIFO); try: sudo $0 $args_given" >&2
    exit 1
fi
for tool in ip ping taskset chrt python3 timeout; do
    command -v "$tool" >/dev/null || { echo "$me: '$tool' not found; run scripts/install-deps.sh" >&2; exit 1; }
done
if [ "$(nproc)" -lt 2 ]; then
    echo "$me: needs 2 CPUs (target on CPU 0, flood on CPU 1)" >&2
    exit 1
fi

bin=${CARGO_TARGET_DIR:-$root/target}/release
out=$root/target/pathstack-study
runs=$out/priority-runs
mkdir -p "$runs"
rm -f "$runs"/*.json "$runs"/*.txt
rm -rf "$runs/calibrate"

if [ "$build" = 1 ]; then
    echo "$me: building (cargo build --release -p pathstack-tools --bin priority_stream --bin icmp_flood)" >&2
    (cd "$root" && cargo build --release -q -p pathstack-tools --bin priority_stream --bin icmp_flood)
fi

id="pri$$"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "$root/scripts/netns.sh" down --id "$id" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
eval "$("$root/scripts/netns.sh" up --id "$id" --subnet 7)"

# RPS: namespace A's veth hands its frames to CPU 0, B's to CPU 1.
ip netns exec "$NS_A" sh -c "echo 1 > /sys/class/net/$VETH_A/queues/rx-0/rps_cpus"
ip netns exec "$NS_B" sh -c "echo 2 > /sys/class/net/$VETH_B/queues/rx-0/rps_cpus"

RT="chrt -f 20"
port=5000
flood_secs=$(python3 -c "print($seconds + 1.5)")
# ping -w takes whole seconds.
ping_secs=$(python3 -c "import math; print(math.ceil($seconds + 1.5))")

# run CONFIG FLOOD ROUND: one stream, its receiver's JSON in $runs.
run() {
    local config=$1 flood=$2 round=$3 target recv_args
    local tag="$config-$flood-$round"
    case "$config" in
        pathstack-priority|pathstack-single)
            target=$PS_A_IP
            local prio=low
            [ "$config" = pathstack-single ] && prio=same
            recv_args=(--stack pathstack --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24"
                       --port "$port" --icmp-priority "$prio" --work-in "$work_in")
            [ "$device_discard" = 1 ] || recv_args+=(--no-device-discard)
            ;;
        linux)
            target=$KERNEL_A_IP
            recv_args=(--stack linux --bind "$KERNEL_A_IP:$port" --netns "$NS_A")
            ;;
    esac
    local recv_cmd=($RT taskset -c 0 "$bin/priority_stream" recv "${recv_args[@]}"
                    --work "$work" --json "$runs/$tag.json")
    local send_cmd=(ip netns exec "$NS_B" $RT taskset -c "$sender_cpu" "$bin/priority_stream" send
                    --to "$target:$port" --rate "$rate" --seconds "$seconds")
    local flood_cmd=()
    case "$flood" in
        none) ;;
        ping-f) flood_cmd=(ip netns exec "$NS_B" $RT taskset -c 1 ping -f -q -w "$ping_secs" "$target") ;;
        raw) flood_cmd=(ip netns exec "$NS_B" $RT taskset -c 1 "$bin/icmp_flood" --target "$target"
                        --source "$KERNEL_B_IP" --rate "$raw_rate" --seconds "$flood_secs") ;;
    esac
    echo "$me: [$tag] ${recv_cmd[*]}" >&2
    timeout $((${seconds%.*} + 30)) "${recv_cmd[@]}" 2>"$runs/$tag.recv.txt" &
    local recv_pid=$!
    pids+=("$recv_pid")
    sleep 1
    local flood_pid=
    if [ ${#flood_cmd[@]} -gt 0 ]; then
        echo "$me: [$tag] ${flood_cmd[*]}" >&2
        "${flood_cmd[@]}" >"$runs/$tag.flood.txt" 2>&1 &
        flood_pid=$!
        pids+=("$flood_pid")
        sleep 0.5
    fi
    echo "$me: [$tag] ${send_cmd[*]}" >&2
    "${send_cmd[@]}" >"$runs/$tag.send.txt"
    if ! wait "$recv_pid"; then
        echo "$me: [$tag] the receiver failed:" >&2
        cat "$runs/$tag.recv.txt" >&2
        exit 1
    fi
    if [ -n "$flood_pid" ]; then
        # ping exits 1 when replies were missing: the flood still ran.
        wait "$flood_pid" || [ "$flood" = ping-f ] || {
            echo "$me: [$tag] the flood failed:" >&2; cat "$runs/$tag.flood.txt" >&2; exit 1; }
    fi
}

# calibrate: the work per message at which the unloaded receiver is
# --busy percent busy. The share grows about linearly with the work (a
# fixed cost per message plus the work's): two short runs fix the line,
# a third checks the point, and a correction step follows if it is more
# than 10 points off. Each run's share is in its receiver's JSON.
calibrate() {
    local w busy calib=$runs/calibrate
    mkdir -p "$calib"
    measure_busy() { # WORK
        local saved_runs=$runs saved_seconds=$seconds saved_work=$work
        runs=$calib seconds=2 work=$1
        run pathstack-single none "w$1" >/dev/null
        python3 -c "import json; print(json.load(open('$calib/pathstack-single-none-w$1.json'))['cpu_busy'])"
        runs=$saved_runs seconds=$saved_seconds work=$saved_work
    }
    local w0=100 w1=2000 b0 b1
    b0=$(measure_busy $w0)
    b1=$(measure_busy $w1)
    w=$(python3 -c "
b0, b1, t = $b0, $b1, $busy_pct / 100
slope = (b1 - b0) / ($w1 - $w0)
print(max(1, round($w0 + (t - b0) / slope)) if slope > 0 else $w1)")
    busy=$(measure_busy "$w")
    if python3 -c "import sys; sys.exit(0 if abs($busy - $busy_pct / 100) > 0.10 else 1)"; then
        w=$(python3 -c "print(max(1, round($w * ($busy_pct / 100 - $b0) / max($busy - $b0, 0.01))))")
        busy=$(measure_busy "$w")
    fi
    echo "$me: calibrated: work $w gives the unloaded receiver a CPU share of $busy (target $busy_pct%; $w0 -> $b0, $w1 -> $b1)" >&2
    work=$w
    calibrated_busy=$busy
}
calibrated_busy=
if [ -z "$work" ]; then
    calibrate
fi

echo "$me: rate $rate msg/s x ${seconds}s, work $work in the $work_in, raw flood $raw_rate/s, $rounds round(s); receiver on CPU 0, stream sender on CPU $sender_cpu, flood on CPU 1, SCHED_FIFO 20" >&2
for round in $(seq 1 "$rounds"); do
    for config in pathstack-priority pathstack-single linux; do
        for flood in none ping-f raw; do
            run "$config" "$flood" "$round"
        done
    done
done

python3 "$root/scripts/priority-report.py" --runs "$runs" --json "$out/priority.json" \
    --svg "$out/priority.svg" --meta "rate=$rate" "work=$work" "raw_rate=$raw_rate" \
    "seconds=$seconds" "rounds=$rounds" "work_in=$work_in" "busy_target_pct=$busy_pct" "calibrated_busy=${calibrated_busy:-none}" "sender_cpu=$sender_cpu" "device_discard=$device_discard" "command=$0 $args_given"
echo "$me: wrote $out/priority.json and $out/priority.svg" >&2
