# bench-lib.sh — what the benchmark scripts (bench-ping.sh, bench-veth.sh)
# share: building the measurement tools (tools/), the output and scratch directories, a
# private scripts/netns.sh topology torn down on exit, the --rt scheduling
# prefix, and stopping the server under test. Sourced, not run.
#
# The sourcing script sets first: root (the repository), me (its name, for
# messages), build (1: build the tools), rt (1: blocking rows under
# SCHED_FIFO). Afterwards it has: bin, out, tmp, server_pid.

bin=${CARGO_TARGET_DIR:-$root/target}/release
out=${BENCH_OUT:-$root/target/pathstack-bench}
mkdir -p "$out"
tmp=$(mktemp -d)
server_pid=

# bench_build TOOL...: builds every binary of the tools crate
# (pathstack-tools), or at least the ones named if some other one does
# not compile.
bench_build() {
    [ "$build" = 1 ] || return 0
    echo "$me: building (cargo build --release -p pathstack-tools --bins)" >&2
    if ! (cd "$root" && cargo build --release -q -p pathstack-tools --bins); then
        echo "$me: building all tools failed; building only: $*" >&2
        local args=() e
        for e in "$@"; do args+=(--bin "$e"); done
        (cd "$root" && cargo build --release -q -p pathstack-tools "${args[@]}")
    fi
}

# stop_server: stops the server under test, if one runs.
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# bench_topology ID SUBNET: brings up topology ID (its KEY=VALUE lines
# become shell variables: NS_A, TAP_A, PS_A_IP, ...) and arranges for the
# server, the topology and the scratch directory to go on exit.
bench_topology() {
    bench_id=$1
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
    eval "$("$root/scripts/netns.sh" up --id "$bench_id" --subnet "$2")"
}

bench_cleanup() {
    stop_server
    "$root/scripts/netns.sh" down --id "$bench_id" 2>/dev/null || true
    rm -rf "$tmp"
}

# sched SYSTEM: the scheduling prefix for SYSTEM's processes (see --rt).
# Busy-poll rows never run SCHED_FIFO: a spinning FIFO task starves the
# ksoftirqd that forwards its frames.
sched() {
    if [ "$rt" = 1 ] && [[ "$1" != *busypoll ]]; then echo "chrt -f 50"; fi
}
