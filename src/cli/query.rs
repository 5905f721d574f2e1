//! `cottas-tui query TARGET` (also `cottas-tui --batch TARGET`): SPARQL for
//! scripts. stdout carries only results; diagnostics go to stderr.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::sparql::run::{run_query, OutputFormat, QueryOptions};
use crate::store::read::ColumnCache;
use crate::store::versions::open::Store;
use crate::view::overlay::Overlay;

#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// A chunk dir (base ⊕ its delta log), a version dir or a data.cottas.
    pub target: PathBuf,
    /// A query; repeat to run several in order.
    #[arg(short = 'e', long = "execute", value_name = "QUERY")]
    pub queries: Vec<String>,
    /// Read a query from a file; repeatable. Without -e or -f, stdin.
    #[arg(short, long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Result format (default: table on a terminal, TSV otherwise; N-Triples for graphs).
    #[arg(long, value_enum)]
    pub format: Option<OutputFormat>,
    /// Print the query plan and the read path's pruning figures to stderr.
    #[arg(long)]
    pub explain: bool,
    /// Give up on a query after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Make the default graph the union of all graphs.
    #[arg(long)]
    pub union_default_graph: bool,
    /// Memory for this process (e.g. 512M, 2G): half caches decoded columns,
    /// and mapped store pages beyond the other half are released (they stay
    /// in the page cache). The evaluator's joins and sorts are not bounded.
    #[arg(long, default_value = "1G", value_parser = super::store_cmds::parse_size)]
    pub memory_limit: usize,
    /// Evaluate every query in full: no answer from a shortcut (a COUNT(*)
    /// of one pattern is otherwise counted without producing its solutions).
    #[arg(long)]
    pub no_shortcuts: bool,
    /// Benchmark: run each query N more times on the warm store (results
    /// discarded) and print the latency (min, median) to stderr.
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
}

pub fn run(args: &QueryArgs, out: &mut impl Write) -> Result<ExitCode> {
    let texts = super::request_texts(&args.queries, &args.files, "query")?;
    let store = Store::open(&args.target)?;
    // Half for decoded columns, half for mapped store pages (released
    // whole when exceeded; see `Store::limit_mapped_pages`). The evaluator's
    // joins and sorts are not bounded.
    let cache = ColumnCache::new(args.memory_limit / 2);
    store.limit_mapped_pages(args.memory_limit as u64 / 2);
    let replay_started = Instant::now();
    let overlay = Overlay::load(&store, &cache)?;
    let replay_time = replay_started.elapsed();
    let log_bytes = store.layout.log.as_ref().and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
    if let Some((off, len, why)) = overlay.leftover {
        eprintln!(
            "cottas-tui: note: {} has {len} bytes at offset {off} that are not a committed batch ({}); they are ignored",
            store.layout.log.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            why.as_str()
        );
    }
    let opts = QueryOptions {
        format: args.format,
        tty: std::io::stdout().is_terminal(),
        union_default_graph: args.union_default_graph,
        timeout: args.timeout.map(Duration::from_secs_f64),
        explain: args.explain,
        no_shortcuts: args.no_shortcuts,
        ..QueryOptions::default()
    };
    for (i, text) in texts.iter().enumerate() {
        if i > 0 && opts.format.is_none() && opts.tty {
            writeln!(out)?;
        }
        let t = Instant::now();
        let summary = run_query(&store, &overlay, &cache, text, &opts, out)?;
        out.flush()?;
        if let Some(n) = args.repeat {
            super::report_repeats(summary.rows, t.elapsed().as_secs_f64() * 1e3, n, || {
                run_query(&store, &overlay, &cache, text, &opts, &mut std::io::sink())?;
                Ok(())
            })?;
        }
        if args.explain {
            eprintln!("store: {} ({})", store.layout.base.display(), store.layout.resolution.describe());
            eprintln!(
                "delta: {} visible batches, {} shadowed by the epoch marker; {log_bytes} log bytes replayed in {:.3} ms",
                overlay.batches_visible,
                overlay.batches_shadowed,
                replay_time.as_secs_f64() * 1e3
            );
            if let Some(plan) = &summary.plan {
                eprintln!("plan: {plan}");
            }
            eprintln!("{}", summary.explain);
            eprintln!("{} results in {:.3} ms", summary.rows, t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(ExitCode::SUCCESS)
}
