#!/usr/bin/env bash
# Builds every image the local cluster runs, from the Containerfiles in images/, with buildah
# (Debian's package): the Kubernetes components and our own binaries (built here with cargo,
# profile $IMAGE_PROFILE, default dev, stripped). Writes each as an OCI archive into the image cache
# ($IMAGE_CACHE, default ~/.cache/gardener-rs/images). `local-garden up` imports the archives
# into the node's containerd under their real names. Prints the cache directory.
#
# Images whose inputs (Containerfile, binaries) did not change are not rebuilt.
# Needs the Kubernetes binaries: hack/setup-envtest.sh --node (run by `make images`).
set -euo pipefail
cd "$(dirname "$0")/.."

ASSETS="${1:?usage: hack/images.sh <directory with the Kubernetes binaries>}"
CACHE="${IMAGE_CACHE:-${HOME}/.cache/gardener-rs/images}"
K8S_VERSION="v1.20.2"
PAUSE_VERSION="3.6" # the sandbox image containerd 1.6 expects
BUSYBOX_VERSION="1.35.0"

log() { echo "images: $*" >&2; }
die() { echo "images: error: $*" >&2; exit 1; }

command -v buildah >/dev/null || die "buildah is missing; run hack/setup-local.sh (installs Debian's buildah)"
command -v gcc >/dev/null || die "gcc is missing; apt-get install gcc"
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
  die "a static /bin/busybox is missing; run hack/setup-local.sh (installs Debian's busybox-static)"
fi

# A private, overlay-free storage: nothing mounted, nothing shared with other buildah users.
STORE="${CACHE}/.buildah"
BUILDAH=(buildah --root "$STORE/root" --runroot "$STORE/run" --storage-driver vfs)
mkdir -p "$CACHE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Copies a dynamically linked binary and the libraries it loads into a root file system.
stage_with_libs() {
  local binary="$1" root="$2" dest="$3" lib
  install -D -m 0755 "$binary" "$root$dest"
  for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
    install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
}

# build NAME CONTEXT CONTAINERFILE [buildah args...]: builds and archives when inputs changed.
build() {
  local name="$1" context="$2" file="$3"; shift 3
  local archive digest
  archive="$CACHE/$(echo "$name" | tr '/:' '__').tar"
  # Paths relative to the context: the context is a fresh temporary directory every run.
  digest=$( (cat "$file"; echo "$name $*"; cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . -type l -printf '%p -> %l\n' | sort) | sha256sum | cut -c1-64)
  if [ -f "$archive" ] && [ "$(cat "$archive.inputs" 2>/dev/null)" = "$digest" ]; then
    log "$name: up to date"; return
  fi
  log "$name: building"
  "${BUILDAH[@]}" bud --quiet --network none --layers=false -f "$file" -t "$name" "$@" "$context" >/dev/null ||
    die "buildah could not build $name from $file (its error is above); check \`df -h $CACHE\` and that $STORE is writable, then rerun \`make images\`"
  rm -f "$archive"
  "${BUILDAH[@]}" push --quiet "$name" "oci-archive:$archive:$name" >/dev/null
  "${BUILDAH[@]}" rmi "$name" >/dev/null
  echo "$digest" >"$archive.inputs"
}

# pause
mkdir -p "$work/pause"
gcc -static -O2 -s -o "$work/pause/pause" images/pause/pause.c
build "registry.k8s.io/pause:$PAUSE_VERSION" "$work/pause" images/pause/Containerfile

# Kubernetes components (static Go binaries)
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  [ -x "$ASSETS/$c" ] || die "$ASSETS/$c is missing; run hack/setup-envtest.sh --node"
  mkdir -p "$work/$c"; cp "$ASSETS/$c" "$work/$c/"
  build "registry.k8s.io/$c:$K8S_VERSION" "$work/$c" images/kube-component/Containerfile --build-arg "COMPONENT=$c"
done

# stage_iptables ROOT: Debian's iptables (the backend the host uses) with its libraries and
# extension modules, and the iptables(-save|-restore) names kube-proxy and CNI call.
stage_iptables() {
  local root="$1" xtables tool
  xtables=$(readlink -f /usr/sbin/iptables)
  stage_with_libs "$xtables" "$root" "/usr/sbin/$(basename "$xtables")"
  for tool in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf "$(basename "$xtables")" "$root/usr/sbin/$tool"
  done
  if [ -d /usr/lib/x86_64-linux-gnu/xtables ]; then
    mkdir -p "$root/usr/lib/x86_64-linux-gnu" && cp -a /usr/lib/x86_64-linux-gnu/xtables "$root/usr/lib/x86_64-linux-gnu/"
  fi
}

# kube-proxy, with iptables next to it: the shoot's nodes run it as a DaemonSet
# (images/kube-proxy/Containerfile). The local cluster itself runs the binary on the host.
[ -x "$ASSETS/kube-proxy" ] || die "$ASSETS/kube-proxy is missing; run hack/setup-envtest.sh --node"
mkdir -p "$work/kube-proxy/rootfs/usr/local/bin" "$work/kube-proxy/rootfs/run" "$work/kube-proxy/rootfs/tmp"
cp "$ASSETS/kube-proxy" "$work/kube-proxy/rootfs/usr/local/bin/kube-proxy"
stage_iptables "$work/kube-proxy/rootfs"
build "registry.k8s.io/kube-proxy:$K8S_VERSION" "$work/kube-proxy" images/kube-proxy/Containerfile

# etcd, tagged with the version of the Debian build it holds
etcd_version=$("$ASSETS/etcd" --version | sed -n 's/^etcd Version: //p')
[ -n "$etcd_version" ] || die "cannot read the version of $ASSETS/etcd"
mkdir -p "$work/etcd/rootfs/bin"
stage_with_libs "$ASSETS/etcd" "$work/etcd/rootfs" /usr/local/bin/etcd
stage_with_libs "$ASSETS/etcdctl" "$work/etcd/rootfs" /usr/local/bin/etcdctl
cp /bin/busybox "$work/etcd/rootfs/bin/busybox"
for tool in sh rm mv ls cat mkdir; do ln -s busybox "$work/etcd/rootfs/bin/$tool"; done
build "registry.k8s.io/etcd:${etcd_version}-0" "$work/etcd" images/etcd/Containerfile

# busybox, for tests and debugging
mkdir -p "$work/busybox/rootfs/bin" "$work/busybox/rootfs/tmp" "$work/busybox/rootfs/www"
cp /bin/busybox "$work/busybox/rootfs/bin/busybox"
for tool in sh httpd wget nslookup cat echo ls sleep hostname timeout mkdir; do ln -s busybox "$work/busybox/rootfs/bin/$tool"; done
chmod 1777 "$work/busybox/rootfs/tmp"
build "gardener-rs.local/busybox:$BUSYBOX_VERSION" "$work/busybox" images/busybox/Containerfile

# Our binaries: gardener-rs.local/<binary>:v<version>, the version their --version prints.
# The dev profile is what `make test` already built, so CI compiles nothing twice; stripped, the
# binaries are 30-50 MB. IMAGE_PROFILE=release gives smaller, faster binaries for a real install.
profile="${IMAGE_PROFILE:-dev}"
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out_dir="$target_dir/$([ "$profile" = dev ] && echo debug || echo "$profile")"
log "cargo build --profile $profile (our binaries)"
cargo build -q --profile "$profile" --bin gardenlet --bin gardener-scheduler --bin gardener-controller-manager --bin gardener-extension-provider-local --bin machine-init --bin cluster-dns >&2
# cluster-dns is the shoots' cluster DNS (the machines carry its image).
for bin in gardenlet gardener-scheduler gardener-controller-manager gardener-extension-provider-local cluster-dns; do
  version=$("$out_dir/$bin" --version | awk '{print $2}')
  [ -n "$version" ] || die "cannot read the version of $out_dir/$bin"
  root="$work/$bin/rootfs"
  stage_with_libs "$out_dir/$bin" "$root" "/usr/local/bin/$bin"
  strip "$root/usr/local/bin/$bin"
  ln -s "usr/local/bin/$bin" "$root/entrypoint"
  build "gardener-rs.local/$bin:v$version" "$work/$bin" images/gardener-component/Containerfile
  if [ "$bin" = cluster-dns ]; then cluster_dns_archive="$CACHE/gardener-rs.local_cluster-dns_v$version.tar"; fi
done

# The machine image (images/machine/Containerfile): machine-init, the kubelet, and Debian's
# containerd, runc, CNI plugins, bash, iptables and busybox, with the pause, busybox, kube-proxy
# and cluster-dns images inside for the machine's containerd (it never pulls). Tagged with the Kubernetes version of its kubelet.
for f in containerd containerd-shim-runc-v2 ctr; do [ -x "/usr/bin/$f" ] || die "/usr/bin/$f is missing; run hack/setup-local.sh"; done
root="$work/machine/rootfs"
mkdir -p "$root"
cp -a images/machine/files/. "$root/"
mkdir -p "$root/etc/cni/net.d" "$root/var/lib/machine/images" "$root/bin" "$root/tmp" "$root/run" "$root/var/log" "$root/opt/cni/bin"
chmod 1777 "$root/tmp"
stage_with_libs "$out_dir/machine-init" "$root" /usr/local/bin/machine-init
strip "$root/usr/local/bin/machine-init"
mkdir -p "$root/usr/bin" && ln -s ../local/bin/machine-init "$root/usr/bin/systemctl"
stage_with_libs "$ASSETS/kubelet" "$root" /opt/bin/kubelet
for f in containerd containerd-shim-runc-v2 ctr; do stage_with_libs "/usr/bin/$f" "$root" "/usr/bin/$f"; done
stage_with_libs /usr/sbin/runc "$root" /usr/sbin/runc
for plugin in bridge host-local loopback portmap; do stage_with_libs "/usr/lib/cni/$plugin" "$root" "/opt/cni/bin/$plugin"; done
stage_with_libs /bin/bash "$root" /bin/bash
stage_iptables "$root"
cp /bin/busybox "$root/bin/busybox"
for tool in sh cat chmod mkdir rm mv ls ln head tail base64 sleep seq echo mount umount find du df grep sed \
  awk tr cut wc date hostname ps kill touch stat uname nsenter losetup readlink sync true false test env; do
  [ -e "$root/bin/$tool" ] || ln -s busybox "$root/bin/$tool"
done
pause_archive="$CACHE/registry.k8s.io_pause_$PAUSE_VERSION.tar"
busybox_archive="$CACHE/gardener-rs.local_busybox_$BUSYBOX_VERSION.tar"
cp "$pause_archive" "$root/var/lib/machine/images/pause.tar"
cp "$busybox_archive" "$root/var/lib/machine/images/busybox.tar"
cp "$CACHE/registry.k8s.io_kube-proxy_$K8S_VERSION.tar" "$root/var/lib/machine/images/kube-proxy.tar"
cp "$cluster_dns_archive" "$root/var/lib/machine/images/cluster-dns.tar"
build "gardener-rs.local/machine:$K8S_VERSION" "$work/machine" images/machine/Containerfile

echo "$CACHE"
