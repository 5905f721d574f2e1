//! `cottas-tui index`: give a base the sidecars it lacks.
//!
//! All sidecars are rebuilt in memory from `data.cottas` and compared with the
//! files on disk byte for byte; only missing or differing ones are written
//! (temp file, fsync, rename, then a directory fsync). The base itself is
//! only ever read.

use std::path::{Path, PathBuf};

use super::base::Base;
use super::fsutil::{sync_dir, write_synced};
use super::layout::{self, BASE};
use super::sidecars;
use super::StoreError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Kept,
    WroteMissing,
    ReplacedDiffering,
}

#[derive(Clone, Debug)]
pub struct IndexReport {
    pub version_dir: PathBuf,
    pub files: Vec<(String, Action)>,
}

pub fn index(target: &Path) -> Result<IndexReport, StoreError> {
    let layout = layout::resolve(target)?;
    let base = Base::open(&layout.base)?;
    let built = sidecars::build_from_base(&base)?;
    let dir = layout.base.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut files = Vec::new();
    for (suffix, bytes) in built.files() {
        let name = format!("{BASE}{suffix}");
        let path = dir.join(&name);
        let action = match std::fs::read(&path) {
            Ok(existing) if existing == bytes => Action::Kept,
            Ok(_) => Action::ReplacedDiffering,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Action::WroteMissing,
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        if action != Action::Kept {
            let tmp = dir.join(format!("{name}.tmp"));
            write_synced(&tmp, &bytes).map_err(|e| StoreError::io(&tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))?;
        }
        files.push((name, action));
    }
    sync_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
    Ok(IndexReport { version_dir: dir, files })
}
