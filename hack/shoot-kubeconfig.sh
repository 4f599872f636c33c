#!/usr/bin/env bash
# Prints an admin kubeconfig for a shoot on the local garden: hack/shoot-kubeconfig.sh <project> <shoot>.
# It is the admin kubeconfig gardenlet keeps in the shoot's seed namespace (operator access on
# the local garden, where garden and seed are one cluster); its server is the shoot's
# kube-apiserver Service, reachable from this host.
set -euo pipefail
cd "$(dirname "$0")/.."
project="${1:?usage: hack/shoot-kubeconfig.sh <project> <shoot>}"
shoot="${2:?usage: hack/shoot-kubeconfig.sh <project> <shoot>}"
KUBECONFIG_FILE="${KUBECONFIG_FILE:-.local/kubeconfig}"
KUBECTL="${KUBECTL:-.local/bin/kubectl}"
die() { echo "shoot-kubeconfig: error: $*" >&2; exit 1; }
[ -f "$KUBECONFIG_FILE" ] || die "$KUBECONFIG_FILE is missing; run \`make local-up\`"
ns="shoot--${project}--${shoot}"
data=$("$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$ns" get secret kubeconfig-admin -o 'jsonpath={.data.kubeconfig}' 2>/dev/null) ||
  die "shoot $project/$shoot has no admin kubeconfig in $ns yet (is it created? \`kubectl -n garden-$project get shoot $shoot\`)"
echo "$data" | base64 -d
