//! Compaction: fold base ⊕ visible delta into a fresh `vN+1`, then swap it in.
//!
//! The fold streams: base rows come out of `data.cottas` one row group at a
//! time, already in SPOG order, and are merged with the sorted added quads of
//! the overlay (removed quads and cleared graphs are skipped on the way), into
//! the same [`VersionSink`] import uses. Memory is one row group plus the
//! overlay, whatever the size of the base.
//!
//! Writers are not blocked while it folds. The fold works on a snapshot of the
//! log (its committed prefix); the writer lock is taken only for the swap:
//!
//! 1. re-read the log; its first `snapshot` bytes must be unchanged (the
//!    source-identity check the original compactor lacked), else abort;
//! 2. batches committed after the snapshot are *carried*: re-stamped with
//!    db_epoch = new marker + 1 (checksums recomputed). If there are any, the
//!    log becomes snapshot + carried (temp, fsync, rename, dir fsync) — a
//!    view that is right under the old marker *and* the new one;
//! 3. flip `current` to `vN+1` (temp symlink, rename, dir fsync);
//! 4. replace the log by header + carried (temp, fsync, rename, dir fsync).
//!
//! A crash anywhere leaves the pre-compaction view (current → old version) or
//! the post-compaction view (current → new), each including every
//! acknowledged write. An interrupted fold leaves `.vN.compact-tmp.<pid>`,
//! which `versions` reports and `gc` removes.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::format::deltalog::{self, Batch};
use crate::format::epoch::{self, EpochMarker};
use crate::store::base::writer::BaseOptions;
use crate::store::fsutil::{replace_symlink, sync_dir, unix_now, utc_timestamp, write_synced};
use crate::store::log::writer::{debug_pause, WriterLock};
use crate::store::log::{Log, Visibility};
use crate::store::sort::{decode_key_into, split_key, Sorter};
use crate::store::versions::layout::{self, Resolution, BASE, CURRENT, LOG, MARKER};
use crate::store::versions::open::Store;
use crate::store::versions::sink::{VersionSink, Written};
use crate::store::StoreError;
use crate::text::{noun, plural};
use crate::view::rows::{NetDelta, RowMerge};

#[derive(Clone, Debug)]
pub struct CompactOptions {
    pub base: BaseOptions,
    /// How long to wait for the writer lock at the swap.
    pub wait: Option<Duration>,
    /// Bytes of rows a fold may hold when the base is not in SPOG order and
    /// must be re-sorted; beyond it, sorted runs spill to the version's temp dir.
    pub memory_limit: usize,
    /// Set from another thread to stop: honoured until the new version is
    /// published (its temp dir is removed, nothing is flipped), not after.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl CompactOptions {
    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// `Err(Cancelled)` once cancellation was asked for.
    fn check_cancel(&self, chunk: &Path) -> Result<(), StoreError> {
        if self.cancelled() {
            return Err(StoreError::Cancelled { path: chunk.to_path_buf() });
        }
        Ok(())
    }
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions { base: BaseOptions::default(), wait: None, memory_limit: 1 << 30, cancel: None }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactPhase {
    Planning,
    Folding,
    Indexing,
    Publishing,
    Swapping,
    Done,
}

impl CompactPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactPhase::Planning => "planning",
            CompactPhase::Folding => "folding",
            CompactPhase::Indexing => "indexing",
            CompactPhase::Publishing => "publishing",
            CompactPhase::Swapping => "swapping",
            CompactPhase::Done => "done",
        }
    }
}

/// One progress event.
#[derive(Clone, Debug)]
pub struct CompactProgress {
    pub phase: CompactPhase,
    pub rows_done: u64,
    /// Base rows plus added quads: an upper bound on the rows written.
    pub rows_total: u64,
    pub bytes_written: u64,
    /// The epochs being folded: (old marker, new marker).
    pub epochs: (Option<u64>, u64),
}

/// What a compaction will do (all `--dry-run` prints).
#[derive(Clone, Debug)]
pub struct CompactPlan {
    pub chunk: PathBuf,
    pub from_version: String,
    pub to_version: String,
    pub old_marker: Option<u64>,
    pub new_marker: u64,
    pub batches_folded: usize,
    pub batches_shadowed: usize,
    /// Lowest and highest db_epoch among the folded batches.
    pub epoch_range: Option<(u64, u64)>,
    pub adds: usize,
    pub removes: usize,
    pub graph_ops: usize,
    pub base_rows: u64,
    /// Committed bytes of the log in the snapshot, and what follows them.
    pub log_committed: u64,
    pub log_leftover: u64,
}

impl CompactPlan {
    pub fn nothing_to_fold(&self) -> bool {
        self.batches_folded == 0
    }

    /// Nothing to fold, and the log holds only batches an earlier
    /// compaction folded (it was killed before emptying the log), with no
    /// torn tail: [`compact`] drops them. The one test of it, for every
    /// front end.
    pub fn finishes_truncation(&self) -> bool {
        self.nothing_to_fold() && self.batches_shadowed > 0 && self.log_leftover == 0
    }

    /// Whether [`compact`] would change anything.
    pub fn has_work(&self) -> bool {
        !self.nothing_to_fold() || self.finishes_truncation()
    }
}

impl std::fmt::Display for CompactPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let marker = |m: Option<u64>| m.map_or("none".to_string(), |m| m.to_string());
        writeln!(f, "chunk:     {}", self.chunk.display())?;
        writeln!(
            f,
            "base:      {} ({}, marker {})",
            self.from_version,
            plural(self.base_rows, "quad", "quads"),
            marker(self.old_marker)
        )?;
        match self.epoch_range {
            Some((lo, hi)) => writeln!(
                f,
                "fold:      {}, epochs {lo}..={hi}: +{} \u{2212}{}, {} ({} of log)",
                plural(self.batches_folded, "batch", "batches"),
                self.adds,
                self.removes,
                plural(self.graph_ops, "graph op", "graph ops"),
                plural(self.log_committed, "byte", "bytes")
            )?,
            None => writeln!(f, "fold:      nothing (no visible batch in the log)")?,
        }
        if self.batches_shadowed > 0 {
            writeln!(
                f,
                "shadowed:  {} at or below the marker {} already folded; dropped",
                plural(self.batches_shadowed, "batch", "batches"),
                noun(self.batches_shadowed, "is", "are")
            )?;
        }
        if self.log_leftover > 0 {
            writeln!(
                f,
                "leftover:  {} after the log's last batch; kept in a cut file",
                plural(self.log_leftover, "uncommitted byte", "uncommitted bytes")
            )?;
        }
        if self.nothing_to_fold() {
            return write!(f, "result:    no new version; `current` stays {}", self.from_version);
        }
        write!(f, "result:    {} with marker {}; `current` flips to it", self.to_version, self.new_marker)
    }
}

#[derive(Clone, Debug)]
pub struct CompactSummary {
    pub plan: CompactPlan,
    pub version_dir: PathBuf,
    pub rows: u64,
    pub bytes: u64,
    /// Batches committed during the fold and carried into the new log.
    pub carried: usize,
    pub seconds: f64,
    /// Time the writer lock was held.
    pub lock_held: Duration,
}

impl std::fmt::Display for CompactSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "compact: OK {} -> {}: {}, {}, marker {}, {} folded, {} carried; {:.2}s (writer lock held {:.1} ms)",
            self.plan.from_version,
            self.plan.to_version,
            plural(self.rows, "quad", "quads"),
            plural(self.bytes, "byte", "bytes"),
            self.plan.new_marker,
            plural(self.plan.batches_folded, "batch", "batches"),
            self.carried,
            self.seconds,
            self.lock_held.as_secs_f64() * 1e3
        )
    }
}

/// The log as the fold saw it (an absent log reads as an empty one). Damage
/// that hides committed batches stops the compaction: folding the batches
/// before it and rewriting the log would drop the ones after it.
fn read_log(path: &Path) -> Result<Log, StoreError> {
    let log = Log::read_or_empty(path)?;
    log.refuse_hidden("not compacting")?;
    Ok(log)
}

fn chunk_store(chunk: &Path) -> Result<Store, StoreError> {
    let store = Store::open(chunk)?;
    if !matches!(store.layout.resolution, Resolution::ViaCurrent | Resolution::HighestVersion) {
        return Err(StoreError::not_a_store(
            chunk,
            "compaction works on a chunk dir (holding `current` and data.deltalog)",
        ));
    }
    Ok(store)
}

fn make_plan(chunk: &Path, store: &Store, snap: &Log) -> Result<CompactPlan, StoreError> {
    let old = store.visibility().marker();
    let visible: Vec<&Batch> = snap.visible(store.visibility()).map(|f| &f.batch).collect();
    let (mut adds, mut removes, mut graph_ops) = (0, 0, 0);
    for b in &visible {
        let (a, r, g) = crate::store::log::writer::count_ops(&b.entries);
        (adds, removes, graph_ops) = (adds + a, removes + r, graph_ops + g);
    }
    let lo = visible.iter().map(|b| b.epoch).min();
    let hi = visible.iter().map(|b| b.epoch).max();
    let next = layout::next_version(chunk)?;
    Ok(CompactPlan {
        chunk: chunk.to_path_buf(),
        from_version: store
            .layout
            .version
            .clone()
            .unwrap_or_else(|| store.layout.version_dir.display().to_string()),
        to_version: format!("v{next}"),
        old_marker: old,
        new_marker: old.unwrap_or(0).max(hi.unwrap_or(0)),
        batches_folded: visible.len(),
        batches_shadowed: snap.frames.len() - visible.len(),
        epoch_range: lo.zip(hi),
        adds,
        removes,
        graph_ops,
        base_rows: store.base.num_rows(),
        log_committed: snap.committed_len(),
        log_leftover: snap.bytes.len() as u64 - snap.committed_len(),
    })
}

/// What a compaction of `chunk` would fold, without writing anything.
pub fn plan(chunk: &Path) -> Result<CompactPlan, StoreError> {
    let store = chunk_store(chunk)?;
    let snap = read_log(&chunk.join(LOG))?;
    make_plan(chunk, &store, &snap)
}

/// What [`compact`] did.
#[derive(Clone, Debug)]
pub enum Compaction {
    /// The visible batches were folded into a new version and `current`
    /// flipped to it.
    Folded(CompactSummary),
    /// No visible batch: no version was written. `finished` is set when the
    /// log still held batches an earlier compaction had folded (it was
    /// killed before truncating the log) and this run dropped them.
    NothingToFold { plan: CompactPlan, finished: Option<FinishedTruncation> },
}

/// Folded batches dropped from the log, and where their bytes were saved.
#[derive(Clone, Debug)]
pub struct FinishedTruncation {
    pub batches: usize,
    pub saved_to: PathBuf,
}

impl Compaction {
    /// The summary of a fold; `None` when there was nothing to fold.
    pub fn folded(&self) -> Option<&CompactSummary> {
        match self {
            Compaction::Folded(s) => Some(s),
            Compaction::NothingToFold { .. } => None,
        }
    }
}

impl std::fmt::Display for Compaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compaction::Folded(summary) => write!(f, "{summary}"),
            Compaction::NothingToFold { plan, finished: Some(t) } => write!(
                f,
                "compact: nothing to fold; the log still held {} already folded into {} (a compaction stopped before truncating it): log emptied, their bytes saved to {}",
                plural(t.batches, "batch", "batches"),
                plan.from_version,
                t.saved_to.display()
            ),
            Compaction::NothingToFold { plan, finished: None } => write!(
                f,
                "compact: nothing to fold ({} has no visible batch); nothing written",
                plan.chunk.display()
            ),
        }
    }
}

/// Runs a compaction. `progress` is called at each phase and row group.
/// With nothing to fold, no version is written; what a killed compaction
/// left unfinished (its temp dir, the log's folded batches) is finished.
pub fn compact(
    chunk: &Path,
    opts: &CompactOptions,
    progress: impl FnMut(&CompactProgress),
) -> Result<Compaction, StoreError> {
    let store = chunk_store(chunk)?;
    let snap = read_log(&chunk.join(LOG))?;
    let plan = make_plan(chunk, &store, &snap)?;
    if !plan.nothing_to_fold() {
        return fold_and_swap(chunk, store, snap, plan, opts, progress).map(Compaction::Folded);
    }
    drop((store, snap));
    crate::store::versions::remove_dead_debris(chunk)?;
    let finished = if plan.finishes_truncation() { drop_folded_batches(chunk, opts.wait)? } else { None };
    Ok(Compaction::NothingToFold { plan, finished })
}

fn fold_and_swap(
    chunk: &Path,
    store: Store,
    mut snap: Log,
    plan: CompactPlan,
    opts: &CompactOptions,
    mut progress: impl FnMut(&CompactProgress),
) -> Result<CompactSummary, StoreError> {
    let started = Instant::now();
    let log_path = chunk.join(LOG);
    let epochs = (plan.old_marker, plan.new_marker);
    let event = |phase, rows_done, rows_total, bytes_written| CompactProgress {
        phase,
        rows_done,
        rows_total,
        bytes_written,
        epochs,
    };
    progress(&event(CompactPhase::Planning, 0, 0, 0));
    opts.check_cancel(chunk)?;

    // What killed compactions left behind (their processes are gone).
    crate::store::versions::remove_dead_debris(chunk)?;
    let tmp = chunk.join(format!(".{}.compact-tmp.{}", plan.to_version, std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
    let result = fold_into(&tmp, &store, &mut snap, opts, &mut |done, total, bytes| {
        progress(&event(CompactPhase::Folding, done, total, bytes))
    });
    let written = match result {
        Ok(w) => w,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(match e {
                StoreError::Cancelled { .. } => StoreError::Cancelled { path: chunk.to_path_buf() },
                e => e,
            });
        }
    };
    progress(&event(CompactPhase::Indexing, written.rows, written.rows, written.base_bytes));
    let finished = write_synced(&tmp.join(MARKER), &epoch::encode(&EpochMarker::new(plan.new_marker)))
        .map_err(|e| StoreError::io(&tmp.join(MARKER), e))
        .and_then(|()| write_summary(&tmp, &plan, &written))
        .and_then(|()| sync_dir(&tmp).map_err(|e| StoreError::io(&tmp, e)));
    if let Err(e) = finished {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }

    progress(&event(CompactPhase::Publishing, written.rows, written.rows, written.base_bytes));
    debug_pause("compact-before-publish");
    // The last moment a cancel is honoured: after the rename the version
    // exists, and stopping would leave it unflipped.
    if let Err(e) = opts.check_cancel(chunk) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let version_dir = chunk.join(&plan.to_version);
    if version_dir.exists() {
        let _ = fs::remove_dir_all(&tmp);
        return Err(StoreError::raced(
            &version_dir,
            "appeared while compacting (another compaction?); nothing was swapped",
        ));
    }
    fs::rename(&tmp, &version_dir).map_err(|e| StoreError::io(&version_dir, e))?;
    sync_dir(chunk).map_err(|e| StoreError::io(chunk, e))?;

    progress(&event(CompactPhase::Swapping, written.rows, written.rows, written.base_bytes));
    debug_pause("compact-before-lock");
    let lock = WriterLock::acquire(chunk, opts.wait.or(Some(Duration::from_secs(30))))?;
    let locked_at = Instant::now();
    let carried = match swap(chunk, &log_path, &snap, &plan) {
        Ok(c) => c,
        Err(e) => {
            // current still points at the old version (the swap checks first).
            if fs::read_link(chunk.join(CURRENT)).ok().as_deref() != Some(Path::new(&plan.to_version)) {
                let _ = fs::remove_dir_all(&version_dir);
            }
            return Err(e);
        }
    };
    let lock_held = locked_at.elapsed();
    drop(lock);
    progress(&event(CompactPhase::Done, written.rows, written.rows, written.base_bytes));
    Ok(CompactSummary {
        plan,
        version_dir,
        rows: written.rows,
        bytes: written.base_bytes,
        carried,
        seconds: started.elapsed().as_secs_f64(),
        lock_held,
    })
}

/// Finishes a compaction killed between flipping `current` and truncating
/// the log (the last two steps of [`swap`]): the log then still holds the
/// batches folded into `current`, invisible, and `verify` warns
/// `log-shadowed` until a later write gives a compaction something to fold.
/// When the log holds nothing but such batches (none above the marker, no
/// torn tail), under the writer lock, their bytes are saved beside the log
/// (`data.deltalog.cut-at-8.<time>`: the warning also covers writes that
/// were lost, so the evidence is kept) and the log is emptied. `None` when
/// there is nothing to finish (planned again under the lock: a write may
/// have come in since the caller looked).
fn drop_folded_batches(
    chunk: &Path,
    wait: Option<Duration>,
) -> Result<Option<FinishedTruncation>, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait.or(Some(Duration::from_secs(30))))?;
    let store = chunk_store(chunk)?;
    let log_path = chunk.join(LOG);
    let snap = read_log(&log_path)?;
    let plan = make_plan(chunk, &store, &snap)?;
    if !plan.finishes_truncation() {
        return Ok(None);
    }
    let header = deltalog::encode_header();
    let saved_to = crate::store::log::writer::save_cut_bytes(chunk, &snap.bytes, header.len() as u64)?;
    replace_file(chunk, &log_path, &header)?;
    Ok(Some(FinishedTruncation { batches: plan.batches_shadowed, saved_to }))
}

/// Steps 1–4 of the module banner, under the writer lock. Returns the
/// number of carried batches.
fn swap(chunk: &Path, log_path: &Path, snap: &Log, plan: &CompactPlan) -> Result<usize, StoreError> {
    let live = fs::read_link(chunk.join(CURRENT)).ok();
    if live.is_some() && live.as_deref() != Some(Path::new(&plan.from_version)) {
        return Err(StoreError::raced(
            &chunk.join(CURRENT),
            format!(
                "`current` moved from {} to {} while compacting (another compaction or a rollback); nothing was swapped",
                plan.from_version,
                live.as_deref().map(|p| p.display().to_string()).unwrap_or_default()
            ),
        ));
    }
    // Most often nothing was appended meanwhile: the bytes are the
    // snapshot's, and decoding them again (under the writer lock, beside the
    // snapshot) would double the log's memory and hold writers off for it.
    let bytes = match fs::read(log_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => deltalog::encode_header(),
        Err(e) => return Err(StoreError::io(log_path, e)),
    };
    let decoded;
    let now = if bytes == snap.bytes {
        snap
    } else {
        decoded = Log::decode(log_path, bytes)?;
        decoded.refuse_hidden("not compacting")?;
        &decoded
    };
    let prefix = snap.committed_len() as usize;
    if now.bytes.len() < prefix || now.bytes[..prefix] != snap.bytes[..prefix] {
        return Err(StoreError::format_anywhere(
            log_path,
            "the log's committed bytes changed while compacting (it was cut or rewritten, not appended to); nothing was swapped, run the compaction again",
        ));
    }
    let old = plan.old_marker;
    let carried: Vec<Batch> = now
        .visible(Visibility::over(old))
        .filter(|f| f.offset >= snap.committed_len())
        .map(|f| &f.batch)
        .map(|b| Batch { epoch: b.epoch.max(plan.new_marker + 1), ..b.clone() })
        .collect();
    if now.bytes.len() as u64 > now.committed_len() {
        // A torn tail from a writer that died: keep it, as the writer would.
        crate::store::log::writer::save_cut_bytes(chunk, &now.bytes, now.committed_len())?;
    }
    let encode = |batches: &[Batch]| {
        let mut out = deltalog::encode_header();
        for b in batches {
            out.extend_from_slice(&deltalog::encode_batch(b, now.transport));
        }
        out
    };
    if !carried.is_empty() {
        // Right under both markers: folded batches (≤ new marker) plus the
        // carried ones above it.
        debug_pause("compact-before-log-rewrite");
        let mut both = snap.bytes[..prefix].to_vec();
        for b in &carried {
            both.extend_from_slice(&deltalog::encode_batch(b, now.transport));
        }
        replace_file(chunk, log_path, &both)?;
    }
    debug_pause("compact-before-flip");
    replace_symlink(chunk, CURRENT, &plan.to_version).map_err(|e| StoreError::io(&chunk.join(CURRENT), e))?;
    debug_pause("compact-before-truncate");
    replace_file(chunk, log_path, &encode(&carried))?;
    debug_pause("compact-after-truncate");
    Ok(carried.len())
}

/// Replaces `path` atomically: temp file, fsync, rename, directory fsync.
fn replace_file(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!("{name}.tmp.{}", std::process::id()));
    write_synced(&tmp, bytes).map_err(|e| StoreError::write(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    sync_dir(dir).map_err(|e| StoreError::io(dir, e))
}

/// The merge of base rows and the log's net effect ([`NetDelta`], sorted
/// through the external sort) into `dir`. A base in SPOG order (every base
/// this program writes) streams through the merge; any other order (factoidal's `--row-order cs`, a DuckDB file) is
/// found at its first row out of order, and the fold starts again through
/// the external sort, within `opts.memory_limit`.
fn fold_into(
    dir: &Path,
    store: &Store,
    snap: &mut Log,
    opts: &CompactOptions,
    progress: &mut dyn FnMut(u64, u64, u64),
) -> Result<Written, StoreError> {
    let spill = dir.join(".spill");
    fs::create_dir_all(&spill).map_err(|e| StoreError::write(&spill, e))?;
    // The log's net effect, sorted; its keys are released before the fold.
    let net = NetDelta::build(&snap.frames, store.visibility(), &spill, opts.memory_limit / 2)
        .map_err(|e| StoreError::write(&spill, e))?;
    // The decoded batches are not needed past this point (the swap compares
    // the log's bytes, and decodes only a log that changed): a delta of a
    // million quads decodes to a few hundred MB.
    snap.frames = Vec::new();
    let fold = Fold { dir, spill: &spill, store, net: &net, opts };
    let written = match fold_sorted(&fold, progress)? {
        Some(w) => w,
        None => {
            // The abandoned sink's writer has stopped (see its Drop).
            let base = dir.join(BASE);
            fs::remove_file(&base).map_err(|e| StoreError::write(&base, e))?;
            fold_by_sorting(&fold, progress)?
        }
    };
    fs::remove_dir_all(&spill).map_err(|e| StoreError::write(&spill, e))?;
    Ok(written)
}

/// What a fold reads and where it writes.
#[derive(Clone, Copy)]
struct Fold<'a> {
    dir: &'a Path,
    spill: &'a Path,
    store: &'a Store,
    net: &'a NetDelta,
    opts: &'a CompactOptions,
}

/// Streams base rows in file order through the view's row merge; `None` at
/// the first base row that is not after the previous one.
fn fold_sorted(fold: &Fold, progress: &mut dyn FnMut(u64, u64, u64)) -> Result<Option<Written>, StoreError> {
    let Fold { dir, spill, store, net, opts } = *fold;
    let mut sink = VersionSink::create(dir, spill, &opts.base, opts.memory_limit / 4)?;
    let base_path = dir.join(BASE);
    let sink_err = |e: std::io::Error| StoreError::write(&base_path, e);
    let mut merge = RowMerge::new(net).map_err(|e| StoreError::write(spill, e))?;
    let total = store.base.num_rows() + net.adds;
    // The previous base row; SPOG order is column-wise byte order (the sink
    // checks the merged stream again, by the sort key).
    let (mut last, mut seen_one): ([Vec<u8>; 4], bool) = Default::default();
    let in_order = each_base_row(
        store,
        |row| {
            if seen_one && row <= std::array::from_fn::<&[u8], 4, _>(|c| &last[c]) {
                return Ok(false);
            }
            seen_one = true;
            opts.check_cancel(dir)?;
            for (c, cell) in last.iter_mut().zip(row) {
                c.clear();
                c.extend_from_slice(cell);
            }
            merge.push_base(row, |r| sink.push(r)).map_err(sink_err)?;
            Ok(true)
        },
        |rows| progress(rows, total, fs::metadata(&base_path).map(|m| m.len()).unwrap_or(0)),
    )?;
    if !in_order {
        return Ok(None);
    }
    merge.finish(|r| sink.push(r)).map_err(sink_err)?;
    let written = sink.finish()?;
    progress(written.rows, total, written.base_bytes);
    Ok(Some(written))
}

/// A base in another order: every base row through the external sort (which
/// also drops repeats), then the sorted rows through the same merge as
/// [`fold_sorted`].
fn fold_by_sorting(fold: &Fold, progress: &mut dyn FnMut(u64, u64, u64)) -> Result<Written, StoreError> {
    let Fold { dir, spill, store, net, opts } = *fold;
    let base_path = dir.join(BASE);
    let spill_err = |e: std::io::Error| StoreError::write(spill, e);
    let total = store.base.num_rows() + net.adds;
    let mut sorter = Sorter::new(opts.memory_limit / 2, spill);
    each_base_row(
        store,
        |row| {
            opts.check_cancel(dir)?;
            sorter.push(row).map_err(spill_err).map(|()| true)
        },
        |_| progress(0, total, 0),
    )?;
    let mut sink = VersionSink::create(dir, spill, &opts.base, opts.memory_limit / 4)?;
    let mut merge = RowMerge::new(net).map_err(spill_err)?;
    let mut cols: [Vec<u8>; 4] = Default::default();
    sorter
        .finish(|key| {
            // The sort yields distinct rows in SPOG order.
            if let Some(row) = split_key(key) {
                return merge.push_base(row, |r| sink.push_unchecked(r, false));
            }
            cols.iter_mut().for_each(Vec::clear);
            let at = decode_key_into(key, &mut cols);
            merge.push_base(std::array::from_fn(|c| &cols[c][at[c]..]), |r| sink.push_unchecked(r, false))
        })
        .map_err(|e| StoreError::write(&base_path, e))?;
    merge.finish(|r| sink.push_unchecked(r, false)).map_err(|e| StoreError::write(&base_path, e))?;
    let written = sink.finish()?;
    progress(written.rows, total, written.base_bytes);
    Ok(written)
}

/// Calls `on_row` with every base row in file order, row group by row group,
/// and `on_group` (with the base rows seen so far) after each group. Stops,
/// returning `false`, when `on_row` does.
fn each_base_row(
    store: &Store,
    mut on_row: impl FnMut([&[u8]; 4]) -> Result<bool, StoreError>,
    mut on_group: impl FnMut(u64),
) -> Result<bool, StoreError> {
    let mut seen = 0u64;
    for rg in 0..store.base.num_row_groups() {
        let cols: Vec<_> = (0..4).map(|c| store.base.read_column(rg, c)).collect::<Result<_, _>>()?;
        #[allow(clippy::needless_range_loop)] // one row across four columns
        for i in 0..cols[0].len() {
            if !on_row(std::array::from_fn(|c| cols[c][i].data()))? {
                return Ok(false);
            }
        }
        seen += cols[0].len() as u64;
        on_group(seen);
    }
    Ok(true)
}

fn write_summary(dir: &Path, plan: &CompactPlan, w: &Written) -> Result<(), StoreError> {
    let suffixes: Vec<&str> = crate::store::sidecars::SUFFIXES
        .iter()
        .copied()
        .filter(|s| dir.join(format!("{BASE}{s}")).exists())
        .collect();
    let v = serde_json::json!({
        "artifact_type": "cottas-tui-cottas",
        "produced_by": "compaction",
        "version": plan.to_version,
        "compacted_from": plan.from_version,
        "compacted_epoch": plan.new_marker,
        "batches_folded": plan.batches_folded,
        "quad_count": w.rows,
        "distinct_quad_count": w.rows,
        "graph_count": w.graphs,
        "index": "spog",
        "row_group_sizes": w.rg_sizes,
        "sidecars_built": suffixes,
        "files": {"data_cottas": BASE},
        "created": utc_timestamp(unix_now()),
        "writer": format!("cottas-tui {}", env!("CARGO_PKG_VERSION")),
    });
    let path = dir.join("summary.json");
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    write_synced(&path, text.as_bytes()).map_err(|e| StoreError::write(&path, e))
}
