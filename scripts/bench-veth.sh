#!/usr/bin/env bash
# bench-veth.sh — 1-byte UDP ping-pong across the veth of scripts/netns.sh,
# in one go, for: pathstack (blocking and busy-poll), the Linux kernel's UDP
# sockets, smoltcp on the same TAP devices, and the floor (the raw minimal
# responder), in two configurations (issue 5, item 4; issue 11, item 8):
#
#   same CPU    a kernel UDP client and the responder under test pinned to
#               the SAME CPU: each wake-up is a cheap same-CPU switch, so the
#               table shows the stacks' own cost. The headline, printed first.
#   cross CPU   both ends of every system its own (pathstack, smoltcp and the
#               floor also run the client) and pinned to DIFFERENT CPUs;
#               cross-CPU wake-ups cost 20-60 us on 2-vCPU VMs and dominate.
#
#   scripts/bench-veth.sh [--rounds N] [--warmup W] [--same-cpu N] [--cpus S,C]
#                         [--only same|cross] [--name NAME] [--repeat K] [--rt]
#                         [--nic NIC] [--no-busy-peers] [--no-build]
#
#   --rounds N        measured round trips per system (default 20000)
#   --warmup W        unmeasured round trips first (default 1000)
#   --same-cpu N      the CPU of both ends in the same-CPU configuration
#                     (default 0)
#   --cpus S,C        CPU of the server end, CPU of the client end in the
#                     cross-CPU configuration (default 0,1)
#   --only CONFIG     run only the same-CPU or only the cross-CPU configuration
#   --name NAME       output file name stem (default veth)
#   --repeat K        run all systems K times, interleaved (A/B alternation
#                     against drift in the machine's load); each row is the
#                     median over the K runs, per percentile (default 3)
#   --rt              run the blocking rows (both ends, and pathstack's
#                     processes) under SCHED_FIFO (chrt -f 50), so that other
#                     load on a shared machine cannot preempt them: without it
#                     the p99 on these 2-vCPU VMs is mostly other processes'
#                     scheduler slices (ms). Busy-poll rows never run
#                     SCHED_FIFO: a spinning FIFO task starves the ksoftirqd
#                     that forwards its frames.
#   --nic NIC         the adapter under pathstack's ETH in the pathstack rows:
#                     tap (default: the TAP itself), lance:copy or lance:direct
#                     (the emulated LANCE over the TAP)
#   --no-busy-peers   skip the busy-poll rows of the kernel, smoltcp and floor
#   --no-build        use the binaries already built
#
# Needs root (namespaces, TAPs). Builds `cargo build --release -p pathstack-tools
# --bins` (honours CARGO_TARGET_DIR). The server end runs on side A
# (namespace NS_A), the client on side B (NS_B), each pinned with taskset.
#
# Same CPU (both ends on CPU N; the client is always the kernel's, blocking
# in recv(2); "-busypoll" rows busy-poll in the responder only):
#
#   system      responder (side A)                     client (side B)
#   floor       floor respond on TAP_A (.1)            kernel_udp client to .1:7
#   kernel      kernel_udp echo on KERNEL_A_IP:7       kernel_udp client to KERNEL_A_IP:7
#   smoltcp     smoltcp_peer tap-echo on TAP_A (.1)    kernel_udp client to .1:7
#   pathstack   tools' host on TAP_A (.1): UDP echo  kernel_udp client to .1:7
#               inside its path (ECHO/UDP/IP/ARP/ETH)
#
# Cross CPU (server on CPU S, client on CPU C):
#
#   system      server (side A)                        client (side B)
#   kernel      kernel_udp echo on KERNEL_A_IP:7        kernel_udp client in NS_B
#   smoltcp     smoltcp_peer tap-echo on TAP_A (.1)     smoltcp_peer tap-client on TAP_B (.3)
#   floor       floor respond on TAP_A (.1)             floor udp-client on TAP_B (.3)
#   pathstack   pingpong_bench --wire tap --transport udp --server-cpu S --client-cpu C
#               [--busy-poll]: one process runs both ends, each host on its own thread
#               pinned to its CPU, the server on TAP_A (.1) in NS_A, the client on TAP_B
#               (.3) in NS_B; the topology's KEY=VALUE lines are exported to it (see
#               scripts/netns.sh), so it uses this topology instead of making its own
#
# Writes target/pathstack-bench/NAME.json ({"tables": [...], "results":
# [{"system", "cpus": "same"|"cross", "rtt_us": {"p50", "p99", "p999"}, ...}],
# "goals": [...]}) and NAME.svg, and prints two tables (same CPU first) with
# the ratios to the floor (BENCH_OUT overrides the directory), each followed
# by the issue's goals on the medians, met or missed. Same CPU: pathstack
# <= 1.05 x floor, pathstack < kernel, pathstack < smoltcp. Cross CPU:
# pathstack <= 1.05 x floor, pathstack <= kernel, pathstack-busypoll < kernel
# (and < kernel-busypoll, <= 1.05 x floor-busypoll). A system whose binary is
# missing or fails is skipped with a message; the rest still run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=20000 warmup=1000 cpus=0,1 same_cpu=0 only= name=veth busy_peers=1 build=1 rt=0 repeat=3 nic=tap
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds|--warmup|--cpus|--same-cpu|--only|--name|--repeat|--nic)
            [ $# -ge 2 ] || { echo "bench-veth.sh: $1 needs a value (try --help)" >&2; exit 2; } ;;&
        --rounds) rounds=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --same-cpu) same_cpu=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
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
case "$only" in
    ""|same|cross) ;;
    *) echo "bench-veth.sh: --only $only: expected same or cross" >&2; exit 2 ;;
esac
ncpu=$(nproc)
for c in "$cpu_s" "$cpu_c" "$same_cpu"; do
    if ! [[ "$c" =~ ^[0-9]+$ ]] || [ "$c" -ge "$ncpu" ]; then
        echo "bench-veth.sh: CPU '$c' does not exist (this machine has CPUs 0 to $((ncpu - 1)))" >&2
        exit 2
    fi
done
[ "$(id -u)" -eq 0 ] || { echo "bench-veth.sh: must run as root" >&2; exit 1; }

me=bench-veth.sh
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_build kernel_udp smoltcp_peer floor host pingpong_bench
bench_topology "bv$$" 77
# For pathstack's pingpong, in case it wants to reuse this topology.
export PS_ID NS_A NS_B VETH_A VETH_B BR_A BR_B TAP_A TAP_B PS_A_IP PS_B_IP KERNEL_A_IP KERNEL_B_IP PREFIX_LEN SUBNET

rows=() missing=()
# The configuration being run: its name (same|cross) and the CPUs of the
# server and client ends.
cfg= srv_cpu= cli_cpu=

# start_server SYSTEM LOG READY CMD...: runs CMD in NS_A pinned to srv_cpu;
# waits until its log shows the pattern READY.
start_server() {
    local system=$1 log=$2 ready=$3; shift 3
    ip netns exec "$NS_A" taskset -c "$srv_cpu" $(sched "$system") "$@" >"$log" 2>&1 &
    server_pid=$!
    local i
    for i in $(seq 1 50); do
        grep -q "$ready" "$log" 2>/dev/null && return 0
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench-veth.sh: server did not start: $*" >&2
    cat "$log" >&2
    return 1
}

# pair SYSTEM READY SERVER_CMD -- CLIENT_CMD: one measured run (number $run)
# of configuration $cfg; the client gets --rounds, --warmup and --json
# appended, and the blocking kernel client of the same-CPU configuration
# runs under SCHED_FIFO with --rt whatever the responder does.
pair() {
    local system=$1 ready=$2 result client_sched=$1; shift 2
    local server=() client=()
    while [ "$1" != -- ]; do server+=("$1"); shift; done
    shift
    client=("$@")
    [ "$cfg" = same ] && client_sched=kernel
    if [ ! -x "${server[0]}" ]; then
        missing+=("--missing" "$system@$cfg=binary ${server[0]} not built"); return 0
    fi
    echo "bench-veth.sh: $system, $cfg CPU (run $run/$repeat)" >&2
    if ! start_server "$system" "$tmp/$system.$cfg.server.log" "$ready" "${server[@]}"; then
        stop_server; missing+=("--missing" "$system@$cfg=server did not start"); return 0
    fi
    result=$tmp/$system.$cfg.$run.json
    if timeout 120 ip netns exec "$NS_B" taskset -c "$cli_cpu" $(sched "$client_sched") "${client[@]}" \
        --rounds "$rounds" --warmup "$warmup" --json "$result" >&2; then
        rows+=("$system@$cfg=rtt:$result")
    else
        missing+=("--missing" "$system@$cfg=client failed (exit $?)")
    fi
    stop_server
}

# same_cpu_rows BUSY: the responders against the kernel's client, both on
# one CPU. BUSY is "" or --busy-poll (the responder's; the client blocks).
same_cpu_rows() {
    local busy=$1 suffix=${1:+-busypoll}
    local client=("$bin/kernel_udp" client --peer "$PS_A_IP:7")
    if [ -z "$busy" ] || [ "$busy_peers" = 1 ]; then
        pair "floor$suffix" ready \
            "$bin/floor" respond --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP" --port 7 $busy -- "${client[@]}"
        pair "kernel$suffix" ready \
            "$bin/kernel_udp" echo --bind "$KERNEL_A_IP:7" $busy -- \
            "$bin/kernel_udp" client --peer "$KERNEL_A_IP:7"
        pair "smoltcp$suffix" ready \
            "$bin/smoltcp_peer" tap-echo --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24" --port 7 $busy -- \
            "${client[@]}"
    fi
    # the host tool prints no "ready"; this line comes once its echo path is made.
    pair "pathstack$suffix" "udp services: echo" \
        "$bin/host" --tap "$TAP_A" --ip "$PS_A_IP/24" --nic "$nic" $busy -- "${client[@]}"
}

peers() {
    local busy=$1 suffix=${1:+-busypoll}
    pair "floor$suffix" ready \
        "$bin/floor" respond --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP" --port 7 $busy -- \
        "$bin/floor" udp-client --tap "$TAP_B" --netns "$NS_B" --ip "$PS_B_IP" --peer "$PS_A_IP" --port 7 $busy
    pair "kernel$suffix" ready \
        "$bin/kernel_udp" echo --bind "$KERNEL_A_IP:7" $busy -- \
        "$bin/kernel_udp" client --peer "$KERNEL_A_IP:7" $busy
    pair "smoltcp$suffix" ready \
        "$bin/smoltcp_peer" tap-echo --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24" --port 7 $busy -- \
        "$bin/smoltcp_peer" tap-client --tap "$TAP_B" --netns "$NS_B" --ip "$PS_B_IP/24" --peer "$PS_A_IP" --port 7 $busy
}

pathstack() {
    local system=$1 result=$tmp/$1.$cfg.$run.json; shift
    if [ ! -x "$bin/pingpong_bench" ]; then
        echo "bench-veth.sh: skipping $system: $bin/pingpong_bench is not built (tools/src/bin/pingpong_bench missing or not compiling)" >&2
        missing+=("--missing" "$system@$cfg=pingpong_bench not built"); return 0
    fi
    echo "bench-veth.sh: $system, $cfg CPU (run $run/$repeat)" >&2
    if timeout 170 $(sched "$system") "$bin/pingpong_bench" --wire tap --transport udp \
        --rounds "$rounds" --warmup "$warmup" --server-cpu "$srv_cpu" --client-cpu "$cli_cpu" --nic "$nic" "$@" \
        --json "$result" >&2; then
        rows+=("$system@$cfg=pingpong:$result")
    else
        missing+=("--missing" "$system@$cfg=pingpong failed (exit $?)")
    fi
}

for run in $(seq 1 "$repeat"); do
    if [ "$only" != cross ]; then
        cfg=same srv_cpu=$same_cpu cli_cpu=$same_cpu
        same_cpu_rows ""
        same_cpu_rows --busy-poll
    fi
    if [ "$only" != same ]; then
        cfg=cross srv_cpu=$cpu_s cli_cpu=$cpu_c
        peers ""
        pathstack pathstack
        pathstack pathstack-busypoll --busy-poll
        if [ "$busy_peers" = 1 ]; then peers --busy-poll; fi
    fi
done

# The tables, and the issue's goals on each table's medians.
tables=() goals=()
if [ "$only" != cross ]; then
    tables+=(--group "same=Same CPU: kernel UDP client and responder both on CPU $same_cpu")
    goals+=(--goal "same:pathstack<=1.05*floor" --goal "same:pathstack<kernel" --goal "same:pathstack<smoltcp")
fi
if [ "$only" != same ]; then
    tables+=(--group "cross=Cross CPU: server CPU $cpu_s, client CPU $cpu_c, each system its own client")
    goals+=(--goal "cross:pathstack<=1.05*floor" --goal "cross:pathstack<=kernel"
        --goal "cross:pathstack-busypoll<kernel" --goal "cross:pathstack-busypoll<kernel-busypoll"
        --goal "cross:pathstack-busypoll<=1.05*floor-busypoll")
fi
fifo=
if [ "$rt" = 1 ]; then fifo=', blocking rows SCHED_FIFO'; fi
python3 "$root/scripts/bench-summary.py" \
    --title "UDP 1-byte ping-pong across veth: $rounds round trips x $repeat runs$fifo" \
    --json "$out/$name.json" --svg "$out/$name.svg" --baseline floor \
    "${tables[@]}" --group-field cpus "${goals[@]}" \
    --meta "transport=udp" --meta "wire=veth" --meta "rounds=$rounds" --meta "repeat=$repeat" \
    --meta "same_cpu=$same_cpu" --meta "cross_cpus=$cpu_s,$cpu_c" \
    --meta "kernel=$(uname -r)" --meta "sched_fifo_blocking_rows=$rt" --meta "pathstack_nic=$nic" \
    "${missing[@]}" "${rows[@]}"
