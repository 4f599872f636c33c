//! Full snapshots: taken through etcd's own snapshot API (the v3 `Maintenance/Snapshot` call,
//! through the gateway), streamed into a scratch file in the store and checked against the
//! SHA-256 trailer etcd appends, before the file is synced and renamed into place. `etcdctl
//! snapshot restore` reads the same format. gardenlet's final snapshot of a migration and the
//! backup sidecar's full snapshots are taken here.

use crate::gateway::{Etcd, GatewayError, header_revision};
use base64::Engine;
use futures::StreamExt;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// Length of the SHA-256 trailer etcd appends to a snapshot stream.
const TRAILER: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    #[error("reading the snapshot stream from etcd at {endpoint}: {reason}")]
    Stream { endpoint: String, reason: String },
    #[error("etcd at {endpoint} refused the snapshot: {message}")]
    Refused { endpoint: String, message: String },
    #[error("the stored snapshot {} is corrupt: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
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

/// Takes a snapshot through `etcd` and stores it as `dir/file`: streamed into a scratch file,
/// verified, synced, then renamed into place (an interrupted run leaves no file that looks
/// complete). The revision is the one etcd reported just before the snapshot: the snapshot holds
/// at least that one (writers may go on meanwhile; a restore reads the real one back).
pub async fn take(etcd: &Etcd, dir: &Path, file: &str) -> Result<StoredSnapshot, SnapshotError> {
    let path = dir.join(file);
    let scratch = dir.join(format!(".{file}.partial"));
    let streamed = match stream_into(etcd, &scratch).await {
        Ok(v) => v,
        Err(e) => {
            // Best effort: the next run truncates the scratch file anyway.
            let _ = tokio::fs::remove_file(&scratch).await;
            return Err(e);
        }
    };
    tokio::fs::rename(&scratch, &path).await.map_err(io_err("renaming the snapshot to", &path))?;
    sync_dir(dir).await?;
    let (size, sha256, revision) = streamed;
    Ok(StoredSnapshot { path, size, sha256, revision })
}

/// Makes renames and deletions in `dir` durable.
pub async fn sync_dir(dir: &Path) -> Result<(), SnapshotError> {
    tokio::fs::File::open(dir).await.map_err(io_err("opening", dir))?.sync_all().await.map_err(io_err("syncing", dir))
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io { action, path, source }
}

/// Streams a verified snapshot into `scratch`: size, SHA-256 (hex) and revision.
async fn stream_into(etcd: &Etcd, scratch: &Path) -> Result<(u64, String, i64), SnapshotError> {
    let endpoint = etcd.endpoint().to_string();
    let stream_err = |reason: String| SnapshotError::Stream { endpoint: endpoint.clone(), reason };
    let revision = etcd.revision().await?;
    let lines = etcd.snapshot_lines().await?;
    let mut out = tokio::fs::File::create(scratch).await.map_err(io_err("creating", scratch))?;
    let mut check = TrailerCheck::new();
    let mut lines = std::pin::pin!(lines);
    while let Some(line) = lines.next().await {
        let line = line.map_err(|e| stream_err(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_chunk(&line).map_err(stream_err)? {
            Chunk::Error(message) => return Err(SnapshotError::Refused { endpoint, message }),
            Chunk::Data { blob, .. } => {
                check.update(&blob);
                out.write_all(&blob).await.map_err(io_err("writing", scratch))?;
            }
        }
    }
    out.sync_all().await.map_err(io_err("syncing", scratch))?;
    let (size, sha256) = check.finish().map_err(|reason| SnapshotError::Integrity { endpoint, reason })?;
    Ok((size, sha256, revision))
}

/// Checks a stored full snapshot against its SHA-256 trailer before a restore relies on it.
pub async fn verify_file(path: &Path) -> Result<u64, SnapshotError> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::open(path).await.map_err(io_err("opening", path))?;
    let mut check = TrailerCheck::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).await.map_err(io_err("reading", path))?;
        if n == 0 {
            break;
        }
        check.update(&buf[..n]);
    }
    check.finish().map(|(size, _)| size).map_err(|reason| SnapshotError::Corrupt { path: path.to_path_buf(), reason })
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
