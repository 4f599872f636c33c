//! The objects of a gardenlet deployed into a ManagedSeed's shoot, and of its identity in the
//! garden, as pure functions. They are what the gardenlet chart (charts/gardener/gardenlet)
//! installs, rendered here because gardenlet has no Helm engine; `tests/managed_seed.rs`
//! installs the chart and holds the two together (the permissions, the container).
//!
//! The chart serves garden and seed in one cluster with one ClusterRole. A managed seed's
//! gardenlet talks to two clusters, so [`RULES`] says for each permission on which side it is
//! needed: the shoot gets the seed's half. In the garden a managed gardenlet is its seed's
//! identity (`gardener.cloud:system:seed:<seed>`, a client certificate it bootstraps by CSR),
//! judged by the seed authorizer; its ServiceAccount there is only the bootstrap credential
//! ([`garden_objects`]).

use serde_json::{Value, json};

/// The namespace of gardenlet in the shoot and of its identity in the garden.
pub const NAMESPACE: &str = "garden";
/// The Deployment, ServiceAccount and container name in the shoot.
pub const NAME: &str = "gardenlet";
/// The Secret in the shoot holding the bootstrap kubeconfig and its token.
pub const GARDEN_KUBECONFIG_SECRET: &str = "gardenlet-garden-kubeconfig";
/// The Secret in the shoot (namespace [`NAMESPACE`]) where the managed gardenlet keeps the
/// kubeconfig of its client certificate (its `gardenClientConnection.kubeconfigSecret`).
pub const KUBECONFIG_SECRET: &str = "gardenlet-kubeconfig";
/// Label on every object made for a ManagedSeed: its name.
pub const LABEL_MANAGED_SEED: &str = "seedmanagement.gardener.cloud/managed-seed";
/// Port of /healthz, /readyz and /metrics (the chart's default).
pub const PORT: i32 = 8080;

/// Where a permission is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Garden,
    Seed,
    Both,
}

/// One rule of gardenlet's ClusterRole.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub side: Side,
    pub groups: &'static [&'static str],
    pub resources: &'static [&'static str],
    pub verbs: &'static [&'static str],
    /// Limited to the seed's own name.
    pub own_seed_only: bool,
    /// What only a seed hosting ManagedSeeds needs in the garden (writing ManagedSeeds and other
    /// Seeds, identities and RBAC for managed gardenlets). Managed gardenlets get no garden rules
    /// by RBAC at all; the mark tells the seed authorizer's rules what a managed seed must not
    /// be allowed.
    pub parent_only: bool,
}

const fn rule(
    side: Side,
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    verbs: &'static [&'static str],
) -> Rule {
    Rule { side, groups, resources, verbs, own_seed_only: false, parent_only: false }
}

const fn parent_only(rule: Rule) -> Rule {
    Rule { parent_only: true, ..rule }
}

const CORE: &str = "core.gardener.cloud";
const EXT: &str = "extensions.gardener.cloud";
const EXTENSION_KINDS: &[&str] = &[
    "infrastructures",
    "controlplanes",
    "networks",
    "dnsrecords",
    "operatingsystemconfigs",
    "workers",
    "extensions",
    "backupentries",
];
const EXTENSION_STATUSES: &[&str] = &[
    "infrastructures/status",
    "controlplanes/status",
    "networks/status",
    "dnsrecords/status",
    "operatingsystemconfigs/status",
    "workers/status",
    "extensions/status",
    "backupentries/status",
];
const RW: &[&str] = &["get", "list", "watch", "create", "patch", "delete"];
const MANAGE: &[&str] = &["get", "create", "patch", "delete"];

/// gardenlet's ClusterRole, in the chart's order (charts/gardener/gardenlet/templates/rbac.yaml
/// explains each rule).
pub const RULES: &[Rule] = &[
    Rule {
        side: Side::Garden,
        groups: &[CORE],
        resources: &["seeds"],
        verbs: &["get", "list", "watch", "create", "patch"],
        own_seed_only: true,
        parent_only: false,
    },
    Rule {
        side: Side::Garden,
        groups: &[CORE],
        resources: &["seeds/status"],
        verbs: &["patch"],
        own_seed_only: true,
        parent_only: false,
    },
    rule(Side::Garden, &[CORE], &["shoots"], &["get", "list", "watch", "patch"]),
    rule(Side::Garden, &[CORE], &["shoots/status"], &["patch"]),
    rule(Side::Garden, &[CORE], &["shootstates"], &["get", "create", "patch", "delete"]),
    rule(Side::Garden, &[CORE], &["internalsecrets"], &["get", "create", "patch"]),
    rule(Side::Garden, &[""], &["configmaps"], &["get", "create", "patch"]),
    rule(Side::Garden, &[CORE], &["backupbuckets", "backupentries"], RW),
    rule(Side::Garden, &[CORE], &["backupbuckets/status", "backupentries/status"], &["patch"]),
    rule(Side::Garden, &["operations.gardener.cloud"], &["bastions"], &["list", "watch", "patch"]),
    rule(Side::Garden, &["operations.gardener.cloud"], &["bastions/status"], &["patch"]),
    rule(Side::Garden, &[CORE], &["controllerregistrations", "controllerdeployments"], &["list", "watch"]),
    rule(Side::Garden, &[CORE], &["controllerinstallations"], &["list", "watch", "patch"]),
    rule(Side::Garden, &[CORE], &["controllerinstallations/status"], &["patch"]),
    rule(Side::Garden, &[CORE], &["cloudprofiles"], &["get", "list", "watch"]),
    rule(Side::Garden, &[CORE], &["namespacedcloudprofiles", "exposureclasses", "secretbindings"], &["get"]),
    rule(Side::Garden, &["security.gardener.cloud"], &["credentialsbindings"], &["get"]),
    // The garden identity by CSR (crate::bootstrap): create and watch the CSR; the approver
    // asks whether the requester may create certificatesigningrequests/seedclient of this seed.
    rule(Side::Garden, &["certificates.k8s.io"], &["certificatesigningrequests"], &["create", "get", "list", "watch"]),
    Rule {
        side: Side::Garden,
        groups: &["certificates.k8s.io"],
        resources: &["certificatesigningrequests/seedclient"],
        verbs: &["create"],
        own_seed_only: true,
        parent_only: false,
    },
    Rule {
        side: Side::Garden,
        groups: &["coordination.k8s.io"],
        resources: &["leases"],
        verbs: &["create", "patch"],
        own_seed_only: true,
        parent_only: false,
    },
    // The ManagedSeed controller: ManagedSeeds of shoots on this seed, the Seeds their
    // gardenlets register (watched; deleted with the ManagedSeed).
    rule(Side::Garden, &["seedmanagement.gardener.cloud"], &["managedseeds"], &["list", "watch"]),
    parent_only(rule(Side::Garden, &["seedmanagement.gardener.cloud"], &["managedseeds"], &["patch"])),
    parent_only(rule(Side::Garden, &["seedmanagement.gardener.cloud"], &["managedseeds/status"], &["patch"])),
    rule(Side::Garden, &[CORE], &["seeds"], &["get", "list", "watch"]),
    parent_only(rule(Side::Garden, &[CORE], &["seeds"], &["patch", "delete"])),
    // The heartbeat Lease's namespace in the garden, created by the first gardenlet.
    rule(Side::Garden, &[""], &["namespaces"], &["get", "create"]),
    parent_only(rule(Side::Both, &[""], &["namespaces"], RW)),
    rule(Side::Both, &[""], &["secrets"], &["get", "list", "create", "patch", "delete"]),
    rule(Side::Seed, &[""], &["services"], RW),
    rule(Side::Seed, &[""], &["pods"], &["list", "watch", "delete"]),
    rule(Side::Seed, &["apps"], &["deployments", "statefulsets"], RW),
    rule(Side::Seed, &[EXT], EXTENSION_KINDS, RW),
    rule(Side::Seed, &[EXT], EXTENSION_STATUSES, &["patch"]),
    rule(Side::Seed, &[EXT], &["containerruntimes"], &["list", "watch", "patch", "delete"]),
    rule(Side::Seed, &[EXT], &["bastions"], RW),
    rule(Side::Seed, &[EXT], &["clusters"], MANAGE),
    rule(Side::Seed, &[EXT], &["backupbuckets"], &["get", "list", "watch", "create", "patch", "delete"]),
    // Extension controllers (ControllerInstallations); in the garden the ManagedSeed
    // controller's identities of managed gardenlets (ServiceAccounts, their RBAC).
    parent_only(rule(Side::Both, &[""], &["serviceaccounts", "configmaps"], MANAGE)),
    // The managed gardenlets' short-lived garden tokens (super::token).
    parent_only(rule(Side::Garden, &[""], &["serviceaccounts/token"], &["create"])),
    parent_only(rule(
        Side::Both,
        &["rbac.authorization.k8s.io"],
        &["clusterroles", "clusterrolebindings", "roles", "rolebindings"],
        &["get", "create", "patch", "delete", "escalate", "bind"],
    )),
    rule(Side::Seed, &["scheduling.k8s.io"], &["priorityclasses"], MANAGE),
    rule(Side::Seed, &["policy"], &["poddisruptionbudgets"], MANAGE),
    rule(Side::Seed, &["networking.k8s.io"], &["networkpolicies"], MANAGE),
    rule(Side::Seed, &["apps"], &["daemonsets"], MANAGE),
];

/// The rules of one side as ClusterRole `rules` (`Side::Both`: all of them, the chart's).
pub fn rules(seed: &str, side: Side) -> Vec<Value> {
    to_json(seed, RULES.iter().filter(|r| r.side == side || r.side == Side::Both || side == Side::Both))
}

fn to_json<'a>(seed: &str, rules: impl Iterator<Item = &'a Rule>) -> Vec<Value> {
    rules
        .map(|r| {
            let mut v = json!({"apiGroups": r.groups, "resources": r.resources, "verbs": r.verbs});
            if r.own_seed_only {
                v["resourceNames"] = json!([seed]);
            }
            v
        })
        .collect()
}

/// The name of gardenlet's ClusterRole (and binding) for a seed, as the chart names it.
pub fn cluster_role_name(seed: &str) -> String {
    format!("gardener.cloud:system:gardenlet:{seed}")
}

/// The ServiceAccount a managed seed's gardenlet is in the garden.
pub fn garden_service_account(seed: &str) -> String {
    format!("gardenlet-{seed}")
}

/// The ClusterRole (and binding) that lets the managed gardenlet's ServiceAccount bootstrap
/// its seed's identity.
pub fn bootstrap_role_name(seed: &str) -> String {
    format!("gardener.cloud:system:gardenlet:{seed}:bootstrap")
}

/// The token Secret earlier versions kept for that ServiceAccount (a token that never
/// expires); removed when found. The account's tokens now come from the TokenRequest API
/// ([`super::token`]).
pub fn legacy_token_secret(seed: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": format!("gardenlet-{seed}-token"), "namespace": NAMESPACE}})
}

/// What earlier versions granted the managed gardenlet's ServiceAccount in the garden, deleted
/// on every reconcile so an upgrade does not keep it: the garden half of gardenlet's
/// ClusterRole and its binding, the leader-election Role and binding, and the token Secret that
/// never expires.
pub fn legacy_garden_objects(seed: &str) -> Vec<Value> {
    let role = cluster_role_name(seed);
    let lease_role = format!("gardener.cloud:system:gardenlet:{seed}:leader-election");
    vec![
        legacy_token_secret(seed),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": lease_role, "namespace": NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": lease_role, "namespace": NAMESPACE}}),
    ]
}

fn labels(managed_seed: &str) -> Value {
    json!({
        "app.kubernetes.io/part-of": "gardener",
        "app.kubernetes.io/managed-by": "gardenlet",
        "app.kubernetes.io/name": NAME,
        LABEL_MANAGED_SEED: managed_seed,
    })
}

/// The managed gardenlet's bootstrap identity in the garden: a ServiceAccount (its tokens are
/// requested with a lifetime, [`super::token`]) that may only create and watch CSRs and
/// create `certificatesigningrequests/seedclient` named after its seed, so the CSR approver
/// approves its CSR for that seed and no other. Everything else the managed gardenlet does in
/// the garden it does as its seed identity. The ServiceAccount first.
pub fn garden_objects(seed: &str) -> Vec<Value> {
    let sa = garden_service_account(seed);
    let role = bootstrap_role_name(seed);
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": sa, "namespace": NAMESPACE, "labels": labels(seed)}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": role, "labels": labels(seed)},
        "rules": [
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/seedclient"],
             "resourceNames": [seed], "verbs": ["create"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
             "verbs": ["create", "get", "list", "watch"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": role, "labels": labels(seed)},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}]}),
    ]
}

/// A kubeconfig for `server` that trusts `ca_pem` and authenticates with the token in
/// [`super::token::TOKEN_FILE`] (read again when it is renewed).
pub fn kubeconfig(server: &str, ca_pem: &str) -> String {
    let ca = b64(ca_pem);
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "garden", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "gardenlet", "user": {"tokenFile": super::token::TOKEN_FILE}}],
        "contexts": [{"name": "garden", "context": {"cluster": "garden", "user": "gardenlet"}}],
        "current-context": "garden",
    });
    serde_yaml::to_string(&config).unwrap_or_default()
}

/// The kubeconfig of the cluster gardenlet runs in, with its ServiceAccount's token and CA as
/// the kubelet mounts them (the token file is read again when it is renewed).
pub fn in_cluster_kubeconfig() -> String {
    const SA: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "seed", "cluster": {"server": "https://kubernetes.default.svc", "certificate-authority": format!("{SA}/ca.crt")}}],
        "users": [{"name": "gardenlet", "user": {"tokenFile": format!("{SA}/token")}}],
        "contexts": [{"name": "seed", "context": {"cluster": "seed", "user": "gardenlet"}}],
        "current-context": "seed",
    });
    serde_yaml::to_string(&config).unwrap_or_default()
}

/// What the gardenlet in the shoot is made of.
pub struct ShootInputs<'a> {
    pub managed_seed: &'a str,
    /// gardenlet's configuration file (YAML).
    pub config: &'a str,
    /// The garden kubeconfig (it names the token file).
    pub garden_kubeconfig: &'a str,
    /// The garden token (secret) and its expiry (RFC 3339).
    pub garden_token: &'a str,
    pub token_expiration: &'a str,
    pub image: &'a str,
    pub replicas: i32,
    pub resources: Option<Value>,
    pub env: Vec<Value>,
    /// Extra Pod volumes and their mounts in the gardenlet container.
    pub volumes: Vec<Value>,
    pub volume_mounts: Vec<Value>,
}

impl std::fmt::Debug for ShootInputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShootInputs")
            .field("managed_seed", &self.managed_seed)
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

/// The objects in the shoot, in apply order (deletion: the reverse): the namespace, the
/// extension CRDs, the PriorityClass, the ServiceAccount and the seed's half of gardenlet's
/// ClusterRole, the garden kubeconfig, the configuration and the Deployment (rolled when
/// either changes, through the checksum annotation).
pub fn shoot_objects(inputs: &ShootInputs<'_>) -> Vec<Value> {
    let seed = inputs.managed_seed;
    let role = cluster_role_name(seed);
    let mut out = vec![json!({"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": NAMESPACE, "labels": labels(seed)}})];
    for crd in api::crds::all().into_iter().filter(|c| c.spec.group == "extensions.gardener.cloud") {
        if let Ok(mut v) = serde_json::to_value(&crd) {
            v["metadata"]["labels"] = labels(seed);
            out.push(v);
        }
    }
    let resources = inputs
        .resources
        .clone()
        .unwrap_or_else(|| json!({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}));
    let mut env = vec![
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
    ];
    env.extend(inputs.env.iter().cloned());
    let sum = config_checksum(&[inputs.config, inputs.garden_kubeconfig, inputs.image]);
    let mut mounts = vec![
        json!({"name": "config", "mountPath": "/etc/gardenlet/config", "readOnly": true}),
        json!({"name": "garden-kubeconfig", "mountPath": "/etc/gardenlet/garden", "readOnly": true}),
    ];
    mounts.extend(inputs.volume_mounts.iter().cloned());
    let mut volumes = vec![
        json!({"name": "config", "configMap": {"name": "gardenlet-config"}}),
        json!({"name": "garden-kubeconfig", "secret": {"secretName": GARDEN_KUBECONFIG_SECRET}}),
    ];
    volumes.extend(inputs.volumes.iter().cloned());
    out.extend([
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": NAME, "labels": labels(seed)},
               "value": 999_998_900, "globalDefault": false,
               "description": "gardenlet and the shoot control planes it runs (gardener-rs)."}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels(seed)},
               "automountServiceAccountToken": true}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": role, "labels": labels(seed)}, "rules": rules(seed, Side::Seed)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": role, "labels": labels(seed)},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": GARDEN_KUBECONFIG_SECRET, "namespace": NAMESPACE, "labels": labels(seed),
                            "annotations": {(super::token::EXPIRATION_ANNOTATION): inputs.token_expiration}},
               "data": {"kubeconfig": b64(inputs.garden_kubeconfig), (super::token::TOKEN_KEY): b64(inputs.garden_token),
                        "seed-kubeconfig": b64(&in_cluster_kubeconfig())}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "gardenlet-config", "namespace": NAMESPACE, "labels": labels(seed)},
               "data": {"config.yaml": inputs.config}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels(seed)},
        "spec": {
            "replicas": inputs.replicas,
            "revisionHistoryLimit": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": NAME}},
            "template": {
                "metadata": {
                    "labels": {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": NAME,
                               "app.kubernetes.io/part-of": "gardener"},
                    "annotations": {"checksum/config": sum, "prometheus.io/scrape": "true",
                                    "prometheus.io/port": PORT.to_string()},
                },
                "spec": {
                    "serviceAccountName": NAME,
                    "priorityClassName": NAME,
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                        "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{
                        "name": NAME,
                        "image": inputs.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/usr/local/bin/gardenlet"],
                        "args": [
                            "--config=/etc/gardenlet/config/config.yaml",
                            "--leader-election=true",
                            format!("--metrics-bind-address=0.0.0.0:{PORT}"),
                            "--log-level=info,kube=warn",
                            "--log-format=json",
                        ],
                        "env": env,
                        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
                        // The chart's probes (`gardener.probes`): a minute of failures before a restart.
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 5,
                                          "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"},
                                           "periodSeconds": 2, "timeoutSeconds": 3, "failureThreshold": 3},
                        "resources": resources,
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        }}),
    ]);
    out
}

fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A short hex digest of the parts (rolls the Deployment when one changes).
fn config_checksum(parts: &[&str]) -> String {
    crate::components::common::checksum(&parts.join("\u{0}"))
}

#[cfg(test)]
mod tests;
