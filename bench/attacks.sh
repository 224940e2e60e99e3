#!/usr/bin/env bash
# The issue 24 attacks that take minutes or watch memory, against this
# build and, when given, a baseline binary (the one before the fixes):
#   - 150 wrong-password console sign-ins at once from 150 addresses
#     (RSS growth, the slowest /healthz of a bystander meanwhile);
#   - 186,499 refused ghost-bus reports from distinct addresses, then
#     12,000 from 1,500 addresses (RSS after each);
#   - 20 addresses x 60 half-sent requests that keep coming back (a
#     bystander's success rate).
#
#   bench/attacks.sh [baseline_binary]
set -euo pipefail
cd "$(dirname "$0")/.."
source script/deps
source bench/lib.sh
sidecar_install_packages "${SIDECAR_BUILD_PACKAGES[@]}" python3
BASELINE="${1:-}"
bench_workspace
build_release
ulimit -n 65536 2>/dev/null || true
echo "Machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%dT%H:%MZ)"
for attack in signins ghostbus slowclients; do
  [ -n "$BASELINE" ] && echo "baseline $(python3 bench/attacks.py "$BASELINE" "$attack" "$WORK")"
  echo "this build $(python3 bench/attacks.py "$BIN" "$attack" "$WORK")"
done
