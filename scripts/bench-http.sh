#!/usr/bin/env bash
# bench-http.sh — HTTP/1.1 request rate and latency as a user measures it:
# wrk (installed by this script) in namespace B of scripts/netns.sh against
#
#   pathstack          tools/src/http.rs (hyper on pathstack's tokio TCP
#                      streams, as a user writes it: hyper's defaults, Nagle
#                      on) on TAP_A, TAP offloads off
#   pathstack-offload  the same with --offload on (checksum, TSO, GRO)
#   kernel             tools/src/bin/http_kernel_twin.rs: the same hyper service
#                      on tokio::net, the kernel's TCP, at KERNEL_A_IP (the
#                      bridge address in NS_A, the same hop count)
#
# at 1, 16 and 128 keep-alive connections (GET /, a 255-byte page), the
# server pinned to one CPU and wrk (one thread) to the other. One table
# with the ratios pathstack/kernel; target/pathstack-bench/NAME.json.
#
#   scripts/bench-http.sh [--seconds S] [--conns 1,16,128] [--cpus S,C]
#                         [--repeat K] [--name NAME] [--no-build]
#
#   --seconds S   seconds of each wrk run (default 6; 1 s of warm-up first)
#   --conns LIST  connection counts (default 1,16,128)
#   --cpus S,C    CPU of the server, CPU of wrk (default 0,1)
#   --repeat K    run every row K times, interleaved; a row's value is the
#                 median of its K runs (default 1)
#   --name NAME   output file stem (default http)
#   --no-build    use the binaries already built
#
# A row's value is wrk's Requests/sec; p50 and p99 (wrk --latency) are in
# the table and the JSON. Needs root (namespaces, TAP).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=bench-http.sh
seconds=6 conns=1,16,128 cpus=0,1 repeat=1 name=http build=1 rt=0
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds|--conns|--cpus|--repeat|--name)
            [ $# -ge 2 ] || { echo "$me: $1 needs a value (try --help)" >&2; exit 2; } ;;&
        --seconds) seconds=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -e/{/^set -e/d;p}' "$0"; exit 0 ;;
        *) echo "$me: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "$me: needs root (namespaces, TAP devices)" >&2; exit 2; }
cpu_s=${cpus%,*} cpu_c=${cpus#*,}
for c in "$cpu_s" "$cpu_c"; do
    if ! [[ "$c" =~ ^[0-9]+$ ]] || [ "$c" -ge "$(nproc)" ]; then
        echo "$me: CPU '$c' does not exist (CPUs 0 to $(($(nproc) - 1)))" >&2
        exit 2
    fi
done
"$root/scripts/install-deps.sh" --require wrk iproute2 >&2

# shellcheck source=scripts/bench-lib.sh
source "$root/scripts/bench-lib.sh"
bench_build http http_kernel_twin
bench_topology "h$$" 1
raw="$tmp/rows.jsonl"
: >"$raw"

# start_server SYSTEM: runs SYSTEM's server pinned to CPU S and waits until
# it answers; its address in $server_ip.
start_server() {
    local log="$tmp/server.log"
    case "$1" in
        pathstack|pathstack-offload)
            local off=off
            [ "$1" = pathstack-offload ] && off=on
            server_ip=$PS_A_IP
            taskset -c "$cpu_s" "$bin/http" --tap "$TAP_A" --netns "$NS_A" \
                --ip "$PS_A_IP/24" --port 80 --offload "$off" >"$log" 2>&1 &
            ;;
        kernel)
            server_ip=$KERNEL_A_IP
            ip netns exec "$NS_A" taskset -c "$cpu_s" "$bin/http_kernel_twin" \
                --listen "$KERNEL_A_IP:80" >"$log" 2>&1 &
            ;;
    esac
    server_pid=$!
    for _ in $(seq 1 100); do
        if ip netns exec "$NS_B" curl -s -o /dev/null --max-time 1 "http://$server_ip/"; then
            return 0
        fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "$me: $1's server did not answer:" >&2
    cat "$log" >&2
    return 1
}

# run_wrk SYSTEM CONNS: one wrk run; appends a JSON row.
run_wrk() {
    local out="$tmp/wrk.out"
    ip netns exec "$NS_B" taskset -c "$cpu_c" wrk -t1 -c "$2" -d1s "http://$server_ip/" >/dev/null
    ip netns exec "$NS_B" taskset -c "$cpu_c" wrk -t1 -c "$2" -d"${seconds}s" --latency \
        "http://$server_ip/" >"$out"
    python3 - "$1" "$2" "$out" >>"$raw" <<'EOF'
import json, re, sys
system, conns, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path).read()
def dur(s):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", s)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", text).group(1))
lat = {p: dur(v) for p, v in re.findall(r"^\s+(50|99)%\s+(\S+)$", text, re.M)}
errs = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", text)
print(json.dumps({"system": system, "test": f"http-{conns}conn", "conns": conns,
                  "value": rate, "unit": "req/s", "p50_us": lat.get("50"),
                  "p99_us": lat.get("99"), "errors": errs.group(0) if errs else None}))
EOF
}

systems=(pathstack pathstack-offload kernel)
IFS=, read -r -a conn_list <<<"$conns"
for k in $(seq 1 "$repeat"); do
    for s in "${systems[@]}"; do
        start_server "$s"
        for c in "${conn_list[@]}"; do
            echo "$me: run $k/$repeat: $s, $c connection(s), ${seconds} s" >&2
            run_wrk "$s" "$c"
        done
        stop_server
    done
done

python3 - "$raw" "$out/$name.json" "$seconds" "$cpus" <<'EOF'
import json, statistics, sys
raw, dest, seconds, cpus = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = [json.loads(l) for l in open(raw)]
groups = {}
for r in rows:
    groups.setdefault((r["system"], r["test"]), []).append(r)
results = []
for (system, test), runs in groups.items():
    med = lambda k: statistics.median(x[k] for x in runs if x[k] is not None)
    results.append({"system": system, "test": test, "conns": runs[0]["conns"],
                    "value": med("value"), "unit": "req/s", "p50_us": med("p50_us"),
                    "p99_us": med("p99_us"), "runs": runs})
json.dump({"meta": {"tool": "wrk -t1 --latency", "seconds": int(seconds), "cpus": cpus,
                    "path": "/"}, "results": results}, open(dest, "w"), indent=1)
by = {(r["system"], r["test"]): r for r in results}
tests = sorted({r["test"] for r in results}, key=lambda t: int(t.split("-")[1][:-4]))
systems = ["pathstack", "pathstack-offload", "kernel"]
print(f"{'test':<16}" + "".join(f"{s:>30}" for s in systems) + f"{'ps/kernel':>11}{'ps-off/kernel':>15}")
print(f"{'':<16}" + "".join(f"{'req/s (p50, p99 us)':>30}" for _ in systems))
for t in tests:
    cells, ratio = "", {}
    for s in systems:
        r = by.get((s, t))
        cells += f"{'-':>30}" if r is None else f"{r['value']:>12,.0f} ({r['p50_us']:>6.0f}, {r['p99_us']:>6.0f})"
    k = by.get(("kernel", t))
    for s in systems[:2]:
        r = by.get((s, t))
        ratio[s] = f"{r['value'] / k['value']:.2f}x" if r and k else "-"
    print(f"{t:<16}{cells}{ratio['pathstack']:>11}{ratio['pathstack-offload']:>15}")
print(f"\n{dest}")
EOF
