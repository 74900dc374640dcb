#!/usr/bin/env bash
# install-deps.sh — install the Debian/Ubuntu packages that pathstack's tests and
# benchmarks need, non-interactively and idempotently.
#
# Usage:
#   scripts/install-deps.sh            # install what is missing (needs root);
#                                      # as non-root: report what is missing, exit 0
#   scripts/install-deps.sh --require  # as above, but exit 1 when packages are
#                                      # missing and cannot be installed
#   scripts/install-deps.sh --check    # only report; exit 1 if anything is missing
#   scripts/install-deps.sh [--require|--check] PACKAGE...
#                                      # the same for only these packages (e.g.
#                                      # scripts/instr.sh asks for valgrind alone)
#
# Idempotent: `dpkg -s` is asked first, and `apt-get update` runs (once) only if
# something is actually missing. The debconf preseed answers wireshark-common's
# "should non-superusers capture packets?" question so tshark installs without a
# prompt (docs/design.md, machine notes).
#
# scripts/test.sh calls this without arguments before running the privileged tests.
set -euo pipefail

PACKAGES=(iproute2 iputils-ping arping socat netcat-openbsd tcpdump tshark nftables valgrind curl ethtool wrk)

mode=install
wanted=()
for arg in "$@"; do
    case "$arg" in
        --require) mode=require ;;
        --check) mode=check ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        -*) echo "install-deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
        *) wanted+=("$arg") ;;
    esac
done
if [ ${#wanted[@]} -gt 0 ]; then
    for p in "${wanted[@]}"; do
        if [[ " ${PACKAGES[*]} " != *" $p "* ]]; then
            echo "install-deps.sh: '$p' is not one of the packages this script knows (${PACKAGES[*]})" >&2
            exit 2
        fi
    done
    PACKAGES=("${wanted[@]}")
fi

missing=()
for p in "${PACKAGES[@]}"; do
    # `dpkg -s` succeeds for packages that were removed but not purged, so look
    # at the Status line.
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps.sh: all packages present (${PACKAGES[*]})"
    exit 0
fi

if [ "$mode" = check ]; then
    echo "install-deps.sh: missing packages: ${missing[*]}"
    exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: missing packages: ${missing[*]}" >&2
    echo "install-deps.sh: not root, cannot install; run: sudo $0" >&2
    if [ "$mode" = require ]; then exit 1; fi
    exit 0
fi

echo "install-deps.sh: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

# Verify: a package manager that "succeeded" without installing is still a failure.
still=()
for p in "${missing[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        still+=("$p")
    fi
done
if [ ${#still[@]} -ne 0 ]; then
    echo "install-deps.sh: still missing after install: ${still[*]}" >&2
    exit 1
fi
echo "install-deps.sh: done"
