//! What the SDK knows about each extension kind beyond the common spec and status: how to reach
//! its objects, where its `Cluster` is, how long a reconcile may take, whether it takes part in
//! migration, and what kind-specific result an actuator hands back (only OperatingSystemConfig
//! has one: its rendered user data, which the SDK stores in a Secret).

use api::common::SecretReference;
use api::extensions::ExtensionKind;
use api::extensions::operatingsystemconfig::{CloudConfig, File, OperatingSystemConfigStatus, Unit};
use api::extensions::{
    BackupBucket, BackupEntry, Bastion, ContainerRuntime, ControlPlane, DNSRecord, Extension, Infrastructure, Network,
    OperatingSystemConfig, Worker,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

/// Reconcile timeout of kinds whose provider work is long-running (real cloud resources).
pub const LONG_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Reconcile timeout of every other kind.
pub const SHORT_TIMEOUT: Duration = Duration::from_secs(3 * 60);

/// An extension kind the SDK can drive. Implemented for every kind of
/// `extensions.gardener.cloud`.
pub trait ExtensionResource: ExtensionKind {
    /// The kind-specific result of a successful reconcile or restore, written into the status
    /// by the SDK. `()` for every kind but OperatingSystemConfig.
    type Output: Debug + Send + 'static;

    /// Whether the kind takes part in migration (`migrate`, `restore`). BackupBucket does not:
    /// its operation annotations other than `wait-for-state` are treated as `reconcile`.
    const MIGRATABLE: bool = true;

    /// How long one actuator call may take before it counts as failed.
    fn default_timeout() -> Duration {
        SHORT_TIMEOUT
    }

    /// An API handle for objects of this kind in `namespace` (ignored for cluster-scoped kinds).
    fn api(client: Client, namespace: Option<&str>) -> Api<Self>;

    /// The name of the `Cluster` that carries this object's shoot context, if it has one.
    fn cluster_name(&self) -> Option<String> {
        self.namespace()
    }

    /// Writes the actuator's kind-specific result into the status (and, for
    /// OperatingSystemConfig, into a Secret).
    fn apply_output(
        client: &Client,
        obj: &Self,
        output: Self::Output,
        status: &mut Self::Status,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;

    /// Removes what the SDK itself created for the object (after a successful delete or migrate).
    fn cleanup(_client: &Client, _obj: &Self) -> impl Future<Output = Result<(), kube::Error>> + Send {
        async { Ok(()) }
    }
}

macro_rules! namespaced_kind {
    ($kind:ty, $timeout:expr) => {
        impl ExtensionResource for $kind {
            type Output = ();

            fn default_timeout() -> Duration {
                $timeout
            }

            fn api(client: Client, namespace: Option<&str>) -> Api<Self> {
                match namespace {
                    Some(ns) => Api::namespaced(client, ns),
                    None => Api::all(client),
                }
            }

            async fn apply_output(_: &Client, _: &Self, _: (), _: &mut Self::Status) -> Result<(), kube::Error> {
                Ok(())
            }
        }
    };
}

namespaced_kind!(Infrastructure, LONG_TIMEOUT);
namespaced_kind!(Worker, LONG_TIMEOUT);
namespaced_kind!(Bastion, LONG_TIMEOUT);
namespaced_kind!(ControlPlane, SHORT_TIMEOUT);
namespaced_kind!(Network, SHORT_TIMEOUT);
namespaced_kind!(DNSRecord, SHORT_TIMEOUT);
namespaced_kind!(ContainerRuntime, SHORT_TIMEOUT);
namespaced_kind!(Extension, SHORT_TIMEOUT);

impl ExtensionResource for BackupBucket {
    type Output = ();
    const MIGRATABLE: bool = false;

    fn api(client: Client, _: Option<&str>) -> Api<Self> {
        Api::all(client)
    }

    /// A BackupBucket belongs to a seed, not to a shoot: it has no Cluster.
    fn cluster_name(&self) -> Option<String> {
        None
    }

    async fn apply_output(_: &Client, _: &Self, _: (), _: &mut Self::Status) -> Result<(), kube::Error> {
        Ok(())
    }
}

impl ExtensionResource for BackupEntry {
    type Output = ();

    fn api(client: Client, _: Option<&str>) -> Api<Self> {
        Api::all(client)
    }

    /// A BackupEntry is named `<technical-id>--<shoot-uid>`; its Cluster is the technical ID.
    fn cluster_name(&self) -> Option<String> {
        backup_entry_technical_id(&self.name_any()).map(str::to_string)
    }

    async fn apply_output(_: &Client, _: &Self, _: (), _: &mut Self::Status) -> Result<(), kube::Error> {
        Ok(())
    }
}

/// The technical ID in a BackupEntry name `<technical-id>--<shoot-uid>` (split at the last `--`).
pub fn backup_entry_technical_id(name: &str) -> Option<&str> {
    name.rsplit_once("--").map(|(id, _)| id).filter(|id| !id.is_empty())
}

/// What an OperatingSystemConfig actuator renders.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OscOutput {
    /// The user data (cloud-config, ignition, a shell script, ...), stored by the SDK in the
    /// Secret `cloud-config-<name>` under the key `cloud_config`.
    pub user_data: Vec<u8>,
    /// The command that (re)applies the configuration on a machine.
    pub command: Option<String>,
    /// Names of the units the configuration manages.
    pub units: Vec<String>,
    /// Units the extension adds on top of the spec.
    pub extension_units: Vec<Unit>,
    /// Files the extension adds on top of the spec.
    pub extension_files: Vec<File>,
}

/// Key of the user data in the cloud-config Secret.
pub const CLOUD_CONFIG_DATA_KEY: &str = "cloud_config";

/// Name of the Secret holding an OperatingSystemConfig's user data.
pub fn cloud_config_secret_name(osc_name: &str) -> String {
    format!("cloud-config-{osc_name}")
}

const FIELD_MANAGER_OSC: &str = "extension-sdk/operatingsystemconfig";

impl ExtensionResource for OperatingSystemConfig {
    type Output = OscOutput;

    fn api(client: Client, namespace: Option<&str>) -> Api<Self> {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }

    async fn apply_output(
        client: &Client,
        obj: &Self,
        output: OscOutput,
        status: &mut OperatingSystemConfigStatus,
    ) -> Result<(), kube::Error> {
        let namespace = obj.namespace().unwrap_or_default();
        let name = cloud_config_secret_name(&obj.name_any());
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                owner_references: obj.controller_owner_ref(&()).map(|r| vec![r]),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(CLOUD_CONFIG_DATA_KEY.to_string(), ByteString(output.user_data))])),
            type_: Some("Opaque".into()),
            ..Default::default()
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        secrets.patch(&name, &PatchParams::apply(FIELD_MANAGER_OSC).force(), &Patch::Apply(&secret)).await?;
        status.cloud_config = Some(CloudConfig { secret_ref: SecretReference { name, namespace: Some(namespace) } });
        status.command = output.command;
        status.units = output.units;
        status.extension_units = output.extension_units;
        status.extension_files = output.extension_files;
        Ok(())
    }

    async fn cleanup(client: &Client, obj: &Self) -> Result<(), kube::Error> {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &obj.namespace().unwrap_or_default());
        match secrets.delete(&cloud_config_secret_name(&obj.name_any()), &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The object's kind, for labels and messages.
pub fn kind_name<K: Resource<DynamicType = ()>>() -> String {
    K::kind(&()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_follow_the_contract() {
        assert_eq!(Infrastructure::default_timeout(), Duration::from_secs(1200));
        assert_eq!(Worker::default_timeout(), Duration::from_secs(1200));
        assert_eq!(Bastion::default_timeout(), Duration::from_secs(1200));
        for t in [
            ControlPlane::default_timeout(),
            Network::default_timeout(),
            DNSRecord::default_timeout(),
            OperatingSystemConfig::default_timeout(),
            BackupBucket::default_timeout(),
            BackupEntry::default_timeout(),
            ContainerRuntime::default_timeout(),
            Extension::default_timeout(),
        ] {
            assert_eq!(t, Duration::from_secs(180));
        }
    }

    #[test]
    fn backup_entry_names_carry_the_technical_id() {
        assert_eq!(backup_entry_technical_id("shoot--dev--demo--1234-abcd"), Some("shoot--dev--demo"));
        assert_eq!(backup_entry_technical_id("plain"), None);
        assert_eq!(backup_entry_technical_id("--uid"), None);
    }

    #[test]
    fn only_backup_bucket_opts_out_of_migration() {
        const { assert!(!BackupBucket::MIGRATABLE) };
        const { assert!(Infrastructure::MIGRATABLE && BackupEntry::MIGRATABLE) };
    }
}
