//! The registry mirror of the machines (`--registry-mirror`, `--registry-ca-file`): the local
//! cluster's image registry holds every image of the local setup under a path that starts with
//! the image's own registry host (`10.250.0.1:5000/gardener-rs.local/gardenlet:v0.1.0`). With a
//! mirror set, the OperatingSystemConfig's provisioning script also writes, before the kubelet
//! starts, a containerd `hosts.toml` for each of [`MIRRORED_HOSTS`] that sends its pulls there
//! over TLS (verified with the given CA, no fallback to the real registry), and the CA. Other
//! registries keep resolving to the machine image's closed `_default`. Without a mirror nothing
//! changes.

use extension_sdk::api::extensions::operatingsystemconfig::{File, FileContent, FileContentInline};

/// The registry hosts whose images the local registry holds (what `hack/images.sh` builds).
pub const MIRRORED_HOSTS: [&str; 2] = ["gardener-rs.local", "registry.k8s.io"];
/// Where the machine keeps the registry's CA.
pub const CA_PATH: &str = "/etc/provider-local/registry-ca.crt";
/// containerd's registry configuration directory in the machine image (`config_path`).
pub const CERTS_DIR: &str = "/etc/containerd/certs.d";

/// A validated mirror: `https://<host>[:<port>]` and the PEM CA its certificate is issued by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryMirror {
    url: String,
    ca: String,
}

impl RegistryMirror {
    /// Checks the URL (HTTPS, a host, no path, query or credentials) and that the CA is PEM.
    pub fn new(url: &str, ca: &str) -> Result<Self, String> {
        let url = url.trim_end_matches('/');
        let Some(authority) = url.strip_prefix("https://") else {
            return Err(format!("registry mirror {url:?}: must be https://<host>[:<port>] (the machines verify it)"));
        };
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) || authority.contains(char::is_whitespace) {
            return Err(format!("registry mirror {url:?}: must be https://<host>[:<port>], without a path"));
        }
        if !ca.contains("-----BEGIN CERTIFICATE-----") {
            return Err("registry CA: not a PEM certificate".into());
        }
        Ok(Self { url: url.to_string(), ca: ca.to_string() })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn ca(&self) -> &str {
        &self.ca
    }

    /// containerd's `hosts.toml` for `host`: the only endpoint is the mirror, under `/v2/<host>`
    /// (`override_path`: the path is taken as is), for pulls and resolves, verified with the CA.
    /// It is both a `[host]` (containerd 1.6.20 ignores a file without one) and the `server`
    /// (else the real registry would be the last resort); a missing image is then `not found`.
    pub fn hosts_toml(&self, host: &str) -> String {
        let endpoint = format!("{}/v2/{host}", self.url);
        let settings = format!("capabilities = [\"pull\", \"resolve\"]\nca = \"{CA_PATH}\"\noverride_path = true\n");
        let indented: String = settings.lines().map(|l| format!("  {l}\n")).collect();
        format!(
            "# Written by provider-local: {host} images come from the local registry (--registry-mirror).\n\
             server = \"{endpoint}\"\n{settings}\n[host.\"{endpoint}\"]\n{indented}"
        )
    }

    /// The files a machine gets: the CA and one `hosts.toml` per mirrored host.
    pub fn files(&self) -> Vec<File> {
        let file = |path: String, data: String| File {
            path,
            permissions: Some(0o644),
            content: FileContent {
                inline: Some(FileContentInline { encoding: String::new(), data }),
                ..Default::default()
            },
        };
        let mut files = vec![file(CA_PATH.into(), self.ca.clone())];
        files.extend(MIRRORED_HOSTS.iter().map(|h| file(format!("{CERTS_DIR}/{h}/hosts.toml"), self.hosts_toml(h))));
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn mirrors_must_be_https_hosts_with_a_pem_ca() {
        let m = RegistryMirror::new("https://10.250.0.1:5000/", CA).unwrap();
        assert_eq!(m.url(), "https://10.250.0.1:5000");
        for (url, ca, want) in [
            ("http://10.250.0.1:5000", CA, "https://"),
            ("10.250.0.1:5000", CA, "https://"),
            ("https://", CA, "https://"),
            ("https://r:5000/v2", CA, "without a path"),
            ("https://u:p@r:5000", CA, "without a path"),
            ("https://r:5000", "not pem", "PEM"),
        ] {
            let e = RegistryMirror::new(url, ca).unwrap_err();
            assert!(e.contains(want), "{url} {ca}: {e}");
        }
    }

    #[test]
    fn hosts_toml_sends_every_pull_to_the_mirror_path_of_the_host() {
        let m = RegistryMirror::new("https://10.250.0.1:5000", CA).unwrap();
        assert_eq!(
            m.hosts_toml("gardener-rs.local"),
            "# Written by provider-local: gardener-rs.local images come from the local registry (--registry-mirror).\n\
             server = \"https://10.250.0.1:5000/v2/gardener-rs.local\"\n\
             capabilities = [\"pull\", \"resolve\"]\n\
             ca = \"/etc/provider-local/registry-ca.crt\"\n\
             override_path = true\n\
             \n\
             [host.\"https://10.250.0.1:5000/v2/gardener-rs.local\"]\n  \
             capabilities = [\"pull\", \"resolve\"]\n  \
             ca = \"/etc/provider-local/registry-ca.crt\"\n  \
             override_path = true\n"
        );
        let files = m.files();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/etc/provider-local/registry-ca.crt",
                "/etc/containerd/certs.d/gardener-rs.local/hosts.toml",
                "/etc/containerd/certs.d/registry.k8s.io/hosts.toml"
            ]
        );
        assert_eq!(files[0].content.inline.as_ref().unwrap().data, CA);
        assert!(files[2].content.inline.as_ref().unwrap().data.contains("/v2/registry.k8s.io\""));
    }
}
