//! `cottas-tui index` and `repair rebuild-sidecars`: give a base the sidecars
//! it lacks, or replace damaged ones.
//!
//! The sidecars are derived once, streamed from `data.cottas` through the
//! writer import uses ([`super::derive`]), into a temp dir beside the version
//! (`.vN.rebuild-tmp.<pid>`: the same file system, so a rename moves each
//! file into place). Each is then compared with the file on disk; a missing
//! or differing one is moved into place, a replaced file having first been
//! copied to the backup dir (fsynced, and given its own name only once
//! complete). Then the digest files are rewritten and the directory fsynced.
//! The base is only ever read, and when it has recorded digests it is
//! checked against them first, so damage is never blessed with new digests.
//!
//! Memory is the writer's budget plus a few decoded row groups, whatever the
//! size of the store. Killed at any point, every sidecar is either the old
//! file or the new one, each complete; a new one is what the base gives. So
//! `verify` is clean, or names the sidecars still to rebuild (and the temp
//! dir as debris), and the same command run again finishes the work.

use crate::store::base::footer_copy::{self, FOOTER_COPY};
use std::path::{Path, PathBuf};

use crate::store::base::digests::read_full;
use crate::store::base::Base;
use crate::store::fsutil::{copy_whole, sync_dir};
use crate::store::log::writer::debug_pause;
use crate::store::sidecars::derive::{derive, OnProgress};
use crate::store::sidecars::stream::Mode;
use crate::store::sidecars::{sidecar_path, SUFFIXES};
use crate::store::versions::layout::{self, BASE};
use crate::store::StoreError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Kept,
    WroteMissing,
    ReplacedDiffering,
}

impl Action {
    pub fn describe(&self) -> &'static str {
        match self {
            Action::Kept => "ok, kept",
            Action::WroteMissing => "was missing: written",
            Action::ReplacedDiffering => "differed from the base: replaced",
        }
    }
}

#[derive(Clone, Debug)]
pub struct IndexReport {
    pub version_dir: PathBuf,
    pub files: Vec<(String, Action)>,
    /// Where replaced files were copied first.
    pub backed_up: Option<PathBuf>,
}

/// How a rebuild may use memory, and whom it tells how far it got.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The whole rebuild's memory; the writer's token maps get a quarter
    /// (as in import), the rest is decoded row groups and buffers.
    pub memory_limit: usize,
    pub progress: Option<OnProgress<'a>>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options { memory_limit: 1 << 30, progress: None }
    }
}

/// The directory, beside the versions, that holds one directory of backups per repair.
pub const BACKUPS: &str = "cottas-tui-backups";

/// What a temp dir of a rebuild is called (its parent is the version's).
pub const TEMP_INFIX: &str = ".rebuild-tmp.";

/// Where replaced files are kept: `<parent of the version dir>/cottas-tui-backups/<UTC time>/`.
pub fn backup_dir(version_dir: &Path) -> PathBuf {
    let stamp = crate::store::fsutil::utc_timestamp(crate::store::fsutil::unix_now()).replace(':', "");
    version_dir.parent().unwrap_or(Path::new(".")).join(BACKUPS).join(stamp)
}

/// The version dir of `target` and its base, checked against its digests
/// (a digest file that does not parse is set aside, not trusted).
fn open_base(target: &Path) -> Result<(PathBuf, Base), StoreError> {
    let layout = layout::resolve(target)?;
    let dir = layout.base.parent().unwrap_or(Path::new(".")).to_path_buf();
    let digests = crate::store::base::digests::read(&dir).ok().flatten();
    let base = Base::open_checked(&layout.base, digests.as_ref().map(|d| &d.base))?;
    Ok((dir, base))
}

/// The temp dir of this process's rebuild of the version in `dir`.
fn temp_dir(dir: &Path) -> PathBuf {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let parent = dir.parent().unwrap_or(Path::new("."));
    parent.join(format!(".{name}{TEMP_INFIX}{}", std::process::id()))
}

/// Removes the temp dirs of rebuilds of `dir` whose process is gone.
fn remove_dead_temp_dirs(dir: &Path) {
    let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let prefix = format!(".{name}{TEMP_INFIX}");
    let Ok(entries) = std::fs::read_dir(dir.parent().unwrap_or(Path::new("."))) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file_name.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !crate::store::versions::pid_alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A temp dir removed however the rebuild ends (a kill leaves it as debris).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether the file at `path` holds the same bytes as the one at `new`.
fn same_bytes(path: &Path, new: &Path) -> Result<Action, StoreError> {
    let mut have = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Action::WroteMissing),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let mut want = std::fs::File::open(new).map_err(|e| StoreError::io(new, e))?;
    let (have_len, want_len) = (
        have.metadata().map_err(|e| StoreError::io(path, e))?.len(),
        want.metadata().map_err(|e| StoreError::io(new, e))?.len(),
    );
    if have_len != want_len {
        return Ok(Action::ReplacedDiffering);
    }
    let (mut a, mut b) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = read_full(&mut have, &mut a).map_err(|e| StoreError::io(path, e))?;
        let m = read_full(&mut want, &mut b).map_err(|e| StoreError::io(new, e))?;
        if a[..n] != b[..m] {
            return Ok(Action::ReplacedDiffering);
        }
        if n < a.len() {
            return Ok(Action::Kept);
        }
    }
}

/// Copies `from` into `backups` under its own name, whole or not at all.
fn back_up(from: &Path, backups: &Path, name: &str) -> Result<(), StoreError> {
    std::fs::create_dir_all(backups).map_err(|e| StoreError::write(backups, e))?;
    let kept = backups.join(name);
    copy_whole(from, &kept).map_err(|e| StoreError::write(&kept, e))
}

/// Derives the sidecars of the version at `target` and puts each that is
/// missing or differs in place (see the module banner).
pub fn index(target: &Path, opts: Options<'_>) -> Result<IndexReport, StoreError> {
    let (dir, base) = open_base(target)?;
    remove_dead_temp_dirs(&dir);
    let temp = TempDir(temp_dir(&dir));
    let _ = std::fs::remove_dir_all(&temp.0);
    let spill = temp.0.join("spill");
    std::fs::create_dir_all(&spill).map_err(|e| StoreError::write(&spill, e))?;
    let new_base = temp.0.join(BASE);
    let quiet = |_: u64, _: u64| {};
    let progress = opts.progress.unwrap_or(&quiet);
    derive(&base, &new_base, &spill, opts.memory_limit / 4, Mode::Write, progress)
        .map_err(|e| e.into_store_error())?;
    sync_dir(&temp.0).map_err(|e| StoreError::write(&temp.0, e))?;
    debug_pause("rebuild-derived");
    let backups = backup_dir(&dir).join(dir.file_name().unwrap_or_default());
    let mut files = Vec::new();
    for suffix in SUFFIXES {
        let new = sidecar_path(&new_base, suffix);
        if !new.exists() {
            continue; // the writer rule leaves it out (a dimension is 0)
        }
        let name = format!("{BASE}{suffix}");
        let path = dir.join(&name);
        let action = same_bytes(&path, &new)?;
        if action == Action::ReplacedDiffering {
            back_up(&path, &backups, &name)?;
            debug_pause("rebuild-backed-up");
        }
        if action != Action::Kept {
            std::fs::rename(&new, &path).map_err(|e| StoreError::write(&path, e))?;
        }
        files.push((name, action));
    }
    // Keep a digest file that does not parse before writing a good one.
    let dg = dir.join(crate::store::base::digests::DIGESTS);
    if dg.exists() && crate::store::base::digests::read(&dir).is_err() {
        back_up(&dg, &backups, crate::store::base::digests::DIGESTS)?;
    }
    // The base opened against its digests, so it is the truth: a copy of
    // its footer that differs is kept before the new one replaces it.
    if footer_copy_action(&dir)? == Action::ReplacedDiffering {
        back_up(&dir.join(FOOTER_COPY), &backups, FOOTER_COPY)?;
    }
    debug_pause("rebuild-before-digests");
    crate::store::base::digests::write(&dir)?;
    sync_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let backed_up = backups.exists().then_some(backups);
    Ok(IndexReport { version_dir: dir, files, backed_up })
}

/// What a rebuild of the version at `target` would change, found without
/// deriving anything: sidecars that are missing, those that no longer match
/// the digests recorded when they were written, and a block table that no
/// longer describes them. `None` when the version has no digests to go by (a
/// base another producer indexed): then only the rebuild can say which differ.
pub fn plan(target: &Path) -> Result<Option<Vec<(String, Action)>>, StoreError> {
    use crate::store::base::digests;
    let layout = layout::resolve(target)?;
    let dir = layout.base.parent().unwrap_or(Path::new(".")).to_path_buf();
    let Some(recorded) = digests::read(&dir).ok().flatten() else { return Ok(None) };
    let mut actions = Vec::new();
    let mut tables = Vec::new();
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let name = format!("{BASE}{suffix}");
        let path = dir.join(&name);
        let table = digests::file_table(&path, i as u32).map_err(|e| StoreError::io(&path, e))?;
        let action = match (recorded.sidecars.get(*suffix), &table) {
            // Not recorded, not there: the writer rule leaves it out.
            (None, None) => continue,
            (_, None) => Action::WroteMissing,
            (Some(span), Some(t))
                if t.file_len == span.len
                    && u64::from_str_radix(&span.xxh64, 16).ok() == Some(t.file_xxh64) =>
            {
                Action::Kept
            }
            _ => Action::ReplacedDiffering,
        };
        tables.extend(table);
        actions.push((name, action));
    }
    let blocks = dir.join(digests::BLOCKS);
    let want = crate::format::blocks::encode(&tables);
    let blocks_action = match std::fs::read(&blocks) {
        Ok(have) if have == want => Action::Kept,
        Ok(_) => Action::ReplacedDiffering,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Action::WroteMissing,
        Err(e) => return Err(StoreError::io(&blocks, e)),
    };
    actions.push((digests::BLOCKS.to_string(), blocks_action));
    actions.push((FOOTER_COPY.to_string(), footer_copy_action(&dir)?));
    Ok(Some(actions))
}

/// Whether the version's footer copy is there and equals its base's tail.
fn footer_copy_action(dir: &Path) -> Result<Action, StoreError> {
    if !dir.join(FOOTER_COPY).exists() {
        return Ok(Action::WroteMissing);
    }
    let base_path = dir.join(BASE);
    let raw =
        crate::store::sidecars::checked::map_file(&base_path).map_err(|e| StoreError::io(&base_path, e))?;
    Ok(match footer_copy::check_copy(dir, (*raw).as_ref()) {
        Ok(()) => Action::Kept,
        Err(_) => Action::ReplacedDiffering,
    })
}
