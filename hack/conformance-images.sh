#!/usr/bin/env bash
# Builds the ten images (eleven tags) the Kubernetes 1.20 `[Conformance]` tests run, offline, and
# pushes them into the local cluster's image registry; prints the path of the KUBE_TEST_REPO_LIST
# file that points the suite at them (docs/conformance.md, "Images").
#   hack/conformance-images.sh <kubernetes-source-dir>
# The source directory is the 1.20.2 tree hack/conformance.sh unpacks, with agnhost, nonewprivs
# and sample-apiserver already built into _output/bin. Images come from Debian bookworm packages
# (mmdebstrap) or from that source (buildah, as root). Root file systems are cached under
# $CONFORMANCE_CACHE/images; a tag the registry already serves is not built again
# (CONFORMANCE_IMAGES_FORCE=1 rebuilds all).
#
# Names: the machines pull `registry.k8s.io/*` from the local registry (docs/machines.md,
# "Pulling images"), so every image goes to `registry.k8s.io/conformance/<name>:<tag>` and the
# repo list maps each of the suite's registries there. The registries the negative tests rely on
# (invalidRegistry, gcAuthenticatedRegistry, privateRegistry) keep their defaults.
set -euo pipefail
usage="usage: hack/conformance-images.sh <kubernetes-source-dir>"
SRC="$(cd "${1:?$usage}" && pwd)"
cd "$(dirname "$0")/.."
STATE="${LOCAL_CLUSTER_STATE:-$PWD/.local}"
CACHE="${CONFORMANCE_CACHE:-$HOME/.cache/gardener-rs/conformance}"
REGISTRY="${CONFORMANCE_REGISTRY:-10.250.0.1:5000}"
# Pushes go to the registry's writer: loopback only, with the credentials `up` keeps; the
# registry on the node address is read-only (docs/local-setup.md, "The image registry").
WRITER="${CONFORMANCE_REGISTRY_WRITER:-127.0.0.1:5001}"
PREFIX="registry.k8s.io/conformance"
log() { echo "conformance-images: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (buildah and mmdebstrap build root file systems)"
for tool in buildah mmdebstrap gcc curl; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install buildah mmdebstrap gcc curl)"
done
B="$SRC/_output/bin"
for bin in agnhost nonewprivs sample-apiserver; do
  [ -x "$B/$bin" ] || die "$B/$bin is missing; hack/conformance.sh builds it"
done
CA="$STATE/pki/ca/ca.crt"
[ -f "$CA" ] || die "$CA is missing: the local cluster is not up (make local-up)"
curl -fsS --cacert "$CA" -o /dev/null "https://$REGISTRY/v2/" ||
  die "the local registry https://$REGISTRY does not answer (make local-up)"
AUTH="$STATE/registry-writer/auth.json" # mode 0600, written by `local-cluster up`
[ -f "$AUTH" ] || die "$AUTH is missing: the local cluster predates the registry writer (make local-up)"

W="$CACHE/images"
mkdir -p "$W" "$CACHE/certs"
cp "$CA" "$CACHE/certs/ca.crt" # buildah --cert-dir reads every *.crt in the directory
CERTS=(--cert-dir "$CACHE/certs")
MIRROR="${MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)}"
PATHENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

CS=()
trap '[ ${#CS[@]} -eq 0 ] || buildah rm "${CS[@]}" >/dev/null' EXIT # the working containers
c=""
new() { c=$(buildah from -q "${CERTS[@]}" "$1"); CS+=("$c"); }
# rootfs NAME [PACKAGES]: a bookworm minbase root file system as a tarball, cached.
rootfs() {
  local name="$1" packages="${2:-}"
  [ -f "$W/$name.tar" ] && return 0
  log "root file system $name${packages:+ ($packages)}"
  # shellcheck disable=SC2086 # MIRROR is one URL or empty
  mmdebstrap -q --variant=minbase ${packages:+--include=$packages} bookworm "$W/$name.tmp.tar" $MIRROR >&2
  mv "$W/$name.tmp.tar" "$W/$name.tar"
}
# present NAME:TAG: whether the registry serves the tag already.
present() {
  [ "${CONFORMANCE_IMAGES_FORCE:-}" != 1 ] || return 1
  curl -fs --cacert "$CA" -o /dev/null -I \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
    "https://$REGISTRY/v2/$PREFIX/${1%%:*}/manifests/${1##*:}"
}
# push CONTAINER NAME:TAG: commits the container and pushes it.
push() {
  buildah commit -q "$1" "$REGISTRY/$PREFIX/$2" >/dev/null
  buildah push -q "${CERTS[@]}" --authfile "$AUTH" "$REGISTRY/$PREFIX/$2" "docker://$WRITER/$PREFIX/$2"
  log "pushed $PREFIX/$2"
}

# agnhost 2.21: the source tree's agnhost is 2.25 (test/images/agnhost/VERSION), a superset;
# tagged 2.21 because test/utils/image/manifest.go asks for it.
if ! present agnhost:2.21; then
  rootfs agnhost bash,curl,netcat-openbsd,iproute2,iperf,bind9-dnsutils,procps
  new scratch
  buildah add -q "$c" "$W/agnhost.tar" /
  buildah copy -q "$c" "$B/agnhost" "$SRC/test/images/agnhost/porter/localhost.crt" \
    "$SRC/test/images/agnhost/porter/localhost.key" /
  buildah run --network none "$c" -- sh -c 'mkdir -p /uploads && ln -sf agnhost /agnhost-2'
  buildah config --entrypoint '["/agnhost"]' --cmd pause --workingdir / \
    --port 80 --port 8080 --port 8081 --port 9376 "$c"
  push "$c" agnhost:2.21
fi

# nautilus 1.0: agnhost with the update-demo files, serving / on :80.
if ! present nautilus:1.0; then
  new "$REGISTRY/$PREFIX/agnhost:2.21"
  buildah copy -q "$c" "$SRC/test/images/nautilus/html/nautilus.jpg" "$SRC/test/images/nautilus/html/data.json" /
  buildah config --cmd test-webserver "$c"
  push "$c" nautilus:1.0
fi

# busybox 1.29 from Debian's busybox-static, with root and nobody (65534).
if ! present busybox:1.29; then
  (
    cd "$W" && rm -rf bb busybox-static_*.deb && mkdir bb
    apt-get download -q busybox-static >/dev/null 2>&1 && dpkg-deb -x busybox-static_*.deb bb
    cd bb && mkdir -p tmp etc root && chmod 1777 tmp
    for a in $(./bin/busybox --list); do [ -e "bin/$a" ] || ln -s busybox "bin/$a"; done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >etc/passwd
    printf 'root:x:0:\nnogroup:x:65534:\n' >etc/group
  )
  new scratch
  buildah copy -q "$c" "$W/bb" /
  buildah config --env "$PATHENV" --cmd sh "$c"
  push "$c" busybox:1.29
fi

# pause 3.2 from the source's build/pause/linux/pause.c.
if ! present pause:3.2; then
  gcc -Os -Wall -Werror -static -DVERSION=v3.2-0 -o "$W/pause" "$SRC/build/pause/linux/pause.c"
  new scratch
  buildah copy -q "$c" "$W/pause" /pause
  buildah config --entrypoint '["/pause"]' "$c"
  push "$c" pause:3.2
fi

# nonewprivs 1.0: a setuid-root nnp printing its effective uid.
if ! present nonewprivs:1.0; then
  new scratch
  buildah copy -q --chmod 4755 "$c" "$B/nonewprivs" /usr/local/bin/nnp
  buildah config --env "$PATHENV" --cmd nnp "$c"
  push "$c" nonewprivs:1.0
fi

# httpd 2.4.38-alpine and 2.4.39-alpine from Debian's apache2; the StatefulSet tests move
# /usr/local/apache2/htdocs/index.html away to fail readiness, so that is the document root.
# The two tags differ by a label: rolling updates compare image names.
if ! present httpd:2.4.38-alpine || ! present httpd:2.4.39-alpine; then
  rootfs httpd apache2
  new scratch
  buildah add -q "$c" "$W/httpd.tar" /
  # shellcheck disable=SC2016 # expanded inside the image
  buildah run --network none "$c" -- sh -c 'mkdir -p /usr/local/apache2/htdocs &&
    echo "<html><body><h1>It works!</h1></body></html>" >/usr/local/apache2/htdocs/index.html &&
    sed -i "s#/var/www/html#/usr/local/apache2/htdocs#; s#ErrorLog .*#ErrorLog /dev/stderr#; s#CustomLog .*#CustomLog /dev/stdout combined#" /etc/apache2/sites-available/000-default.conf &&
    sed -i "s#/var/www/#/usr/local/apache2/htdocs/#" /etc/apache2/apache2.conf &&
    printf "#!/bin/sh\n. /etc/apache2/envvars\nmkdir -p \$APACHE_RUN_DIR \$APACHE_LOCK_DIR \$APACHE_LOG_DIR\nexec apache2 -DFOREGROUND\n" >/usr/local/bin/httpd-foreground &&
    chmod +x /usr/local/bin/httpd-foreground'
  buildah config --cmd httpd-foreground --port 80 "$c"
  buildah config --label e2e-tag=2.4.38 "$c"
  push "$c" httpd:2.4.38-alpine
  buildah config --label e2e-tag=2.4.39 "$c"
  push "$c" httpd:2.4.39-alpine
fi

# nginx 1.14-alpine from Debian's nginx-light (the tests only need it to keep running).
if ! present nginx:1.14-alpine; then
  rootfs nginx nginx-light
  new scratch
  buildah add -q "$c" "$W/nginx.tar" /
  buildah config --cmd '["nginx","-g","daemon off;"]' --port 80 "$c"
  push "$c" nginx:1.14-alpine
fi

# jessie-dnsutils 1.0: a bookworm root file system with dig (the name is kept).
if ! present jessie-dnsutils:1.0; then
  rootfs dnsutils bind9-dnsutils
  new scratch
  buildah add -q "$c" "$W/dnsutils.tar" /
  buildah config --cmd sh "$c"
  push "$c" jessie-dnsutils:1.0
fi

# etcd 3.4.13-0 from Debian's etcd-server (3.4.23), at /usr/local/bin/etcd where the
# aggregator test runs it.
if ! present etcd:3.4.13-0; then
  rootfs etcd etcd-server
  new scratch
  buildah add -q "$c" "$W/etcd.tar" /
  buildah run --network none "$c" -- sh -c 'ln -sf /usr/bin/etcd /usr/local/bin/etcd && mkdir -p /var/lib/etcd'
  buildah config --workingdir /var/lib/etcd "$c"
  push "$c" etcd:3.4.13-0
fi

# sample-apiserver 1.17, built from the 1.20.2 staging tree.
if ! present sample-apiserver:1.17; then
  rootfs base
  new scratch
  buildah add -q "$c" "$W/base.tar" /
  buildah copy -q "$c" "$B/sample-apiserver" /sample-apiserver
  buildah config --entrypoint '["/sample-apiserver"]' "$c"
  push "$c" sample-apiserver:1.17
fi

list="$CACHE/repo-list.yaml"
{
  echo "# KUBE_TEST_REPO_LIST for the local registry; written by hack/conformance-images.sh."
  for key in dockerLibraryRegistry e2eRegistry promoterE2eRegistry gcRegistry buildImageRegistry \
    sampleRegistry gcrReleaseRegistry dockerGluster; do
    echo "$key: $PREFIX"
  done
  echo "e2eVolumeRegistry: $PREFIX/volume"
  echo "sigStorageRegistry: $PREFIX/sig-storage"
} >"$list"
echo "$list"
