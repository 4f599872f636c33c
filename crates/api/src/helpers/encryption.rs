//! The encryption provider of a shoot's etcd data (`spec.kubernetes.kubeAPIServer.
//! encryptionConfig.provider.type`), as Gardener offers it: what the spec asks for, what the
//! status says is in use, and whether a change is under way. Pure.

use crate::core::Shoot;

/// AES-CBC with PKCS#7 padding, Gardener's default.
pub const AESCBC: &str = "aescbc";
/// AES-GCM with a random nonce.
pub const AESGCM: &str = "aesgcm";
/// XSalsa20 and Poly1305.
pub const SECRETBOX: &str = "secretbox";
/// The providers a shoot may name.
pub const PROVIDERS: [&str; 3] = [AESCBC, AESGCM, SECRETBOX];

/// The provider the spec asks for (`aescbc` when unset).
pub fn wanted(shoot: &Shoot) -> &str {
    shoot
        .spec
        .kubernetes
        .kube_api_server
        .as_ref()
        .and_then(|k| k.encryption_config.as_ref())
        .and_then(|e| e.provider.as_ref())
        .and_then(|p| p.type_.as_deref())
        .unwrap_or(AESCBC)
}

/// The provider the status says the stored data is encrypted with; `None` before the shoot's
/// first successful reconcile recorded it.
pub fn in_use(shoot: &Shoot) -> Option<&str> {
    let status = shoot.status.as_ref()?.credentials.as_ref()?.encryption_at_rest.as_ref()?;
    Some(status.provider.as_ref()?.type_.as_str()).filter(|t| !t.is_empty())
}

/// Whether the shoot asks for another provider than the one its data is encrypted with (which
/// begins an etcd encryption key rotation). A shoot without a recorded provider changes none.
pub fn changing(shoot: &Shoot) -> bool {
    in_use(shoot).is_some_and(|used| used != wanted(shoot))
}

/// The provider that may still hold data written before: the one in use, or `aescbc` for a
/// shoot whose status records none (every shoot was encrypted with it before the field existed).
pub fn previous(shoot: &Shoot) -> &str {
    in_use(shoot).unwrap_or(AESCBC)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;
    use serde_json::json;

    fn shoot(spec: Option<&str>, status: Option<&str>) -> Shoot {
        let mut s = json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
            "metadata": {"name": "s", "namespace": "garden-dev"},
            "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"}},
        });
        if let Some(t) = spec {
            s["spec"]["kubernetes"]["kubeAPIServer"] = json!({"encryptionConfig": {"provider": {"type": t}}});
        }
        if let Some(t) = status {
            s["status"] = json!({"credentials": {"encryptionAtRest": {"provider": {"type": t}}}});
        }
        serde_json::from_value(s).unwrap()
    }

    #[test]
    fn unset_means_aescbc_and_a_change_needs_a_recorded_provider() {
        assert_eq!(wanted(&shoot(None, None)), AESCBC);
        assert_eq!(wanted(&shoot(Some(AESGCM), None)), AESGCM);
        assert!(!changing(&shoot(Some(AESGCM), None)), "a new shoot starts with what it asks for");
        assert_eq!(previous(&shoot(Some(AESGCM), None)), AESCBC);
        assert!(changing(&shoot(Some(SECRETBOX), Some(AESCBC))));
        assert!(changing(&shoot(None, Some(SECRETBOX))), "unset is aescbc");
        assert!(!changing(&shoot(Some(AESCBC), Some(AESCBC))));
        assert_eq!(previous(&shoot(None, Some(SECRETBOX))), SECRETBOX);
    }
}
