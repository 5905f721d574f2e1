//! Copy-first repairs: each action is planned first (what it will change,
//! byte for byte), applied only when asked, under the writer lock, after
//! every byte it removes or replaces is copied to
//! `<chunk>/cottas-tui-backups/<UTC time>/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::base::digests;
use crate::store::base::footer_copy::{self, FOOTER_COPY};
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
            } else if n == FOOTER_COPY && *a == rebuild::Action::WroteMissing {
                "missing: written from the base's footer"
            } else if n == FOOTER_COPY {
                "differs from the base's footer, which matches its digest: rewritten (a copy is kept)"
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

/// What a footer restore of version `version` works from: the copy, and
/// where the base differs from it (`None`: it does not).
struct FooterRestore {
    base_path: PathBuf,
    copy: footer_copy::FooterCopy,
    base_len: u64,
    difference: Option<footer_copy::Difference>,
}

fn footer_restore(chunk: &Path, version: &str) -> Result<FooterRestore, StoreError> {
    let dir = chunk.join(version);
    let base_path = dir.join(BASE);
    let copy = footer_copy::read(&dir)?.ok_or_else(|| {
        StoreError::refused(
            &dir.join(FOOTER_COPY),
            "there is no footer copy: the version was written before copies were kept (or by another \
             producer), and a footer cannot be derived from the rows; restore the version from a backup",
        )
    })?;
    let raw =
        crate::store::sidecars::checked::map_file(&base_path).map_err(|e| StoreError::io(&base_path, e))?;
    let raw: &[u8] = (*raw).as_ref();
    if (raw.len() as u64) < copy.offset {
        return Err(StoreError::refused(
            &base_path,
            format!(
                "the file is {} bytes and its column chunks end at byte {}: chunks are lost too, which the footer copy cannot restore",
                raw.len(),
                copy.offset
            ),
        ));
    }
    if raw.get(..4) != Some(b"PAR1".as_slice()) {
        return Err(StoreError::refused(
            &base_path,
            "the leading magic is damaged too, which the footer copy does not hold",
        ));
    }
    let difference = footer_copy::compare(raw, &copy);
    Ok(FooterRestore { base_path, copy, base_len: raw.len() as u64, difference })
}

/// Putting back the end of a version's base (page indexes, footer, its
/// length and `PAR1`) from the copy written beside it.
pub fn plan_restore_footer(chunk: &Path, version: &str) -> Result<RepairPlan, StoreError> {
    Ok(restore_plan(chunk, &footer_restore(chunk, version)?))
}

/// The plan's lines for what `footer_restore` found.
fn restore_plan(chunk: &Path, r: &FooterRestore) -> RepairPlan {
    let base = r.base_path.display();
    let Some(diff) = &r.difference else {
        let line = format!(
            "{base}: its last {} equal the footer copy; nothing to restore",
            crate::text::plural(r.copy.bytes.len() as u64, "byte", "bytes")
        );
        return RepairPlan { noop: true, lines: vec![line] };
    };
    let mut lines = vec![format!("restore {base}: {}", diff.describe())];
    if r.base_len != r.copy.base_len {
        lines.push(format!(
            "{base}: the file is {} bytes, the copy's file was {}",
            r.base_len, r.copy.base_len
        ));
    }
    lines.push(format!(
        "write a new {BASE}: its first {} as they are, then the copy's {} ({} in all), and check it against the recorded digests before it replaces the damaged file",
        crate::text::plural(r.copy.offset, "byte", "bytes"),
        crate::text::plural(r.copy.bytes.len() as u64, "byte", "bytes"),
        r.copy.base_len
    ));
    lines.push(format!("keep the damaged {BASE} in {}/", chunk.join(rebuild::BACKUPS).display()));
    RepairPlan { noop: false, lines }
}

pub fn restore_footer(chunk: &Path, version: &str, wait: Option<Duration>) -> Result<Applied, StoreError> {
    let _lock = WriterLock::acquire(chunk, wait)?;
    // Read once, under the lock: the plan and the work come from the same look.
    let r = footer_restore(chunk, version)?;
    let plan = restore_plan(chunk, &r);
    if plan.noop {
        return Ok(Applied { lines: plan.lines, backup: None });
    }
    let dir = chunk.join(version);
    let backup = chunk_backup(chunk).join(version);
    fs::create_dir_all(&backup).map_err(|e| StoreError::io(&backup, e))?;
    // The damaged file is kept first (a link costs nothing; a copy where
    // links are not allowed).
    let kept = backup.join(BASE);
    if fs::hard_link(&r.base_path, &kept).is_err() {
        copy_whole(&r.base_path, &kept).map_err(|e| StoreError::write(&kept, e))?;
    }
    sync_dir(&backup).map_err(|e| StoreError::io(&backup, e))?;
    debug_pause("restore-backed-up");
    let fresh = backup.join(format!("{BASE}.restored"));
    write_restored(&r, &fresh)?;
    check_restored(&dir, &fresh)?;
    debug_pause("restore-checked");
    fs::rename(&fresh, &r.base_path).map_err(|e| StoreError::write(&r.base_path, e))?;
    sync_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let lines = vec![
        format!("restored {} from its footer copy; it matches its recorded digests", r.base_path.display()),
        format!("the damaged file is in {}", kept.display()),
    ];
    Ok(Applied { lines, backup: Some(backup) })
}

/// The base's bytes before the copy's part, then the copy, fsynced.
fn write_restored(r: &FooterRestore, fresh: &Path) -> Result<(), StoreError> {
    use std::io::{Read, Write};
    let mut from =
        fs::File::open(&r.base_path).map_err(|e| StoreError::io(&r.base_path, e))?.take(r.copy.offset);
    let mut to = fs::File::create(fresh).map_err(|e| StoreError::write(fresh, e))?;
    std::io::copy(&mut from, &mut to).map_err(|e| StoreError::write(fresh, e))?;
    to.write_all(&r.copy.bytes).and_then(|_| to.sync_all()).map_err(|e| StoreError::write(fresh, e))
}

/// The restored file against everything recorded of the version: its
/// length, magic and footer, and every column chunk's digest (without a
/// digest file, a footer that validates against the file).
fn check_restored(dir: &Path, fresh: &Path) -> Result<(), StoreError> {
    let digests = digests::read(dir)?;
    let base = crate::store::base::Base::open_checked(fresh, digests.as_ref().map(|d| &d.base))?;
    let Some(d) = digests else { return Ok(()) };
    let raw = base.raw_bytes();
    for c in &d.base.chunks {
        let bytes =
            raw.get(c.span.offset as usize..(c.span.offset + c.span.len) as usize).unwrap_or_default();
        if !digests::matches(&c.span, bytes) {
            return Err(StoreError::format(
                fresh,
                c.span.offset,
                format!(
                    "row group {} column {} does not match its recorded digest: the damage is not only in the footer; nothing was replaced",
                    c.rg, c.col
                ),
            ));
        }
    }
    Ok(())
}

/// Removing the leftovers of interrupted operations whose process is gone.
/// Nothing in them is committed data: a killed compaction's temp version,
/// a killed rebuild's temp dir, a temp link or log of a swap that never
/// happened. So they are removed, not copied.
pub fn plan_clean_leftovers(chunk: &Path) -> Result<RepairPlan, StoreError> {
    let plan = crate::store::versions::gc_plan(chunk, None)?;
    if plan.remove_debris.is_empty() {
        return Ok(RepairPlan { noop: true, lines: vec!["no leftovers of interrupted operations".into()] });
    }
    let lines = plan
        .remove_debris
        .iter()
        .map(|d| {
            format!(
                "remove {} ({}, {})",
                d.path.display(),
                d.what,
                humansize::format_size(d.bytes, humansize::BINARY)
            )
        })
        .collect();
    Ok(RepairPlan { noop: false, lines })
}

pub fn clean_leftovers(chunk: &Path, wait: Option<Duration>) -> Result<Applied, StoreError> {
    let done = crate::store::versions::gc_apply(chunk, None, wait)?;
    let mut lines: Vec<String> =
        done.remove_debris.iter().map(|d| format!("removed {}", d.path.display())).collect();
    lines.push(format!("freed {}", humansize::format_size(done.bytes(), humansize::BINARY)));
    Ok(Applied { lines, backup: None })
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
    /// Put back the footer of this version's base from its copy.
    RestoreFooter(String),
    /// Remove what interrupted operations left (`gc --leftovers`).
    CleanLeftovers,
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
    "digests",
    "dimensions",
    "footer-copy",
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
            "debris" => Some(Repair::CleanLeftovers),
            "footer" => {
                let path = Path::new(&f.file);
                let version = path.parent()?.to_str()?;
                (path.file_name()? == BASE && layout::version_number(version).is_some())
                    .then(|| Repair::RestoreFooter(version.to_string()))
            }
            check if SIDECAR_CHECKS.contains(&check) => {
                let path = Path::new(&f.file);
                let version = path.parent()?.to_str()?;
                let name = path.file_name()?.to_str()?;
                let is_sidecar = (name.starts_with(BASE) && name != BASE)
                    || [digests::BLOCKS, digests::DIGESTS, FOOTER_COPY].contains(&name);
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
            Repair::RestoreFooter(v) => plan_restore_footer(chunk, v),
            Repair::CleanLeftovers => plan_clean_leftovers(chunk),
        }
    }

    pub fn apply(&self, chunk: &Path, wait: Option<Duration>) -> Result<Applied, StoreError> {
        match self {
            Repair::TruncateTornTail => truncate_tail(chunk, wait),
            Repair::ResetCurrent => reset_current(chunk, wait),
            Repair::RebuildSidecars(v) => rebuild_sidecars(chunk, v, wait, rebuild::Options::default()),
            Repair::RestoreFooter(v) => restore_footer(chunk, v, wait),
            Repair::CleanLeftovers => clean_leftovers(chunk, wait),
        }
    }

    /// The command line that does the same, for the confirmation text.
    pub fn command(&self, chunk: &Path) -> String {
        let chunk = super::verify::shell_arg(chunk);
        match self {
            Repair::TruncateTornTail => format!("cottas-tui repair truncate-torn-tail {chunk} --yes"),
            Repair::ResetCurrent => format!("cottas-tui repair reset-current {chunk} --yes"),
            Repair::RebuildSidecars(v) => format!("cottas-tui repair rebuild-sidecars {chunk} {v} --yes"),
            Repair::RestoreFooter(v) => format!("cottas-tui repair restore-footer {chunk} {v} --yes"),
            Repair::CleanLeftovers => format!("cottas-tui gc {chunk} --leftovers --yes"),
        }
    }
}
