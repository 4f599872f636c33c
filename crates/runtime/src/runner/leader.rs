//! Leader election on a `coordination.k8s.io/v1` Lease, the algorithm of client-go's
//! `leaderelection` package: candidates acquire a free or expired lease; the holder renews it
//! every retry period and gives up leadership when it could not renew within the renew
//! deadline (which is shorter than the lease duration, so it stops before anyone else can
//! take over). Every write is a `replace` carrying the resourceVersion that was read, so two
//! candidates can never both win the same round. Expiry is judged by the local time at which
//! this process last saw the lease record change, never by comparing clocks across machines.
//!
//! Why not a crate: `kube-lease-manager` 0.13 (the maintained option for kube 5) keeps
//! reporting leadership while the API server is unreachable, even after the lease has expired
//! and another instance may have taken it; it has no renew deadline. For controllers that
//! mutate real infrastructure that window is the one that matters, so this ~200-line module
//! implements the deadline itself.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use std::time::{Duration, Instant};

/// Leader election settings (client-go's defaults: 15 s / 10 s / 2 s).
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    pub lease_name: String,
    pub namespace: String,
    /// This instance's identity (unique among the candidates, e.g. the pod name).
    pub identity: String,
    /// How long a lease is valid after its last renewal.
    pub lease_duration: Duration,
    /// The holder gives up when it could not renew for this long.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and the holder renews.
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    pub fn new(lease_name: impl Into<String>, namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            lease_name: lease_name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Checks that retry period < renew deadline < lease duration.
    pub fn validate(&self) -> Result<(), String> {
        if self.identity.is_empty() || self.lease_name.is_empty() {
            return Err("leader election needs a lease name and an identity".into());
        }
        if !(self.retry_period < self.renew_deadline && self.renew_deadline < self.lease_duration) {
            return Err(format!(
                "leader election needs retry period ({:?}) < renew deadline ({:?}) < lease duration ({:?})",
                self.retry_period, self.renew_deadline, self.lease_duration
            ));
        }
        Ok(())
    }
}

/// Result of one acquire-or-renew round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the lease now.
    Held,
    /// Someone else holds a lease that has not expired.
    HeldBy(String),
    /// Another writer won this round (or the lease was created concurrently).
    Conflict,
}

#[derive(Debug)]
struct Observed {
    holder: Option<String>,
    renew: Option<MicroTime>,
    duration: Duration,
    at: Instant,
}

/// One candidate.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    observed: Option<Observed>,
}

impl LeaderElector {
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Self { api: Api::namespaced(client, &config.namespace), config, observed: None })
    }

    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    fn observe(&mut self, spec: &LeaseSpec) {
        let changed =
            self.observed.as_ref().is_none_or(|o| o.holder != spec.holder_identity || o.renew != spec.renew_time);
        if changed {
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.config.lease_duration, Duration::from_secs);
            self.observed = Some(Observed {
                holder: spec.holder_identity.clone(),
                renew: spec.renew_time.clone(),
                duration,
                at: Instant::now(),
            });
        }
    }

    fn observed_expired(&self) -> bool {
        self.observed.as_ref().is_none_or(|o| o.at.elapsed() > o.duration)
    }

    fn desired(&self, previous: &LeaseSpec) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        let me = &self.config.identity;
        let ours = previous.holder_identity.as_deref() == Some(me.as_str());
        let had_holder = previous.holder_identity.as_deref().is_some_and(|h| !h.is_empty());
        LeaseSpec {
            holder_identity: Some(me.clone()),
            lease_duration_seconds: i32::try_from(self.config.lease_duration.as_secs()).ok(),
            acquire_time: if ours { previous.acquire_time.clone() } else { Some(now.clone()) },
            renew_time: Some(now),
            lease_transitions: if ours || !had_holder {
                previous.lease_transitions
            } else {
                Some(previous.lease_transitions.unwrap_or(0) + 1)
            },
            ..previous.clone()
        }
    }

    /// One round: create the lease, take it over when free or expired, or renew it.
    pub async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let name = self.config.lease_name.clone();
        let Some(mut lease) = self.api.get_opt(&name).await? else {
            let spec = self.desired(&LeaseSpec::default());
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(spec.clone()),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.observe(&spec);
                    Ok(Attempt::Held)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::Conflict),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        self.observe(&spec);
        if let Some(holder) = spec.holder_identity.as_deref().filter(|h| !h.is_empty() && *h != self.config.identity)
            && !self.observed_expired()
        {
            return Ok(Attempt::HeldBy(holder.to_string()));
        }
        let desired = self.desired(&spec);
        lease.spec = Some(desired.clone());
        match self.api.replace(&name, &PostParams::default(), &lease).await {
            Ok(_) => {
                self.observe(&desired);
                Ok(Attempt::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::Conflict),
            Err(e) => Err(e),
        }
    }

    /// Tries every retry period until this instance holds the lease.
    pub async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Held) => {
                    tracing::info!(identity = %self.config.identity, lease = %self.config.lease_name, "became the leader");
                    return;
                }
                Ok(Attempt::HeldBy(holder)) => tracing::debug!(%holder, "lease held by another instance"),
                Ok(Attempt::Conflict) => tracing::debug!("lost an acquire round"),
                Err(e) => tracing::warn!(error = %crate::events::error_chain(&e), "acquiring the leader lease"),
            }
            tokio::time::sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Renews the lease every retry period; returns (with the reason) when leadership is lost:
    /// another instance holds the lease, or renewing failed for longer than the renew deadline.
    pub async fn hold(&mut self) -> String {
        let mut last_renew = Instant::now();
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let budget = self.config.renew_deadline.saturating_sub(last_renew.elapsed());
            match tokio::time::timeout(budget, self.try_acquire_or_renew()).await {
                Ok(Ok(Attempt::Held)) => last_renew = Instant::now(),
                Ok(Ok(Attempt::HeldBy(holder))) => return format!("the lease is held by {holder}"),
                Ok(Ok(Attempt::Conflict)) => tracing::debug!("conflict renewing the lease"),
                Ok(Err(e)) => tracing::warn!(error = %crate::events::error_chain(&e), "renewing the leader lease"),
                Err(_) => {}
            }
            if last_renew.elapsed() >= self.config.renew_deadline {
                return format!("could not renew the lease within {:?}", self.config.renew_deadline);
            }
        }
    }

    /// Gives the lease up (when this instance still holds it) so that another can take over at once.
    pub async fn release(&mut self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.config.lease_name).await? else { return Ok(()) };
        let Some(spec) = lease.spec.as_mut() else { return Ok(()) };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        match self.api.replace(&self.config.lease_name, &PostParams::default(), &lease).await {
            Ok(_) | Err(kube::Error::Api(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn jittered(d: Duration) -> Duration {
    d.mul_f64(1.0 + 0.2 * fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_must_nest() {
        let mut c = LeaderElectionConfig::new("l", "ns", "me");
        assert!(c.validate().is_ok());
        c.renew_deadline = c.lease_duration;
        assert!(c.validate().is_err());
        let mut c = LeaderElectionConfig::new("l", "ns", "");
        assert!(c.validate().is_err());
        c.identity = "me".into();
        c.retry_period = c.renew_deadline;
        assert!(c.validate().is_err());
    }
}
