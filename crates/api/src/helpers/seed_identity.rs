//! A gardenlet's identity in the garden, as Gardener defines it: user
//! `gardener.cloud:system:seed:<seed>` in group `gardener.cloud:system:seeds`, carried by a
//! client certificate (CN = user, O = group) that the gardenlet obtains by a CSR
//! (`certificates.k8s.io/v1`, signer `kubernetes.io/kube-apiserver-client`).
//!
//! The seed authorizer (admission server), the CSR approver (controller-manager) and the
//! gardenlet's bootstrap all read the identity through this module.

/// Prefix of a seed's user name; the seed's name follows.
pub const USER_PREFIX: &str = "gardener.cloud:system:seed:";
/// The group every seed identity is in.
pub const GROUP: &str = "gardener.cloud:system:seeds";
/// The signer that issues seed client certificates.
pub const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The CSR subresource a bootstrap identity must be allowed to `create` (by RBAC, with the
/// seed's name as resource name) before its CSR for that seed is approved.
pub const CSR_SUBRESOURCE: &str = "seedclient";

/// The user name of seed `seed`.
pub fn user(seed: &str) -> String {
    format!("{USER_PREFIX}{seed}")
}

/// The seed a request's user is, when it is a seed identity: the user name carries the prefix
/// and a non-empty name, and the groups contain [`GROUP`]. Both are required, as Gardener's
/// authorizer requires them.
pub fn seed_of<'a>(user: &'a str, groups: &[String]) -> Option<&'a str> {
    let name = user.strip_prefix(USER_PREFIX)?;
    (!name.is_empty() && groups.iter().any(|g| g == GROUP)).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_identity_needs_the_prefix_a_name_and_the_group() {
        let seeds = vec![GROUP.to_string(), "system:authenticated".to_string()];
        assert_eq!(seed_of("gardener.cloud:system:seed:local", &seeds), Some("local"));
        assert_eq!(seed_of(&user("ms1"), &seeds), Some("ms1"));
        assert_eq!(seed_of("gardener.cloud:system:seed:", &seeds), None);
        assert_eq!(seed_of("gardener.cloud:system:seed:local", &["system:authenticated".to_string()]), None);
        assert_eq!(seed_of("system:serviceaccount:garden:gardenlet", &seeds), None);
    }
}
