//! Every container of every control-plane pod runs with least privilege and a memory limit;
//! etcd's root step and its restore do what they say, run by `sh` in a directory standing in
//! for the volume.

use super::*;
use crate::components::common::ControlPlaneValues;
use crate::components::{etcd, kube_apiserver, kube_controller_manager, kube_scheduler};
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The components' shared fixture with an audit policy (one more mounted Secret), the local
/// seed's request percentage and, with `backup`, etcd's restore step.
fn values(backup: bool) -> ControlPlaneValues {
    let mut values = crate::components::tests::values();
    values.apiserver.audit_policy = Some("apiVersion: audit.k8s.io/v1\nkind: Policy\n".into());
    values.requests_percent = 20;
    values.etcd_backup = backup.then(|| crate::components::etcd_backup::EtcdBackup {
        dir: "/var/lib/backup/b/e".to_string(),
        settings: Default::default(),
        full_snapshot_schedule: "0 0 * * *".to_string(),
    });
    values
}

/// `(pod name, pod spec)` of every control-plane pod, etcd with and without the restore.
fn pods() -> Vec<(&'static str, PodSpec)> {
    let spec = |t: k8s_openapi::api::core::v1::PodTemplateSpec| t.spec.unwrap();
    vec![
        ("etcd", spec(etcd::statefulset(&values(false)).spec.unwrap().template)),
        ("etcd with backup", spec(etcd::statefulset(&values(true)).spec.unwrap().template)),
        ("kube-apiserver", spec(kube_apiserver::deployment(&values(false)).spec.unwrap().template)),
        ("kube-controller-manager", spec(kube_controller_manager::deployment(&values(false)).spec.unwrap().template)),
        ("kube-scheduler", spec(kube_scheduler::deployment(&values(false)).spec.unwrap().template)),
    ]
}

fn containers(pod: &PodSpec) -> Vec<&Container> {
    pod.init_containers.iter().flatten().chain(&pod.containers).collect()
}

fn mib(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> u64 {
    let (n, unit) = q.0.split_at(q.0.len() - 2);
    let n: u64 = n.parse().unwrap_or_else(|_| panic!("not a number of Mi or Gi: {}", q.0));
    match unit {
        "Mi" => n,
        "Gi" => n * 1024,
        _ => panic!("not in Mi or Gi: {}", q.0),
    }
}

#[test]
fn memory_is_written_as_the_api_server_stores_it() {
    // The API server stores 1024Mi as 1Gi: an intent of 1024Mi would never match the object.
    let q = |n| crate::components::common::mebibytes(n).0;
    assert_eq!((q(64), q(1024), q(2048), q(1536)), ("64Mi".into(), "1Gi".into(), "2Gi".into(), "1536Mi".into()));
}

#[test]
fn every_container_runs_unprivileged_with_a_memory_limit_but_the_data_dir_step() {
    for (name, pod) in pods() {
        let p = pod.security_context.clone().unwrap_or_default();
        assert_eq!(p.fs_group, Some(NONROOT), "{name}: fsGroup makes the mounted Secrets readable");
        assert_eq!((p.run_as_user, p.run_as_group, p.run_as_non_root), (Some(NONROOT), Some(NONROOT), Some(true)));
        assert_eq!(p.seccomp_profile.map(|s| s.type_).as_deref(), Some("RuntimeDefault"), "{name}");
        for c in containers(&pod) {
            let what = format!("{name}/{}", c.name);
            let s = c.security_context.clone().unwrap_or_else(|| panic!("{what}: no security context"));
            assert_eq!(s.allow_privilege_escalation, Some(false), "{what}");
            assert_eq!(s.read_only_root_filesystem, Some(true), "{what}");
            assert_eq!(s.seccomp_profile.map(|s| s.type_).as_deref(), Some("RuntimeDefault"), "{what}");
            assert_eq!(s.privileged, None, "{what}");
            let caps = s.capabilities.unwrap_or_default();
            assert_eq!(caps.drop, Some(vec!["ALL".to_string()]), "{what}");
            if c.name == "data-dir" {
                // The one documented exception: root with exactly these capabilities.
                assert!(name.starts_with("etcd"), "{what}");
                assert_eq!((s.run_as_user, s.run_as_non_root), (Some(0), Some(false)), "{what}");
                assert_eq!(caps.add.unwrap_or_default(), DATA_DIR_CAPABILITIES, "{what}");
            } else {
                let user = s.run_as_user.or(p.run_as_user);
                assert_eq!((user, s.run_as_non_root), (Some(NONROOT), Some(true)), "{what}");
                assert_eq!(caps.add, None, "{what}");
            }
            let r = c.resources.clone().unwrap_or_else(|| panic!("{what}: no resources"));
            let limit = r.limits.unwrap_or_default().get("memory").map(mib).unwrap_or_else(|| panic!("{what}"));
            let request = r.requests.unwrap_or_default().get("memory").map(mib).unwrap_or_else(|| panic!("{what}"));
            assert!(limit >= 64 && limit >= request, "{what}: limit {limit}Mi, request {request}Mi");
        }
    }
}

#[test]
fn init_containers_ask_no_more_than_the_pod_already_does() {
    // An init container's requests count on their own (the larger of it and the containers'
    // sum): one without requests would be given its limit as request.
    let pod = etcd::statefulset(&values(true)).spec.unwrap().template.spec.unwrap();
    let memory = |c: &Container| mib(&c.resources.as_ref().unwrap().requests.as_ref().unwrap()["memory"]);
    let etcd_request = memory(&pod.containers[0]);
    let names: Vec<&str> = pod.init_containers.iter().flatten().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["data-dir", "restore"], "ownership first: the restore runs as etcd's user");
    // The root step sees etcd's volume only: never the backup store (mounted inside the data
    // volume's path for the restore).
    let init = pod.init_containers.clone().unwrap();
    let mounted: Vec<&str> = init[0].volume_mounts.iter().flatten().map(|m| m.name.as_str()).collect();
    assert_eq!(mounted, ["data"]);
    for c in pod.init_containers.iter().flatten() {
        assert!(memory(c) <= etcd_request, "{}", c.name);
    }
    let plain = etcd::statefulset(&values(false)).spec.unwrap().template.spec.unwrap();
    assert_eq!(plain.init_containers.unwrap().len(), 1, "the ownership step runs without backups too");
}

#[test]
fn mounted_files_are_readable_by_the_fs_group() {
    for (name, pod) in pods() {
        for v in pod.volumes.iter().flatten() {
            if let Some(secret) = &v.secret {
                let mode = secret.default_mode.unwrap_or(0o644);
                assert_eq!(mode & 0o040, 0o040, "{name}/{}: mode {mode:o}", v.name);
                assert_eq!(mode & 0o007, 0, "{name}/{}: others read no secret", v.name);
            }
            if let Some(cm) = &v.config_map {
                assert_eq!(cm.default_mode.unwrap_or(0o644) & 0o040, 0o040, "{name}/{}", v.name);
            }
            assert!(v.host_path.is_none() || v.name == "backup", "{name}/{}: no hostPath but the backup", v.name);
        }
    }
}

#[test]
fn every_port_is_above_1024_and_the_api_server_keeps_443_on_its_service() {
    for (name, pod) in pods() {
        for c in containers(&pod) {
            for p in c.ports.iter().flatten() {
                assert!(p.container_port > 1024, "{name}/{}: port {}", c.name, p.container_port);
            }
            for a in c.args.iter().flatten().filter_map(|a| a.strip_prefix("--secure-port=")) {
                assert!(a.parse::<i32>().unwrap() > 1024, "{name}: --secure-port={a}");
            }
        }
    }
    let svc = kube_apiserver::service(&values(false), kube_apiserver::ServiceType::ClusterIP, None);
    let port = &svc.spec.unwrap().ports.unwrap()[0];
    // By name: during the roll from an API server on 443, each pod is reached on its own port.
    assert_eq!((port.port, port.target_port.clone()), (443, Some(IntOrString::String("https".into()))));
    let pod = kube_apiserver::deployment(&values(false)).spec.unwrap().template.spec.unwrap();
    let named = pod.containers[0].ports.iter().flatten().find(|p| p.name.as_deref() == Some("https"));
    assert_eq!(named.map(|p| p.container_port), Some(kube_apiserver::SECURE_PORT));
    assert!(kube_apiserver::args(&values(false)).contains(&format!("--secure-port={}", kube_apiserver::SECURE_PORT)));
}

/// Runs `script` with `sh`, its `/var/etcd` paths moved into `root`, the directories of `path`
/// first on the PATH.
fn run(script: &str, root: &Path, path: &[&Path]) -> std::process::Output {
    let script = script.replace("/var/etcd", &root.display().to_string());
    let mut dirs: Vec<String> = path.iter().map(|p| p.display().to_string()).collect();
    dirs.push(std::env::var("PATH").unwrap_or_default());
    std::process::Command::new("sh")
        .args(["-c", &script])
        .env("PATH", dirs.join(":"))
        .env("POD_NAME", "etcd-main-0")
        .output()
        .unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn the_data_dir_step_hands_the_volume_over_and_follows_no_link() {
    let root = tempfile::tempdir().unwrap();
    let (uid, gid) = {
        let m = std::fs::metadata(root.path()).unwrap();
        (i64::from(m.uid()), i64::from(m.gid()))
    };
    let script = etcd::data_dir_script(uid, gid);
    assert!(script.contains(&format!("chown -R -h {uid}:{gid} /var/etcd\n")), "{script}");
    // A new volume: no data directory yet (etcd creates it, mode 0700, as its user).
    let out = run(&script, root.path(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!root.path().join("data").exists());
    // A data directory written by an etcd that ran as root: mode 0755, becomes 0700.
    let data = root.path().join("data");
    std::fs::create_dir_all(data.join("member/snap")).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run(&script, root.path(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&data), 0o700);
    assert_eq!(std::fs::metadata(data.join("member/snap")).unwrap().uid(), uid as u32);
    // A data directory replaced by a link: the link's target keeps its mode.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &data).unwrap();
    let out = run(&script, root.path(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(elsewhere.path()), 0o755, "the link is not followed");
}
