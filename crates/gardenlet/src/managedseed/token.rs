//! The managed gardenlet's garden credential: a token of its ServiceAccount in the garden from
//! the TokenRequest API, valid for [`LIFETIME`] and replaced by the hosting gardenlet once half
//! of it has passed. No token Secret exists for the account, so nothing in the garden holds a
//! credential that never expires, and a token copied out of the shoot stops working by itself.
//!
//! The token goes into the shoot's Secret `gardenlet-garden-kubeconfig` as its own key, next to
//! the kubeconfig, which names it as a `tokenFile`: the kubelet updates the mounted file when the
//! Secret changes, and the client re-reads the file, so a renewal reaches the running gardenlet
//! without a restart. The Secret carries the token's expiry in [`EXPIRATION_ANNOTATION`].
//!
//! [`decide`] is pure; the caller reads the Secret and asks the API for a token.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::time::Duration;

/// How long a token is valid. The hosting gardenlet must run at least once in the second half
/// of it (every reconcile of the ManagedSeed checks; one is queued for the renewal time).
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The token's expiry (RFC 3339) on the garden kubeconfig Secret in the shoot.
pub const EXPIRATION_ANNOTATION: &str = "seedmanagement.gardener.cloud/token-expiration";
/// The key of the token in that Secret, and where the managed gardenlet reads it.
pub const TOKEN_KEY: &str = "token";
pub const TOKEN_FILE: &str = "/etc/gardenlet/garden/token";

/// What to do with the token the shoot's Secret holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep it; look again after `renew_in`.
    Keep { renew_in: Duration },
    /// Request a new one (none, no readable expiry, or half of its lifetime has passed).
    Request,
}

/// Whether the token with `expiration` (the annotation's value, if the Secret holds a token)
/// is kept at `now`. A token is replaced once less than half of [`LIFETIME`] remains, so a
/// hosting gardenlet that is down for up to half the lifetime does not lock the seed out.
pub fn decide(expiration: Option<&str>, now: Timestamp) -> Decision {
    let Some(expires) = expiration.and_then(|e| e.parse::<Timestamp>().ok()) else { return Decision::Request };
    let half = SignedDuration::from_secs((LIFETIME.as_secs() / 2) as i64);
    let renew_at = expires - half;
    match now.duration_until(renew_at).try_into() {
        Ok(remaining) if renew_at > now => Decision::Keep { renew_in: remaining },
        _ => Decision::Request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn no_token_or_no_readable_expiry_requests_one() {
        let now = at("2026-11-27T10:00:00Z");
        assert_eq!(decide(None, now), Decision::Request);
        assert_eq!(decide(Some(""), now), Decision::Request);
        assert_eq!(decide(Some("tomorrow"), now), Decision::Request);
    }

    #[test]
    fn a_fresh_token_is_kept_until_half_its_lifetime_remains() {
        let now = at("2026-11-27T10:00:00Z");
        // Issued now: valid 12 h, renewed after 6 h.
        assert_eq!(
            decide(Some("2026-11-27T22:00:00Z"), now),
            Decision::Keep { renew_in: Duration::from_secs(6 * 3600) }
        );
        // Issued 5 h ago: renewed in one hour.
        assert_eq!(decide(Some("2026-11-27T17:00:00Z"), now), Decision::Keep { renew_in: Duration::from_secs(3600) });
    }

    #[test]
    fn a_token_past_half_its_lifetime_or_expired_is_replaced() {
        let now = at("2026-11-27T10:00:00Z");
        assert_eq!(decide(Some("2026-11-27T16:00:00Z"), now), Decision::Request, "exactly half left");
        assert_eq!(decide(Some("2026-11-27T12:00:00Z"), now), Decision::Request);
        assert_eq!(decide(Some("2026-11-27T09:00:00Z"), now), Decision::Request, "expired");
    }
}
