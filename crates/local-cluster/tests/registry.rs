//! The image registry's two processes on one storage, with the real `docker-registry` binary
//! (Debian's CNCF distribution 2.8, unpacked by `hack/setup-local.sh`) and the configuration,
//! PKI and writer credentials `up` renders, both on loopback ports of their own: the writer
//! accepts a push with its password and refuses one without (401), the reader refuses any
//! anonymous write (read-only) and serves what the writer stored at once, although it had just
//! answered `404` for the same manifest (no stale negative from a cache).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use local_cluster::pki::{self, Files};
use local_cluster::registry::config::{self, Config, Serve};
use local_cluster::registry::{Client, Response, writer};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SETUP_COMMAND: &str = "hack/setup-local.sh";
const REPOSITORY: &str = "gardener-rs.local/registry-test";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A registry process of this test, killed when dropped.
struct Registry {
    child: Child,
    log: PathBuf,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> PathBuf {
    let path = local_cluster::registry::default_binary();
    assert!(
        path.is_file(),
        "the registry binary {} is missing; run `{SETUP_COMMAND}` first (it unpacks Debian's docker-registry)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

fn start(dir: &Path, name: &str, config: &Config) -> Registry {
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, config::to_yaml(config).expect("the configuration renders")).expect("writing the config");
    let log = dir.join(format!("{name}.log"));
    let out = std::fs::File::create(&log).expect("the log file");
    let err = out.try_clone().expect("the log file");
    let child = Command::new(binary())
        .arg("serve")
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("starting docker-registry");
    Registry { child, log }
}

/// Waits (bounded) until the registry answers `/v2/` at all (200, or 401 for the writer).
async fn wait_answering(registry: &mut Registry, client: &Client) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = registry.child.try_wait().expect("checking the registry") {
            let log = std::fs::read_to_string(&registry.log).unwrap_or_default();
            panic!("docker-registry exited ({status}):\n{log}");
        }
        if client.request("GET", "/v2/", &[]).await.is_ok() {
            return;
        }
        assert!(Instant::now() < deadline, "{client:?} did not answer; log:\n{}", read(&registry.log));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn sha256(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    format!("sha256:{}", digest.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Starts a blob upload (`POST .../blobs/uploads/`); distribution 2.8 answers `202` with the
/// upload's `Location` (it knows no single-request upload).
async fn start_upload(client: &Client) -> Response {
    let path = format!("/v2/{REPOSITORY}/blobs/uploads/");
    client.request("POST", &path, &[]).await.expect("the upload start is answered")
}

/// A whole blob upload: the start, then `PUT <Location>&digest=` with the content.
async fn push_blob(client: &Client, data: &[u8]) -> Response {
    let started = start_upload(client).await;
    let Some(location) = started.header("location").filter(|_| started.status == 202) else { return started };
    let separator = if location.contains('?') { '&' } else { '?' };
    let url = format!("{location}{separator}digest={}", sha256(data));
    let headers = [("Content-Type", "application/octet-stream")];
    client.send("PUT", &url, &headers, data.to_vec()).await.expect("the blob upload is answered")
}

async fn push_manifest(client: &Client, tag: &str, manifest: &[u8]) -> Response {
    let path = format!("/v2/{REPOSITORY}/manifests/{tag}");
    client.send("PUT", &path, &[("Content-Type", OCI_MANIFEST)], manifest.to_vec()).await.expect("answered")
}

async fn get_manifest(client: &Client, tag: &str) -> Response {
    let path = format!("/v2/{REPOSITORY}/manifests/{tag}");
    client.request("GET", &path, &[("Accept", OCI_MANIFEST)]).await.expect("the manifest GET is answered")
}

fn image() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let layer = b"a layer of the registry test; distribution does not look inside".to_vec();
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": [sha256(&layer)]},
        "config": {}
    })
    .to_string()
    .into_bytes();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256(&config), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": sha256(&layer), "size": layer.len()}]
    })
    .to_string()
    .into_bytes();
    (layer, config, manifest)
}

#[tokio::test]
async fn only_the_writer_with_its_password_pushes_and_the_reader_serves_the_push_at_once() {
    let _ = binary();
    let dir = tempfile::tempdir().expect("a scratch directory");
    let pki = Files::new(dir.path().join("pki"));
    pki.ensure().expect("the PKI");
    let ca = std::fs::read(pki.path(pki::CA, "ca.crt")).expect("the CA");
    // The writer's certificate names 127.0.0.1; the test's reader listens there too.
    let (cert, key) = (pki.path(pki::REGISTRY_WRITER, "tls.crt"), pki.path(pki::REGISTRY_WRITER, "tls.key"));
    let storage = dir.path().join("registry");
    let files = writer::Files::new(dir.path().join("registry-writer"));
    files.ensure().expect("the writer's credentials");
    let credentials = files.credentials().expect("the password");

    let (reader_address, writer_address) = (format!("127.0.0.1:{}", free_port()), format!("127.0.0.1:{}", free_port()));
    let serve = |address| Serve { address, storage: &storage, cert: &cert, key: &key };
    let mut reader = start(dir.path(), "reader", &config::reader(serve(&reader_address)));
    let mut writer = start(dir.path(), "writer", &config::writer(serve(&writer_address), &files.htpasswd()));

    let anonymous_reader = Client::at(&ca, &reader_address, None).expect("a reader client");
    let anonymous_writer = Client::at(&ca, &writer_address, None).expect("an anonymous writer client");
    let authenticated = Client::at(&ca, &writer_address, Some(&credentials)).expect("a writer client");
    wait_answering(&mut reader, &anonymous_reader).await;
    wait_answering(&mut writer, &anonymous_writer).await;

    let (layer, config_blob, manifest) = image();
    // Asked before the push: a cache that kept this answer would hide the push below.
    assert_eq!(get_manifest(&anonymous_reader, "v1").await.status, 404);

    // Without the password the writer refuses everything, reads included.
    let refused = anonymous_writer.request("GET", "/v2/", &[]).await.expect("answered");
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(refused.header("www-authenticate").is_some_and(|h| h.starts_with("Basic")), "{refused:?}");
    assert_eq!(push_blob(&anonymous_writer, &layer).await.status, 401);
    assert_eq!(push_manifest(&anonymous_writer, "v1", &manifest).await.status, 401);

    // The reader refuses anonymous writes (read-only mode) and stores nothing.
    let refused = push_blob(&anonymous_reader, &layer).await;
    assert_eq!(refused.status, 405, "{refused:?}");
    assert_eq!(push_manifest(&anonymous_reader, "v1", &manifest).await.status, 405);
    let blob = format!("/v2/{REPOSITORY}/blobs/{}", sha256(&layer));
    assert_eq!(anonymous_reader.request("HEAD", &blob, &[]).await.expect("answered").status, 404);

    // With the password the writer takes the image.
    for data in [&layer, &config_blob] {
        let pushed = push_blob(&authenticated, data).await;
        assert_eq!(pushed.status, 201, "{pushed:?}\nwriter log:\n{}", read(&writer.log));
    }
    let pushed = push_manifest(&authenticated, "v1", &manifest).await;
    assert_eq!(pushed.status, 201, "{pushed:?}\nwriter log:\n{}", read(&writer.log));
    assert_eq!(pushed.header("docker-content-digest"), Some(sha256(&manifest).as_str()));

    // The reader serves it anonymously, as pushed.
    let pulled = get_manifest(&anonymous_reader, "v1").await;
    assert_eq!(pulled.status, 200, "{pulled:?}\nreader log:\n{}", read(&reader.log));
    assert_eq!(pulled.header("docker-content-digest"), Some(sha256(&manifest).as_str()));
    assert_eq!(pulled.body.as_bytes(), manifest.as_slice());
    let by_digest = get_manifest(&anonymous_reader, &sha256(&manifest)).await;
    assert_eq!(by_digest.status, 200, "{by_digest:?}");
    let layer_back = anonymous_reader.request("GET", &blob, &[]).await.expect("answered");
    assert_eq!((layer_back.status, layer_back.body.as_bytes()), (200, layer.as_slice()));

    // The reader still refuses to overwrite the tag it now serves.
    assert_eq!(push_manifest(&anonymous_reader, "v1", b"{}").await.status, 405);
    assert_eq!(
        get_manifest(&anonymous_reader, "v1").await.header("docker-content-digest"),
        Some(sha256(&manifest).as_str())
    );
    drop((reader, writer));
}
