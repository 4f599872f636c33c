#!/usr/bin/env bash
# Installs the host packages the local cluster needs, from Debian: containerd and runc (the
# container runtime), the CNI plugins, buildah (image builds), a static busybox (test and
# etcd images), iptables and nftables (kube-proxy, the egress guard, teardown), iproute2, and
# OpenSSH's client (ssh for the e2e tests; ssh-keygen also goes into the machine and bastion
# images) and libwrap0, the one library of the images' sshd a host without openssh-server lacks
# (hack/images.sh unpacks sshd from the openssh-server .deb: installing that package would start
# an sshd on the host).
# Idempotent: installs only what is missing.
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins buildah busybox-static iptables nftables iproute2 gcc libc6-dev
  openssh-client libwrap0)

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
