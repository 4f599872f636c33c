//! Bastion (`operations.gardener.cloud`) admission. Defaulting records the creator from the
//! request's user in the `gardener.cloud/created-by` annotation (whatever the request said)
//! and copies the shoot's seed and provider type; validation requires an existing, scheduled
//! shoot, a base64 SSH key and valid ingress CIDRs, keeps the shoot, key and creator
//! immutable, and lets only the creator change the ingress.

use crate::common::{cidr, dns_label, immutable, immutable_str};
use crate::field::{ErrorList, FieldError, Path};
use crate::identity::UserInfo;
use api::core::Shoot;
use api::helpers::constants::ANNOTATION_CREATED_BY;
use api::operations::Bastion;
use base64::Engine;

fn creator(b: &Bastion) -> Option<&str> {
    b.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION_CREATED_BY)).map(String::as_str)
}

/// Defaults a Bastion: on create the creator is the requesting user; on update a dropped
/// creator annotation is restored from the old object (changing it is refused by validation).
pub fn default(b: &mut Bastion, old: Option<&Bastion>, user: &UserInfo, shoot: Option<&Shoot>) {
    let recorded = match old {
        None => Some(user.username.clone()),
        Some(o) if creator(b).is_none() => creator(o).map(str::to_string),
        Some(_) => None,
    };
    if let Some(name) = recorded {
        b.metadata.annotations.get_or_insert_with(Default::default).insert(ANNOTATION_CREATED_BY.into(), name);
    }
    if let Some(shoot) = shoot {
        if b.spec.seed_name.is_none() {
            b.spec.seed_name = shoot.spec.seed_name.clone();
        }
        if b.spec.provider_type.is_none() && !shoot.spec.provider.type_.is_empty() {
            b.spec.provider_type = Some(shoot.spec.provider.type_.clone());
        }
    }
}

/// Why `key` is not base64 of one OpenSSH public key (an `authorized_keys` line).
fn public_key(key: &str) -> Result<(), &'static str> {
    let decoded = base64::engine::general_purpose::STANDARD.decode(key).map_err(|_| "must be base64-encoded")?;
    let line = String::from_utf8(decoded).map_err(|_| "must be base64 of an OpenSSH public key")?;
    let line = line.trim();
    if line.contains(['\n', '\r']) {
        return Err("must be base64 of one OpenSSH public key, not several");
    }
    ssh_key::PublicKey::from_openssh(line).map(|_| ()).map_err(|_| "must be base64 of an OpenSSH public key")
}

/// Every rule; `shoot` is the referenced shoot when it exists.
pub fn validate(b: &Bastion, old: Option<&Bastion>, user: &UserInfo, shoot: Option<&Shoot>) -> ErrorList {
    let mut errs = ErrorList::default();
    errs.0.extend(dns_label(&Path::new("metadata").child("name"), b.metadata.name.as_deref().unwrap_or(""), 63));
    let sp = Path::new("spec");
    let shoot_name = &b.spec.shoot_ref.name;
    if shoot_name.is_empty() {
        errs.push(FieldError::required(sp.child("shootRef").child("name"), ""));
    } else if old.is_none() {
        match shoot {
            None => errs.push(FieldError::not_found(sp.child("shootRef").child("name"), shoot_name)),
            Some(s) if s.spec.seed_name.is_none() => errs.push(FieldError::forbidden(
                sp.child("shootRef").child("name"),
                "the shoot is not scheduled to a seed yet",
            )),
            Some(s) if s.metadata.deletion_timestamp.is_some() => {
                errs.push(FieldError::forbidden(sp.child("shootRef").child("name"), "the shoot is being deleted"))
            }
            Some(_) => {}
        }
    }
    if b.spec.ssh_public_key.is_empty() {
        errs.push(FieldError::required(sp.child("sshPublicKey"), ""));
    } else if let Err(why) = public_key(&b.spec.ssh_public_key) {
        errs.push(FieldError::invalid(sp.child("sshPublicKey"), "<redacted>", why));
    }
    if b.spec.ingress.is_empty() {
        errs.push(FieldError::required(sp.child("ingress"), "at least one ingress source range is needed"));
    }
    for (i, ing) in b.spec.ingress.iter().enumerate() {
        if let Err(e) = cidr(&sp.child("ingress").index(i).child("ipBlock").child("cidr"), &ing.ip_block.cidr) {
            errs.push(e);
        }
    }
    let annotation = Path::new("metadata").child("annotations").key(ANNOTATION_CREATED_BY);
    match old {
        None => {
            if creator(b) != Some(user.username.as_str()) {
                errs.push(FieldError::forbidden(annotation, "must name the user who creates the bastion"));
            }
        }
        Some(old) => {
            errs.0.extend(immutable_str(&annotation, creator(b), creator(old)));
            errs.0.extend(immutable(&sp.child("shootRef"), &b.spec.shoot_ref, &old.spec.shoot_ref));
            if b.spec.ssh_public_key != old.spec.ssh_public_key {
                errs.push(FieldError::invalid(sp.child("sshPublicKey"), "<redacted>", "field is immutable"));
            }
            for (field, new_v, old_v) in [
                ("seedName", &b.spec.seed_name, &old.spec.seed_name),
                ("providerType", &b.spec.provider_type, &old.spec.provider_type),
            ] {
                if old_v.is_some() {
                    errs.0.extend(immutable_str(&sp.child(field), new_v.as_deref(), old_v.as_deref()));
                }
            }
            if b.spec.ingress != old.spec.ingress && creator(old) != Some(user.username.as_str()) {
                errs.push(FieldError::forbidden(
                    sp.child("ingress"),
                    format!("only the bastion's creator {:?} may change its ingress", creator(old).unwrap_or("")),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use api::common::LocalObjectReference;
    use api::operations::{BastionIngressPolicy, BastionSpec};
    use k8s_openapi::api::networking::v1::IPBlock;

    fn alice() -> UserInfo {
        UserInfo::new("alice", &[])
    }

    fn scheduled() -> Shoot {
        let mut s = fixtures::shoot();
        s.spec.seed_name = Some("seed-a".into());
        s
    }

    fn bastion() -> Bastion {
        let mut b = Bastion::new(
            "b1",
            BastionSpec {
                shoot_ref: LocalObjectReference { name: "demo".into() },
                ssh_public_key: "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSU12UmpSMXpQWjBjTFVTMXBHRTRtRzRFL1pmWTRVcTBiazhyT2wzVEl3Q3ogdXNlckBob3N0".into(),
                ingress: vec![BastionIngressPolicy { ip_block: IPBlock { cidr: "1.2.3.4/32".into(), except: None } }],
                ..Default::default()
            },
        );
        default(&mut b, None, &alice(), Some(&scheduled()));
        b
    }

    #[test]
    fn defaulting_records_the_creator_and_the_shoot_context() {
        let mut b = bastion();
        assert_eq!(creator(&b), Some("alice"));
        assert_eq!((b.spec.seed_name.as_deref(), b.spec.provider_type.as_deref()), (Some("seed-a"), Some("local")));
        // A forged creator on create is overwritten.
        b.metadata.annotations.as_mut().unwrap().insert(ANNOTATION_CREATED_BY.into(), "mallory".into());
        default(&mut b, None, &alice(), None);
        assert_eq!(creator(&b), Some("alice"));
        // Dropped on update: restored from the old object.
        let old = b.clone();
        b.metadata.annotations = None;
        default(&mut b, Some(&old), &UserInfo::new("bob", &[]), None);
        assert_eq!(creator(&b), Some("alice"));
    }

    type Mutation = fn(&mut Bastion);

    #[test]
    fn create_rules() {
        let cases: Vec<(&str, Mutation, Option<Shoot>, Option<&str>)> = vec![
            ("valid", |_| {}, Some(scheduled()), None),
            ("no shoot", |_| {}, None, Some("spec.shootRef.name: Not found: \"demo\"")),
            (
                "unscheduled",
                |_| {},
                Some(fixtures::shoot()),
                Some("spec.shootRef.name: Forbidden: the shoot is not scheduled"),
            ),
            (
                "no key",
                |b| b.spec.ssh_public_key = String::new(),
                Some(scheduled()),
                Some("spec.sshPublicKey: Required value"),
            ),
            (
                "bad key",
                |b| b.spec.ssh_public_key = "not base64!".into(),
                Some(scheduled()),
                Some("spec.sshPublicKey: Invalid value: \"<redacted>\": must be base64-encoded"),
            ),
            (
                "no SSH key",
                |b| b.spec.ssh_public_key = "c3NoLWVkMjU1MTkgQUFBQTsgcm0gLXJmIC8=".into(),
                Some(scheduled()),
                Some("spec.sshPublicKey: Invalid value: \"<redacted>\": must be base64 of an OpenSSH public key"),
            ),
            ("no ingress", |b| b.spec.ingress.clear(), Some(scheduled()), Some("spec.ingress: Required value")),
            (
                "bad cidr",
                |b| b.spec.ingress[0].ip_block.cidr = "1.2.3.4".into(),
                Some(scheduled()),
                Some("spec.ingress[0].ipBlock.cidr: Invalid value: \"1.2.3.4\""),
            ),
            (
                "forged creator",
                |b| {
                    b.metadata.annotations.as_mut().unwrap().insert(ANNOTATION_CREATED_BY.into(), "bob".into());
                },
                Some(scheduled()),
                Some("metadata.annotations[gardener.cloud/created-by]: Forbidden"),
            ),
        ];
        for (name, mutate, shoot, want) in cases {
            let mut b = bastion();
            mutate(&mut b);
            let errs = validate(&b, None, &alice(), shoot.as_ref());
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
    }

    #[test]
    fn update_rules() {
        let old = bastion();
        let bob = UserInfo::new("bob", &[]);
        let mut ingress = old.clone();
        ingress.spec.ingress[0].ip_block.cidr = "5.6.7.0/24".into();
        assert!(validate(&ingress, Some(&old), &alice(), None).is_empty());
        let errs = validate(&ingress, Some(&old), &bob, None);
        assert_eq!(
            errs.to_string(),
            "spec.ingress: Forbidden: only the bastion's creator \"alice\" may change its ingress"
        );
        // Anyone may change other things (e.g. annotate keepalive), nobody the creator.
        let mut annotated = old.clone();
        annotated.metadata.annotations.as_mut().unwrap().insert("gardener.cloud/operation".into(), "keepalive".into());
        assert!(validate(&annotated, Some(&old), &bob, None).is_empty());
        let mut forged = old.clone();
        forged.metadata.annotations.as_mut().unwrap().insert(ANNOTATION_CREATED_BY.into(), "bob".into());
        assert!(validate(&forged, Some(&old), &bob, None).has("metadata.annotations[gardener.cloud/created-by]"));
        let mut key = old.clone();
        key.spec.ssh_public_key = "QUFBQQ==".into();
        let errs = validate(&key, Some(&old), &alice(), None).to_string();
        assert!(
            errs.contains("spec.sshPublicKey: Invalid value: \"<redacted>\": field is immutable")
                && !errs.contains("QUFB"),
            "{errs}"
        );
    }
}
