//! A corpus: a directory of chunks, side by side or nested a few levels
//! deep (`<root>/<name>/{v1,…,current,data.deltalog}`), and the commands
//! that run over all of them.
//!
//! Finding the chunks is the one rule here: a directory is a chunk when it
//! has a `current` link or a `vN/data.cottas`; the walk does not descend
//! into a chunk (its versions are not chunks) nor into hidden directories
//! (an interrupted compaction's temp dir), follows no symlinks out of the
//! root, and stops at a bounded depth, so a corpus root that is `/` by
//! mistake costs a bounded walk, not the disk.
//!
//! The summary of a chunk costs reading its log's frames and the footer of
//! its current base, never a row; `verify` over a corpus costs what `verify`
//! costs per chunk, on `jobs` threads.

pub mod export;
pub mod sql;
pub mod views;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::format::deltalog::BatchFrame;
use crate::store::log::{BatchState, Log};
use crate::store::versions::layout::{self, CURRENT, LOG};
use crate::store::versions::open::Store;
use crate::store::versions::{self as versions};
use crate::store::StoreError;
use crate::text::plural;
use crate::triage::verify::{self, Report, VerifyOptions};

/// How deep under the root chunks are looked for, unless asked otherwise.
pub const DEFAULT_DEPTH: usize = 4;

/// Whether `dir` is a chunk directory.
pub fn is_chunk(dir: &Path) -> bool {
    if std::fs::symlink_metadata(dir.join(CURRENT)).is_ok() {
        return true;
    }
    layout::versions(dir).is_ok_and(|v| v.iter().any(|(_, p)| p.join(layout::BASE).is_file()))
}

/// The chunk directories under `root` (itself included), at most
/// `max_depth` levels down, sorted by path.
pub fn find_chunks(root: &Path, max_depth: usize) -> Result<Vec<PathBuf>, StoreError> {
    if !root.is_dir() {
        let e = std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory");
        return Err(StoreError::io(root, e));
    }
    let mut chunks = Vec::new();
    let mut walk = walkdir::WalkDir::new(root).max_depth(max_depth).sort_by_file_name().into_iter();
    while let Some(entry) = walk.next() {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(root).to_path_buf();
            StoreError::io(
                &path,
                e.into_io_error().unwrap_or_else(|| std::io::Error::other("a symlink loop")),
            )
        })?;
        if !entry.file_type().is_dir() {
            continue;
        }
        let hidden = entry.depth() > 0 && entry.file_name().to_string_lossy().starts_with('.');
        if hidden {
            walk.skip_current_dir();
        } else if is_chunk(entry.path()) {
            chunks.push(entry.path().to_path_buf());
            walk.skip_current_dir();
        }
    }
    Ok(chunks)
}

/// The chunks a query of `target` reads when `target` is a corpus root;
/// `None` when it is itself a store (a chunk, a version dir, a file) or
/// holds no chunk, so that opening it says why it is not one.
pub fn chunks_of_root(target: &Path) -> Result<Option<Vec<PathBuf>>, StoreError> {
    if !target.is_dir() || target.join(layout::BASE).is_file() || is_chunk(target) {
        return Ok(None);
    }
    let found = find_chunks(target, DEFAULT_DEPTH)?;
    Ok((!found.is_empty()).then_some(found))
}

/// A chunk's name in a corpus: its path under the root (`.` for the root).
pub fn chunk_name(root: &Path, chunk: &Path) -> String {
    match chunk.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => chunk.display().to_string(),
    }
}

/// One line of `corpus list`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ChunkSummary {
    pub name: String,
    pub path: PathBuf,
    /// The version `current` names.
    pub current: Option<String>,
    pub versions: usize,
    /// Rows of the current base (from its footer).
    pub base_quads: Option<u64>,
    /// Log batches a reader applies over the base, and those the base's
    /// compacted-epoch marker hides.
    pub pending_batches: Option<usize>,
    pub shadowed_batches: Option<usize>,
    pub log_bytes: u64,
    /// Leftovers of interrupted operations (`gc` removes them).
    pub debris: usize,
    /// `ok`, or why the chunk does not open.
    pub status: String,
}

/// What `corpus list` shows for one chunk.
pub fn summarize(root: &Path, chunk: &Path) -> ChunkSummary {
    let mut s = ChunkSummary {
        name: chunk_name(root, chunk),
        path: chunk.to_path_buf(),
        current: None,
        versions: 0,
        base_quads: None,
        pending_batches: None,
        shadowed_batches: None,
        log_bytes: std::fs::metadata(chunk.join(LOG)).map_or(0, |m| m.len()),
        debris: 0,
        status: "ok".to_owned(),
    };
    match versions::list(chunk) {
        Ok(listing) => {
            s.current = listing.current;
            s.versions = listing.versions.len();
            s.debris = listing.debris.len();
        }
        Err(e) => s.status = e.to_string(),
    }
    // The footer and the log's frames say it all: no overlay is folded, so
    // no base row is looked up.
    match Store::open(chunk) {
        Ok(store) => summarize_log(&store, &mut s),
        Err(e) => note_error(&mut s, e),
    }
    s
}

/// The pending and shadowed batches of `store`'s log, and its tail's state.
fn summarize_log(store: &Store, s: &mut ChunkSummary) {
    s.base_quads = Some(store.base.num_rows());
    let seen = store.visibility();
    let Some(path) = store.layout.log.as_deref() else {
        (s.pending_batches, s.shadowed_batches) = (Some(0), Some(0));
        return;
    };
    let bytes = match Log::read_bytes(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            (s.pending_batches, s.shadowed_batches) = (Some(0), Some(0));
            return;
        }
        Err(e) => return note_error(s, e),
    };
    // Counted batch by batch: a chunk's summary holds the log's bytes (read,
    // never mapped: a writer may cut its tail meanwhile) and one batch.
    let mut counts = (0usize, 0usize); // (pending, shadowed)
    let tally = |c: &mut (usize, usize), f: &BatchFrame| match seen.of(f) {
        BatchState::Visible => c.0 += 1,
        BatchState::Shadowed => c.1 += 1,
    };
    let scanned = match Log::scan(path, &bytes, &mut |f| tally(&mut counts, &f)) {
        Ok(scanned) => scanned,
        Err(e) => return note_error(s, e),
    };
    if let Some(frames) = &scanned.legacy {
        counts = (0, 0);
        frames.iter().for_each(|f| tally(&mut counts, f));
    }
    if let Err(e) = scanned.tail.refuse_hidden(path, "refusing to answer without them") {
        return note_error(s, e);
    }
    (s.pending_batches, s.shadowed_batches) = (Some(counts.0), Some(counts.1));
    if let Some(d) = scanned.tail.damage() {
        s.status = format!(
            "torn log tail: {} at byte {} ({}); readers ignore {}",
            plural(d.len, "byte", "bytes"),
            d.offset,
            d.reason.as_str(),
            crate::text::noun(d.len, "it", "them")
        );
    }
}

/// The first reason a chunk does not open is the one shown.
fn note_error(s: &mut ChunkSummary, e: StoreError) {
    if s.status == "ok" {
        s.status = e.to_string();
    }
}

/// `verify` of one chunk of a corpus.
#[derive(Debug, serde::Serialize)]
pub struct ChunkReport {
    pub name: String,
    /// `Err`: verify could not run on this chunk (its message).
    #[serde(flatten)]
    pub outcome: ChunkOutcome,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkOutcome {
    Report(Report),
    Failed(String),
}

/// Verifies every chunk on up to `jobs` threads; reports in path order.
pub fn verify_all(root: &Path, chunks: &[PathBuf], opts: VerifyOptions<'_>, jobs: usize) -> Vec<ChunkReport> {
    in_parallel(chunks, jobs, |chunk| {
        let outcome = match verify::verify(chunk, opts) {
            Ok(report) => ChunkOutcome::Report(report),
            Err(e) => ChunkOutcome::Failed(e.to_string()),
        };
        ChunkReport { name: chunk_name(root, chunk), outcome }
    })
}

/// Compacts each chunk on up to `jobs` threads (each with `compact`'s own
/// guarantees: a failure flips nothing); results in the chunks' order.
pub fn compact_all(chunks: &[PathBuf], jobs: usize) -> Vec<Result<crate::compact::Compaction, StoreError>> {
    let opts = crate::compact::CompactOptions::default();
    in_parallel(chunks, jobs, |chunk| crate::compact::compact(chunk, &opts, |_| {}))
}

/// `f` of every item on up to `jobs` threads, in the items' order.
fn in_parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { return };
                let r = f(item);
                done.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}
