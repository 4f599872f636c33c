//! `DNSRecord`: one DNS record (for example the shoot's API server name) that a DNS provider
//! extension maintains.

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
use k8s_openapi::NamespaceResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The type of a DNS record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DnsRecordType {
    #[default]
    A,
    #[serde(rename = "AAAA")]
    Aaaa,
    #[serde(rename = "CNAME")]
    Cname,
    #[serde(rename = "TXT")]
    Txt,
}

/// Desired state of a DNS record.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "DNSRecord",
    plural = "dnsrecords",
    namespaced,
    status = "DNSRecordStatus",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The DNS provider type"),
    printcolumn(name = "Domain Name", type_ = "string", json_path = ".spec.name"),
    printcolumn(name = "Record Type", type_ = "string", json_path = ".spec.recordType"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct DNSRecordSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// Credentials for the DNS provider.
    pub secret_ref: SecretReference,
    pub region: Option<String>,
    /// The hosted zone; determined from `name` when absent.
    pub zone: Option<String>,
    /// The fully qualified domain name.
    pub name: String,
    pub record_type: DnsRecordType,
    /// The record's values (addresses, a target name, or texts).
    pub values: Vec<String>,
    /// Time to live in seconds.
    pub ttl: Option<i64>,
}

/// Observed state of a DNSRecord.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DNSRecordStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
    /// The hosted zone the record was written to.
    pub zone: Option<String>,
}

crate::impl_extension_kind!(DNSRecord, DNSRecordStatus, NamespaceResourceScope);
