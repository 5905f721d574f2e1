//! `cottas-tui query TARGET` (also `cottas-tui --batch TARGET`): SPARQL for
//! scripts. stdout carries only results; diagnostics go to stderr.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::corpus;
use crate::sparql::run::{run_query, OutputFormat, QueryOptions};
use crate::store::read::ColumnCache;
use crate::store::versions::layout::BASE;
use crate::store::versions::open::Store;
use crate::view::overlay::Overlay;
use crate::view::View;

#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// A chunk dir (base ⊕ its delta log), a version dir, a data.cottas, or a
    /// corpus root (the union of every chunk's base ⊕ delta; see docs/engines.md).
    pub target: PathBuf,
    /// Queries to run, in order, before any -e and -f ones (`-` reads one
    /// from stdin).
    #[arg(value_name = "QUERY")]
    pub texts: Vec<String>,
    /// A query; repeat to run several in order.
    #[arg(short = 'e', long = "execute", value_name = "QUERY")]
    pub queries: Vec<String>,
    /// Read a query from a file (`-`: stdin); repeatable. Without a query,
    /// -e or -f, stdin.
    #[arg(short, long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Result format (default: table on a terminal, TSV otherwise; N-Triples
    /// for graphs). With several queries, JSON and XML write one compact
    /// document per line, and CSV and TSV put one blank line between result
    /// sets. A query stopped midway (a timeout) leaves its document closed
    /// on stdout and exits non-zero, saying so on stderr.
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

/// Runs the command; once per process (the folded logs are freed by the exit).
pub fn run(args: &QueryArgs, out: &mut impl Write) -> Result<ExitCode> {
    super::not_a_file_name(&args.texts)?;
    let requests = super::requests(&[&args.texts[..], &args.queries[..]].concat(), &args.files, "query")?;
    let chunks = open_chunks(&args.target, args.memory_limit)?;
    let parts: Vec<View> = chunks.iter().map(|c| View::new(&c.store, &c.overlay, &c.cache)).collect();
    let opts = QueryOptions {
        format: args.format,
        tty: std::io::stdout().is_terminal(),
        union_default_graph: args.union_default_graph,
        timeout: args.timeout.map(Duration::from_secs_f64),
        explain: args.explain,
        no_shortcuts: args.no_shortcuts,
        hints: true,
        close_cut_documents: true,
        ..QueryOptions::default()
    };
    for (i, request) in requests.iter().enumerate() {
        if i > 0 {
            out.write_all(separator(&opts))?;
        }
        let t = Instant::now();
        let text = &request.text;
        let summary = run_query(&parts, text, &opts, out);
        out.flush()?;
        let summary = match (summary, requests.len()) {
            (Ok(summary), _) => summary,
            (Err(e), 1) if request.origin == "the command line" => return Err(e.into()),
            (Err(e), 1) => return Err(e).context(format!("the query from {}", request.origin)),
            (Err(e), n) => {
                return Err(e).context(format!("query {} of {n} (from {})", i + 1, request.origin))
            }
        };
        if summary.empty_default_graph {
            crate::eprint_line!(
                "cottas-tui: note: {}, or --union-default-graph to read every graph as the default one",
                crate::sparql::hints::EMPTY_DEFAULT_GRAPH
            );
        }
        if let Some(n) = args.repeat {
            super::report_repeats(summary.rows, t.elapsed().as_secs_f64() * 1e3, n, || {
                run_query(&parts, text, &opts, &mut std::io::sink())?;
                Ok(())
            })?;
        }
        if args.explain {
            for chunk in &chunks {
                chunk.explain();
            }
            if let Some(plan) = &summary.plan {
                crate::eprint_line!("plan: {plan}");
            }
            crate::eprint_line!("{}", summary.explain);
            crate::eprint_line!(
                "{} in {:.3} ms",
                crate::text::plural(summary.rows, "result", "results"),
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    drop(parts);
    super::free_at_exit(chunks.into_iter().map(|c| c.overlay).collect::<Vec<_>>());
    Ok(ExitCode::SUCCESS)
}

/// What goes between two queries' results: a blank line between CSV or TSV
/// result sets (CSV's with its CRLF) and between tables on a terminal;
/// nothing between JSON or XML documents, one a line.
fn separator(opts: &QueryOptions) -> &'static [u8] {
    match opts.format {
        Some(OutputFormat::Csv) => b"\r\n",
        Some(OutputFormat::Tsv | OutputFormat::Table) | None => b"\n",
        Some(_) => b"",
    }
}

/// One store the query reads: the target, or one chunk of a corpus.
struct OpenChunk {
    /// Its name in the corpus; `None` for a single target.
    name: Option<String>,
    store: Store,
    overlay: Overlay,
    cache: ColumnCache,
    replay_time: Duration,
}

/// The target's stores: the target itself when it is a chunk, a version
/// dir or a file; otherwise every chunk of the corpus it is the root of.
/// Memory is shared evenly between the chunks.
fn open_chunks(target: &Path, memory_limit: usize) -> Result<Vec<OpenChunk>> {
    let single = !target.is_dir() || target.join(BASE).is_file() || corpus::is_chunk(target);
    let found = if single { Vec::new() } else { corpus::find_chunks(target, corpus::DEFAULT_DEPTH)? };
    if found.is_empty() {
        return Ok(vec![open_chunk(target, None, memory_limit)?]);
    }
    let share = memory_limit / found.len();
    let named = |c: &PathBuf| Some(corpus::chunk_name(target, c));
    found.iter().map(|c| open_chunk(c, named(c), share)).collect()
}

fn open_chunk(path: &Path, name: Option<String>, memory_limit: usize) -> Result<OpenChunk> {
    let store = Store::open(path)?;
    let cache = ColumnCache::within(&store, memory_limit);
    let replay_started = Instant::now();
    let overlay = Overlay::load(&store, &cache)?;
    let replay_time = replay_started.elapsed();
    if let Some((off, len, why)) = overlay.leftover {
        crate::eprint_line!(
            "cottas-tui: note: {} has {} at offset {off} that {} not a committed batch ({}); {} ignored",
            store.layout.log.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            crate::text::plural(len, "byte", "bytes"),
            crate::text::noun(len, "is", "are"),
            why.as_str(),
            crate::text::noun(len, "it is", "they are")
        );
    }
    Ok(OpenChunk { name, store, overlay, cache, replay_time })
}

impl OpenChunk {
    /// The `--explain` lines about this store and its log.
    fn explain(&self) {
        let store = &self.store;
        let log_bytes =
            store.layout.log.as_ref().and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
        let chunk = self.name.as_ref().map(|n| format!("chunk {n}: ")).unwrap_or_default();
        crate::eprint_line!(
            "{chunk}store: {} ({})",
            store.layout.base.display(),
            store.layout.resolution.describe()
        );
        crate::eprint_line!(
            "{chunk}delta: {}, {} shadowed by the epoch marker; {log_bytes} log bytes replayed in {:.3} ms",
            crate::text::plural(self.overlay.batches_visible, "visible batch", "visible batches"),
            self.overlay.batches_shadowed,
            self.replay_time.as_secs_f64() * 1e3
        );
    }
}
