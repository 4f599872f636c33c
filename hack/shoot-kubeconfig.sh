#!/usr/bin/env bash
# Prints a short-lived admin kubeconfig for a shoot: hack/shoot-kubeconfig.sh <project> <shoot>.
#
# It does what a user does by hand (docs/local-setup.md, "Access the shoot"): make a key pair,
# submit the public key in an AdminKubeconfigRequest, wait until the controller-manager has
# signed it with the shoot's client CA, and add the private key to the kubeconfig from the
# request's status. The key never leaves this machine; the certificate's user is whoever
# KUBECONFIG_FILE authenticates as. On the local garden the shoot's DNS name resolves only
# through the local cluster's DNS, so when this host cannot resolve it the kubeconfig points at
# the shoot API's Service address, which the serving certificate also names.
#   EXPIRATION_SECONDS (default 3600, at least 600) sets the validity.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: hack/shoot-kubeconfig.sh <project> <shoot>"
project="${1:?$usage}"
shoot="${2:?$usage}"
KUBECONFIG_FILE="${KUBECONFIG_FILE:-.local/kubeconfig}"
KUBECTL="${KUBECTL:-.local/bin/kubectl}"
EXPIRATION_SECONDS="${EXPIRATION_SECONDS:-3600}"
die() { echo "shoot-kubeconfig: error: $*" >&2; exit 1; }
[ -f "$KUBECONFIG_FILE" ] || die "$KUBECONFIG_FILE is missing; run \`make local-up\`"
command -v openssl >/dev/null || die "openssl is missing (apt-get install openssl)"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# Project garden is the garden namespace itself (the shoots of ManagedSeeds), with or without a
# Project object.
if [ "$project" = garden ] && ! k get project garden >/dev/null 2>&1; then
  ns=garden
else
  ns=$(k get project "$project" -o 'jsonpath={.spec.namespace}' 2>/dev/null) || die "project $project does not exist"
fi
[ -n "$ns" ] || die "project $project has no namespace yet"
k -n "$ns" get shoot "$shoot" >/dev/null 2>&1 || die "shoot $project/$shoot does not exist"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.pem" 2>/dev/null
openssl pkey -in "$work/key.pem" -pubout -out "$work/public.pem"
request="$shoot-$(date +%s)-$$"
{
  echo "apiVersion: authentication.gardener.cloud/v1alpha1"
  echo "kind: AdminKubeconfigRequest"
  echo "metadata: {name: $request, namespace: $ns}"
  echo "spec:"
  echo "  shootRef: {name: $shoot}"
  echo "  expirationSeconds: $EXPIRATION_SECONDS"
  echo "  publicKey: |"
  sed 's/^/    /' "$work/public.pem"
} | k create -f - >/dev/null

phase=""
for _ in $(seq 1 120); do
  phase=$(k -n "$ns" get adminkubeconfigrequest "$request" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
  case "$phase" in
    Issued) break ;;
    Failed) die "AdminKubeconfigRequest $ns/$request failed: $(k -n "$ns" get adminkubeconfigrequest "$request" -o 'jsonpath={.status.message}')" ;;
  esac
  sleep 0.5
done
[ "$phase" = Issued ] || die "AdminKubeconfigRequest $ns/$request was not issued within 60 s (phase ${phase:-none}: $(k -n "$ns" get adminkubeconfigrequest "$request" -o 'jsonpath={.status.message}' 2>/dev/null))"

k -n "$ns" get adminkubeconfigrequest "$request" -o 'jsonpath={.status.kubeconfig}' > "$work/kubeconfig"
kc() { "$KUBECTL" --kubeconfig "$work/kubeconfig" "$@"; }
user=$(kc config view -o 'jsonpath={.users[0].name}')
kc config set-credentials "$user" --client-key="$work/key.pem" --embed-certs=true >/dev/null
server=$(kc config view -o 'jsonpath={.clusters[0].cluster.server}')
host=${server#https://}; host=${host%%[:/]*}
if ! getent hosts "$host" >/dev/null 2>&1; then
  service=$(k -n "$ns" get shoot "$shoot" -o 'jsonpath={.status.advertisedAddresses[?(@.name=="service")].url}')
  [ -n "$service" ] || die "this host cannot resolve $host and the shoot advertises no service address"
  kc config set-cluster "$(kc config view -o 'jsonpath={.clusters[0].name}')" --server="$service" >/dev/null
fi
cat "$work/kubeconfig"
