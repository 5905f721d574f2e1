//! The versions of a chunk: listing, garbage collection and rollback, and
//! the debris interrupted imports and compactions leave behind.
//!
//! Rules that protect the live view: `gc` never removes `current` or any
//! version newer than it, and removes nothing without confirmation;
//! `rollback` refuses while the log holds batches, because an older base
//! paired with a post-compaction log is a wrong view (docs/format.md §11),
//! unless forced after being told what the log holds. Both take the writer
//! lock, so they never interleave with an append or a compaction's swap.

pub mod layout;
pub mod open;
pub mod sink;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::fsutil::{replace_symlink, utc_timestamp};
use crate::store::log::writer::WriterLock;
use crate::store::versions::open::read_marker;
use crate::store::StoreError;
use layout::{BASE, CURRENT, LOG, MARKER};

#[derive(Clone, Debug, serde::Serialize)]
pub struct VersionInfo {
    pub name: String,
    pub number: u64,
    pub path: PathBuf,
    pub is_current: bool,
    /// Has a base whose footer reads and a marker that parses (or none).
    pub complete: bool,
    pub quads: Option<u64>,
    pub row_groups: Option<usize>,
    pub marker: Option<u64>,
    /// Why it is not complete.
    pub problem: Option<String>,
    /// The problem is a changed footer that the version's footer copy can
    /// put back (`repair restore-footer`).
    pub footer_restorable: bool,
    pub bytes: u64,
    pub created: Option<String>,
}

/// Something an interrupted operation left behind.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Debris {
    pub path: PathBuf,
    pub what: &'static str,
    /// The process that made it, when its name carries one and it still runs.
    pub live_pid: Option<u32>,
    pub bytes: u64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Listing {
    pub chunk: PathBuf,
    pub current: Option<String>,
    pub versions: Vec<VersionInfo>,
    pub debris: Vec<Debris>,
}

fn dir_size(p: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(p) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(p).map(|rd| rd.flatten().map(|e| dir_size(&e.path())).sum()).unwrap_or(0)
}

fn created(dir: &Path) -> Option<String> {
    let from_summary = fs::read(dir.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("created").and_then(|c| c.as_str()).map(str::to_owned));
    from_summary.or_else(|| {
        let m = fs::metadata(dir.join(BASE)).or_else(|_| fs::metadata(dir)).ok()?;
        let secs = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
        Some(utc_timestamp(secs))
    })
}

fn inspect_version(number: u64, path: PathBuf, current: Option<&str>) -> VersionInfo {
    let name = format!("v{number}");
    let mut info = VersionInfo {
        is_current: current == Some(name.as_str()),
        name,
        number,
        complete: false,
        quads: None,
        row_groups: None,
        marker: None,
        problem: None,
        footer_restorable: false,
        bytes: dir_size(&path),
        created: created(&path),
        path,
    };
    // Against the digests written with it, as every reader opens it: a
    // footer that changed since is a problem here too.
    let base_path = info.path.join(BASE);
    let digests = crate::store::base::digests::read(&info.path);
    let opened = match &digests {
        Ok(d) => crate::store::base::Base::open_checked(&base_path, d.as_ref().map(|d| &d.base)),
        Err(_) => crate::store::base::Base::open(&base_path),
    };
    if let (Err(_), Ok(Some(d))) = (&opened, &digests) {
        let raw = crate::store::sidecars::checked::map_file(&base_path);
        info.footer_restorable = raw.is_ok_and(|raw| {
            crate::store::base::footer_copy::check_recorded(&base_path, (*raw).as_ref(), &d.base)
                .is_err_and(|damage| damage.restorable)
        });
    }
    match opened {
        Ok(base) => {
            info.quads = Some(base.num_rows());
            info.row_groups = Some(base.num_row_groups());
        }
        Err(e) => info.problem = Some(e.to_string()),
    }
    match read_marker(&info.path.join(MARKER)) {
        Ok(m) => info.marker = m.map(|m| m.epoch),
        Err(e) => info.problem = info.problem.take().or(Some(e.to_string())),
    }
    info.complete = info.problem.is_none();
    info
}

/// Whether the process `pid` still runs (the pid in a temp file's name).
pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// `.vN.compact-tmp.<pid>`, `.vN.rebuild-tmp.<pid>`, `.current.tmp.<pid>`, `data.deltalog.tmp.<pid>`,
/// `.data.deltalog.new.<pid>`: what each is, and the pid in its name.
fn classify(name: &str) -> Option<(&'static str, Option<u32>)> {
    let pid = |s: &str| s.rsplit('.').next().and_then(|p| p.parse::<u32>().ok());
    if name.starts_with('.') && name.contains(".compact-tmp.") {
        Some(("interrupted compaction (temp version dir)", pid(name)))
    } else if name.starts_with('.') && name.contains(crate::store::sidecars::rebuild::TEMP_INFIX) {
        Some(("interrupted sidecar rebuild (temp dir)", pid(name)))
    } else if name.starts_with(".current.tmp.") {
        Some(("interrupted `current` swap (temp symlink)", pid(name)))
    } else if name.starts_with(&format!("{LOG}.tmp.")) || name.starts_with(&format!(".{LOG}.new.")) {
        Some(("interrupted log replacement (temp file)", pid(name)))
    } else {
        None
    }
}

pub fn list(chunk: &Path) -> Result<Listing, StoreError> {
    let current = fs::read_link(chunk.join(CURRENT)).ok().map(|t| t.display().to_string());
    let versions = layout::versions(chunk)?
        .into_iter()
        .map(|(n, p)| inspect_version(n, p, current.as_deref()))
        .collect();
    let mut debris = Vec::new();
    for e in fs::read_dir(chunk).map_err(|e| StoreError::io(chunk, e))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some((what, pid)) = classify(&name) {
            let live_pid = pid.filter(|&p| pid_alive(p) && p != std::process::id());
            debris.push(Debris { bytes: dir_size(&e.path()), path: e.path(), what, live_pid });
        }
    }
    debris.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Listing { chunk: chunk.to_path_buf(), current, versions, debris })
}

/// What `gc` would remove.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GcPlan {
    pub remove_versions: Vec<VersionInfo>,
    pub keep: Vec<String>,
    pub remove_debris: Vec<Debris>,
}

impl GcPlan {
    pub fn bytes(&self) -> u64 {
        self.remove_versions.iter().map(|v| v.bytes).sum::<u64>()
            + self.remove_debris.iter().map(|d| d.bytes).sum::<u64>()
    }
    pub fn is_empty(&self) -> bool {
        self.remove_versions.is_empty() && self.remove_debris.is_empty()
    }
}

/// Keeps `current`, everything newer, and the newest `keep` versions at or
/// below it (`keep` counts `current`); with `keep` `None`, every version
/// (only leftovers of interrupted operations go). Debris of live processes
/// is kept.
pub fn gc_plan(chunk: &Path, keep: Option<usize>) -> Result<GcPlan, StoreError> {
    let listing = list(chunk)?;
    let Some(keep) = keep else {
        return Ok(GcPlan {
            remove_versions: Vec::new(),
            keep: listing.versions.iter().map(|v| v.name.clone()).collect(),
            remove_debris: listing.debris.into_iter().filter(|d| d.live_pid.is_none()).collect(),
        });
    };
    let current_n = listing.current.as_deref().and_then(layout::version_number);
    let Some(current_n) = current_n else {
        return Err(StoreError::refused(
            &chunk.join(CURRENT),
            "no `current` link: gc will not guess which version is live (`repair reset-current` sets it)",
        ));
    };
    let mut older: Vec<&VersionInfo> = listing.versions.iter().filter(|v| v.number <= current_n).collect();
    older.sort_by_key(|v| std::cmp::Reverse(v.number));
    let kept_below: Vec<u64> = older.iter().take(keep.max(1)).map(|v| v.number).collect();
    let (keep_v, remove): (Vec<&VersionInfo>, Vec<&VersionInfo>) =
        listing.versions.iter().partition(|v| v.number >= current_n || kept_below.contains(&v.number));
    Ok(GcPlan {
        remove_versions: remove.into_iter().cloned().collect(),
        keep: keep_v.iter().map(|v| v.name.clone()).collect(),
        remove_debris: listing.debris.into_iter().filter(|d| d.live_pid.is_none()).collect(),
    })
}

/// Removes what the plan lists, under the writer lock. The plan is made
/// again under the lock, so nothing that became live since is removed.
pub fn gc_apply(chunk: &Path, keep: Option<usize>, wait: Option<Duration>) -> Result<GcPlan, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait)?;
    let plan = gc_plan(chunk, keep)?;
    for v in &plan.remove_versions {
        fs::remove_dir_all(&v.path).map_err(|e| StoreError::io(&v.path, e))?;
    }
    for d in &plan.remove_debris {
        remove_path(&d.path)?;
    }
    crate::store::fsutil::sync_dir(chunk).map_err(|e| StoreError::io(chunk, e))?;
    Ok(plan)
}

/// What the log holds, for `rollback`'s refusal.
#[derive(Clone, Debug)]
pub struct LogContents {
    /// Committed batches a reader sees.
    pub batches: usize,
    /// Valid batches behind damage: committed writes no reader reaches until
    /// `repair truncate-torn-tail` cuts them off (keeping a copy).
    pub hidden: usize,
    pub entries: usize,
    pub epochs: Option<(u64, u64)>,
    pub bytes: u64,
}

/// The log as the log module reads it (one decoder, one set of tail rules).
pub fn log_contents(chunk: &Path) -> Result<LogContents, StoreError> {
    let log = crate::store::log::Log::read_or_empty(&chunk.join(LOG))?;
    let lo = log.frames.iter().map(|b| b.batch.epoch).min();
    let hi = log.frames.iter().map(|b| b.batch.epoch).max();
    Ok(LogContents {
        batches: log.frames.len(),
        hidden: log.tail.hidden().len(),
        entries: log.frames.iter().map(|b| b.batch.entries.len()).sum(),
        epochs: lo.zip(hi),
        bytes: log.bytes.len() as u64,
    })
}

/// Points `current` at `to`. Refuses a missing or incomplete version, and a
/// non-empty log unless `force`.
pub fn rollback(chunk: &Path, to: &str, force: bool, wait: Option<Duration>) -> Result<String, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait)?;
    let listing = list(chunk)?;
    let Some(v) = listing.versions.iter().find(|v| v.name == to) else {
        return Err(StoreError::not_a_store(&chunk.join(to), "no such version directory"));
    };
    if !v.complete {
        return Err(StoreError::incomplete(
            &v.path,
            format!("is not a complete version: {}", v.problem.clone().unwrap_or_default()),
        ));
    }
    let log = log_contents(chunk)?;
    if log.hidden > 0 && !force {
        return Err(StoreError::refused(
            &chunk.join(LOG),
            format!(
                "has damage with {} behind it: committed writes that would count as {to}'s once the damage is cut. \
                 `cottas-tui verify` shows the damage, `cottas-tui repair truncate-torn-tail` cuts it (keeping a copy); \
                 or pass --force to accept that",
                crate::text::plural(log.hidden, "valid batch", "valid batches"),
            ),
        ));
    }
    if log.batches > 0 && !force {
        return Err(StoreError::refused(
            &chunk.join(LOG),
            format!(
                "holds {} ({}, epochs {}); paired with {to} {} a view that never existed. Compact first, or pass --force to accept that",
                crate::text::plural(log.batches, "batch", "batches"),
                crate::text::plural(log.entries, "entry", "entries"),
                log.epochs.map_or("-".into(), |(a, b)| format!("{a}..={b}")),
                crate::text::noun(log.batches, "it gives", "they give")
            ),
        ));
    }
    let previous = listing.current.unwrap_or_else(|| "(none)".into());
    replace_symlink(chunk, CURRENT, to).map_err(|e| StoreError::io(&chunk.join(CURRENT), e))?;
    Ok(previous)
}

/// Removes debris whose process is gone (compaction does this before it
/// starts, so killed compactions do not pile up). Returns what it removed.
pub fn remove_dead_debris(chunk: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut removed = Vec::new();
    for d in list(chunk)?.debris.into_iter().filter(|d| d.live_pid.is_none()) {
        remove_path(&d.path)?;
        removed.push(d.path);
    }
    Ok(removed)
}

/// Removes a file, symlink or directory tree.
fn remove_path(p: &Path) -> Result<(), StoreError> {
    let r = if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(p)
    } else {
        fs::remove_file(p)
    };
    r.map_err(|e| StoreError::io(p, e))
}
