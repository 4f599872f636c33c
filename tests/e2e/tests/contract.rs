//! The Shoot contract on the local garden (docs/shoot-fields.md): a shoot the system cannot build
//! is refused when it is applied, with the field and the reason, instead of being accepted and
//! left hanging; a shoot that waits for an extension nobody serves fails within a minute with an
//! error that says so, and is then deleted within a minute.
//!
//! The user's view throughout: `kubectl apply` of a manifest and what kubectl prints.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::shoot::{CaseShoot, PROJECT_NS, STEP_TIMEOUT, manifest};
use e2e::{kubectl, try_apply};
use std::time::Instant;

/// Each manifest is refused by `kubectl apply`, and the error names the field and what is wrong.
#[tokio::test]
async fn a_shoot_the_system_cannot_build_is_refused_naming_the_field() {
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit, &[&str]); 5] = [
        // Gardener's own provider-local example uses calico, which no extension serves here.
        (
            "calico",
            |s| s["spec"]["networking"]["type"] = "calico".into(),
            &["spec.networking.type", "\"calico\"", "Network"],
        ),
        (
            "os",
            |s| s["spec"]["provider"]["workers"][0]["machine"]["image"]["name"] = "gardenlinux".into(),
            &["spec.provider.workers[0].machine.image.name", "gardenlinux"],
        ),
        (
            "ipvs",
            |s| s["spec"]["kubernetes"]["kubeProxy"] = serde_json::json!({"mode": "IPVS"}),
            &["spec.kubernetes.kubeProxy.mode", "IPVS"],
        ),
        (
            "alerting",
            |s| s["spec"]["monitoring"] = serde_json::json!({"alerting": {"emailReceivers": ["ops@example.com"]}}),
            &["spec.monitoring", "Forbidden"],
        ),
        (
            "unknown",
            |s| s["spec"]["kubernetes"]["kubeAPIServer"] = serde_json::json!({"someFutureSetting": 3}),
            &["spec.kubernetes.kubeAPIServer.someFutureSetting", "not a field this system knows"],
        ),
    ];
    for (case, edit, expected) in cases {
        let shoot = manifest(&format!("refused-{case}"), 29, edit);
        let name = shoot["metadata"]["name"].as_str().unwrap().to_string();
        let outcome = try_apply(PROJECT_NS, &serde_yaml::to_string(&shoot).unwrap());
        // Nothing may be left of a refused shoot, whatever the outcome.
        let _ = kubectl(&["-n", PROJECT_NS, "delete", "shoot", &name, "--ignore-not-found", "--wait=false"]);
        let err = match outcome {
            Ok(out) => panic!("case {case}: the shoot was accepted: {out}"),
            Err(e) => e,
        };
        for part in expected {
            assert!(err.contains(part), "case {case}: the refusal does not name {part:?}: {err}");
        }
        println!("case {case}: refused: {}", err.trim());
    }
}

/// A workerless shoot asks for an Extension whose only registration (selecting no seed, so it is
/// never installed) is removed right after the shoot is accepted: the wait for it ends within a minute with an error naming the kind,
/// the type and the missing registration (a non-retryable configuration problem, so the shoot
/// ends `Failed`), and the deletion then completes within a minute.
#[tokio::test]
async fn a_shoot_whose_extension_nobody_serves_fails_within_a_minute_and_is_deleted() {
    const TYPE: &str = "e2e-unserved";
    let registration = format!(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: ControllerRegistration\nmetadata:\n  name: {TYPE}\nspec:\n  resources:\n  - kind: Extension\n    type: {TYPE}\n    workerlessSupported: true\n  deployment:\n    seedSelector:\n      matchLabels:\n        e2e.gardener.cloud/no-seed: \"true\"\n"
    );
    e2e::apply("default", &registration);
    let mut s = CaseShoot::apply_with("unserved", 28, |s| {
        s["spec"]["provider"]["workers"] = serde_json::json!([]);
        s["spec"]["networking"] = serde_json::json!({"services": "10.133.0.0/16"});
        s["spec"]["extensions"] = serde_json::json!([{"type": TYPE}]);
    });
    // Admission accepted the type while it was registered; now nobody serves it.
    kubectl(&["delete", "controllerregistration", TYPE, "--wait=true"]).unwrap();
    let applied = Instant::now();
    let (description, _) = s
        .wait("the creation fails naming the unserved extension", STEP_TIMEOUT, || async {
            let op = s.field("{.status.lastOperation.state}")?;
            let description = s.field("{.status.lastOperation.description}")?;
            Ok((op == "Failed").then_some(description))
        })
        .await;
    let failed_after = applied.elapsed();
    for part in ["Extension", TYPE, "no ControllerRegistration serves"] {
        assert!(description.contains(part), "the failure does not name {part:?}: {description}");
    }
    let codes = s.field("{.status.lastErrors[*].codes}").unwrap();
    assert!(codes.contains("ERR_CONFIGURATION_PROBLEM"), "error codes: {codes}");
    let deleted_in = s.delete().await;
    println!("failed {failed_after:?} after the registration was removed; deleted in {deleted_in:?}");
}
