//! Resolution of the profile reference (including a NamespacedCloudProfile without computed
//! status) and the change rule over the roots found, table-driven.

use super::*;
use crate::fixtures;
use crate::review::StaticLookup;
use crate::shoot::reference::validate_change;
use api::core::NamespacedCloudProfileStatus;
use api::core::namespacedcloudprofile::NamespacedCloudProfileSpec;
use api::core::shoot::CloudProfileReference;

fn cp(kind: Option<&str>, name: &str) -> Option<CloudProfileReference> {
    Some(CloudProfileReference { kind: kind.map(String::from), name: name.into() })
}

fn spec(name: Option<&str>, reference: Option<CloudProfileReference>) -> ShootSpec {
    ShootSpec { cloud_profile_name: name.map(String::from), cloud_profile: reference, ..Default::default() }
}

fn namespaced(name: &str, parent: &str, computed: bool) -> NamespacedCloudProfile {
    let mut p = NamespacedCloudProfile::new(
        name,
        NamespacedCloudProfileSpec {
            parent: CloudProfileReference { kind: Some(CLOUD_PROFILE.into()), name: parent.into() },
            ..Default::default()
        },
    );
    p.metadata.namespace = Some("garden-dev".into());
    if computed {
        let mut merged = fixtures::cloud_profile_spec();
        merged.machine_types[0].name = "team-only".into();
        p.status =
            Some(NamespacedCloudProfileStatus { cloud_profile_spec: Some(merged), observed_generation: Some(1) });
    }
    p
}

fn lookup() -> StaticLookup {
    StaticLookup {
        cloud_profiles: vec![Arc::new(fixtures::cloud_profile())],
        namespaced_cloud_profiles: vec![
            Arc::new(namespaced("team", "local", true)),
            Arc::new(namespaced("fresh", "local", false)),
            Arc::new(namespaced("sibling", "local", true)),
            Arc::new(namespaced("elsewhere", "other", true)),
        ],
        ..Default::default()
    }
}

#[test]
fn resolution() {
    let l = lookup();
    let ncp = Some(NAMESPACED_CLOUD_PROFILE);
    let ok = |s: ShootSpec| {
        let p = resolve(&l, "garden-dev", &s).unwrap().unwrap();
        (p.root().to_string(), p.spec().unwrap().machine_types[0].name.clone())
    };
    assert_eq!(ok(spec(Some("local"), None)), ("local".into(), "local".into()));
    assert_eq!(ok(spec(None, cp(ncp, "team"))), ("local".into(), "team-only".into()), "the merged status is used");
    assert!(resolve(&l, "garden-dev", &spec(None, None)).unwrap().is_none());
    let err = |s: ShootSpec, ns: &str| resolve(&l, ns, &s).unwrap_err().to_string();
    assert_eq!(err(spec(Some("nope"), cp(None, "nope")), "garden-dev"), "spec.cloudProfileName: Not found: \"nope\"");
    assert_eq!(err(spec(None, cp(None, "nope")), "garden-dev"), "spec.cloudProfile: Not found: \"nope\"");
    assert_eq!(
        err(spec(None, cp(ncp, "team")), "garden-other"),
        "spec.cloudProfile: Not found: \"team\": no NamespacedCloudProfile \"team\" in namespace \"garden-other\""
    );
    assert!(
        err(spec(None, cp(ncp, "fresh")), "garden-dev")
            .starts_with("spec.cloudProfile: Invalid value: \"fresh\": NamespacedCloudProfile garden-dev/fresh has no status.cloudProfileSpec yet"),
    );
    assert_eq!(
        err(spec(None, cp(Some("Foo"), "x")), "garden-dev"),
        "spec.cloudProfile.kind: Unsupported value: \"Foo\": supported values: \"CloudProfile\", \"NamespacedCloudProfile\""
    );
}

#[test]
fn changes_stay_in_the_hierarchy() {
    let l = lookup();
    let ncp = Some(NAMESPACED_CLOUD_PROFILE);
    let root = |s: &ShootSpec| reference(s).and_then(|r| root_of(&l, "garden-dev", &r));
    let cases = [
        ("unchanged", spec(Some("local"), None), spec(Some("local"), cp(None, "local")), None),
        ("to a child", spec(Some("local"), None), spec(None, cp(ncp, "team")), None),
        ("back to the parent", spec(None, cp(ncp, "team")), spec(Some("local"), cp(None, "local")), None),
        ("to a sibling", spec(None, cp(ncp, "team")), spec(None, cp(ncp, "sibling")), None),
        (
            "to another profile",
            spec(Some("local"), None),
            spec(Some("other"), cp(None, "other")),
            Some(
                "spec.cloudProfileName: Forbidden: the profile may only change between a CloudProfile and the NamespacedCloudProfiles whose parent it is; cannot change from CloudProfile \"local\" to CloudProfile \"other\"",
            ),
        ),
        (
            "to another profile's child",
            spec(Some("local"), None),
            spec(None, cp(ncp, "elsewhere")),
            Some(
                "spec.cloudProfile: Forbidden: the profile may only change between a CloudProfile and the NamespacedCloudProfiles whose parent it is; cannot change from CloudProfile \"local\" to NamespacedCloudProfile \"elsewhere\"",
            ),
        ),
        (
            "to a child that does not exist",
            spec(Some("local"), None),
            spec(None, cp(ncp, "nope")),
            Some("spec.cloudProfile: Forbidden: the profile may only change"),
        ),
        (
            "removed",
            spec(Some("local"), None),
            spec(None, None),
            Some("spec.cloudProfile: Forbidden: the profile reference cannot be removed"),
        ),
    ];
    for (name, old, new, want) in cases {
        let errs = validate_change(&new, &old, root(&new).as_deref(), root(&old).as_deref());
        match want {
            None => assert!(errs.is_empty(), "{name}: {errs}"),
            Some(w) => assert!(errs.to_string().starts_with(w), "{name}: want {w:?}, got {errs}"),
        }
    }
}
