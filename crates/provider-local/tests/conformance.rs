//! Every kind of provider-local through the SDK's conformance suite on a real kube-apiserver:
//! create, no-op updates, a spec update, a reconcile request, migrate, restore and delete. The
//! controllers and actuators act as the chart's ServiceAccount.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use base64::Engine;
use extension_sdk::api::Opaque;
use extension_sdk::api::extensions::bastion::BastionIngressPolicy;
use extension_sdk::api::extensions::dnsrecord::DnsRecordType;
use extension_sdk::api::extensions::operatingsystemconfig::{
    File, FileContent, FileContentInline, OperatingSystemConfigPurpose, Unit,
};
use extension_sdk::api::extensions::*;
use extension_sdk::k8s_openapi::api::networking::v1::IPBlock;
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::testing::{Conformance, Report};
use extension_sdk::{Actuator, kube::Client};
use provider_local::*;
use serde_json::json;
use support::*;

async fn conforms<K: ExtensionResource, A: Actuator<K>>(
    make: impl FnOnce(Client) -> A + Send + 'static,
    sample: K,
    update: impl Fn(&mut K) + Send + Sync + 'static,
) -> Report {
    conforms_as(make, sample, update, chart_identity).await
}

/// Who the controller acts as: [`chart_identity`], possibly with a test simulator started.
type Identity = fn(
    &extension_sdk::testing::TestCluster,
) -> std::pin::Pin<Box<dyn Future<Output = Result<Client, String>> + Send + '_>>;

async fn conforms_as<K: ExtensionResource, A: Actuator<K>>(
    make: impl FnOnce(Client) -> A + Send + 'static,
    sample: K,
    update: impl Fn(&mut K) + Send + Sync + 'static,
    identity: Identity,
) -> Report {
    let report = bounded(Conformance::with_client(make, sample).with_spec_update(update).with_identity(identity).run())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
    assert_eq!(report.noop_calls, 0);
    assert_eq!(report.calls.get("Reconcile"), Some(&3), "{report}");
    assert_eq!(report.calls.get("Delete"), Some(&1), "{report}");
    if K::MIGRATABLE {
        assert_eq!(report.calls.get("Migrate"), Some(&1), "{report}");
        assert_eq!(report.calls.get("Restore"), Some(&1), "{report}");
    }
    report
}

fn namespaced<K: extension_sdk::kube::Resource>(mut obj: K) -> K {
    obj.meta_mut().namespace = Some(NS.into());
    obj
}

#[tokio::test]
async fn infrastructure_conforms() {
    let sample = namespaced(Infrastructure::new(
        "infra",
        InfrastructureSpec {
            default: default_spec(TYPE),
            region: "local".into(),
            secret_ref: cloudprovider(),
            ssh_public_key: None,
        },
    ));
    conforms(LocalInfrastructure::new, sample, |i| {
        i.spec.default.provider_config = Some(Opaque(json!({"nodeNetwork": "10.1.0.0/16"})))
    })
    .await;
}

#[tokio::test]
async fn dnsrecord_conforms() {
    let sample = namespaced(DNSRecord::new(
        "api-internal",
        DNSRecordSpec {
            default: default_spec(TYPE),
            secret_ref: cloudprovider(),
            name: "api.local.internal.local.gardener.cloud".into(),
            record_type: DnsRecordType::A,
            values: vec!["10.0.0.1".into()],
            ttl: Some(120),
            ..Default::default()
        },
    ));
    conforms(|c| LocalDnsRecord::new(c, "provider-local-dns"), sample, |r| r.spec.values = vec!["10.0.0.2".into()])
        .await;
}

#[tokio::test]
async fn backupbucket_conforms() {
    let root = tempfile::tempdir().unwrap();
    let config = BackupConfig::new(root.path());
    let sample = BackupBucket::new(
        "bucket-1",
        BackupBucketSpec { default: default_spec(TYPE), region: "local".into(), secret_ref: cloudprovider() },
    );
    conforms(move |c| LocalBackupBucket::new(c, config), sample, |b| b.spec.region = "local-2".into()).await;
    assert!(!root.path().join("bucket-1").exists(), "the bucket directory survived the delete");
}

#[tokio::test]
async fn backupentry_conforms() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket-1")).unwrap();
    let config = BackupConfig::new(root.path());
    let name = format!("{NS}--0b8f2c3e-uid");
    let sample = BackupEntry::new(
        &name,
        BackupEntrySpec {
            default: default_spec(TYPE),
            backup_bucket_provider_status: None,
            region: "local".into(),
            secret_ref: cloudprovider(),
            bucket_name: "bucket-1".into(),
        },
    );
    conforms(move |_| LocalBackupEntry::new(config), sample, |e| e.spec.region = "local-2".into()).await;
    assert!(!root.path().join("bucket-1").join(&name).exists(), "the entry directory survived the delete");
    assert!(root.path().join("bucket-1").exists(), "deleting an entry removed its bucket");
}

#[tokio::test]
async fn operatingsystemconfig_conforms() {
    let file = |data: &str| File {
        path: "/etc/motd".into(),
        permissions: Some(0o644),
        content: FileContent {
            inline: Some(FileContentInline { encoding: String::new(), data: data.into() }),
            ..Default::default()
        },
    };
    let sample = namespaced(OperatingSystemConfig::new(
        "osc-pool",
        OperatingSystemConfigSpec {
            default: default_spec(TYPE),
            purpose: OperatingSystemConfigPurpose::Reconcile,
            units: vec![Unit {
                name: "kubelet.service".into(),
                content: Some("[Service]\n".into()),
                ..Default::default()
            }],
            files: vec![file("hello\n")],
            ..Default::default()
        },
    ));
    conforms(|c| LocalOperatingSystemConfig::new(c, None), sample, move |o| o.spec.files = vec![file("changed\n")])
        .await;
}

#[tokio::test]
async fn worker_conforms() {
    let sample = worker(vec![pool("pool", 2, "machine:1")]);
    let update = |w: &mut Worker| w.spec.pools = vec![pool("pool", 2, "machine:2")];
    conforms_as(|c| LocalWorker::new(c, None), sample, update, chart_identity_with_machine_simulator).await;
}

/// [`chart_identity`], plus the machine simulator: there is no kubelet here, so machine Pods
/// would never run and a Worker would wait for them forever.
#[allow(clippy::type_complexity)] // the SDK's BoxFuture, spelled out
fn chart_identity_with_machine_simulator(
    tc: &extension_sdk::testing::TestCluster,
) -> std::pin::Pin<Box<dyn Future<Output = Result<Client, String>> + Send + '_>> {
    tokio::spawn(pod_simulator(tc.client.clone(), provider_local::worker::LABEL_POOL));
    chart_identity(tc)
}

/// [`chart_identity`], plus the bastion's kubelet stand-in: its Pod turns ready.
#[allow(clippy::type_complexity)] // the SDK's BoxFuture, spelled out
fn chart_identity_with_bastion_simulator(
    tc: &extension_sdk::testing::TestCluster,
) -> std::pin::Pin<Box<dyn Future<Output = Result<Client, String>> + Send + '_>> {
    tokio::spawn(pod_simulator(tc.client.clone(), provider_local::bastion::LABEL_BASTION));
    chart_identity(tc)
}

/// Test stand-in for the kubelets: marks every Pod with the label `label` `Running` and ready.
async fn pod_simulator(admin: Client, label: &'static str) {
    use extension_sdk::k8s_openapi::api::core::v1::Pod;
    use extension_sdk::kube::ResourceExt;
    use extension_sdk::kube::api::{Api, ListParams, Patch, PatchParams};
    let pods: Api<Pod> = Api::all(admin.clone());
    loop {
        if let Ok(list) = pods.list(&ListParams::default().labels(label)).await {
            for p in list.items {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                if phase != Some("Running") && p.metadata.deletion_timestamp.is_none() {
                    let api: Api<Pod> = Api::namespaced(admin.clone(), &p.namespace().unwrap_or_default());
                    let status = Patch::Merge(json!({"status": {"phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True"}]}}));
                    let _ = api.patch_status(&p.name_any(), &PatchParams::default(), &status).await;
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn controlplane_conforms() {
    let sample = namespaced(ControlPlane::new(
        "cp",
        ControlPlaneSpec {
            default: default_spec(TYPE),
            purpose: None,
            infrastructure_provider_status: None,
            region: "local".into(),
            secret_ref: cloudprovider(),
        },
    ));
    conforms(|client| LocalControlPlane::new(client, None), sample, |c| c.spec.region = "local-2".into()).await;
}

#[tokio::test]
async fn network_conforms() {
    let sample = namespaced(Network::new(
        "net",
        NetworkSpec {
            default: default_spec(TYPE),
            pod_cidr: "10.3.0.0/16".into(),
            service_cidr: "10.4.0.0/16".into(),
            ip_families: Vec::new(),
        },
    ));
    conforms(|client| LocalNetwork::new(client, None), sample, |n| n.spec.pod_cidr = "10.5.0.0/16".into()).await;
}

#[tokio::test]
async fn bastion_conforms() {
    let ingress = |cidr: &str| vec![BastionIngressPolicy { ip_block: IPBlock { cidr: cidr.into(), except: None } }];
    let sample = namespaced(Bastion::new(
        "bastion-1",
        BastionSpec {
            default: default_spec(TYPE),
            user_data: base64::engine::general_purpose::STANDARD
                .encode("echo ssh-ed25519 AAAA >> /root/.ssh/authorized_keys"),
            ingress: ingress("10.0.0.0/8"),
        },
    ));
    conforms_as(
        |c| LocalBastion::new(c, BastionConfig::default()),
        sample,
        move |b| b.spec.ingress = ingress("192.168.0.0/16"),
        chart_identity_with_bastion_simulator,
    )
    .await;
}

#[tokio::test]
async fn extension_conforms() {
    let sample = namespaced(Extension::new(
        "local-ext-after-worker",
        ExtensionSpec { default: default_spec(provider_local::extension::TYPE_AFTER_WORKER) },
    ));
    conforms(LocalExtension::new, sample, |e| e.spec.default.provider_config = Some(Opaque(json!({"x": 1})))).await;
}
