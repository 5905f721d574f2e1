//! What one request reads: the `current` version and the committed log
//! prefix at the request's start.
//!
//! Opening a store is cheap (footers and headers), but folding the log into
//! an overlay costs O(delta), so the endpoint keeps the latest snapshot and
//! reopens only when `current` or the log file changed (a `readlink` and a
//! `stat` per request). After this server's own update the writer's fold is
//! handed over instead ([`Snapshot::after_update`]), so only another
//! process's writes make a request fold the log. Requests hold their snapshot
//! by `Arc`: a compaction or an append by another process becomes visible to
//! the next request, and the old version's mapped files stay usable until the
//! last request on them finishes (compaction never deletes a version; `gc`
//! does, on request).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::store::read::ColumnCache;
use crate::store::versions::layout::{CURRENT, LOG};
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view;
use crate::view::overlay::Overlay;

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
    /// What a writer of this server leaves for readers: `overlay` is its fold
    /// of the log right after its append, taken while it still holds the
    /// writer lock, so the disk state read here is the one that fold
    /// describes and no reader has to fold the log again (O(delta) per
    /// update otherwise: 0.5 s for 200,000 added quads).
    pub fn after_update(chunk: &Path, overlay: &Overlay, cache_bytes: usize) -> Result<Snapshot, StoreError> {
        let disk = DiskState::read(chunk);
        let store = Store::open(chunk)?;
        overlay.prepare_lookups();
        let view = view::Snapshot { store, overlay: overlay.clone(), cache: ColumnCache::new(cache_bytes) };
        Ok(Snapshot { view, disk })
    }

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

    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes
    }

    /// Keeps `snapshot` (from [`Snapshot::after_update`]) for the next requests.
    pub fn install(&self, snapshot: Snapshot) {
        *super::workers::lock(&self.latest) = Some(Arc::new(snapshot));
    }

    /// Forgets the kept snapshot, so the next request reads the disk again
    /// (after this server's own update, whose append may not change the
    /// log's modification time within the clock's resolution).
    pub fn invalidate(&self) {
        *super::workers::lock(&self.latest) = None;
    }
}
