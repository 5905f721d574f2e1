//! `compact`, `versions`, `gc` and `rollback`: version management on the
//! command line, over `store::compact` and `store::versions`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use humansize::{format_size, BINARY};

use crate::compact::{self, CompactOptions, CompactProgress};
use crate::store::log::index::LogIndex;
use crate::store::log::Visibility;
use crate::store::versions;
use crate::store::versions::layout::LOG;
use crate::text::plural;

#[derive(clap::Args, Debug)]
pub struct CompactArgs {
    /// The chunk dir.
    pub target: PathBuf,
    /// Print what would be folded and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait up to this long for the writer lock at the swap (default 30).
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
    /// No progress display.
    #[arg(short, long)]
    pub quiet: bool,
    /// Show progress even when stderr is not a terminal (one line per phase).
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
}

pub fn run_compact(args: &CompactArgs, out: &mut impl Write) -> Result<ExitCode> {
    if args.dry_run {
        writeln!(out, "{}", compact::plan(&args.target)?)?;
        writeln!(out, "dry run: nothing written")?;
        return Ok(ExitCode::SUCCESS);
    }
    let tty = std::io::stderr().is_terminal();
    let show = args.progress || (!args.quiet && tty);
    let started = Instant::now();
    let mut last = Instant::now();
    let mut last_phase = None;
    let progress = |p: &CompactProgress| {
        let new_phase = last_phase != Some(p.phase);
        if show && (new_phase || last.elapsed().as_millis() > 100) {
            last = Instant::now();
            last_phase = Some(p.phase);
            let pct = if p.rows_total > 0 { 100.0 * p.rows_done as f64 / p.rows_total as f64 } else { 100.0 };
            let line = format!(
                "{:<11} {:>12}/{} rows {:>5.1}%  {:>10} written  epochs {}→{}  {:>6.2}s",
                p.phase.as_str(),
                p.rows_done,
                p.rows_total,
                pct,
                format_size(p.bytes_written, BINARY),
                p.epochs.0.map_or("none".into(), |e| e.to_string()),
                p.epochs.1,
                started.elapsed().as_secs_f64()
            );
            if tty {
                crate::eprint_text!("\r\x1b[2K{line}");
            } else if new_phase {
                crate::eprint_line!("{line}");
            }
        }
    };
    let opts = CompactOptions { wait: args.wait.map(Duration::from_secs_f64), ..CompactOptions::default() };
    let result = compact::compact(&args.target, &opts, progress);
    if show && tty {
        crate::eprint_text!("\r\x1b[2K");
    }
    writeln!(out, "{}", result?)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct VersionsArgs {
    /// The chunk dir.
    pub target: PathBuf,
    /// Machine-readable output (schema `cottas-tui.versions/1`).
    #[arg(long)]
    pub json: bool,
}

pub fn run_versions(args: &VersionsArgs, out: &mut impl Write) -> Result<ExitCode> {
    let listing = versions::list(&args.target)?;
    let log = LogIndex::build(&args.target.join(LOG));
    let marker = listing.versions.iter().find(|v| v.is_current).and_then(|v| v.marker);
    if args.json {
        let mut v = serde_json::to_value(&listing)?;
        v["schema"] = "cottas-tui.versions/1".into();
        v["log"] = log_json(&log, marker);
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<8} {:<8} {:>12} {:>7} {:>11}  {:<20}  status",
        "version", "current", "quads", "marker", "size", "created"
    )?;
    for v in &listing.versions {
        writeln!(
            out,
            "{:<8} {:<8} {:>12} {:>7} {:>11}  {:<20}  {}",
            v.name,
            if v.is_current { "*" } else { "" },
            v.quads.map_or("?".into(), |q| q.to_string()),
            v.marker.map_or("none".into(), |m| m.to_string()),
            format_size(v.bytes, BINARY),
            v.created.clone().unwrap_or_default(),
            v.problem.clone().unwrap_or_else(|| "complete".into())
        )?;
    }
    if listing.current.is_none() {
        writeln!(out, "no `current` link: readers open the highest complete version")?;
    }
    match &log.error {
        Some(e) => writeln!(out, "log: {e}")?,
        None => {
            let current = listing.current.as_deref().unwrap_or("the base");
            writeln!(out, "{}", log.summary(current, Visibility::over(marker)))?;
        }
    }
    if let Some(damage) = log.damage_summary() {
        writeln!(out, "{damage}")?;
    }
    for d in &listing.debris {
        let state = match d.live_pid {
            Some(p) => format!("in use by running pid {p}"),
            None => "stale; `gc` removes it".into(),
        };
        writeln!(
            out,
            "debris: {} — {} ({}), {state}",
            d.path.display(),
            d.what,
            format_size(d.bytes, BINARY)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The log's part of `versions --json`: its batches and bytes, what the
/// current version still folds in, and where damage starts.
fn log_json(log: &LogIndex, marker: Option<u64>) -> serde_json::Value {
    if let Some(e) = &log.error {
        return serde_json::json!({ "error": e });
    }
    let p = log.pending(Visibility::over(marker));
    serde_json::json!({
        "batches": log.count,
        "bytes": log.len,
        "pending": { "batches": p.batches, "added": p.added, "removed": p.removed, "graph_ops": p.graph_ops },
        "damage_offset": log.tail.damage().map(|d| d.offset),
        "hidden_batches": log.tail.hidden().len(),
    })
}

#[derive(clap::Args, Debug)]
pub struct GcArgs {
    /// The chunk dir.
    pub target: PathBuf,
    /// How many versions at or below `current` to keep (counting `current`).
    #[arg(long, value_name = "N", required_unless_present = "leftovers")]
    pub keep: Option<usize>,
    /// Remove only the leftovers of interrupted operations (temp dirs and
    /// files whose process is gone); keep every version.
    #[arg(long, conflicts_with = "keep")]
    pub leftovers: bool,
    /// Remove them (without it, gc only prints what it would remove).
    #[arg(long)]
    pub yes: bool,
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
}

pub fn run_gc(args: &GcArgs, out: &mut impl Write) -> Result<ExitCode> {
    let keep = if args.leftovers { None } else { args.keep };
    let plan = versions::gc_plan(&args.target, keep)?;
    if plan.is_empty() {
        writeln!(out, "gc: nothing to remove (keeping {})", plan.keep.join(", "))?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if args.yes { "removing" } else { "would remove" };
    for v in &plan.remove_versions {
        writeln!(
            out,
            "{verb} {} ({}, {})",
            v.path.display(),
            plural(v.quads.unwrap_or(0), "quad", "quads"),
            format_size(v.bytes, BINARY)
        )?;
    }
    for d in &plan.remove_debris {
        writeln!(out, "{verb} {} ({})", d.path.display(), d.what)?;
    }
    writeln!(out, "keeping {}", plan.keep.join(", "))?;
    if !args.yes {
        writeln!(out, "dry run: {} would be freed; pass --yes to remove", format_size(plan.bytes(), BINARY))?;
        return Ok(ExitCode::SUCCESS);
    }
    let done = versions::gc_apply(&args.target, keep, args.wait.map(Duration::from_secs_f64))?;
    writeln!(out, "gc: freed {}", format_size(done.bytes(), BINARY))?;
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct RollbackArgs {
    /// The chunk dir.
    pub target: PathBuf,
    /// The version to make current, e.g. v2.
    #[arg(long, value_name = "VERSION")]
    pub to: String,
    /// Roll back although the log holds batches (they then apply over the older base).
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
}

pub fn run_rollback(args: &RollbackArgs, out: &mut impl Write) -> Result<ExitCode> {
    if crate::store::versions::layout::version_number(&args.to).is_none() {
        bail!("--to {:?}: expected a version name like v2", args.to);
    }
    let log = versions::log_contents(&args.target)?;
    if log.batches > 0 && args.force {
        writeln!(
            out,
            "the log holds {} ({}, epochs {}); {} over {} as {}",
            plural(log.batches, "batch", "batches"),
            plural(log.entries, "entry", "entries"),
            log.epochs.map_or("-".into(), |(a, b)| format!("{a}..={b}")),
            crate::text::noun(log.batches, "it will apply", "they will apply"),
            args.to,
            crate::text::noun(log.batches, "it is", "they are")
        )?;
    }
    let previous =
        versions::rollback(&args.target, &args.to, args.force, args.wait.map(Duration::from_secs_f64))?;
    writeln!(out, "rollback: current {previous} -> {} (the other versions are untouched)", args.to)?;
    Ok(ExitCode::SUCCESS)
}
