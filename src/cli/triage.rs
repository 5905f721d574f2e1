//! On-call triage: `verify`, `log` and `repair`, over `store::verify`, the
//! delta-log decoder and `store::repair`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::format::deltalog::{self, BatchFrame, Entry};
use crate::store::log::{Log, Tail, Visibility};
use crate::store::versions::layout::{self, LOG};
use crate::store::versions::open::read_marker;
use crate::text::plural;
use crate::triage::repair::{self, Applied, RepairPlan};
use crate::triage::verify::{self, Report, Severity, VerifyOptions};
use std::io::IsTerminal;

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// A chunk dir (every version, `current`, the log) or one version dir.
    pub target: PathBuf,
    /// Accepted for older scripts; changes nothing. Every version, whoever
    /// wrote it, is compared byte for byte with the sidecars its rows give,
    /// streamed in bounded memory.
    #[arg(long, hide = true)]
    pub deep: bool,
    /// Machine-readable report (schema `cottas-tui.verify/1`).
    #[arg(long)]
    pub json: bool,
    /// Memory for the comparison's dictionaries before they spill to temp
    /// files (e.g. 512M, 2G).
    #[arg(long, default_value = "1G", value_parser = crate::cli::store_cmds::parse_size)]
    pub memory_limit: usize,
}

pub fn print_report(r: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let mut by_file: BTreeMap<&str, Vec<&verify::Finding>> = BTreeMap::new();
    for f in &r.findings {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    for (file, findings) in &by_file {
        writeln!(out, "{file}")?;
        for f in findings {
            let sev = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let at = f.offset.map(|o| format!(" at byte {o} ({o:#x})")).unwrap_or_default();
            writeln!(out, "  {sev}[{}]{at}: {}", f.check, f.message)?;
            if let Some(n) = &f.next {
                writeln!(out, "    next: {n}")?;
            }
        }
    }
    let errors = r.errors();
    if r.is_clean() {
        writeln!(
            out,
            "verify: clean — {} checked{} in {:.2}s",
            plural(r.files_checked, "file", "files"),
            if r.deep { " (deep)" } else { "" },
            r.seconds
        )
    } else {
        writeln!(
            out,
            "verify: {}, {} in {} checked{} ({:.2}s)",
            plural(errors, "error", "errors"),
            plural(r.findings.len() - errors, "warning", "warnings"),
            plural(r.files_checked, "file", "files"),
            if r.deep { " (deep)" } else { "" },
            r.seconds
        )
    }
}

/// One line on a terminal, rewritten in place: how far `doing` has read
/// the rows. `None` when stderr is not a terminal.
pub fn progress_line(doing: &'static str) -> Option<impl Fn(u64, u64) + Sync> {
    std::io::stderr().is_terminal().then_some(move |done: u64, all: u64| {
        if done == all || done.is_multiple_of(8) {
            let pct = (done * 100).checked_div(all).unwrap_or(100);
            crate::eprint_text!("\r\x1b[2K{doing}: row group {done}/{all} ({pct}%)");
        }
    })
}

/// Clears the progress line, if there was one.
pub fn end_progress<T>(shown: &Option<T>) {
    if shown.is_some() {
        crate::eprint_text!("\r\x1b[2K");
    }
}

pub fn run_verify(args: &VerifyArgs, out: &mut impl Write) -> Result<ExitCode> {
    let shown = progress_line("verify");
    let progress = shown.as_ref().map(|p| p as &(dyn Fn(u64, u64) + Sync));
    let opts = VerifyOptions { deep: args.deep, memory_limit: args.memory_limit, progress };
    let report = verify::verify(&args.target, opts);
    end_progress(&shown);
    let report = report?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&report, out)?;
    }
    Ok(if report.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[derive(clap::Args, Debug)]
pub struct LogArgs {
    /// A chunk dir, or a data.deltalog file.
    pub target: PathBuf,
    /// Show every entry of each batch.
    #[arg(long)]
    pub entries: bool,
    /// Only batches with seq ≥ this.
    #[arg(long, value_name = "SEQ")]
    pub from: Option<u64>,
    /// Only batches with seq ≤ this.
    #[arg(long, value_name = "SEQ")]
    pub to: Option<u64>,
    /// Only batches (and, with --entries, entries) that touch this graph IRI (`DEFAULT` for the default graph).
    #[arg(long, value_name = "IRI")]
    pub graph: Option<String>,
    /// Totals instead of one line per batch.
    #[arg(long)]
    pub stats: bool,
    /// Machine-readable (schema `cottas-tui.log/1`).
    #[arg(long)]
    pub json: bool,
    /// Keep printing batches as they are appended (Ctrl-C to stop).
    #[arg(long, conflicts_with_all = ["stats", "json"])]
    pub follow: bool,
}

fn entry_graph(e: &Entry) -> Option<&str> {
    match e {
        Entry::Add(q) | Entry::Remove(q) => q.graph.as_deref(),
        Entry::Clear(g) => g.as_deref(),
        Entry::Drop(g) | Entry::Create(g) => Some(g),
    }
}

fn touches(e: &Entry, graph: &str) -> bool {
    match entry_graph(e) {
        None => graph == "DEFAULT",
        Some(g) => g == graph.trim_start_matches('<').trim_end_matches('>'),
    }
}

/// (adds, removes, clears, drops, creates)
fn kinds(entries: &[Entry]) -> [usize; 5] {
    let mut k = [0; 5];
    for e in entries {
        k[e.tag() as usize] += 1;
    }
    k
}

struct LogView {
    path: PathBuf,
    seen: Visibility,
}

fn resolve_log(target: &Path) -> Result<LogView> {
    if target.is_file() {
        return Ok(LogView { path: target.to_path_buf(), seen: Visibility::over(None) });
    }
    let marker = layout::resolve(target)
        .ok()
        .and_then(|l| read_marker(&l.version_dir.join(layout::MARKER)).ok().flatten());
    Ok(LogView { path: target.join(LOG), seen: Visibility::over(marker.map(|m| m.epoch)) })
}

impl LogArgs {
    fn wants(&self, f: &BatchFrame) -> bool {
        self.from.is_none_or(|s| f.batch.seq >= s)
            && self.to.is_none_or(|s| f.batch.seq <= s)
            && self.graph.as_deref().is_none_or(|g| f.batch.entries.iter().any(|e| touches(e, g)))
    }
}

fn batch_line(f: &BatchFrame, seen: Visibility) -> String {
    let [a, r, c, d, cr] = kinds(&f.batch.entries);
    let visible = seen.of(f).label();
    format!(
        "{:>10}  seq {:<6} epoch {:<4} +{a} \u{2212}{r} clear {c} drop {d} create {cr}  {:>7} bytes  checksum ok  {visible}",
        f.offset, f.batch.seq, f.batch.epoch, f.len
    )
}

fn print_batches(
    args: &LogArgs,
    view: &LogView,
    frames: &[BatchFrame],
    out: &mut impl Write,
) -> std::io::Result<()> {
    for f in frames.iter().filter(|f| args.wants(f)) {
        writeln!(out, "{}", batch_line(f, view.seen))?;
        if args.entries {
            for e in f.batch.entries.iter().filter(|e| args.graph.as_deref().is_none_or(|g| touches(e, g))) {
                writeln!(out, "            {}", e.describe())?;
            }
        }
    }
    Ok(())
}

pub fn run_log(args: &LogArgs, out: &mut impl Write) -> Result<ExitCode> {
    let view = resolve_log(&args.target)?;
    let log = Log::read(&view.path)?.ok_or_else(|| {
        crate::store::StoreError::not_a_store(&view.path, "no delta log here (the next update creates one)")
    })?;
    let bad_tail = log.tail != Tail::Clean;
    let damage = log.tail.damage();
    if args.json {
        let batches: Vec<serde_json::Value> = log
            .frames
            .iter()
            .filter(|f| args.wants(f))
            .map(|f| {
                let [a, r, c, d, cr] = kinds(&f.batch.entries);
                let mut v = serde_json::json!({
                    "offset": f.offset, "len": f.len, "seq": f.batch.seq, "epoch": f.batch.epoch,
                    "adds": a, "removes": r, "clears": c, "drops": d, "creates": cr,
                    "checksum": "ok",
                    "visible": view.seen.sees(f),
                });
                if args.entries {
                    v["entries"] =
                        f.batch.entries.iter().map(|e| serde_json::Value::from(e.describe())).collect();
                }
                v
            })
            .collect();
        let v = serde_json::json!({
            "schema": "cottas-tui.log/1",
            "file": view.path,
            "marker": view.seen.marker(),
            "batches": batches,
            "leftover": {"offset": log.committed_len(), "len": damage.map_or(0, |d| d.len),
                         "reason": damage.map_or("clean-end", |d| d.reason.as_str()),
                         "error": damage.and_then(|d| d.error.as_ref()).map(|e| e.to_string()),
                         "hidden_batches": log.tail.hidden()},
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(if bad_tail { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    if args.stats {
        let shown: Vec<&BatchFrame> = log.frames.iter().filter(|f| args.wants(f)).collect();
        let mut k = [0usize; 5];
        for f in &shown {
            for (i, n) in kinds(&f.batch.entries).iter().enumerate() {
                k[i] += n;
            }
        }
        let shadowed = shown.iter().filter(|f| !view.seen.sees(f)).count();
        let range = |it: &mut dyn Iterator<Item = u64>| {
            let v: Vec<u64> = it.collect();
            match (v.iter().min(), v.iter().max()) {
                (Some(a), Some(b)) => format!("{a}..={b}"),
                _ => "-".into(),
            }
        };
        writeln!(
            out,
            "file:      {} ({}, {} committed)",
            view.path.display(),
            crate::text::plural(log.bytes.len(), "byte", "bytes"),
            log.committed_len()
        )?;
        writeln!(out, "marker:    {}", view.seen.marker().map_or("none".into(), |m| m.to_string()))?;
        writeln!(
            out,
            "batches:   {} ({} visible, {shadowed} shadowed)",
            shown.len(),
            shown.len() - shadowed
        )?;
        writeln!(out, "seq:       {}", range(&mut shown.iter().map(|f| f.batch.seq)))?;
        writeln!(out, "epochs:    {}", range(&mut shown.iter().map(|f| f.batch.epoch)))?;
        writeln!(out, "entries:   +{} \u{2212}{} clear {} drop {} create {}", k[0], k[1], k[2], k[3], k[4])?;
        writeln!(out, "bytes:     {}", shown.iter().map(|f| f.len).sum::<u64>())?;
        writeln!(
            out,
            "leftover:  {} at offset {} ({})",
            plural(damage.map_or(0, |d| d.len), "byte", "bytes"),
            log.committed_len(),
            damage.map_or("clean-end", |d| d.reason.as_str())
        )?;
        return Ok(if bad_tail { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    print_batches(args, &view, &log.frames, out)?;
    if let Some(d) = damage {
        let why = d.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default();
        let effect = match log.tail.hidden() {
            [] => "not committed; readers ignore it".to_string(),
            [only] => format!("1 committed batch sits behind it, at {only}; readers refuse to answer"),
            h => format!(
                "{} committed batches sit behind it, the first at {}; readers refuse to answer",
                h.len(),
                h[0]
            ),
        };
        let len = plural(d.len, "byte", "bytes");
        writeln!(out, "{:>10}  LEFTOVER {len}, {}{why} ({effect})", d.offset, d.reason.as_str())?;
    }
    out.flush()?;
    if !args.follow {
        return Ok(if bad_tail { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    let mut shown_upto = log.committed_len();
    let mut last_len = log.bytes.len();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let Ok(now) = std::fs::read(&view.path) else { continue };
        if now.len() == last_len && now.len() as u64 >= shown_upto {
            continue;
        }
        last_len = now.len();
        let Ok(log) = Log::decode(&view.path, now) else { continue };
        if log.committed_len() < shown_upto {
            writeln!(out, "-- the log was replaced (compaction or repair); following the new one")?;
            shown_upto = deltalog::HEADER_LEN;
        }
        let committed = log.committed_len();
        let new: Vec<BatchFrame> = log.frames.into_iter().filter(|f| f.offset >= shown_upto).collect();
        print_batches(args, &view, &new, out)?;
        shown_upto = committed;
        out.flush()?;
    }
}

#[derive(clap::Args, Debug)]
pub struct RepairArgs {
    #[command(subcommand)]
    pub action: RepairAction,
}

#[derive(clap::Subcommand, Debug)]
pub enum RepairAction {
    /// Cut the log back to its last committed batch (the cut bytes are kept).
    TruncateTornTail(RepairCommon),
    /// Rebuild a version's sidecars from its data.cottas (replaced files are kept).
    RebuildSidecars {
        #[command(flatten)]
        common: RepairCommon,
        /// The version dir name, e.g. v2.
        version: String,
    },
    /// Point `current` at the newest complete version.
    ResetCurrent(RepairCommon),
    /// Put back a version's Parquet footer (and page indexes) from the copy
    /// kept beside it (the damaged file is kept).
    RestoreFooter {
        #[command(flatten)]
        common: RepairCommon,
        /// The version dir name, e.g. v2.
        version: String,
    },
}

#[derive(clap::Args, Debug)]
pub struct RepairCommon {
    /// The chunk dir.
    pub target: PathBuf,
    /// Apply it (without --yes, repair only prints what it would do).
    #[arg(long)]
    pub yes: bool,
    /// Wait up to this long for the writer lock.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
    /// Memory a rebuild of sidecars may use (e.g. 512M, 2G); beyond it the
    /// dictionaries spill to temp files beside the version.
    #[arg(long, default_value = "1G", value_parser = crate::cli::store_cmds::parse_size)]
    pub memory_limit: usize,
}

pub fn run_repair(args: &RepairArgs, out: &mut impl Write) -> Result<ExitCode> {
    let (common, plan): (&RepairCommon, RepairPlan) = match &args.action {
        RepairAction::TruncateTornTail(c) => (c, repair::plan_truncate_tail(&c.target)?),
        RepairAction::RebuildSidecars { common, version } => {
            (common, repair::plan_rebuild_sidecars(&common.target, version)?)
        }
        RepairAction::ResetCurrent(c) => (c, repair::plan_reset_current(&c.target)?.0),
        RepairAction::RestoreFooter { common, version } => {
            (common, repair::plan_restore_footer(&common.target, version)?)
        }
    };
    for l in &plan.lines {
        writeln!(out, "{}{l}", if plan.noop || common.yes { "" } else { "would " })?;
    }
    if plan.noop {
        return Ok(ExitCode::SUCCESS);
    }
    if !common.yes {
        writeln!(
            out,
            "dry run: nothing changed; pass --yes to apply (every removed or replaced byte is copied first)"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let wait = common.wait.map(Duration::from_secs_f64);
    let applied: Applied = match &args.action {
        RepairAction::TruncateTornTail(c) => repair::truncate_tail(&c.target, wait)?,
        RepairAction::RebuildSidecars { common, version } => {
            let shown = progress_line("rebuild");
            let progress = shown.as_ref().map(|p| p as &(dyn Fn(u64, u64) + Sync));
            let opts =
                crate::store::sidecars::rebuild::Options { memory_limit: common.memory_limit, progress };
            let applied = repair::rebuild_sidecars(&common.target, version, wait, opts);
            end_progress(&shown);
            applied?
        }
        RepairAction::ResetCurrent(c) => repair::reset_current(&c.target, wait)?,
        RepairAction::RestoreFooter { common, version } => {
            repair::restore_footer(&common.target, version, wait)?
        }
    };
    for l in applied.lines.iter().filter(|l| !plan.lines.contains(l)) {
        writeln!(out, "{l}")?;
    }
    writeln!(out, "done; verifying:")?;
    let opts = VerifyOptions { memory_limit: common.memory_limit, ..VerifyOptions::default() };
    let report = verify::verify(&common.target, opts)?;
    print_report(&report, out)?;
    Ok(if report.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
