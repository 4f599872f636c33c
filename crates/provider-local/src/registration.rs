//! provider-local as a garden registers it: a ControllerRegistration for every kind and type it
//! serves, and a `manifest` ControllerDeployment carrying the objects that run it in a seed
//! (what the Helm chart `charts/gardener/provider-local` installs, with the chart's defaults;
//! `tests/registration.rs` keeps the two in step). gardenlet installs the deployment into
//! `extension-<installation>` on every seed that needs it. Printed by
//! `gardener-extension-provider-local registration`.

use crate::extension;
use crate::registry::RegistryMirror;
use serde_json::{Value, json};

const NAME: &str = "gardener-extension-provider-local";

/// What the registration is printed with.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The image of the controller.
    pub image: String,
    pub replicas: i32,
    /// `OnDemand` (when a seed's shoots need it) or `Always`.
    pub policy: String,
    /// The machine image for pools that name none (`--machine-image`, the chart's
    /// `machineImage`).
    pub machine_image: Option<String>,
    /// The machines' registry mirror (`--registry-mirror`, the chart's `registryMirror`): its CA
    /// goes into the ConfigMap [`REGISTRY_CA_CONFIGMAP`], mounted at [`REGISTRY_CA_DIR`].
    pub registry_mirror: Option<RegistryMirror>,
    /// A directory of the seed's node for the backup store (`--backup-host-path`), instead of a
    /// directory in the pod: gardenlet (final etcd snapshots) and etcd's restore mount the same
    /// path, which is what makes a control-plane migration carry etcd's data. It must exist,
    /// writable for UID 65532.
    pub backup_host_path: Option<String>,
    /// Whether ControlPlane deploys the volume provisioner into shoots: the deployment gets
    /// `--volume-provisioner-image` set to [`Options::image`] (the chart's
    /// `volumeProvisioner.enabled`, which uses the chart's own image), so the shoots run the
    /// provisioner of the same build.
    pub volume_provisioner: bool,
}

/// Where the backup store is when it is not a host directory.
const BACKUP_ROOT: &str = "/var/lib/provider-local/backup";

/// The ConfigMap with the registry mirror's CA (key `ca.crt`), and where the pod mounts it.
pub const REGISTRY_CA_CONFIGMAP: &str = "gardener-extension-provider-local-registry-ca";
pub const REGISTRY_CA_DIR: &str = "/etc/provider-local/registry";

/// The kinds and types provider-local serves.
pub fn resources() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = [
        "Infrastructure",
        "DNSRecord",
        "BackupBucket",
        "BackupEntry",
        "OperatingSystemConfig",
        "Worker",
        "ControlPlane",
        "Network",
        "Bastion",
    ]
    .into_iter()
    .map(|k| (k, crate::TYPE))
    .collect();
    out.extend(extension::TYPES.iter().map(|t| ("Extension", *t)));
    out
}

/// The annotation that asks gardenlet for the pod security level of the installation's
/// namespace `extension-<installation>` (Gardener's `security.gardener.cloud/pod-security-enforce`).
pub const ANNOTATION_POD_SECURITY_ENFORCE: &str = "security.gardener.cloud/pod-security-enforce";

/// The ControllerRegistration `provider-local`. Its namespace in the seed must be `privileged`:
/// the Deployment mounts the backup store from the host (`--backup-host-path`), a hostPath
/// volume the garden's admission server refuses at `baseline`.
pub fn registration(o: &Options) -> Value {
    let resources: Vec<Value> =
        resources().into_iter().map(|(kind, type_)| json!({"kind": kind, "type": type_})).collect();
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "ControllerRegistration",
        "metadata": {"name": "provider-local", "annotations": {ANNOTATION_POD_SECURITY_ENFORCE: "privileged"}},
        "spec": {
            "resources": resources,
            "deployment": {"policy": o.policy, "deploymentRefs": [{"name": "provider-local"}]},
        },
    })
}

/// The ControllerDeployment `provider-local` (type `manifest`).
pub fn deployment(o: &Options) -> Value {
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "ControllerDeployment",
        "metadata": {"name": "provider-local"},
        "type": "manifest",
        "providerConfig": {"manifests": objects(o)},
    })
}

/// The RBAC rules of provider-local across the seed (the chart's ClusterRole).
pub fn cluster_rules() -> Value {
    let kinds = [
        "infrastructures",
        "dnsrecords",
        "backupbuckets",
        "backupentries",
        "operatingsystemconfigs",
        "workers",
        "controlplanes",
        "networks",
        "bastions",
        "extensions",
    ];
    let status: Vec<String> = kinds.iter().map(|k| format!("{k}/status")).collect();
    json!([
        {"apiGroups": ["extensions.gardener.cloud"], "resources": kinds, "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": ["extensions.gardener.cloud"], "resources": status, "verbs": ["patch"]},
        {"apiGroups": ["extensions.gardener.cloud"], "resources": ["clusters"], "verbs": ["get"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "patch", "delete"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
    ])
}

/// The RBAC rules of provider-local in its own namespace (leader and heartbeat Leases).
pub fn namespace_rules() -> Value {
    json!([
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["provider-local-leader-election"], "verbs": ["get", "update"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["gardener-extension-heartbeat"], "verbs": ["patch"]},
    ])
}

/// The container arguments (the chart's defaults, its `machineImage` and `registryMirror` when
/// given).
pub fn args(o: &Options) -> Vec<String> {
    let mut args: Vec<String> = [
        "--leader-election=true",
        "--metrics-bind-address=0.0.0.0:8080",
        "--log-level=info,kube=warn",
        "--log-format=json",
        "--concurrency=5",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("--backup-root={}", o.backup_host_path.as_deref().unwrap_or(BACKUP_ROOT)));
    args.extend(["--backup-secret-namespace=garden", "--bastion-service-type=ClusterIP"].map(String::from));
    args.extend(o.machine_image.as_deref().map(|m| format!("--machine-image={m}")));
    if let Some(mirror) = &o.registry_mirror {
        args.push(format!("--registry-mirror={}", mirror.url()));
        args.push(format!("--registry-ca-file={REGISTRY_CA_DIR}/ca.crt"));
    }
    if o.volume_provisioner {
        args.push(format!("--volume-provisioner-image={}", o.image));
    }
    args
}

/// The objects that run provider-local in a seed; namespaced ones carry no namespace (gardenlet
/// puts them into the installation's).
pub fn objects(o: &Options) -> Vec<Value> {
    let labels = json!({"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gardener"});
    let role_ref = |kind: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "gardener.cloud:extension:provider-local"});
    let subject = json!([{"kind": "ServiceAccount", "name": NAME}]);
    let rbac = "rbac.authorization.k8s.io/v1";
    let field = |path: &str| json!({"valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}});
    let mut env = vec![];
    for (name, path) in [("POD_NAME", "metadata.name"), ("NAMESPACE", "metadata.namespace")] {
        let mut e = field(path);
        e["name"] = json!(name);
        env.push(e);
    }
    let (mut volumes, mut mounts) = match &o.backup_host_path {
        Some(path) => (
            vec![json!({"name": "backup", "hostPath": {"path": path, "type": "Directory"}})],
            vec![json!({"name": "backup", "mountPath": path})],
        ),
        None => {
            (vec![json!({"name": "backup", "emptyDir": {}})], vec![json!({"name": "backup", "mountPath": BACKUP_ROOT})])
        }
    };
    let mut extra = Vec::new();
    if let Some(mirror) = &o.registry_mirror {
        volumes
            .push(json!({"name": "registry-ca", "configMap": {"name": REGISTRY_CA_CONFIGMAP, "defaultMode": 0o444}}));
        mounts.push(json!({"name": "registry-ca", "mountPath": REGISTRY_CA_DIR, "readOnly": true}));
        extra.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": REGISTRY_CA_CONFIGMAP, "labels": labels},
                          "data": {"ca.crt": mirror.ca()}}));
    }
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "labels": labels}, "automountServiceAccountToken": true}),
        json!({"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "gardener.cloud:extension:provider-local", "labels": labels}, "rules": cluster_rules()}),
        json!({"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": "gardener.cloud:extension:provider-local", "labels": labels},
               "roleRef": role_ref("ClusterRole"), "subjects": subject}),
        json!({"apiVersion": rbac, "kind": "Role", "metadata": {"name": "gardener.cloud:extension:provider-local", "labels": labels}, "rules": namespace_rules()}),
        json!({"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": "gardener.cloud:extension:provider-local", "labels": labels},
               "roleRef": role_ref("Role"), "subjects": subject}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, "labels": labels}, "spec": {
            "replicas": o.replicas,
            "revisionHistoryLimit": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": {
                "metadata": {"labels": labels, "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{
                        "name": NAME,
                        "image": o.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": [format!("/usr/local/bin/{NAME}")],
                        "args": args(o),
                        "env": env,
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        // The chart's probes (`gardener.probes`): a minute of failures before a restart.
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 2, "timeoutSeconds": 3, "failureThreshold": 3},
                        "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        }}),
    ];
    objects.extend(extra);
    objects
}

/// The registration and deployment as a YAML stream, for `kubectl apply -f -`.
pub fn documents(o: &Options) -> Result<String, serde_yaml::Error> {
    Ok(format!("{}---\n{}", serde_yaml::to_string(&registration(o))?, serde_yaml::to_string(&deployment(o))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options {
            image: "gardener-rs.local/gardener-extension-provider-local:v0.1.0".into(),
            replicas: 2,
            policy: "Always".into(),
            machine_image: None,
            registry_mirror: None,
            backup_host_path: None,
            volume_provisioner: true,
        }
    }

    #[test]
    fn registration_serves_every_kind_the_binary_runs_and_names_its_deployment() {
        let r = registration(&options());
        let kinds: Vec<&str> =
            r["spec"]["resources"].as_array().unwrap().iter().map(|r| r["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds.len(), crate::CONTROLLERS.len() - 1 + extension::TYPES.len());
        for controller in crate::CONTROLLERS {
            assert!(kinds.iter().any(|k| k.to_lowercase() == controller), "{controller} is not registered");
        }
        assert_eq!(r["spec"]["deployment"]["deploymentRefs"][0]["name"], "provider-local");
        assert_eq!(r["spec"]["deployment"]["policy"], "Always");
        assert_eq!(r["metadata"]["annotations"]["security.gardener.cloud/pod-security-enforce"], "privileged");
    }

    #[test]
    fn deployment_is_a_manifest_deployment_without_namespaces() {
        let d = deployment(&options());
        assert_eq!(d["type"], api::core::controller::DEPLOYMENT_TYPE_MANIFEST);
        let objects = d["providerConfig"]["manifests"].as_array().unwrap();
        assert!(objects.iter().all(|o| o["metadata"].get("namespace").is_none()));
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], options().image);
        assert_eq!(deployment["spec"]["replicas"], 2);
        let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
        let flag = format!("--volume-provisioner-image={}", options().image);
        assert!(args.as_array().unwrap().iter().any(|a| a == &flag), "the shoots run our own image: {args}");
        let without = super::objects(&Options { volume_provisioner: false, ..options() });
        let without = without.iter().find(|o| o["kind"] == "Deployment").unwrap();
        let args = without["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(!args.contains("--volume-provisioner-image"), "{args}");
        let yaml = documents(&options()).unwrap();
        assert_eq!(yaml.matches("\n---\n").count() + usize::from(yaml.starts_with("---")), 1, "two documents");
    }
}
