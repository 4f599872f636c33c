//! The garden objects a shoot names that shape its control plane, read once per operation:
//!
//! * its profile ([`api::helpers::cloudprofile_ref`]): a CloudProfile, or a NamespacedCloudProfile
//!   presented as a CloudProfile with its merged `status.cloudProfileSpec`, as Gardener puts it
//!   into the extension `Cluster` resource;
//! * its ExposureClass, whose `handler` must be one of this gardenlet's
//!   `exposureClassHandlers`; the handler's settings go onto the kube-apiserver Service.
//!
//! The deciding ([`cluster_cloud_profile`], [`exposure_handler`]) is pure; [`read_cloud_profile`]
//! and [`read_exposure_handler`] only fetch.

use crate::config::ExposureClassHandler;
use api::core::{CloudProfile, ExposureClass, NamespacedCloudProfile, Shoot};
use api::helpers::cloudprofile_ref::{self, ProfileRef, ProfileRefError};
use kube::{Api, Client, Resource};

/// Why a shoot's references cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error("reading {what} from the garden")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Profile(#[from] ProfileRefError),
    #[error("ExposureClass {0:?} (spec.exposureClassName) does not exist")]
    ExposureClassNotFound(String),
    #[error(
        "ExposureClass {class:?} names handler {handler:?}, which this gardenlet's exposureClassHandlers do not configure (configured: {})",
        if configured.is_empty() { "none".to_string() } else { configured.join(", ") }
    )]
    UnknownHandler { class: String, handler: String, configured: Vec<String> },
}

/// The `cloudProfile` of the shoot's `Cluster` resource: the CloudProfile it names, or its
/// NamespacedCloudProfile presented as a CloudProfile (`apiVersion`/`kind` of a CloudProfile,
/// the NamespacedCloudProfile's name and namespace, the merged spec). Server bookkeeping
/// (`managedFields`, `resourceVersion`) is left out, so that it does not rewrite the Cluster.
/// A shoot that names no profile gets `{}`.
pub fn cluster_cloud_profile(
    shoot: &Shoot,
    cloud_profile: Option<&CloudProfile>,
    namespaced: Option<&NamespacedCloudProfile>,
) -> Result<serde_json::Value, ProfileRefError> {
    let presented = match cloudprofile_ref::profile_ref(shoot) {
        Err(ProfileRefError::NoProfile) => return Ok(serde_json::json!({})),
        Err(e) => return Err(e),
        // A missing CloudProfile stays `{}`, as before: extensions read what they find.
        Ok(ProfileRef::Cluster(_)) => match cloud_profile {
            None => return Ok(serde_json::json!({})),
            Some(p) => p.clone(),
        },
        Ok(ProfileRef::Namespaced { namespace, name }) => match namespaced {
            None => {
                return Err(ProfileRefError::NamespacedCloudProfileNotFound {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                });
            }
            Some(ncp) => cloudprofile_ref::as_cloud_profile(ncp)?,
        },
    };
    let mut v = serde_json::to_value(&presented).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), CloudProfile::api_version(&()).into());
        o.insert("kind".into(), CloudProfile::kind(&()).into());
        if let Some(m) = o.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            m.remove("managedFields");
            m.remove("resourceVersion");
        }
    }
    Ok(v)
}

/// The handler of `class` among this gardenlet's, or [`ReferenceError::UnknownHandler`].
pub fn exposure_handler<'a>(
    handlers: &'a [ExposureClassHandler],
    class: &ExposureClass,
) -> Result<&'a ExposureClassHandler, ReferenceError> {
    let wanted = &class.spec.handler;
    handlers.iter().find(|h| &h.name == wanted).ok_or_else(|| ReferenceError::UnknownHandler {
        class: class.metadata.name.clone().unwrap_or_default(),
        handler: wanted.clone(),
        configured: handlers.iter().map(|h| h.name.clone()).collect(),
    })
}

/// Reads the shoot's profile from the garden and presents it for the `Cluster`.
pub async fn read_cloud_profile(garden: &Client, shoot: &Shoot) -> Result<serde_json::Value, ReferenceError> {
    let read = |what: String| move |source| ReferenceError::Read { what, source };
    let (mut cloud_profile, mut namespaced) = (None, None);
    match cloudprofile_ref::profile_ref(shoot) {
        Ok(r @ ProfileRef::Cluster(name)) => {
            let api: Api<CloudProfile> = Api::all(garden.clone());
            cloud_profile = api.get_opt(name).await.map_err(read(r.to_string()))?;
        }
        Ok(r @ ProfileRef::Namespaced { namespace, name }) => {
            let api: Api<NamespacedCloudProfile> = Api::namespaced(garden.clone(), namespace);
            namespaced = api.get_opt(name).await.map_err(read(r.to_string()))?;
        }
        Err(_) => {} // decided below
    }
    Ok(cluster_cloud_profile(shoot, cloud_profile.as_ref(), namespaced.as_ref())?)
}

/// The handler whose settings the shoot's kube-apiserver Service gets: `None` without an
/// ExposureClass; an error when the class is missing or its handler is not configured here.
pub async fn read_exposure_handler<'a>(
    garden: &Client,
    shoot: &Shoot,
    handlers: &'a [ExposureClassHandler],
) -> Result<Option<&'a ExposureClassHandler>, ReferenceError> {
    let Some(name) = shoot.spec.exposure_class_name.as_deref().filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    let api: Api<ExposureClass> = Api::all(garden.clone());
    let class = api
        .get_opt(name)
        .await
        .map_err(|source| ReferenceError::Read { what: format!("ExposureClass {name:?}"), source })?
        .ok_or_else(|| ReferenceError::ExposureClassNotFound(name.to_string()))?;
    exposure_handler(handlers, &class).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::core::exposureclass::ExposureClassFields;
    use api::core::shoot::CloudProfileReference;

    fn shoot(reference: Option<(&str, &str)>) -> Shoot {
        let mut s = Shoot::default();
        s.metadata.namespace = Some("garden-p".into());
        if let Some((kind, name)) = reference {
            s.spec.cloud_profile = Some(CloudProfileReference { kind: Some(kind.into()), name: name.into() });
        }
        s
    }

    fn cloud_profile() -> CloudProfile {
        let mut p = CloudProfile::new("local", Default::default());
        p.spec.type_ = "local".into();
        p.metadata.resource_version = Some("7".into());
        p
    }

    fn namespaced(computed: bool) -> NamespacedCloudProfile {
        let mut p = NamespacedCloudProfile::default();
        p.metadata.name = Some("team".into());
        p.metadata.namespace = Some("garden-p".into());
        p.metadata.resource_version = Some("9".into());
        let mut merged = cloud_profile().spec;
        merged.type_ = "merged".into();
        p.status = Some(api::core::NamespacedCloudProfileStatus {
            cloud_profile_spec: computed.then_some(merged),
            observed_generation: None,
        });
        p
    }

    #[test]
    fn the_cluster_gets_the_profile_the_shoot_uses() {
        let (cp, ncp, pending) = (cloud_profile(), namespaced(true), namespaced(false));
        let on_cp = shoot(Some(("CloudProfile", "local")));
        let on_ncp = shoot(Some(("NamespacedCloudProfile", "team")));

        let v = cluster_cloud_profile(&on_cp, Some(&cp), Some(&ncp)).unwrap();
        assert_eq!((v["kind"].as_str(), v["spec"]["type"].as_str()), (Some("CloudProfile"), Some("local")));
        assert!(v["metadata"].get("resourceVersion").is_none());

        let v = cluster_cloud_profile(&on_ncp, Some(&cp), Some(&ncp)).unwrap();
        assert_eq!(v["apiVersion"], "core.gardener.cloud/v1beta1");
        assert_eq!(v["kind"], "CloudProfile");
        assert_eq!(v["metadata"]["name"], "team");
        assert_eq!(v["metadata"]["namespace"], "garden-p");
        assert_eq!(v["spec"]["type"], "merged", "the merged spec, not the parent's");
        assert!(v.get("status").is_none() && v["metadata"].get("resourceVersion").is_none(), "{v}");

        let err = cluster_cloud_profile(&on_ncp, Some(&cp), Some(&pending)).unwrap_err();
        assert_eq!(err, ProfileRefError::NotComputed { namespace: "garden-p".into(), name: "team".into() });
        let err = cluster_cloud_profile(&on_ncp, Some(&cp), None).unwrap_err();
        assert_eq!(err.to_string(), "NamespacedCloudProfile \"garden-p/team\" does not exist");
        assert_eq!(cluster_cloud_profile(&shoot(None), None, None).unwrap(), serde_json::json!({}));
        assert_eq!(cluster_cloud_profile(&on_cp, None, None).unwrap(), serde_json::json!({}));
        assert!(cluster_cloud_profile(&shoot(Some(("Other", "x"))), None, None).is_err());
    }

    #[test]
    fn the_class_handler_must_be_configured() {
        let handlers: Vec<ExposureClassHandler> = ["internet", "internal"]
            .into_iter()
            .map(|n| ExposureClassHandler { name: n.into(), ..Default::default() })
            .collect();
        let class = |handler: &str| {
            ExposureClass::new("public", ExposureClassFields { handler: handler.into(), scheduling: None })
        };
        assert_eq!(exposure_handler(&handlers, &class("internal")).unwrap().name, "internal");
        let err = exposure_handler(&handlers, &class("sni")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ExposureClass \"public\" names handler \"sni\", which this gardenlet's exposureClassHandlers do not configure (configured: internet, internal)"
        );
        let err = exposure_handler(&[], &class("sni")).unwrap_err();
        assert!(err.to_string().ends_with("(configured: none)"), "{err}");
    }
}
