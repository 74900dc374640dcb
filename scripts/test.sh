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

step "graph example"
cargo run --quiet --example graph -- check graphs/synthetic5.graph

step "main job (in-memory wire, short)"
cargo run --quiet --example pingpong -- --rounds 2000

if [ "$(id -u)" = 0 ]; then
    step "main job over TAP/veth (privileged, short)"
    cargo run --quiet --example pingpong -- --wire tap --rounds 500 --warmup 100
else
    step "main job over TAP/veth: SKIPPED (not root, PATHSTACK_SKIP_PRIVILEGED=1)"
fi
