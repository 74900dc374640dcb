#!/usr/bin/env bash
# study-versions.sh — builds the six latency versions of the thesis (§4.3)
# from this one source tree and checks their code layout.
#
#   scripts/study-versions.sh [--quick] [--no-build] [--r1 N] [--r2 N]
#
#   --quick      profile with fewer round trips (100/300 instead of 1000/3000)
#   --no-build   reuse the binaries and profiles already made
#   --r1, --r2   the round counts of the profiles (difference method)
#
# The OUT binary is built in target/study-outline (its own target directory).
# The versions (binary, path form of `pingpong_bench --form`):
#   STD  the default build (cargo build --release), --form std
#   OUT  built with `--features outline`: code the ping-pong never runs
#        (fragmentation, reassembly, the ARP miss, first-packet work, the
#        run loop's path operations) is #[cold] and #[inline(never)]
#   CLO  STD's objects re-linked with an LLD --symbol-ordering-file that
#        places the hot functions contiguously in execution order (UDP's
#        path first, then RPC's, then what TCP's adds), everything else
#        after them
#   BAD  STD's objects re-linked with an ordering that starts every hot
#        function at the same offset modulo 8 KB (cold functions of the
#        binary as filler between them): they collide in an 8 KB
#        direct-mapped I-cache
#   PIN  the OUT binary with --form pin (path-inlined; as in the thesis,
#        PIN is OUT with path-inlining, its layout left to the linker)
#   ALL  OUT's objects re-linked with an ordering from PIN's profile, run
#        with --form pin (PIN + OUT + CLO)
#
# How: `cargo rustc --release -p pathstack-tools --bin pingpong_bench [--features
# outline] -- -C save-temps --print link-args` builds the tool once per
# feature set and prints rustc's linker command (cc -fuse-ld=lld, objects
# kept by save-temps); scripts/study-layout.py re-runs that command with
# another output and -Wl,--symbol-ordering-file=FILE. Same objects, so CLO
# and BAD differ from STD in layout only. The hot functions and their
# execution order come from callgrind (--dump-instr=yes) profiles of the
# ping-pong at two round counts (difference method: a hot function runs
# >= 1 instruction per round trip), with callgrind's cache simulation in
# the DEC 3000/600 geometry (--I1=8192,1,32 --D1=8192,1,32
# --LL=2097152,1,32): study-latency.sh takes its miss counts from them.
#
# The layout check prints, for each version and transport, the hot
# functions' addresses and 8 KB I-cache sets (address / 32 mod 256) and how
# many of them share a start set. Everything goes to
# target/pathstack-study/ (STUDY_OUT overrides): bin/pingpong-{std,out,clo,
# bad,all}, order/{clo,bad,all}.order, layout/VERSION-TRANSPORT.json and
# the callgrind files (callgrind/VERSION-TRANSPORT.ROUNDS). Transports: udp,
# rpc and tcp (`pingpong_bench --transport tcp`, one nodelay connection, both
# connection paths inlined for PIN and ALL by
# `pathstack_inet::modules::inline::tcp_rule`); ALL's order comes from
# PIN's profiles of all three.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=study-versions.sh
r1=1000 r2=3000 build=1
usage() { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; }
need_arg() { [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "$me: $1 needs a number (try --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) r1=100 r2=300; shift ;;
        --no-build) build=0; shift ;;
        --r1) need_arg "$@"; r1=$2; shift 2 ;;
        --r2) need_arg "$@"; r2=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
[ "$r2" -gt "$r1" ] || { echo "$me: --r2 ($r2) must be larger than --r1 ($r1)" >&2; exit 2; }

if ! command -v valgrind >/dev/null; then
    "$root/scripts/install-deps.sh" --require valgrind
fi
command -v valgrind >/dev/null || { echo "$me: valgrind is not installed" >&2; exit 1; }

target=${CARGO_TARGET_DIR:-$root/target}
out=${STUDY_OUT:-$root/target/pathstack-study}
layout="python3 $root/scripts/study-layout.py"
mkdir -p "$out/bin" "$out/order" "$out/layout" "$out/callgrind"

# The OUT build has its own target directory: cargo gives both feature
# sets the same file names, so sharing one would rebuild the workspace at
# every switch. It starts as a hard-linked copy of the release one (third-
# party crates then need no rebuild).
# (Made after the STD build, which leaves every dependency built there.)
out_target=$target/study-outline

# link_args NAME CARGO-ARGS...: builds the tool with CARGO-ARGS and
# leaves rustc's linker command in $out/NAME.link. cargo prints nothing when
# the build is fresh: the saved command is then reused if its objects are
# still there, else the tool is rebuilt.
link_args() {
    local name=$1 file=$out/$1.link
    shift
    echo "$me: building $name (cargo rustc --release -p pathstack-tools --bin pingpong_bench $* -- -C save-temps --print link-args)" >&2
    local tmp
    tmp=$(mktemp)
    (cd "$root" && nice -n 10 cargo rustc --release -q -p pathstack-tools --bin pingpong_bench "$@" \
        -- -C save-temps --print link-args) >"$tmp"
    if grep -q -- '-fuse-ld' "$tmp"; then
        mv "$tmp" "$file"
        return
    fi
    rm -f "$tmp"
    if [ -s "$file" ] && objects_present "$file"; then
        return
    fi
    # Fresh but the objects are gone: force the tool to compile again.
    touch "$root/tools/src/bin/pingpong_bench/main.rs"
    (cd "$root" && nice -n 10 cargo rustc --release -q -p pathstack-tools --bin pingpong_bench "$@" \
        -- -C save-temps --print link-args) >"$file"
    grep -q -- '-fuse-ld' "$file" || { echo "$me: no linker command from rustc for $name" >&2; exit 1; }
}

objects_present() {
    local o
    for o in $(grep -o '"[^"]*\.o"' "$1" | tr -d '"'); do
        [ -e "$o" ] || return 1
    done
}

# profile VERSION TRANSPORT BINARY FORM: callgrind at R1 and R2 round
# trips, then the layout analysis.
profile() {
    local v=$1 t=$2 bin=$3 form=$4 r
    local args=(--count-only --sched per-message --form "$form")
    [ "$t" != udp ] && args+=(--transport "$t")
    for r in "$r1" "$r2"; do
        if ! valgrind --tool=callgrind --cache-sim=yes --I1=8192,1,32 --D1=8192,1,32 \
            --LL=2097152,1,32 --dump-instr=yes --dump-line=no --compress-pos=no \
            --compress-strings=no --demangle=no \
            --callgrind-out-file="$out/callgrind/$v-$t.$r" "$bin" "${args[@]}" --rounds "$r" \
            >"$out/callgrind/$v-$t.$r.log" 2>&1; then
            echo "$me: failed under callgrind: $bin ${args[*]} --rounds $r" >&2
            tail -20 "$out/callgrind/$v-$t.$r.log" >&2
            exit 1
        fi
    done
    $layout analyze "$bin" "$out/callgrind/$v-$t.$r1" "$out/callgrind/$v-$t.$r2" "$r1" "$r2" \
        --out "$out/layout/$v-$t.json"
}

if [ "$build" = 1 ]; then
    link_args std
    if [ ! -d "$out_target/release" ]; then
        mkdir -p "$out_target"
        cp -al "$target/release" "$out_target/"
    fi
    CARGO_TARGET_DIR=$out_target link_args out --features outline
    echo "$me: linking STD and OUT" >&2
    $layout link "$out/std.link" "$out/bin/pingpong-std"
    $layout link "$out/out.link" "$out/bin/pingpong-out"

    echo "$me: profiling STD and OUT+PIN for the orderings (callgrind, $r1 and $r2 round trips)" >&2
    profile std udp "$out/bin/pingpong-std" std
    profile std rpc "$out/bin/pingpong-std" std
    profile std tcp "$out/bin/pingpong-std" std
    profile pin udp "$out/bin/pingpong-out" pin
    profile pin rpc "$out/bin/pingpong-out" pin
    profile pin tcp "$out/bin/pingpong-out" pin
    $layout order "$out/layout/std-udp.json" "$out/layout/std-rpc.json" "$out/layout/std-tcp.json" \
        --out "$out/order/clo.order"
    $layout bad-order "$out/bin/pingpong-std" "$out/layout/std-udp.json" "$out/layout/std-rpc.json" \
        "$out/layout/std-tcp.json" --out "$out/order/bad.order"
    $layout order "$out/layout/pin-udp.json" "$out/layout/pin-rpc.json" "$out/layout/pin-tcp.json" \
        --out "$out/order/all.order"
    echo "$me: linking CLO, BAD and ALL (-Wl,--symbol-ordering-file)" >&2
    $layout link "$out/std.link" "$out/bin/pingpong-clo" --order "$out/order/clo.order"
    $layout link "$out/std.link" "$out/bin/pingpong-bad" --order "$out/order/bad.order"
    $layout link "$out/out.link" "$out/bin/pingpong-all" --order "$out/order/all.order"

    echo "$me: profiling every version for the layout check" >&2
    for t in udp rpc tcp; do
        profile out "$t" "$out/bin/pingpong-out" std
        profile clo "$t" "$out/bin/pingpong-clo" std
        profile bad "$t" "$out/bin/pingpong-bad" std
        profile all "$t" "$out/bin/pingpong-all" pin
    done
fi

for v in std out clo bad pin all; do
    [ -s "$out/layout/$v-udp.json" ] || { echo "$me: no layout of $v (run without --no-build)" >&2; exit 1; }
done
[ -s "$out/layout/std-tcp.json" ] || { echo "$me: no TCP layout (run without --no-build)" >&2; exit 1; }
echo
echo "Layout check: hot functions (>= 1 instruction per round trip) of each version, their 8 KB direct-mapped"
echo "I-cache sets (address / 32 mod 256); 'share start' = hot functions whose first line's set another's"
echo "first line also maps to; 'crowded sets' = sets holding lines of more than one hot function."
printf '%-5s %-4s %6s %9s %11s %12s %13s %10s\n' version tr hot hot-bytes span-bytes share-start crowded-sets unused-%
for t in udp rpc tcp; do
    for v in bad std out clo pin all; do
        python3 - "$out/layout/$v-$t.json" "$v" "$t" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2].upper():<5} {sys.argv[3]:<4} {d['hot_functions']:>6} {d['hot_bytes']:>9} {d['hot_span_bytes']:>11}"
      f" {d['functions_sharing_start_set']:>12} {d['sets_with_several_hot_functions']:>13} {d['unused_fetch_pct']:>10.1f}")
EOF
    done
done
if [ "${STUDY_LAYOUT_DETAIL:-1}" = 1 ]; then
    for v in bad clo; do
        echo
        echo "$(echo $v | tr a-z A-Z), UDP: the 12 hottest functions"
        $layout report "$out/layout/$v-udp.json" --top 12
    done
fi
