//! Property tests: random JSON and randomly mutated valid objects go through decoding,
//! defaulting and validation of every resource; nothing panics and every refusal is a
//! field-path error. Whole AdmissionReview bodies (and garbage bytes) through the HTTP-facing
//! entry point always get an AdmissionReview back. The million-input run is
//! `cargo bench -p admission --bench fuzz_throughput`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

#[path = "support/fuzz_admission.rs"]
mod fuzz_admission;

use admission::fuzz::{check, corpus, mutate};
use admission::review::Endpoint;
use fuzz_admission::admission;
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        "[a-zA-Z0-9./:+*%-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("spec".to_string()),
                    Just("metadata".to_string()),
                    Just("name".to_string()),
                    "[a-z]{1,8}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_objects_are_refused_only_with_field_paths(seed in any::<u64>(), which in 0usize..7) {
        let adm = admission();
        let corpus = corpus();
        let (resource, base) = &corpus[which % corpus.len()];
        let mutated = mutate(base, seed);
        if let Err(violation) = check(&adm, resource, &mutated, base) {
            prop_assert!(false, "{resource} seed {seed}: {violation}\n{mutated}");
        }
    }

    #[test]
    fn random_json_is_refused_only_with_field_paths(value in json_value(), which in 0usize..7) {
        let adm = admission();
        let corpus = corpus();
        let (resource, base) = &corpus[which % corpus.len()];
        if let Err(violation) = check(&adm, resource, &value, base) {
            prop_assert!(false, "{resource}: {violation}\n{value}");
        }
    }

    #[test]
    fn any_body_gets_an_admission_review_back(bytes in prop::collection::vec(any::<u8>(), 0..256), seed in any::<u64>()) {
        let adm = admission();
        let (_, shoot) = &corpus()[0];
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": "core.gardener.cloud", "version": "v1beta1", "kind": "Shoot"},
                        "resource": {"group": "core.gardener.cloud", "version": "v1beta1", "resource": "shoots"},
                        "name": "demo", "namespace": "garden-dev", "operation": "CREATE", "userInfo": {"username": "alice"},
                        "object": mutate(shoot, seed), "dryRun": false}
        });
        for body in [bytes, mutate(&review, seed).to_string().into_bytes()] {
            for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
                let (response, _) = adm.review_bytes(endpoint, "shoots", &body);
                let parsed: Value = serde_json::from_slice(&response).unwrap();
                prop_assert_eq!(&parsed["kind"], "AdmissionReview");
                prop_assert_eq!(&parsed["apiVersion"], "admission.k8s.io/v1");
                prop_assert!(parsed["response"]["allowed"].is_boolean());
            }
        }
    }
}

#[test]
fn a_full_review_round_trips_with_a_patch() {
    let adm = admission();
    let shoot = serde_json::to_value(admission::fixtures::shoot()).unwrap();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "0c9a", "kind": {"group": "core.gardener.cloud", "version": "v1beta1", "kind": "Shoot"},
                    "resource": {"group": "core.gardener.cloud", "version": "v1beta1", "resource": "shoots"},
                    "name": "demo", "namespace": "garden-dev", "operation": "CREATE", "userInfo": {"username": "alice"},
                    "object": shoot, "dryRun": false}
    });
    let (response, allowed) = adm.review_bytes(Endpoint::Mutate, "shoots", review.to_string().as_bytes());
    assert!(allowed);
    let parsed: Value = serde_json::from_slice(&response).unwrap();
    assert_eq!(parsed["response"]["uid"], "0c9a");
    assert_eq!(parsed["response"]["patchType"], "JSONPatch");
    // kube-core sends the patch as a byte array, which the API server (Go's []byte) accepts as
    // well as base64.
    let bytes: Vec<u8> = serde_json::from_value(parsed["response"]["patch"].clone()).unwrap();
    let patch: Value = serde_json::from_slice(&bytes).unwrap();
    let ops = patch.as_array().unwrap();
    assert!(ops.iter().any(|op| op["path"] == "/spec/purpose" && op["value"] == "evaluation"), "{patch}");
    assert!(ops.iter().any(|op| op["path"] == "/spec/networking/pods" && op["value"] == "100.96.0.0/11"), "{patch}");
}
