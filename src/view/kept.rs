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
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

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
    /// A process's `--memory-limit`: 15/32 for decoded columns, as much for
    /// the store's mapped pages ([`ColumnCache::within`]).
    Memory(usize),
}

impl Budget {
    fn cache_bytes(self) -> usize {
        match self {
            Budget::Cache(bytes) => bytes,
            Budget::Memory(limit) => ColumnCache::share_of(limit),
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
    latest: Mutex<Latest>,
    /// Signalled when a write of this process ends (installed or not).
    written: Condvar,
}

#[derive(Default)]
struct Latest {
    kept: Option<Arc<Kept>>,
    /// A write of this process is between its append and its install.
    writing: bool,
}

/// How long a reader waits for this process's write to install its fold
/// before it reads the log itself: an fsync's time, with margin. Past it
/// (a disk that stalls) the reader folds the log, as it would without the
/// write.
const WAIT_FOR_WRITE: Duration = Duration::from_millis(500);

impl Snapshots {
    pub fn new(chunk: &Path, budget: Budget) -> Snapshots {
        Snapshots { chunk: chunk.to_path_buf(), budget, latest: Default::default(), written: Condvar::new() }
    }

    /// The snapshot for a reader starting now.
    ///
    /// While a write of this process is under way ([`Snapshots::writing`]),
    /// the disk moves ahead of the kept snapshot between the write's append
    /// and its install; a reader then waits for the install (which brings
    /// the fold it would otherwise make itself, O(delta)) and looks again.
    pub fn current(&self) -> Result<Arc<Kept>, StoreError> {
        let mut latest = lock(&self.latest);
        let mut waited = false;
        loop {
            let disk = DiskState::read(&self.chunk);
            if let Some(s) = latest.kept.as_ref().filter(|s| s.disk == disk) {
                return Ok(Arc::clone(s));
            }
            if latest.writing && !waited {
                let (next, _) = self
                    .written
                    .wait_timeout_while(latest, WAIT_FOR_WRITE, |l| l.writing)
                    .unwrap_or_else(|p| p.into_inner());
                latest = next;
                waited = true;
                continue;
            }
            // Read while holding the lock: concurrent requests wait for one
            // reload instead of each folding the log.
            let snapshot = Arc::new(Kept { view: self.budget.open(&self.chunk)?, disk });
            latest.kept = Some(Arc::clone(&snapshot));
            return Ok(snapshot);
        }
    }

    /// Marks a write of this process as under way, before it appends: until
    /// the returned guard installs the write's fold (or is dropped, which
    /// forgets the kept snapshot), readers that find the disk ahead wait for
    /// it instead of folding the log themselves.
    pub fn writing(&self) -> Writing<'_> {
        lock(&self.latest).writing = true;
        Writing { snapshots: self, done: false }
    }

    /// The snapshot kept now, if any, without looking at the disk.
    pub fn held(&self) -> Option<Arc<Kept>> {
        lock(&self.latest).kept.clone()
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
        self.replace(Some(Arc::new(snapshot)));
    }

    /// Forgets the kept snapshot, so the next reader reads the disk again
    /// (after this process's own write, which a reader must see even if the
    /// file's modification time did not move within the clock's resolution).
    pub fn invalidate(&self) {
        self.replace(None);
    }

    /// Either of the two above: also ends a write under way.
    fn replace(&self, kept: Option<Arc<Kept>>) {
        let mut latest = lock(&self.latest);
        *latest = Latest { kept, writing: false };
        drop(latest);
        self.written.notify_all();
    }
}

/// A write of this process under way (see [`Snapshots::writing`]).
pub struct Writing<'a> {
    snapshots: &'a Snapshots,
    done: bool,
}

impl Writing<'_> {
    /// The write's fold for the next readers (see [`Snapshots::install`]).
    pub fn install(mut self, snapshot: Kept) {
        self.done = true;
        self.snapshots.install(snapshot);
    }
}

impl Drop for Writing<'_> {
    /// A write that failed, or panicked, before installing: readers read the
    /// disk again.
    fn drop(&mut self) {
        if !self.done {
            self.snapshots.invalidate();
        }
    }
}

/// A reader that panicked while holding the lock left the slot as it was:
/// a whole snapshot or none, never half of one.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
