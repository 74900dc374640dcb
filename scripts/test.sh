#!/usr/bin/env bash
# Runs every check and test of pathstack: the README's test command.
#
# Privileged tests (TAP devices, network namespaces) need root. As root they
# always run (and the packages they need are installed first). Not as root,
# this script stops with a message, unless PATHSTACK_SKIP_PRIVILEGED=1 is set,
# in which case those tests report themselves skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then
    scripts/install-deps.sh
elif [ "${PATHSTACK_SKIP_PRIVILEGED:-}" != 1 ]; then
    echo "scripts/test.sh: the privileged tests (TAP devices, namespaces) need root." >&2
    echo "Run as root, or set PATHSTACK_SKIP_PRIVILEGED=1 to skip them explicitly." >&2
    exit 2
fi

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "cargo test"
cargo test --workspace

step "cargo test: BLAST's 32- and 64-bit fragment masks (pathstack-rpc features)"
cargo test -p pathstack-rpc --features blast-mask32
cargo test -p pathstack-rpc --features blast-mask64

step "measurement tests (#[ignore]d in cargo test: each wants a release build or a counting allocator to itself; run alone here so they cannot rot)"
cargo test --release -p pathstack-core --lib path_bytes -- --ignored --nocapture
cargo test -p pathstack-inet --lib layout -- --ignored --nocapture
cargo test --release -p pathstack-inet --lib loss_study -- --ignored --nocapture

step "graph example"
cargo run --quiet --example graph -- check graphs/synthetic5.graph
cargo run --quiet --example graph -- check graphs/rpc.graph
cargo run --quiet --example graph -- check graphs/rpc-ip.graph

step "latency study smoke (scripts/study-latency.sh --quick: versions built, layout checked, every output written)"
scripts/study-latency.sh --quick | tail -n 4
python3 -c 'import json, sys; r = json.load(open("target/pathstack-study/latency.json"))["results"]; na = [x for x in r if x["instr_per_rt"] is None]; sys.exit(0 if len(r) == 18 and not na else "latency.json: %d results (%d without figures), expected 18 (udp, rpc, tcp x 6 versions), all with figures" % (len(r), len(na)))'

step "main job (in-memory wire, short)"
cargo run --quiet --example pingpong -- 2000
cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --rounds 2000
cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --transport tcp --rounds 2000
cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --transport rpc --rounds 2000
cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --transport rpc --rpc-net ip --size 1000 --rounds 2000

# check_host_netns: the README's `host --netns` commands. Each run makes its
# own namespace ps-host-<its pid> and must remove it however it ends (a
# normal exit, an error, SIGINT); traffic stays inside that namespace.
check_host_netns() {
    local host=target/debug/host out rc ns pid
    cargo build --quiet -p pathstack-tools --bin host
    fail() { echo "scripts/test.sh: host --netns: $*" >&2; echo "$out" >&2; exit 1; }
    # Whether the namespace a run announced is still there (it must not be).
    # grep without -q reads all of the list: an early exit would give `ip`
    # a SIGPIPE, and pipefail would report that instead.
    left_behind() {
        ns=$(sed -n 's/^namespace \(ps-host-[0-9]*\) .*/\1/p' <<<"$out")
        [ -n "$ns" ] || fail "no namespace announced"
        ip netns list | grep -w "$ns" >/dev/null
    }

    step "host --netns --ping: the kernel side answers, ping's summary"
    out=$("$host" --netns --ping --count 3 --interval-ms 50) || fail "exit status $?"
    echo "$out" | tail -3
    grep -q '^3 packets transmitted, 3 received, 0% packet loss' <<<"$out" || fail "no 3/3 summary"
    grep -Eq '^rtt min/avg/max/mdev = [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ ms$' <<<"$out" || fail "no rtt line"
    left_behind && fail "namespace $ns left behind"

    step "host --netns --ping to an address nobody has: ARP unanswered, exit 2"
    rc=0; out=$("$host" --netns --ping 10.77.0.9 --count 1 --interval-ms 10) || rc=$?
    echo "$out" | tail -3
    [ "$rc" = 2 ] || fail "exit status $rc, expected 2"
    grep -q '^1 packets transmitted, 0 received, 100% packet loss' <<<"$out" || fail "no 1/0 summary"
    grep -q '^ARP got no answer for 10.77.0.9' <<<"$out" || fail "ARP failure not reported"
    left_behind && fail "namespace $ns left behind"

    step "host --netns: removed on SIGINT, statistics as JSON"
    "$host" --netns --json - >"$tmp_out" 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do grep -q '^udp services:' "$tmp_out" && break; sleep 0.1; done
    kill -INT "$pid"
    rc=0; wait "$pid" || rc=$?
    out=$(cat "$tmp_out")
    [ "$rc" = 0 ] || fail "exit status $rc after SIGINT"
    grep -q '"paths": \[' <<<"$out" || fail "no JSON statistics"
    left_behind && fail "namespace $ns left behind after SIGINT"

    step "host --netns: TCP echo and chargen answer the kernel side"
    "$host" --netns --seconds 30 >"$tmp_out" 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do grep -q '^tcp services:' "$tmp_out" && break; sleep 0.1; done
    out=$(cat "$tmp_out")
    ns=$(sed -n 's/^namespace \(ps-host-[0-9]*\) .*/\1/p' <<<"$out")
    [ -n "$ns" ] || { kill -INT "$pid"; fail "no namespace announced"; }
    got=$(ip netns exec "$ns" sh -c 'echo hello pathstack | timeout 10 socat -t2 - TCP:10.77.0.1:7') || true
    [ "$got" = "hello pathstack" ] || { kill -INT "$pid"; fail "TCP echo returned '$got'"; }
    got=$(ip netns exec "$ns" sh -c 'timeout 10 socat -u TCP:10.77.0.1:19 - 2>/dev/null | head -c 148') || true
    want=$(printf '%s\r\n%s\r\n' \
        ' !"#$%&'"'"'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefg' \
        '!"#$%&'"'"'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefgh')
    [ "$got" = "$want" ] || { kill -INT "$pid"; fail "chargen's first lines differ: '$got'"; }
    kill -INT "$pid"
    rc=0; wait "$pid" || rc=$?
    out=$(cat "$tmp_out")
    [ "$rc" = 0 ] || fail "exit status $rc after SIGINT"
    grep -q '^tcp services: [1-9][0-9]* connections (0 failed)' <<<"$out" || fail "no TCP service counts"
    left_behind && fail "namespace $ns left behind"

    step "host --tcp-client: a 1 MB file echoed through the kernel (socat) and checked"
    local topo id=tc$$
    topo=$(bash scripts/netns.sh up --id "$id")
    eval "$topo"
    # EXEC:cat, not PIPE: socat alone echoing through its own pipe blocks
    # on a full pipe it must itself drain, and stops reading for good.
    ip netns exec "$NS_A" timeout 60 socat -t 10 TCP-LISTEN:7007,bind="$KERNEL_A_IP",reuseaddr EXEC:cat &
    local socat_pid=$!
    sleep 0.3
    rc=0; out=$("$host" --tap "$TAP_A" --netns "$NS_A" --ip "$PS_A_IP/24" --no-udp-services \
        --tcp-client "$KERNEL_A_IP:7007" --seconds 60 2>&1) || rc=$?
    kill "$socat_pid" 2>/dev/null || true
    bash scripts/netns.sh down --id "$id"
    [ "$rc" = 0 ] || fail "exit status $rc"
    grep -q '^tcp client: sent 1000000 bytes, received 1000000: the echo matches' <<<"$out" || fail "no matching echo"

    step "host --netns: removed when setup fails after making it"
    rc=0; out=$("$host" --netns --pcap /nonexistent-dir/x.pcap 2>&1) || rc=$?
    [ "$rc" = 1 ] || fail "exit status $rc, expected 1"
    left_behind && fail "namespace $ns left behind after an error"
    return 0
}

if [ "$(id -u)" = 0 ]; then
    step "main job over TAP/veth (privileged, short)"
    cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --wire tap --rounds 500 --warmup 100
    cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --wire tap --transport tcp --rounds 500 --warmup 100
    cargo run --quiet -p pathstack-tools --bin pingpong_bench -- --wire tap --transport rpc --rounds 500 --warmup 100
    tmp_out=$(mktemp)
    trap 'rm -f "$tmp_out"' EXIT
    check_host_netns
else
    step "main job over TAP/veth and host --netns: SKIPPED (not root, PATHSTACK_SKIP_PRIVILEGED=1)"
fi
