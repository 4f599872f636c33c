#!/usr/bin/env bash
# Builds every image the local cluster runs, from the Containerfiles in images/, with buildah
# (Debian's package): the Kubernetes components and our own binaries (built here with cargo,
# profile $IMAGE_PROFILE, default dev, stripped). Writes each as an OCI archive into the image cache
# ($IMAGE_CACHE, default ~/.cache/gardener-rs/images). `local-cluster up` imports the archives
# into the node's containerd under their real names (every archive in the cache). Prints the
# cache directory.
#
# Usage: hack/images.sh [--only NAME]... [ASSETS]
#   ASSETS       the directory with the Kubernetes binaries (hack/setup-envtest.sh --node, run by
#                `make images`); not needed for pause, busybox, bastion and our binaries
#   --only NAME  builds only this image (repeatable): its name without registry and tag, e.g.
#                `--only bastion` (neither cargo nor the Kubernetes binaries), `--only gardenlet`.
#                `--only machine` builds every machine image version and takes the images the
#                machine carries from the cache.
#
# Images whose inputs (Containerfile, binaries) did not change are not rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."

USAGE="usage: hack/images.sh [--only NAME]... [<directory with the Kubernetes binaries>]"
IMAGES=(pause kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd busybox bastion
  gardenlet gardener-scheduler gardener-controller-manager gardener-extension-provider-local cluster-dns etcd-backup konnectivity machine)
CACHE="${IMAGE_CACHE:-${HOME}/.cache/gardener-rs/images}"
K8S_VERSION="v1.20.2"
PAUSE_VERSION="3.6" # the sandbox image containerd 1.6 expects
BUSYBOX_VERSION="1.35.0"
OPENSSH_VERSION="9.2p1" # bookworm's; the bastion image's tag, checked against the openssh-server .deb
# The machine image versions the CloudProfile `local` offers (example/local/garden.yaml, its
# providerConfig maps each to its image): the first is the machine image built from the staged
# root file system, tagged with the Kubernetes version of its kubelet; every further one is
# derived from it and differs only in /etc/os-release, tagged <first tag>-local.<version>.
MACHINE_VERSIONS=(1.0.0 1.1.0)
MACHINE_IMAGE="gardener-rs.local/machine:$K8S_VERSION"

log() { echo "images: $*" >&2; }
die() { echo "images: error: $*" >&2; exit 1; }

only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || die "$USAGE"; only+=("$2"); shift 2 ;;
    --only=*) only+=("${1#--only=}"); shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    -*) die "unknown option $1; $USAGE" ;;
    *) break ;;
  esac
done
[ $# -le 1 ] || die "$USAGE"
ASSETS="${1:-}"
for name in "${only[@]}"; do
  [[ " ${IMAGES[*]} " == *" $name "* ]] || die "no image $name; the images: ${IMAGES[*]}"
done
# want NAME...: whether one of these images is to be built (all are without --only).
want() {
  local name
  [ "${#only[@]}" -eq 0 ] && return 0
  for name in "$@"; do [[ " ${only[*]} " == *" $name "* ]] && return 0; done
  return 1
}
if [ -z "$ASSETS" ] && want kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd etcd-backup machine; then
  die "the Kubernetes binaries are needed (hack/setup-envtest.sh --node prints their directory); $USAGE"
fi

command -v buildah >/dev/null || die "buildah is missing; run hack/setup-local.sh (installs Debian's buildah)"
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
  die "a static /bin/busybox is missing; run hack/setup-local.sh (installs Debian's busybox-static)"
fi

# A private, overlay-free storage: nothing mounted, nothing shared with other buildah users.
STORE="${CACHE}/.buildah"
BUILDAH=(buildah --root "$STORE/root" --runroot "$STORE/run" --storage-driver vfs)
mkdir -p "$CACHE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Copies a dynamically linked binary and the libraries it loads into a root file system. A
# library the host lacks would only show at run time in the image: that fails here instead.
stage_with_libs() {
  local binary="$1" root="$2" dest="$3"
  install -D -m 0755 "$binary" "$root$dest"
  stage_libs "$binary" "$root"
}

# Copies the libraries a binary or library of the host loads into a root file system (not the file
# itself): for modules loaded at run time, such as iptables' extensions.
stage_libs() {
  local file="$1" root="$2" libs lib
  libs=$(ldd "$file" 2>/dev/null || true) # a static binary: "not a dynamic executable"
  if grep -q 'not found' <<<"$libs"; then
    die "$file needs libraries this host lacks: $(grep 'not found' <<<"$libs" | awk '{print $1}' | xargs); run hack/setup-local.sh"
  fi
  while read -r lib; do
    [ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done < <(grep -o '/[^ ]*' <<<"$libs")
}

# build NAME CONTEXT CONTAINERFILE [buildah args...]: builds and archives when inputs changed.
build() {
  local name="$1" context="$2" file="$3"; shift 3
  local archive digest root
  archive="$CACHE/$(echo "$name" | tr '/:' '__').tar"
  # Paths relative to the context: the context is a fresh temporary directory every run.
  digest=$( (cat "$file"; echo "$name $*"; cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . -type l -printf '%p -> %l\n' | sort) | sha256sum | cut -c1-64)
  if [ -f "$archive" ] && [ "$(cat "$archive.inputs" 2>/dev/null)" = "$digest" ]; then
    log "$name: up to date"; return
  fi
  # Every image is checked for shared libraries its files load but it lacks (hack/check-image-libs.sh).
  root="$context"
  [ -d "$context/rootfs" ] && root="$context/rootfs"
  hack/check-image-libs.sh "$root" "$name" || die "$name lacks shared libraries (listed above); stage them in hack/images.sh"
  log "$name: building"
  "${BUILDAH[@]}" bud --quiet --network none --layers=false -f "$file" -t "$name" "$@" "$context" >/dev/null ||
    die "buildah could not build $name from $file (its error is above); check \`df -h $CACHE\` and that $STORE is writable, then rerun \`make images\`"
  rm -f "$archive"
  "${BUILDAH[@]}" push --quiet "$name" "oci-archive:$archive:$name" >/dev/null
  "${BUILDAH[@]}" rmi "$name" >/dev/null
  echo "$digest" >"$archive.inputs"
}

# pause
if want pause; then
  command -v gcc >/dev/null || die "gcc is missing; run hack/setup-local.sh"
  mkdir -p "$work/pause"
  gcc -static -O2 -s -o "$work/pause/pause" images/pause/pause.c
  build "registry.k8s.io/pause:$PAUSE_VERSION" "$work/pause" images/pause/Containerfile
fi

# Kubernetes components (static Go binaries)
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  want "$c" || continue
  [ -x "$ASSETS/$c" ] || die "$ASSETS/$c is missing; run hack/setup-envtest.sh --node"
  mkdir -p "$work/$c"; cp "$ASSETS/$c" "$work/$c/"
  build "registry.k8s.io/$c:$K8S_VERSION" "$work/$c" images/kube-component/Containerfile --build-arg "COMPONENT=$c"
done

# stage_iptables ROOT: Debian's iptables (the backend the host uses) with its libraries, its
# extension modules and the libraries those load (libxt_statistic needs libm: without it every
# kube-proxy sync of a Service with two or more endpoints failed), and the
# iptables(-save|-restore) names kube-proxy and CNI call.
stage_iptables() {
  local root="$1" xtables tool module
  xtables=$(readlink -f /usr/sbin/iptables)
  stage_with_libs "$xtables" "$root" "/usr/sbin/$(basename "$xtables")"
  for tool in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf "$(basename "$xtables")" "$root/usr/sbin/$tool"
  done
  if [ -d /usr/lib/x86_64-linux-gnu/xtables ]; then
    mkdir -p "$root/usr/lib/x86_64-linux-gnu" && cp -a /usr/lib/x86_64-linux-gnu/xtables "$root/usr/lib/x86_64-linux-gnu/"
    for module in /usr/lib/x86_64-linux-gnu/xtables/*.so; do stage_libs "$module" "$root"; done
  fi
}

# unpack_openssh_server: unpacks Debian's openssh-server .deb into $work/openssh-server (once).
# The package is never installed: that would start an sshd on the host. `apt-get download`
# fetches the .deb into $CACHE/debs, where later builds find it.
unpack_openssh_server() {
  local debs="$CACHE/debs" dl="$work/apt" deb version sudo=""
  [ -d "$work/openssh-server" ] && return
  mkdir -p "$debs"
  deb=$(find "$debs" -maxdepth 1 -name 'openssh-server_*.deb' | sort -V | tail -n 1)
  if [ -z "$deb" ]; then
    log "downloading openssh-server's .deb into $debs (apt-get download)"
    mkdir -p "$dl"
    # apt downloads as the user _apt: give it a directory it can write (else a warning, as root).
    if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then chmod 0711 "$work" && chown _apt "$dl"; fi
    if ! (cd "$dl" && apt-get download -qq openssh-server 2>/dev/null); then
      # Usually apt's package lists are missing (a fresh container) or out of date.
      log "apt-get download failed; updating apt's package lists once (apt-get update)"
      [ "$(id -u)" = 0 ] || sudo="sudo"
      $sudo apt-get update -qq >&2 || die "apt-get update failed (its error is above)"
      (cd "$dl" && apt-get download -qq openssh-server) ||
        die "could not download openssh-server's .deb (apt's error is above); check the Debian mirror in /etc/apt/sources.list*"
    fi
    mv "$dl"/openssh-server_*.deb "$debs/"
    deb=$(find "$debs" -maxdepth 1 -name 'openssh-server_*.deb' | sort -V | tail -n 1)
  fi
  version=$(dpkg-deb -f "$deb" Version) # e.g. 1:9.2p1-2+deb12u10: epoch, upstream, Debian revision
  version=${version#*:} && version=${version%-*}
  [ "$version" = "$OPENSSH_VERSION" ] ||
    die "$deb holds OpenSSH $version, not $OPENSSH_VERSION (the bastion image's tag): update OPENSSH_VERSION and the bastion image provider-local is given, or remove the .deb"
  dpkg-deb -x "$deb" "$work/openssh-server"
}

# stage_sshd ROOT: OpenSSH's server (from the openssh-server .deb) with our sshd_config
# (images/sshd/sshd_config, key logins only), ssh-keygen (`ssh-keygen -A` writes the host keys at
# start), the shadow tools that add the login user (useradd, usermod, groupadd, with
# /etc/login.defs and an empty /etc/skel), and the accounts: root, sshd's privilege separation
# user (Debian's: home /run/sshd, which sshd requires to exist, be root's and not writable by
# others) and nobody. No PAM: useradd must set the password field to '*' (no password, not locked).
stage_sshd() {
  local root="$1" tool
  [ -x /usr/bin/ssh-keygen ] || die "/usr/bin/ssh-keygen is missing; run hack/setup-local.sh (installs openssh-client)"
  unpack_openssh_server
  stage_with_libs "$work/openssh-server/usr/sbin/sshd" "$root" /usr/sbin/sshd
  install -D -m 0644 "$work/openssh-server/etc/ssh/moduli" "$root/etc/ssh/moduli"
  install -D -m 0644 images/sshd/sshd_config "$root/etc/ssh/sshd_config"
  stage_with_libs /usr/bin/ssh-keygen "$root" /usr/bin/ssh-keygen
  for tool in useradd usermod groupadd nologin; do stage_with_libs "/usr/sbin/$tool" "$root" "/usr/sbin/$tool"; done
  install -D -m 0644 /etc/login.defs "$root/etc/login.defs"
  mkdir -p "$root/etc/skel" "$root/home" "$root/run/sshd" "$root/var/log"
  chmod 0755 "$root/run/sshd"
  install -d -m 0700 "$root/root"
  cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
sshd:x:100:65534::/run/sshd:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
  cat >"$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
  install -m 0600 /dev/null "$root/etc/shadow" && install -m 0600 /dev/null "$root/etc/gshadow"
  printf '%s:*:::::::\n' root sshd nobody >"$root/etc/shadow"
  printf '%s:*::\n' root nogroup >"$root/etc/gshadow"
}

# kube-proxy, with iptables next to it: the shoot's nodes run it as a DaemonSet
# (images/kube-proxy/Containerfile). The local cluster itself runs the binary on the host.
if want kube-proxy; then
  [ -x "$ASSETS/kube-proxy" ] || die "$ASSETS/kube-proxy is missing; run hack/setup-envtest.sh --node"
  mkdir -p "$work/kube-proxy/rootfs/usr/local/bin" "$work/kube-proxy/rootfs/run" "$work/kube-proxy/rootfs/tmp"
  cp "$ASSETS/kube-proxy" "$work/kube-proxy/rootfs/usr/local/bin/kube-proxy"
  stage_iptables "$work/kube-proxy/rootfs"
  # conntrack: kube-proxy drops the conntrack entries of a UDP Service's removed endpoints (the
  # cluster DNS's) with it; without it they stayed, and it logged "executable file not found".
  [ -x /usr/sbin/conntrack ] || die "/usr/sbin/conntrack is missing; run hack/setup-local.sh"
  stage_with_libs /usr/sbin/conntrack "$work/kube-proxy/rootfs" /usr/sbin/conntrack
  # Every tool kube-proxy (iptables mode) execs is in the image.
  for tool in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore conntrack; do
    [ -e "$work/kube-proxy/rootfs/usr/sbin/$tool" ] || die "kube-proxy's image lacks /usr/sbin/$tool"
  done
  build "registry.k8s.io/kube-proxy:$K8S_VERSION" "$work/kube-proxy" images/kube-proxy/Containerfile
fi

# etcd, tagged with the version of the Debian build it holds
if want etcd; then
  etcd_version=$("$ASSETS/etcd" --version | sed -n 's/^etcd Version: //p')
  [ -n "$etcd_version" ] || die "cannot read the version of $ASSETS/etcd"
  mkdir -p "$work/etcd/rootfs/bin"
  stage_with_libs "$ASSETS/etcd" "$work/etcd/rootfs" /usr/local/bin/etcd
  stage_with_libs "$ASSETS/etcdctl" "$work/etcd/rootfs" /usr/local/bin/etcdctl
  cp /bin/busybox "$work/etcd/rootfs/bin/busybox"
  for tool in sh rm mv ls cat mkdir chown chmod; do ln -s busybox "$work/etcd/rootfs/bin/$tool"; done
  build "registry.k8s.io/etcd:${etcd_version}-0" "$work/etcd" images/etcd/Containerfile
fi

# busybox, for tests and debugging
if want busybox; then
  mkdir -p "$work/busybox/rootfs/bin" "$work/busybox/rootfs/tmp" "$work/busybox/rootfs/www"
  cp /bin/busybox "$work/busybox/rootfs/bin/busybox"
  for tool in sh httpd wget nslookup cat echo ls sleep hostname timeout mkdir; do ln -s busybox "$work/busybox/rootfs/bin/$tool"; done
  chmod 1777 "$work/busybox/rootfs/tmp"
  build "gardener-rs.local/busybox:$BUSYBOX_VERSION" "$work/busybox" images/busybox/Containerfile
fi

# The bastion image (images/bastion/Containerfile): sshd and the login user's tools
# (stage_sshd), iptables for the init container that admits only the Bastion's ingress CIDRs, and
# busybox for the user data script. Tagged with the OpenSSH version.
if want bastion; then
  root="$work/bastion/rootfs"
  mkdir -p "$root/bin" "$root/tmp"
  chmod 1777 "$root/tmp"
  stage_sshd "$root"
  stage_iptables "$root"
  cp /bin/busybox "$root/bin/busybox"
  for tool in sh cat echo printf mkdir chmod chown id ls sleep rm mv cp ln touch grep sed test [ true false \
    env head tail tr cut wc base64 hostname ps kill stat date uname; do
    ln -s busybox "$root/bin/$tool"
  done
  build "gardener-rs.local/bastion:$OPENSSH_VERSION" "$work/bastion" images/bastion/Containerfile
fi

ours=(gardenlet gardener-scheduler gardener-controller-manager gardener-extension-provider-local cluster-dns etcd-backup konnectivity)
if ! want "${ours[@]}" machine; then
  echo "$CACHE"
  exit 0
fi

# Our binaries: gardener-rs.local/<binary>:v<version>, the version their --version prints.
# The dev profile is what `make test` already built (hack/build-bins.sh builds with its features),
# so CI compiles nothing twice; stripped, the binaries are 30-50 MB. IMAGE_PROFILE=release gives
# smaller, faster binaries for a real install.
profile="${IMAGE_PROFILE:-dev}"
log "cargo build --profile $profile (our binaries, hack/build-bins.sh)"
out_dir=$(hack/build-bins.sh "$profile")
# cluster-dns is the shoots' cluster DNS, konnectivity the tunnel's server (beside each shoot's
# kube-apiserver) and agents (on the shoots' nodes): the machines carry both images.
for bin in "${ours[@]}"; do
  version=$("$out_dir/$bin" --version | awk '{print $2}')
  [ -n "$version" ] || die "cannot read the version of $out_dir/$bin"
  if [ "$bin" = cluster-dns ]; then cluster_dns_archive="$CACHE/gardener-rs.local_cluster-dns_v$version.tar"; fi
  if [ "$bin" = konnectivity ]; then konnectivity_archive="$CACHE/gardener-rs.local_konnectivity_v$version.tar"; fi
  want "$bin" || continue
  root="$work/$bin/rootfs"
  stage_with_libs "$out_dir/$bin" "$root" "/usr/local/bin/$bin"
  strip "$root/usr/local/bin/$bin"
  # provider-local's image also runs in shoots as the pod routes agent (crates/provider-local/src/
  # pod_routes.rs), which changes its node's routing table with iproute2's ip.
  if [ "$bin" = gardener-extension-provider-local ]; then stage_with_libs /usr/sbin/ip "$root" /usr/sbin/ip; fi
  # etcd-backup's restore runs `etcdctl snapshot restore` and a temporary etcd that applies the
  # deltas: the same builds as the etcd image.
  if [ "$bin" = etcd-backup ]; then
    [ -n "$ASSETS" ] || die "the etcd-backup image needs the Kubernetes binaries' directory (etcd, etcdctl)"
    stage_with_libs "$ASSETS/etcd" "$root" /usr/local/bin/etcd
    stage_with_libs "$ASSETS/etcdctl" "$root" /usr/local/bin/etcdctl
  fi
  ln -s "usr/local/bin/$bin" "$root/entrypoint"
  build "gardener-rs.local/$bin:v$version" "$work/$bin" images/gardener-component/Containerfile
done
if ! want machine; then
  echo "$CACHE"
  exit 0
fi

# machine_os_release VERSION: the /etc/os-release of machine image version VERSION. The kubelet
# reports its PRETTY_NAME as the Node's status.nodeInfo.osImage, which tells the versions apart.
machine_os_release() {
  cat <<EOF
NAME="gardener-rs local machine"
ID=gardener-rs-local
VERSION_ID=$1
VERSION="$1"
PRETTY_NAME="gardener-rs local machine $1"
EOF
}

# The machine image (images/machine/Containerfile), version ${MACHINE_VERSIONS[0]}: machine-init,
# the kubelet, and Debian's containerd, runc, CNI plugins, bash, iptables, busybox and sshd
# (stage_sshd), with the pause, busybox, kube-proxy, cluster-dns and konnectivity images inside for the
# machine's containerd (it never pulls), and /etc/os-release naming the version.
# Tagged with the Kubernetes version of its kubelet.
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
stage_sshd "$root"
cp /bin/busybox "$root/bin/busybox"
# id and chown: the provisioning script adds the login user and hands it its authorized_keys.
for tool in sh cat chmod chown id mkdir rm mv ls ln head tail base64 sleep seq echo mount umount find du df grep sed \
  awk tr cut wc date hostname ps kill touch stat uname nsenter losetup readlink sync true false test env; do
  [ -e "$root/bin/$tool" ] || ln -s busybox "$root/bin/$tool"
done
pause_archive="$CACHE/registry.k8s.io_pause_$PAUSE_VERSION.tar"
busybox_archive="$CACHE/gardener-rs.local_busybox_$BUSYBOX_VERSION.tar"
kube_proxy_archive="$CACHE/registry.k8s.io_kube-proxy_$K8S_VERSION.tar"
for archive in "$pause_archive" "$busybox_archive" "$kube_proxy_archive" "$cluster_dns_archive" "$konnectivity_archive"; do
  [ -f "$archive" ] || die "$archive is missing; build it first (hack/images.sh without --only builds all)"
done
cp "$pause_archive" "$root/var/lib/machine/images/pause.tar"
cp "$busybox_archive" "$root/var/lib/machine/images/busybox.tar"
cp "$kube_proxy_archive" "$root/var/lib/machine/images/kube-proxy.tar"
cp "$cluster_dns_archive" "$root/var/lib/machine/images/cluster-dns.tar"
cp "$konnectivity_archive" "$root/var/lib/machine/images/konnectivity.tar"
machine_os_release "${MACHINE_VERSIONS[0]}" >"$root/etc/os-release"
build "$MACHINE_IMAGE" "$work/machine" images/machine/Containerfile

# The further machine image versions (images/machine/version/Containerfile): FROM the first
# version's OCI archive, one layer with their own /etc/os-release on top. The first version's
# layer is shared (the same digest in both archives), so containerd and the local registry hold it
# once. The first version's inputs digest is part of the context: a rebuilt base rebuilds these.
machine_archive="$CACHE/$(echo "$MACHINE_IMAGE" | tr '/:' '__').tar"
for version in "${MACHINE_VERSIONS[@]:1}"; do
  context="$work/machine-$version"
  mkdir -p "$context"
  machine_os_release "$version" >"$context/os-release"
  cp "$machine_archive.inputs" "$context/base.inputs"
  build "$MACHINE_IMAGE-local.$version" "$context" images/machine/version/Containerfile \
    --pull=always --build-arg "BASE=oci-archive:$machine_archive"
  # The build copied the base image out of its archive into the store: it is not needed there.
  "${BUILDAH[@]}" rmi "$MACHINE_IMAGE" >/dev/null 2>&1 || true
done

echo "$CACHE"
