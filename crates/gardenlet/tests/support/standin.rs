//! A stand-in for a shoot's kube-apiserver (test code only): a real etcd and kube-apiserver
//! started from the certificates gardenlet generated for the shoot (serving certificate with
//! the load-balancer address among its SANs, client CA, etcd server and client certificates,
//! service-account keys), listening on that address and port 443, as the real one would.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use testenv::{Assets, Process};

pub struct StandIn {
    // Drop order: apiserver before etcd, directory last.
    pub apiserver: Process,
    pub etcd: Process,
    pub dir: tempfile::TempDir,
}

async fn write_secret(client: &kube::Client, namespace: &str, name: &str, dir: &Path) -> Result<(), String> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| format!("reading secret {name}: {e}"))?;
    let target = dir.join(name);
    std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
    for (key, value) in secret.data.unwrap_or_default() {
        std::fs::write(target.join(key), value.0).map_err(|e| e.to_string())?;
    }
    Ok(())
}

impl StandIn {
    pub async fn start(client: &kube::Client, namespace: &str, address: Ipv4Addr) -> Result<Self, String> {
        let assets = Assets::from_env().map_err(|e| e.to_string())?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let d = dir.path();
        for name in [
            "ca-etcd-bundle",
            "etcd-server",
            "etcd-client",
            "kube-apiserver",
            "ca-client-bundle",
            "ca-front-proxy-bundle",
            "front-proxy-client",
            "service-account-key",
        ] {
            write_secret(client, namespace, name, d).await?;
        }
        let p = |s: &str, k: &str| d.join(s).join(k).display().to_string();
        let host = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let client_port = testenv::free_port(host).map_err(|e| e.to_string())?;
        let peer_port = testenv::free_port(host).map_err(|e| e.to_string())?;
        let etcd_args = vec![
            format!("--data-dir={}", d.join("etcd").display()),
            format!("--listen-client-urls=https://127.0.0.1:{client_port}"),
            format!("--advertise-client-urls=https://127.0.0.1:{client_port}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"),
            "--client-cert-auth=true".into(),
            format!("--trusted-ca-file={}", p("ca-etcd-bundle", "bundle.crt")),
            format!("--cert-file={}", p("etcd-server", "tls.crt")),
            format!("--key-file={}", p("etcd-server", "tls.key")),
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
            "--logger=zap".into(),
        ];
        let etcd = Process::spawn("etcd", &assets.etcd, &etcd_args, d).map_err(|e| e.to_string())?;
        let apiserver_args = vec![
            format!("--etcd-servers=https://127.0.0.1:{client_port}"),
            format!("--etcd-cafile={}", p("ca-etcd-bundle", "bundle.crt")),
            format!("--etcd-certfile={}", p("etcd-client", "tls.crt")),
            format!("--etcd-keyfile={}", p("etcd-client", "tls.key")),
            format!("--bind-address={address}"),
            format!("--advertise-address={address}"),
            "--secure-port=443".into(),
            "--insecure-port=0".into(),
            format!("--cert-dir={}", d.join("certs").display()),
            format!("--tls-cert-file={}", p("kube-apiserver", "tls.crt")),
            format!("--tls-private-key-file={}", p("kube-apiserver", "tls.key")),
            format!("--client-ca-file={}", p("ca-client-bundle", "bundle.crt")),
            format!("--requestheader-client-ca-file={}", p("ca-front-proxy-bundle", "bundle.crt")),
            "--requestheader-allowed-names=front-proxy-client".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            format!("--proxy-client-cert-file={}", p("front-proxy-client", "tls.crt")),
            format!("--proxy-client-key-file={}", p("front-proxy-client", "tls.key")),
            "--authorization-mode=Node,RBAC".into(),
            "--enable-bootstrap-token-auth=true".into(),
            "--service-cluster-ip-range=10.112.0.0/13".into(),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!("--service-account-key-file={}", p("service-account-key", "sa.pub")),
            format!("--service-account-signing-key-file={}", p("service-account-key", "sa.key")),
            "--disable-admission-plugins=ServiceAccount".into(),
            "--enable-priority-and-fairness=false".into(),
        ];
        let mut apiserver =
            Process::spawn("kube-apiserver", &assets.kube_apiserver, &apiserver_args, d).map_err(|e| e.to_string())?;
        // Ready when /readyz answers to the admin kubeconfig gardenlet generated (TLS verified).
        let admin = Api::<Secret>::namespaced(client.clone(), namespace)
            .get("kubeconfig-admin")
            .await
            .map_err(|e| format!("reading kubeconfig-admin: {e}"))?;
        let text = admin.data.unwrap_or_default().get("kubeconfig").map(|b| String::from_utf8_lossy(&b.0).to_string());
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text.unwrap_or_default()).map_err(|e| e.to_string())?;
        let shoot = testenv::client_from(&kubeconfig).await.map_err(|e| e.to_string())?;
        let started = std::time::Instant::now();
        loop {
            apiserver.check_alive().map_err(|e| e.to_string())?;
            let request = http::Request::get("/readyz").body(Vec::new()).map_err(|e| e.to_string())?;
            if shoot.request_text(request).await.is_ok_and(|b| b.trim() == "ok") {
                break;
            }
            if started.elapsed() > std::time::Duration::from_secs(180) {
                return Err(format!("stand-in kube-apiserver not ready: {}", apiserver.log_tail()));
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        Ok(Self { apiserver, etcd, dir })
    }
}
