#!/usr/bin/env bash
# Installs the garden on the local cluster with Helm, from charts/: the control plane (CRDs,
# gardener-scheduler), gardenlet (registers the seed `local`) and provider-local, with the
# values in hack/local-values/. Waits until every pod is Ready and the Seed is GardenletReady.
# Idempotent: an installed release is upgraded. Needs `local-cluster up` (make local-up runs both).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECONFIG_FILE="${1:-.local/kubeconfig}"
KUBECTL="${KUBECTL:-.local/bin/kubectl}"
NS=garden
log() { echo "local-garden: $*" >&2; }
die() { echo "local-garden: error: $*" >&2; exit 1; }

[ -f "$KUBECONFIG_FILE" ] || die "$KUBECONFIG_FILE is missing; run \`make local-up\`"
[ -x "$KUBECTL" ] || die "$KUBECTL is missing; run \`make local-up\`"
hack/setup-helm.sh

release() { # release NAME CHART
  local start=$SECONDS
  python3 hack/helm.py upgrade "$1" "charts/gardener/$2" --namespace "$NS" --kubeconfig "$KUBECONFIG_FILE" \
    --values "hack/local-values/$2.yaml" --timeout 300 >/dev/null ||
    die "helm could not install $1 (its error is above); \`$KUBECTL --kubeconfig $KUBECONFIG_FILE -n $NS get pods\` and the pods' logs say more"
  log "$1 installed and Ready in $((SECONDS - start)) s"
}

release gardener-controlplane controlplane
release gardenlet gardenlet
release gardener-extension-provider-local provider-local

start=$SECONDS
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" wait seed/local --for=condition=GardenletReady --timeout=120s >/dev/null ||
  die "the Seed local did not become GardenletReady; see \`$KUBECTL --kubeconfig $KUBECONFIG_FILE -n $NS logs deploy/gardenlet\`"
log "Seed local is GardenletReady after $((SECONDS - start)) s"
