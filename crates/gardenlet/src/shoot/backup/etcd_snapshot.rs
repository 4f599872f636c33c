//! The final etcd snapshot of a migration: taken through etcd's own snapshot API (the v3
//! `Maintenance/Snapshot` call, via etcd's HTTP gateway on the client port, authenticated
//! with the shoot's etcd client certificate and verified against its etcd CA), streamed into
//! a file in the backup entry's directory and checked against the SHA-256 trailer etcd
//! appends, before the file is renamed into place. `etcdctl snapshot restore` reads the same
//! format (see `components::etcd::restore_script`).

use base64::Engine;
use futures::{AsyncBufReadExt, StreamExt};
use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// Length of the SHA-256 trailer etcd appends to a snapshot stream.
const TRAILER: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("building the etcd client for {endpoint}: {reason}")]
    Client { endpoint: String, reason: String },
    #[error("requesting a snapshot from etcd at {endpoint}")]
    Request {
        endpoint: String,
        #[source]
        source: kube::Error,
    },
    #[error("reading the snapshot stream from etcd at {endpoint}: {reason}")]
    Stream { endpoint: String, reason: String },
    #[error("etcd at {endpoint} refused the snapshot: {message}")]
    Refused { endpoint: String, message: String },
    #[error("the snapshot from etcd at {endpoint} is corrupt: {reason}")]
    Integrity { endpoint: String, reason: String },
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSnapshot {
    pub path: PathBuf,
    pub size: u64,
    /// SHA-256 of the whole file (trailer included), hex.
    pub sha256: String,
    /// The etcd revision the snapshot was taken at.
    pub revision: i64,
}

/// The TLS material of the shoot's etcd client (PEM).
pub struct EtcdClientTls {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for EtcdClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClientTls").finish_non_exhaustive()
    }
}

/// One line of the gateway's streamed answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk {
    Data { blob: Vec<u8>, revision: Option<i64> },
    Error(String),
}

/// Parses one line of the streamed answer: `{"result":{"header":{..},"blob":"<base64>"}}` or
/// `{"error":{"message":..}}`.
pub fn parse_chunk(line: &str) -> Result<Chunk, String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(error) = v.get("error") {
        let message = error.get("message").and_then(|m| m.as_str()).unwrap_or("unknown error");
        return Ok(Chunk::Error(message.to_string()));
    }
    let result = v.get("result").ok_or("neither result nor error")?;
    let blob = match result.get("blob").and_then(|b| b.as_str()) {
        Some(b) => base64::engine::general_purpose::STANDARD.decode(b).map_err(|e| format!("blob: {e}"))?,
        None => Vec::new(),
    };
    Ok(Chunk::Data { blob, revision: header_revision(result) })
}

/// `header.revision` of a gateway answer (int64 values come as strings in JSON).
fn header_revision(v: &serde_json::Value) -> Option<i64> {
    v.get("header").and_then(|h| h.get("revision")).and_then(|r| match r {
        serde_json::Value::String(s) => s.parse().ok(),
        other => other.as_i64(),
    })
}

/// Hashes a snapshot stream as it passes, holding back the last 32 bytes, which must be the
/// SHA-256 of everything before them.
pub struct TrailerCheck {
    body: ring::digest::Context,
    whole: ring::digest::Context,
    tail: Vec<u8>,
    size: u64,
}

impl std::fmt::Debug for TrailerCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrailerCheck").field("size", &self.size).finish_non_exhaustive()
    }
}

impl Default for TrailerCheck {
    fn default() -> Self {
        Self::new()
    }
}

impl TrailerCheck {
    pub fn new() -> Self {
        Self {
            body: ring::digest::Context::new(&ring::digest::SHA256),
            whole: ring::digest::Context::new(&ring::digest::SHA256),
            tail: Vec::new(),
            size: 0,
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.whole.update(bytes);
        self.size += bytes.len() as u64;
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > TRAILER {
            let cut = self.tail.len() - TRAILER;
            self.body.update(&self.tail[..cut]);
            self.tail.drain(..cut);
        }
    }

    /// The size and SHA-256 (hex) of the whole stream, when the trailer matches.
    pub fn finish(self) -> Result<(u64, String), String> {
        if self.tail.len() < TRAILER {
            return Err(format!("{} bytes is too short for a snapshot", self.size));
        }
        if self.body.finish().as_ref() != self.tail.as_slice() {
            return Err("the SHA-256 trailer does not match the data".to_string());
        }
        let hex = self.whole.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect();
        Ok((self.size, hex))
    }
}

/// A client for one etcd endpoint (`address:port`), verifying the server certificate for
/// `server_name` (a name in its SANs: the client Service's DNS name).
pub async fn client(address: &str, server_name: &str, tls: &EtcdClientTls) -> Result<kube::Client, SnapshotError> {
    let endpoint = format!("https://{address}");
    let fail = |reason: String| SnapshotError::Client { endpoint: endpoint.clone(), reason };
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let kubeconfig = Kubeconfig {
        clusters: vec![NamedCluster {
            name: "etcd".into(),
            cluster: Some(Cluster {
                server: Some(endpoint.clone()),
                certificate_authority_data: Some(b64(&tls.ca)),
                tls_server_name: Some(server_name.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "etcd-client".into(),
            auth_info: Some(AuthInfo {
                client_certificate_data: Some(b64(&tls.cert)),
                client_key_data: Some(b64(&tls.key).into()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        contexts: vec![NamedContext {
            name: "etcd".into(),
            context: Some(Context { cluster: "etcd".into(), user: Some("etcd-client".into()), ..Default::default() }),
            ..Default::default()
        }],
        current_context: Some("etcd".into()),
        ..Default::default()
    };
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.map_err(|e| fail(e.to_string()))?;
    // A large snapshot takes a while; the stream itself is bounded by the caller.
    config.read_timeout = Some(std::time::Duration::from_secs(300));
    kube::Client::try_from(config).map_err(|e| fail(e.to_string()))
}

/// Takes a snapshot through `client` and stores it as `dir/file`: streamed into a scratch
/// file, verified, synced, then renamed into place (an interrupted run leaves no file that
/// looks complete).
pub async fn take(
    client: &kube::Client,
    endpoint: &str,
    dir: &Path,
    file: &str,
) -> Result<StoredSnapshot, SnapshotError> {
    let path = dir.join(file);
    let scratch = dir.join(format!(".{file}.partial"));
    let streamed = match stream_into(client, endpoint, &scratch).await {
        Ok(v) => v,
        Err(e) => {
            // Best effort: the next run truncates the scratch file anyway.
            let _ = tokio::fs::remove_file(&scratch).await;
            return Err(e);
        }
    };
    tokio::fs::rename(&scratch, &path).await.map_err(io_err("renaming the snapshot to", &path))?;
    // The rename is durable only once the directory is synced.
    tokio::fs::File::open(dir)
        .await
        .map_err(io_err("opening", dir))?
        .sync_all()
        .await
        .map_err(io_err("syncing", dir))?;
    let (size, sha256, revision) = streamed;
    Ok(StoredSnapshot { path, size, sha256, revision })
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io { action, path, source }
}

/// Streams a verified snapshot into `scratch`: size, SHA-256 (hex) and revision.
async fn stream_into(
    client: &kube::Client,
    endpoint: &str,
    scratch: &Path,
) -> Result<(u64, String, i64), SnapshotError> {
    let endpoint = endpoint.to_string();
    let stream_err = |reason: String| SnapshotError::Stream { endpoint: endpoint.clone(), reason };
    // The revision the snapshot will hold (the caller stopped every writer before).
    let status = http::Request::post("/v3/maintenance/status")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(b"{}".to_vec())
        .map_err(|e| stream_err(e.to_string()))?;
    let status: serde_json::Value =
        client.request(status).await.map_err(|source| SnapshotError::Request { endpoint: endpoint.clone(), source })?;
    let mut revision = header_revision(&status).unwrap_or_default();
    let request = http::Request::post("/v3/maintenance/snapshot")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(b"{}".to_vec())
        .map_err(|e| stream_err(e.to_string()))?;
    let reader = client
        .request_stream(request)
        .await
        .map_err(|source| SnapshotError::Request { endpoint: endpoint.clone(), source })?;
    let mut out = tokio::fs::File::create(scratch).await.map_err(io_err("creating", scratch))?;
    let mut check = TrailerCheck::new();
    let mut lines = std::pin::pin!(reader.lines());
    while let Some(line) = lines.next().await {
        let line = line.map_err(|e| stream_err(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_chunk(&line).map_err(stream_err)? {
            Chunk::Error(message) => return Err(SnapshotError::Refused { endpoint, message }),
            Chunk::Data { blob, revision: r } => {
                revision = r.unwrap_or(revision).max(revision);
                check.update(&blob);
                out.write_all(&blob).await.map_err(io_err("writing", scratch))?;
            }
        }
    }
    out.sync_all().await.map_err(io_err("syncing", scratch))?;
    let (size, sha256) = check.finish().map_err(|reason| SnapshotError::Integrity { endpoint, reason })?;
    Ok((size, sha256, revision))
}

/// SHA-256 (hex) of a stored file, to check a snapshot before a restore relies on it.
pub async fn file_sha256(path: &Path) -> Result<String, SnapshotError> {
    use tokio::io::AsyncReadExt;
    let io = |action: &'static str| {
        let path = path.to_path_buf();
        move |source| SnapshotError::Io { action, path, source }
    };
    let mut file = tokio::fs::File::open(path).await.map_err(io("opening"))?;
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).await.map_err(io("reading"))?;
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
    }
    Ok(digest.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_trailer(data: &[u8]) -> Vec<u8> {
        let mut v = data.to_vec();
        v.extend_from_slice(ring::digest::digest(&ring::digest::SHA256, data).as_ref());
        v
    }

    #[test]
    fn the_trailer_check_accepts_intact_streams_in_any_chunking() {
        let stream = with_trailer(&(0..5000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
        for chunk in [1, 7, 32, 33, 4096, stream.len()] {
            let mut c = TrailerCheck::new();
            for part in stream.chunks(chunk) {
                c.update(part);
            }
            let (size, _) = c.finish().unwrap();
            assert_eq!(size, stream.len() as u64);
        }
    }

    #[test]
    fn the_trailer_check_refuses_corruption_and_truncation() {
        let mut stream = with_trailer(b"some etcd pages");
        stream[3] ^= 1;
        let mut c = TrailerCheck::new();
        c.update(&stream);
        assert!(c.finish().is_err());
        let mut c = TrailerCheck::new();
        c.update(&with_trailer(b"x")[..20]);
        assert!(c.finish().unwrap_err().contains("too short"));
        let stream = with_trailer(b"complete");
        let mut c = TrailerCheck::new();
        c.update(&stream[..stream.len() - 1]);
        assert!(c.finish().is_err(), "a stream cut short fails");
    }

    #[test]
    fn chunks_parse_as_the_gateway_sends_them() {
        let line =
            r#"{"result":{"header":{"cluster_id":"1","revision":"42"},"remaining_bytes":"10","blob":"aGVsbG8="}}"#;
        assert_eq!(parse_chunk(line).unwrap(), Chunk::Data { blob: b"hello".to_vec(), revision: Some(42) });
        assert_eq!(
            parse_chunk(r#"{"result":{"blob":"AA=="}}"#).unwrap(),
            Chunk::Data { blob: vec![0], revision: None }
        );
        assert_eq!(
            parse_chunk(r#"{"error":{"grpc_code":14,"message":"etcdserver: no leader"}}"#).unwrap(),
            Chunk::Error("etcdserver: no leader".into())
        );
        assert!(parse_chunk("not json").is_err());
        assert!(parse_chunk(r#"{"result":{"blob":"***"}}"#).is_err());
    }
}
