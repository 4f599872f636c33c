//! AdminKubeconfigRequest (`authentication.gardener.cloud`) admission. Defaulting records the
//! requesting user in `gardener.cloud/created-by` (whatever the request said): that user
//! becomes the certificate's CN, so nobody can ask for a certificate in someone else's name.
//! Validation requires an existing shoot that is not being deleted, a usable public key (never
//! echoed back: a pasted private key must not land in an error) and a validity of at least ten
//! minutes, and keeps the whole spec and the creator immutable.

use crate::common::{dns_label, immutable, immutable_str};
use crate::field::{ErrorList, FieldError, Path};
use crate::identity::UserInfo;
use api::authentication::{AdminKubeconfigRequest, MIN_EXPIRATION_SECONDS};
use api::core::Shoot;
use api::helpers::constants::ANNOTATION_CREATED_BY;

fn creator(r: &AdminKubeconfigRequest) -> Option<&str> {
    r.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION_CREATED_BY)).map(String::as_str)
}

/// On create the creator is the requesting user; on update a dropped creator annotation is
/// restored from the old object (changing it is refused by validation).
pub fn default(r: &mut AdminKubeconfigRequest, old: Option<&AdminKubeconfigRequest>, user: &UserInfo) {
    let recorded = match old {
        None => Some(user.username.clone()),
        Some(o) if creator(r).is_none() => creator(o).map(str::to_string),
        Some(_) => None,
    };
    if let Some(name) = recorded {
        r.metadata.annotations.get_or_insert_with(Default::default).insert(ANNOTATION_CREATED_BY.into(), name);
    }
}

/// Every rule; `shoot` is the referenced shoot when it exists.
pub fn validate(
    r: &AdminKubeconfigRequest,
    old: Option<&AdminKubeconfigRequest>,
    user: &UserInfo,
    shoot: Option<&Shoot>,
) -> ErrorList {
    let mut errs = ErrorList::default();
    errs.0.extend(dns_label(&Path::new("metadata").child("name"), r.metadata.name.as_deref().unwrap_or(""), 253));
    let sp = Path::new("spec");
    let annotation = Path::new("metadata").child("annotations").key(ANNOTATION_CREATED_BY);
    match old {
        None => {
            let shoot_path = sp.child("shootRef").child("name");
            let shoot_name = &r.spec.shoot_ref.name;
            match shoot {
                _ if shoot_name.is_empty() => errs.push(FieldError::required(shoot_path, "")),
                None => errs.push(FieldError::not_found(shoot_path, shoot_name)),
                Some(s) if s.metadata.deletion_timestamp.is_some() => {
                    errs.push(FieldError::forbidden(shoot_path, "the shoot is being deleted"))
                }
                Some(_) => {}
            }
            if r.spec.public_key.trim().is_empty() {
                errs.push(FieldError::required(sp.child("publicKey"), "a PEM PUBLIC KEY block"));
            } else if let Err(problem) = pki::admin_kubeconfig::check_public_key(&r.spec.public_key) {
                errs.push(FieldError::invalid(sp.child("publicKey"), "<redacted>", problem));
            }
            let seconds = r.spec.expiration_seconds();
            if seconds < MIN_EXPIRATION_SECONDS {
                errs.push(FieldError::invalid(
                    sp.child("expirationSeconds"),
                    &seconds.to_string(),
                    format!("must be at least {MIN_EXPIRATION_SECONDS}"),
                ));
            }
            if creator(r) != Some(user.username.as_str()) {
                errs.push(FieldError::forbidden(annotation, "must name the user who creates the request"));
            }
        }
        Some(old) => {
            errs.0.extend(immutable_str(&annotation, creator(r), creator(old)));
            errs.0.extend(immutable(&sp.child("shootRef"), &r.spec.shoot_ref, &old.spec.shoot_ref));
            errs.0.extend(immutable(
                &sp.child("expirationSeconds"),
                &r.spec.expiration_seconds,
                &old.spec.expiration_seconds,
            ));
            if r.spec.public_key != old.spec.public_key {
                errs.push(FieldError::invalid(sp.child("publicKey"), "<redacted>", "field is immutable"));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use api::authentication::AdminKubeconfigRequestSpec;
    use api::common::LocalObjectReference;

    fn alice() -> UserInfo {
        UserInfo::new("alice", &[])
    }

    fn public_key() -> String {
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n".into()
    }

    fn request() -> AdminKubeconfigRequest {
        let mut r = AdminKubeconfigRequest::new(
            "alice-1",
            AdminKubeconfigRequestSpec {
                shoot_ref: LocalObjectReference { name: "demo".into() },
                public_key: public_key(),
                expiration_seconds: None,
            },
        );
        r.metadata.namespace = Some("garden-dev".into());
        r
    }

    fn paths(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn the_creator_is_whoever_asks() {
        let mut r = request();
        r.metadata.annotations = Some([(ANNOTATION_CREATED_BY.to_string(), "mallory".to_string())].into());
        default(&mut r, None, &alice());
        assert_eq!(creator(&r), Some("alice"));
        assert!(validate(&r, None, &alice(), Some(&fixtures::shoot())).is_empty());
        // Someone else's name (a request that skipped the mutating webhook) is refused.
        assert!(
            validate(&r, None, &UserInfo::new("bob", &[]), Some(&fixtures::shoot()))
                .has("metadata.annotations[gardener.cloud/created-by]")
        );
        // An update that drops the annotation gets it back; one that changes it is refused.
        let mut dropped = r.clone();
        dropped.metadata.annotations = None;
        default(&mut dropped, Some(&r), &UserInfo::new("bob", &[]));
        assert_eq!(creator(&dropped), Some("alice"));
        let mut changed = r.clone();
        changed.metadata.annotations = Some([(ANNOTATION_CREATED_BY.to_string(), "bob".to_string())].into());
        assert!(validate(&changed, Some(&r), &alice(), None).has("metadata.annotations[gardener.cloud/created-by]"));
    }

    #[test]
    fn shoot_key_and_validity_are_checked_on_create() {
        let mut r = request();
        default(&mut r, None, &alice());
        let errs = validate(&r, None, &alice(), None);
        assert_eq!(paths(&errs), vec!["spec.shootRef.name: Not found: \"demo\"".to_string()]);
        let mut deleting = fixtures::shoot();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(validate(&r, None, &alice(), Some(&deleting)).has("spec.shootRef.name"));

        let private = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n";
        let mut bad = r.clone();
        bad.spec.public_key = private.into();
        bad.spec.expiration_seconds = Some(60);
        let errs = validate(&bad, None, &alice(), Some(&fixtures::shoot()));
        assert!(errs.has("spec.publicKey") && errs.has("spec.expirationSeconds"), "{errs:?}");
        let text = paths(&errs).join("\n");
        assert!(text.contains("is a private key") && !text.contains("MC4CAQ"), "{text}");
        bad.spec.public_key = "  ".into();
        assert!(validate(&bad, None, &alice(), Some(&fixtures::shoot())).has("spec.publicKey"));
    }

    #[test]
    fn the_spec_is_immutable() {
        let mut r = request();
        default(&mut r, None, &alice());
        let mut changed = r.clone();
        changed.spec.shoot_ref.name = "other".into();
        changed.spec.expiration_seconds = Some(7200);
        changed.spec.public_key = "x".into();
        let errs = validate(&changed, Some(&r), &alice(), None);
        assert!(
            errs.has("spec.shootRef") && errs.has("spec.expirationSeconds") && errs.has("spec.publicKey"),
            "{errs:?}"
        );
        assert!(!paths(&errs).join("").contains("BEGIN"));
        // An unchanged update (say, labels) passes even when the shoot is gone meanwhile.
        assert!(validate(&r, Some(&r), &alice(), None).is_empty());
    }
}
