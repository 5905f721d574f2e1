//! `verify` of a version, whoever wrote it, in bounded memory and on both
//! cores: every sidecar is streamed against its digests (where this program
//! recorded some), and compared byte for byte with the sidecars its rows give.
//!
//! The rows are decoded on one thread (every page, each column chunk checked
//! against its digest) and fed on another to the same streaming builder
//! import and compaction write with (`store::sidecars::derive`), in compare
//! mode. A third thread hashes the sidecars against `cottas-tui.digests.json`
//! and `cottas-tui.blocks`. Nothing holds a whole sidecar, so a 100M-quad
//! version (6 GB of sidecars) verifies in the memory a 1M one does.

use std::path::{Path, PathBuf};

use crate::format::blocks::{self, TableBuilder};
use crate::store::base::digests::{self, Digests};
use crate::store::base::Base;
use crate::store::sidecars::derive::{derive, DeriveError};
use crate::store::sidecars::stream::{Mismatch, Mode};
use crate::store::sidecars::SUFFIXES;
use crate::store::versions::layout::BASE;

/// A finding in the making: file, offset, check, message.
pub struct Found {
    pub path: PathBuf,
    pub offset: Option<u64>,
    pub check: &'static str,
    pub message: String,
    /// A missing sidecar is a warning (lookups scan more), not damage.
    pub warning: bool,
}

pub use crate::store::sidecars::derive::OnProgress;

/// Checks the version in `dir` (its base already opened as `base`), with
/// its digests when it has them.
pub fn check(
    base: &Base,
    dir: &Path,
    d: Option<&Digests>,
    budget: usize,
    progress: OnProgress,
) -> Vec<Found> {
    std::thread::scope(|s| {
        let files = s.spawn(|| d.map(|d| check_files(dir, d)).unwrap_or_default());
        let mut found = against_rows(base, budget, progress);
        found.extend(files.join().unwrap_or_else(|_| {
            vec![found_error(dir, None, "io", "the digest check stopped unexpectedly".into())]
        }));
        found
    })
}

fn found_error(path: &Path, offset: Option<u64>, check: &'static str, message: String) -> Found {
    Found { path: path.to_path_buf(), offset, check, message, warning: false }
}

/// Each sidecar, streamed once: its whole-file digest against the JSON and
/// its block digests against `cottas-tui.blocks`.
pub fn check_files(dir: &Path, d: &Digests) -> Vec<Found> {
    let mut found = Vec::new();
    let blocks_path = dir.join(digests::BLOCKS);
    let table = match std::fs::read(&blocks_path) {
        Ok(bytes) => match blocks::decode(&bytes).result {
            Ok(t) => Some((t, bytes)),
            Err(e) => {
                found.push(found_error(&blocks_path, Some(e.offset), "blocks", e.to_string()));
                None
            }
        },
        Err(_) => None,
    };
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let path = dir.join(format!("{BASE}{suffix}"));
        let mut builder = TableBuilder::new(i as u32);
        match stream_file(&path, &mut builder) {
            Ok(true) => {}
            Ok(false) => continue, // missing: reported by the comparison
            Err(e) => {
                found.push(found_error(&path, None, "io", e.to_string()));
                continue;
            }
        }
        let have = builder.finish();
        let recorded = d.sidecars.get(*suffix);
        let matches = recorded.is_some_and(|r| {
            r.len == have.file_len && u64::from_str_radix(&r.xxh64, 16).ok() == Some(have.file_xxh64)
        });
        if !matches {
            let msg = format!(
                "does not match its digest in {}: the file changed since it was written",
                digests::DIGESTS
            );
            found.push(found_error(&path, None, "digest", msg));
        }
        if let Some((t, bytes)) = &table {
            if let Some(f) = block_mismatch(&blocks_path, &path, t, bytes, &have, recorded) {
                found.push(f);
            }
        }
    }
    found
}

/// Feeds the file at `path` to `builder`; `false` when there is no file.
fn stream_file(path: &Path, builder: &mut TableBuilder) -> std::io::Result<bool> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut piece = vec![0u8; 256 * blocks::BLOCK_SIZE as usize];
    loop {
        let mut n = 0;
        while n < piece.len() {
            match file.read(&mut piece[n..])? {
                0 => break,
                k => n += k,
            }
        }
        builder.feed(&piece[..n]);
        if n < piece.len() {
            return Ok(true);
        }
    }
}

/// The first block of `have` whose digest differs from the table's, or a
/// table made for another file than the JSON records.
fn block_mismatch(
    blocks_path: &Path,
    sidecar: &Path,
    t: &blocks::Blocks,
    bytes: &[u8],
    have: &blocks::Table,
    recorded: Option<&digests::Span>,
) -> Option<Found> {
    let e = t.entries.iter().find(|e| e.sidecar == have.sidecar)?;
    let suffix = SUFFIXES[e.sidecar as usize];
    if recorded.and_then(|r| u64::from_str_radix(&r.xxh64, 16).ok()) != Some(e.file_xxh64) {
        let msg =
            format!("its table for {suffix} was made for another file than {} records", digests::DIGESTS);
        return Some(found_error(blocks_path, Some(e.table_offset), "blocks", msg));
    }
    let stored = bytes.get(e.table_offset as usize..)?.chunks_exact(8).take(e.num_blocks as usize);
    let stored = stored.map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let size = u64::from(t.block_size);
    let k = stored
        .zip(&have.digests)
        .position(|(s, h)| s != *h)
        .or((e.num_blocks != have.digests.len() as u64).then_some(0))?;
    let (from, to) = (k as u64 * size, ((k as u64 + 1) * size).min(have.file_len));
    let msg = format!("bytes {from}..{to} do not match their block digest in {}", digests::BLOCKS);
    Some(found_error(sidecar, Some(from), "blocks", msg))
}

/// Compares the sidecars beside `base` with those its rows give.
fn against_rows(base: &Base, budget: usize, progress: OnProgress) -> Vec<Found> {
    let spill = match SpillDir::create() {
        Ok(s) => s,
        Err(e) => return vec![found_error(&std::env::temp_dir(), None, "io", e.to_string())],
    };
    match derive(base, base.path(), &spill.0, budget, Mode::Compare, progress) {
        Ok(built) => built.mismatches.into_iter().map(describe).collect(),
        Err(DeriveError::Base(e)) => {
            vec![found_error(base.path(), e.offset(), "parquet-pages", e.to_string())]
        }
        Err(DeriveError::Io(e)) => vec![found_error(e.path(), None, "io", e.to_string())],
    }
}

/// A mismatch as a finding named by what the file holds.
fn describe(m: Mismatch) -> Found {
    let name = m.path.to_string_lossy();
    let Some(have) = m.have_len else {
        let message = "missing: lookups that need it scan more".to_string();
        return Found { path: m.path, offset: None, check: "sidecar-missing", message, warning: true };
    };
    if m.want_len == 0 {
        let message = "exists, but the rows give no such sidecar (a dimension is 0)".to_string();
        return found_error(&m.path, None, "extra-sidecar", message);
    }
    let check = if m.offset < 16 {
        "dimensions"
    } else if name.ends_with(".presence") && !name.ends_with(".po.presence") {
        "presence-bits"
    } else if name.ends_with(".dict") {
        "dict-cells"
    } else if name.ends_with(".s.offsets") {
        "s-offsets"
    } else if name.ends_with(".p.offsets") {
        "p-offsets"
    } else {
        "po-presence"
    };
    let message = format!(
        "differs from the sidecar its rows give, first at byte {} ({have} bytes on disk, {} expected)",
        m.offset, m.want_len
    );
    found_error(&m.path, Some(m.offset), check, message)
}

const SPILL_PREFIX: &str = "cottas-tui-verify.";

/// Removes the spill directories of verifies that were killed (a `kill -9`
/// skips `Drop`): `cottas-tui-verify.<pid>.<n>` whose process is gone. Only
/// where `/proc` says which processes live; a pid reused since keeps its
/// directory until that process ends too.
fn remove_orphans(tmp: &std::path::Path) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) =
            name.to_str().and_then(|n| n.strip_prefix(SPILL_PREFIX)).and_then(|r| r.split('.').next())
        else {
            continue;
        };
        let gone =
            pid.parse::<u32>().is_ok_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A temp directory for the comparison's id stream and dictionary runs,
/// removed when the check ends however it ends (a killed verify's is
/// removed by the next one: [`remove_orphans`]).
struct SpillDir(PathBuf);

impl SpillDir {
    fn create() -> std::io::Result<Self> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        if n == 0 {
            remove_orphans(&std::env::temp_dir());
        }
        let path = std::env::temp_dir().join(format!("{SPILL_PREFIX}{}.{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(SpillDir(path))
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
