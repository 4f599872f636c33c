//! Conversion of ControllerDeployments between `core.gardener.cloud/v1beta1` and `v1`, as
//! Gardener converts them:
//!
//! * v1beta1 `type: helm` ⇄ v1 `helm`: `providerConfig.chart` ⇄ `helm.rawChart`, `values` and
//!   `ociRepository` as they are.
//! * any other v1beta1 `type` ⇄ v1 annotations [`ANNOTATION_TYPE`] and
//!   [`ANNOTATION_PROVIDER_CONFIG`] (the `providerConfig` as JSON); the annotations exist only in
//!   v1 and are removed when converting back.
//!
//! Metadata, `injectGardenKubeconfig` and everything else carry over unchanged. Pure functions;
//! the webhook in the admission crate calls [`convert`].

use super::{
    ANNOTATION_PROVIDER_CONFIG, ANNOTATION_TYPE, ControllerDeployment, HelmControllerDeployment, OciRepository,
};
use crate::core::controller::{ControllerDeployment as V1beta1, ControllerDeploymentFields as V1beta1Fields};
use crate::opaque::Opaque;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConversionError {
    #[error("object has no apiVersion or kind")]
    NoType,
    #[error("cannot convert {kind} objects (only ControllerDeployment has more than one version)")]
    UnsupportedKind { kind: String },
    #[error("cannot convert ControllerDeployment from {from} to {to}")]
    UnsupportedVersion { from: String, to: String },
    #[error("ControllerDeployment {name}: not a valid {api_version} object: {message}")]
    Decode { name: String, api_version: String, message: String },
    #[error(
        "ControllerDeployment {name}: providerConfig of type helm must be {{chart, values, ociRepository}}: {message}"
    )]
    HelmProviderConfig { name: String, message: String },
    #[error("ControllerDeployment {name}: annotation {ANNOTATION_PROVIDER_CONFIG} is not JSON: {message}")]
    ProviderConfigAnnotation { name: String, message: String },
    #[error("encoding the converted object: {0}")]
    Encode(String),
}

/// v1beta1's `providerConfig` of a Helm deployment.
/// Unknown keys are dropped, as Gardener drops them; a field of the wrong type is an error.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1beta1Helm {
    chart: Option<String>,
    values: Option<Value>,
    oci_repository: Option<OciRepository>,
}

fn name_of(meta: &kube::api::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

/// v1beta1 → v1.
pub fn to_v1(beta: &V1beta1) -> Result<ControllerDeployment, ConversionError> {
    let mut metadata = beta.metadata.clone();
    let fields = &beta.spec;
    let helm = if fields.type_ == super::TYPE_HELM {
        let config: V1beta1Helm = match &fields.provider_config {
            Some(config) => config.decode().map_err(|e| ConversionError::HelmProviderConfig {
                name: name_of(&metadata),
                message: e.to_string(),
            })?,
            None => V1beta1Helm::default(),
        };
        Some(HelmControllerDeployment {
            raw_chart: config.chart,
            values: config.values.map(Opaque),
            oci_repository: config.oci_repository,
        })
    } else {
        let annotations = metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert(ANNOTATION_TYPE.into(), fields.type_.clone());
        match &fields.provider_config {
            Some(config) => {
                annotations.insert(ANNOTATION_PROVIDER_CONFIG.into(), config.as_value().to_string());
            }
            None => {
                annotations.remove(ANNOTATION_PROVIDER_CONFIG);
            }
        }
        None
    };
    let mut v1 = ControllerDeployment::new(
        &name_of(&metadata),
        super::ControllerDeploymentFields { helm, inject_garden_kubeconfig: fields.inject_garden_kubeconfig },
    );
    v1.metadata = metadata;
    Ok(v1)
}

/// v1 → v1beta1.
pub fn to_v1beta1(v1: &ControllerDeployment) -> Result<V1beta1, ConversionError> {
    let mut metadata = v1.metadata.clone();
    let mut type_ = None;
    let mut provider_config = None;
    if let Some(annotations) = metadata.annotations.as_mut() {
        type_ = annotations.remove(ANNOTATION_TYPE);
        if let Some(raw) = annotations.remove(ANNOTATION_PROVIDER_CONFIG) {
            let value: Value = serde_json::from_str(&raw).map_err(|e| ConversionError::ProviderConfigAnnotation {
                name: name_of(&v1.metadata),
                message: e.to_string(),
            })?;
            provider_config = Some(Opaque(value));
        }
        if annotations.is_empty() {
            metadata.annotations = None;
        }
    }
    if let Some(helm) = &v1.spec.helm {
        let config = V1beta1Helm {
            chart: helm.raw_chart.clone(),
            values: helm.values.as_ref().map(|v| v.0.clone()),
            oci_repository: helm.oci_repository.clone(),
        };
        type_ = Some(super::TYPE_HELM.into());
        provider_config = Some(Opaque::from_serializable(&config).map_err(|e| {
            ConversionError::HelmProviderConfig { name: name_of(&v1.metadata), message: e.to_string() }
        })?);
    }
    let mut beta = V1beta1::new(
        &name_of(&metadata),
        V1beta1Fields {
            type_: type_.unwrap_or_default(),
            provider_config,
            inject_garden_kubeconfig: v1.spec.inject_garden_kubeconfig,
        },
    );
    beta.metadata = metadata;
    Ok(beta)
}

fn decode<T: serde::de::DeserializeOwned>(object: Value, api_version: &str) -> Result<T, ConversionError> {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    serde_json::from_value(object).map_err(|e| ConversionError::Decode {
        name,
        api_version: api_version.into(),
        message: e.to_string(),
    })
}

fn encode<T: Serialize>(object: &T) -> Result<Value, ConversionError> {
    serde_json::to_value(object).map_err(|e| ConversionError::Encode(e.to_string()))
}

/// Converts one object of a ConversionReview to `desired` (`group/version`). An object already
/// in that version comes back unchanged.
pub fn convert(object: Value, desired: &str) -> Result<Value, ConversionError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str).ok_or(ConversionError::NoType)?.to_string();
    let kind = object.get("kind").and_then(Value::as_str).ok_or(ConversionError::NoType)?;
    if kind != "ControllerDeployment" {
        return Err(ConversionError::UnsupportedKind { kind: kind.into() });
    }
    if api_version == desired {
        return Ok(object);
    }
    match (api_version.as_str(), desired) {
        (crate::core::API_VERSION, super::API_VERSION) => encode(&to_v1(&decode(object, &api_version)?)?),
        (super::API_VERSION, crate::core::API_VERSION) => encode(&to_v1beta1(&decode(object, &api_version)?)?),
        _ => Err(ConversionError::UnsupportedVersion { from: api_version, to: desired.into() }),
    }
}

#[cfg(test)]
mod tests;
