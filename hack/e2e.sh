#!/usr/bin/env bash
# The end-to-end run: records the host, brings the local cluster up, runs tests/e2e against
# it, tears it down, and fails unless the host is exactly as recorded before. The teardown and
# the comparison run even when a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "e2e: $*" >&2; }
if [ -e .local ]; then
  log "error: .local exists (a local cluster is up or was not removed); run \`make local-down\` first"
  exit 1
fi

hack/setup-local.sh
assets=$(hack/setup-envtest.sh --node)
images=$(hack/images.sh "$assets")
cargo build -q -p local-cluster
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target_dir/debug/local-cluster"
export E2E_ASSETS="$assets" E2E_IMAGES="$images" E2E_LOCAL_CLUSTER="$bin" LOCAL_CLUSTER_STATE="$PWD/.local"

work=$(mktemp -d)
"$bin" snapshot >"$work/host-before.json"

finish() {
  local status=$?
  trap - EXIT
  if [ -e .local ]; then
    [ "$status" = 0 ] || { log "collecting logs"; tail -n 30 .local/logs/*.log >&2 || true; }
    log "tearing down"
    "$bin" down || status=1
  fi
  log "comparing the host with its state before local-up"
  "$bin" compare "$work/host-before.json" || status=1
  rm -rf "$work"
  exit "$status"
}
trap finish EXIT

"$bin" up --assets "$assets" --images "$images"
KUBECTL="$assets/kubectl" hack/local-garden.sh "$PWD/.local/kubeconfig"
cargo build -q -p e2e --tests
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run -p e2e --test local_cluster --no-fail-fast
  cargo nextest run -p e2e --test garden --no-fail-fast -j 1
  cargo nextest run -p e2e --test shoot --no-fail-fast -j 1
  cargo nextest run -p e2e --test managed_seed --no-fail-fast -j 1
  cargo nextest run -p e2e --test faults --no-fail-fast -j 1
else
  cargo test -p e2e --test local_cluster
  cargo test -p e2e --test garden -- --test-threads=1
  cargo test -p e2e --test shoot -- --test-threads=1
  cargo test -p e2e --test managed_seed -- --test-threads=1
  cargo test -p e2e --test faults -- --test-threads=1
fi

log "tearing down"
"$bin" down
log "a half-finished up (killed after 4 s), then down twice"
timeout -s KILL 4 "$bin" up --assets "$assets" --images "$images" || true
"$bin" down
"$bin" down
