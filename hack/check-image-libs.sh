#!/usr/bin/env bash
# Checks that every ELF file in an image's root file system finds, inside that root, the program
# interpreter and every shared library it names (DT_NEEDED), as the dynamic linker in the image
# will look for them: RPATH/RUNPATH, then the default directories. Executables and the libraries
# and modules loaded at run time (iptables' extensions, dlopen'ed by iptables-restore) alike: a
# library that is missing in the image fails here, at build time, not in a shoot.
#
# Usage: hack/check-image-libs.sh ROOT [NAME]
#   ROOT  the directory that becomes the image's `/`
#   NAME  the image's name, for the error message
# Exit status 0 when everything resolves; 1 with one line per missing library otherwise.
set -euo pipefail

root="${1:?usage: hack/check-image-libs.sh ROOT [NAME]}"
name="${2:-$root}"
[ -d "$root" ] || { echo "check-image-libs: $root is not a directory" >&2; exit 2; }
command -v readelf >/dev/null || { echo "check-image-libs: readelf is missing; run hack/setup-local.sh (installs binutils)" >&2; exit 2; }

# The dynamic linker's default directories on Debian x86_64 (no ld.so.cache in our images).
DEFAULT_DIRS=(/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib)

# found PATH: whether PATH (absolute inside the image) exists there, following links inside the
# root (an absolute link target is taken relative to the root, as in the container).
found() {
  local path="$1" hops=0 target
  while [ -L "$root$path" ] && [ "$hops" -lt 40 ]; do
    target=$(readlink "$root$path")
    case "$target" in
      /*) path="$target" ;;
      *) path="$(dirname "$path")/$target" ;;
    esac
    hops=$((hops + 1))
  done
  [ -e "$root$path" ] && [ ! -L "$root$path" ]
}

missing=()
while IFS= read -r -d '' file; do
  [ "$(head -c 4 "$file" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ] || continue
  inside="/${file#"$root"/}"
  dynamic=$(readelf -d "$file" 2>/dev/null || true)
  interp=$(readelf -l "$file" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  if [ -n "$interp" ] && ! found "$interp"; then
    missing+=("$inside: program interpreter $interp")
  fi
  dirs=()
  while IFS= read -r entry; do
    IFS=: read -r -a extra <<<"$entry"
    for d in "${extra[@]}"; do dirs+=("${d//\$ORIGIN/$(dirname "$inside")}"); done
  done < <(sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' <<<"$dynamic")
  dirs+=("${DEFAULT_DIRS[@]}")
  while IFS= read -r lib; do
    ok=""
    for d in "${dirs[@]}"; do
      if found "$d/$lib"; then ok=1; break; fi
    done
    [ -n "$ok" ] || missing+=("$inside needs $lib")
  done < <(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dynamic")
done < <(find "$root" -type f -print0)

if [ "${#missing[@]}" -gt 0 ]; then
  echo "check-image-libs: image $name lacks shared libraries its files load:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
