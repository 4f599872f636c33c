//! The rules of `spec.kubernetes.kubeAPIServer`: Gardener's validation of the settings
//! (`ValidateKubeAPIServer` and its admission plugin list), for the Kubernetes version the
//! shoot runs, plus refusals of what this system cannot honour (a plugin kubeconfig, the
//! legacy OIDC client settings, basic authentication, removing an encrypted resource).
//!
//! Pure: [`validate`] looks at the shoot alone, [`validate_update`] at the old one too.
//! Whether the referenced audit policy ConfigMap exists is checked by gardenlet during the
//! reconcile (admission has no ConfigMap lookup).

use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::core::shoot::kubernetes::{AdmissionPlugin, KubeApiServerConfig, OidcConfig, ServiceAccountConfig};
use api::helpers::encryption;
use std::collections::BTreeSet;

/// One known admission plugin (Gardener's `admissionPluginsVersionRanges`, with the plugins
/// older Kubernetes versions still had): in which minor versions of 1.x it exists and what
/// Gardener allows with it.
struct KnownPlugin {
    name: &'static str,
    /// First minor version that has it (`None`: every supported one).
    added: Option<u64>,
    /// First minor version that no longer has it.
    removed: Option<u64>,
    /// Gardener refuses to disable it.
    required: bool,
    /// It reads a configuration.
    configurable: bool,
    /// Gardener refuses to enable it.
    forbidden: bool,
}

const fn plugin(name: &'static str) -> KnownPlugin {
    KnownPlugin { name, added: None, removed: None, required: false, configurable: false, forbidden: false }
}

const fn since(p: KnownPlugin, minor: u64) -> KnownPlugin {
    KnownPlugin { added: Some(minor), ..p }
}

const fn until(p: KnownPlugin, minor: u64) -> KnownPlugin {
    KnownPlugin { removed: Some(minor), ..p }
}

const fn required(p: KnownPlugin) -> KnownPlugin {
    KnownPlugin { required: true, ..p }
}

const fn configurable(p: KnownPlugin) -> KnownPlugin {
    KnownPlugin { configurable: true, ..p }
}

const fn forbidden(p: KnownPlugin) -> KnownPlugin {
    KnownPlugin { forbidden: true, ..p }
}

/// The admission plugins Kubernetes knows, by version.
const PLUGINS: &[KnownPlugin] = &[
    plugin("AlwaysAdmit"),
    plugin("AlwaysDeny"),
    plugin("AlwaysPullImages"),
    since(plugin("CertificateApproval"), 18),
    since(plugin("CertificateSigning"), 18),
    since(plugin("CertificateSubjectRestriction"), 18),
    since(plugin("ClusterTrustBundleAttest"), 27),
    since(plugin("DefaultIngressClass"), 18),
    plugin("DefaultStorageClass"),
    plugin("DefaultTolerationSeconds"),
    since(plugin("DenyServiceExternalIPs"), 21),
    configurable(plugin("EventRateLimit")),
    plugin("ExtendedResourceToleration"),
    configurable(plugin("ImagePolicyWebhook")),
    plugin("LimitPodHardAntiAffinityTopology"),
    plugin("LimitRanger"),
    since(plugin("MutatingAdmissionPolicy"), 32),
    required(configurable(plugin("MutatingAdmissionWebhook"))),
    plugin("NamespaceAutoProvision"),
    plugin("NamespaceExists"),
    required(plugin("NamespaceLifecycle")),
    required(plugin("NodeRestriction")),
    plugin("OwnerReferencesPermissionEnforcement"),
    plugin("PersistentVolumeClaimResize"),
    until(plugin("PersistentVolumeLabel"), 31),
    configurable(plugin("PodNodeSelector")),
    until(plugin("PodPreset"), 20),
    required(configurable(since(plugin("PodSecurity"), 22))),
    until(plugin("PodSecurityPolicy"), 25),
    configurable(plugin("PodTolerationRestriction")),
    since(plugin("PodTopologyLabels"), 33),
    required(plugin("Priority")),
    configurable(plugin("ResourceQuota")),
    plugin("RuntimeClass"),
    forbidden(until(plugin("SecurityContextDeny"), 30)),
    plugin("ServiceAccount"),
    required(plugin("StorageObjectInUseProtection")),
    plugin("TaintNodesByCondition"),
    since(plugin("ValidatingAdmissionPolicy"), 26),
    required(configurable(plugin("ValidatingAdmissionWebhook"))),
];

/// The OIDC signing algorithms the API server accepts (Gardener's `availableOIDCSigningAlgs`).
pub const OIDC_SIGNING_ALGS: &[&str] =
    &["ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512"];

/// The longest `eventTTL` (Gardener: 7 days).
const MAX_EVENT_TTL_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// `maxTokenExpiration` bounds (Gardener: 30 to 90 days).
const MIN_TOKEN_EXPIRATION_SECONDS: f64 = 720.0 * 3600.0;
const MAX_TOKEN_EXPIRATION_SECONDS: f64 = 2160.0 * 3600.0;
/// Upper bounds of the in-flight limits (Gardener's).
const MAX_NON_MUTATING_INFLIGHT: i32 = 800;
const MAX_MUTATING_INFLIGHT: i32 = 400;

fn base() -> Path {
    Path::new("spec").child("kubernetes").child("kubeAPIServer")
}

/// The minor version of a `1.x[.y]` Kubernetes version.
fn minor_of(version: &str) -> Option<u64> {
    let mut parts = version.trim_start_matches('v').split('.');
    match (parts.next(), parts.next()) {
        (Some("1"), Some(minor)) => minor.parse().ok(),
        _ => None,
    }
}

/// A Go duration (`1h30m`, `90s`, `-5m`, `0`) in seconds, as [`super::components::parse_go_duration`]
/// parses it.
// Nanoseconds within Go's range: f64 keeps them to well under a microsecond.
#[allow(clippy::cast_precision_loss)]
fn duration_seconds(text: &str) -> Option<f64> {
    super::components::parse_go_duration(text).ok().map(|nanos| nanos as f64 / 1e9)
}

/// Every rule of `spec.kubernetes.kubeAPIServer` that needs only the shoot.
pub fn validate(shoot: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    let Some(k) = &shoot.spec.kubernetes.kube_api_server else {
        return errs;
    };
    let version = shoot.spec.kubernetes.version.as_str();
    // An unparsable version is reported by the version rules; judge as for 1.20, the one
    // version this system runs.
    let minor = minor_of(version).unwrap_or(20);
    let path = base();
    admission_plugins(&k.admission_plugins, version, minor, &path.child("admissionPlugins"), &mut errs);
    if let Some(oidc) = &k.oidc_config {
        validate_oidc(oidc, &path.child("oidcConfig"), &mut errs);
    }
    if let Some(sa) = &k.service_account_config {
        service_account(sa, minor, &path.child("serviceAccountConfig"), &mut errs);
    }
    audit(k, &path, &mut errs);
    if k.enable_basic_authentication == Some(true) {
        errs.push(FieldError::forbidden(
            path.child("enableBasicAuthentication"),
            "basic authentication was removed in Kubernetes 1.19 and Gardener forbids it",
        ));
    }
    limits(k, &path, &mut errs);
    encryption_resources(k, &path, &mut errs);
    errs
}

fn admission_plugins(plugins: &[AdmissionPlugin], version: &str, minor: u64, path: &Path, errs: &mut ErrorList) {
    for (i, p) in plugins.iter().enumerate() {
        let at = path.index(i);
        if p.name.is_empty() {
            errs.push(FieldError::required(at.child("name"), "must provide a name"));
            continue;
        }
        let Some(known) = PLUGINS.iter().find(|k| k.name == p.name) else {
            errs.push(FieldError::invalid(at.child("name"), &p.name, format!("unknown admission plugin {:?}", p.name)));
            continue;
        };
        if known.added.is_some_and(|a| minor < a) || known.removed.is_some_and(|r| minor >= r) {
            errs.push(FieldError::forbidden(
                at.child("name"),
                format!("admission plugin {:?} is not supported in Kubernetes version {version}", p.name),
            ));
            continue;
        }
        if p.config.is_some() && !known.configurable {
            errs.push(FieldError::forbidden(
                at.child("config"),
                format!("admission plugin {:?} does not allow configuration", p.name),
            ));
        }
        if let Some(serde_json::Value::String(text)) = p.config.as_ref().map(|c| &c.0) {
            let parsed: Result<serde_json::Value, _> = serde_yaml::from_str(text);
            if !parsed.is_ok_and(|v| v.is_object()) {
                errs.push(FieldError::invalid(at.child("config"), text, "must be an object (or a YAML string of one)"));
            }
        }
        if known.forbidden {
            errs.push(FieldError::forbidden(
                at.child("name"),
                format!("admission plugin {:?} is forbidden for Kubernetes version {version}", p.name),
            ));
        }
        if p.disabled == Some(true) && known.required {
            errs.push(FieldError::forbidden(at.clone(), format!("admission plugin {:?} cannot be disabled", p.name)));
        }
        if p.kubeconfig_secret_name.is_some() {
            errs.push(FieldError::forbidden(
                at.child("kubeconfigSecretName"),
                "a kubeconfig for an admission plugin (a Secret referenced in spec.resources) is not supported by this system",
            ));
        }
    }
}

fn non_empty_when_set(value: &Option<String>, path: Path, what: &str, errs: &mut ErrorList) {
    if value.as_deref() == Some("") {
        errs.push(FieldError::invalid(path, "", format!("{what} cannot be empty when key is provided")));
    }
}

/// Gardener's `ValidateOIDCIssuerURL`: an https URL with a host, without query, fragment or
/// user information.
fn issuer_url(url: &str, path: &Path, errs: &mut ErrorList) {
    let Some((scheme, rest)) = url.split_once("://") else {
        errs.push(FieldError::invalid(path.clone(), url, "must be a valid URL and have https scheme"));
        return;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        errs.push(FieldError::invalid(path.clone(), url, "must be a valid URL and have https scheme"));
    }
    if url.contains('#') {
        errs.push(FieldError::invalid(path.clone(), url, "must not contain a fragment"));
    }
    if authority.contains('@') {
        errs.push(FieldError::invalid(path.clone(), url, "must not contain a username or password"));
    }
    if url.contains('?') {
        errs.push(FieldError::invalid(path.clone(), url, "must not contain a query"));
    }
    if scheme != "https" {
        errs.push(FieldError::invalid(path.clone(), url, "must have https scheme"));
    }
}

/// Whether `pem` holds at least one parsable certificate and nothing unparsable.
fn is_certificate_bundle(pem: &str) -> bool {
    let mut certificates = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
        match block {
            Ok(p) if p.label == "CERTIFICATE" && p.parse_x509().is_ok() => certificates += 1,
            _ => return false,
        }
    }
    certificates > 0
}

fn validate_oidc(oidc: &OidcConfig, path: &Path, errs: &mut ErrorList) {
    let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
    non_empty_when_set(&oidc.client_id, path.child("clientID"), "clientID", errs);
    if !set(&oidc.client_id) && set(&oidc.issuer_url) {
        errs.push(FieldError::required(path.child("clientID"), "clientID must be set when issuerURL is provided"));
    }
    non_empty_when_set(&oidc.issuer_url, path.child("issuerURL"), "issuerURL", errs);
    match oidc.issuer_url.as_deref().filter(|u| !u.is_empty()) {
        Some(url) => issuer_url(url, &path.child("issuerURL"), errs),
        None if set(&oidc.client_id) => {
            errs.push(FieldError::required(path.child("issuerURL"), "issuerURL must be set when clientID is provided"))
        }
        None => {}
    }
    if let Some(ca) = &oidc.ca_bundle
        && !is_certificate_bundle(ca)
    {
        errs.push(FieldError::invalid(path.child("caBundle"), ca, "caBundle is not a valid PEM-encoded certificate"));
    }
    if oidc.client_authentication.is_some() {
        errs.push(FieldError::forbidden(
            path.child("clientAuthentication"),
            "not supported: Gardener used it only to generate kubeconfigs (deprecated, removed from Kubernetes 1.31 on) and the API server ignores it; this system generates no OIDC kubeconfigs",
        ));
    }
    non_empty_when_set(&oidc.groups_claim, path.child("groupsClaim"), "groupsClaim", errs);
    non_empty_when_set(&oidc.groups_prefix, path.child("groupsPrefix"), "groupsPrefix", errs);
    non_empty_when_set(&oidc.username_claim, path.child("usernameClaim"), "usernameClaim", errs);
    non_empty_when_set(&oidc.username_prefix, path.child("usernamePrefix"), "usernamePrefix", errs);
    for (i, alg) in oidc.signing_algs.as_ref().map(|a| a.to_vec()).unwrap_or_default().iter().enumerate() {
        if !OIDC_SIGNING_ALGS.contains(&alg.as_str()) {
            errs.push(FieldError::unsupported(path.child("signingAlgs").index(i), alg, OIDC_SIGNING_ALGS));
        }
    }
}

fn service_account(sa: &ServiceAccountConfig, minor: u64, path: &Path, errs: &mut ErrorList) {
    if let Some(max) = &sa.max_token_expiration {
        let at = path.child("maxTokenExpiration");
        match duration_seconds(max) {
            None => errs.push(FieldError::invalid(at, max, "must be a duration (for example 720h)")),
            Some(d) if d < 0.0 => errs.push(FieldError::invalid(at, max, "can not be negative")),
            Some(d) if d > 0.0 && d < MIN_TOKEN_EXPIRATION_SECONDS => {
                errs.push(FieldError::forbidden(at, "must be at least 720h (30d)"))
            }
            Some(d) if d > MAX_TOKEN_EXPIRATION_SECONDS => {
                errs.push(FieldError::forbidden(at, "must be at most 2160h (90d)"))
            }
            Some(_) => {}
        }
    }
    non_empty_when_set(&sa.issuer, path.child("issuer"), "issuer", errs);
    if sa.accepted_issuers.is_empty() {
        return;
    }
    if minor < 22 {
        errs.push(FieldError::forbidden(
            path.child("acceptedIssuers"),
            "needs Kubernetes 1.22 or later: kube-apiserver takes more than one --service-account-issuer only from 1.22 on",
        ));
        return;
    }
    let mut seen: BTreeSet<&str> = sa.issuer.as_deref().into_iter().collect();
    for (i, accepted) in sa.accepted_issuers.iter().enumerate() {
        let at = path.child("acceptedIssuers").index(i);
        if sa.issuer.as_deref() == Some(accepted.as_str()) {
            errs.push(FieldError::invalid(
                at,
                accepted,
                format!("acceptedIssuers cannot contains the issuer field value: {accepted}"),
            ));
        } else if !seen.insert(accepted) {
            errs.push(FieldError::duplicate(at, accepted));
        }
    }
}

fn audit(k: &KubeApiServerConfig, path: &Path, errs: &mut ErrorList) {
    let reference =
        k.audit_config.as_ref().and_then(|a| a.audit_policy.as_ref()).and_then(|p| p.config_map_ref.as_ref());
    if let Some(r) = reference
        && r.name.is_empty()
    {
        errs.push(FieldError::required(
            path.child("auditConfig").child("auditPolicy").child("configMapRef").child("name"),
            "must provide a name",
        ));
    }
}

fn non_negative(value: Option<i64>, path: Path, errs: &mut ErrorList) {
    if let Some(v) = value.filter(|v| *v < 0) {
        errs.push(FieldError::invalid(path, &v.to_string(), "must be greater than or equal to 0"));
    }
}

fn limits(k: &KubeApiServerConfig, path: &Path, errs: &mut ErrorList) {
    if let Some(sizes) = &k.watch_cache_sizes {
        let at = path.child("watchCacheSizes");
        non_negative(sizes.default.map(i64::from), at.child("default"), errs);
        for (i, r) in sizes.resources.iter().enumerate() {
            let at = at.child("resources").index(i);
            if r.resource.is_empty() {
                errs.push(FieldError::required(at.child("resource"), "must not be empty"));
            }
            non_negative(Some(i64::from(r.size)), at.child("size"), errs);
        }
    }
    if let Some(logging) = &k.logging {
        let at = path.child("logging");
        non_negative(logging.verbosity.map(i64::from), at.child("verbosity"), errs);
        non_negative(logging.http_access_verbosity.map(i64::from), at.child("httpAccessVerbosity"), errs);
    }
    non_negative(k.default_not_ready_toleration_seconds, path.child("defaultNotReadyTolerationSeconds"), errs);
    non_negative(k.default_unreachable_toleration_seconds, path.child("defaultUnreachableTolerationSeconds"), errs);
    if let Some(requests) = &k.requests {
        let at = path.child("requests");
        let bounded = [
            (requests.max_non_mutating_inflight, "maxNonMutatingInflight", MAX_NON_MUTATING_INFLIGHT),
            (requests.max_mutating_inflight, "maxMutatingInflight", MAX_MUTATING_INFLIGHT),
        ];
        for (value, name, max) in bounded {
            non_negative(value.map(i64::from), at.child(name), errs);
            if let Some(v) = value.filter(|v| *v > max) {
                errs.push(FieldError::invalid(at.child(name), &v.to_string(), format!("cannot set higher than {max}")));
            }
        }
    }
    if let Some(ttl) = &k.event_ttl {
        let at = path.child("eventTTL");
        match duration_seconds(ttl) {
            None => errs.push(FieldError::invalid(at, ttl, "must be a duration (for example 1h)")),
            Some(d) if d < 0.0 => errs.push(FieldError::invalid(at, ttl, "can not be negative")),
            Some(d) if d > MAX_EVENT_TTL_SECONDS => {
                errs.push(FieldError::invalid(at, ttl, "can not be longer than 7d"))
            }
            Some(_) => {}
        }
    }
}

/// The encrypted resources of a config, normalised (`configmaps.` is `configmaps`).
fn encrypted(k: Option<&KubeApiServerConfig>) -> BTreeSet<String> {
    k.and_then(|k| k.encryption_config.as_ref())
        .map(|e| e.resources.iter().map(|r| r.trim_end_matches('.').to_string()).collect())
        .unwrap_or_default()
}

fn encryption_resources(k: &KubeApiServerConfig, path: &Path, errs: &mut ErrorList) {
    let Some(config) = &k.encryption_config else {
        return;
    };
    if let Some(t) = config.provider.as_ref().and_then(|p| p.type_.as_deref())
        && !encryption::PROVIDERS.contains(&t)
    {
        let at = path.child("encryptionConfig").child("provider").child("type");
        errs.push(FieldError::unsupported(at, t, &encryption::PROVIDERS));
    }
    let mut seen = BTreeSet::new();
    for (i, resource) in config.resources.iter().enumerate() {
        let at = path.child("encryptionConfig").child("resources").index(i);
        let normalised = resource.trim_end_matches('.');
        if normalised.is_empty() {
            errs.push(FieldError::required(at, "must name a resource"));
            continue;
        }
        if !seen.insert(normalised) {
            errs.push(FieldError::duplicate(at.clone(), resource));
        }
        if normalised == "secrets" {
            errs.push(FieldError::forbidden(at.clone(), format!("{resource:?} are always encrypted")));
        }
        if resource.starts_with('*') {
            errs.push(FieldError::invalid(at, resource, "wildcards are not supported"));
        }
    }
}

/// The rules of a change: a resource may be added to `encryptionConfig.resources`, not
/// removed, as this system does not rewrite the stored objects of a removed resource in plain
/// text (Gardener does): they would become unreadable. The provider changes as Gardener allows
/// it ([`provider_change`]).
pub fn validate_update(new: &Shoot, old: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    let (now, before) = (
        encrypted(new.spec.kubernetes.kube_api_server.as_ref()),
        encrypted(old.spec.kubernetes.kube_api_server.as_ref()),
    );
    provider_change(new, old, now != before, &mut errs);
    for removed in before.difference(&now) {
        errs.push(FieldError::forbidden(
            base().child("encryptionConfig").child("resources"),
            format!(
                "{removed:?} cannot be removed: its objects are stored encrypted and this system does not rewrite them decrypted"
            ),
        ));
    }
    errs
}

/// A change of `encryptionConfig.provider.type` begins an etcd encryption key rotation (both
/// phases), so it is refused, as Gardener refuses it, where that rotation could not run: before
/// the shoot was created, while hibernated, while an etcd encryption key rotation or an earlier
/// provider change is under way, and together with a change of the resources.
fn provider_change(new: &Shoot, old: &Shoot, resources_changed: bool, errs: &mut ErrorList) {
    use api::helpers::rotation::{self, Credential, Lifecycle, Request, Step};
    if encryption::wanted(new) == encryption::wanted(old) {
        return;
    }
    let at = base().child("encryptionConfig").child("provider").child("type");
    let mut refuse = |why: &str| errs.push(FieldError::forbidden(at.clone(), why.to_string()));
    // The rotation's own rules, as gardenlet applies them when it begins the rotation.
    let rotation = Request { steps: vec![(Credential::EtcdEncryptionKey, Step::StartAndComplete)], ssh_keypair: false };
    for why in rotation::allowed(&rotation, rotation::status(new), Lifecycle::of(new)) {
        refuse(&format!("changing the provider rotates the etcd encryption key, and {why}"));
    }
    if encryption::changing(old) {
        refuse("the provider cannot be changed while an earlier change of it is being rolled out");
    }
    if resources_changed {
        refuse("the provider and the resources cannot be changed at the same time");
    }
}

#[cfg(test)]
mod tests;
