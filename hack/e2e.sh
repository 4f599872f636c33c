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

# On failure: the host components' logs, the garden's controllers' logs, and last (a CI log is
# often read from its end) the failed tests' own reports.
collect() {
  local kubectl="$assets/kubectl --kubeconfig=$PWD/.local/kubeconfig" d
  log "collecting logs"
  tail -n 15 .local/logs/*.log >&2 || true
  for d in garden/gardenlet garden/gardener-controller-manager extension-provider-local-local/gardener-extension-provider-local; do
    echo "==> logs of deployment ${d#*/} in ${d%%/*} <==" >&2
    $kubectl -n "${d%%/*}" logs "deploy/${d#*/}" --tail=25 >&2 2>&1 || true
  done
  for f in "$work"/*.out; do
    [ -e "$f" ] || continue
    grep -q "panicked at" "$f" || continue
    echo "==> the failure reported by $(basename "$f" .out) <==" >&2
    grep -A 60 "panicked at" "$f" | head -n 80 >&2
  done
}

# Runs one e2e test binary (`serial`: one test at a time), its output also kept for collect().
run_test() {
  local name="$1" serial="${2:-}"
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run -p e2e --test "$name" --no-fail-fast ${serial:+-j 1} 2>&1 | tee "$work/$name.out"
  else
    cargo test -p e2e --test "$name" -- ${serial:+--test-threads=1} 2>&1 | tee "$work/$name.out"
  fi
}

finish() {
  local status=$?
  trap - EXIT
  if [ -e .local ]; then
    [ "$status" = 0 ] || collect
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
run_test local_cluster
run_test garden serial
run_test shoot serial
run_test managed_seed serial
run_test faults serial

log "tearing down"
"$bin" down
log "a half-finished up (killed after 4 s), then down twice"
timeout -s KILL 4 "$bin" up --assets "$assets" --images "$images" || true
"$bin" down
"$bin" down
