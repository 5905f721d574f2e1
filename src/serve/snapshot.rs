//! What one request reads: the `current` version and the committed log
//! prefix at the request's start.
//!
//! Opening a store is cheap (footers and headers), but folding the log into
//! an overlay costs O(delta), so the endpoint keeps the latest snapshot and
//! reopens only when `current` or the log file changed (a `readlink` and a
//! `stat` per request). Requests hold their snapshot by `Arc`: a compaction
//! or an append by another process becomes visible to the next request, and
//! the old version's mapped files stay usable until the last request on
//! them finishes (compaction never deletes a version; `gc` does, on request).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::store::versions::layout::{CURRENT, LOG};
use crate::store::StoreError;
use crate::view;

/// What identifies a snapshot on disk: the version `current` names and the
/// log file's identity and length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskState {
    pub version: Option<PathBuf>,
    pub log: Option<LogFile>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogFile {
    pub len: u64,
    inode: u64,
    modified: Option<SystemTime>,
}

impl DiskState {
    pub fn read(chunk: &Path) -> DiskState {
        use std::os::unix::fs::MetadataExt;
        let version = std::fs::read_link(chunk.join(CURRENT)).ok();
        let log = std::fs::metadata(chunk.join(LOG)).ok().map(|m| LogFile {
            len: m.len(),
            inode: m.ino(),
            modified: m.modified().ok(),
        });
        DiskState { version, log }
    }
}

/// The view's snapshot and the disk state it was read at.
pub struct Snapshot {
    pub view: view::Snapshot,
    pub disk: DiskState,
}

impl Snapshot {
    /// The version's name (`v3`) for `/health`.
    pub fn version(&self) -> String {
        let layout = &self.view.store.layout;
        layout.version.clone().unwrap_or_else(|| layout.version_dir.display().to_string())
    }
}

pub struct Snapshots {
    chunk: PathBuf,
    cache_bytes: usize,
    latest: Mutex<Option<Arc<Snapshot>>>,
}

impl Snapshots {
    pub fn new(chunk: &Path, cache_bytes: usize) -> Snapshots {
        Snapshots { chunk: chunk.to_path_buf(), cache_bytes, latest: Mutex::new(None) }
    }

    /// The snapshot for a request starting now.
    pub fn current(&self) -> Result<Arc<Snapshot>, StoreError> {
        let disk = DiskState::read(&self.chunk);
        let mut latest = super::workers::lock(&self.latest);
        if let Some(s) = latest.as_ref().filter(|s| s.disk == disk) {
            return Ok(Arc::clone(s));
        }
        // Read while holding the lock: concurrent requests wait for one
        // reload instead of each folding the log.
        let snapshot =
            Arc::new(Snapshot { view: view::Snapshot::open(&self.chunk, self.cache_bytes)?, disk });
        *latest = Some(Arc::clone(&snapshot));
        Ok(snapshot)
    }

    /// Forgets the kept snapshot, so the next request reads the disk again
    /// (after this server's own update, whose append may not change the
    /// log's modification time within the clock's resolution).
    pub fn invalidate(&self) {
        *super::workers::lock(&self.latest) = None;
    }
}
