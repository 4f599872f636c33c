use super::*;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// A pod from JSON (`spec` and optionally `metadata`).
fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

/// What `pod` violates at `level`, as `(check, path)`.
fn found(level: Level, pod: &Pod) -> Vec<(&'static str, String)> {
    let spec = pod.spec.clone().unwrap_or_default();
    check(level, &spec, &pod.metadata).into_iter().map(|v| (v.check, v.path.to_string())).collect()
}

/// A table row: what the case is, the change to the pod, and the `(check, path)` expected.
type Case = (&'static str, Value, Vec<(&'static str, &'static str)>);

fn none() -> Vec<(&'static str, String)> {
    Vec::new()
}

fn plain() -> Value {
    json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// A pod that meets `restricted`: non-root, no escalation, RuntimeDefault seccomp, no
/// capabilities, allowed volumes; in all three container lists.
fn hardened() -> Value {
    let sc = json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}});
    json!({"metadata": {"name": "web", "annotations": {"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}},
           "spec": {
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"},
                            "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}],
                            "seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"}},
        "containers": [{"name": "app", "image": "nginx", "securityContext": sc,
                        "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 0}]}],
        "initContainers": [{"name": "init", "image": "busybox", "securityContext": sc}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox",
                                 "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
                                                     "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}}],
        "volumes": [{"name": "cm", "configMap": {"name": "c"}}, {"name": "tmp", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "s"}},
                    {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "p", "projected": {"sources": []}},
                    {"name": "d", "downwardAPI": {}}, {"name": "default"}]
    }})
}

/// `base` with `patch` merged in (objects merged key by key, anything else replaced).
fn merged(mut base: Value, patch: Value) -> Value {
    fn merge(a: &mut Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }
    merge(&mut base, patch);
    base
}

#[test]
fn a_plain_pod_passes_baseline_but_not_restricted() {
    let p = pod(plain());
    assert!(found(Level::Privileged, &p).is_empty());
    assert!(found(Level::Baseline, &p).is_empty());
    let at = "spec.containers[0].securityContext";
    assert_eq!(
        found(Level::Restricted, &p),
        [
            ("allowPrivilegeEscalation != false", format!("{at}.allowPrivilegeEscalation")),
            ("runAsNonRoot != true", format!("{at}.runAsNonRoot")),
            ("seccompProfile", format!("{at}.seccompProfile.type")),
            ("unrestricted capabilities", format!("{at}.capabilities.drop")),
        ]
    );
}

#[test]
fn a_hardened_pod_passes_every_level() {
    let p = pod(hardened());
    for level in Level::ALL {
        assert_eq!(found(level, &p), none(), "{level}");
    }
}

/// Each case: a change to the hardened pod and what `baseline` then finds. Every case passes
/// at `privileged`, and `restricted` finds at least the same.
#[test]
fn baseline_refuses_each_escape_naming_the_field() {
    let c0 = "spec.containers[0]";
    let cases: Vec<Case> = vec![
        ("hostNetwork", json!({"spec": {"hostNetwork": true}}), vec![("host namespaces", "spec.hostNetwork")]),
        (
            "hostPID and hostIPC",
            json!({"spec": {"hostPID": true, "hostIPC": true, "hostNetwork": false}}),
            vec![("host namespaces", "spec.hostPID"), ("host namespaces", "spec.hostIPC")],
        ),
        (
            "privileged container",
            json!({"spec": {"containers": [{"name": "app", "image": "x", "securityContext": {"privileged": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}),
            vec![("privileged", "spec.containers[0].securityContext.privileged")],
        ),
        (
            "privileged init container",
            json!({"spec": {"initContainers": [{"name": "init", "image": "x", "securityContext": {"privileged": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}),
            vec![("privileged", "spec.initContainers[0].securityContext.privileged")],
        ),
        (
            "privileged ephemeral container",
            json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "x", "securityContext": {"privileged": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}),
            vec![("privileged", "spec.ephemeralContainers[0].securityContext.privileged")],
        ),
        (
            "hostPath volume",
            json!({"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}),
            vec![("hostPath volumes", "spec.volumes[0].hostPath")],
        ),
        (
            "hostPort",
            json!({"spec": {"containers": [{"name": "app", "image": "x", "ports": [{"containerPort": 80}, {"containerPort": 80, "hostPort": 8080}],
                                            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}),
            vec![("hostPort", "spec.containers[0].ports[1].hostPort")],
        ),
        (
            "AppArmor unconfined by annotation",
            json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}}),
            vec![(
                "forbidden AppArmor profile",
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]",
            )],
        ),
        (
            "AppArmor unconfined by field",
            json!({"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}}),
            vec![("forbidden AppArmor profile", "spec.securityContext.appArmorProfile.type")],
        ),
        (
            "SELinux type and user",
            json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "system_u"}}}}),
            vec![
                ("seLinuxOptions", "spec.securityContext.seLinuxOptions.type"),
                ("seLinuxOptions", "spec.securityContext.seLinuxOptions.user"),
            ],
        ),
        (
            "SELinux role of a container",
            json!({"spec": {"initContainers": [{"name": "init", "image": "x", "securityContext": {"seLinuxOptions": {"role": "sysadm_r"}, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}),
            vec![("seLinuxOptions", "spec.initContainers[0].securityContext.seLinuxOptions.role")],
        ),
        (
            "procMount Unmasked",
            json!({"spec": {"containers": [{"name": "app", "image": "x", "securityContext": {"procMount": "Unmasked", "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}),
            vec![("procMount", "spec.containers[0].securityContext.procMount")],
        ),
        (
            "seccomp Unconfined on the pod",
            json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}}),
            vec![("seccompProfile", "spec.securityContext.seccompProfile.type")],
        ),
        (
            "seccomp unconfined by the legacy annotation",
            json!({"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}}),
            vec![("seccompProfile", "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]")],
        ),
        (
            "unsafe sysctl",
            json!({"spec": {"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}, {"name": "kernel.msgmax", "value": "1"}]}}}),
            vec![("forbidden sysctls", "spec.securityContext.sysctls[1].name")],
        ),
        (
            "Windows hostProcess",
            json!({"spec": {"securityContext": {"windowsOptions": {"hostProcess": true}}}}),
            vec![("hostProcess", "spec.securityContext.windowsOptions.hostProcess")],
        ),
    ];
    for (what, patch, want) in cases {
        let p = pod(merged(hardened(), patch));
        assert!(found(Level::Privileged, &p).is_empty(), "{what}");
        let want: Vec<(&str, String)> = want.into_iter().map(|(c, p)| (c, p.to_string())).collect();
        assert_eq!(found(Level::Baseline, &p), want, "{what}");
        let restricted = found(Level::Restricted, &p);
        assert!(want.iter().all(|w| restricted.contains(w)), "{what}: {restricted:?}");
    }
    // Capabilities beyond the default set, at baseline only (restricted's check replaces it).
    let caps = json!({"spec": {"containers": [{"name": "app", "image": "x",
        "securityContext": {"capabilities": {"add": ["CHOWN", "NET_ADMIN", "SYS_ADMIN"]}}}]}});
    let p = pod(merged(plain(), caps));
    let want = [1, 2].map(|i| ("non-default capabilities", format!("{c0}.securityContext.capabilities.add[{i}]")));
    assert_eq!(found(Level::Baseline, &p), want);
    assert!(found(Level::Privileged, &p).is_empty());
}

#[test]
fn restricted_refuses_what_baseline_allows_naming_the_field() {
    let sc =
        |extra: Value| merged(json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}), extra);
    let one =
        |extra: Value| json!({"spec": {"containers": [{"name": "app", "image": "x", "securityContext": sc(extra)}]}});
    let cases: Vec<Case> = vec![
        (
            "nfs volume",
            json!({"spec": {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]}}),
            vec![("restricted volume types", "spec.volumes[0].nfs")],
        ),
        (
            "hostPath volume (both levels)",
            json!({"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}),
            vec![
                ("hostPath volumes", "spec.volumes[0].hostPath"),
                ("restricted volume types", "spec.volumes[0].hostPath"),
            ],
        ),
        (
            "privilege escalation allowed",
            one(json!({"allowPrivilegeEscalation": true})),
            vec![("allowPrivilegeEscalation != false", "spec.containers[0].securityContext.allowPrivilegeEscalation")],
        ),
        (
            "container runs as root explicitly",
            one(json!({"runAsNonRoot": false})),
            vec![("runAsNonRoot != true", "spec.containers[0].securityContext.runAsNonRoot")],
        ),
        (
            "pod runAsNonRoot false, container unset",
            json!({"spec": {"securityContext": {"runAsNonRoot": false}}}),
            vec![
                ("runAsNonRoot != true", "spec.securityContext.runAsNonRoot"),
                ("runAsNonRoot != true", "spec.containers[0].securityContext.runAsNonRoot"),
                ("runAsNonRoot != true", "spec.initContainers[0].securityContext.runAsNonRoot"),
                ("runAsNonRoot != true", "spec.ephemeralContainers[0].securityContext.runAsNonRoot"),
            ],
        ),
        (
            "runAsUser 0 on the pod",
            json!({"spec": {"securityContext": {"runAsUser": 0}}}),
            vec![("runAsUser=0", "spec.securityContext.runAsUser")],
        ),
        (
            "runAsUser 0 in a container",
            one(json!({"runAsUser": 0})),
            vec![("runAsUser=0", "spec.containers[0].securityContext.runAsUser")],
        ),
        (
            "container seccomp Unconfined",
            one(json!({"seccompProfile": {"type": "Unconfined"}})),
            vec![("seccompProfile", "spec.containers[0].securityContext.seccompProfile.type")],
        ),
        (
            "capabilities not dropped",
            json!({"spec": {"containers": [{"name": "app", "image": "x", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["NET_RAW"]}}}]}}),
            vec![("unrestricted capabilities", "spec.containers[0].securityContext.capabilities.drop")],
        ),
        (
            "a default capability added",
            one(json!({"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}})),
            vec![("unrestricted capabilities", "spec.containers[0].securityContext.capabilities.add[0]")],
        ),
    ];
    for (what, patch, want) in cases {
        let p = pod(merged(hardened(), patch));
        let want: Vec<(&str, String)> = want.into_iter().map(|(c, p)| (c, p.to_string())).collect();
        assert_eq!(found(Level::Restricted, &p), want, "{what}");
        assert!(found(Level::Privileged, &p).is_empty(), "{what}");
        let baseline = found(Level::Baseline, &p);
        assert!(baseline.iter().all(|b| b.0 == "hostPath volumes" || b.0 == "seccompProfile"), "{what}: {baseline:?}");
    }
}

#[test]
fn restricted_takes_the_pod_level_settings_for_every_container() {
    // The pod sets runAsNonRoot and seccomp; the containers set only what has no pod level.
    let p = pod(json!({"spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "Localhost", "localhostProfile": "x"}},
        "containers": [{"name": "a", "image": "x", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]
    }}));
    assert_eq!(found(Level::Restricted, &p), none());
    // Without the pod's settings, each container must carry them.
    let p = pod(json!({"spec": {"containers": [{"name": "a", "image": "x", "securityContext": {
        "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": true,
        "seccompProfile": {"type": "RuntimeDefault"}}}]}}));
    assert_eq!(found(Level::Restricted, &p), none());
}

#[test]
fn windows_pods_skip_the_linux_only_restricted_checks() {
    let p = pod(json!({"spec": {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
                                "containers": [{"name": "a", "image": "x"}]}}));
    assert_eq!(found(Level::Restricted, &p), none());
    let p = pod(json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a", "image": "x"}]}}));
    assert_eq!(
        found(Level::Restricted, &p),
        [("runAsNonRoot != true", "spec.containers[0].securityContext.runAsNonRoot".to_string())]
    );
}

#[test]
fn the_level_comes_from_the_label_with_a_default_and_fails_safe() {
    let labels = |v: &str| BTreeMap::from([(ENFORCE_LABEL.to_string(), v.to_string())]);
    for level in Level::ALL {
        assert_eq!(
            level_of(Some(&labels(level.as_str())), Level::Baseline),
            Enforcement { level, origin: Origin::Label }
        );
    }
    let none = BTreeMap::from([("other".to_string(), "x".to_string())]);
    assert_eq!(level_of(Some(&none), Level::Baseline), Enforcement { level: Level::Baseline, origin: Origin::Default });
    assert_eq!(level_of(Some(&none), Level::Restricted).level, Level::Restricted);
    assert_eq!(
        level_of(Some(&labels("Privileged")), Level::Baseline),
        Enforcement { level: Level::Restricted, origin: Origin::UnknownValue("Privileged".into()) }
    );
    assert_eq!(level_of(None, Level::Privileged), Enforcement { level: Level::Restricted, origin: Origin::NotCached });
}

#[test]
fn refusals_name_pod_namespace_level_origin_and_fields() {
    let p = pod(json!({"spec": {"containers": [{"name": "x", "image": "x", "securityContext": {"privileged": true}}],
                                "volumes": [{"name": "data", "hostPath": {"path": "/var"}}]}}));
    let violations = check(Level::Baseline, p.spec.as_ref().unwrap(), &p.metadata);
    let errors = to_errors(&violations).to_string();
    assert!(
        errors.contains("spec.containers[0].securityContext.privileged: Forbidden: privileged (container \"x\" must not set securityContext.privileged=true)"),
        "{errors}"
    );
    assert!(errors.contains("spec.volumes[0].hostPath: Forbidden: hostPath volumes (volume \"data\")"), "{errors}");
    let label = Enforcement { level: Level::Baseline, origin: Origin::Label };
    assert_eq!(
        summary("web", "team", &label),
        "pod \"web\" in namespace \"team\" violates PodSecurity \"baseline:latest\""
    );
    let default = summary("web", "team", &Enforcement { level: Level::Baseline, origin: Origin::Default });
    assert!(
        default.ends_with("(namespace has no label pod-security.kubernetes.io/enforce: default level baseline)"),
        "{default}"
    );
    let unknown = summary(
        "web",
        "team",
        &level_of(Some(&BTreeMap::from([(ENFORCE_LABEL.into(), "strict".into())])), Level::Baseline),
    );
    assert!(unknown.contains("\"restricted:latest\""), "{unknown}");
    assert!(unknown.contains("=\"strict\" is not a level"), "{unknown}");
    assert!(unknown.contains("enforced as restricted"), "{unknown}");
    assert!(
        summary("web", "new", &level_of(None, Level::Baseline)).contains("not yet in the admission server's cache")
    );
}

#[test]
fn levels_parse_only_as_spelled() {
    assert_eq!(Level::parse("baseline"), Some(Level::Baseline));
    assert_eq!(Level::parse("Baseline"), None);
    assert_eq!(serde_json::to_value(Level::Restricted).unwrap(), json!("restricted"));
    assert_eq!(serde_json::from_value::<Level>(json!("privileged")).unwrap(), Level::Privileged);
}
