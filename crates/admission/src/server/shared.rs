//! The CA and serving certificate every replica of the webhook server presents, shared through
//! one Secret (type `kubernetes.io/tls`, plus `ca.crt` and, during a rotation, the previous CA
//! in `ca-previous.crt`). Whichever replica finds the Secret missing, unreadable, issued for
//! other hosts or due for rotation replaces it, with optimistic concurrency: when two race, the
//! loser re-reads and adopts the winner's certificates. All replicas therefore serve
//! certificates of a CA the published bundle trusts, whichever the Service routes a request to.

use super::certs::{self, CertError, ServingCerts, needs_rotation};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::PostParams;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use time::OffsetDateTime;

/// Where the replicas keep their certificates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// The annotation recording the hosts the stored certificate was issued for.
pub const HOSTS_ANNOTATION: &str = "admission.gardener.cloud/hosts";

const CA: &str = "ca.crt";
const PREVIOUS_CA: &str = "ca-previous.crt";
const CERT: &str = "tls.crt";
const KEY: &str = "tls.key";

/// The certificates in use and the CA they replaced (trusted until the next rotation).
#[derive(Clone, Debug)]
pub struct Issued {
    pub current: ServingCerts,
    pub previous_ca: Option<String>,
}

impl Issued {
    /// The CA bundle the webhook configurations carry: the current CA, then the previous one.
    pub fn bundle(&self) -> String {
        let mut b = self.current.ca_pem.clone();
        if let Some(prev) = &self.previous_ca {
            b.push_str(prev);
        }
        b
    }
}

/// What the Secret holds, as far as the decision is concerned.
#[derive(Debug)]
pub enum Stored {
    Missing,
    /// Present but not usable (a key is missing or does not parse): replaced.
    Unreadable(String),
    Found {
        issued: Issued,
        hosts: String,
    },
}

/// What to do with the Secret.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Keep,
    Create,
    /// Replace it with new certificates, trusting `previous_ca` alongside during the swap.
    Replace {
        previous_ca: Option<String>,
    },
}

/// Decides from what is stored, the hosts wanted, the CA that must sign (when the server was
/// given one) and the time (Unix seconds). A certificate of another CA than the given one is
/// replaced at once; the CA replaced stays trusted during the swap unless it is the given one.
pub fn step(stored: &Stored, hosts: &[String], signing_ca: Option<&str>, now: i64) -> Step {
    match stored {
        Stored::Missing => Step::Create,
        Stored::Unreadable(_) => Step::Replace { previous_ca: None },
        Stored::Found { issued, hosts: stored_hosts } => {
            let c = &issued.current;
            let other_ca = signing_ca.is_some_and(|ca| ca != c.ca_pem);
            if *stored_hosts == hosts.join(",") && !other_ca && !needs_rotation(c.not_before, c.not_after, now) {
                Step::Keep
            } else {
                let previous_ca = Some(c.ca_pem.clone()).filter(|old| signing_ca != Some(old.as_str()));
                Step::Replace { previous_ca }
            }
        }
    }
}

fn text(secret: &Secret, key: &str) -> Result<String, String> {
    let bytes = secret.data.as_ref().and_then(|d| d.get(key)).ok_or_else(|| format!("no data.{key}"))?;
    String::from_utf8(bytes.0.clone()).map_err(|_| format!("data.{key} is not UTF-8"))
}

/// Reads the Secret (its contents never reach an error message: only which key is wrong).
pub fn read(secret: Option<&Secret>) -> Stored {
    let Some(secret) = secret else { return Stored::Missing };
    let parsed = (|| -> Result<Stored, String> {
        let current = ServingCerts::from_pem(&text(secret, CA)?, &text(secret, CERT)?, &text(secret, KEY)?)
            .map_err(|e| e.to_string())?;
        let previous_ca = text(secret, PREVIOUS_CA).ok().filter(|p| !p.is_empty());
        let hosts =
            secret.metadata.annotations.as_ref().and_then(|a| a.get(HOSTS_ANNOTATION)).cloned().unwrap_or_default();
        Ok(Stored::Found { issued: Issued { current, previous_ca }, hosts })
    })();
    parsed.unwrap_or_else(Stored::Unreadable)
}

/// The Secret holding `issued` for `hosts`, owned by `owner` when given.
pub fn secret(at: &SecretRef, hosts: &[String], issued: &Issued, owner: Option<&OwnerReference>) -> Secret {
    let c = &issued.current;
    let mut data = BTreeMap::from([
        (CA.to_string(), ByteString(c.ca_pem.clone().into_bytes())),
        (CERT.to_string(), ByteString(c.cert_pem.clone().into_bytes())),
        (KEY.to_string(), ByteString(c.key_pem().as_bytes().to_vec())),
    ]);
    if let Some(prev) = &issued.previous_ca {
        data.insert(PREVIOUS_CA.to_string(), ByteString(prev.clone().into_bytes()));
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(at.name.clone()),
            namespace: Some(at.namespace.clone()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_string(),
                "gardener-controller-manager".to_string(),
            )])),
            annotations: Some(BTreeMap::from([(HOSTS_ANNOTATION.to_string(), hosts.join(","))])),
            owner_references: owner.map(|o| vec![o.clone()]),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Default::default()
    }
}

/// Why the shared certificates could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error(transparent)]
    Certificate(#[from] CertError),
    #[error("{verb} Secret {namespace}/{name}")]
    Api {
        verb: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("Secret {namespace}/{name} kept changing under {attempts} attempts to update it")]
    Contended { namespace: String, name: String, attempts: usize },
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Makes sure the Secret holds current certificates for `hosts` at `now` and returns them:
/// adopts what is there, or issues and writes new ones (create, or replace at the read
/// resourceVersion); on a conflict with another replica it re-reads and adopts theirs. With
/// `signing`, certificates are signed by that CA instead of one of their own.
pub async fn ensure(
    client: &kube::Client,
    at: &SecretRef,
    owner: Option<&OwnerReference>,
    hosts: &[String],
    validity: Duration,
    signing: Option<&certs::SigningCa>,
    now: OffsetDateTime,
) -> Result<Issued, SharedError> {
    const ATTEMPTS: usize = 5;
    let api = Api::<Secret>::namespaced(client.clone(), &at.namespace);
    let api_err =
        |verb| move |source| SharedError::Api { verb, namespace: at.namespace.clone(), name: at.name.clone(), source };
    for _ in 0..ATTEMPTS {
        let live = api.get_opt(&at.name).await.map_err(api_err("reading"))?;
        let stored = read(live.as_ref());
        let step = step(&stored, hosts, signing.map(certs::SigningCa::pem), now.unix_timestamp());
        let previous_ca = match (step, stored) {
            (Step::Keep, Stored::Found { issued, .. }) => return Ok(issued),
            (Step::Replace { previous_ca }, Stored::Unreadable(reason)) => {
                tracing::warn!(secret = %at.name, %reason, "the stored webhook certificate is unusable; replacing it");
                previous_ca
            }
            (Step::Replace { previous_ca }, _) => previous_ca,
            _ => None,
        };
        let issued = Issued { current: certs::issue_by(hosts, now, validity, signing)?, previous_ca };
        let mut wanted = secret(at, hosts, &issued, owner);
        let written = match live {
            None => api.create(&PostParams::default(), &wanted).await,
            Some(live) => {
                wanted.metadata.resource_version = live.metadata.resource_version;
                api.replace(&at.name, &PostParams::default(), &wanted).await
            }
        };
        match written {
            Ok(_) => {
                tracing::info!(secret = %at.name, not_after = issued.current.not_after, "issued the webhook certificate");
                return Ok(issued);
            }
            Err(e) if is_conflict(&e) => continue,
            Err(e) => return Err(api_err("writing")(e)),
        }
    }
    Err(SharedError::Contended { namespace: at.namespace.clone(), name: at.name.clone(), attempts: ATTEMPTS })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> SecretRef {
        SecretRef { namespace: "garden".into(), name: "gardener-admission-tls".into() }
    }

    fn issued(now: i64, validity: u64) -> Issued {
        let now = OffsetDateTime::from_unix_timestamp(now).unwrap();
        Issued {
            current: certs::issue(&["a.garden.svc".to_string()], now, Duration::from_secs(validity)).unwrap(),
            previous_ca: None,
        }
    }

    #[test]
    fn the_secret_round_trips_and_damage_is_named_without_contents() {
        let hosts = vec!["a.garden.svc".to_string()];
        let mut first = issued(1_700_000_000, 3000);
        first.previous_ca = Some("OLD CA\n".into());
        let s = secret(&at(), &hosts, &first, None);
        assert_eq!(s.type_.as_deref(), Some("kubernetes.io/tls"));
        let Stored::Found { issued: back, hosts: h } = read(Some(&s)) else { panic!("not read back") };
        assert_eq!(h, "a.garden.svc");
        assert_eq!(back.current.cert_der, first.current.cert_der);
        assert_eq!(back.bundle(), format!("{}OLD CA\n", first.current.ca_pem));

        let mut broken = s.clone();
        broken.data.as_mut().unwrap().remove(KEY);
        assert!(matches!(read(Some(&broken)), Stored::Unreadable(r) if r == "no data.tls.key"));
        let mut garbage = s;
        garbage.data.as_mut().unwrap().insert(CERT.into(), ByteString(b"-----BEGIN X-----".to_vec()));
        let Stored::Unreadable(reason) = read(Some(&garbage)) else { panic!("garbage was read") };
        assert!(!reason.contains("PRIVATE KEY"), "{reason}");
        assert!(matches!(read(None), Stored::Missing));
    }

    #[test]
    fn the_step_follows_presence_hosts_and_age() {
        let hosts = vec!["a.garden.svc".to_string()];
        let found = |hosts: &str| Stored::Found { issued: issued(1_000, 300), hosts: hosts.into() };
        assert_eq!(step(&Stored::Missing, &hosts, None, 1_000), Step::Create);
        assert_eq!(step(&Stored::Unreadable("x".into()), &hosts, None, 1_000), Step::Replace { previous_ca: None });
        assert_eq!(step(&found("a.garden.svc"), &hosts, None, 1_100), Step::Keep);
        // Due for rotation (two thirds of 970..1300), or issued for other hosts: replaced, and
        // the CA it was signed by stays trusted during the swap.
        for (stored, now) in [(found("a.garden.svc"), 1_200), (found("other.svc"), 1_100)] {
            let Stored::Found { issued, .. } = &stored else { unreachable!() };
            let ca = issued.current.ca_pem.clone();
            assert_eq!(step(&stored, &hosts, None, now), Step::Replace { previous_ca: Some(ca) });
        }
    }

    #[test]
    fn with_a_given_ca_a_certificate_of_another_ca_is_replaced_and_the_given_ca_is_not_doubled() {
        let hosts = vec!["a.garden.svc".to_string()];
        let stored = Stored::Found { issued: issued(1_000, 300), hosts: "a.garden.svc".into() };
        let Stored::Found { issued: own, .. } = &stored else { unreachable!() };
        let own_ca = own.current.ca_pem.clone();
        // Another CA is wanted: replaced at once, the old one trusted during the swap.
        assert_eq!(step(&stored, &hosts, Some("GIVEN CA"), 1_100), Step::Replace { previous_ca: Some(own_ca.clone()) });
        // Signed by the given CA: kept while young; rotated without listing that CA twice.
        assert_eq!(step(&stored, &hosts, Some(&own_ca), 1_100), Step::Keep);
        assert_eq!(step(&stored, &hosts, Some(&own_ca), 1_250), Step::Replace { previous_ca: None });
    }
}
