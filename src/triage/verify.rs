//! `verify`: a read-only check of every file of a chunk, for the engineer
//! with a damaged store and little time. It never writes.
//!
//! Every finding names the file, the byte offset where known, what was
//! expected, and the next command to run. The checks, per version:
//! * every file decodes (magic, version, lengths, checksums), the Parquet
//!   footer and every page; the digests this program records, where present;
//! * the sidecars agree with each other and with the base: token counts,
//!   row-group and row counts, dictionaries sorted, unique and equal to the
//!   distinct cells of their column, `.s.offsets` ranges contiguous and equal
//!   to the rows, presence bits equal to the rows;
//! * with `deep`, every sidecar rebuilt in memory and compared byte for byte.
//!
//! And for the chunk: `current` resolves to a complete version; the log's
//! torn tail, damage hiding later batches, batches shadowed by the marker,
//! sequence numbers that do not increase, the legacy transport; debris of
//! interrupted operations.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::format::dict::Dict;
use crate::format::presence::Presence;
use crate::format::s_offsets::SOffsets;
use crate::format::transport::Transport;
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets, FormatError};
use crate::store::base::digests;
use crate::store::base::Base;
use crate::store::log::Log;
use crate::store::sidecars::{self, sidecar_path, SUFFIXES};
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
    /// Versions this program wrote are always compared with the sidecars
    /// their rows give; `deep` does that for other producers' versions too.
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
    fn format_error(&mut self, file: &Path, check: &'static str, e: &FormatError, next: Option<String>) {
        let text = e.to_string();
        let prefix = format!("at byte {} ({:#x}): ", e.offset, e.offset);
        let text = text.strip_prefix(&prefix).map(str::to_owned).unwrap_or(text);
        self.error(file, Some(e.offset), check, text, next);
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
                    Some(format!("cottas-tui gc {} --keep 1000 --yes", cx.chunk)),
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
    let dir = parent_or_dot(base_path);
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let chunk = parent_or_dot(&dir);
    let in_chunk = chunk.join(CURRENT).exists() || chunk.join(LOG).exists();
    match name {
        Some(v) if in_chunk && layout::version_number(&v).is_some() => {
            Some(format!("cottas-tui repair rebuild-sidecars {} {v} --yes", shell_arg(&chunk)))
        }
        _ => Some(format!("cottas-tui index {}", shell_arg(&dir))),
    }
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
            cx.store_error(
                &marker_path,
                "marker",
                &e,
                Some(format!("cottas-tui dump --hex {}", shell_arg(&marker_path))),
            );
        }
    }
    let digests = match if bare { Ok(None) } else { digests::read(dir) } {
        Ok(d) => d,
        Err(e) => {
            cx.store_error(&dir.join(digests::DIGESTS), "digests", &e, None);
            None
        }
    };
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
    if let (Some(d), Some(b)) = (&digests, &base) {
        if verify_written_here(cx, dir, b, d, rebuild.clone(), opts) {
            return;
        }
    }
    if let Some(d) = &digests {
        check_blocks(cx, dir, &base_path, d, rebuild.clone());
    }
    let files = read_sidecars(cx, &base_path, digests.as_ref(), rebuild.clone());
    let Some(base) = base else { return };
    // Every page of every column chunk decodes (and matches its digest).
    let mut columns_ok = true;
    for rg in 0..base.num_row_groups() {
        for col in 0..4 {
            if let Err(e) = base.read_column(rg, col) {
                cx.store_error(&base_path, "parquet-pages", &e, None);
                columns_ok = false;
            }
        }
    }
    if !columns_ok {
        return;
    }
    cross_check(cx, &base, &files, rebuild.clone());
    if opts.deep {
        deep_compare(cx, &base_path, &base, rebuild);
    }
}

/// A version with digests (written by this program): streamed checks in
/// bounded memory (`against_rows`), which include every check below.
/// `false` when its rows are not in SPOG order (an indexed base of another
/// producer): nothing is reported, the in-memory checks take over.
fn verify_written_here(
    cx: &mut Ctx,
    dir: &Path,
    base: &Base,
    d: &digests::Digests,
    rebuild: Option<String>,
    opts: VerifyOptions<'_>,
) -> bool {
    let progress = |done: u64, all: u64| {
        if let Some(p) = opts.progress {
            p(done, all)
        }
    };
    let Some(found) = super::against_rows::check(base, dir, d, opts.memory_limit / 4, &progress) else {
        return false;
    };
    cx.files += 1 + SUFFIXES.iter().filter(|s| dir.join(format!("{BASE}{s}")).exists()).count();
    if dir.join(digests::BLOCKS).exists() {
        cx.files += 1;
    }
    for f in found {
        let next = match f.check {
            "parquet-pages" | "io" => None,
            _ => rebuild.clone(),
        };
        let severity = if f.warning { Severity::Warning } else { Severity::Error };
        let message = strip_path(&f.message, &f.path);
        cx.add(&f.path, f.offset, severity, f.check, message, next);
    }
    true
}

/// `cottas-tui.blocks`, when present: it decodes, each table is the one of
/// its sidecar's current bytes, and was made for the file the JSON records.
fn check_blocks(cx: &mut Ctx, dir: &Path, base_path: &Path, d: &digests::Digests, rebuild: Option<String>) {
    let path = dir.join(digests::BLOCKS);
    let Ok(bytes) = fs::read(&path) else { return };
    cx.files += 1;
    let table = match crate::format::blocks::decode(&bytes).result {
        Ok(t) => t,
        Err(e) => return cx.format_error(&path, "blocks", &e, rebuild),
    };
    for e in &table.entries {
        let suffix = SUFFIXES[e.sidecar as usize];
        let sidecar = sidecar_path(base_path, suffix);
        let recorded = d.sidecars.get(suffix).and_then(|s| u64::from_str_radix(&s.xxh64, 16).ok());
        if recorded != Some(e.file_xxh64) {
            let msg =
                format!("its table for {suffix} was made for another file than {} records", digests::DIGESTS);
            cx.error(&path, Some(e.table_offset), "blocks", msg, rebuild.clone());
            continue;
        }
        let Ok(file) = fs::read(&sidecar) else { continue };
        let want = crate::format::blocks::table_of(&file, table.block_size);
        let have = bytes[e.table_offset as usize..][..8 * e.num_blocks as usize]
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8")));
        let size = u64::from(table.block_size);
        if let Some(k) =
            have.zip(&want).position(|(h, w)| h != *w).or((e.num_blocks != want.len() as u64).then_some(0))
        {
            let (from, to) = (k as u64 * size, ((k as u64 + 1) * size).min(file.len() as u64));
            let msg = format!("bytes {from}..{to} do not match their block digest in {}", digests::BLOCKS);
            cx.error(&sidecar, Some(from), "blocks", msg, rebuild.clone());
        }
    }
}

/// The decoded sidecars of a version (`None` where missing or undecodable).
#[derive(Default)]
struct Decoded {
    dicts: [Option<Dict>; 4],
    presence: [Option<Presence>; 4],
    p_offsets: Option<p_offsets::POffsets>,
    po_presence: Option<po_presence::PoPresence>,
    s_offsets: Option<SOffsets>,
}

fn read_sidecars(
    cx: &mut Ctx,
    base_path: &Path,
    digests: Option<&digests::Digests>,
    rebuild: Option<String>,
) -> Decoded {
    let mut d = Decoded::default();
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let path = sidecar_path(base_path, suffix);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                cx.add(
                    &path,
                    None,
                    Severity::Warning,
                    "sidecar-missing",
                    "missing: lookups that need it scan more".into(),
                    rebuild.clone(),
                );
                continue;
            }
            Err(e) => {
                cx.error(&path, None, "io", e.to_string(), None);
                continue;
            }
        };
        cx.files += 1;
        if let Some(dg) = digests {
            match dg.sidecars.get(*suffix) {
                Some(s) if digests::matches(s, &bytes) => {}
                _ => cx.error(
                    &path,
                    None,
                    "digest",
                    format!(
                        "does not match its digest in {}: the file changed since it was written",
                        digests::DIGESTS
                    ),
                    rebuild.clone(),
                ),
            }
        }
        macro_rules! take {
            ($slot:expr, $decode:path) => {
                match $decode(&bytes).result {
                    Ok(v) => $slot = Some(v),
                    Err(e) => cx.format_error(&path, "decode", &e, rebuild.clone()),
                }
            };
        }
        match i {
            0..=3 => take!(d.dicts[i], dict::decode),
            4..=7 => take!(d.presence[i - 4], presence::decode),
            8 => take!(d.p_offsets, p_offsets::decode),
            9 => take!(d.po_presence, po_presence::decode),
            _ => take!(d.s_offsets, s_offsets::decode),
        }
    }
    d
}

use crate::store::sidecars::COLUMNS as COLS;
/// At most this many findings of one kind per file; then a count.
const CAP: usize = 5;

fn cross_check(cx: &mut Ctx, base: &Base, d: &Decoded, rebuild: Option<String>) {
    let dir = base.path().parent().unwrap_or(Path::new(".")).to_path_buf();
    let path = |suffix: &str| dir.join(format!("{BASE}{suffix}"));
    let rgs = base.num_row_groups() as u32;
    let len = |c: usize| d.dicts[c].as_ref().map(|x| x.len() as u32);
    // Dimensions against the dictionaries and the footer.
    for c in 0..4 {
        if let (Some(p), Some(n)) = (&d.presence[c], len(c)) {
            if p.num_rgs != rgs || p.num_tokens != n {
                cx.error(
                    &path(SUFFIXES[4 + c]),
                    Some(8),
                    "dimensions",
                    format!(
                        "{} row groups × {} tokens; the footer has {rgs} row groups and .{}.dict {n} tokens",
                        p.num_rgs, p.num_tokens, COLS[c]
                    ),
                    rebuild.clone(),
                );
            }
        }
    }
    if let (Some(p), Some(n)) = (&d.p_offsets, len(1)) {
        if p.num_rgs != rgs || p.num_preds != n {
            cx.error(
                &path(".p.offsets"),
                Some(8),
                "dimensions",
                format!("{} row groups × {} predicates; expected {rgs} × {n}", p.num_rgs, p.num_preds),
                rebuild.clone(),
            );
        }
    }
    if let (Some(p), Some(np), Some(no)) = (&d.po_presence, len(1), len(2)) {
        if p.num_rgs != rgs || p.pred_dict_size != np || p.obj_dict_size != no {
            cx.error(
                &path(".po.presence"),
                Some(8),
                "dimensions",
                format!(
                    "{} row groups, {} predicates, {} objects; expected {rgs}, {np}, {no}",
                    p.num_rgs, p.pred_dict_size, p.obj_dict_size
                ),
                rebuild.clone(),
            );
        }
    }
    if let (Some(s), Some(n)) = (&d.s_offsets, len(0)) {
        if s.ranges.len() as u32 != n || u64::from(s.num_rows_total) != base.num_rows() {
            cx.error(
                &path(".s.offsets"),
                Some(8),
                "dimensions",
                format!(
                    "{} subjects over {} rows; expected {n} subjects over {} rows",
                    s.ranges.len(),
                    s.num_rows_total,
                    base.num_rows()
                ),
                rebuild.clone(),
            );
        }
    }
    // Dictionaries sorted and unique.
    for (c, dict) in d.dicts.iter().enumerate() {
        let Some(dict) = dict else { continue };
        if let Some(i) = (1..dict.len()).find(|&i| dict.sorted(i - 1) >= dict.sorted(i)) {
            cx.error(
                &path(SUFFIXES[c]),
                None,
                "dict-order",
                format!(
                    "sorted entries {} and {i} are out of order or equal: {:?} then {:?}",
                    i - 1,
                    String::from_utf8_lossy(dict.sorted(i - 1)),
                    String::from_utf8_lossy(dict.sorted(i))
                ),
                rebuild.clone(),
            );
        }
    }
    // Against the rows: cells in the dictionaries, every entry used,
    // presence bits, subject ranges.
    let maps: Vec<Option<HashMap<&[u8], u32>>> = d
        .dicts
        .iter()
        .map(|o| o.as_ref().map(|dict| (0..dict.len()).map(|k| (dict.token(k), k as u32)).collect()))
        .collect();
    let mut expected: Vec<Option<Presence>> = (0..4).map(|c| len(c).map(|n| Presence::new(rgs, n))).collect();
    let mut seen: Vec<Vec<bool>> = (0..4).map(|c| vec![false; len(c).unwrap_or(0) as usize]).collect();
    let mut missing = [0usize; 4];
    let mut ranges: Vec<(u64, u64)> = vec![(0, 0); len(0).unwrap_or(0) as usize];
    let mut run: Option<(u32, u64)> = None; // (subject id, start row)
    let mut row_no = 0u64;
    let mut s_contiguous_broken = 0usize;
    for rg in 0..base.num_row_groups() {
        let Ok(cols) = (0..4).map(|c| base.read_column(rg, c)).collect::<Result<Vec<_>, _>>() else { return };
        let rows = cols[0].len();
        #[allow(clippy::needless_range_loop)] // one row across four columns
        for i in 0..rows {
            for c in 0..4 {
                let Some(map) = &maps[c] else { continue };
                let cell = cols[c][i].data();
                match map.get(cell) {
                    Some(&id) => {
                        seen[c][id as usize] = true;
                        if let Some(p) = expected[c].as_mut() {
                            p.set(rg as u32, id);
                        }
                        if c == 0 {
                            match run {
                                Some((sid, _)) if sid == id => {}
                                prev => {
                                    if let Some((sid, start)) = prev {
                                        ranges[sid as usize] = (start, row_no);
                                    }
                                    if ranges[id as usize] != (0, 0) {
                                        s_contiguous_broken += 1;
                                    }
                                    run = Some((id, row_no));
                                }
                            }
                        }
                    }
                    None => {
                        missing[c] += 1;
                        if missing[c] <= CAP {
                            cx.error(&path(SUFFIXES[c]), None, "dict-cells", format!("row {row_no} (row group {rg}) has {} cell {:?}, which the dictionary does not hold", COLS[c], String::from_utf8_lossy(cell)), rebuild.clone());
                        }
                    }
                }
            }
            row_no += 1;
        }
    }
    if let Some((sid, start)) = run {
        ranges[sid as usize] = (start, row_no);
    }
    for c in 0..4 {
        if missing[c] > CAP {
            cx.error(
                &path(SUFFIXES[c]),
                None,
                "dict-cells",
                format!("… and {} more {} cells missing from the dictionary", missing[c] - CAP, COLS[c]),
                rebuild.clone(),
            );
        }
        let unused: Vec<usize> = (0..seen[c].len()).filter(|&k| !seen[c][k]).collect();
        if !unused.is_empty() {
            let dict = d.dicts[c].as_ref().expect("seen is sized by the dict");
            cx.error(
                &path(SUFFIXES[c]),
                None,
                "dict-cells",
                format!(
                    "{} in no row, e.g. id {} {:?}",
                    crate::text::plural(unused.len(), "entry is", "entries are"),
                    unused[0],
                    String::from_utf8_lossy(dict.token(unused[0]))
                ),
                rebuild.clone(),
            );
        }
        if let (Some(want), Some(have)) = (&expected[c], &d.presence[c]) {
            if have.num_rgs == want.num_rgs && have.num_tokens == want.num_tokens && have.bits != want.bits {
                let byte = have.bits.iter().zip(&want.bits).position(|(a, b)| a != b).unwrap_or(0);
                cx.error(
                    &path(SUFFIXES[4 + c]),
                    Some(presence::HEADER_LEN + byte as u64),
                    "presence-bits",
                    format!(
                        "bitmap byte {byte} is {:#04x}; the rows give {:#04x}",
                        have.bits[byte], want.bits[byte]
                    ),
                    rebuild.clone(),
                );
            }
        }
    }
    if s_contiguous_broken > 0 {
        cx.error(
            base.path(),
            None,
            "s-order",
            format!(
                "{} in more than one run: the rows are not in SPOG order, so .s.offsets cannot describe them",
                crate::text::plural(s_contiguous_broken, "subject appears", "subjects appear")
            ),
            None,
        );
    }
    if let Some(s) = &d.s_offsets {
        if s.ranges.len() == ranges.len() && s.ranges != ranges {
            let k = s.ranges.iter().zip(&ranges).position(|(a, b)| a != b).unwrap_or(0);
            cx.error(
                &path(".s.offsets"),
                Some(s_offsets::HEADER_LEN + 16 * k as u64),
                "s-offsets",
                format!("subject id {k}: recorded rows {:?}, the rows give {:?}", s.ranges[k], ranges[k]),
                rebuild.clone(),
            );
        }
    }
}

fn deep_compare(cx: &mut Ctx, base_path: &Path, base: &Base, rebuild: Option<String>) {
    let built = match sidecars::build_from_base(base) {
        Ok(b) => b,
        Err(e) => {
            cx.store_error(base.path(), "deep", &e, None);
            return;
        }
    };
    for (suffix, want) in built.files() {
        let path = sidecar_path(base_path, suffix);
        let Ok(have) = fs::read(&path) else { continue };
        if have != want {
            let at = have.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(have.len().min(want.len()));
            cx.error(&path, Some(at as u64), "deep", format!("differs from the sidecar rebuilt from the base, first at byte {at} ({} bytes on disk, {} rebuilt)", have.len(), want.len()), rebuild.clone());
        }
    }
}

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
            cx.store_error(path, "log-header", &e, next);
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
    let shadowed: Vec<_> = log.shadowed(Some(ce)).collect();
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
