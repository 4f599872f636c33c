//! Who sent an admission request (`request.userInfo`), and sets of identities that may do
//! something special, such as assigning a shoot to a seed.

use serde::{Deserialize, Serialize};

/// The requesting user, as the API server authenticated it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn new(username: impl Into<String>, groups: &[&str]) -> Self {
        Self { username: username.into(), groups: groups.iter().map(|g| (*g).to_string()).collect() }
    }
}

/// Users and groups; a request matches when its user is listed or is in a listed group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identities {
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Identities {
    pub fn contains(&self, user: &UserInfo) -> bool {
        self.users.contains(&user.username) || user.groups.iter().any(|g| self.groups.contains(g))
    }

    /// The default seed assigners: the scheduler's service account and cluster admins
    /// (`system:masters`, the operators who migrate control planes).
    pub fn default_seed_assigners() -> Self {
        Self {
            users: vec!["system:serviceaccount:garden:gardener-scheduler".into()],
            groups: vec!["system:masters".into()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_user_or_group() {
        let ids = Identities::default_seed_assigners();
        assert!(ids.contains(&UserInfo::new("system:serviceaccount:garden:gardener-scheduler", &[])));
        assert!(ids.contains(&UserInfo::new("alice", &["system:masters"])));
        assert!(!ids.contains(&UserInfo::new("alice", &["system:authenticated"])));
        assert!(!Identities::default().contains(&UserInfo::new("", &[])));
    }
}
