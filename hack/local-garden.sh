#!/usr/bin/env bash
# Installs the garden on the local cluster with Helm, from charts/: the control plane (CRDs,
# gardener-scheduler, gardener-controller-manager), then registers provider-local (admission
# refuses a Seed no registered controller serves), then gardenlet (registers the seed `local` and
# installs provider-local there), with the values in hack/local-values/.
# Waits until every pod is Ready, the Seed is GardenletReady and provider-local is Healthy.
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

release() { # release NAME CHART [--set-json K=JSON]...
  local start=$SECONDS
  python3 hack/helm.py upgrade "$1" "charts/gardener/$2" --namespace "$NS" --kubeconfig "$KUBECONFIG_FILE" \
    --values "hack/local-values/$2.yaml" "${@:3}" --timeout 300 >/dev/null ||
    die "helm could not install $1 (its error is above); \`$KUBECTL --kubeconfig $KUBECONFIG_FILE -n $NS get pods\` and the pods' logs say more"
  log "$1 installed and Ready in $((SECONDS - start)) s"
}

# The seeds' backup store (docs/migration.md): a directory of the host, in the state directory
# (so `local-cluster down` removes it), owned by the UID our images run as. provider-local keeps
# backup buckets there, gardenlet writes final etcd snapshots into them, etcd restores from them,
# and the machines of ManagedSeed shoots mount it (pools with providerConfig.backupStore), so
# their gardenlet and provider-local see the same files at the same path.
state_dir=$(cd "$(dirname "$KUBECONFIG_FILE")" && pwd)
backup_dir="$state_dir/backup"
mkdir -p "$backup_dir"
chown 65532:65532 "$backup_dir"
backup_volume='[{"name": "backup", "hostPath": {"path": "'"$backup_dir"'", "type": "Directory"}}]'
backup_mount='[{"name": "backup", "mountPath": "'"$backup_dir"'"}]'

# The release namespace holds the admission server itself (with failurePolicy Fail, its own pods
# must not need it) and gardenlet with the host's backup directory (hostPath, which pod security
# `baseline` refuses): it is `privileged`, so the server's pod webhook never sees it
# (docs/deployment.md, docs/admission.md "Pod security"). Before the first release: Helm finds it.
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" apply -f - >/dev/null <<EOF || die "could not apply namespace $NS"
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
  labels:
    pod-security.kubernetes.io/enforce: privileged
EOF
# The CA that signs the admission server's certificates (hack/local-values/controlplane.yaml):
# the local cluster's kube-apiserver trusts it for the seed authorizer (docs/security.md).
webhook_ca="$state_dir/pki/webhook-ca"
[ -f "$webhook_ca/ca.key" ] || die "$webhook_ca/ca.key is missing; run \`make local-up\`"
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NS" create secret tls gardener-admission-ca \
  --cert "$webhook_ca/ca.crt" --key "$webhook_ca/ca.key" --dry-run=client -o yaml |
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" apply -f - >/dev/null || die "could not apply Secret $NS/gardener-admission-ca"
release gardener-controlplane controlplane
# provider-local is registered, not installed: the controller-manager asks the seed's gardenlet
# for it (ControllerInstallation provider-local-local) and gardenlet deploys the objects of its
# ControllerDeployment into extension-provider-local-local. Registered before gardenlet: admission
# refuses a Seed whose provider, backup or DNS type no ControllerRegistration serves
# (docs/admission.md, extension types), and gardenlet registers the Seed `local` at its start.
start=$SECONDS
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
profile="${IMAGE_PROFILE:-dev}" # as hack/images.sh built it
provider_local="$target_dir/$([ "$profile" = dev ] && echo debug || echo "$profile")/gardener-extension-provider-local"
[ -x "$provider_local" ] || die "$provider_local is missing; run \`make local-up\` (hack/images.sh builds it)"
version=$("$provider_local" --version | awk '{print $2}')
# A garden set up before provider-local was registered had it as a Helm release.
python3 hack/helm.py uninstall gardener-extension-provider-local --namespace "$NS" --kubeconfig "$KUBECONFIG_FILE" >/dev/null 2>&1 || true
machine_image="gardener-rs.local/machine:v1.20.2" # the tag hack/images.sh gives it (K8S_VERSION)
# The machines pull what they do not carry from the local cluster's registry (docs/local-setup.md),
# whose certificate the cluster CA issued.
registry_ca="$state_dir/pki/ca/ca.crt"
[ -f "$registry_ca" ] || die "$registry_ca is missing; run \`make local-up\`"
"$provider_local" registration --image "gardener-rs.local/gardener-extension-provider-local:v$version" --policy Always \
  --machine-image "$machine_image" --registry-mirror https://10.250.0.1:5000 --registry-ca-file "$registry_ca" \
  --backup-host-path "$backup_dir" |
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" apply -f - >/dev/null ||
  die "could not register provider-local"
release gardenlet gardenlet \
  --set-json "additionalVolumes=$backup_volume" --set-json "additionalVolumeMounts=$backup_mount" \
  --set-json "config.managedSeeds.additionalVolumes=$backup_volume" \
  --set-json "config.managedSeeds.additionalVolumeMounts=$backup_mount"

installation() {
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" wait controllerinstallation/provider-local-local --for=condition="$1" --timeout="$2" >/dev/null 2>&1
}
for _ in $(seq 60); do # the controller-manager creates the installation within seconds
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" get controllerinstallation provider-local-local >/dev/null 2>&1 && break
  sleep 1
done
installation Healthy 180s ||
  die "provider-local did not become Healthy; \`$KUBECTL --kubeconfig $KUBECONFIG_FILE get controllerinstallation provider-local-local -o yaml\` says why"
log "provider-local registered, installed by gardenlet and Healthy in $((SECONDS - start)) s"

start=$SECONDS
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" wait seed/local --for=condition=GardenletReady --timeout=120s >/dev/null ||
  die "the Seed local did not become GardenletReady; see \`$KUBECTL --kubeconfig $KUBECONFIG_FILE -n $NS logs deploy/gardenlet\`"
log "Seed local is GardenletReady after $((SECONDS - start)) s"

# What users start from: CloudProfile, Project and SecretBinding `local` (example/local/).
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" apply -f example/local/garden.yaml >/dev/null || die "could not apply example/local/garden.yaml"
phase=""
for _ in $(seq 60); do # kubectl 1.20 has no `wait --for=jsonpath`
  phase=$("$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" get project local -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Ready ] && break
  sleep 1
done
[ "$phase" = Ready ] ||
  die "the Project local did not become Ready; see \`$KUBECTL --kubeconfig $KUBECONFIG_FILE -n $NS logs deploy/gardener-controller-manager\`"
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" apply -f example/local/secretbinding.yaml >/dev/null || die "could not apply example/local/secretbinding.yaml"
log "CloudProfile, Project and SecretBinding local are there: \`kubectl apply -f example/shoot.yaml\` creates a shoot"
