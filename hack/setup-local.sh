#!/usr/bin/env bash
# Installs the host packages the local cluster needs, from Debian: containerd and runc (the
# container runtime), the CNI plugins, buildah (image builds), a static busybox (test and
# etcd images), iptables and nftables (kube-proxy, the egress guard, teardown), iproute2, and
# OpenSSH's client (ssh for the e2e tests; ssh-keygen also goes into the machine and bastion
# images) and libwrap0, the one library of the images' sshd a host without openssh-server lacks
# (hack/images.sh unpacks sshd from the openssh-server .deb: installing that package would start
# an sshd on the host), and binutils (strip, and readelf for hack/check-image-libs.sh). Also unpacks Debian's docker-registry (CNCF distribution 2.8), the
# registry `local-cluster up` runs for the machines, into $REGISTRY_DIR (default
# ~/.cache/gardener-rs/docker-registry): downloaded as a .deb and never installed, since its
# postinst would start a registry service on the host listening on :5000.
# Idempotent: installs and downloads only what is missing.
set -euo pipefail

# conntrack: kube-proxy calls it to drop a UDP Service's stale entries (the local cluster's on the
# host; hack/images.sh copies it into the kube-proxy image).
# mmdebstrap and curl: hack/conformance-images.sh (the conformance case of make e2e) builds the
# suite's images from Debian packages.
PACKAGES=(containerd runc containernetworking-plugins buildah busybox-static iptables nftables iproute2 gcc libc6-dev
  conntrack openssh-client libwrap0 binutils mmdebstrap curl)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-local: installing ${missing[*]}" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  # --no-install-recommends: podman's CNI config and similar extras stay out.
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  # Debian starts containerd as a service where systemd runs; the local cluster runs its own.
  $sudo systemctl disable --now containerd >/dev/null 2>&1 || true
fi

# docker-registry: `apt-get download` into $REGISTRY_DIR, then `dpkg-deb -x` into $REGISTRY_DIR/root
# (local-cluster runs $REGISTRY_DIR/root/usr/bin/docker-registry, a Go binary needing only libc).
REGISTRY_DIR="${REGISTRY_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-rs/docker-registry}"
if [ ! -x "$REGISTRY_DIR/root/usr/bin/docker-registry" ]; then
  mkdir -p "$REGISTRY_DIR"
  deb=$(find "$REGISTRY_DIR" -maxdepth 1 -name 'docker-registry_*.deb' | sort -V | tail -n 1)
  if [ -z "$deb" ]; then
    echo "setup-local: downloading docker-registry's .deb into $REGISTRY_DIR (apt-get download)" >&2
    dl=$(mktemp -d)
    trap 'rm -rf "$dl"' EXIT
    # apt downloads as the user _apt: give it a directory it can write (else a warning, as root).
    if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then chmod 0711 "$dl" && chown _apt "$dl"; fi
    if ! (cd "$dl" && apt-get download -qq docker-registry 2>/dev/null); then
      sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
      echo "setup-local: apt-get download failed; updating apt's package lists once (apt-get update)" >&2
      $sudo apt-get update -qq >&2
      (cd "$dl" && apt-get download -qq docker-registry) || {
        echo "setup-local: error: could not download docker-registry's .deb (apt's error is above)" >&2
        exit 1
      }
    fi
    mv "$dl"/docker-registry_*.deb "$REGISTRY_DIR/"
    deb=$(find "$REGISTRY_DIR" -maxdepth 1 -name 'docker-registry_*.deb' | sort -V | tail -n 1)
  fi
  rm -rf "$REGISTRY_DIR/root"
  dpkg-deb -x "$deb" "$REGISTRY_DIR/root"
  echo "setup-local: unpacked $(basename "$deb") into $REGISTRY_DIR/root" >&2
fi
