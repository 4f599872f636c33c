//! Valid example objects: a `local` CloudProfile, the ControllerRegistrations serving the
//! extension types the example objects name, and a Shoot that passes every rule against them.
//! The unit tests, the integration tests and the fuzz benchmark mutate these.

use api::core::cloudprofile::{
    AvailabilityZone, CloudProfileSpec, ExpirableVersion, KubernetesSettings, MachineImage, MachineImageVersion,
    MachineType, Region, VersionClassification, VolumeType,
};
use api::core::controller::ControllerResource;
use api::core::shoot::provider::Machine;
use api::core::shoot::{Networking, Provider, Worker};
use api::core::{CloudProfile, ControllerRegistration, ControllerRegistrationSpec, Shoot, ShootSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

/// 2020-01-01T00:00:00Z: the expiry of the profile's expired versions.
pub const EXPIRED_AT: i64 = 1_577_836_800;

fn version(v: &str, class: Option<VersionClassification>, expired: bool) -> ExpirableVersion {
    ExpirableVersion {
        version: v.into(),
        classification: class,
        expiration_date: if expired { Timestamp::from_second(EXPIRED_AT).ok().map(Time) } else { None },
    }
}

/// The `local` profile: Kubernetes 1.20.2 (supported), 1.21.0 (preview), 1.19.7 (expired);
/// image `local` 1.0.0 and 0.9.0 (expired); machine types `local` and `large`; region `local`
/// with zone `0`; volume type `default`.
pub fn cloud_profile_spec() -> CloudProfileSpec {
    CloudProfileSpec {
        type_: "local".into(),
        kubernetes: KubernetesSettings {
            versions: vec![
                version("1.21.0", Some(VersionClassification::Preview), false),
                version("1.20.2", Some(VersionClassification::Supported), false),
                version("1.19.7", Some(VersionClassification::Deprecated), true),
            ],
        },
        machine_images: vec![MachineImage {
            name: "local".into(),
            versions: vec![
                MachineImageVersion { expirable: version("1.0.0", None, false), ..Default::default() },
                MachineImageVersion { expirable: version("0.9.0", None, true), ..Default::default() },
            ],
        }],
        machine_types: ["local", "large"]
            .iter()
            .map(|n| MachineType {
                name: (*n).into(),
                cpu: Quantity("1".into()),
                gpu: Quantity("0".into()),
                memory: Quantity("1Gi".into()),
                usable: Some(true),
                ..Default::default()
            })
            .collect(),
        regions: vec![Region {
            name: "local".into(),
            zones: vec![AvailabilityZone { name: "0".into(), ..Default::default() }],
            ..Default::default()
        }],
        volume_types: vec![VolumeType {
            name: "default".into(),
            class: "standard".into(),
            usable: Some(true),
            min_size: None,
        }],
        ..Default::default()
    }
}

/// The `local` CloudProfile object.
pub fn cloud_profile() -> CloudProfile {
    CloudProfile::new("local", cloud_profile_spec())
}

/// The ControllerRegistrations of the example garden: `provider-local` (every provider kind of
/// type `local`: Infrastructure, ControlPlane, Worker, Network, OperatingSystemConfig, DNSRecord,
/// BackupBucket, BackupEntry) and `networking-calico` (Network `calico`, the example shoot's).
pub fn controller_registrations() -> Vec<ControllerRegistration> {
    let resources = |kinds: &[&str], type_: &str| -> Vec<ControllerResource> {
        kinds
            .iter()
            .map(|k| ControllerResource { kind: (*k).into(), type_: type_.into(), ..Default::default() })
            .collect()
    };
    let local = [
        "Infrastructure",
        "ControlPlane",
        "Worker",
        "Network",
        "OperatingSystemConfig",
        "DNSRecord",
        "BackupBucket",
        "BackupEntry",
    ];
    vec![
        ControllerRegistration::new(
            "provider-local",
            ControllerRegistrationSpec { resources: resources(&local, "local"), ..Default::default() },
        ),
        ControllerRegistration::new(
            "networking-calico",
            ControllerRegistrationSpec { resources: resources(&["Network"], "calico"), ..Default::default() },
        ),
    ]
}

/// A valid shoot `demo` in `garden-dev` with one worker pool, before defaulting.
pub fn shoot() -> Shoot {
    Shoot {
        metadata: ObjectMeta { name: Some("demo".into()), namespace: Some("garden-dev".into()), ..Default::default() },
        spec: ShootSpec {
            cloud_profile_name: Some("local".into()),
            region: "local".into(),
            secret_binding_name: Some("local".into()),
            kubernetes: api::core::shoot::Kubernetes { version: "1.20.2".into(), ..Default::default() },
            networking: Some(Networking { type_: Some("calico".into()), ..Default::default() }),
            provider: Provider {
                type_: "local".into(),
                workers: vec![Worker {
                    name: "pool".into(),
                    minimum: 1,
                    maximum: 2,
                    machine: Machine { type_: "local".into(), ..Default::default() },
                    zones: vec!["0".into()],
                    ..Default::default()
                }],
                ..Default::default()
            },
            ..Default::default()
        },
        status: None,
    }
}

/// [`shoot`] with every configuration block the rules accept here set: the shoot-wide kubelet
/// (eviction thresholds, reservations, image GC, feature gates, ...), a second worker pool `b`
/// with its own kubelet, labels, annotations and taints on both pools, the API server (admission
/// plugins, audit policy, OIDC, service accounts, encryption, requests, watch caches, ...), the
/// controller manager, the scheduler, kube-proxy, maintenance, hibernation schedules, every
/// network range, DNS with the `local` provider, a referenced resource and the SSH setting.
/// Left out: fields that need a newer Kubernetes than 1.20 (`seccompDefault`, `memorySwap`,
/// `maxParallelImagePulls`, `imageMaximumGCAge`, `acceptedIssuers`), `spec.extensions` (no
/// example registration serves an Extension), `exposureClassName` (no ExposureClass in the
/// example garden) and `seedName` (the scheduler's). The latency benchmark reviews it (`--full`);
/// a test checks that the webhook admits it unchanged apart from defaults.
pub fn full_shoot() -> Shoot {
    let mut v = serde_json::to_value(shoot()).unwrap_or_else(|e| panic!("the example shoot serialises: {e}"));
    let kubelet = serde_json::json!({
        "maxPods": 90, "podPidsLimit": 1000, "registryPullQPS": 7, "registryBurst": 14,
        "streamingConnectionIdleTimeout": "5m", "containerLogMaxSize": "20Mi", "containerLogMaxFiles": 5,
        "cpuCFSQuota": true, "failSwapOn": true, "serializeImagePulls": true,
        "evictionHard": {"memoryAvailable": "100Mi", "imageFSAvailable": "5%", "imageFSInodesFree": "5%",
                         "nodeFSAvailable": "5%", "nodeFSInodesFree": "5%"},
        "evictionSoft": {"memoryAvailable": "200Mi", "imageFSAvailable": "10%", "imageFSInodesFree": "10%",
                         "nodeFSAvailable": "10%", "nodeFSInodesFree": "10%"},
        "evictionSoftGracePeriod": {"memoryAvailable": "1m30s", "imageFSAvailable": "1m30s", "imageFSInodesFree": "1m30s",
                                    "nodeFSAvailable": "1m30s", "nodeFSInodesFree": "1m30s"},
        "evictionMinimumReclaim": {"memoryAvailable": "0Mi", "imageFSAvailable": "0Mi", "imageFSInodesFree": "0Mi",
                                   "nodeFSAvailable": "0Mi", "nodeFSInodesFree": "0Mi"},
        "evictionPressureTransitionPeriod": "4m", "evictionMaxPodGracePeriod": 90,
        "imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 60, "imageMinimumGCAge": "3m",
        "kubeReserved": {"cpu": "80m", "memory": "256Mi", "ephemeralStorage": "1Gi", "pid": "20k"},
        "systemReserved": {"cpu": "50m", "memory": "128Mi"},
        "featureGates": {"GracefulNodeShutdown": true},
        "protectKernelDefaults": false, "cpuManagerPolicy": "none",
    });
    let spec = &mut v["spec"];
    spec["purpose"] = "evaluation".into();
    spec["dns"] = serde_json::json!({"domain": "demo.dev.local.gardener.cloud", "providers": [{"type": "local", "primary": true}]});
    spec["kubernetes"]["kubelet"] = kubelet;
    spec["kubernetes"]["kubeAPIServer"] = serde_json::json!({
        "featureGates": {"APIResponseCompression": true},
        "runtimeConfig": {"apps/v1": true},
        "admissionPlugins": [
            {"name": "PodNodeSelector", "config": {"podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "example.com/pool=a"}}},
            {"name": "AlwaysPullImages"},
            {"name": "EventRateLimit", "config": {"apiVersion": "eventratelimit.admission.k8s.io/v1alpha1", "kind": "Configuration", "limits": [{"type": "Server", "qps": 10, "burst": 20}]}},
            {"name": "LimitRanger", "disabled": true},
        ],
        "apiAudiences": ["kubernetes", "demo"],
        "auditConfig": {"auditPolicy": {"configMapRef": {"name": "audit-policy"}}},
        "defaultNotReadyTolerationSeconds": 120, "defaultUnreachableTolerationSeconds": 120,
        "enableAnonymousAuthentication": false,
        "encryptionConfig": {"resources": ["configmaps"]},
        "eventTTL": "2h",
        "logging": {"verbosity": 2, "httpAccessVerbosity": 3},
        "oidcConfig": {"issuerURL": "https://oidc.example.com", "clientID": "demo", "usernameClaim": "email",
                       "usernamePrefix": "oidc:", "groupsClaim": "groups", "groupsPrefix": "oidc:", "signingAlgs": ["RS256"],
                       "requiredClaims": {"hd": "example.com"}},
        "requests": {"maxNonMutatingInflight": 400, "maxMutatingInflight": 200},
        "serviceAccountConfig": {"issuer": "https://demo.example.com", "maxTokenExpiration": "720h"},
        "watchCacheSizes": {"default": 100, "resources": [{"apiGroup": "", "resource": "secrets", "size": 500}]},
    });
    spec["kubernetes"]["kubeControllerManager"] = serde_json::json!({
        "nodeCIDRMaskSize": 24, "nodeMonitorGracePeriod": "50s",
        "horizontalPodAutoscaler": {"syncPeriod": "20s", "tolerance": 0.1, "downscaleStabilization": "5m",
                                    "initialReadinessDelay": "30s", "cpuInitializationPeriod": "5m"},
        "featureGates": {"HPAScaleToZero": true},
    });
    spec["kubernetes"]["kubeScheduler"] = serde_json::json!({"profile": "bin-packing", "kubeMaxPDVols": "39", "featureGates": {"DefaultPodTopologySpread": true}});
    spec["kubernetes"]["kubeProxy"] =
        serde_json::json!({"enabled": true, "mode": "IPTables", "featureGates": {"EndpointSliceProxying": true}});
    spec["maintenance"] = serde_json::json!({
        "timeWindow": {"begin": "220000+0100", "end": "230000+0100"},
        "autoUpdate": {"kubernetesVersion": true, "machineImageVersion": false},
    });
    spec["hibernation"] = serde_json::json!({"enabled": false, "schedules": [
        {"start": "00 20 * * 1-5", "end": "00 07 * * 1-5", "location": "Europe/Berlin"},
        {"start": "00 18 * * 6"},
    ]});
    spec["networking"] = serde_json::json!({
        "type": "calico", "providerConfig": {"ipv4": {"mode": "Always"}},
        "pods": "100.96.0.0/11", "services": "100.64.0.0/13", "nodes": "10.250.0.0/16",
    });
    spec["resources"] =
        serde_json::json!([{"name": "extra", "resourceRef": {"apiVersion": "v1", "kind": "Secret", "name": "extra"}}]);
    spec["provider"]["workersSettings"] = serde_json::json!({"sshAccess": {"enabled": true}});
    let a = &mut spec["provider"]["workers"][0];
    a["maxSurge"] = 1.into();
    a["maxUnavailable"] = 0.into();
    a["machine"]["image"] = serde_json::json!({"name": "local", "version": "1.0.0"});
    a["labels"] = serde_json::json!({"example.com/pool": "a"});
    a["annotations"] = serde_json::json!({"example.com/note": "the first pool"});
    a["taints"] = serde_json::json!([{"key": "example.com/dedicated", "value": "a", "effect": "PreferNoSchedule"}]);
    let mut b = a.clone();
    b["name"] = "b".into();
    b["machine"]["type"] = "large".into();
    b["maximum"] = 3.into();
    b["labels"] = serde_json::json!({"example.com/pool": "b"});
    b["annotations"] = serde_json::json!({"example.com/note": "the second pool"});
    b["taints"] = serde_json::json!([{"key": "example.com/dedicated", "value": "b", "effect": "NoSchedule"}]);
    b["kubernetes"] = serde_json::json!({"kubelet": {
        "maxPods": 60, "registryPullQPS": 9, "podPidsLimit": 2000,
        "evictionHard": {"memoryAvailable": "200Mi", "nodeFSAvailable": "10%"},
        "kubeReserved": {"cpu": "100m", "memory": "512Mi"},
        "featureGates": {"GracefulNodeShutdown": true},
    }});
    spec["provider"]["workers"].as_array_mut().unwrap_or_else(|| panic!("the example shoot has workers")).push(b);
    serde_json::from_value(v).unwrap_or_else(|e| panic!("the full example shoot deserialises: {e}"))
}

/// `shoot` as the mutating webhook leaves it: defaulted against the `local` profile, as the
/// validating webhook sees it.
pub fn defaulted(mut shoot: Shoot) -> Shoot {
    let profile = cloud_profile_spec();
    let ctx = crate::shoot::DefaultingContext { profile: Some(&profile), seed: None, now: now() };
    crate::shoot::default_shoot(&mut shoot, ctx);
    shoot
}

/// The example garden the admission server tests, the property tests and the benchmarks review
/// against: the `local` CloudProfile and the ControllerRegistrations.
pub fn garden_lookup() -> crate::review::StaticLookup {
    crate::review::StaticLookup {
        cloud_profiles: vec![std::sync::Arc::new(cloud_profile())],
        controller_registrations: controller_registrations().into_iter().map(std::sync::Arc::new).collect(),
        ..Default::default()
    }
}

/// A Shoot CREATE AdmissionReview of `shoot` in `garden-dev` as the API server sends it.
pub fn shoot_create_review(shoot: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "0c9a8d74", "kind": {"group": "core.gardener.cloud", "version": "v1beta1", "kind": "Shoot"},
                    "resource": {"group": "core.gardener.cloud", "version": "v1beta1", "resource": "shoots"},
                    "name": "demo", "namespace": "garden-dev", "operation": "CREATE",
                    "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
                    "object": shoot, "dryRun": false}
    })
}

/// A time after [`EXPIRED_AT`] ("now" in tests).
pub fn now() -> Timestamp {
    Timestamp::from_second(EXPIRED_AT + 86_400 * 365).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use crate::review::{Admission, Endpoint, RulesConfig};
    use base64::Engine;
    use std::sync::Arc;

    /// The garden of the latency benchmark (`benches/latency.rs`).
    fn bench_admission() -> Admission {
        Admission::new(Arc::new(garden_lookup()), RulesConfig::default())
    }

    /// The AdmissionReview the benchmark sends.
    fn review(shoot: &serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&shoot_create_review(shoot)).unwrap()
    }

    /// The benchmark's full shoot passes both webhooks with no errors: the mutating one only
    /// adds defaults (the result is what the benchmark sends to the validating one), and the
    /// validating one allows it, so the benchmark never measures a refusal.
    #[test]
    fn the_full_shoot_is_admitted_by_both_webhooks() {
        let adm = bench_admission();
        let raw = serde_json::to_value(full_shoot()).unwrap();
        let (body, allowed) = adm.review_bytes(Endpoint::Mutate, "shoots", &review(&raw));
        let response: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(allowed, "mutating: {response}");
        let mut mutated = raw.clone();
        // The patch's bytes: a base64 string or, as kube-core writes them, a list of numbers.
        let patch: Vec<u8> = match &response["response"]["patch"] {
            serde_json::Value::String(b64) => base64::engine::general_purpose::STANDARD.decode(b64).unwrap(),
            other => serde_json::from_value(other.clone()).unwrap(),
        };
        let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
        json_patch::patch(&mut mutated, &patch).unwrap();
        let defaulted = serde_json::to_value(defaulted(full_shoot())).unwrap();
        assert_eq!(mutated, defaulted, "the mutating webhook's result is the benchmark's validating input");
        let (body, allowed) = adm.review_bytes(Endpoint::Validate, "shoots", &review(&defaulted));
        assert!(allowed, "validating: {}", String::from_utf8_lossy(&body));

        // Every block is really there (a misspelt field would have been refused above).
        let s = full_shoot();
        let k = &s.spec.kubernetes;
        assert!(k.kubelet.is_some() && k.kube_api_server.is_some() && k.kube_controller_manager.is_some());
        assert!(k.kube_scheduler.is_some() && k.kube_proxy.is_some());
        assert!(s.spec.maintenance.is_some() && s.spec.hibernation.is_some() && s.spec.dns.is_some());
        assert_eq!(s.spec.provider.workers.len(), 2);
        assert!(s.spec.provider.workers[1].kubernetes.as_ref().is_some_and(|k| k.kubelet.is_some()));
        let n = s.spec.networking.as_ref().unwrap();
        assert!(n.pods.is_some() && n.services.is_some() && n.nodes.is_some());
    }
}
