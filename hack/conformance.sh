#!/usr/bin/env bash
# Runs the upstream Kubernetes conformance suite (the `[Conformance]` tests of 1.20.2, the shoots'
# version) against a shoot of the local garden; docs/conformance.md.
#   hack/conformance.sh [--focus REGEX | --ci] [--shoot NAME] [--keep]
#   hack/conformance.sh --prepare
#     --prepare      only build e2e.test, ginkgo and the test images (cached; the images are
#                    pushed to the local cluster's registry, so it must be up) and stop;
#                    hack/e2e.sh does this before its cases start, so that the builds do not
#                    count against the conformance case's time
#     --focus REGEX  run only the conformance tests matching REGEX (Go regexp on the full name)
#     --ci           run only the CI subset (CI_SUBSET below: Services, DNS, networking, pods)
#     --shoot NAME   use the existing shoot NAME of project `local` (never deleted)
#     --keep         keep the shoot this script created
# It builds what is missing (e2e.test and ginkgo from Debian bookworm's `kubernetes` source
# package, cached under $CONFORMANCE_CACHE, default ~/.cache/gardener-rs/conformance; the test
# images via hack/conformance-images.sh), creates the shoot `conf` with two worker nodes, runs the
# suite in two passes (the non-serial tests $CONFORMANCE_NODES at a time, default 2, then the
# [Serial] ones alone), and prints a summary. JUnit reports, logs and the summary go to a results
# directory under .conformance/ (git-ignored), printed at the start and the end. The local garden
# must be up (`make local-up`); $LOCAL_CLUSTER_STATE names its state directory (default .local).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: hack/conformance.sh [--focus REGEX | --ci] [--shoot NAME] [--keep] | --prepare"
FOCUS='\[Conformance\]'
SHOOT=""
KEEP=false
CI=false
PREPARE=false
while [ $# -gt 0 ]; do
  case "$1" in
    --focus) FOCUS="${2:?$usage}"; shift 2 ;;
    --shoot) SHOOT="${2:?$usage}"; shift 2 ;;
    --keep) KEEP=true; shift ;;
    --ci) CI=true; shift ;;
    --prepare) PREPARE=true; shift ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
STATE="${LOCAL_CLUSTER_STATE:-$PWD/.local}"
CACHE="${CONFORMANCE_CACHE:-$HOME/.cache/gardener-rs/conformance}"
NODES="${CONFORMANCE_NODES:-2}"
PROJECT=local
PROJECT_NS=garden-local
log() { echo "conformance: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Tests that cannot run here at all, by exact name, with the reason (docs/conformance.md,
# "Skipped"). Never a pattern: every other conformance test runs.
SKIPS=(
)

# The CI subset, by exact name: fast conformance tests of Services, DNS, networking and pods,
# chosen by measured time (docs/conformance.md, "A subset for CI").
CI_SUBSET=(
  "[sig-network] Services should serve a basic endpoint from pods  [Conformance]"
  "[sig-network] Services should serve multiport endpoints from pods  [Conformance]"
  "[sig-network] Services should be able to change the type from ExternalName to ClusterIP [Conformance]"
  "[sig-network] Services should be able to change the type from ExternalName to NodePort [Conformance]"
  "[sig-network] Services should be able to change the type from ClusterIP to ExternalName [Conformance]"
  "[sig-network] Services should find a service from listing all namespaces [Conformance]"
  "[sig-network] Services should test the lifecycle of an Endpoint [Conformance]"
  "[sig-network] Services should provide secure master service  [Conformance]"
  "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [NodeConformance] [Conformance]"
  "[sig-network] Networking Granular Checks: Pods should function for node-pod communication: http [LinuxOnly] [NodeConformance] [Conformance]"
  "[sig-network] Networking Granular Checks: Pods should function for node-pod communication: udp [LinuxOnly] [NodeConformance] [Conformance]"
  "[k8s.io] Pods should be updated [NodeConformance] [Conformance]"
  # Through the tunnel (docs/networking.md): the DNS tests read their probes' results through the
  # API server's pod proxy, the webhook is a Service in the shoot, the ReplicaSet's replicas are
  # asked through the pod proxy.
  "[sig-network] DNS should provide DNS for the cluster  [Conformance]"
  "[sig-network] DNS should provide DNS for services  [Conformance]"
  "[sig-network] DNS should provide DNS for pods for Hostname [LinuxOnly] [Conformance]"
  "[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate configmap [Conformance]"
  "[sig-apps] ReplicaSet should serve a basic image on each replica with a public image  [Conformance]"
)

# --- the local garden --------------------------------------------------------------------------
start=$(date +%s)
if [ "$PREPARE" = false ]; then
  [ -f "$STATE/kubeconfig" ] || die "the local garden is not up ($STATE/kubeconfig is missing); run \`make local-up\` first"
  assets=$(hack/setup-envtest.sh --node)
  KUBECTL="$assets/kubectl"
  g() { "$KUBECTL" --kubeconfig "$STATE/kubeconfig" "$@"; }
  g get --raw /readyz >/dev/null 2>&1 || die "the local garden's API server does not answer; run \`make local-up\` first"

  results="$PWD/.conformance/$(date -u +%Y%m%dT%H%M%SZ)"
  mkdir -p "$results"
  log "results in $results"
fi

# --- e2e.test, ginkgo and the test images' binaries ---------------------------------------------
# The source tree hack/setup-envtest.sh built the shoots' binaries in, when it is there and this
# cache has no tree of its own: its Go build cache already holds most of what e2e.test compiles.
SHARED_SRC="${KUBE_SRC:-$HOME/.cache/gardener-rs/kubernetes-src}"
if [ ! -d "$CACHE/src" ] && [ -f "$SHARED_SRC/.unpacked" ]; then SRC="$SHARED_SRC"; else SRC="$CACHE/src"; fi
BIN="$SRC/_output/bin"
if [ ! -d "$SRC" ]; then
  log "unpacking Debian's kubernetes source package (1.20.2) into $SRC"
  [ -f /etc/apt/sources.list.d/bookworm-src.sources ] || die "no deb-src entry; run hack/setup-envtest.sh --node first"
  command -v /usr/lib/go-1.19/bin/go >/dev/null || die "Go 1.19 is missing; run hack/setup-envtest.sh --node first"
  rm -rf "$CACHE/download" "$SRC.tmp"
  mkdir -p "$CACHE/download" "$SRC.tmp"
  (cd "$CACHE/download" && apt-get source --download-only kubernetes >&2)
  tar -xzf "$CACHE"/download/kubernetes_*.orig.tar.gz -C "$SRC.tmp" --strip-components=1
  # The same reflect2 swap as hack/setup-envtest.sh (the vendored copy faults under Go 1.19).
  rm -rf "$SRC.tmp/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$SRC.tmp/vendor/github.com/modern-go/reflect2"
  rm -f "$SRC.tmp/vendor/github.com/modern-go/reflect2/go.mod"
  mv "$SRC.tmp" "$SRC"
fi
build() { (cd "$SRC" && PATH="/usr/lib/go-1.19/bin:$PATH" make KUBE_BUILD_PLATFORMS=linux/amd64 "$@" >&2); }
if [ ! -x "$BIN/e2e.test" ] || [ ! -x "$BIN/ginkgo" ]; then
  log "building e2e.test and ginkgo (about 5 minutes on 2 cores)"
  build WHAT="test/e2e/e2e.test vendor/github.com/onsi/ginkgo/ginkgo"
fi
if [ ! -x "$BIN/agnhost" ] || [ ! -x "$BIN/nonewprivs" ] || [ ! -x "$BIN/sample-apiserver" ]; then
  log "building agnhost, nonewprivs and sample-apiserver"
  build KUBE_STATIC_OVERRIDES="agnhost nonewprivs sample-apiserver" \
    WHAT="test/images/agnhost test/images/nonewprivs vendor/k8s.io/sample-apiserver"
fi
repo_list=$(LOCAL_CLUSTER_STATE="$STATE" CONFORMANCE_CACHE="$CACHE" hack/conformance-images.sh "$SRC")
if [ "$PREPARE" = true ]; then
  log "e2e.test and ginkgo are in $BIN, the test images in the local registry ($(($(date +%s) - start)) s)"
  exit 0
fi

# --- the shoot ---------------------------------------------------------------------------------
created=false
work=$(mktemp -d)
# shellcheck disable=SC2317 # run by the trap
cleanup() {
  rm -rf "$work"
  if [ "$created" = true ] && [ "$KEEP" = false ]; then
    log "deleting shoot $SHOOT"
    g -n "$PROJECT_NS" annotate --overwrite shoot "$SHOOT" confirmation.gardener.cloud/deletion=true >/dev/null || true
    g -n "$PROJECT_NS" delete shoot "$SHOOT" --wait=false >/dev/null || true
  fi
}
trap cleanup EXIT
if [ -z "$SHOOT" ]; then
  SHOOT=conf
  g -n "$PROJECT_NS" get shoot "$SHOOT" >/dev/null 2>&1 && die "shoot $SHOOT exists already; pass --shoot $SHOOT to use it"
  log "creating shoot $SHOOT with two worker nodes"
  # example/shoot.yaml with two machines.
  g create -f - >/dev/null <<SHOOT
apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata: {name: $SHOOT, namespace: $PROJECT_NS}
spec:
  cloudProfileName: local
  secretBindingName: local
  region: local
  kubernetes: {version: 1.20.2}
  networking: {type: local, nodes: 10.10.0.0/16}
  provider:
    type: local
    workers:
    - name: local
      machine: {type: local, image: {name: local, version: 1.0.0}}
      minimum: 2
      maximum: 2
      maxSurge: 1
      maxUnavailable: 0
      zones: ["0"]
SHOOT
  created=true
fi
log "waiting for shoot $SHOOT to be reconciled"
# Every 3 s: each poll is a kubectl process (about 0.13 s of CPU), beside the other cases.
for i in $(seq 1 200); do
  op=$(g -n "$PROJECT_NS" get shoot "$SHOOT" -o 'jsonpath={.status.lastOperation.type}/{.status.lastOperation.state}' 2>/dev/null || true)
  case "$op" in
    */Succeeded) break ;;
    */Failed) die "shoot $SHOOT: last operation $op" ;;
  esac
  [ "$i" -lt 200 ] || die "shoot $SHOOT was not reconciled within 10 minutes (last operation ${op:-none})"
  sleep 3
done
# The whole run takes hours: a kubeconfig valid for a day.
EXPIRATION_SECONDS=86400 KUBECTL="$KUBECTL" KUBECONFIG_FILE="$STATE/kubeconfig" \
  hack/shoot-kubeconfig.sh "$PROJECT" "$SHOOT" >"$work/kubeconfig"
s() { "$KUBECTL" --kubeconfig "$work/kubeconfig" "$@"; }
log "waiting for the shoot's nodes to be ready"
want=1; [ "$created" = false ] || want=2
for i in $(seq 1 200); do
  [ "$(s get nodes -o name 2>/dev/null | wc -l)" -ge "$want" ] && break
  [ "$i" -lt 200 ] || die "shoot $SHOOT has fewer than $want nodes after 10 minutes"
  sleep 3
done
s wait --for=condition=Ready node --all --timeout=600s >/dev/null
s get nodes -o wide >"$results/nodes.txt"

# --- the suite ---------------------------------------------------------------------------------
# Go regexp of exact names: metacharacters escaped.
exact() { printf '%s' "$1" | sed 's/[][\\.+*?(){}|^$]/\\&/g'; }
if [ "$CI" = true ]; then
  FOCUS=""
  for name in "${CI_SUBSET[@]}"; do FOCUS="${FOCUS:+$FOCUS|}$(exact "$name")"; done
fi
skip=""
for entry in "${SKIPS[@]}"; do
  skip="${skip:+$skip|}$(exact "${entry%%|*}")"
done
# The serial conformance tests matching FOCUS, by name (ginkgo has one focus regexp; this is the
# only way to say "FOCUS and [Serial]"). Names come from the source's conformance.yaml.
serial=$(python3 - "$SRC/test/conformance/testdata/conformance.yaml" "$FOCUS" <<'PY'
import re, sys, yaml
names = [t["codename"] for t in yaml.safe_load(open(sys.argv[1]))]
focus = re.compile(sys.argv[2])
esc = lambda s: re.sub(r"([][\\.+*?(){}|^$])", r"\\\1", s)
print("|".join(esc(n) for n in names if "[Serial]" in n and focus.search(n)))
PY
)
echo "$FOCUS" >"$results/focus.txt"
echo "$serial" >"$results/focus-serial.txt"
printf '%s\n' "${SKIPS[@]}" >"$results/skipped-by-name.txt"
export KUBE_TEST_REPO_LIST="$repo_list"
e2e_flags=(--provider=skeleton --kubeconfig="$work/kubeconfig" --kubectl-path="$KUBECTL"
  --dns-domain=cluster.local --report-dir="$results" --disable-log-dump
  --allowed-not-ready-nodes=0 --system-pods-startup-timeout=5m)
status=0
pass() {
  local name="$1" t0; shift
  t0=$(date +%s)
  log "pass $name: ginkgo ${1} (log $results/e2e-$name.log)"
  "$BIN/ginkgo" --noColor "$@" "$BIN/e2e.test" -- "${e2e_flags[@]}" --report-prefix="$name" \
    >"$results/e2e-$name.log" 2>&1 || status=1
  echo "$name $(($(date +%s) - t0))" >>"$results/passes.txt"
  tail -n 5 "$results/e2e-$name.log" >&2
}
pass parallel --nodes="$NODES" --focus="$FOCUS" --skip="\\[Serial\\]${skip:+|$skip}"
if [ -n "$serial" ]; then
  pass serial --nodes=1 --focus="$serial" ${skip:+--skip="$skip"}
fi

# --- summary -----------------------------------------------------------------------------------
python3 - "$results" "$(($(date +%s) - start))" <<'PY' | tee "$results/summary.txt"
import glob, sys, xml.etree.ElementTree as ET
results, wall = sys.argv[1], int(sys.argv[2])
rank = {"skipped": 0, "passed": 1, "failed": 2}
tests = {}
for f in sorted(glob.glob(f"{results}/junit_*.xml")):
    for case in ET.parse(f).getroot().iter("testcase"):
        name = case.get("name", "")
        if "[Conformance]" not in name:
            continue
        state = ("failed" if case.find("failure") is not None or case.find("error") is not None
                 else "skipped" if case.find("skipped") is not None else "passed")
        old = tests.get(name, ("skipped", 0.0))
        if rank[state] >= rank[old[0]]:
            tests[name] = (state, float(case.get("time", "0")))
count = {k: sum(1 for s, _ in tests.values() if s == k) for k in rank}
print(f"passed {count['passed']}, failed {count['failed']}, not run {count['skipped']} (outside the focus, "
      f"or skipped by name: skipped-by-name.txt) of {len(tests)} conformance tests; "
      f"wall time {wall // 60} min {wall % 60} s")
for name, (state, _) in sorted(tests.items()):
    if state == "failed":
        print(f"FAILED {name}")
print("slowest ten:")
ran = [(t, n) for n, (s, t) in tests.items() if s != "skipped"]
for t, n in sorted(ran, reverse=True)[:10]:
    print(f"  {t:7.1f} s  {n}")
PY
cat "$results/passes.txt" >&2
log "results in $results"
exit "$status"
