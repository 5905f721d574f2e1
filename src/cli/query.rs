//! `cottas-tui query TARGET` (also `cottas-tui --batch TARGET`): SPARQL for
//! scripts. stdout carries only results; diagnostics go to stderr.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::corpus;
use crate::sparql::dataset::Part;
use crate::sparql::run::{run_query, OutputFormat, QueryOptions};
use crate::store::read::ColumnCache;
use crate::store::versions::open::Store;
use crate::view::lazy::LazyChunk;
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
    let parts: Vec<Part> = chunks.iter().map(OpenChunk::part).collect();
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
    for chunk in chunks.iter().filter(|c| matches!(c, OpenChunk::Chunk(..))) {
        chunk.note_leftover();
    }
    drop(parts);
    super::free_at_exit(chunks);
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

/// One store the query reads: the target, with its log folded, or one
/// chunk of a corpus, whose log is folded only if a pattern may reach it
/// ([`crate::view::lazy`]).
enum OpenChunk {
    Target {
        store: Store,
        overlay: Overlay,
        cache: ColumnCache,
        replay_time: Duration,
    },
    /// Its name in the corpus.
    Chunk(String, LazyChunk),
}

/// The target's stores: the target itself when it is a chunk, a version
/// dir or a file; otherwise every chunk of the corpus it is the root of.
/// Memory is shared evenly between the chunks.
fn open_chunks(target: &Path, memory_limit: usize) -> Result<Vec<OpenChunk>> {
    let Some(found) = corpus::chunks_of_root(target)? else {
        return Ok(vec![open_target(target, memory_limit)?]);
    };
    let chunks = LazyChunk::open_all(&found, memory_limit)?;
    let named =
        found.iter().zip(chunks).map(|(c, chunk)| OpenChunk::Chunk(corpus::chunk_name(target, c), chunk));
    Ok(named.collect())
}

fn open_target(path: &Path, memory_limit: usize) -> Result<OpenChunk> {
    let store = Store::open(path)?;
    let cache = ColumnCache::within(&store, memory_limit);
    let replay_started = Instant::now();
    let overlay = Overlay::load(&store, &cache)?;
    let replay_time = replay_started.elapsed();
    let chunk = OpenChunk::Target { store, overlay, cache, replay_time };
    chunk.note_leftover();
    Ok(chunk)
}

impl OpenChunk {
    fn part(&self) -> Part<'_> {
        match self {
            OpenChunk::Target { store, overlay, cache, .. } => Part::View(View::new(store, overlay, cache)),
            OpenChunk::Chunk(_, chunk) => Part::Lazy(chunk),
        }
    }

    fn store(&self) -> &Store {
        match self {
            OpenChunk::Target { store, .. } => store,
            OpenChunk::Chunk(_, chunk) => &chunk.store,
        }
    }

    /// The folded log, and how long reading and folding it took; `None`
    /// for a corpus chunk no pattern reached.
    fn folded(&self) -> Option<(&Overlay, Duration)> {
        match self {
            OpenChunk::Target { overlay, replay_time, .. } => Some((overlay, *replay_time)),
            OpenChunk::Chunk(_, chunk) => chunk.folded().map(|ov| (ov, chunk.fold_time())),
        }
    }

    /// The `chunk NAME: ` prefix of lines about a corpus chunk.
    fn prefix(&self) -> String {
        match self {
            OpenChunk::Target { .. } => String::new(),
            OpenChunk::Chunk(name, _) => format!("chunk {name}: "),
        }
    }

    /// Says on stderr that the log has bytes after its committed batches,
    /// which are ignored: at open for the target, and after the queries for
    /// a corpus chunk whose log a pattern folded.
    fn note_leftover(&self) {
        let Some((Some((off, len, why)), _)) = self.folded().map(|(ov, t)| (ov.leftover, t)) else { return };
        crate::eprint_line!(
            "cottas-tui: note: {}{} has {} at offset {off} that {} not a committed batch ({}); {} ignored",
            self.prefix(),
            self.store().layout.log.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            crate::text::plural(len, "byte", "bytes"),
            crate::text::noun(len, "is", "are"),
            why.as_str(),
            crate::text::noun(len, "it is", "they are")
        );
    }

    /// The `--explain` lines about this store and its log.
    fn explain(&self) {
        let store = self.store();
        let log_bytes =
            store.layout.log.as_ref().and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
        let chunk = self.prefix();
        crate::eprint_line!(
            "{chunk}store: {} ({})",
            store.layout.base.display(),
            store.layout.resolution.describe()
        );
        match self.folded() {
            Some((overlay, took)) => crate::eprint_line!(
                "{chunk}delta: {}, {} shadowed by the epoch marker; {log_bytes} log bytes replayed in {:.3} ms",
                crate::text::plural(overlay.batches_visible, "visible batch", "visible batches"),
                overlay.batches_shadowed,
                took.as_secs_f64() * 1e3
            ),
            None => crate::eprint_line!(
                "{chunk}delta: not folded: no pattern could match in this chunk ({log_bytes} log bytes)"
            ),
        }
    }
}
