//! Reads of the garden's objects over one kept connection, for the waits that poll.
//!
//! A `kubectl get` per poll costs about 0.13 s of CPU (a Go process starting, a TLS handshake
//! with the API server). Measured during `make e2e` (process accounting, 2026-11-28), the cases
//! polling side by side spent about 0.3 of the two cores on kubectl alone. A kube client keeps
//! its connection, so a poll is one request.
//!
//! Fields are named with kubectl's JSONPath templates (`{.status.lastOperation.state}`), and come
//! back as `kubectl get -o jsonpath=...` prints them.

use jsonpath_rust::JsonPath;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

/// A kind of object the cases poll.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

pub const SHOOT: Kind =
    Kind { group: "core.gardener.cloud", version: "v1beta1", kind: "Shoot", plural: "shoots", namespaced: true };
pub const SEED: Kind =
    Kind { group: "core.gardener.cloud", version: "v1beta1", kind: "Seed", plural: "seeds", namespaced: false };
pub const MANAGED_SEED: Kind = Kind {
    group: "seedmanagement.gardener.cloud",
    version: "v1alpha1",
    kind: "ManagedSeed",
    plural: "managedseeds",
    namespaced: true,
};
pub const NAMESPACE: Kind =
    Kind { group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false };
pub const POD: Kind = Kind { group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true };
pub const WORKER: Kind = Kind {
    group: "extensions.gardener.cloud",
    version: "v1alpha1",
    kind: "Worker",
    plural: "workers",
    namespaced: true,
};
pub const LEASE: Kind =
    Kind { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true };

/// The local garden's API server, through one client.
#[derive(Clone)]
pub struct Garden {
    client: Client,
}

impl std::fmt::Debug for Garden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Garden")
    }
}

impl Garden {
    /// A client from the local cluster's kubeconfig.
    pub async fn connect() -> Self {
        Self { client: crate::client().await }
    }

    fn api(&self, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: kind.group.into(),
            version: kind.version.into(),
            api_version: if kind.group.is_empty() {
                kind.version.into()
            } else {
                format!("{}/{}", kind.group, kind.version)
            },
            kind: kind.kind.into(),
            plural: kind.plural.into(),
        };
        match namespace {
            Some(ns) if kind.namespaced => Api::namespaced_with(self.client.clone(), ns, &resource),
            _ => Api::all_with(self.client.clone(), &resource),
        }
    }

    /// The object as JSON, `None` when it does not exist.
    pub async fn get(&self, kind: &Kind, namespace: Option<&str>, name: &str) -> Result<Option<Value>, String> {
        let object =
            self.api(kind, namespace).get_opt(name).await.map_err(|e| format!("reading {} {name}: {e}", kind.kind))?;
        object.map(|o| serde_json::to_value(o).map_err(|e| e.to_string())).transpose()
    }

    /// The objects of a kind (in `namespace`), as JSON.
    pub async fn list(&self, kind: &Kind, namespace: Option<&str>) -> Result<Vec<Value>, String> {
        let list = self
            .api(kind, namespace)
            .list(&Default::default())
            .await
            .map_err(|e| format!("listing {}: {e}", kind.plural))?;
        list.items.into_iter().map(|o| serde_json::to_value(o).map_err(|e| e.to_string())).collect()
    }

    /// `kubectl get <kind> <name> -o jsonpath=<template>`; a missing object is an error that
    /// says NotFound.
    pub async fn field(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
        template: &str,
    ) -> Result<String, String> {
        match self.get(kind, namespace, name).await? {
            Some(object) => render(&object, template),
            None => Err(format!("{} {name}: NotFound", kind.kind)),
        }
    }

    /// `Some(())` once the object is gone.
    pub async fn gone(&self, kind: &Kind, namespace: Option<&str>, name: &str) -> Result<Option<()>, String> {
        Ok(self.get(kind, namespace, name).await?.is_none().then_some(()))
    }
}

/// [`Garden`] for the cases that do not run on an async runtime: each read blocks on a runtime
/// of its own.
#[derive(Debug)]
pub struct BlockingGarden {
    runtime: tokio::runtime::Runtime,
    garden: Garden,
}

impl BlockingGarden {
    pub fn connect() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let garden = runtime.block_on(Garden::connect());
        Self { runtime, garden }
    }

    pub fn field(&self, kind: &Kind, namespace: Option<&str>, name: &str, template: &str) -> Result<String, String> {
        self.runtime.block_on(self.garden.field(kind, namespace, name, template))
    }

    pub fn gone(&self, kind: &Kind, namespace: Option<&str>, name: &str) -> Result<Option<()>, String> {
        self.runtime.block_on(self.garden.gone(kind, namespace, name))
    }
}

/// A kubectl JSONPath template applied to `value`, printed as kubectl prints it: the text
/// between the expressions as it is; for each expression its matches separated by spaces,
/// strings bare and everything else as JSON; nothing for a missing field.
pub fn render(value: &Value, template: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(|| format!("unclosed {{ in {template}"))? + open;
        let expression = &rest[open + 1..close];
        let path = rfc_path(expression.trim());
        let matches = value.query(&path).map_err(|e| format!("JSONPath {expression}: {e}"))?;
        let printed: Vec<String> = matches
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        out.push_str(&printed.join(" "));
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// kubectl's JSONPath expression (`.a.b[*]`, `.metadata.annotations.x\\.io/y`) as an RFC 9535
/// query: member names that are not plain identifiers (escaped dots, slashes) in brackets.
fn rfc_path(expression: &str) -> String {
    let mut out = String::from("$");
    let mut chars = expression.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    match n {
                        '.' | '[' => break,
                        '\\' => {
                            chars.next();
                            if let Some(escaped) = chars.next() {
                                name.push(escaped);
                            }
                        }
                        _ => {
                            name.push(n);
                            chars.next();
                        }
                    }
                }
                if !name.is_empty() && name.chars().all(|x| x.is_ascii_alphanumeric() || x == '_') {
                    out.push('.');
                    out.push_str(&name);
                } else {
                    out.push_str(&format!("['{}']", name.replace('\'', "\\'")));
                }
            }
            '[' => {
                // A selector, copied as it is up to its closing bracket (quotes respected).
                out.push('[');
                let (mut depth, mut quote) = (1, None);
                for n in chars.by_ref() {
                    out.push(n);
                    match (quote, n) {
                        (Some(q), _) if n == q => quote = None,
                        (Some(_), _) => {}
                        (None, '"' | '\'') => quote = Some(n),
                        (None, '[') => depth += 1,
                        (None, ']') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn templates_print_as_kubectl_does() {
        let shoot = serde_json::json!({"status": {
            "hibernated": false,
            "lastOperation": {"type": "Create", "state": "Succeeded"},
            "conditions": [{"type": "APIServerAvailable", "status": "True"}, {"type": "EveryNodeReady", "status": "False"}],
            "advertisedAddresses": [{"name": "external", "url": "https://a"}, {"name": "service", "url": "https://b"}],
            "lastErrors": [{"codes": ["ERR_INFRA"]}],
        }});
        let r = |t: &str| render(&shoot, t).unwrap();
        assert_eq!(r("{.status.lastOperation.type}/{.status.lastOperation.state}"), "Create/Succeeded");
        assert_eq!(r("{.status.hibernated}"), "false");
        assert_eq!(r("{.status.conditions[?(@.type==\"EveryNodeReady\")].status}"), "False");
        assert_eq!(r("{.status.advertisedAddresses[?(@.name==\"service\")].url}"), "https://b");
        assert_eq!(r("{.status.lastErrors[*].codes}"), "[\"ERR_INFRA\"]");
        assert_eq!(r("{.status.conditions[*].status}"), "True False");
        assert_eq!(r("seed {.status.seedName} done"), "seed  done");
        let annotated = serde_json::json!({"metadata": {"annotations": {"gardener.cloud/operation": "rotate"}}});
        assert_eq!(render(&annotated, "{.metadata.annotations.gardener\\.cloud/operation}").unwrap(), "rotate");
        assert!(render(&shoot, "{.status").is_err());
    }
}
