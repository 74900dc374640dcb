#!/usr/bin/env bash
# study-latency.sh — the thesis' latency study (§4.3, Tables 6, 8, 9, 10,
# 11) on this code: the six versions BAD/STD/OUT/CLO/PIN/ALL of the UDP
# ping-pong, of the TCP ping-pong and of XRPCTEST RPC calls, their cache
# behaviour in the DEC 3000/600 geometry, and their round-trip times here.
#
#   scripts/study-latency.sh [--quick] [--no-build] [--no-tap] [--r1 N] [--r2 N]
#
#   --quick      a smoke run: 100/300 round trips, RPC and TCP without the
#                fully associative runs, 2,000 timed rounds on the in-memory
#                wire, no TAP
#   --no-build   reuse the versions scripts/study-versions.sh built
#   --no-tap     leave out the round-trip times over TAP
#   --r1, --r2   round counts of the difference method (default 1000/3000)
#
# First runs scripts/study-versions.sh (builds the versions, checks their
# layout). Then, for each version and transport (udp: 1-byte UDP
# ping-pong; rpc: zero-byte calls, `pingpong_bench --transport rpc`; tcp: 1-byte
# ping-pong over one nodelay connection, `pingpong_bench --transport tcp`, the
# server's application echoing, both connection paths inlined for PIN and
# ALL):
#
#   valgrind --tool=callgrind --cache-sim=yes \
#            --I1=8192,1,32 --D1=8192,1,32 --LL=2097152,1,32 pingpong-V ... --count-only
#            (study-versions.sh's profiles, --dump-instr=yes)
#   valgrind --tool=callgrind --cache-sim=yes \
#            --I1=8192,256,32 --D1=8192,256,32 --LL=2097152,1,32 pingpong-V ... --count-only
#
# at R1 and R2 round trips; per round trip = (total(R2) - total(R1)) /
# (R2 - R1). The first is the DEC geometry (8 KB direct-mapped I1/D1, 2 MB
# direct-mapped LL, 32-byte lines); the second has fully associative
# (256-way, LRU) L1s of the same size and line, and replacement misses
# ("Repl", thesis Table 8) = direct-mapped misses - fully associative ones
# (callgrind's cache simulator is cachegrind's; valgrind accepts 256 ways).
# D1 misses are read + write misses, LL misses instruction + data misses.
# The unused fraction of fetched instruction bytes and the path's code
# size come from the callgrind profiles of study-versions.sh.
#
# Round-trip times: `pingpong_bench --rounds N --json` per version on the
# in-memory wire, versions alternated (BAD STD OUT CLO PIN ALL, three
# passes, the median of the passes' p50 and p99), and over TAP in the
# same-CPU configuration (`--wire tap --server-cpu 0 --client-cpu 0`,
# needs root; skipped with a message otherwise).
#
# Modelled DEC 3000/600 time per round trip: cycles = instructions x iCPI
# + (I1 + D1 misses) x 10 + LL misses x 48, at 175 MHz. iCPI is the
# thesis' Table 9 figure for the version (TCP/IP column for UDP and TCP,
# RPC column for RPC); 10 and 48 cycles are the b-cache and main-memory
# latencies of §4.1.1 (lmbench). A model, not a measurement: it ignores
# the 21064's non-blocking loads and write buffer.
#
# Output in target/pathstack-study/ (STUDY_OUT overrides): latency.json,
# latency.md (tables in the layout of thesis Tables 6, 8, 9, 10, 11 with
# the thesis' figures beside ours), latency.svg.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=study-latency.sh
r1=1000 r2=3000 build=1 tap=1 quick=0 rtt_rounds=20000 passes=3
usage() { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; }
need_arg() { [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "$me: $1 needs a number (try --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 r1=100 r2=300 tap=0 rtt_rounds=2000 passes=1; shift ;;
        --no-build) build=0; shift ;;
        --no-tap) tap=0; shift ;;
        --r1) need_arg "$@"; r1=$2; shift 2 ;;
        --r2) need_arg "$@"; r2=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
[ "$r2" -gt "$r1" ] || { echo "$me: --r2 ($r2) must be larger than --r1 ($r1)" >&2; exit 2; }

out=${STUDY_OUT:-$root/target/pathstack-study}
export STUDY_OUT=$out
mkdir -p "$out/cachegrind" "$out/rtt"

versions_args=(--r1 "$r1" --r2 "$r2")
[ "$build" = 0 ] && versions_args+=(--no-build)
echo "$me: scripts/study-versions.sh ${versions_args[*]}" >&2
STUDY_LAYOUT_DETAIL=0 "$root/scripts/study-versions.sh" "${versions_args[@]}" | tee "$out/layout.txt"

# VERSION -> binary and path form (see study-versions.sh).
declare -A bin_of=([bad]=bad [std]=std [out]=out [clo]=clo [pin]=out [all]=all)
declare -A form_of=([bad]=std [std]=std [out]=std [clo]=std [pin]=pin [all]=pin)
versions=(bad std out clo pin all)
transports=(udp rpc tcp)
args_of() { # VERSION TRANSPORT
    local a="--sched per-message --form ${form_of[$1]}"
    [ "$2" != udp ] && a="$a --transport $2"
    echo "$a"
}

# fa FILE CMD...: runs CMD under callgrind with fully associative L1s.
fa() {
    local file=$1
    shift
    if ! valgrind --tool=callgrind --cache-sim=yes --I1=8192,256,32 --D1=8192,256,32 \
        --LL=2097152,1,32 --callgrind-out-file="$file" "$@" >"$file.log" 2>&1; then
        echo "$me: failed under callgrind: $*" >&2
        tail -20 "$file.log" >&2
        exit 1
    fi
}

# The direct-mapped counts are those of study-versions.sh's profiles.
specs=()
for t in "${transports[@]}"; do
    for v in "${versions[@]}"; do
        b=$out/bin/pingpong-${bin_of[$v]}
        a=$(args_of "$v" "$t")
        fa1=- fa2=-
        if [ "$quick" = 0 ] || [ "$t" = udp ]; then
            echo "$me: fully associative L1s, $v $t: $b $a --count-only --rounds $r1|$r2" >&2
            for r in "$r1" "$r2"; do
                # shellcheck disable=SC2086
                fa "$out/callgrind/$v-$t-fa.$r" "$b" $a --count-only --rounds "$r"
            done
            fa1=$out/callgrind/$v-$t-fa.$r1 fa2=$out/callgrind/$v-$t-fa.$r2
        fi
        specs+=("cg|$v|$t|$out/callgrind/$v-$t.$r1|$out/callgrind/$v-$t.$r2|$fa1|$fa2|$out/layout/$v-$t.json")
    done
done

# Round-trip times, versions alternated within each pass.
for pass in $(seq 1 "$passes"); do
    for t in "${transports[@]}"; do
        for v in "${versions[@]}"; do
            b=$out/bin/pingpong-${bin_of[$v]}
            f=$out/rtt/$v-$t-memory.$pass.json
            echo "$me: rtt memory pass $pass/$passes: $b $(args_of "$v" "$t") --rounds $rtt_rounds" >&2
            # shellcheck disable=SC2046
            "$b" $(args_of "$v" "$t") --rounds "$rtt_rounds" --json "$f" >"$f.log" 2>&1 \
                || { echo "$me: failed: $b $(args_of "$v" "$t")" >&2; tail -5 "$f.log" >&2; exit 1; }
            specs+=("rtt|$v|$t|memory|$f")
        done
    done
done
tap_note=""
if [ "$tap" = 1 ] && [ "$(id -u)" != 0 ]; then
    tap_note="TAP round trips not measured: needs root"
    echo "$me: $tap_note" >&2
    tap=0
elif [ "$tap" = 0 ]; then
    tap_note="TAP round trips not measured (--no-tap or --quick)"
fi
if [ "$tap" = 1 ]; then
    tap_note="TCP PIN and ALL not measured over TAP (pingpong inlines TCP connection paths in memory only)"
    for pass in $(seq 1 "$passes"); do
        for t in "${transports[@]}"; do
            for v in "${versions[@]}"; do
                # pingpong inlines TCP connection paths in memory only.
                [ "$t" = tcp ] && [ "${form_of[$v]}" = pin ] && continue
                b=$out/bin/pingpong-${bin_of[$v]}
                f=$out/rtt/$v-$t-tap.$pass.json
                echo "$me: rtt tap pass $pass/$passes: $b --wire tap --server-cpu 0 --client-cpu 0 $(args_of "$v" "$t") --rounds 2000" >&2
                # shellcheck disable=SC2046
                if "$b" --wire tap --server-cpu 0 --client-cpu 0 $(args_of "$v" "$t") --rounds 2000 \
                    --json "$f" >"$f.log" 2>&1; then
                    specs+=("rtt|$v|$t|tap|$f")
                else
                    echo "$me: TAP run failed (left out): $b $(args_of "$v" "$t"); see $f.log" >&2
                fi
            done
        done
    done
fi

python3 "$root/scripts/study-latency-report.py" --out "$out" --r1 "$r1" --r2 "$r2" \
    --tool "$(valgrind --version)" --tap-note "$tap_note" --quick "$quick" "${specs[@]}"
