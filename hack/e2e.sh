#!/usr/bin/env bash
# The end-to-end run: records the host, brings the local cluster up, runs tests/e2e against
# it, tears it down, and fails unless the host is exactly as recorded before. The teardown and
# the comparison run even when a test fails.
#
# The cases run in two phases (docs/testing.md):
#   1. side by side, at most $E2E_CONCURRENCY at once (default 3): the cases that only use the
#      garden, each with its own names (conformance: the upstream suite's CI subset against a
#      two-node shoot; local_cluster, shoot, contract, managed_seed);
#   2. one at a time: the cases that change the garden itself (garden upgrades gardenlet and
#      freezes leaders; faults kills the kubelet and containerd).
# Each phase and each case's time is printed at the end, and appended to $CI_TIMES when set
# (`.ci/run` prints its table from it).
set -euo pipefail
cd "$(dirname "$0")/.."

E2E_CONCURRENCY="${E2E_CONCURRENCY:-3}"
log() { echo "e2e: $*" >&2; }
times="$(mktemp)"
trap 'rm -f "$times"' EXIT # until finish() takes over
# timed NAME COMMAND...: runs COMMAND and records its seconds under NAME.
timed() {
  local name="$1" start status=0; shift
  start=$(date +%s)
  "$@" || status=$?
  echo "$name $(( $(date +%s) - start ))" >>"$times"
  return "$status"
}
if [ -e .local ]; then
  log "error: .local exists (a local cluster is up or was not removed); run \`make local-down\` first"
  exit 1
fi

timed setup-local hack/setup-local.sh
assets=$(timed kubernetes-binaries hack/setup-envtest.sh --node)
images=$(timed images hack/images.sh "$assets")
bins=$(timed build-local-cluster hack/build-bins.sh)
bin="$bins/local-cluster"
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

# Where cargo builds (and nextest writes its JUnit report).
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')

# run_phase NAME JOBS BINARY...: runs the tests of these e2e test binaries, at most JOBS at once,
# the output also kept for collect(); every case's time goes to the time table.
run_phase() {
  local name="$1" jobs="$2" status=0 t; shift 2
  local tests=()
  for t in "$@"; do tests+=(--test "$t"); done
  if cargo nextest --version >/dev/null 2>&1; then
    # Another crate may have an integration test of the same name (gardenlet's managed_seed):
    # only the e2e package's run.
    cargo nextest run --workspace "${tests[@]}" -E 'package(e2e)' --no-fail-fast -j "$jobs" 2>&1 | tee "$work/$name.out" || status=1
    # When each case started and what its steps took (.config/nextest.toml keeps the output of
    # passing cases in the JUnit report).
    local report="$target_dir/nextest/default/junit.xml"
    if [ -f "$report" ]; then
      echo "e2e: phase $name, when each case started (s after the first) and its steps:" >&2
      python3 hack/junit-timeline.py --steps "$report" >&2 || true
      # Kept per phase: the next phase's run writes the same file.
      cp "$report" "$target_dir/nextest/default/junit-e2e-$name.xml" || true
    fi
  else
    cargo test -p e2e "${tests[@]}" --no-fail-fast -- --test-threads="$jobs" 2>&1 | tee "$work/$name.out" || status=1
  fi
  # nextest's result lines, e.g. "        PASS [ 123.456s] (2/5) e2e::shoot a_case" (the count only
  # in newer releases; a failure is listed again in the summary): "  case shoot::a_case 123 PASS"
  # into the time table, once per case.
  sed -n 's/^ *\(PASS\|FAIL\|TIMEOUT\|SIGKILL\|ABORT\) \[ *\([0-9.]*\)s\] \((.*) \)\{0,1\}e2e::\([^ ]*\) \(.*\)$/\1 \2 \4::\5/p' \
    "$work/$name.out" | awk '!seen[$3]++ {printf "  case %s %.0f %s\n", $3, $2, $1}' >>"$times" || true
  return "$status"
}

finish() {
  local status=$?
  trap - EXIT
  print_times() {
    echo "e2e: seconds per phase and case (concurrency $E2E_CONCURRENCY):" >&2
    column -t "$times" >&2 || cat "$times" >&2
    if [ -n "${CI_TIMES:-}" ]; then sed 's/^/e2e /' "$times" >>"$CI_TIMES"; fi
    rm -f "$times"
  }
  if [ -e .local ]; then
    [ "$status" = 0 ] || collect
    log "tearing down"
    "$bin" down || status=1
  fi
  log "comparing the host with its state before local-up"
  "$bin" compare "$work/host-before.json" || status=1
  rm -rf "$work"
  print_times
  exit "$status"
}
trap finish EXIT

timed local-up "$bin" up --assets "$assets" --images "$images"
timed garden-install env KUBECTL="$assets/kubectl" hack/local-garden.sh "$PWD/.local/kubeconfig"
# The e2e tests by name from the whole workspace: the features of `make test`'s build, so the
# libraries are not compiled again (docs/testing.md, "One build").
e2e_tests=(conformance local_cluster shoot contract workers managed_seed isolation backup ha garden faults)
timed build-tests cargo build -q --workspace $(printf -- '--test %s ' "${e2e_tests[@]}")
# What the conformance case needs (e2e.test and ginkgo from the Kubernetes source, the test images
# pushed to the registry; cached), built before the cases start: on a fresh machine, built inside
# the case on cores the other cases keep busy, they took its 15-minute budget.
timed conformance-prepare hack/conformance.sh --prepare
failed=0
# Phase 1: side by side. Phase 2: alone (they disturb the garden every other case relies on).
timed side-by-side run_phase side-by-side "$E2E_CONCURRENCY" conformance local_cluster shoot contract workers managed_seed isolation backup ha || failed=1
timed alone run_phase alone 1 garden faults || failed=1
[ "$failed" = 0 ] || exit 1

log "tearing down"
timed teardown "$bin" down
log "a half-finished up (killed after 4 s), then down twice"
half_up_then_down() {
  timeout -s KILL 4 "$bin" up --assets "$assets" --images "$images" || true
  "$bin" down && "$bin" down
}
timed half-up-then-down half_up_then_down
