//! The backup store: a directory (provider-local's BackupEntry directory, mounted into the
//! etcd pod) holding the snapshots under their names ([`crate::names`]). Every file is written to a
//! scratch name, synced and renamed, and the directory synced after, so a crash never leaves a
//! file that looks complete and is not.

use crate::names::Snapshot;
use crate::snapshot::{SnapshotError, sync_dir};
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io { action, path, source }
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, snapshot: &Snapshot) -> PathBuf {
        self.dir.join(snapshot.file_name())
    }

    /// Every snapshot in the store (other files are ignored).
    pub async fn list(&self) -> Result<Vec<Snapshot>, SnapshotError> {
        let mut entries = tokio::fs::read_dir(&self.dir).await.map_err(io_err("listing", &self.dir))?;
        let mut out = Vec::new();
        while let Some(entry) = entries.next_entry().await.map_err(io_err("listing", &self.dir))? {
            if let Some(s) = entry.file_name().to_str().and_then(Snapshot::parse) {
                out.push(s);
            }
        }
        out.sort_by_key(|s| (s.unix, s.kind, s.start, s.end));
        Ok(out)
    }

    /// Stores `bytes` as `snapshot`.
    pub async fn write(&self, snapshot: &Snapshot, bytes: &[u8]) -> Result<PathBuf, SnapshotError> {
        let path = self.path(snapshot);
        let scratch = self.dir.join(format!(".{}.partial", snapshot.file_name()));
        let mut file = tokio::fs::File::create(&scratch).await.map_err(io_err("creating", &scratch))?;
        file.write_all(bytes).await.map_err(io_err("writing", &scratch))?;
        file.sync_all().await.map_err(io_err("syncing", &scratch))?;
        tokio::fs::rename(&scratch, &path).await.map_err(io_err("renaming to", &path))?;
        sync_dir(&self.dir).await?;
        Ok(path)
    }

    pub async fn read(&self, snapshot: &Snapshot) -> Result<Vec<u8>, SnapshotError> {
        let path = self.path(snapshot);
        tokio::fs::read(&path).await.map_err(io_err("reading", &path))
    }

    /// Deletes snapshots (one already gone is not an error).
    pub async fn delete(&self, snapshots: &[Snapshot]) -> Result<(), SnapshotError> {
        for s in snapshots {
            let path = self.path(s);
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("deleting", &path)(e)),
            }
        }
        if !snapshots.is_empty() {
            sync_dir(&self.dir).await?;
        }
        Ok(())
    }
}
