//! What the TUI reads from disk, as plain functions that workers call.
//! Nothing here touches `App`: each returns data that arrives in `update`
//! as a message, so neither the update step nor drawing ever reads a file.
//!
//! Loading stays cheap on purpose: version listings read footers only, the
//! file list reads headers only; a file is decoded in full only when the
//! user opens it in the decoder.

use std::path::{Path, PathBuf};

use super::state::{Check, Decoder, FileRow, Observed, RowGroups, VersionDetails};
use crate::format::kind::{self, FileKind};
use crate::store::versions::layout::{BASE, CURRENT, LOG};
use crate::store::versions::{self, Listing};

/// (log length, log mtime, `current` target) now: what the watcher compares.
pub fn observe(chunk: &Path) -> Observed {
    let meta = std::fs::metadata(chunk.join(LOG)).ok();
    Observed {
        log_len: meta.as_ref().map_or(0, |m| m.len()),
        log_mtime: meta.and_then(|m| m.modified().ok()),
        current: std::fs::read_link(chunk.join(CURRENT)).ok(),
    }
}

/// The versions of `chunk`, with what the watcher would see right after.
pub fn list_versions(chunk: &Path) -> (Result<Listing, String>, Observed) {
    let listing = versions::list(chunk).map_err(|e| e.to_string());
    (listing, observe(chunk))
}

/// Row-group figures (footer only) and the file list (headers only) of one
/// version directory; the chunk's log comes first in the list.
pub fn version_details(chunk: &Path, dir: &Path) -> VersionDetails {
    let mut row_groups = RowGroups::default();
    if let Ok(base) = crate::store::base::Base::open(&dir.join(BASE)) {
        for rg in base.metadata().row_groups() {
            row_groups.rows.push(rg.num_rows().max(0) as u64);
            row_groups.bytes.push(rg.compressed_size().max(0) as u64);
        }
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    paths.sort();
    paths.insert(0, chunk.join(LOG));
    let files = paths.into_iter().filter(|p| p.exists()).map(|p| file_row(chunk, &p)).collect();
    VersionDetails { dir: dir.to_path_buf(), row_groups, files }
}

/// A file decoded for the decoder view: all its bytes and every span.
pub fn open_file(path: &Path) -> Result<Decoder, String> {
    if !path.is_file() {
        return Err(format!("{}: not a file", path.display()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (kind, mut spans, problems) = match crate::inspect::inspect(&name, &bytes) {
        Some(i) => (
            Some(i.kind),
            i.spans,
            i.problems.iter().map(|p| format!("at byte {}: {}", p.offset, p.message)).collect(),
        ),
        None => (None, Vec::new(), vec!["not a store file: shown as raw bytes".to_string()]),
    };
    spans.sort_by_key(|s| (s.range.start, std::cmp::Reverse(s.range.end)));
    Ok(Decoder::new(path.to_path_buf(), bytes, kind, spans, problems))
}

fn check(ok: bool) -> Check {
    if ok {
        Check::Ok
    } else {
        Check::Bad
    }
}

/// Size, kind and header checks of one file, from its first bytes (and, for
/// the 24-byte marker, its whole content).
pub fn file_row(chunk: &Path, path: &Path) -> FileRow {
    let name = path.strip_prefix(chunk).unwrap_or(path).display().to_string();
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    let fname = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let kind = kind::detect(&fname, &head[..n]);
    let na = Check::NotApplicable;
    let (magic, version, checksum) = match kind {
        None => (na, na, na),
        Some(FileKind::Parquet) => (check(head[..n.min(4)] == *b"PAR1"), na, na),
        Some(FileKind::EpochMarker) => {
            let full = std::fs::read(path).unwrap_or_default();
            let ok = crate::format::epoch::decode(&full).result.is_ok();
            (check(head.starts_with(b"CEP1")), check(n >= 8 && head[4..8] == [1, 0, 0, 0]), check(ok))
        }
        Some(k) => {
            let magic_ok = n >= 4 && head[..4] == k.magic();
            let version_ok = n >= 8 && head[4..8] == [1, 0, 0, 0];
            // The log's batch checksums are checked by the log index, on a
            // worker: until it reports, nothing has been checked.
            (check(magic_ok), check(version_ok), if k == FileKind::DeltaLog { Check::Pending } else { na })
        }
    };
    FileRow { path: path.to_path_buf(), name, size, kind, magic, version, checksum }
}
