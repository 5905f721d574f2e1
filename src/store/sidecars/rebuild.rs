//! `cottas-tui index` and `repair rebuild-sidecars`: give a base the sidecars
//! it lacks, or replace damaged ones.
//!
//! All sidecars are rebuilt in memory from `data.cottas` and compared with the
//! files on disk byte for byte; only missing or differing ones are written
//! (temp file, fsync, rename, then a directory fsync), and a replaced file is
//! first copied to the backup dir. The digest file is rewritten to match. The
//! base itself is only ever read, and when it has recorded digests it is
//! checked against them first, so damage is never blessed with new digests.

use std::path::{Path, PathBuf};

use crate::store::base::Base;
use crate::store::fsutil::{sync_dir, write_synced};
use crate::store::sidecars;
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

/// The directory, beside the versions, that holds one directory of backups per repair.
pub const BACKUPS: &str = "cottas-tui-backups";

/// Where replaced files are kept: `<parent of the version dir>/cottas-tui-backups/<UTC time>/`.
pub fn backup_dir(version_dir: &Path) -> PathBuf {
    let stamp = crate::store::fsutil::utc_timestamp(crate::store::fsutil::unix_now()).replace(':', "");
    version_dir.parent().unwrap_or(Path::new(".")).join(BACKUPS).join(stamp)
}

/// The sidecars rebuilt from the base, after checking the base against its
/// digests (a digest file that does not parse is set aside, not trusted).
fn rebuilt(target: &Path) -> Result<(PathBuf, sidecars::Sidecars), StoreError> {
    let layout = layout::resolve(target)?;
    let dir = layout.base.parent().unwrap_or(Path::new(".")).to_path_buf();
    let digests = crate::store::base::digests::read(&dir).ok().flatten();
    let base = Base::open_checked(&layout.base, digests.as_ref().map(|d| &d.base))?;
    Ok((dir, sidecars::build_from_base(&base)?))
}

fn action_for(path: &Path, bytes: &[u8]) -> Result<Action, StoreError> {
    Ok(match std::fs::read(path) {
        Ok(existing) if existing == bytes => Action::Kept,
        Ok(_) => Action::ReplacedDiffering,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Action::WroteMissing,
        Err(e) => return Err(StoreError::io(path, e)),
    })
}

/// What `index` would do to each sidecar, without writing.
pub fn plan(target: &Path) -> Result<Vec<(String, Action)>, StoreError> {
    let (dir, built) = rebuilt(target)?;
    built
        .files()
        .into_iter()
        .map(|(suffix, bytes)| {
            let name = format!("{BASE}{suffix}");
            action_for(&dir.join(&name), &bytes).map(|a| (name, a))
        })
        .collect()
}

pub fn index(target: &Path) -> Result<IndexReport, StoreError> {
    let (dir, built) = rebuilt(target)?;
    let backups = backup_dir(&dir).join(dir.file_name().unwrap_or_default());
    let mut files = Vec::new();
    for (suffix, bytes) in built.files() {
        let name = format!("{BASE}{suffix}");
        let path = dir.join(&name);
        let action = action_for(&path, &bytes)?;
        if action == Action::ReplacedDiffering {
            std::fs::create_dir_all(&backups).map_err(|e| StoreError::io(&backups, e))?;
            let kept = backups.join(&name);
            std::fs::copy(&path, &kept).map_err(|e| StoreError::io(&kept, e))?;
        }
        if action != Action::Kept {
            let tmp = dir.join(format!("{name}.tmp"));
            write_synced(&tmp, &bytes).map_err(|e| StoreError::write(&tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))?;
        }
        files.push((name, action));
    }
    // Keep a digest file that does not parse before writing a good one.
    let dg = dir.join(crate::store::base::digests::DIGESTS);
    if dg.exists() && crate::store::base::digests::read(&dir).is_err() {
        std::fs::create_dir_all(&backups).map_err(|e| StoreError::io(&backups, e))?;
        std::fs::copy(&dg, backups.join(crate::store::base::digests::DIGESTS))
            .map_err(|e| StoreError::io(&dg, e))?;
    }
    crate::store::base::digests::write(&dir)?;
    sync_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let backed_up = files.iter().any(|(_, a)| *a == Action::ReplacedDiffering).then_some(backups);
    Ok(IndexReport { version_dir: dir, files, backed_up })
}
