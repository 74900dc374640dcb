#!/usr/bin/env bash
# study-tcp-loss.sh — where a TCP sender's time goes under random loss
# (issue 28 item 1): one stack → kernel bulk transfer per sender, pathstack
# (tools/src/bin/tcp_bulk.rs source on TAP_A, offloads off) and kernel A
# (kernel_tcp_bulk source), to kernel B's kernel_tcp_bulk sink across the
# veth of scripts/netns.sh, with bench-tcp.sh's loss rule (nftables, family
# bridge, NS_A: PCT % of TCP/IPv4 frames dropped at random both ways).
# Each run keeps a capture of the SENDER's own view (tcpdump on TAP_A for
# pathstack, on bridge BR_A for kernel A: frames as sent, ACKs as
# received after the loss rule; NAME.pcap) and of the receiver's (VETH_B
# in NS_B; NAME.rx.pcap), the sender's counters (tcp_bulk's JSON;
# Linux: `nstat -as` in NS_A before and after, `ss -tin` every 100 ms) and
# prints scripts/study-tcp-loss.py's analysis of both.
#
#   scripts/study-tcp-loss.sh [--loss PCT] [--seconds S] [--cpus S,C]
#                             [--kernel-gso on|off] [--out DIR] [--no-build]
#
#   --loss PCT        random loss, percent (default 5)
#   --seconds S       seconds each sender writes (default 3)
#   --cpus S,C        CPU of the sender (side A) and of the sink (default 0,1)
#   --kernel-gso off  turn TSO/GSO off on BR_A for the kernel row, so that
#                     kernel A's frames are MSS-sized and the loss rule drops
#                     single segments as it does pathstack's (default on: as
#                     bench-tcp.sh, where one drop can be a 64 KB
#                     super-packet, many segments at once)
#   --out DIR         where the captures and logs stay (default
#                     target/pathstack-bench/tcp-loss)
#   --no-build        use the binaries already built
#
# Needs root; makes its own namespaces (id "ld<pid>") and removes them on
# exit, failure included.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
loss=5 seconds=3 cpus=0,1 kgso=on build=1
out=${CARGO_TARGET_DIR:-$root/target}/pathstack-bench/tcp-loss
while [ $# -gt 0 ]; do
    case "$1" in
        --loss|--seconds|--cpus|--kernel-gso|--out)
            [ $# -ge 2 ] || { echo "study-tcp-loss.sh: $1 needs a value" >&2; exit 2; } ;;&
        --loss) loss=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --kernel-gso) kgso=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -e/{/^set -e/d;p}' "$0"; exit 0 ;;
        *) echo "study-tcp-loss.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "study-tcp-loss.sh: must run as root" >&2; exit 1; }
for t in nft tcpdump ss nstat; do
    command -v $t >/dev/null || { echo "study-tcp-loss.sh: $t not found" >&2; exit 1; }
done
cpu_s=${cpus%,*} cpu_c=${cpus#*,}
bin=${CARGO_TARGET_DIR:-$root/target}/release
if [ "$build" = 1 ]; then
    (cd "$root" && cargo build --release -q -p pathstack-tools --bin tcp_bulk --bin kernel_tcp_bulk)
fi
mkdir -p "$out"

id=ld$$
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    "$root/scripts/netns.sh" down --id "$id" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
eval "$("$root/scripts/netns.sh" up --id "$id" --subnet 79)"

# The rule of bench-tcp.sh's set_loss (and pathstack-testutil's
# kernel_tcp::Loss).
rule="ip protocol tcp numgen random mod 100 < $loss counter drop"
script="table bridge pst_study_loss {"$'\n'
for ch in "loss_in input" "loss_fwd forward" "loss_out output"; do
    set -- $ch
    script+="  chain $1 { type filter hook $2 priority 0; policy accept; $rule; }"$'\n'
done
script+="}"
[ "$loss" = 0 ] || ip netns exec "$NS_A" nft -f - <<<"$script"
[ "$kgso" = on ] || ip netns exec "$NS_A" ethtool -K "$BR_A" tso off gso off >/dev/null

port=6000
for system in pathstack kernel; do
    port=$((port + 1))
    tag=$system-loss$loss
    [ $system = kernel ] && tag+=-gso$kgso
    rm -f "$out/$tag".*
    ip netns exec "$NS_B" taskset -c "$cpu_c" "$bin/kernel_tcp_bulk" sink --bind "$KERNEL_B_IP:$port" \
        >"$out/$tag.sink.log" 2>&1 &
    sink=$!
    pids+=("$sink")
    if [ $system = pathstack ]; then dev=$TAP_A src=$PS_A_IP; else dev=$BR_A src=$KERNEL_A_IP; fi
    ip netns exec "$NS_A" tcpdump -i "$dev" -s 160 -B 65536 -U -w "$out/$tag.pcap" \
        "tcp port $port" 2>"$out/$tag.tcpdump.log" &
    dump=$!
    pids+=("$dump")
    # The receiver's view too (frames as they reach kernel B's veth): a
    # stall with nothing on the wire shows where the frames waited.
    ip netns exec "$NS_B" tcpdump -i "$VETH_B" -s 96 -B 65536 -U -w "$out/$tag.rx.pcap" \
        "tcp port $port" 2>"$out/$tag.rx.tcpdump.log" &
    rxdump=$!
    pids+=("$rxdump")
    for _ in $(seq 1 50); do
        grep -q ready "$out/$tag.sink.log" 2>/dev/null && grep -q listening "$out/$tag.tcpdump.log" \
            && grep -q listening "$out/$tag.rx.tcpdump.log" && break
        sleep 0.1
    done
    ip netns exec "$NS_A" nstat -asz >"$out/$tag.nstat.before"
    ip netns exec "$NS_A" bash -c "while sleep 0.1; do echo \"T \$(date +%s.%N)\"; ss -tinH dst $KERNEL_B_IP:$port; done" \
        >"$out/$tag.ss" 2>/dev/null &
    sampler=$!
    pids+=("$sampler")
    if [ $system = pathstack ]; then
        timeout $((seconds + 120)) ip netns exec "$NS_A" taskset -c "$cpu_s" "$bin/tcp_bulk" source \
            --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24" \
            --peer "$KERNEL_B_IP:$port" --seconds "$seconds" >"$out/$tag.source.log" 2>&1 || true
    else
        timeout $((seconds + 120)) ip netns exec "$NS_A" taskset -c "$cpu_s" "$bin/kernel_tcp_bulk" source \
            --peer "$KERNEL_B_IP:$port" --seconds "$seconds" >"$out/$tag.source.log" 2>&1 || true
    fi
    for _ in $(seq 1 100); do kill -0 "$sink" 2>/dev/null || break; sleep 0.1; done
    ip netns exec "$NS_A" nstat -asz >"$out/$tag.nstat.after"
    sleep 0.3
    kill "$sampler" "$dump" "$rxdump" "$sink" 2>/dev/null || true
    wait "$dump" "$rxdump" 2>/dev/null || true
    echo "== $tag (sender $src, capture on $dev) =="
    python3 "$root/scripts/study-tcp-loss.py" "$out/$tag.pcap" "$src" \
        --source-log "$out/$tag.source.log" --sink-log "$out/$tag.sink.log" \
        --nstat "$out/$tag.nstat.before" "$out/$tag.nstat.after" --ss "$out/$tag.ss" --rx "$out/$tag.rx.pcap" \
        | tee "$out/$tag.report"
done
echo "frames dropped by the loss rule: $(ip netns exec "$NS_A" nft list table bridge pst_study_loss 2>/dev/null \
    | awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }')"
