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

/// Dictionary tokens sampled per column for the store's namespaces.
const NAMESPACE_SAMPLE: u32 = 4096;
/// Neighbouring ids read together by that sample.
const SAMPLE_RUN: u64 = 64;

/// The current version's most frequent namespaces, from its dictionaries:
/// every predicate and graph, and an even sample of subjects and objects
/// (reads a few thousand tokens, whatever the store's size). With the
/// version's directory name, so a cached list is known stale after a flip.
pub fn namespaces(chunk: &Path) -> Result<(String, Vec<(String, usize)>), String> {
    let store = crate::store::versions::open::Store::open(chunk).map_err(|e| e.to_string())?;
    let version =
        store.layout.version_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tokens: Vec<String> = Vec::new();
    for c in 0..4 {
        let Some(dict) = store.sidecars.dict(c) else { continue };
        let n = dict.len() as u64;
        // Predicates are few and each names a namespace people query by:
        // all of them (up to 16 samples' worth).
        let cap = if c == 1 { 16 * NAMESPACE_SAMPLE } else { NAMESPACE_SAMPLE };
        let take = n.min(u64::from(cap));
        // Runs of neighbouring ids, evenly spread: a run's tokens share the
        // dictionary's blocks, so 4,096 samples touch about 200 blocks, not
        // 12,000 (134–311 ms at 100M quads when each sample was alone).
        let runs = take.div_ceil(SAMPLE_RUN).max(1);
        for k in 0..take {
            let id = ((k / SAMPLE_RUN) * n / runs + k % SAMPLE_RUN).min(n - 1) as u32;
            if let Ok(t) = dict.token(id) {
                tokens.push(String::from_utf8_lossy(t).into_owned());
            }
        }
    }
    let list = crate::tui::views::prefixes::frequent_namespaces(tokens.iter().map(String::as_str), 16);
    Ok((version, list))
}

pub use crate::inspect::window::{LARGE_BASE, LARGE_FILE};

/// A file decoded for the decoder view: its bytes and its spans (near the
/// cursor only, for a large sidecar).
pub fn open_file(path: &Path) -> Result<Decoder, String> {
    let mut d = decode_file(path)?;
    d.add_marks(crate::inspect::recorded_problems(path, &d.bytes));
    Ok(d)
}

fn decode_file(path: &Path) -> Result<Decoder, String> {
    if !path.is_file() {
        return Err(format!("{}: not a file", path.display()));
    }
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let len = std::fs::metadata(path).map_err(err)?.len();
    if len > LARGE_BASE {
        let file = std::fs::File::open(path).map_err(err)?;
        // SAFETY: version files are never modified in place (docs/format.md §12).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(err)?;
        let kind = crate::format::kind::detect(&name, &map[..map.len().min(64)]);
        let windowed = kind.filter(|&k| len > LARGE_FILE || k == crate::format::kind::FileKind::Parquet);
        match windowed.and_then(|k| crate::inspect::window::Windowed::open(k, &map)) {
            Some(Ok(win)) => return Ok(Decoder::windowed(path.to_path_buf(), map, win)),
            // A damaged header of a large sidecar: its bytes and the reason,
            // not a whole-file decode.
            Some(Err(problem)) => {
                let mut d = Decoder::new(path.to_path_buf(), Vec::new(), kind, Vec::new(), vec![problem]);
                d.bytes = crate::tui::views::decoder::FileBytes::Mapped(map);
                return Ok(d);
            }
            None => {}
        }
        return Ok(decoded(path, &name, crate::tui::views::decoder::FileBytes::Mapped(map)));
    }
    let bytes = std::fs::read(path).map_err(err)?;
    Ok(decoded(path, &name, crate::tui::views::decoder::FileBytes::Read(bytes)))
}

/// Every span of the whole file.
fn decoded(path: &Path, name: &str, bytes: crate::tui::views::decoder::FileBytes) -> Decoder {
    let (kind, mut spans, problems) = match crate::inspect::inspect(name, &bytes) {
        Some(i) => (
            Some(i.kind),
            i.spans,
            i.problems.iter().map(|p| format!("at byte {}: {}", p.offset, p.message)).collect(),
        ),
        None => (None, Vec::new(), vec!["not a store file: shown as raw bytes".to_string()]),
    };
    spans.sort_by_key(|s| (s.range.start, std::cmp::Reverse(s.range.end)));
    let mut d = Decoder::new(path.to_path_buf(), Vec::new(), kind, spans, problems);
    d.bytes = bytes;
    d
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::action::Action;
    use crate::tui::state::Screen;
    use crate::tui::views::decoder;

    /// A sidecar over the size limit opens at once with the fields near the
    /// cursor only, follows the cursor anywhere in the file, and steps from
    /// field to field past the edge of what is shown.
    #[test]
    fn a_large_sidecar_is_shown_near_the_cursor_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.cottas.o.presence");
        let mut p = crate::format::presence::Presence::new(300, 1_000_003);
        p.set(150, 7);
        let bytes = crate::format::presence::encode(&p);
        assert!(bytes.len() as u64 > LARGE_FILE);
        std::fs::write(&path, &bytes).unwrap();
        let mut d = open_file(&path).unwrap();
        assert!(d.window.is_some() && d.spans.len() < 10, "{} spans", d.spans.len());
        assert_eq!(d.spans[2].value.as_deref(), Some("300"), "num_rgs from the header");
        let layout = Screen { page: 20, width: 120, height: 30 };
        let middle = 16 + 150 * 1_000_003 / 8;
        d.goto(middle, layout).unwrap();
        let sel = d.selected_span().unwrap();
        assert_eq!(sel.name, "bitmap.row_group[150]", "{sel:?}");
        assert!(sel.range.contains(&middle));
        // Stepping down the tree past the last field shown moves on to the next.
        d.tree_focus = true;
        for _ in 0..3 {
            decoder::update(&mut d, &Action::Down(1), layout);
        }
        let sel = d.selected_span().unwrap();
        assert!(sel.name.starts_with("bitmap.row_group[15"), "{sel:?}");
        assert!(d.cursor > middle);
    }

    /// A base over the size limit opens windowed: its tree lists every row
    /// group (closed) with only the cursor's chunk's pages decoded, and a
    /// jump into another chunk decodes that chunk's pages.
    #[test]
    fn a_large_base_lists_every_chunk_and_decodes_the_cursors_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.cottas");
        // Literals that do not compress, so the base passes the limit.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let rows: Vec<[String; 4]> = (0..4800)
            .map(|i| {
                let noise: String = (0..256)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        format!("{:08x}", x as u32)
                    })
                    .collect();
                [format!("<s{i:05}>"), "<p>".into(), format!("\"{noise}\""), "DEFAULT".into()]
            })
            .collect();
        let opts = crate::store::base::writer::BaseOptions {
            row_group_size: 800,
            zstd_level: 1,
            zstd_level_small: 1,
            ..Default::default()
        };
        crate::store::base::writer::write_base(&path, &rows, &opts).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > LARGE_BASE, "{len} bytes");
        let mut d = open_file(&path).unwrap();
        assert!(d.window.is_some());
        let groups: Vec<&str> = d
            .visible()
            .iter()
            .map(|&i| d.tree.nodes[i].label.as_str())
            .filter(|l| l.starts_with("row_group"))
            .collect();
        assert_eq!(groups.len(), 6, "every row group listed: {groups:?}");
        let pages = |d: &decoder::Decoder, rg: usize| {
            d.spans.iter().filter(|s| s.name.starts_with(&format!("row_group[{rg}].o.page["))).count()
        };
        assert_eq!(pages(&d, 4), 0, "a far chunk's pages are not decoded");
        // Into row group 4's o column.
        let target = d.spans.iter().find(|s| s.name == "row_group[4].o").unwrap().range.clone();
        let layout = Screen { page: 20, width: 160, height: 30 };
        d.goto(target.start + (target.end - target.start) / 2, layout).unwrap();
        assert!(pages(&d, 4) > 0, "the cursor's chunk's pages are decoded");
        let sel = d.selected_span().unwrap();
        assert!(sel.name.starts_with("row_group[4].o.page["), "{sel:?}");
        assert_eq!(pages(&d, 0), 0);
    }
}
