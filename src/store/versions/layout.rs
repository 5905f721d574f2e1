//! Where things are in a chunk directory, and how a user's path resolves to
//! the base, marker and log to open (docs/format.md §2).

use std::path::{Path, PathBuf};

use crate::store::StoreError;

pub const BASE: &str = "data.cottas";
pub const LOG: &str = "data.deltalog";
pub const MARKER: &str = "data.compacted-epoch";
pub const CURRENT: &str = "current";

/// How the path given by the user was resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// A chunk dir, through its `current` link.
    ViaCurrent,
    /// A chunk dir without `current`: its highest complete `vN`.
    HighestVersion,
    /// A version directory given directly (no delta log is paired with it).
    VersionDir,
    /// A bare `data.cottas` file.
    BareFile,
}

impl Resolution {
    pub fn describe(self) -> &'static str {
        match self {
            Resolution::ViaCurrent => "chunk dir, through `current`",
            Resolution::HighestVersion => "chunk dir without `current`: opened its highest complete version",
            Resolution::VersionDir => "a version dir on its own (its chunk's delta log is not applied)",
            Resolution::BareFile => "a bare data.cottas (no marker, no delta log)",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Layout {
    pub resolution: Resolution,
    pub chunk_dir: Option<PathBuf>,
    pub version_dir: PathBuf,
    /// `vN` when the version dir is named like one.
    pub version: Option<String>,
    pub base: PathBuf,
    /// The chunk's delta log, when the view includes it.
    pub log: Option<PathBuf>,
}

/// `N` of a directory name `vN`.
pub fn version_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('v')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// The chunk's version directories (real directories named `vN`), ascending.
pub fn versions(chunk: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(chunk).map_err(|e| StoreError::io(chunk, e))? {
        let e = e.map_err(|e| StoreError::io(chunk, e))?;
        let ft = e.file_type().map_err(|err| StoreError::io(&e.path(), err))?;
        if let (true, Some(n)) = (ft.is_dir(), version_number(&e.file_name().to_string_lossy())) {
            out.push((n, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// 1 + the highest version number (1 for an empty chunk).
pub fn next_version(chunk: &Path) -> Result<u64, StoreError> {
    Ok(versions(chunk)?.last().map_or(1, |(n, _)| n + 1))
}

fn name_of(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

pub fn resolve(path: &Path) -> Result<Layout, StoreError> {
    let meta = std::fs::metadata(path).map_err(|e| StoreError::io(path, e))?;
    if meta.is_file() {
        let version_dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        return Ok(Layout {
            resolution: Resolution::BareFile,
            chunk_dir: None,
            version: None,
            version_dir,
            base: path.to_path_buf(),
            log: None,
        });
    }
    if path.join(BASE).is_file() {
        let chunk_dir = path.parent().map(Path::to_path_buf);
        return Ok(Layout {
            resolution: Resolution::VersionDir,
            chunk_dir,
            version: name_of(path).filter(|n| version_number(n).is_some()),
            version_dir: path.to_path_buf(),
            base: path.join(BASE),
            log: None,
        });
    }
    let current = path.join(CURRENT);
    if std::fs::symlink_metadata(&current).is_ok() {
        let target = std::fs::read_link(&current).map_err(|e| StoreError::io(&current, e))?;
        let version_dir = path.join(&target);
        if !version_dir.join(BASE).is_file() {
            return Err(StoreError::incomplete(
                &current,
                format!(
                    "`current` points at {} which has no data.cottas (a dangling or incomplete version); `cottas-tui repair reset-current` can point it at the newest complete version",
                    target.display()
                ),
            ));
        }
        return Ok(Layout {
            resolution: Resolution::ViaCurrent,
            chunk_dir: Some(path.to_path_buf()),
            version: name_of(&target),
            version_dir: version_dir.clone(),
            base: version_dir.join(BASE),
            log: Some(path.join(LOG)),
        });
    }
    let complete = versions(path)?.into_iter().rev().find(|(_, d)| d.join(BASE).is_file());
    match complete {
        Some((n, dir)) => Ok(Layout {
            resolution: Resolution::HighestVersion,
            chunk_dir: Some(path.to_path_buf()),
            version: Some(format!("v{n}")),
            base: dir.join(BASE),
            version_dir: dir,
            log: Some(path.join(LOG)),
        }),
        None => Err(StoreError::not_a_store(
            path,
            "not a store: no data.cottas, no `current` link and no complete vN directory",
        )),
    }
}
