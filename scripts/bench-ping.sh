#!/usr/bin/env bash
# bench-ping.sh — ICMP echo RTT from the Linux kernel in namespace B, across
# the veth of scripts/netns.sh, to: the pathstack host on TAP_A, the floor
# (raw responder) on TAP_A, and the kernel of namespace A. Issue 4, item 11.
#
#   scripts/bench-ping.sh [--count N] [--interval S] [--cpus S,C] [--name NAME]
#                         [--repeat K] [--rt] [--no-busy] [--no-build]
#
#   --count N      echo requests per target (default 4000)
#   --interval S   seconds between requests, ping -i (default 0.0005)
#   --cpus S,C     CPU of the responder, CPU of ping (default 0,1)
#   --name NAME    output file name stem (default ping)
#   --repeat K     measure every target K times, interleaved; each row is the
#                  median over the K runs, per percentile (default 3)
#   --rt           run ping and the blocking responders under SCHED_FIFO
#                  (chrt -f 50) so that other load cannot preempt them (see
#                  scripts/bench-veth.sh); busy-poll responders never are
#   --no-busy      skip the busy-poll rows of pathstack and the floor
#   --no-build     use the binaries already built
#
# Needs root. The responders, each pinned to CPU S:
#   pathstack          host (tools) --tap TAP_A --ip PS_A_IP/24, run in NS_A
#   floor              floor (tools) respond --tap TAP_A --ip PS_A_IP, run in NS_A
#   kernel             the kernel of NS_A at KERNEL_A_IP (answers in softirq:
#                      nothing to pin; ping is pinned to CPU C)
#   *-busypoll         the same with --busy-poll
# ping runs in NS_B pinned to CPU C; 56-byte payload (ping's default). The
# RTTs are ping's own per-reply times (1 us resolution); percentiles are
# nearest-rank over all replies of a run, after 200 unrecorded warm-up pings.
# Writes target/pathstack-bench/NAME.json ({"results": [{"system", "rtt_us":
# {"p50", "p99", "p999"}, "rounds", "lost"}]}) and NAME.svg, and prints a
# table with ratios to the floor (BENCH_OUT overrides the directory).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
count=4000 interval=0.0005 cpus=0,1 name=ping busy=1 build=1 rt=0 repeat=3
while [ $# -gt 0 ]; do
    case "$1" in
        --count) count=$2; shift 2 ;;
        --interval) interval=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --no-busy) busy=0; shift ;;
        --rt) rt=1; shift ;;
        --repeat) repeat=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
        *) echo "bench-ping.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
cpu_s=${cpus%,*} cpu_c=${cpus#*,}
[ "$(id -u)" -eq 0 ] || { echo "bench-ping.sh: must run as root" >&2; exit 1; }
command -v ping >/dev/null || { echo "bench-ping.sh: ping not found (apt-get install iputils-ping)" >&2; exit 1; }

me=bench-ping.sh
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_build floor
bench_topology "bp$$" 78

rows=() missing=()

ping_b() { ip netns exec "$NS_B" taskset -c "$cpu_c" $(sched "$system") ping "$@"; }

# measure SYSTEM TARGET_IP: waits until TARGET_IP answers, warms up, records.
measure() {
    local system=$1 ip=$2 i
    for i in $(seq 1 50); do
        ping_b -c 1 -W 1 -q "$ip" >/dev/null 2>&1 && break
        if [ -n "$server_pid" ] && ! kill -0 "$server_pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    if ! ping_b -c 1 -W 1 -q "$ip" >/dev/null 2>&1; then
        missing+=("--missing" "$system=no answer from $ip")
        [ -f "$tmp/$system.log" ] && cat "$tmp/$system.log" >&2
        return 0
    fi
    echo "bench-ping.sh: $system ($ip, run $run/$repeat)" >&2
    ping_b -c 200 -i "$interval" -q "$ip" >/dev/null 2>&1 || true
    ping_b -c "$count" -i "$interval" -W 1 "$ip" >"$tmp/$system.$run.txt" 2>&1 || true
    rows+=("$system=ping:$tmp/$system.$run.txt")
}

# responder SYSTEM CMD...: runs CMD in NS_A on cpu_s, pings PS_A_IP, stops it.
responder() {
    local system=$1; shift
    if [ ! -x "$1" ]; then
        echo "bench-ping.sh: skipping $system: $1 is not built" >&2
        missing+=("--missing" "$system=$(basename "$1") not built"); return 0
    fi
    ip netns exec "$NS_A" taskset -c "$cpu_s" $(sched "$system") "$@" >"$tmp/$system.log" 2>&1 &
    server_pid=$!
    measure "$system" "$PS_A_IP"
    stop_server
}

for run in $(seq 1 "$repeat"); do
    responder floor "$bin/floor" respond --tap "$TAP_A" --ip "$PS_A_IP"
    responder pathstack "$bin/host" --tap "$TAP_A" --ip "$PS_A_IP/24"
    measure kernel "$KERNEL_A_IP"
    if [ "$busy" = 1 ]; then
        responder floor-busypoll "$bin/floor" respond --tap "$TAP_A" --ip "$PS_A_IP" --busy-poll
        responder pathstack-busypoll "$bin/host" --tap "$TAP_A" --ip "$PS_A_IP/24" --busy-poll
    fi
done

python3 "$root/scripts/bench-summary.py" \
    --title "ICMP echo RTT from the kernel of NS_B across veth: $count pings at ${interval}s x $repeat runs, responder CPU $cpu_s, ping CPU $cpu_c$([ "$rt" = 1 ] && echo ', blocking rows SCHED_FIFO')" \
    --json "$out/$name.json" --svg "$out/$name.svg" --baseline floor \
    --meta "protocol=icmp" --meta "wire=veth" --meta "count=$count" --meta "repeat=$repeat" --meta "interval_s=$interval" \
    --meta "cpus=$cpu_s,$cpu_c" --meta "kernel=$(uname -r)" --meta "sched_fifo_blocking_rows=$rt" \
    "${missing[@]}" "${rows[@]}"
