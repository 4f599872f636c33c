#!/usr/bin/env bash
# Provides etcd, etcdctl, kube-apiserver, kube-controller-manager and kube-scheduler for
# the integration tests (etcdctl restores etcd snapshots in the migration tests) and prints the
# directory holding them (the envtest convention: export KUBEBUILDER_ASSETS=$(hack/setup-envtest.sh)).
#
# With --node it also provides kubelet, kube-proxy and kubectl from the same source build, for
# the local cluster (`make local-up`). The offline build always builds all eight, so one build
# serves both.
#
# Order of preference:
#   1. an existing $KUBEBUILDER_ASSETS that holds all four binaries;
#   2. the cache ($ENVTEST_CACHE, default ~/.cache/gardener-rs/envtest);
#   3. the official envtest release when the internet is reachable;
#   4. a build from Debian bookworm's `kubernetes` source package (1.20.2) with Go 1.19.
# Progress goes to stderr; only the assets path goes to stdout.
set -euo pipefail

BINARIES=(etcd etcdctl kube-apiserver kube-controller-manager kube-scheduler)
NODE_BINARIES=(kubelet kube-proxy kubectl)
if [ "${1:-}" = "--node" ]; then
  BINARIES+=("${NODE_BINARIES[@]}")
  ENVTEST_OFFLINE=1 # the official envtest bundle has no kubelet or kube-proxy
fi
CACHE="${ENVTEST_CACHE:-${HOME}/.cache/gardener-rs/envtest}"
ENVTEST_K8S_VERSION="${ENVTEST_K8S_VERSION:-1.30.0}"

log() { echo "setup-envtest: $*" >&2; }

complete() {
  local dir="$1" b
  for b in "${BINARIES[@]}"; do [ -x "$dir/$b" ] || return 1; done
}

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && complete "$KUBEBUILDER_ASSETS"; then
  log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi

# etcdctl comes from Debian's etcd-client package (3.4, the same release as the etcd server).
add_etcdctl() {
  local dest="$1" sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  if ! command -v etcdctl >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq etcd-client >&2
  fi
  cp "$(command -v etcdctl)" "$dest/etcdctl"
}

# The source build carries the patches in hack/patches; a change of them is a new cache entry, and
# an entry built without them is never used.
PATCHES="$(cd "$(dirname "$0")" && pwd)/patches"
DEBIAN_DIR="$CACHE/1.20.2-debian-$(cat "$PATCHES"/*.patch | sha256sum | cut -c1-12)"

mkdir -p "$CACHE"
for dir in "$DEBIAN_DIR/" "$CACHE/${ENVTEST_K8S_VERSION}-linux-amd64/"; do
  [ -d "$dir" ] || continue
  # A cache from before etcdctl was needed: add it rather than rebuild.
  if [ ! -x "${dir%/}/etcdctl" ] && [ -x "${dir%/}/kube-apiserver" ]; then
    log "adding etcdctl to ${dir%/}"; add_etcdctl "${dir%/}"
  fi
  if complete "${dir%/}"; then log "using cached ${dir%/}"; echo "${dir%/}"; exit 0; fi
done

try_download() {
  local url="https://github.com/kubernetes-sigs/controller-tools/releases/download/envtest-v${ENVTEST_K8S_VERSION}/envtest-v${ENVTEST_K8S_VERSION}-linux-amd64.tar.gz"
  local dest="$CACHE/${ENVTEST_K8S_VERSION}-linux-amd64" tmp
  log "trying the official envtest release $ENVTEST_K8S_VERSION"
  tmp=$(mktemp -d)
  if curl -fsSL --connect-timeout 5 --max-time 300 "$url" -o "$tmp/envtest.tgz" 2>/dev/null; then
    mkdir -p "$dest"
    tar -xzf "$tmp/envtest.tgz" -C "$tmp"
    find "$tmp" -type f \( -name etcd -o -name kube-apiserver -o -name kubectl \) -exec cp {} "$dest/" \;
    rm -rf "$tmp"
    add_etcdctl "$dest"
    # The official bundle ships etcd and kube-apiserver only; kube-controller-manager and
    # kube-scheduler come from the source build below when they are missing.
    complete "$dest" && { echo "$dest"; return 0; }
  fi
  rm -rf "$tmp"
  return 1
}

# The unpacked, patched source tree stays (with its Go build cache in _output/local/go/cache):
# hack/conformance.sh builds e2e.test in the same tree, and most of what e2e.test compiles (the
# API types, client-go, apimachinery, ...) is then in that cache already.
KUBE_SRC="${KUBE_SRC:-$(dirname "$CACHE")/kubernetes-src}"

build_from_debian() {
  local dest="$DEBIAN_DIR" src="$KUBE_SRC" patches_hash
  patches_hash=$(cat "$PATCHES"/*.patch | sha256sum | cut -c1-12)
  log "building Kubernetes 1.20.2 from Debian's source package (about 5 minutes on 2 cores)"
  export DEBIAN_FRONTEND=noninteractive
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  if [ ! -f /etc/apt/sources.list.d/bookworm-src.sources ]; then
    $sudo tee /etc/apt/sources.list.d/bookworm-src.sources >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq golang-1.19 etcd-server etcd-client rsync golang-github-modern-go-reflect2-dev patch >&2
  # etcd-server starts a system service on install; the tests start their own.
  $sudo systemctl disable --now etcd >/dev/null 2>&1 || true
  rm -rf "$CACHE/build" # where earlier versions of this script built
  # A tree patched with other patches is unpacked again (a patch cannot be taken back reliably).
  if [ ! -f "$src/.unpacked" ] || [ "$(cat "$src/.patches" 2>/dev/null)" != "$patches_hash" ]; then
    rm -rf "$src" "$src.download"
    mkdir -p "$src" "$src.download"
    (cd "$src.download" && apt-get source --download-only kubernetes >&2)
    tar -xzf "$src.download"/kubernetes_*.orig.tar.gz -C "$src" --strip-components=1
    rm -rf "$src.download"
    # Go 1.19 miscompiles nothing, but the vendored reflect2 predates it and faults
    # (SIGSEGV in mapiterinit) on the first custom-resource write; Debian's copy is fixed.
    rm -rf "$src/vendor/github.com/modern-go/reflect2"
    cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$src/vendor/github.com/modern-go/reflect2"
    rm -f "$src/vendor/github.com/modern-go/reflect2/go.mod"
    local p
    for p in "$PATCHES"/*.patch; do
      log "applying $(basename "$p")"
      patch -d "$src" -p1 --forward --silent <"$p" >&2
    done
    echo "$patches_hash" >"$src/.patches"
    touch "$src/.unpacked"
  fi
  (
    cd "$src"
    if ! PATH="/usr/lib/go-1.19/bin:$PATH" make \
      WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kube-proxy cmd/kubectl" \
      KUBE_BUILD_PLATFORMS=linux/amd64 >&2; then
      log "error: building Kubernetes failed (the Go errors are above). The build needs about 3 GiB of"
      log "memory and 6 GiB of disk under $src; free them and run hack/setup-envtest.sh again (the"
      log "unpacked source is kept, so the retry starts from the build)."
      exit 1
    fi
    mkdir -p "$dest"
    cp _output/bin/kube-apiserver _output/bin/kube-controller-manager _output/bin/kube-scheduler \
      _output/bin/kubelet _output/bin/kube-proxy _output/bin/kubectl "$dest/"
  )
  cp /usr/bin/etcd "$dest/etcd"
  cp /usr/bin/etcdctl "$dest/etcdctl"
  complete "$dest" && echo "$dest"
}

if [ "${ENVTEST_OFFLINE:-}" != 1 ] && out=$(try_download); then echo "$out"; exit 0; fi
build_from_debian
