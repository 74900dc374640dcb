#!/usr/bin/env bash
# bench-veth.sh — 1-byte UDP ping-pong across the veth of scripts/netns.sh,
# in one go, for: pathstack (blocking and busy-poll), the Linux kernel's UDP
# sockets, smoltcp on the same TAP devices, and the floor (raw client ↔ raw
# responder). Issue 5, item 4.
#
#   scripts/bench-veth.sh [--rounds N] [--warmup W] [--cpus S,C] [--name NAME]
#                         [--repeat K] [--rt] [--nic NIC] [--no-busy-peers] [--no-build]
#
#   --rounds N        measured round trips per system (default 20000)
#   --warmup W        unmeasured round trips first (default 1000)
#   --cpus S,C        CPU of the server end, CPU of the client end
#                     (default 0,1: both ends pinned, on different CPUs)
#   --name NAME       output file name stem (default veth; e.g. veth-samecpu)
#   --repeat K        run all systems K times, interleaved (A/B alternation
#                     against drift in the machine's load); each row is the
#                     median over the K runs, per percentile (default 3)
#   --rt              run the blocking rows (both ends, and pathstack's
#                     pingpong) under SCHED_FIFO (chrt -f 50), so that other
#                     load on a shared machine cannot preempt them: without it
#                     the p99 on these 2-vCPU VMs is mostly other processes'
#                     scheduler slices (ms). Busy-poll rows never run
#                     SCHED_FIFO: a spinning FIFO task starves the ksoftirqd
#                     that forwards its frames.
#   --nic NIC         the adapter under pathstack's ETH in the pathstack rows:
#                     tap (default: the TAP itself), lance:copy or lance:direct
#                     (the emulated LANCE over the TAP); passed to pingpong
#   --no-busy-peers   skip the busy-poll rows of the kernel, smoltcp and floor
#   --no-build        use the binaries already built
#
# Needs root (namespaces, TAPs). Builds `cargo build --release -p pathstack
# --examples` (honours CARGO_TARGET_DIR). Every system runs both ends: the
# server end on side A (namespace NS_A, CPU S), the client on side B (NS_B,
# CPU C), each pinned with taskset:
#
#   system      server (side A)                        client (side B)
#   kernel      kernel_udp echo on KERNEL_A_IP:7        kernel_udp client in NS_B
#   smoltcp     smoltcp_peer tap-echo on TAP_A (.1)     smoltcp_peer tap-client on TAP_B (.3)
#   floor       floor respond on TAP_A (.1)             floor udp-client on TAP_B (.3)
#   pathstack   examples/pingpong --wire tap --transport udp --server-cpu S --client-cpu C
#               [--busy-poll]: one process runs both ends, each host on its own thread
#               pinned to its CPU, the server on TAP_A (.1) in NS_A, the client on TAP_B
#               (.3) in NS_B; the topology's KEY=VALUE lines are exported to it (see
#               scripts/netns.sh), so it uses this topology instead of making its own
#
# Writes target/pathstack-bench/NAME.json ({"results": [{"system", "rtt_us":
# {"p50", "p99", "p999"}, ...}]}) and NAME.svg, and prints one table with the
# ratios to the floor (BENCH_OUT overrides the directory), then the issue's
# goals on the medians, met or missed: pathstack <= 1.05 x floor, pathstack <=
# kernel, pathstack-busypoll < kernel (and < kernel-busypoll, <= 1.05 x
# floor-busypoll). A system whose binary is missing or fails is skipped with a
# message; the rest still run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=20000 warmup=1000 cpus=0,1 name=veth busy_peers=1 build=1 rt=0 repeat=3 nic=tap
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --no-busy-peers) busy_peers=0; shift ;;
        --rt) rt=1; shift ;;
        --repeat) repeat=$2; shift 2 ;;
        --nic) nic=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -e/{/^set -e/d;p}' "$0"; exit 0 ;;
        *) echo "bench-veth.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
cpu_s=${cpus%,*} cpu_c=${cpus#*,}
[ "$(id -u)" -eq 0 ] || { echo "bench-veth.sh: must run as root" >&2; exit 1; }

me=bench-veth.sh
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_build kernel_udp smoltcp_peer floor
bench_topology "bv$$" 77
# For pathstack's pingpong, in case it wants to reuse this topology.
export PS_ID NS_A NS_B VETH_A VETH_B BR_A BR_B TAP_A TAP_B PS_A_IP PS_B_IP KERNEL_A_IP KERNEL_B_IP PREFIX_LEN SUBNET

rows=() missing=()

# start_server SYSTEM LOG CMD...: runs CMD in NS_A pinned to cpu_s; waits for "ready".
start_server() {
    local system=$1 log=$2; shift 2
    ip netns exec "$NS_A" taskset -c "$cpu_s" $(sched "$system") "$@" >"$log" 2>&1 &
    server_pid=$!
    local i
    for i in $(seq 1 50); do
        grep -q ready "$log" 2>/dev/null && return 0
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench-veth.sh: server did not start: $*" >&2
    cat "$log" >&2
    return 1
}

# pair SYSTEM SERVER_CMD -- CLIENT_CMD: one measured run (number $run); the
# client gets --rounds, --warmup and --json appended.
pair() {
    local system=$1 result; shift
    local server=() client=()
    while [ "$1" != -- ]; do server+=("$1"); shift; done
    shift
    client=("$@")
    if [ ! -x "${server[0]}" ]; then
        missing+=("--missing" "$system=binary ${server[0]} not built"); return 0
    fi
    echo "bench-veth.sh: $system (run $run/$repeat)" >&2
    if ! start_server "$system" "$tmp/$system.server.log" "${server[@]}"; then
        stop_server; missing+=("--missing" "$system=server did not start"); return 0
    fi
    result=$tmp/$system.$run.json
    if timeout 120 ip netns exec "$NS_B" taskset -c "$cpu_c" $(sched "$system") "${client[@]}" \
        --rounds "$rounds" --warmup "$warmup" --json "$result" >&2; then
        rows+=("$system=rtt:$result")
    else
        missing+=("--missing" "$system=client failed (exit $?)")
    fi
    stop_server
}

peers() {
    local busy=$1 suffix=${1:+-busypoll}
    pair "floor$suffix" \
        "$bin/floor" respond --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP" --port 7 $busy -- \
        "$bin/floor" udp-client --tap "$TAP_B" --netns "$NS_B" --ip "$PS_B_IP" --peer "$PS_A_IP" --port 7 $busy
    pair "kernel$suffix" \
        "$bin/kernel_udp" echo --bind "$KERNEL_A_IP:7" $busy -- \
        "$bin/kernel_udp" client --peer "$KERNEL_A_IP:7" $busy
    pair "smoltcp$suffix" \
        "$bin/smoltcp_peer" tap-echo --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24" --port 7 $busy -- \
        "$bin/smoltcp_peer" tap-client --tap "$TAP_B" --netns "$NS_B" --ip "$PS_B_IP/24" --peer "$PS_A_IP" --port 7 $busy
}

pathstack() {
    local system=$1 result=$tmp/$1.$run.json; shift
    if [ ! -x "$bin/pingpong" ]; then
        echo "bench-veth.sh: skipping $system: $bin/pingpong is not built (examples/pingpong.rs missing or not compiling)" >&2
        missing+=("--missing" "$system=pingpong example not built"); return 0
    fi
    echo "bench-veth.sh: $system (run $run/$repeat)" >&2
    if timeout 170 $(sched "$system") "$bin/pingpong" --wire tap --transport udp \
        --rounds "$rounds" --warmup "$warmup" --server-cpu "$cpu_s" --client-cpu "$cpu_c" --nic "$nic" "$@" \
        --json "$result" >&2; then
        rows+=("$system=pingpong:$result")
    else
        missing+=("--missing" "$system=pingpong failed (exit $?)")
    fi
}

for run in $(seq 1 "$repeat"); do
    peers ""
    pathstack pathstack
    pathstack pathstack-busypoll --busy-poll
    if [ "$busy_peers" = 1 ]; then peers --busy-poll; fi
done

python3 "$root/scripts/bench-summary.py" \
    --title "UDP 1-byte ping-pong across veth: $rounds round trips x $repeat runs, server CPU $cpu_s, client CPU $cpu_c$([ "$rt" = 1 ] && echo ', blocking rows SCHED_FIFO')" \
    --json "$out/$name.json" --svg "$out/$name.svg" --baseline floor \
    --meta "transport=udp" --meta "wire=veth" --meta "rounds=$rounds" --meta "repeat=$repeat" --meta "cpus=$cpu_s,$cpu_c" \
    --meta "kernel=$(uname -r)" --meta "sched_fifo_blocking_rows=$rt" --meta "pathstack_nic=$nic" \
    --goal "pathstack<=1.05*floor" --goal "pathstack<=kernel" \
    --goal "pathstack-busypoll<kernel" --goal "pathstack-busypoll<kernel-busypoll" \
    --goal "pathstack-busypoll<=1.05*floor-busypoll" \
    "${missing[@]}" "${rows[@]}"
