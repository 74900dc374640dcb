#!/usr/bin/env bash
# packetdrill.sh — run a directory of packetdrill scripts against pathstack
# through packetdrill's shared-object interface (crates/pathstack-packetdrill,
# docs/packetdrill.md).
#
# Usage:
#   scripts/packetdrill.sh PACKETDRILL SCRIPT_DIR    # run every SCRIPT_DIR/*.pkt
#   scripts/packetdrill.sh --build SRC_DIR           # build packetdrill from its
#                                                    # source tree (SRC_DIR =
#                                                    # .../gtests/net/packetdrill)
#
# packetdrill and the scripts are GPL code written elsewhere and are never part
# of this repository: docs/packetdrill.md says where to get them.
#
# One line per script: PASS, FAIL (with packetdrill's message) or N/A (with the
# reason: a feature pathstack does not claim, decided from the script's text),
# then a summary with the pass rate over the applicable scripts.
#
# Environment: SO=path of libpathstack_packetdrill.so (default: built here in
# release mode), TIMEOUT=seconds per script (default 60), VERBOSE=1 prints
# packetdrill's whole output for failures.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"

# bison and flex are what packetdrill's build needs beyond a C compiler;
# installed like scripts/install-deps.sh installs: asked first, apt only when
# something is missing (idempotent).
need_build_tools() {
    local missing=()
    for p in bison flex make gcc; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "packetdrill.sh: missing packages: ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    echo "packetdrill.sh: installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

if [ "${1:-}" = --build ]; then
    src="${2:?usage: packetdrill.sh --build SRC_DIR}"
    need_build_tools
    (cd "$src" && { [ -f Makefile ] && [ -f packetdrill ] || ./configure; } && make -j2 packetdrill)
    echo "packetdrill.sh: built $src/packetdrill"
    exit 0
fi

pd="${1:?usage: packetdrill.sh PACKETDRILL SCRIPT_DIR (or --build SRC_DIR; see --help)}"
if [ "$pd" = -h ] || [ "$pd" = --help ]; then sed -n '2,22p' "$0"; exit 0; fi
dir="${2:?usage: packetdrill.sh PACKETDRILL SCRIPT_DIR}"
pd="$(realpath "$pd")"
dir="$(realpath "$dir")"
[ -x "$pd" ] || { echo "packetdrill.sh: $pd is not executable (build it: $0 --build SRC_DIR)" >&2; exit 2; }
timeout_s="${TIMEOUT:-60}"

if [ -z "${SO:-}" ]; then
    (cd "$here" && cargo build --release -q -p pathstack-packetdrill)
    SO="${CARGO_TARGET_DIR:-$here/target}/release/libpathstack_packetdrill.so"
fi
[ -f "$SO" ] || { echo "packetdrill.sh: no shared object at $SO" >&2; exit 2; }
SO="$(realpath "$SO")"

work="$(mktemp -d /tmp/pathstack-packetdrill.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# The scripts' shell commands configure Linux (sysctl, tc, ip): none of it
# reaches pathstack, whose Linux defaults are the shim's TcpConfig
# (crates/pathstack-packetdrill/src/linux_defaults.rs). They run against
# no-op stand-ins, in a network namespace of their own besides, so that a
# script cannot change the machine's settings.
mkdir -p "$work/bin"
for cmd in sysctl tc ip ethtool; do
    printf '#!/bin/sh\n# pathstack-packetdrill: Linux configuration, not pathstack'"'"'s\nexit 0\n' >"$work/bin/$cmd"
    chmod +x "$work/bin/$cmd"
done
cp -rL "$dir" "$work/scripts" 2>/dev/null || cp -r "$dir" "$work/scripts"
# Every defaults.sh a script runs (`./defaults.sh`, `../common/defaults.sh`,
# `../../common/defaults.sh`) becomes a no-op: its settings are the shim's.
stub_defaults() {
    local target="$1"
    case "$(realpath -m "$target")" in "$work"/*) ;; *) return ;; esac
    mkdir -p "$(dirname "$target")"
    rm -f "$target"
    printf '#!/bin/sh\n# pathstack-packetdrill: Linux defaults are the shim'"'"'s TcpConfig\nexit 0\n' >"$target"
    chmod +x "$target"
}
while IFS= read -r f; do stub_defaults "$f"; done < <(find "$work/scripts" -name defaults.sh)
# packetdrill evaluates a script's `%{ ... }%` Python assertions on
# tcp_info it reads with the C library's getsockopt on the live descriptor
# (code.c), past --so_filename: against the shim they cannot work. They
# become a no-op command event at the same time (`true` in the shell) in
# the copies; the packets and calls around them are still checked, and
# such a script's line says so ("PASS*").
while IFS= read -r f; do
    if grep -q '%{' "$f"; then
        perl -0pi -e 's/%\{.*?\}%/`true`/gs' "$f"
        echo "$f" >>"$work/python-stripped"
    fi
    for ref in $(grep -oE '`[^` ]*defaults\.sh' "$f" | tr -d '`'); do
        stub_defaults "$(dirname "$f")/$ref"
    done
done < <(find "$work/scripts" -name '*.pkt')

netns=()
if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
    netns=(unshare -n)
elif unshare -rn true 2>/dev/null; then
    netns=(unshare -rn)
else
    echo "packetdrill.sh: no network namespace (unshare); the scripts' sysctl/tc/ip are no-ops anyway" >&2
fi

# The Linux settings a script changes that are behaviour, as the shim's
# flags (crates/pathstack-packetdrill/src/flags.rs); every other sysctl is
# ignored, and a script that depends on one fails and is explained in
# docs/packetdrill.md.
script_flags() {
    local f="$1" flags="local_ip=192.168.0.1"
    grep -qE 'tcp_timestamps[ =]+0' "$f" && flags+=" timestamps=0"
    grep -qE 'tcp_sack[ =]+0' "$f" && flags+=" sack=0"
    grep -qE 'tcp_window_scaling[ =]+0' "$f" && flags+=" wscale=0"
    grep -qE 'ethtool -K tun0.*(tso|gso) off' "$f" && flags+=" tso=0"
    grep -qE 'tcp_slow_start_after_idle[ =]+1' "$f" && flags+=" idle_restart=1"
    echo "$flags"
}

# Why a script does not apply to pathstack, from its text: a feature the
# stack does not claim (issue 28 item 2), or IPv6. Empty: applicable.
not_applicable() {
    local f="$1" name
    name="$(basename "$f")"
    case "$name" in
        *accecn*) echo "AccECN (draft-ietf-tcpm-accurate-ecn): not claimed"; return ;;
    esac
    if grep -qE 'FOEXP|TCP_FASTOPEN|MSG_FASTOPEN|[<,] *FO ' "$f" || [[ "$f" == */fastopen/* || "$name" == *fastopen* ]]; then
        echo "TCP Fast Open (RFC 7413): not claimed"; return
    fi
    grep -qE 'IPPROTO_MPTCP|mptcp' "$f" && { echo "MPTCP: not claimed"; return; }
    grep -qiE 'TCP_MD5SIG|md5|TCP_AO' "$f" && { echo "TCP-MD5/TCP-AO (RFC 2385/5925): not claimed"; return; }
    grep -qE 'ZEROCOPY|SO_EE_ORIGIN_ZEROCOPY' "$f" && { echo "zero-copy send (MSG_ZEROCOPY): not claimed"; return; }
    grep -qE 'tcp_ecn=[12]|ECN|\[ect[01]\]|\[ce\]|[ ,]ect[01][ ,]' "$f" && { echo "ECN (RFC 3168): not claimed"; return; }
    grep -qE 'AF_INET6|ip_version=ipv6' "$f" && { echo "IPv6: pathstack is IPv4 only"; return; }
    local opt
    opt="$(grep -oE 'TCP_INFO|SO_TIMESTAMPING|SCM_TIMESTAMPING|TCP_NOTSENT_LOWAT|TCP_INQ|TCP_CM_INQ|TCP_USER_TIMEOUT|SIOCOUTQ|SIOCOUTQNSD|TCP_CORK|MSG_EOR|MSG_MORE|SO_MAX_PACING_RATE|TCP_CC_INFO|TCP_REPAIR|TCP_SAVE_SYN|SO_RCVLOWAT|TCP_DEFER_ACCEPT|TCP_WINDOW_CLAMP|TCP_QUICKACK|TCP_THIN_[A-Z_]+|TCP_TX_DELAY|SO_TXTIME|IP_MTU_DISCOVER|TCP_MAXSEG|SO_BINDTODEVICE|epoll_[a-z]+|splice|sendfile|MSG_ERRQUEUE|IP_RECVERR|TCP_LINGER2|TCP_SYNCNT' "$f" | grep -v '^TCP_MAXSEG$' | head -1)"
    [ -n "$opt" ] && { echo "Linux-only interface: $opt"; return; }
    return 0
}

pass=0; fail=0; na=0; starred=0
while IFS= read -r f; do
    rel="${f#"$work/scripts/"}"
    reason="$(not_applicable "$f")"
    if [ -n "$reason" ]; then
        printf 'N/A   %s: %s\n' "$rel" "$reason"
        na=$((na + 1))
        continue
    fi
    out="$work/out"
    set +e
    (cd "$(dirname "$f")" && PATH="$work/bin:$PATH" timeout "$timeout_s" "${netns[@]}" "$pd" \
        --ip_version=ipv4 --local_ip=192.168.0.1 --remote_ip=192.0.2.1 \
        -D CMSG_LEVEL_IP=SOL_IP -D CMSG_TYPE_RECVERR=IP_RECVERR \
        --so_filename="$SO" --so_flags="$(script_flags "$f")" \
        "$(basename "$f")") >"$out" 2>&1
    rc=$?
    set -e
    if [ $rc -eq 0 ]; then
        if grep -qxF "$f" "$work/python-stripped" 2>/dev/null; then
            printf 'PASS* %s (tcp_info assertions not run)\n' "$rel"
            starred=$((starred + 1))
        else
            printf 'PASS  %s\n' "$rel"
        fi
        pass=$((pass + 1))
    else
        msg="$(grep -m1 -E 'error|: [a-z]' "$out" | tr -s ' ' | cut -c1-300 || true)"
        [ $rc -eq 124 ] && msg="timed out after ${timeout_s}s"
        [ -z "$msg" ] && msg="exit status $rc"
        printf 'FAIL  %s: %s\n' "$rel" "$msg"
        if [ "${VERBOSE:-0}" = 1 ]; then sed 's/^/      /' "$out"; fi
        fail=$((fail + 1))
    fi
done < <(find "$work/scripts" -name '*.pkt' | sort)

applicable=$((pass + fail))
rate=0
[ $applicable -gt 0 ] && rate=$((100 * pass / applicable))
echo "packetdrill.sh: $((applicable + na)) scripts: $pass pass, $fail fail, $na not applicable; pass rate $pass/$applicable = ${rate}% of the applicable ($starred of the passes without their tcp_info assertions)"
