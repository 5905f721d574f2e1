//! The latest snapshot of a chunk, kept for the next reader while the disk
//! still matches it: what a long-lived reader (the endpoint, the TUI) reads
//! for each request or query.
//!
//! Opening a store is cheap (footers and headers), but folding the log into
//! an overlay costs O(delta) (0.5 s for 200,000 pending quads), so the
//! snapshot is kept and read again only when `current` or the log file
//! changed (a `readlink` and a `stat` per request). After a writer's own
//! update its fold is handed over instead ([`Kept::after_update`]), so only
//! another process's writes make a reader fold the log. Readers hold their
//! snapshot by `Arc`: a compaction or an append by another process becomes
//! visible to the next reader, and the old version's mapped files stay
//! usable until the last reader on them finishes (compaction never deletes
//! a version; `gc` does, on request).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::store::read::ColumnCache;
use crate::store::versions::layout::{CURRENT, LOG};
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view;
use crate::view::overlay::Overlay;

/// How much a kept snapshot may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Decoded columns up to this many bytes (the endpoint's `--cache`).
    Cache(usize),
    /// A process's `--memory-limit`: half for decoded columns, half for the
    /// store's mapped pages ([`ColumnCache::within`]).
    Memory(usize),
}

impl Budget {
    fn cache_bytes(self) -> usize {
        match self {
            Budget::Cache(bytes) => bytes,
            Budget::Memory(limit) => limit / 2,
        }
    }

    /// The column cache this budget allows over `store`.
    pub fn cache(self, store: &Store) -> ColumnCache {
        match self {
            Budget::Cache(bytes) => ColumnCache::new(bytes),
            Budget::Memory(limit) => ColumnCache::within(store, limit),
        }
    }

    /// `store` opened with its log folded, within this budget.
    fn open(self, chunk: &Path) -> Result<view::Snapshot, StoreError> {
        view::Snapshot::open_with(chunk, |store| self.cache(store))
    }
}

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
pub struct Kept {
    pub view: view::Snapshot,
    pub disk: DiskState,
}

impl Kept {
    /// What a writer leaves for readers: `overlay` is its fold
    /// of the log right after its append, taken while it still holds the
    /// writer lock, so the disk state read here is the one that fold
    /// describes and no reader has to fold the log again (O(delta) per
    /// update otherwise: 0.5 s for 200,000 added quads).
    pub fn after_update(chunk: &Path, overlay: &Overlay, budget: Budget) -> Result<Kept, StoreError> {
        let disk = DiskState::read(chunk);
        let store = Store::open(chunk)?;
        let cache = budget.cache(&store);
        overlay.prepare_lookups();
        // O(graphs in the log): the sets and the index are shared, not
        // copied (`overlay::GraphDelta`), and the writer's next change
        // copies only what it touches.
        let view = view::Snapshot { store, overlay: overlay.clone(), cache };
        Ok(Kept { view, disk })
    }

    /// The version's name (`v3`) for `/health`.
    pub fn version(&self) -> String {
        let layout = &self.view.store.layout;
        layout.version.clone().unwrap_or_else(|| layout.version_dir.display().to_string())
    }
}

/// The latest snapshot of one chunk.
pub struct Snapshots {
    chunk: PathBuf,
    budget: Budget,
    latest: Mutex<Option<Arc<Kept>>>,
}

impl Snapshots {
    pub fn new(chunk: &Path, budget: Budget) -> Snapshots {
        Snapshots { chunk: chunk.to_path_buf(), budget, latest: Mutex::new(None) }
    }

    /// The snapshot for a reader starting now.
    pub fn current(&self) -> Result<Arc<Kept>, StoreError> {
        let disk = DiskState::read(&self.chunk);
        let mut latest = lock(&self.latest);
        if let Some(s) = latest.as_ref().filter(|s| s.disk == disk) {
            return Ok(Arc::clone(s));
        }
        // Read while holding the lock: concurrent requests wait for one
        // reload instead of each folding the log.
        let snapshot = Arc::new(Kept { view: self.budget.open(&self.chunk)?, disk });
        *latest = Some(Arc::clone(&snapshot));
        Ok(snapshot)
    }

    /// The snapshot kept now, if any, without looking at the disk.
    pub fn held(&self) -> Option<Arc<Kept>> {
        lock(&self.latest).clone()
    }

    pub fn chunk(&self) -> &Path {
        &self.chunk
    }

    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Bytes of decoded columns a snapshot keeps.
    pub fn cache_bytes(&self) -> usize {
        self.budget.cache_bytes()
    }

    /// Keeps `snapshot` (from [`Kept::after_update`]) for the next readers.
    pub fn install(&self, snapshot: Kept) {
        *lock(&self.latest) = Some(Arc::new(snapshot));
    }

    /// Forgets the kept snapshot, so the next reader reads the disk again
    /// (after this process's own write, which a reader must see even if the
    /// file's modification time did not move within the clock's resolution).
    pub fn invalidate(&self) {
        *lock(&self.latest) = None;
    }
}

/// A reader that panicked while holding the lock left the slot as it was:
/// a whole snapshot or none, never half of one.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
