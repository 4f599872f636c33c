//! Admission of the other kinds through a real kube-apiserver: the Bastion's creator is
//! recorded from the request's user and only that user may change its ingress (other users via
//! impersonation), CloudProfile versions in use cannot be removed, a namespace belongs to one
//! Project, and invalid Seeds, SecretBindings and ManagedSeeds are refused with field paths.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::authentication::AdminKubeconfigRequest;
use api::core::{CloudProfile, Project, SecretBinding, Seed, Shoot};
use api::operations::Bastion;
use api::seedmanagement::ManagedSeed;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

#[tokio::test]
async fn bastions_cloudprofiles_projects_seeds_bindings() {
    let (env, client) = garden().await;
    let _webhook = start_webhook(&env, &client, |_| {}).await;
    grant_all(&client, "alice").await;
    grant_all(&client, "bob").await;

    // A scheduled shoot (an admin may set the seed).
    let mut shoot = fixtures::shoot();
    shoot.spec.seed_name = Some("seed-a".into());
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);
    eventually("the webhook to default a shoot", || async {
        let _ = shoots.create(&PostParams::default(), &shoot).await;
        match shoots.get("demo").await {
            Ok(s) if s.spec.purpose.is_some() => Ok(()),
            Ok(s) => {
                let confirm = json!({"metadata": {"annotations": {"confirmation.gardener.cloud/deletion": "true"}}});
                let _ = shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&confirm)).await;
                let _ = shoots.delete("demo", &Default::default()).await;
                Err(format!("not defaulted yet: {:?}", s.spec.purpose))
            }
            Err(e) => Err(e.to_string()),
        }
    })
    .await;

    // Bastion: alice creates it claiming to be mallory; the creator recorded is alice.
    let alice = impersonating(&env, "alice", &["system:authenticated"]).await;
    let bob = impersonating(&env, "bob", &["system:authenticated"]).await;
    let bastion: Bastion = serde_json::from_value(json!({
        "apiVersion": "operations.gardener.cloud/v1alpha1", "kind": "Bastion",
        "metadata": {"name": "b1", "namespace": NS, "annotations": {"gardener.cloud/created-by": "mallory"}},
        "spec": {"shootRef": {"name": "demo"}, "sshPublicKey": "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSU12UmpSMXpQWjBjTFVTMXBHRTRtRzRFL1pmWTRVcTBiazhyT2wzVEl3Q3ogdXNlckBob3N0",
                 "ingress": [{"ipBlock": {"cidr": "1.2.3.4/32"}}]}
    }))
    .unwrap();
    let as_alice = Api::<Bastion>::namespaced(alice.clone(), NS);
    let created = eventually("the bastion to be admitted (shoot cached)", || async {
        as_alice.create(&PostParams::default(), &bastion).await.map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(created.annotations().get("gardener.cloud/created-by").map(String::as_str), Some("alice"));
    assert_eq!(
        (created.spec.seed_name.as_deref(), created.spec.provider_type.as_deref()),
        (Some("seed-a"), Some("local"))
    );

    let ingress = |cidr: &str| json!({"spec": {"ingress": [{"ipBlock": {"cidr": cidr}}]}});
    let as_bob = Api::<Bastion>::namespaced(bob.clone(), NS);
    let message = refusal(
        as_bob.patch("b1", &PatchParams::default(), &Patch::Merge(&ingress("6.6.6.0/24"))).await,
        "bob changes ingress",
    );
    assert!(
        message.contains("spec.ingress: Forbidden: only the bastion's creator \"alice\" may change its ingress"),
        "{message}"
    );
    let forged = json!({"metadata": {"annotations": {"gardener.cloud/created-by": "bob"}}});
    let message =
        refusal(as_bob.patch("b1", &PatchParams::default(), &Patch::Merge(&forged)).await, "bob claims the bastion");
    assert!(
        message.contains("metadata.annotations[gardener.cloud/created-by]: Invalid value: \"bob\": field is immutable"),
        "{message}"
    );
    let keepalive = json!({"metadata": {"annotations": {"gardener.cloud/operation": "keepalive"}}});
    as_bob.patch("b1", &PatchParams::default(), &Patch::Merge(&keepalive)).await.unwrap();
    let changed = as_alice.patch("b1", &PatchParams::default(), &Patch::Merge(&ingress("5.6.7.0/24"))).await.unwrap();
    assert_eq!(changed.spec.ingress[0].ip_block.cidr, "5.6.7.0/24");

    // AdminKubeconfigRequest: the certificate's user is whoever asks; a private key pasted by
    // mistake is refused without being echoed; the spec cannot change afterwards.
    let key = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";
    let request = |name: &str, key: &str| -> AdminKubeconfigRequest {
        serde_json::from_value(json!({
            "apiVersion": "authentication.gardener.cloud/v1alpha1", "kind": "AdminKubeconfigRequest",
            "metadata": {"name": name, "namespace": NS, "annotations": {"gardener.cloud/created-by": "mallory"}},
            "spec": {"shootRef": {"name": "demo"}, "publicKey": key, "expirationSeconds": 600}
        }))
        .unwrap()
    };
    let requests = Api::<AdminKubeconfigRequest>::namespaced(alice.clone(), NS);
    let created = requests.create(&PostParams::default(), &request("r1", key)).await.unwrap();
    assert_eq!(created.annotations().get("gardener.cloud/created-by").map(String::as_str), Some("alice"));
    let private = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHNlY3JldHNlY3JldHNlY3JldHNlY3JldHNlY3JldHM=\n-----END PRIVATE KEY-----\n";
    let message = refusal(requests.create(&PostParams::default(), &request("r2", private)).await, "a private key");
    assert!(message.contains("spec.publicKey: Invalid value: \"<redacted>\": is a private key"), "{message}");
    assert!(!message.contains("MC4CAQ"), "{message}");
    let longer = json!({"spec": {"expirationSeconds": 86400}});
    let message = refusal(
        Api::<AdminKubeconfigRequest>::namespaced(bob.clone(), NS)
            .patch("r1", &PatchParams::default(), &Patch::Merge(&longer))
            .await,
        "a longer validity afterwards",
    );
    assert!(message.contains("spec.expirationSeconds: Invalid value"), "{message}");

    // CloudProfile: 1.20.2 is used by the shoot, 1.21.0 is not.
    let profiles = Api::<CloudProfile>::all(client.clone());
    let without = |v: &str| {
        let versions: Vec<_> =
            fixtures::cloud_profile_spec().kubernetes.versions.into_iter().filter(|e| e.version != v).collect();
        json!({"spec": {"kubernetes": {"versions": versions}}})
    };
    let message = refusal(
        profiles.patch("local", &PatchParams::default(), &Patch::Merge(&without("1.20.2"))).await,
        "remove used version",
    );
    assert!(message.contains("spec.kubernetes.versions: Forbidden: unable to delete Kubernetes version \"1.20.2\" from CloudProfile \"local\": it is still in use by shoot garden-dev/demo"), "{message}");
    let patched = profiles.patch("local", &PatchParams::default(), &Patch::Merge(&without("1.21.0"))).await.unwrap();
    assert_eq!(patched.spec.kubernetes.versions.len(), 2);

    // Projects: a namespace belongs to one project.
    let projects = Api::<Project>::all(client.clone());
    let project = |name: &str, ns: &str| -> Project {
        serde_json::from_value(json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Project", "metadata": {"name": name}, "spec": {"namespace": ns}})).unwrap()
    };
    projects.create(&PostParams::default(), &project("core", "garden-core")).await.unwrap();
    let message = eventually("the second owner of garden-core to be refused", || async {
        match projects.create(&PostParams::default(), &project("copycat", "garden-core")).await {
            Err(kube::Error::Api(s)) => Ok(s.message),
            Ok(_) => {
                let _ = projects.delete("copycat", &Default::default()).await;
                Err("admitted (project cache not synced yet?)".to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    assert!(
        message.contains("spec.namespace: Forbidden: namespace \"garden-core\" already belongs to project \"core\""),
        "{message}"
    );

    // Seeds, SecretBindings, ManagedSeeds: refused with field paths.
    let seed: Seed = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "seed-a"},
        "spec": {"provider": {"type": "local", "region": "local"}, "dns": {},
                 "networks": {"pods": "10.1.0.0/16", "services": "10.1.128.0/17"}}
    }))
    .unwrap();
    let message =
        refusal(Api::<Seed>::all(client.clone()).create(&PostParams::default(), &seed).await, "overlapping seed");
    assert!(message.contains("spec.networks.services: Invalid value: \"10.1.128.0/17\": must not overlap with spec.networks.pods (10.1.0.0/16)"), "{message}");
    let binding: SecretBinding = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "SecretBinding", "metadata": {"name": "b", "namespace": NS},
        "secretRef": {"name": "Creds"}
    }))
    .unwrap();
    let message = refusal(
        Api::<SecretBinding>::namespaced(client.clone(), NS).create(&PostParams::default(), &binding).await,
        "bad binding",
    );
    assert!(
        message.contains("secretRef.name: Invalid value: \"Creds\"") && message.contains("provider: Required value"),
        "{message}"
    );
    let ms: ManagedSeed = serde_json::from_value(json!({
        "apiVersion": "seedmanagement.gardener.cloud/v1alpha1", "kind": "ManagedSeed", "metadata": {"name": "ms", "namespace": NS},
        "spec": {"shoot": {"name": "nope"}}
    }))
    .unwrap();
    let message = refusal(
        Api::<ManagedSeed>::namespaced(client.clone(), NS).create(&PostParams::default(), &ms).await,
        "bad managed seed",
    );
    for want in [
        "metadata.namespace: Invalid value: \"garden-dev\"",
        "spec.shoot.name: Not found: \"nope\"",
        "spec.gardenlet: Required value",
    ] {
        assert!(message.contains(want), "missing {want:?} in {message}");
    }
}
