//! `verify`: a read-only check of every file of a chunk, for the engineer
//! with a damaged store and little time. It never writes.
//!
//! Every finding names the file, the byte offset where known, what was
//! expected, and the next command to run. The checks, per version:
//! * every file decodes (magic, version, lengths, checksums), the Parquet
//!   footer and every page; the digests this program records, where present;
//! * every sidecar, byte for byte, equals the one the base's rows give
//!   (streamed through the writer import uses, in bounded memory, for a base
//!   of any producer and any row order), so a finding names the first byte
//!   that differs; `deep` is accepted and changes nothing (every check is).
//!
//! And for the chunk: `current` resolves to a complete version; the log's
//! torn tail, damage hiding later batches, batches shadowed by the marker,
//! sequence numbers that do not increase, the legacy transport; debris of
//! interrupted operations.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::format::transport::Transport;
use crate::store::base::Base;
use crate::store::base::{digests, footer_copy};
use crate::store::log::{Log, Visibility};
use crate::store::sidecars::SUFFIXES;
use crate::store::versions::layout::{self, BASE, CURRENT, LOG, MARKER};
use crate::store::versions::open::read_marker;
use crate::store::StoreError;

pub const SCHEMA: &str = "cottas-tui.verify/1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Data is damaged or unreachable.
    Error,
    /// Not damage, but something to act on (shadowed writes, debris).
    Warning,
}

#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Relative to the verified directory.
    pub file: String,
    pub offset: Option<u64>,
    pub severity: Severity,
    /// A stable name for the check, for scripts.
    pub check: &'static str,
    pub message: String,
    /// The command to run next.
    pub next: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub target: PathBuf,
    pub deep: bool,
    pub files_checked: usize,
    pub findings: Vec<Finding>,
    pub seconds: f64,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Error).count()
    }
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

#[derive(Clone, Copy)]
pub struct VerifyOptions<'a> {
    /// Kept for scripts that pass `--deep`: every version, whoever wrote it,
    /// is compared byte for byte with the sidecars its rows give.
    pub deep: bool,
    /// Bounds the comparison's dictionary maps (a quarter of it).
    pub memory_limit: usize,
    /// Called with (row groups done, row groups) as a version is read.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl Default for VerifyOptions<'_> {
    fn default() -> Self {
        VerifyOptions { deep: false, memory_limit: 1 << 30, progress: None }
    }
}

struct Ctx {
    root: PathBuf,
    /// The chunk dir, for suggested commands.
    chunk: String,
    findings: Vec<Finding>,
    files: usize,
}

impl Ctx {
    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.root).unwrap_or(p).display().to_string()
    }
    fn add(
        &mut self,
        file: &Path,
        offset: Option<u64>,
        sev: Severity,
        check: &'static str,
        msg: String,
        next: Option<String>,
    ) {
        let file = self.rel(file);
        self.findings.push(Finding { file, offset, severity: sev, check, message: msg, next });
    }
    fn error(
        &mut self,
        file: &Path,
        offset: Option<u64>,
        check: &'static str,
        msg: String,
        next: Option<String>,
    ) {
        self.add(file, offset, Severity::Error, check, msg, next);
    }
    fn store_error(&mut self, file: &Path, check: &'static str, e: &StoreError, next: Option<String>) {
        self.error(file, e.offset(), check, strip_path(&e.to_string(), file), next);
    }
}

/// Error texts start with the path; the finding already names the file.
fn strip_path(msg: &str, file: &Path) -> String {
    let prefix = format!("{}: ", file.display());
    msg.strip_prefix(&prefix).unwrap_or(msg).to_string()
}

/// Verifies a chunk dir (every version, `current`, the log) or a single
/// version dir. `Err` only when it could not run at all.
pub fn verify(target: &Path, opts: VerifyOptions<'_>) -> Result<Report, StoreError> {
    let started = Instant::now();
    let meta = fs::metadata(target).map_err(|e| StoreError::io(target, e))?;
    let bare = meta.is_file();
    let is_version = bare || target.join(BASE).exists();
    let chunk = if bare {
        parent_or_dot(&parent_or_dot(target))
    } else if is_version {
        parent_or_dot(target)
    } else {
        target.to_path_buf()
    };
    let mut cx = Ctx {
        root: if bare { parent_or_dot(target) } else { target.to_path_buf() },
        chunk: shell_arg(&chunk),
        findings: Vec::new(),
        files: 0,
    };
    if bare {
        verify_base(&mut cx, target, true, opts);
    } else if is_version {
        verify_version(&mut cx, target, opts);
    } else {
        let versions = layout::versions(target)?;
        if versions.is_empty() && !target.join(LOG).exists() {
            return Err(StoreError::not_a_store(
                target,
                "no version directories (vN/) and no data.deltalog: not a chunk dir",
            ));
        }
        let current_marker = check_current(&mut cx, target);
        for (_, dir) in &versions {
            verify_version(&mut cx, dir, opts);
        }
        verify_log(&mut cx, &target.join(LOG), current_marker);
        if let Ok(listing) = crate::store::versions::list(target) {
            for d in listing.debris.iter().filter(|d| d.live_pid.is_none()) {
                cx.add(
                    &d.path,
                    None,
                    Severity::Warning,
                    "debris",
                    format!("{} left behind", d.what),
                    Some(format!("cottas-tui gc {} --leftovers --yes", cx.chunk)),
                );
            }
        }
    }
    Ok(Report {
        schema: SCHEMA,
        target: target.to_path_buf(),
        deep: opts.deep,
        files_checked: cx.files,
        findings: cx.findings,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// `current` must point at a complete version. Returns that version's
/// marker (`Some(None)` when it has none), for the log's shadowing check.
fn check_current(cx: &mut Ctx, chunk: &Path) -> Option<Option<u64>> {
    let link = chunk.join(CURRENT);
    let reset = Some(format!("cottas-tui repair reset-current {}", cx.chunk));
    if fs::symlink_metadata(&link).is_err() {
        cx.add(
            &link,
            None,
            Severity::Warning,
            "current",
            "there is no `current` link; readers fall back to the highest complete version".into(),
            reset,
        );
        return None;
    }
    let Ok(target) = fs::read_link(&link) else {
        cx.error(&link, None, "current", "`current` is not a symlink".into(), reset);
        return None;
    };
    let dir = chunk.join(&target);
    if !dir.join(BASE).is_file() {
        cx.error(
            &link,
            None,
            "current",
            format!("`current` points at {} which has no data.cottas", target.display()),
            reset,
        );
        return None;
    }
    match read_marker(&dir.join(MARKER)) {
        Ok(m) => Some(m.map(|m| m.epoch)),
        Err(_) => None, // reported with the version
    }
}

fn verify_version(cx: &mut Ctx, dir: &Path, opts: VerifyOptions<'_>) {
    verify_base(cx, &dir.join(BASE), false, opts);
}

/// `dir` itself, or `.` for a bare relative name (whose parent is empty).
fn parent_or_dot(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A path as it must be typed in a POSIX shell: bare when that is safe,
/// single-quoted otherwise.
pub fn shell_arg(p: &Path) -> String {
    let s = p.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command that rebuilds the sidecars of the base at `base_path`, as it
/// must be typed: `repair rebuild-sidecars` for a `vN` of a chunk (under the
/// chunk's writer lock), `index` for a version dir on its own, none for a
/// bare file not named data.cottas (nothing would find sidecars named after
/// it).
fn rebuild_command(base_path: &Path) -> Option<String> {
    if base_path.file_name().is_none_or(|n| n != BASE) {
        return None;
    }
    Some(match version_in_chunk(base_path) {
        Some((chunk, v)) => format!("cottas-tui repair rebuild-sidecars {} {v} --yes", shell_arg(&chunk)),
        None => format!("cottas-tui index {}", shell_arg(&parent_or_dot(base_path))),
    })
}

/// The chunk and the version name (`v2`) of the base at `base_path`, when
/// its directory is a `vN` of a chunk (one with `current` or a log): what a
/// repair under the chunk's writer lock needs.
fn version_in_chunk(base_path: &Path) -> Option<(PathBuf, String)> {
    let dir = parent_or_dot(base_path);
    let version = dir.file_name()?.to_str()?.to_string();
    let chunk = parent_or_dot(&dir);
    let in_chunk = chunk.join(CURRENT).exists() || chunk.join(LOG).exists();
    (in_chunk && layout::version_number(&version).is_some()).then_some((chunk, version))
}

/// Verifies one base and its sidecars. A bare file (`bare`) has no marker
/// and no digest file of its own.
fn verify_base(cx: &mut Ctx, base_path: &Path, bare: bool, opts: VerifyOptions<'_>) {
    let dir = parent_or_dot(base_path);
    let dir = dir.as_path();
    let rebuild = rebuild_command(base_path);
    let base_path = base_path.to_path_buf();
    cx.files += 1;
    let marker_path = dir.join(MARKER);
    if !bare && marker_path.exists() {
        cx.files += 1;
        if let Err(e) = read_marker(&marker_path) {
            let why = format!(
                "{}; no repair rewrites a marker: its epoch is the only record of which log batches this base already holds (`cottas-tui log {}` lists the batches and their epochs)",
                strip_path(&e.to_string(), &marker_path),
                cx.chunk
            );
            let next = Some(format!("cottas-tui dump --hex {}", shell_arg(&marker_path)));
            cx.error(&marker_path, e.offset(), "marker", why, next);
        }
    }
    let digests = match if bare { Ok(None) } else { digests::read(dir) } {
        Ok(d) => d,
        Err(e) => {
            // The rebuild sets a digest file that does not parse aside
            // (keeping it) and records the files as they are.
            cx.store_error(&dir.join(digests::DIGESTS), "digests", &e, rebuild.clone());
            None
        }
    };
    if let Some(damage) = digests.as_ref().and_then(|d| recorded_damage(&base_path, &d.base)) {
        let (check, next) = if damage.restorable {
            ("footer", restore_command(&base_path))
        } else {
            ("parquet", Some(format!("cottas-tui dump {}", shell_arg(&base_path))))
        };
        cx.error(&base_path, Some(damage.offset), check, damage.message, next);
        stream_checks(cx, dir, None, digests.as_ref(), rebuild, opts);
        return;
    }
    let base = match Base::open_checked(&base_path, digests.as_ref().map(|d| &d.base)) {
        Ok(b) => Some(b),
        Err(e) => {
            cx.store_error(
                &base_path,
                "parquet",
                &e,
                Some(format!("cottas-tui dump {}", shell_arg(&base_path))),
            );
            None
        }
    };
    if let (Some(b), false) = (&base, bare) {
        if let Err(e) = footer_copy::check_copy(dir, b.raw_bytes()) {
            cx.store_error(&dir.join(footer_copy::FOOTER_COPY), "footer-copy", &e, rebuild.clone());
        }
    }
    stream_checks(cx, dir, base.as_ref(), digests.as_ref(), rebuild, opts);
}

/// The base's length, magic and footer against its recorded digests
/// (`footer_copy::check_recorded`, as every reader checks them).
fn recorded_damage(base_path: &Path, d: &digests::BaseDigests) -> Option<footer_copy::RegionDamage> {
    let raw = crate::store::sidecars::checked::map_file(base_path).ok()?;
    footer_copy::check_recorded(base_path, (*raw).as_ref(), d).err()
}

/// The command that puts back the footer of the base at `base_path` from
/// its copy: for a `vN` of a chunk only (the repair takes the chunk's
/// writer lock).
fn restore_command(base_path: &Path) -> Option<String> {
    let (chunk, version) = version_in_chunk(base_path)?;
    Some(format!("cottas-tui repair restore-footer {} {version} --yes", shell_arg(&chunk)))
}

/// The streamed checks (`against_rows`), for every base whoever wrote it:
/// the sidecars against the digests this program recorded, where there are
/// any, and byte for byte against the sidecars the rows give. When the base
/// does not open, only the digests can be checked.
fn stream_checks(
    cx: &mut Ctx,
    dir: &Path,
    base: Option<&Base>,
    d: Option<&digests::Digests>,
    rebuild: Option<String>,
    opts: VerifyOptions<'_>,
) {
    let progress = |done: u64, all: u64| {
        if let Some(p) = opts.progress {
            p(done, all)
        }
    };
    let found = match (base, d) {
        (Some(base), _) => super::against_rows::check(base, dir, d, opts.memory_limit / 4, &progress),
        (None, Some(d)) => super::against_rows::check_files(dir, d),
        (None, None) => Vec::new(),
    };
    cx.files += SUFFIXES.iter().filter(|s| dir.join(format!("{BASE}{s}")).exists()).count();
    if d.is_some() {
        cx.files += 1;
    }
    if dir.join(digests::BLOCKS).exists() {
        cx.files += 1;
    }
    for f in found {
        let next = match f.check {
            "parquet-pages" | "io" => None,
            _ => rebuild.clone(),
        };
        let severity = if f.warning { Severity::Warning } else { Severity::Error };
        let mut message = strip_path(&f.message, &f.path);
        if f.check == "parquet-pages" {
            message.push_str(NO_ROWS_REPAIR);
        }
        cx.add(&f.path, f.offset, severity, f.check, message, next);
    }
}

/// Why a damaged column chunk has no repair.
const NO_ROWS_REPAIR: &str = "; no repair rebuilds a base's rows: make an older version current (`rollback`) or restore this one from a backup";

fn verify_log(cx: &mut Ctx, path: &Path, marker: Option<Option<u64>>) {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            cx.add(
                path,
                None,
                Severity::Warning,
                "log-missing",
                "no delta log (the next update creates one)".into(),
                None,
            );
            return;
        }
        Err(e) => {
            cx.error(path, None, "io", e.to_string(), None);
            return;
        }
    };
    cx.files += 1;
    let log = match Log::decode(path, bytes) {
        Ok(l) => l,
        Err(e) => {
            let next = Some(format!("cottas-tui dump --hex {}", shell_arg(path)));
            let why = format!(
                "{}; no repair rewrites a log's header: it is the only record of the log's version, and a log written by a newer release needs that release",
                strip_path(&e.to_string(), path)
            );
            cx.error(path, e.offset(), "log-header", why, next);
            return;
        }
    };
    if log.transport != Transport::Raw {
        cx.add(path, Some(0), Severity::Warning, "legacy-transport", "written in the legacy code-point transport (factoidal before #445); we append in the same transport".into(), None);
    }
    if let Some(d) = log.tail.damage() {
        let cut = Some(format!("cottas-tui repair truncate-torn-tail {} --yes", cx.chunk));
        let detail = d.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default();
        match log.tail.hidden() {
            [] => cx.error(path, Some(d.offset), "log-tail", format!("{} after the last committed batch {} not a batch ({}){detail}; readers ignore {}", crate::text::plural(d.len, "byte", "bytes"), crate::text::noun(d.len, "is", "are"), d.reason.as_str(), crate::text::noun(d.len, "it", "them")), cut),
            hidden => cx.error(path, Some(d.offset), "log-damage", format!("damaged ({}){detail}, and {} it (first at offset {}): committed writes no reader can reach; queries refuse to run", d.reason.as_str(), crate::text::plural(hidden.len(), "valid batch follows", "valid batches follow"), hidden[0]), cut),
        }
    }
    let mut last_seq: Option<u64> = None;
    for f in &log.frames {
        if let Some(prev) = last_seq {
            if f.batch.seq <= prev {
                cx.add(
                    path,
                    Some(f.offset),
                    Severity::Warning,
                    "log-seq",
                    format!(
                        "batch at offset {} has seq {} after seq {prev}: sequence numbers do not increase",
                        f.offset, f.batch.seq
                    ),
                    None,
                );
            }
        }
        last_seq = Some(f.batch.seq);
    }
    let Some(Some(ce)) = marker else { return };
    let shadowed: Vec<_> = log.shadowed(Visibility::over(Some(ce))).collect();
    let Some(first) = shadowed.first() else { return };
    let what = format!(
        "{} db_epoch ≤ the marker of `current` ({ce}), the first at offset {} (seq {}, epoch {}): folded already, or writes that are silently invisible",
        crate::text::plural(shadowed.len(), "batch has", "batches have"),
        first.offset,
        first.batch.seq,
        first.batch.epoch
    );
    let inspect = format!("cottas-tui log {} --from {}", cx.chunk, first.batch.seq);
    // Only shadowed batches and no torn tail: what a compaction killed
    // before truncating the log leaves, and what `compact` finishes.
    let finishable = shadowed.len() == log.frames.len() && log.bytes.len() as u64 == log.committed_len();
    let (what, next) = if finishable {
        let compact = format!("cottas-tui compact {}", cx.chunk);
        (format!("{what}; `{inspect}` lists them, and `{compact}` drops them, keeping their bytes"), compact)
    } else {
        (what, inspect)
    };
    cx.add(path, Some(first.offset), Severity::Warning, "log-shadowed", what, Some(next));
}
