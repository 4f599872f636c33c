#!/usr/bin/env bash
# Provides haproxy (Debian bookworm's 2.6), the proxy of the seed's SNI entry point
# (crates/shoot-entry), and prints the path of its binary: the entry point's image takes it from
# there (hack/images.sh) and so do the tests (`export HAPROXY=$(hack/setup-haproxy.sh)`, which
# `make test` does). The haproxy .deb is downloaded with `apt-get download` and unpacked, never
# installed: its postinst would start a haproxy service on the host. The libraries it loads that a
# host may lack (Lua 5.3, the OpenTracing wrapper) are installed as packages: plain libraries,
# nothing runs. Idempotent; cached in $HAPROXY_DIR (default ~/.cache/gardener-rs/haproxy).
set -euo pipefail
HAPROXY_DIR="${HAPROXY_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-rs/haproxy}"
LIBS=(liblua5.3-0 libopentracing-c-wrapper0)
log() { echo "setup-haproxy: $*" >&2; }
die() { echo "setup-haproxy: error: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
updated=""
apt_update() { [ -n "$updated" ] && return; log "updating apt's package lists once (apt-get update)"; $sudo apt-get update -qq >&2; updated=1; }

missing=()
for p in "${LIBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 2>/dev/null ||
    { apt_update; $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; }
fi

binary="$HAPROXY_DIR/root/usr/sbin/haproxy"
if [ ! -x "$binary" ]; then
  mkdir -p "$HAPROXY_DIR"
  deb=$(find "$HAPROXY_DIR" -maxdepth 1 -name 'haproxy_*.deb' | sort -V | tail -n 1)
  if [ -z "$deb" ]; then
    log "downloading haproxy's .deb into $HAPROXY_DIR (apt-get download)"
    dl=$(mktemp -d); chmod 755 "$dl"
    (cd "$dl" && apt-get download -qq haproxy 2>/dev/null) || { apt_update; (cd "$dl" && apt-get download -qq haproxy); } ||
      die "could not download haproxy's .deb (apt's error is above); check the Debian mirror in /etc/apt/sources.list*"
    mv "$dl"/haproxy_*.deb "$HAPROXY_DIR/"; rm -rf "$dl"
    deb=$(find "$HAPROXY_DIR" -maxdepth 1 -name 'haproxy_*.deb' | sort -V | tail -n 1)
  fi
  rm -rf "$HAPROXY_DIR/root"
  dpkg-deb -x "$deb" "$HAPROXY_DIR/root"
fi
if ldd "$binary" | grep -q 'not found'; then
  die "$binary needs libraries this host lacks: $(ldd "$binary" | grep 'not found' | awk '{print $1}' | xargs)"
fi
"$binary" -v >/dev/null || die "$binary does not run"
echo "$binary"
