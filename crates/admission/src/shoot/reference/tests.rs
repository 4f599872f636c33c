//! The profile reference: Gardener's synchronisation of the two fields and their consistency,
//! table-driven (resolution and the change rule over a lookup: `crate::review::profiles`).

use super::*;

fn cp(kind: Option<&str>, name: &str) -> Option<CloudProfileReference> {
    Some(CloudProfileReference { kind: kind.map(String::from), name: name.into() })
}

fn spec(name: Option<&str>, reference: Option<CloudProfileReference>) -> ShootSpec {
    ShootSpec { cloud_profile_name: name.map(String::from), cloud_profile: reference, ..Default::default() }
}

#[test]
fn sync_as_gardener() {
    let ncp = Some(NAMESPACED_CLOUD_PROFILE);
    let cases = [
        ("name only", spec(Some("local"), None), spec(Some("local"), cp(Some(CLOUD_PROFILE), "local"))),
        (
            "reference only",
            spec(None, cp(Some(CLOUD_PROFILE), "local")),
            spec(Some("local"), cp(Some(CLOUD_PROFILE), "local")),
        ),
        ("kind defaulted", spec(None, cp(None, "local")), spec(Some("local"), cp(Some(CLOUD_PROFILE), "local"))),
        ("empty kind", spec(None, cp(Some(""), "local")), spec(Some("local"), cp(Some(CLOUD_PROFILE), "local"))),
        ("namespaced", spec(None, cp(ncp, "team")), spec(None, cp(ncp, "team"))),
        ("namespaced drops the name", spec(Some("local"), cp(ncp, "team")), spec(None, cp(ncp, "team"))),
        (
            "disagreeing names are left for validation",
            spec(Some("other"), cp(None, "local")),
            spec(Some("other"), cp(Some(CLOUD_PROFILE), "local")),
        ),
        ("nothing", spec(None, None), spec(None, None)),
        ("empty name", spec(Some(""), None), spec(Some(""), None)),
        ("unknown kind", spec(None, cp(Some("Foo"), "x")), spec(None, cp(Some("Foo"), "x"))),
    ];
    for (name, mut have, want) in cases {
        sync(&mut have);
        assert_eq!(have, want, "{name}");
        let again = have.clone();
        sync(&mut have);
        assert_eq!(have, again, "{name}: idempotent");
    }
}

#[test]
fn consistency() {
    let ncp = Some(NAMESPACED_CLOUD_PROFILE);
    let cases = [
        (spec(Some("local"), cp(Some(CLOUD_PROFILE), "local")), None),
        (spec(None, cp(ncp, "team")), None),
        (spec(Some("local"), None), None),
        (
            spec(Some("other"), cp(None, "local")),
            Some(
                "spec.cloudProfileName: Invalid value: \"other\": must name the same CloudProfile as spec.cloudProfile.name (\"local\")",
            ),
        ),
        (
            spec(Some("local"), cp(ncp, "team")),
            Some(
                "spec.cloudProfileName: Forbidden: must not be set when spec.cloudProfile names a NamespacedCloudProfile",
            ),
        ),
    ];
    for (s, want) in cases {
        assert_eq!(validate(&s).0.first().map(ToString::to_string).as_deref(), want, "{s:?}");
    }
}
