//! `cottas-tui corpus list|verify|compact|export ROOT`: one command over every chunk of a
//! corpus (`crate::corpus` finds them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use humansize::{format_size, BINARY};

use crate::compact::Compaction;
use crate::corpus::{self, ChunkOutcome, ChunkSummary};
use crate::text::plural;
use crate::triage::verify::VerifyOptions;

#[derive(clap::Args, Debug)]
pub struct CorpusArgs {
    #[command(subcommand)]
    pub command: CorpusCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum CorpusCommand {
    /// Every chunk with its current version, base quads, pending log batches
    /// and bytes, and debris (exit 1 when a chunk does not open).
    List(ListArgs),
    /// `verify` every chunk, in parallel; findings prefixed with the chunk
    /// (exit 0 all clean, 1 findings, 2 a chunk could not be verified).
    Verify(VerifyAllArgs),
    /// Compact the chunks whose logs hold at least --min-log-bytes, one at a
    /// time (or --jobs N), each with `compact`'s guarantees (exit 2 when one failed).
    Compact(CompactAllArgs),
    /// Describe one snapshot of every chunk for SQL engines (DuckDB, Spark):
    /// manifest.json, each chunk's log as a net-effect Parquet file, and
    /// duckdb.sql / spark.sql views of the visible quads (docs/engines.md).
    Export(ExportArgs),
    /// Translate a SPARQL SELECT or ASK into one SQL statement over the
    /// exported `cottas_quads` view, for DuckDB or Spark (exit 1 with the
    /// construct named when the query is outside the subset; docs/engines.md).
    Sql(SqlArgs),
}

#[derive(clap::Args, Debug)]
pub struct SqlArgs {
    #[command(flatten)]
    pub at: Where,
    #[arg(long, value_enum, default_value = "duckdb")]
    pub dialect: SqlDialect,
    /// The query.
    #[arg(short = 'e', long = "execute", value_name = "QUERY", conflicts_with = "file")]
    pub query: Option<String>,
    /// Read the query from a file (without -e or -f: stdin).
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print the views of this export (its duckdb.sql or spark.sql) first,
    /// so the output runs as it is: `… | duckdb`.
    #[arg(long, value_name = "EXPORT_DIR")]
    pub views: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SqlDialect {
    Duckdb,
    Spark,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub at: Where,
    /// The export directory (created; must be empty unless --force).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace an earlier export in --out (its manifest, views and deltas/).
    #[arg(long)]
    pub force: bool,
    /// The corpus root as the engine will see it (e.g. s3://bucket/corpus):
    /// used for the bases' paths in the generated SQL.
    #[arg(long, value_name = "URL")]
    pub root_url: Option<String>,
    /// The export directory as the engine will see it.
    #[arg(long, value_name = "URL")]
    pub out_url: Option<String>,
    /// Machine-readable summary on stdout: the manifest.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct CompactAllArgs {
    #[command(flatten)]
    pub at: Where,
    /// Compact only chunks whose `data.deltalog` is at least this large
    /// (e.g. 64M); chunks with nothing to fold are skipped (unless a killed
    /// compaction left folded batches in the log: those are dropped).
    #[arg(long, default_value = "0", value_parser = crate::cli::store_cmds::parse_size)]
    pub min_log_bytes: usize,
    /// Print each chunk's plan and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Chunks compacted at once (each uses the memory one compaction uses).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
}

#[derive(clap::Args, Debug)]
pub struct Where {
    /// The corpus root: a directory of chunk dirs (or one chunk dir).
    pub root: PathBuf,
    /// How many directory levels under the root to look for chunks.
    #[arg(long, default_value_t = corpus::DEFAULT_DEPTH)]
    pub depth: usize,
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub at: Where,
    /// Machine-readable (schema `cottas-tui.corpus-list/1`).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct VerifyAllArgs {
    #[command(flatten)]
    pub at: Where,
    /// As `verify --deep`, for every chunk.
    #[arg(long)]
    pub deep: bool,
    /// Machine-readable (schema `cottas-tui.corpus-verify/1`).
    #[arg(long)]
    pub json: bool,
    /// Chunks verified at once (default: one per core).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Memory for each chunk's comparison, as `verify --memory-limit`.
    #[arg(long, default_value = "1G", value_parser = crate::cli::store_cmds::parse_size)]
    pub memory_limit: usize,
}

pub fn run(args: &CorpusArgs, out: &mut impl Write) -> Result<ExitCode> {
    match &args.command {
        CorpusCommand::List(a) => list(a, out),
        CorpusCommand::Verify(a) => verify(a, out),
        CorpusCommand::Compact(a) => compact(a, out),
        CorpusCommand::Export(a) => export(a, out),
        CorpusCommand::Sql(a) => sql(a, out),
    }
}

fn sql(args: &SqlArgs, out: &mut impl Write) -> Result<ExitCode> {
    let text = super::request_texts(args.query.as_slice(), args.file.as_slice(), "query")?.concat();
    let dialect = match args.dialect {
        SqlDialect::Duckdb => corpus::views::Dialect::DuckDb,
        SqlDialect::Spark => corpus::views::Dialect::Spark,
    };
    // The root is checked so a typo is not silently a query over nothing.
    chunks(&args.at)?;
    let query = crate::sparql::limits::parse_query(spargebra::SparqlParser::new(), &text)
        .map_err(crate::sparql::run::QueryError::from)?;
    let statement = match corpus::sql::translate(&query, dialect) {
        Ok(s) => s,
        Err(refused) => {
            crate::eprint_line!("cottas-tui: {refused}");
            return Ok(ExitCode::from(1));
        }
    };
    if let Some(dir) = &args.views {
        let path = dir.join(dialect.file_name());
        let views = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        write!(out, "{views}")?;
        writeln!(out, "{statement};")?;
    } else {
        writeln!(out, "{statement}")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn export(args: &ExportArgs, out: &mut impl Write) -> Result<ExitCode> {
    let found = chunks(&args.at)?;
    prepare_out_dir(&args.out, args.force)?;
    let opts = corpus::export::ExportOptions {
        root_url: args.root_url.clone(),
        out_url: args.out_url.clone(),
        cache_bytes: 64 << 20,
    };
    let manifest = corpus::export::export(&args.at.root, &found, &args.out, &opts)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&manifest)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for c in &manifest.chunks {
        let delta = match &c.delta {
            Some(d) => format!("+{} -{} in {}", d.adds, d.removes, d.path.display()),
            None => "no net change".to_owned(),
        };
        writeln!(
            out,
            "{:<24} {:>4} {:>12} rows  log {:>10} bytes  {delta}",
            c.name,
            c.version.as_deref().unwrap_or("-"),
            c.rows,
            c.log.committed_bytes
        )?;
    }
    writeln!(
        out,
        "exported {} to {} (manifest.json, duckdb.sql, spark.sql)",
        plural(manifest.chunks.len(), "chunk", "chunks"),
        args.out.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Creates the export directory, or checks an existing one: empty, or an
/// earlier export that --force replaces (only the files an export writes
/// are removed; anything else there stops the export).
fn prepare_out_dir(dir: &Path, force: bool) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let mut present: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))? {
        present.push(entry?.path());
    }
    if present.is_empty() {
        return Ok(());
    }
    let ours = |p: &PathBuf| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        ["manifest.json", "duckdb.sql", "spark.sql", "deltas"].contains(&name.as_str())
    };
    if !force || !present.iter().all(ours) {
        let what = if force {
            "files an export does not write"
        } else {
            "files (--force replaces an earlier export)"
        };
        bail!("{}: not empty: holds {what}", dir.display());
    }
    // The manifest goes first: until the new one is written, the directory
    // does not claim to hold a complete export.
    let manifest = dir.join("manifest.json");
    if manifest.exists() {
        std::fs::remove_file(&manifest)?;
    }
    let deltas = dir.join("deltas");
    if deltas.is_dir() {
        for entry in std::fs::read_dir(&deltas)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "parquet") {
                std::fs::remove_file(&path)?;
            }
        }
    }
    Ok(())
}

fn chunks(at: &Where) -> Result<Vec<PathBuf>> {
    let found = corpus::find_chunks(&at.root, at.depth)?;
    if found.is_empty() {
        bail!(
            "{}: no chunk dirs within {} levels (a chunk has `current` or vN/data.cottas)",
            at.root.display(),
            at.depth
        );
    }
    Ok(found)
}

fn list(args: &ListArgs, out: &mut impl Write) -> Result<ExitCode> {
    let summaries: Vec<ChunkSummary> =
        chunks(&args.at)?.iter().map(|c| corpus::summarize(&args.at.root, c)).collect();
    if args.json {
        let doc = serde_json::json!({
            "schema": "cottas-tui.corpus-list/1",
            "root": args.at.root,
            "chunks": summaries,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        print_list(&summaries, out)?;
    }
    let all_open = summaries.iter().all(|s| s.status == "ok");
    Ok(if all_open { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_list(summaries: &[ChunkSummary], out: &mut impl Write) -> std::io::Result<()> {
    let width = summaries.iter().map(|s| s.name.len()).max().unwrap_or(5).max(5);
    writeln!(
        out,
        "{:<width$}  {:<8} {:>8} {:>14} {:>8} {:>11} {:>6}  status",
        "chunk", "current", "versions", "base quads", "pending", "log", "debris"
    )?;
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for s in summaries {
        writeln!(
            out,
            "{:<width$}  {:<8} {:>8} {:>14} {:>8} {:>11} {:>6}  {}",
            s.name,
            s.current.as_deref().unwrap_or("-"),
            s.versions,
            or_dash(s.base_quads.map(|n| n.to_string())),
            or_dash(s.pending_batches.map(|n| n.to_string())),
            format_size(s.log_bytes, BINARY),
            s.debris,
            s.status
        )?;
    }
    Ok(())
}

fn verify(args: &VerifyAllArgs, out: &mut impl Write) -> Result<ExitCode> {
    let found = chunks(&args.at)?;
    let opts = VerifyOptions { deep: args.deep, memory_limit: args.memory_limit, progress: None };
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let reports = corpus::verify_all(&args.at.root, &found, opts, jobs);
    let failed = reports.iter().filter(|r| matches!(r.outcome, ChunkOutcome::Failed(_))).count();
    let with_findings =
        reports.iter().filter(|r| matches!(&r.outcome, ChunkOutcome::Report(rep) if !rep.is_clean())).count();
    if args.json {
        let doc = serde_json::json!({
            "schema": "cottas-tui.corpus-verify/1",
            "root": args.at.root,
            "deep": args.deep,
            "chunks": reports,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        for r in &reports {
            print_chunk(r, out)?;
        }
        writeln!(
            out,
            "corpus verify: {}, {} clean, {with_findings} with findings, {failed} could not be verified",
            plural(reports.len(), "chunk", "chunks"),
            reports.len() - with_findings - failed
        )?;
    }
    Ok(ExitCode::from(match (failed, with_findings) {
        (0, 0) => 0,
        (0, _) => 1,
        _ => 2,
    }))
}

/// One chunk's findings, each file named under the chunk.
fn print_chunk(r: &corpus::ChunkReport, out: &mut impl Write) -> std::io::Result<()> {
    match &r.outcome {
        ChunkOutcome::Failed(why) => writeln!(out, "{}: could not verify: {why}", r.name),
        ChunkOutcome::Report(rep) if rep.is_clean() => {
            writeln!(out, "{}: clean ({} checked)", r.name, plural(rep.files_checked, "file", "files"))
        }
        ChunkOutcome::Report(rep) => {
            let mut prefixed = rep.clone();
            for f in &mut prefixed.findings {
                f.file = Path::new(&r.name).join(&f.file).display().to_string();
            }
            super::triage::print_report(&prefixed, out)
        }
    }
}

fn compact(args: &CompactAllArgs, out: &mut impl Write) -> Result<ExitCode> {
    let found = chunks(&args.at)?;
    let root = &args.at.root;
    let mut due = Vec::new();
    for chunk in &found {
        let name = corpus::chunk_name(root, chunk);
        let log_bytes =
            std::fs::metadata(chunk.join(crate::store::versions::layout::LOG)).map_or(0, |m| m.len());
        if log_bytes < args.min_log_bytes as u64 {
            writeln!(out, "{name}: skipped, log {} < {}", size(log_bytes), size(args.min_log_bytes as u64))?;
            continue;
        }
        match crate::compact::plan(chunk) {
            Ok(plan) if !plan.has_work() => writeln!(out, "{name}: skipped, nothing to fold")?,
            Ok(plan) if args.dry_run && plan.finishes_truncation() => {
                writeln!(out, "{name}: would drop the batches an interrupted compaction folded\n{plan}")?
            }
            Ok(plan) if args.dry_run => writeln!(out, "{name}: would compact\n{plan}")?,
            Ok(_) => due.push(chunk.clone()),
            Err(e) => writeln!(out, "{name}: cannot plan: {e}")?,
        }
    }
    if args.dry_run {
        writeln!(out, "dry run: nothing written")?;
        return Ok(ExitCode::SUCCESS);
    }
    let results = corpus::compact_all(&due, args.jobs);
    let (mut folded, mut finished, mut failed) = (0, 0, 0);
    for (chunk, result) in due.iter().zip(&results) {
        let name = corpus::chunk_name(root, chunk);
        match result {
            Ok(outcome) => {
                match outcome {
                    Compaction::Folded(_) => folded += 1,
                    Compaction::NothingToFold { finished: Some(_), .. } => finished += 1,
                    Compaction::NothingToFold { finished: None, .. } => {}
                }
                writeln!(out, "{name}: {outcome}")?
            }
            Err(e) => {
                failed += 1;
                writeln!(out, "{name}: failed, nothing flipped: {e}")?;
            }
        }
    }
    let finished_text =
        if finished > 0 { format!(", {finished} interrupted compactions finished") } else { String::new() };
    writeln!(
        out,
        "corpus compact: {folded} compacted{finished_text}, {failed} failed, {} skipped",
        found.len() - folded - finished - failed
    )?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

fn size(bytes: u64) -> String {
    format_size(bytes, BINARY)
}
