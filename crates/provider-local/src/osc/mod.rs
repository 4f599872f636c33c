//! OperatingSystemConfig: renders the spec into a provisioning script (see [`render`]). The SDK
//! stores the script in the Secret `cloud-config-<name>` and references it from the status.
//!
//! For the `reconcile` purpose the extension adds one unit and one file on top of the spec: the
//! script itself at `/var/lib/provider-local/osc/<name>.sh` (taken from the cloud-config
//! Secret) and `provider-local-osc-<name>.service`, a oneshot unit that runs it whenever it
//! changes. The `provision` purpose is the bootstrap user data and adds nothing.
//!
//! With a registry mirror (`--registry-mirror`, [`crate::registry`]) both purposes also write
//! containerd's `hosts.toml` for the mirrored registries and the mirror's CA.

pub mod render;
#[cfg(test)]
mod tests;

use crate::common::describe;
use crate::error::Error;
use crate::registry::RegistryMirror;
use extension_sdk::api::extensions::OperatingSystemConfig;
use extension_sdk::api::extensions::operatingsystemconfig::{
    File, FileContent, FileContentSecretRef, OperatingSystemConfigPurpose, Unit, UnitCommand,
};
use extension_sdk::k8s_openapi::api::core::v1::Secret;
use extension_sdk::kinds::{CLOUD_CONFIG_DATA_KEY, cloud_config_secret_name};
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, OscOutput, Outcome};
use render::{RenderError, SecretData};
use std::collections::BTreeSet;

/// Where the `reconcile` script lives on a machine.
pub fn script_path(osc_name: &str) -> String {
    format!("/var/lib/provider-local/osc/{osc_name}.sh")
}

/// The unit that applies the `reconcile` script.
pub fn apply_unit_name(osc_name: &str) -> String {
    format!("provider-local-osc-{osc_name}.service")
}

/// The whole output for an OperatingSystemConfig, given the Secret contents it references. With
/// a registry mirror, the script also writes the mirror's files (containerd's `hosts.toml`s and
/// the CA) among the spec's, so before any unit starts; a path the spec writes itself is left
/// to the spec.
pub fn output(
    osc: &OperatingSystemConfig,
    secrets: &SecretData,
    mirror: Option<&RegistryMirror>,
) -> Result<OscOutput, RenderError> {
    let name = osc.name_any();
    let mut spec = osc.spec.clone();
    if let Some(mirror) = mirror {
        let own: BTreeSet<String> = spec.files.iter().map(|f| f.path.clone()).collect();
        spec.files.extend(mirror.files().into_iter().filter(|f| !own.contains(&f.path)));
    }
    let rendered = render::render(&osc.namespace().unwrap_or_default(), &name, &spec, secrets)?;
    let path = osc.spec.reload_config_file_path.clone().unwrap_or_else(|| script_path(&name));
    let mut out = OscOutput {
        user_data: rendered.script,
        command: Some(format!("/bin/bash {}", render::quote(&path))),
        units: rendered.units,
        ..Default::default()
    };
    if osc.spec.purpose == OperatingSystemConfigPurpose::Reconcile {
        let unit = apply_unit_name(&name);
        out.extension_files = vec![File {
            path: path.clone(),
            permissions: Some(0o700),
            content: FileContent {
                secret_ref: Some(FileContentSecretRef {
                    name: cloud_config_secret_name(&name),
                    data_key: CLOUD_CONFIG_DATA_KEY.into(),
                }),
                ..Default::default()
            },
        }];
        out.extension_units = vec![Unit {
            name: unit.clone(),
            command: Some(UnitCommand::Start),
            enable: Some(true),
            content: Some(format!(
                "[Unit]\nDescription=Apply the operating system configuration {name}\n\n[Service]\nType=oneshot\nExecStart=/bin/bash {path}\n\n[Install]\nWantedBy=multi-user.target\n"
            )),
            drop_ins: Vec::new(),
            file_paths: vec![path],
        }];
        out.units.push(unit);
        out.units.sort();
    }
    Ok(out)
}

/// The OperatingSystemConfig actuator.
#[derive(Clone)]
pub struct LocalOperatingSystemConfig {
    client: Client,
    mirror: Option<RegistryMirror>,
}

crate::debug_without_client!(LocalOperatingSystemConfig);

impl LocalOperatingSystemConfig {
    pub fn new(client: Client, mirror: Option<RegistryMirror>) -> Self {
        Self { client, mirror }
    }

    /// Reads every Secret key the spec references (missing ones are left out; the renderer
    /// names them).
    async fn secrets(&self, osc: &OperatingSystemConfig) -> Result<SecretData, Error> {
        let namespace = osc.namespace().unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &namespace);
        let names: BTreeSet<&str> =
            osc.spec.files.iter().filter_map(|f| f.content.secret_ref.as_ref()).map(|r| r.name.as_str()).collect();
        let mut data = SecretData::new();
        for name in names {
            let secret = api.get_opt(name).await.map_err(Error::kube(format!("reading Secret {namespace}/{name}")))?;
            let entries = secret.iter().flat_map(|s| s.data.iter().flatten());
            for (key, value) in entries {
                data.insert((name.to_string(), key.clone()), value.0.clone());
            }
        }
        Ok(data)
    }
}

fn to_error(osc: &OperatingSystemConfig, e: RenderError) -> Error {
    match e {
        RenderError::Invalid { field, message } => Error::config(describe(osc), field, message),
        e @ RenderError::MissingSecret { .. } => Error::dependency(describe(osc), e.to_string()),
    }
}

impl Actuator<OperatingSystemConfig> for LocalOperatingSystemConfig {
    #[tracing::instrument(skip_all, fields(osc = %describe(osc)))]
    async fn reconcile(
        &self,
        osc: &OperatingSystemConfig,
        _: &ClusterContext,
    ) -> Result<Outcome<OperatingSystemConfig>, ActuatorError> {
        let secrets = self.secrets(osc).await?;
        let out = output(osc, &secrets, self.mirror.as_ref()).map_err(|e| to_error(osc, e))?;
        tracing::debug!(bytes = out.user_data.len(), "rendered the provisioning script");
        Ok(Outcome::done().with_output(out))
    }

    async fn delete(&self, _: &OperatingSystemConfig, _: &ClusterContext) -> Result<(), ActuatorError> {
        // The only thing created is the cloud-config Secret, which the SDK removes.
        Ok(())
    }
}
