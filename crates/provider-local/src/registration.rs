//! provider-local as a garden registers it: a ControllerRegistration for every kind and type it
//! serves, and a `manifest` ControllerDeployment carrying the objects that run it in a seed
//! (what the Helm chart `charts/gardener/provider-local` installs, with the chart's defaults;
//! `tests/registration.rs` keeps the two in step). gardenlet installs the deployment into
//! `extension-<installation>` on every seed that needs it. Printed by
//! `gardener-extension-provider-local registration`.

use crate::extension;
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
}

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

/// The ControllerRegistration `provider-local`.
pub fn registration(o: &Options) -> Value {
    let resources: Vec<Value> =
        resources().into_iter().map(|(kind, type_)| json!({"kind": kind, "type": type_})).collect();
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "ControllerRegistration",
        "metadata": {"name": "provider-local"},
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

/// The container arguments (the chart's defaults, and its `machineImage` when given).
pub fn args(machine_image: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = [
        "--leader-election=true",
        "--metrics-bind-address=0.0.0.0:8080",
        "--log-level=info,kube=warn",
        "--log-format=json",
        "--concurrency=5",
        "--backup-root=/var/lib/provider-local/backup",
        "--backup-secret-namespace=garden",
        "--bastion-service-type=ClusterIP",
    ]
    .map(String::from)
    .to_vec();
    args.extend(machine_image.map(|m| format!("--machine-image={m}")));
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
    vec![
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
                        "args": args(o.machine_image.as_deref()),
                        "env": env,
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 5, "periodSeconds": 10, "failureThreshold": 3},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 2, "failureThreshold": 3},
                        "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "backup", "mountPath": "/var/lib/provider-local/backup"}],
                    }],
                    "volumes": [{"name": "backup", "emptyDir": {}}],
                },
            },
        }}),
    ]
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
        let yaml = documents(&options()).unwrap();
        assert_eq!(yaml.matches("\n---\n").count() + usize::from(yaml.starts_with("---")), 1, "two documents");
    }
}
