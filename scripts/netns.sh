#!/usr/bin/env bash
# netns.sh — a private test topology for pathstack on TAP devices.
#
#   netns.sh up   [--id ID] [--subnet S]   create it; prints KEY=VALUE lines (stdout)
#   netns.sh down [--id ID]                remove it (idempotent: no error if gone)
#   netns.sh env  [--id ID] [--subnet S]   print the KEY=VALUE lines without creating
#   netns.sh exec-a ID -- CMD ARGS...      run CMD inside namespace A of topology ID
#   netns.sh exec-b ID -- CMD ARGS...      run CMD inside namespace B
#
# ID defaults to the PID of the calling shell ($PPID), so `up` and `down` from
# the same shell agree. Tests pass their own unique ID (e.g. "<pid>-<n>"):
# 1-10 characters of [A-Za-z0-9-], because Linux interface names are at most
# 15 bytes and the longest name here is "psva-" + ID. S (default 1) is the
# third octet of the subnet 10.77.S.0/24; namespaces are isolated, so
# topologies with the same S do not interfere.
#
# The topology (for ID=42, S=1):
#
#   namespace ps-a-42                              namespace ps-b-42
#   ┌──────────────────────────────────┐          ┌──────────────────────────────────┐
#   │ pathstack host A  10.77.1.1      │          │ pathstack host B  10.77.1.3      │
#   │        │ (opens TAP psta-42)     │          │        │ (opens TAP pstb-42)     │
#   │ psta-42 ── bridge psba-42 ── psva-42 ════ psvb-42 ── bridge psbb-42 ── pstb-42 │
#   │            kernel 10.77.1.4      │   veth   │            kernel 10.77.1.2      │
#   └──────────────────────────────────┘          └──────────────────────────────────┘
#
#   PS_A_IP     10.77.S.1  reserved for a user-space host opening TAP_A (in NS_A)
#   KERNEL_B_IP 10.77.S.2  the Linux kernel of NS_B, on bridge BR_B
#   PS_B_IP     10.77.S.3  reserved for a user-space host opening TAP_B (in NS_B)
#   KERNEL_A_IP 10.77.S.4  the Linux kernel of NS_A, on bridge BR_A
#
# So `ip netns exec ps-b-42 ping 10.77.1.1` reaches a pathstack host on TAP A
# through the veth pair, and two pathstack hosts on TAP A and TAP B reach
# each other. The TAPs are persistent (`ip tuntap add`), so a program can
# open them later; a TAP must be opened from inside its namespace
# (pathstack_devices::TapOptions::netns does that) and shows NO-CARRIER until
# then. Per the machine notes of docs/design.md, the bridges have forward_delay 0 and
# STP off (ports forward at once) and bridge netfilter is off in both
# namespaces (it costs ~0.6 µs per frame); IPv6 is disabled in both
# namespaces so that no router solicitations or MLD reports show up on the
# TAPs unasked. Only addresses in 10.77.0.0/16 are used, only inside the two
# namespaces: nothing is visible from the host's own namespace.
#
# Usage from a shell, test or benchmark:
#   eval "$(scripts/netns.sh up --id 42)"   # sets NS_A, TAP_A, PS_A_IP, ...
#   ...
#   scripts/netns.sh down --id 42
set -euo pipefail

die() { echo "netns.sh: $*" >&2; exit 1; }
usage() { sed -n '2,8p' "$0" >&2; exit 2; }

cmd=${1:-}
[ -n "$cmd" ] || usage
shift

id=$PPID
subnet=1
case "$cmd" in
    exec-a|exec-b)
        [ $# -ge 1 ] || usage
        id=$1; shift
        [ "${1:-}" = "--" ] && shift
        [ $# -ge 1 ] || usage
        ;;
    up|down|env)
        while [ $# -gt 0 ]; do
            case "$1" in
                --id) [ $# -ge 2 ] || usage; id=$2; shift 2 ;;
                --subnet) [ $# -ge 2 ] || usage; subnet=$2; shift 2 ;;
                -h|--help) usage ;;
                *) die "unknown argument '$1'" ;;
            esac
        done
        ;;
    -h|--help) usage ;;
    *) die "unknown command '$cmd' (up, down, env, exec-a, exec-b)" ;;
esac

[[ "$id" =~ ^[A-Za-z0-9-]{1,10}$ ]] || die "ID '$id' must be 1-10 characters of [A-Za-z0-9-] (interface names are at most 15 bytes)"
[[ "$subnet" =~ ^[0-9]{1,3}$ ]] && [ "$subnet" -le 255 ] || die "subnet '$subnet' must be 0-255"

NS_A="ps-a-$id";  NS_B="ps-b-$id"
VETH_A="psva-$id"; VETH_B="psvb-$id"
BR_A="psba-$id";   BR_B="psbb-$id"
TAP_A="psta-$id";  TAP_B="pstb-$id"
PS_A_IP="10.77.$subnet.1"; KERNEL_B_IP="10.77.$subnet.2"
PS_B_IP="10.77.$subnet.3"; KERNEL_A_IP="10.77.$subnet.4"

print_env() {
    cat <<EOF
PS_ID=$id
NS_A=$NS_A
NS_B=$NS_B
VETH_A=$VETH_A
VETH_B=$VETH_B
BR_A=$BR_A
BR_B=$BR_B
TAP_A=$TAP_A
TAP_B=$TAP_B
PS_A_IP=$PS_A_IP
PS_B_IP=$PS_B_IP
KERNEL_A_IP=$KERNEL_A_IP
KERNEL_B_IP=$KERNEL_B_IP
PREFIX_LEN=24
SUBNET=10.77.$subnet.0/24
EOF
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

teardown() {
    local ns tap br veth
    for side in A B; do
        if [ "$side" = A ]; then ns=$NS_A tap=$TAP_A br=$BR_A veth=$VETH_A
        else ns=$NS_B tap=$TAP_B br=$BR_B veth=$VETH_B; fi
        if ns_exists "$ns"; then
            # Delete the devices explicitly: a namespace that some process
            # still holds open (an open TAP fd) outlives `ip netns del`.
            ip -n "$ns" link del "$tap" 2>/dev/null \
                || ip -n "$ns" tuntap del dev "$tap" mode tap 2>/dev/null || true
            ip -n "$ns" link del "$veth" 2>/dev/null || true
            ip -n "$ns" link del "$br" 2>/dev/null || true
            ip netns del "$ns" 2>/dev/null || true
        fi
        # Anything that ended up in the host namespace after a partial `up`.
        for dev in "$tap" "$veth" "$br"; do
            ip link del "$dev" 2>/dev/null || true
        done
    done
}

# Per-namespace settings; bridge netfilter knobs exist only when the
# br_netfilter module is loaded (without it bridged frames skip netfilter).
tune_ns() {
    local ns=$1 knob
    ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1 || true
    for knob in bridge-nf-call-iptables bridge-nf-call-ip6tables bridge-nf-call-arptables; do
        if ip netns exec "$ns" test -e "/proc/sys/net/bridge/$knob"; then
            ip netns exec "$ns" sysctl -q -w "net.bridge.$knob=0" >/dev/null
        fi
    done
}

build_side() {
    local ns=$1 br=$2 veth=$3 tap=$4 kip=$5
    ip -n "$ns" link set lo up
    tune_ns "$ns"
    ip -n "$ns" link add "$br" type bridge forward_delay 0 stp_state 0
    ip -n "$ns" link set "$veth" master "$br"
    ip -n "$ns" tuntap add dev "$tap" mode tap
    ip -n "$ns" link set "$tap" master "$br"
    ip -n "$ns" addr add "$kip/24" dev "$br"
    ip -n "$ns" link set "$veth" up
    ip -n "$ns" link set "$tap" up
    ip -n "$ns" link set "$br" up
    # IPv6 is off above; a bridge made before that would already have an
    # address, so turn it off on the bridge too.
    ip netns exec "$ns" sysctl -q -w "net.ipv6.conf.$br.disable_ipv6=1" >/dev/null 2>&1 || true
}

# Operational state changes reach the bridges through the kernel's link
# watch, about a second after the ports come up; wait for it so that the
# first frames a test sends are not lost. The TAPs stay NO-CARRIER (nobody
# has opened them yet), so the bridges wait on their veth ports.
wait_bridges_up() {
    local i
    for i in $(seq 1 50); do
        if ip -n "$NS_A" -o link show dev "$BR_A" | grep -q "state UP" \
            && ip -n "$NS_B" -o link show dev "$BR_B" | grep -q "state UP"; then
            return 0
        fi
        sleep 0.1
    done
    echo "netns.sh: warning: bridges not operationally up after 5 s" >&2
}

case "$cmd" in
    env)
        print_env
        ;;
    up)
        [ "$(id -u)" -eq 0 ] || die "must run as root (creates namespaces and devices)"
        command -v ip >/dev/null || die "'ip' not found; run scripts/install-deps.sh"
        if ns_exists "$NS_A" || ns_exists "$NS_B"; then
            die "topology '$id' already exists; run: $0 down --id $id"
        fi
        trap 'echo "netns.sh: setup failed, removing partial topology $id" >&2; teardown' ERR
        ip netns add "$NS_A"
        ip netns add "$NS_B"
        ip -n "$NS_A" link add "$VETH_A" type veth peer name "$VETH_B" netns "$NS_B"
        build_side "$NS_A" "$BR_A" "$VETH_A" "$TAP_A" "$KERNEL_A_IP"
        build_side "$NS_B" "$BR_B" "$VETH_B" "$TAP_B" "$KERNEL_B_IP"
        trap - ERR
        wait_bridges_up
        {
            echo "netns.sh: topology '$id' is up:"
            echo "  $NS_A: $TAP_A (for a user-space host $PS_A_IP) + $VETH_A on bridge $BR_A (kernel $KERNEL_A_IP/24)"
            echo "  $NS_B: $TAP_B (for a user-space host $PS_B_IP) + $VETH_B on bridge $BR_B (kernel $KERNEL_B_IP/24)"
            echo "  remove with: $0 down --id $id"
        } >&2
        print_env
        ;;
    down)
        teardown
        echo "netns.sh: topology '$id' is down" >&2
        ;;
    exec-a)
        exec ip netns exec "$NS_A" "$@"
        ;;
    exec-b)
        exec ip netns exec "$NS_B" "$@"
        ;;
esac
