#!/usr/bin/env bash
# study-ldlp.sh — Blackwell's LDLP study (Speeding up Protocols for Small
# Messages, §4, Figures 5-7) on pathstack: per-message scheduling (one
# frame per poll, and up to 32) against LDLP with batch limits 1, 4, 8,
# 16 and 32, for an open-loop Poisson source of 552-byte messages into
# (a) the synthetic five-layer stack (ECHO / WORK x5 / LINK / WIRE, 6 KB
# of distinct code and 256 B of data per layer) and (b) the host's real
# UDP receive path, with 500 frames of adaptor buffering.
#
#   scripts/study-ldlp.sh [--quick] [--no-build]
#
#   --quick      a reduced run (fewer batch sizes, rates and code sizes,
#                shorter runs) that still writes every output file
#   --no-build   use the ldlp_load tool already built
#
# Method (tools/src/bin/ldlp_load.rs has the details):
#  1. cachegrind in the DEC 3000 geometry counts instructions and I1/D1
#     misses per message at each batch size (difference method):
#       valgrind --tool=cachegrind --cache-sim=yes --I1=8192,1,32
#                --D1=8192,1,32 --LL=2097152,1,32 ldlp_load ... cost ...
#  2. those counts give a per-message service time on Blackwell's machine
#     (100 MHz, 1 cycle per instruction, 20 cycles per miss);
#  3. `ldlp_load load --clock model` runs the stack on a virtual clock under
#     Poisson arrivals, advancing the clock by that service time per batch
#     (deterministic: the figures repeat); `--clock cpu` does the same
#     with each poll's thread CPU time on this machine (noisy: shared CPUs);
#  4. Figure 7: the code per layer swept at one arrival rate.
#
# Writes target/pathstack-study/ldlp.json, ldlp.md and the SVGs
# ldlp-fig5.svg, ldlp-fig6.svg, ldlp-fig7.svg (STUDY_OUT overrides the
# directory). Every command run is printed on stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=study-ldlp.sh
quick="" build=1
usage() { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=--quick; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

if ! command -v valgrind >/dev/null; then
    "$root/scripts/install-deps.sh" --require valgrind
fi
command -v valgrind >/dev/null || { echo "$me: valgrind is not installed" >&2; exit 1; }

bin=${CARGO_TARGET_DIR:-$root/target}/release/ldlp_load
out=${STUDY_OUT:-$root/target/pathstack-study}
if [ "$build" = 1 ]; then
    echo "$me: building (cargo build --release -p pathstack-tools --bin ldlp_load)" >&2
    (cd "$root" && cargo build --release -q -p pathstack-tools --bin ldlp_load)
fi
[ -x "$bin" ] || { echo "$me: $bin is not built (run without --no-build)" >&2; exit 1; }

echo "$me: command: scripts/study-ldlp.sh $quick" >&2
# shellcheck disable=SC2086 # quick is empty or one flag
python3 "$root/scripts/study-ldlp.py" --bin "$bin" --out "$out" $quick
echo "$me: wrote $out/ldlp.json, $out/ldlp.md, $out/ldlp-fig5.svg, $out/ldlp-fig6.svg, $out/ldlp-fig7.svg" >&2
