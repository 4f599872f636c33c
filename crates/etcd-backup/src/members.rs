//! etcd's cluster membership through the HTTP gateway (`Cluster/MemberList`, `MemberAdd`,
//! `MemberRemove`, `MemberPromote`), for the join of a member of a multi-member etcd
//! ([`crate::join`]).

use crate::gateway::{Etcd, GatewayError};

/// One member as `MemberList` reports it. A member that was added but never started has no
/// name and no client URLs yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    pub name: String,
    pub peer_urls: Vec<String>,
    pub client_urls: Vec<String>,
    pub is_learner: bool,
}

/// A uint64 of a gateway answer (they come as strings in JSON).
fn uint(v: Option<&serde_json::Value>) -> Option<u64> {
    match v? {
        serde_json::Value::String(s) => s.parse().ok(),
        other => other.as_u64(),
    }
}

fn strings(v: Option<&serde_json::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The members of a gateway answer (`members`).
pub fn parse_members(answer: &serde_json::Value) -> Result<Vec<Member>, String> {
    let Some(members) = answer.get("members").and_then(|m| m.as_array()) else {
        return Err("no members in the answer".to_string());
    };
    members
        .iter()
        .map(|m| {
            Ok(Member {
                id: uint(m.get("ID")).ok_or("a member without an ID")?,
                name: m.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_string(),
                peer_urls: strings(m.get("peerURLs")),
                client_urls: strings(m.get("clientURLs")),
                is_learner: m.get("isLearner").and_then(|l| l.as_bool()).unwrap_or(false),
            })
        })
        .collect()
}

impl Etcd {
    /// The cluster's members (`MemberList`). A learner does not answer it.
    pub async fn members(&self) -> Result<Vec<Member>, GatewayError> {
        let answer = self.call("listing the members", "/v3/cluster/member/list", serde_json::json!({})).await?;
        parse_members(&answer).map_err(|reason| self.answer("listing the members", reason))
    }

    /// Adds a learner with `peer_url` (`MemberAdd`, `isLearner`): it receives the data but does
    /// not vote until promoted. Returns its ID and the members after the add.
    pub async fn add_learner(&self, peer_url: &str) -> Result<(u64, Vec<Member>), GatewayError> {
        let what = "adding a learner";
        let body = serde_json::json!({"peerURLs": [peer_url], "isLearner": true});
        let answer = self.call(what, "/v3/cluster/member/add", body).await?;
        let id =
            uint(answer.get("member").and_then(|m| m.get("ID"))).ok_or_else(|| self.answer(what, "no member.ID"))?;
        Ok((id, parse_members(&answer).map_err(|reason| self.answer(what, reason))?))
    }

    /// Removes member `id` (`MemberRemove`).
    pub async fn remove_member(&self, id: u64) -> Result<(), GatewayError> {
        let body = serde_json::json!({"ID": id.to_string()});
        self.call("removing a member", "/v3/cluster/member/remove", body).await.map(drop)
    }

    /// Makes learner `id` a voting member (`MemberPromote`); etcd refuses while the learner is
    /// behind the leader.
    pub async fn promote(&self, id: u64) -> Result<(), GatewayError> {
        let body = serde_json::json!({"ID": id.to_string()});
        self.call("promoting a learner", "/v3/cluster/member/promote", body).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_parse_as_the_gateway_sends_them() {
        let answer = serde_json::json!({"header": {"cluster_id": "1"}, "members": [
            {"ID": "10276657743932975437", "name": "etcd-main-0", "peerURLs": ["https://a:2380"], "clientURLs": ["https://a:2379"]},
            {"ID": "42", "peerURLs": ["https://b:2380"], "isLearner": true},
        ]});
        let members = parse_members(&answer).unwrap();
        assert_eq!(members[0].id, 10276657743932975437);
        assert_eq!(members[0].name, "etcd-main-0");
        assert!(!members[0].is_learner);
        assert_eq!(
            members[1],
            Member {
                id: 42,
                name: String::new(),
                peer_urls: vec!["https://b:2380".into()],
                client_urls: vec![],
                is_learner: true
            }
        );
        assert!(parse_members(&serde_json::json!({"members": [{"name": "x"}]})).is_err());
    }
}
