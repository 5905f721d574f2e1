//! Copy-first repairs: each action is planned first (what it will change,
//! byte for byte), applied only when asked, under the writer lock, after
//! every byte it removes or replaces is copied to
//! `<chunk>/cottas-tui-backups/<UTC time>/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::base::digests;
use crate::store::fsutil::{copy_whole, replace_symlink, sync_dir, write_synced};
use crate::store::log::writer::{debug_pause, WriterLock};
use crate::store::log::Log;
use crate::store::sidecars::rebuild::{self, backup_dir};
use crate::store::versions::layout::{self, BASE, CURRENT, LOG};
use crate::store::StoreError;
use crate::triage::verify::Finding;

/// One planned repair, in words a person can check before saying yes.
#[derive(Clone, Debug)]
pub struct RepairPlan {
    /// Nothing to do.
    pub noop: bool,
    pub lines: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Applied {
    pub lines: Vec<String>,
    pub backup: Option<PathBuf>,
}

fn chunk_backup(chunk: &Path) -> PathBuf {
    // backup_dir takes a version dir and uses its parent.
    backup_dir(&chunk.join("_"))
}

/// Cutting the log back to its committed prefix.
pub fn plan_truncate_tail(chunk: &Path) -> Result<RepairPlan, StoreError> {
    let path = chunk.join(LOG);
    let Some(log) = Log::read(&path)? else {
        return Ok(RepairPlan {
            noop: true,
            lines: vec![format!("{}: no log; nothing to cut", path.display())],
        });
    };
    let Some(damage) = log.tail.damage() else {
        return Ok(RepairPlan {
            noop: true,
            lines: vec![format!("{}: no torn or damaged tail; nothing to cut", path.display())],
        });
    };
    let mut lines = vec![format!(
        "cut {} at offset {} from {} ({}); keep the {} before it",
        crate::text::plural(damage.len, "byte", "bytes"),
        damage.offset,
        path.display(),
        damage.reason.as_str(),
        crate::text::plural(log.frames.len(), "committed batch", "committed batches")
    )];
    if let [first, ..] = log.tail.hidden() {
        lines.push(format!(
            "the cut bytes include {} valid batches that no reader can reach now (first at offset {first}); they stay in the backup",
            log.tail.hidden().len(),
        ));
    }
    Ok(RepairPlan { noop: false, lines })
}

pub fn truncate_tail(chunk: &Path, wait: Option<Duration>) -> Result<Applied, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait)?;
    let plan = plan_truncate_tail(chunk)?;
    if plan.noop {
        return Ok(Applied { lines: plan.lines, backup: None });
    }
    let path = chunk.join(LOG);
    let log = Log::read_or_empty(&path)?;
    let end = log.committed_len();
    let backup = chunk_backup(chunk);
    fs::create_dir_all(&backup).map_err(|e| StoreError::io(&backup, e))?;
    let kept = backup.join(LOG);
    // Copied whole or not at all; the lock keeps the file as `log` read it.
    copy_whole(&path, &kept).map_err(|e| StoreError::write(&kept, e))?;
    debug_pause("truncate-backed-up");
    let f = fs::OpenOptions::new().write(true).open(&path).map_err(|e| StoreError::io(&path, e))?;
    f.set_len(end).and_then(|_| f.sync_all()).map_err(|e| StoreError::io(&path, e))?;
    let mut lines = plan.lines;
    lines.push(format!("the whole log as it was is in {}", kept.display()));
    Ok(Applied { lines, backup: Some(backup) })
}

/// Rebuilding a version's sidecars from its base. The plan is read from the
/// recorded digests (no rebuild); the rebuild itself is the one pass.
pub fn plan_rebuild_sidecars(chunk: &Path, version: &str) -> Result<RepairPlan, StoreError> {
    let dir = chunk.join(version);
    let Some(actions) = rebuild::plan(&dir)? else {
        let line = format!(
            "{}: no recorded digests to go by: derive every sidecar from the base, \
             replace each that differs and record digests",
            dir.display()
        );
        return Ok(RepairPlan { noop: false, lines: vec![line] });
    };
    let changing: Vec<String> = actions
        .iter()
        .filter(|(_, a)| *a != rebuild::Action::Kept)
        .map(|(n, a)| {
            let what = if n == digests::BLOCKS {
                "no longer describes the sidecars: rewritten with the digests"
            } else {
                planned(a)
            };
            format!("{}: {what}", dir.join(n).display())
        })
        .collect();
    if changing.is_empty() {
        let line =
            format!("{}: every sidecar matches its recorded digest; nothing to rebuild", dir.display());
        return Ok(RepairPlan { noop: true, lines: vec![line] });
    }
    Ok(RepairPlan { noop: false, lines: changing })
}

fn planned(a: &rebuild::Action) -> &'static str {
    match a {
        rebuild::Action::Kept => "matches: kept",
        rebuild::Action::WroteMissing => "missing: rebuild it from the base",
        rebuild::Action::ReplacedDiffering => "differs from its recorded digest: rebuild it (a copy is kept)",
    }
}

pub fn rebuild_sidecars(
    chunk: &Path,
    version: &str,
    wait: Option<Duration>,
    opts: rebuild::Options<'_>,
) -> Result<Applied, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait)?;
    let dir = chunk.join(version);
    let report = rebuild::index(&dir, opts)?;
    let mut lines: Vec<String> = report
        .files
        .iter()
        .filter(|(_, a)| *a != rebuild::Action::Kept)
        .map(|(n, a)| format!("{}: {}", dir.join(n).display(), a.describe()))
        .collect();
    if lines.is_empty() {
        lines.push(format!("{}: every sidecar already equals the one its base gives", dir.display()));
    }
    lines.push(format!("{}: digests recorded", dir.display()));
    if let Some(b) = &report.backed_up {
        lines.push(format!("the replaced files are in {}", b.display()));
    }
    Ok(Applied { lines, backup: report.backed_up })
}

/// Pointing `current` at the newest complete version.
pub fn plan_reset_current(chunk: &Path) -> Result<(RepairPlan, Option<String>), StoreError> {
    let listing = crate::store::versions::list(chunk)?;
    let Some(newest) = listing.versions.iter().rev().find(|v| v.complete) else {
        return Err(StoreError::incomplete(chunk, "no complete version to point `current` at"));
    };
    let now = listing.current.clone();
    if now.as_deref() == Some(newest.name.as_str()) {
        return Ok((
            RepairPlan {
                noop: true,
                lines: vec![format!(
                    "`current` already points at {}, the newest complete version",
                    newest.name
                )],
            },
            None,
        ));
    }
    let line = format!(
        "point `current` ({}) at {}, the newest complete version ({} quads, marker {})",
        now.as_deref().unwrap_or("missing"),
        newest.name,
        newest.quads.unwrap_or(0),
        newest.marker.map_or("none".into(), |m| m.to_string())
    );
    Ok((RepairPlan { noop: false, lines: vec![line] }, Some(newest.name.clone())))
}

pub fn reset_current(chunk: &Path, wait: Option<Duration>) -> Result<Applied, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait)?;
    let (plan, target) = plan_reset_current(chunk)?;
    let Some(target) = target else { return Ok(Applied { lines: plan.lines, backup: None }) };
    let backup = chunk_backup(chunk);
    fs::create_dir_all(&backup).map_err(|e| StoreError::io(&backup, e))?;
    let previous = fs::read_link(chunk.join(CURRENT))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "(missing)".into());
    let note = backup.join("current.previous");
    write_synced(&note, format!("{previous}\n").as_bytes()).map_err(|e| StoreError::write(&note, e))?;
    replace_symlink(chunk, CURRENT, &target).map_err(|e| StoreError::io(&chunk.join(CURRENT), e))?;
    sync_dir(chunk).map_err(|e| StoreError::io(chunk, e))?;
    let mut lines = plan.lines;
    lines.push(format!("the previous target is recorded in {}", note.display()));
    Ok(Applied { lines, backup: Some(backup) })
}

/// A repair as data: what `verify` suggests for a finding, what the TUI
/// confirms and runs. Planning and applying go through the functions above,
/// the same ones `cottas-tui repair` calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    TruncateTornTail,
    ResetCurrent,
    /// Rebuild the sidecars of this version (`v2`) from its base.
    RebuildSidecars(String),
}

/// The checks whose findings a sidecar rebuild fixes: each compares a
/// sidecar (or the blocks table) with the base it was made from, and the
/// base is the truth.
const SIDECAR_CHECKS: &[&str] = &[
    "blocks",
    "decode",
    "deep",
    "dict-cells",
    "dict-order",
    "digest",
    "dimensions",
    "presence-bits",
    "s-offsets",
    "s-order",
    "sidecar-missing",
];

impl Repair {
    /// The repair a verify finding of a chunk calls for, if one exists. A
    /// sidecar finding is fixed by rebuilding its version's sidecars only
    /// when the file is a sidecar of a `vN/` (the base itself is not
    /// rebuilt from anything).
    pub fn for_finding(f: &Finding) -> Option<Repair> {
        match f.check {
            "log-tail" => Some(Repair::TruncateTornTail),
            "current" => Some(Repair::ResetCurrent),
            check if SIDECAR_CHECKS.contains(&check) => {
                let path = Path::new(&f.file);
                let version = path.parent()?.to_str()?;
                let name = path.file_name()?.to_str()?;
                let is_sidecar = (name.starts_with(BASE) && name != BASE) || name == digests::BLOCKS;
                (is_sidecar && layout::version_number(version).is_some())
                    .then(|| Repair::RebuildSidecars(version.to_string()))
            }
            _ => None,
        }
    }

    pub fn plan(&self, chunk: &Path) -> Result<RepairPlan, StoreError> {
        match self {
            Repair::TruncateTornTail => plan_truncate_tail(chunk),
            Repair::ResetCurrent => plan_reset_current(chunk).map(|p| p.0),
            Repair::RebuildSidecars(v) => plan_rebuild_sidecars(chunk, v),
        }
    }

    pub fn apply(&self, chunk: &Path, wait: Option<Duration>) -> Result<Applied, StoreError> {
        match self {
            Repair::TruncateTornTail => truncate_tail(chunk, wait),
            Repair::ResetCurrent => reset_current(chunk, wait),
            Repair::RebuildSidecars(v) => rebuild_sidecars(chunk, v, wait, rebuild::Options::default()),
        }
    }

    /// The command line that does the same, for the confirmation text.
    pub fn command(&self, chunk: &Path) -> String {
        let chunk = super::verify::shell_arg(chunk);
        match self {
            Repair::TruncateTornTail => format!("cottas-tui repair truncate-torn-tail {chunk} --yes"),
            Repair::ResetCurrent => format!("cottas-tui repair reset-current {chunk} --yes"),
            Repair::RebuildSidecars(v) => format!("cottas-tui repair rebuild-sidecars {chunk} {v} --yes"),
        }
    }
}
