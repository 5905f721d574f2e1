//! `cottas-tui PATH`: a one-line-per-file listing of a chunk or version dir,
//! with each file's kind and decode status, and the embedded demo store.
//!
//! The listing is what a person runs first on a store they do not know, so
//! it must cost the same at 100M quads as at 1,000: files are mapped, not
//! read; a sidecar or base over a few MiB has its header (a base: its
//! footer) checked and the rest left to `verify`; the
//! log is scanned batch by batch, as readers scan it, not decoded into
//! spans. Reading and decoding every file whole held 1 GiB and took 3.2 s
//! for a 10M-quad store with a 27 MB log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::dump;
use crate::format::kind::{self, FileKind};
use crate::inspect;
use crate::inspect::window::{Windowed, LARGE_BASE};
use crate::store::log::index::LogIndex;
use crate::text::plural;

#[derive(clap::Args, Debug, Default)]
pub struct DemoArgs {
    /// Where to build the demo store (default: the user cache dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Rebuild it even if it exists.
    #[arg(long)]
    pub rebuild: bool,
}

/// Lists `path` (a directory) or dumps it (a file).
pub fn run(path: &Path, out: &mut impl Write) -> Result<ExitCode> {
    run_with(path, out, Limits::default())
}

/// [`run`], with the sizes above which files are checked by header only.
pub fn run_with(path: &Path, out: &mut impl Write, limits: Limits) -> Result<ExitCode> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}: cannot open", path.display()))?;
    if meta.is_file() {
        let args = dump::DumpArgs {
            file: path.to_path_buf(),
            json: false,
            hex: false,
            spans: false,
            offset: 0,
            length: None,
            color: super::ColorChoice { color: super::When::Never, no_color: true },
        };
        return Ok(dump::run(&args, out)?.code());
    }
    let mut problems = 0;
    list_dir(path, path, out, &mut problems, limits)?;
    Ok(if problems == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn list_dir(
    root: &Path,
    dir: &Path,
    out: &mut impl Write,
    problems: &mut usize,
    limits: Limits,
) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        let ft = e.file_type()?;
        if ft.is_symlink() {
            let target = std::fs::read_link(&path)?;
            let ok = path.exists();
            writeln!(
                out,
                "{} {rel} -> {}{}",
                if ok { "→" } else { "✗" },
                target.display(),
                if ok { "" } else { "  (dangling)" }
            )?;
            *problems += usize::from(!ok);
        } else if ft.is_dir() {
            writeln!(out, "  {rel}/")?;
            list_dir(root, &path, out, problems, limits)?;
        } else {
            match file_status(&path, limits) {
                Ok(Some(st)) => {
                    *problems += usize::from(!st.clean);
                    writeln!(
                        out,
                        "{} {rel:<32} {:<16} {:>10}  {}",
                        if st.clean { "✓" } else { "✗" },
                        st.kind.id(),
                        humansize::format_size(st.size, humansize::BINARY),
                        st.text
                    )?;
                }
                Ok(None) => writeln!(out, "  {rel:<32} {:<16}", "(other)")?,
                Err(e) => {
                    *problems += 1;
                    writeln!(out, "✗ {rel:<32} {:<16} {:>10}  cannot read: {e}", "?", "")?;
                }
            }
        }
    }
    Ok(())
}

/// The size above which the listing checks a file's header only.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub large: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // Decoding a file whole records a span per field: a 31 MiB
        // `.s.offsets` held 200 MiB of them.
        Limits { large: LARGE_BASE }
    }
}

/// What the listing says of one store file.
struct FileStatus {
    kind: FileKind,
    size: u64,
    clean: bool,
    text: String,
}

/// The kind and status of the file at `path`; `None` when it is not a
/// store file.
fn file_status(path: &Path, limits: Limits) -> std::io::Result<Option<FileStatus>> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    // SAFETY: read-only; version files are never changed in place and the
    // log only grows or is cut after a copy (docs/format.md §12). A change
    // under the map shows as a decode problem in this listing, nothing more.
    let map = if size == 0 { None } else { Some(unsafe { memmap2::Mmap::map(&file) }?) };
    let bytes: &[u8] = map.as_deref().unwrap_or_default();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Some(kind) = kind::detect(&name, &bytes[..bytes.len().min(8)]) else { return Ok(None) };
    let (clean, text) = match kind {
        FileKind::DeltaLog => log_status(path),
        FileKind::EpochMarker => whole_file_status(kind, bytes),
        _ if size > limits.large => header_status(kind, bytes),
        _ => whole_file_status(kind, bytes),
    };
    Ok(Some(FileStatus { kind, size, clean, text }))
}

/// Every field of the file decoded: its first problem, located.
fn whole_file_status(kind: FileKind, bytes: &[u8]) -> (bool, String) {
    let ins = inspect::inspect_as(kind, bytes);
    match ins.problems.first() {
        None => (true, "ok".into()),
        Some(p) => (false, format!("at byte {}: {}", p.offset, p.message)),
    }
}

/// The header (a base: its footer) decoded; the body is `verify`'s.
fn header_status(kind: FileKind, bytes: &[u8]) -> (bool, String) {
    match Windowed::open(kind, bytes) {
        Some(Ok(_)) => (true, "header ok (`verify` reads the rest)".into()),
        Some(Err(problem)) => (false, format!("header: {problem}")),
        // A base whose footer does not validate: the whole-file decode
        // stops at the footer and says where.
        None => whole_file_status(kind, bytes),
    }
}

/// The log's committed batches counted as readers find them, and what
/// follows them.
fn log_status(path: &Path) -> (bool, String) {
    let ix = LogIndex::build(path);
    if let Some(e) = ix.error {
        return (false, e);
    }
    match ix.damage_summary() {
        Some(damage) => (false, damage),
        None => (true, format!("ok, {}", plural(ix.count, "batch", "batches"))),
    }
}

/// Builds the demo store if missing, then lists it.
pub fn demo(args: &DemoArgs, out: &mut impl Write) -> Result<ExitCode> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => crate::demo::default_dir(),
    };
    let built = crate::demo::ensure(&dir, args.rebuild)
        .with_context(|| format!("{}: cannot build the demo store", dir.display()))?;
    writeln!(out, "demo store {} at {}", if built { "built" } else { "found" }, dir.display())?;
    run(&dir, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(dir: &Path, limits: Limits) -> (ExitCode, String) {
        let mut out = Vec::new();
        let code = run_with(dir, &mut out, limits).unwrap();
        (code, String::from_utf8(out).unwrap())
    }

    fn line<'a>(listing: &'a str, file: &str) -> &'a str {
        listing
            .lines()
            .find(|l| l.contains(&format!(" {file} ")))
            .unwrap_or_else(|| panic!("{file}: {listing}"))
    }

    /// Over the limits a file is judged by its header (damage there is
    /// still found, with where), the log by its committed batches; a torn
    /// log tail is named with its offset.
    #[test]
    fn large_files_are_checked_by_header_and_the_log_batch_by_batch() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        crate::demo::ensure(&dir, false).unwrap();
        let header_only = Limits { large: 0 };

        let (code, all) = listing(&dir, Limits::default());
        assert_eq!(code, ExitCode::SUCCESS, "{all}");
        assert!(line(&all, "v2/data.cottas.s.dict").ends_with("  ok"), "{all}");
        let (code, out) = listing(&dir, header_only);
        assert_eq!(code, ExitCode::SUCCESS, "{out}");
        for file in ["v2/data.cottas", "v2/data.cottas.s.dict", "v1/data.cottas.po.presence"] {
            assert!(line(&out, file).ends_with("header ok (`verify` reads the rest)"), "{out}");
        }
        let batches = crate::store::log::index::LogIndex::build(&dir.join("data.deltalog")).count;
        assert!(batches > 1);
        assert!(line(&out, "data.deltalog").ends_with(&format!("ok, {batches} batches")), "{out}");

        let dict = dir.join("v2/data.cottas.s.dict");
        let mut bytes = std::fs::read(&dict).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&dict, &bytes).unwrap();
        let (code, out) = listing(&dir, header_only);
        assert_eq!(code, ExitCode::from(1));
        let bad = line(&out, "v2/data.cottas.s.dict");
        assert!(bad.starts_with('✗') && bad.contains("header:"), "{out}");

        let log = dir.join("data.deltalog");
        let end = std::fs::metadata(&log).unwrap().len();
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b"DLB1\x07").unwrap();
        let (_, out) = listing(&dir, header_only);
        let torn = line(&out, "data.deltalog");
        assert!(torn.starts_with('✗'), "{out}");
        assert!(
            torn.contains(&format!("TORN TAIL at byte {end}: 5 bytes after {batches} batches committed")),
            "{out}"
        );
    }
}
