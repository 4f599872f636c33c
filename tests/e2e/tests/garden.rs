//! The garden on the local cluster, as `hack/local-garden.sh` installs it with Helm from
//! `charts/` (provider-local through its ControllerRegistration, installed by gardenlet): every
//! component's pods run our images as an unprivileged user and are Ready, the seed is
//! registered, each component has exactly one leader that a frozen leader loses to its standby
//! within the lease duration, a `helm upgrade --reuse-values` with a changed value rolls out and
//! keeps the release's other values, a changed
//! ControllerDeployment rolls out through gardenlet, and the admission webhooks (served by every
//! controller-manager replica behind one Service) refuse an invalid Shoot.
//! These tests change the garden's pods, so they run one at a time (`-j 1`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::{client, kubectl, repo_root, state_dir};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use std::time::{Duration, Instant};

const NS: &str = "garden";
/// Where gardenlet installs provider-local (`extension-<ControllerInstallation>`).
const EXTENSION_NS: &str = "extension-provider-local-local";
/// The namespaces and Deployments, their leader Leases, the process name (`comm`, 15 characters
/// at most) and the metrics port.
const COMPONENTS: [(&str, &str, &str, &str, u16); 4] = [
    (NS, "gardener-scheduler", "gardener-scheduler-leader-election", "gardener-schedu", 8080),
    (NS, "gardener-controller-manager", "gardener-controller-manager-leader-election", "gardener-contro", 10258),
    (NS, "gardenlet", "gardenlet-local-leader-election", "gardenlet", 8080),
    (EXTENSION_NS, "gardener-extension-provider-local", "provider-local-leader-election", "gardener-extens", 8080),
];
/// The runner's lease duration (extension_sdk::LeaderElectionConfig::new).
const LEASE_DURATION: Duration = Duration::from_secs(15);

async fn wait<T, Fut: std::future::Future<Output = Result<T, String>>>(
    what: &str,
    timeout: Duration,
    mut probe: impl FnMut() -> Fut,
) -> T {
    let start = Instant::now();
    loop {
        let last = match probe().await {
            Ok(v) => return v,
            Err(e) => e,
        };
        if start.elapsed() > timeout {
            let pods = kubectl(&["-n", NS, "get", "pods,leases", "-o", "wide"]).unwrap_or_else(|e| e);
            panic!("{what}: not within {timeout:?}; last: {last}\n{pods}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn pods_of(client: &Client, ns: &str, name: &str) -> Vec<Pod> {
    let selector = format!("app.kubernetes.io/name={name}");
    let pods = Api::<Pod>::namespaced(client.clone(), ns).list(&ListParams::default().labels(&selector)).await.unwrap();
    pods.items.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect()
}

async fn holder(client: &Client, ns: &str, lease: &str) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), ns).get_opt(lease).await.ok()??;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

/// The host PID of the container process `comm` in the pod with `uid` (cgroup v1 paths name the
/// pod's UID).
fn host_pid(uid: &str, comm: &str) -> Option<u32> {
    let cgroup_uid = uid.replace('-', "_");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        (name.trim() == comm && (cgroup.contains(uid) || cgroup.contains(&cgroup_uid))).then_some(pid)
    })
}

fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

#[tokio::test]
async fn every_component_runs_ready_unprivileged_with_one_leader_and_the_seed_registered() {
    let client = client().await;
    for (ns, name, lease, _, port) in COMPONENTS {
        // Another test may just have rolled this component out: wait (bounded) until its
        // rollout is complete, exactly two pods of the current template Ready.
        wait(&format!("{name}: two current replicas Ready"), Duration::from_secs(90), || {
            let deployments = Api::<Deployment>::namespaced(client.clone(), ns);
            async move {
                let status = deployments.get(name).await.map_err(|e| e.to_string())?.status.unwrap_or_default();
                let counts = (status.replicas, status.updated_replicas, status.ready_replicas);
                if counts == (Some(2), Some(2), Some(2)) { Ok(()) } else { Err(format!("{status:?}")) }
            }
        })
        .await;
        let pods = pods_of(&client, ns, name).await;
        let names: Vec<String> = pods.iter().map(ResourceExt::name_any).collect();
        for pod in &pods {
            let spec = pod.spec.as_ref().unwrap();
            let container = &spec.containers[0];
            assert!(
                container.image.as_deref().unwrap().starts_with(&format!("gardener-rs.local/{name}:v")),
                "{container:?}"
            );
            let security = spec.security_context.as_ref().unwrap();
            assert_eq!((security.run_as_non_root, security.run_as_user), (Some(true), Some(65532)), "{name}");
            let container_security = container.security_context.as_ref().unwrap();
            assert_eq!(container_security.read_only_root_filesystem, Some(true), "{name}");
            // /metrics answers on the pod's address, where Prometheus would scrape it.
            let ip = pod.status.as_ref().unwrap().pod_ip.clone().unwrap();
            let addr = format!("{ip}:{port}").parse().unwrap();
            let metrics = tokio::task::spawn_blocking(move || testenv::binary::http_get(addr, "/metrics"))
                .await
                .unwrap()
                .unwrap_or_default();
            assert!(metrics.contains("# TYPE"), "{name} /metrics: {metrics}");
        }
        // Right after a rollout (another test may just have upgraded a release) the old leader
        // has released the Lease and a new pod has not taken it yet: wait at most a few lease
        // durations for one of the current pods to lead.
        let leader = wait(&format!("{name}: one of its pods {names:?} to lead"), LEASE_DURATION * 3, || {
            let (client, names) = (client.clone(), names.clone());
            async move {
                let leader = holder(&client, ns, lease).await.unwrap_or_default();
                if names.contains(&leader) { Ok(leader) } else { Err(format!("held by {leader:?}")) }
            }
        })
        .await;
        assert!(names.contains(&leader));
    }
    let seed =
        kubectl(&["get", "seed", "local", "-o", "jsonpath={.status.conditions[?(@.type==\"GardenletReady\")].status}"]);
    assert_eq!(seed.unwrap().trim(), "True");
}

#[tokio::test]
async fn a_frozen_leader_loses_its_lease_to_the_standby_and_steps_down() {
    let client = client().await;
    let (ns, name, lease, comm, _) = COMPONENTS[0];
    let leader = holder(&client, ns, lease).await.expect("a leader");
    let pod = pods_of(&client, ns, name).await.into_iter().find(|p| p.name_any() == leader).expect("the leader's pod");
    let pid = host_pid(&pod.uid().unwrap(), comm).expect("the leader's process on the host");

    // SIGSTOP: the leader can neither renew nor release, like a hung process or a partition.
    signal(pid, "-STOP");
    let frozen = Instant::now();
    let next =
        wait("the standby to take the lease", LEASE_DURATION * 3, || {
            let client = client.clone();
            let leader = leader.clone();
            async move {
                holder(&client, ns, lease).await.filter(|h| *h != leader).ok_or_else(|| format!("held by {leader}"))
            }
        })
        .await;
    let took = frozen.elapsed();
    eprintln!("{name}: {next} took over {took:.1?} after the leader froze");
    assert!(took >= LEASE_DURATION - Duration::from_secs(3), "taken over before the lease could expire: {took:?}");

    // Thawed, the old leader finds the lease taken and stops (its container restarts); it does
    // not take the lease back.
    signal(pid, "-CONT");
    wait("the old leader to step down", Duration::from_secs(60), || async {
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            Err(format!("process {pid} still runs"))
        } else {
            Ok(())
        }
    })
    .await;
    assert_eq!(holder(&client, ns, lease).await.as_deref(), Some(next.as_str()));
    wait("both replicas Ready again", Duration::from_secs(90), || {
        let client = client.clone();
        async move {
            let d = Api::<Deployment>::namespaced(client, ns).get(name).await.map_err(|e| e.to_string())?;
            let ready = d.status.and_then(|s| s.ready_replicas);
            if ready == Some(2) { Ok(()) } else { Err(format!("ready replicas {ready:?}")) }
        }
    })
    .await;
}

#[tokio::test]
async fn a_helm_upgrade_with_changed_values_rolls_out() {
    let client = client().await;
    let name = "gardenlet";
    let before = Api::<Deployment>::namespaced(client.clone(), NS).get(name).await.unwrap();
    let upgrade = |level: &str| {
        let root = repo_root();
        let kubeconfig = state_dir().join("kubeconfig");
        let status = std::process::Command::new("python3")
            .current_dir(&root)
            .args(["hack/helm.py", "upgrade", name, "charts/gardener/gardenlet", "--namespace", NS])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--reuse-values", "--set-json", &format!("logLevel=\"{level}\"")])
            .status()
            .unwrap();
        assert!(status.success(), "helm upgrade {name} --set logLevel={level}");
    };
    upgrade("debug,kube=warn");
    let after = Api::<Deployment>::namespaced(client.clone(), NS).get(name).await.unwrap();
    assert!(after.metadata.generation > before.metadata.generation, "the upgrade changed the pod template");
    // The values hack/local-garden.sh gave on the command line (the backup store's volume) are
    // kept: an upgrade that changes one value must not drop the others.
    let volumes = |d: &Deployment| -> Vec<String> {
        let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        spec.map(|s| s.volumes.iter().flatten().map(|v| v.name.clone()).collect()).unwrap_or_default()
    };
    assert!(
        volumes(&before).contains(&"backup".to_string()),
        "local-garden.sh mounts the backup store: {:?}",
        volumes(&before)
    );
    assert_eq!(volumes(&after), volumes(&before), "the upgrade kept the release's other values");
    // Helm waited for the rollout: every pod runs the new arguments and is Ready.
    for pod in pods_of(&client, NS, name).await {
        let args = pod.spec.unwrap().containers[0].args.clone().unwrap_or_default();
        assert!(args.contains(&"--log-level=debug,kube=warn".to_string()), "{args:?}");
    }
    upgrade("info,kube=warn");
}

/// The condition `type_` of ControllerInstallation provider-local-local.
fn installation_condition(type_: &str) -> String {
    let path = format!("jsonpath={{.status.conditions[?(@.type==\"{type_}\")].status}}");
    kubectl(&["get", "controllerinstallation", "provider-local-local", "-o", &path])
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[tokio::test]
async fn provider_local_is_installed_by_gardenlet_and_follows_its_controller_deployment() {
    let client = client().await;
    for type_ in ["Valid", "Installed", "Healthy"] {
        assert_eq!(installation_condition(type_), "True", "ControllerInstallation provider-local-local {type_}");
    }
    let name = "gardener-extension-provider-local";
    let deployments = Api::<Deployment>::namespaced(client.clone(), EXTENSION_NS);
    let labels = deployments.get(name).await.unwrap().metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("controllerinstallation.core.gardener.cloud/name").map(String::as_str),
        Some("provider-local-local")
    );
    // One replica instead of two in the ControllerDeployment: gardenlet applies it, the
    // installation reports the rollout, and is Healthy again once done.
    let scale = |replicas: i64| {
        let patch = format!(
            "[{{\"op\": \"replace\", \"path\": \"/providerConfig/manifests/5/spec/replicas\", \"value\": {replicas}}}]"
        );
        // v1beta1 by name: kubectl prefers v1, where a custom type (`manifest`) lives in the
        // migration annotations (docs/api.md).
        let kind = kubectl(&[
            "get",
            "controllerdeployments.v1beta1.core.gardener.cloud",
            "provider-local",
            "-o",
            "jsonpath={.providerConfig.manifests[5].kind}",
        ]);
        assert_eq!(kind.unwrap().trim(), "Deployment");
        kubectl(&[
            "patch",
            "controllerdeployments.v1beta1.core.gardener.cloud",
            "provider-local",
            "--type=json",
            "-p",
            &patch,
        ])
        .unwrap();
    };
    scale(1);
    let rolled = |want: i32| {
        let deployments = deployments.clone();
        move || {
            let deployments = deployments.clone();
            async move {
                let d = deployments.get(name).await.map_err(|e| e.to_string())?;
                let replicas = d.spec.and_then(|s| s.replicas);
                let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
                let healthy = installation_condition("Healthy");
                if replicas == Some(want) && ready == want && healthy == "True" {
                    Ok(())
                } else {
                    Err(format!("replicas {replicas:?}, ready {ready}, Healthy {healthy}"))
                }
            }
        }
    };
    wait("provider-local scaled to 1 through its ControllerDeployment", Duration::from_secs(90), rolled(1)).await;
    scale(2);
    wait("provider-local back at 2 replicas", Duration::from_secs(90), rolled(2)).await;
}

#[tokio::test]
async fn the_admission_webhooks_refuse_an_invalid_shoot_through_every_replica() {
    let ns = "garden-e2e-admission";
    kubectl(&["create", "namespace", ns]).unwrap();
    let shoot = serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
        "metadata": {"name": "invalid", "namespace": ns},
        "spec": {
            "cloudProfileName": "no-such-profile", "region": "local", "secretBindingName": "local",
            "kubernetes": {"version": "1.31.1"},
            "networking": {"type": "calico"},
            "provider": {"type": "local", "workers": [{"name": "pool", "minimum": 1, "maximum": 2, "machine": {"type": "local"}}]}
        }
    });
    let file = std::env::temp_dir().join(format!("e2e-invalid-shoot-{}.json", std::process::id()));
    std::fs::write(&file, shoot.to_string()).unwrap();
    // The Service spreads the API server's calls over both replicas; every call must reach a
    // webhook that answers (a replica that did not serve would fail about half of them with
    // "failed calling webhook").
    for attempt in 0..10 {
        let refused = kubectl(&["create", "-f", file.to_str().unwrap()]);
        let message = refused.expect_err("an invalid Shoot must be refused");
        assert!(
            message.contains("denied the request") && message.contains("spec.cloudProfileName: Not found"),
            "attempt {attempt}: {message}"
        );
    }
    let _ = std::fs::remove_file(&file);
    kubectl(&["delete", "namespace", ns, "--wait=false"]).unwrap();
}
