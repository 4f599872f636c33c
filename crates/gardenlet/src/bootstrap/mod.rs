//! gardenlet's garden identity by CSR, as Gardener's gardenlet bootstrap: with
//! `gardenClientConnection` configured, gardenlet talks to the garden as user
//! `gardener.cloud:system:seed:<seed>` (group `gardener.cloud:system:seeds`) with a client
//! certificate, not as the bootstrap identity.
//!
//! At start ([`Bootstrap::identity`]) it reads the kubeconfig Secret from the seed cluster; a
//! certificate of this seed with more than a fifth of its lifetime left is used
//! ([`decide::usable`]). Otherwise it bootstraps with the bootstrap kubeconfig ([`csr`]: key,
//! CSR, a bounded wait for approval and signature) and writes the new kubeconfig into the
//! Secret ([`secret`]). [`renew`] replaces the certificate after four fifths of its lifetime,
//! or at once when the Seed carries `gardener.cloud/operation: renew-kubeconfig`, and then
//! asks the process to restart so that every client uses the new certificate.

pub mod csr;
pub mod decide;
pub mod renew;
pub mod secret;

use crate::config::GardenClientConnection;
use kube::Client;
use secret::Endpoint;
use std::path::PathBuf;
use std::time::Duration;

/// How long a bootstrap waits for its CSR to be approved and signed (in the binary).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading the bootstrap kubeconfig {}", path.display())]
    BootstrapKubeconfig {
        path: PathBuf,
        #[source]
        source: runtime::cli::ClientError,
    },
    #[error("building a client from the bootstrap kubeconfig {}", path.display())]
    BootstrapClient {
        path: PathBuf,
        #[source]
        source: kube::Error,
    },
    #[error("reading the garden kubeconfig Secret {secret} in the seed")]
    ReadSecret {
        secret: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the garden kubeconfig Secret {secret} in the seed")]
    WriteSecret {
        secret: String,
        #[source]
        source: kube::Error,
    },
    #[error("preparing the certificate request of seed {seed}: {what}")]
    Generate { seed: String, what: String },
    #[error("creating a CertificateSigningRequest for seed {seed}")]
    CreateCsr {
        seed: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "CertificateSigningRequest {name} was not approved and signed within {timeout:?} (is the controller-manager's CSR approver running, and kube-controller-manager's csrsigning controller?)"
    )]
    Timeout { name: String, timeout: Duration },
    #[error("watching CertificateSigningRequest {name}")]
    Watch {
        name: String,
        #[source]
        source: kube::runtime::wait::Error,
    },
    #[error("CertificateSigningRequest {name} was deleted before it was signed")]
    Vanished { name: String },
    #[error("CertificateSigningRequest {name} was denied ({reason}): {message}")]
    Denied { name: String, reason: String, message: String },
    #[error("the certificate of CertificateSigningRequest {name} cannot be used: {why}")]
    Unusable { name: String, why: String },
    #[error("rendering the garden kubeconfig: {what}")]
    Render { what: String },
    #[error("building the garden client from Secret {secret}")]
    GardenClient {
        secret: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
}

/// The garden identity in use: the client configuration and what its certificate says.
#[derive(Clone)]
pub struct Identity {
    pub config: kube::Config,
    pub certificate: decide::Certificate,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("certificate", &self.certificate).finish_non_exhaustive()
    }
}

/// What the bootstrap works with.
#[derive(Clone)]
pub struct Bootstrap {
    pub seed_name: String,
    pub connection: GardenClientConnection,
    /// The seed cluster, where the kubeconfig Secret lives.
    pub seed: Client,
    /// How long to wait for a CSR.
    pub timeout: Duration,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrap")
            .field("seed_name", &self.seed_name)
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl Bootstrap {
    /// The garden identity at start: the Secret's certificate while it is good enough, else a
    /// new one bootstrapped with the bootstrap kubeconfig (and written to the Secret).
    #[tracing::instrument(skip_all, fields(seed = %self.seed_name))]
    pub async fn identity(&self) -> Result<Identity, Error> {
        let now = k8s_openapi::jiff::Timestamp::now();
        let secret_ref = &self.connection.kubeconfig_secret;
        if let Some(kubeconfig) = secret::read(&self.seed, secret_ref).await? {
            let verdict = secret::certificate_of(&kubeconfig)
                .and_then(|pem| decide::parse_certificate(pem.as_bytes()))
                .and_then(|cert| decide::usable(&cert, &self.seed_name, now).map(|()| cert));
            match verdict {
                Ok(certificate) => {
                    tracing::info!(
                        secret = %secret::describe(secret_ref),
                        not_after = %certificate.not_after,
                        "using the garden client certificate of the kubeconfig Secret"
                    );
                    return Ok(Identity { config: self.client_config(&kubeconfig).await?, certificate });
                }
                Err(why) => tracing::info!(
                    secret = %secret::describe(secret_ref),
                    %why,
                    "the kubeconfig Secret's certificate is not used; bootstrapping a new one"
                ),
            }
        } else {
            tracing::info!(secret = %secret::describe(secret_ref), "no garden kubeconfig Secret yet; bootstrapping");
        }
        let (client, endpoint) = self.bootstrap_client().await?;
        self.obtain(&client, &endpoint).await
    }

    /// A new certificate requested as `current` (the identity in use: the approver lets a seed
    /// renew itself), or with the bootstrap kubeconfig when `current` may not create CSRs;
    /// written to the Secret.
    #[tracing::instrument(skip_all, fields(seed = %self.seed_name))]
    pub async fn renew(&self, current: &Client) -> Result<Identity, Error> {
        let (bootstrap, endpoint) = self.bootstrap_client().await?;
        match self.obtain(current, &endpoint).await {
            Err(Error::CreateCsr { source: kube::Error::Api(s), .. }) if s.code == 403 => {
                tracing::info!("the current identity may not create CSRs; renewing with the bootstrap kubeconfig");
                self.obtain(&bootstrap, &endpoint).await
            }
            other => other,
        }
    }

    /// Requests a certificate as `client`, writes its kubeconfig into the Secret.
    async fn obtain(&self, client: &Client, endpoint: &Endpoint) -> Result<Identity, Error> {
        let issued = csr::request_certificate(client, &self.seed_name, self.timeout).await?;
        let certificate = decide::parse_certificate(issued.certificate_pem.as_bytes())
            .and_then(|c| decide::usable(&c, &self.seed_name, k8s_openapi::jiff::Timestamp::now()).map(|()| c))
            .map_err(|why| Error::Unusable { name: issued.csr_name.clone(), why })?;
        let kubeconfig =
            secret::render(endpoint, &issued.certificate_pem, &issued.key).map_err(|what| Error::Render { what })?;
        secret::write(&self.seed, &self.connection.kubeconfig_secret, &kubeconfig).await?;
        tracing::info!(
            secret = %secret::describe(&self.connection.kubeconfig_secret),
            csr = %issued.csr_name,
            not_after = %certificate.not_after,
            "wrote the garden kubeconfig with the new client certificate"
        );
        Ok(Identity { config: self.client_config(&kubeconfig).await?, certificate })
    }

    /// The bootstrap identity's client and the garden endpoint its kubeconfig names.
    async fn bootstrap_client(&self) -> Result<(Client, Endpoint), Error> {
        let path = &self.connection.bootstrap_kubeconfig;
        let config = runtime::cli::config(Some(path))
            .await
            .map_err(|source| Error::BootstrapKubeconfig { path: path.clone(), source })?;
        let endpoint = Endpoint {
            server: config.cluster_url.to_string().trim_end_matches('/').to_string(),
            ca_pem: config
                .root_cert
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|der| crate::managedseed::pem(der))
                .collect(),
        };
        let client =
            Client::try_from(config).map_err(|source| Error::BootstrapClient { path: path.clone(), source })?;
        Ok((client, endpoint))
    }

    async fn client_config(&self, kubeconfig: &str) -> Result<kube::Config, Error> {
        let secret = secret::describe(&self.connection.kubeconfig_secret);
        let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig)
            .map_err(|source| Error::GardenClient { secret: secret.clone(), source })?;
        kube::Config::from_custom_kubeconfig(parsed, &Default::default())
            .await
            .map_err(|source| Error::GardenClient { secret, source })
    }
}
