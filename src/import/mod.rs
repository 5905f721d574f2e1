//! `cottas-tui import`: RDF files → a new chunk directory with `v1/`.
//!
//! Parse (oxttl) → render tokens → external sort + dedup → stream row groups
//! into `data.cottas` → build the 11 sidecars from the written base → marker,
//! summary, empty log, `current`. Everything is written inside a temp
//! directory beside the target, fsynced, and renamed into place only at the
//! end: a failed or interrupted import leaves nothing behind.

mod checked;
mod fast;
pub mod input;
mod parallel;
mod render;

pub use input::InputFormat;
#[doc(hidden)]
pub use parallel::unit_differs_from_strict;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use oxttl::{NQuadsParser, NTriplesParser, TriGParser, TurtleParseError, TurtleParser};

use crate::format::deltalog;
use crate::format::epoch::{self, EpochMarker};
use crate::store::base::writer::BaseOptions;
use crate::store::fsutil::{replace_symlink, sync_dir, write_synced};
use crate::store::sidecars;
use crate::store::sort;
use crate::store::versions::layout::{BASE, LOG, MARKER};
use crate::store::versions::sink::VersionSink;
use crate::store::StoreError;

#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
    /// Forced syntax; otherwise from each file name (stdin: N-Quads).
    pub format: Option<InputFormat>,
    /// Graph for the statements of triple-only inputs.
    pub graph: Option<String>,
    pub memory_limit: usize,
    /// Skip malformed statements instead of stopping at the first.
    pub lenient: bool,
    /// Parser threads for N-Quads / N-Triples input.
    pub threads: usize,
    pub base: BaseOptions,
}

impl ImportOptions {
    pub fn new(inputs: Vec<PathBuf>, out: PathBuf) -> Self {
        ImportOptions {
            inputs,
            out,
            format: None,
            graph: None,
            memory_limit: 1 << 30,
            lenient: false,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()).min(8),
            base: BaseOptions::default(),
        }
    }
}

/// Where the import is, for progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Parsing,
    Writing,
    Indexing,
    Publishing,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Parsing => "parsing",
            Phase::Writing => "writing base",
            Phase::Indexing => "building sidecars",
            Phase::Publishing => "publishing",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Progress {
    pub phase: Phase,
    pub quads: u64,
    pub elapsed: f64,
}

#[derive(Clone, Debug, Default)]
pub struct ImportSummary {
    /// Statements parsed (duplicates counted).
    pub parsed: u64,
    pub distinct: u64,
    /// Distinct named graphs (the default graph not counted).
    pub graphs: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub skipped: u64,
    pub first_errors: Vec<String>,
    pub spilled_runs: usize,
}

impl fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} distinct), {}, {}, {:.2} B/quad in {:.2}s",
            crate::text::plural(self.parsed, "quad", "quads"),
            self.distinct,
            crate::text::plural(self.graphs, "graph", "graphs"),
            crate::text::plural(self.bytes, "byte", "bytes"),
            if self.distinct == 0 { 0.0 } else { self.bytes as f64 / self.distinct as f64 },
            self.seconds
        )
    }
}

#[derive(Debug)]
pub enum ImportError {
    /// A malformed statement: file, 1-based line and column, the parser's message.
    Syntax {
        file: String,
        line: u64,
        column: u64,
        message: String,
    },
    Io {
        path: PathBuf,
        source: io::Error,
    },
    Store(StoreError),
    Usage(String),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Syntax { file, line, column, message } => {
                write!(f, "{file}:{line}:{column}: {message}")
            }
            ImportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ImportError::Store(e) => write!(f, "{e}"),
            ImportError::Usage(m) => f.write_str(m),
        }
    }
}
impl std::error::Error for ImportError {}

impl crate::exit::Classify for ImportError {
    /// A malformed statement is bad input; a store error keeps its class;
    /// unreadable files and bad options are failures.
    fn exit_class(&self) -> crate::exit::ExitClass {
        match self {
            ImportError::Syntax { .. } => crate::exit::ExitClass::BadInput,
            ImportError::Store(e) => crate::exit::Classify::exit_class(e),
            ImportError::Io { .. } | ImportError::Usage(_) => crate::exit::ExitClass::Failure,
        }
    }
}

impl From<StoreError> for ImportError {
    fn from(e: StoreError) -> Self {
        ImportError::Store(e)
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ImportError + '_ {
    move |source| ImportError::Io { path: path.to_path_buf(), source }
}

fn display_name(p: &Path) -> String {
    if p.as_os_str() == "-" {
        "<stdin>".into()
    } else {
        p.display().to_string()
    }
}

pub(crate) type QuadIter = Box<dyn Iterator<Item = Result<oxrdf::Quad, TurtleParseError>>>;

pub(crate) fn parser_for(format: InputFormat, reader: Box<dyn io::Read + Send>) -> QuadIter {
    let triples = |t: oxrdf::Triple| t.in_graph(oxrdf::GraphName::DefaultGraph);
    match format {
        InputFormat::NQuads => Box::new(NQuadsParser::new().for_reader(reader)),
        InputFormat::TriG => Box::new(TriGParser::new().for_reader(reader)),
        InputFormat::NTriples => {
            Box::new(NTriplesParser::new().for_reader(reader).map(move |r| r.map(triples)))
        }
        InputFormat::Turtle => Box::new(TurtleParser::new().for_reader(reader).map(move |r| r.map(triples))),
    }
}

/// Runs an import. `progress` is called every 100,000 statements and at each phase.
pub fn import(
    opts: &ImportOptions,
    mut progress: impl FnMut(&Progress),
) -> Result<ImportSummary, ImportError> {
    let started = Instant::now();
    let out = &opts.out;
    if out.exists() && fs::read_dir(out).map_err(io_err(out))?.next().is_some() {
        return Err(ImportError::Usage(format!(
            "{}: already exists and is not empty; import writes a new store (use `update` to add to one)",
            out.display()
        )));
    }
    if opts.inputs.is_empty() {
        return Err(ImportError::Usage("no input files".into()));
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io_err(parent))?;
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "store".into());
    let tmp = parent.join(format!(".{name}.import-tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(tmp.join("v1")).map_err(io_err(&tmp))?;
    let result = run(opts, &tmp, started, &mut progress);
    match result {
        Ok(mut summary) => {
            progress(&Progress {
                phase: Phase::Publishing,
                quads: summary.parsed,
                elapsed: started.elapsed().as_secs_f64(),
            });
            if out.exists() {
                fs::remove_dir(out).map_err(io_err(out))?;
            }
            fs::rename(&tmp, out).map_err(io_err(out))?;
            sync_dir(parent).map_err(io_err(parent))?;
            summary.seconds = started.elapsed().as_secs_f64();
            Ok(summary)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn run(
    opts: &ImportOptions,
    tmp: &Path,
    started: Instant,
    progress: &mut impl FnMut(&Progress),
) -> Result<ImportSummary, ImportError> {
    let mut summary = ImportSummary::default();
    let spill_dir = tmp.join("sort");
    fs::create_dir_all(&spill_dir).map_err(io_err(&spill_dir))?;
    // Three quarters of the limit while parsing: a spill being written and
    // the keys arriving meanwhile hold at most 3/8 each, and what is held
    // when the rows start going out (at most 3/8) leaves the version writer
    // its quarter for the dictionaries and room for row groups in flight.
    let mut sorter = sort::Sorter::new(opts.memory_limit / 4 * 3, &spill_dir);
    let mut renderer = render::Renderer::default();
    let threads = opts.threads;
    progress(&Progress { phase: Phase::Parsing, quads: 0, elapsed: started.elapsed().as_secs_f64() });

    for (document, input) in opts.inputs.iter().enumerate() {
        let name = display_name(input);
        let format = match opts.format.or_else(|| InputFormat::from_name(&name)) {
            Some(f) => f,
            None if input.as_os_str() == "-" => InputFormat::NQuads,
            None => {
                return Err(ImportError::Usage(format!(
                    "{name}: cannot tell the syntax from the name; pass --format nquads|ntriples|turtle|trig"
                )))
            }
        };
        let fallback_graph = if format.has_graphs() { None } else { opts.graph.as_deref() };
        renderer.new_document();
        let mut ingest = Ingest {
            renderer: &mut renderer,
            sorter: &mut sorter,
            summary: &mut summary,
            tokens: Default::default(),
            name: name.clone(),
            lenient: opts.lenient,
            spill_dir: &spill_dir,
            fallback_graph,
            started,
            progress: &mut *progress,
        };
        let mut failure = None;
        if matches!(format, InputFormat::NQuads | InputFormat::NTriples) {
            // Line-based: parsed on several threads (see parallel.rs).
            let source = parallel::Source::open(input).map_err(io_err(input))?;
            parallel::run(source, document, format, fallback_graph, opts.lenient, threads, &mut |event| {
                let r = match event {
                    parallel::Event::Keys(batch) => ingest.keys(batch),
                    parallel::Event::Error { line_offset, error } => ingest.item(Err(error), line_offset),
                    parallel::Event::Failed(source) => Err(ImportError::Io { path: input.clone(), source }),
                };
                r.map_err(|e| failure = Some(e)).is_ok()
            });
        } else {
            let reader = input::open(input).map_err(io_err(input))?;
            // Parse on a second thread; render and sort here.
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Result<oxrdf::Quad, TurtleParseError>>>(8);
            let parse = std::thread::spawn(move || {
                let mut batch = Vec::with_capacity(4096);
                for item in parser_for(format, reader) {
                    batch.push(item);
                    if batch.len() == 4096
                        && tx.send(std::mem::replace(&mut batch, Vec::with_capacity(4096))).is_err()
                    {
                        return;
                    }
                }
                let _ = tx.send(batch);
            });
            'batches: for batch in rx {
                for item in batch {
                    if let Err(e) = ingest.item(item, 0) {
                        failure = Some(e);
                        break 'batches;
                    }
                }
            }
            // Dropping the receiver (on failure) stops the parser at its next send.
            let _ = parse.join();
        }
        if let Some(e) = failure {
            return Err(e);
        }
    }
    summary.spilled_runs = sorter.spilled_runs();

    // Merge into row groups of the base.
    progress(&Progress {
        phase: Phase::Writing,
        quads: summary.parsed,
        elapsed: started.elapsed().as_secs_f64(),
    });
    let v1 = tmp.join("v1");
    let base_path = v1.join(BASE);
    // The sort holds at most 3/8 of the limit while it merges; the
    // dictionaries get a quarter, and row groups in flight fit in the rest.
    let mut sink = VersionSink::create(&v1, &spill_dir, &opts.base, opts.memory_limit / 4)?;
    let mut cols: [Vec<u8>; 4] = Default::default();
    let merged = sorter.finish(|key| {
        if let Some(row) = sort::split_key(key) {
            return sink.push_unchecked(row, false);
        }
        let at = sort::decode_key_into(key, &mut cols);
        // The sort already yields distinct rows in SPOG order.
        sink.push_unchecked(std::array::from_fn(|c| &cols[c][at[c]..]), false)?;
        for c in &mut cols {
            c.clear();
        }
        Ok(())
    });
    progress(&Progress {
        phase: Phase::Indexing,
        quads: summary.parsed,
        elapsed: started.elapsed().as_secs_f64(),
    });
    // A writer error explains a stopped merge better than the merge's own error.
    let written = match merged {
        Ok(()) => sink.finish()?,
        Err(e) => {
            sink.finish()?;
            return Err(io_err(&spill_dir)(e));
        }
    };
    summary.distinct = written.rows;
    summary.graphs = written.graphs;
    fs::remove_dir_all(&spill_dir).map_err(io_err(&spill_dir))?;
    let marker = v1.join(MARKER);
    write_synced(&marker, &epoch::encode(&EpochMarker::new(0))).map_err(io_err(&marker))?;
    summary.bytes = fs::metadata(&base_path).map_err(io_err(&base_path))?.len();
    write_summary(opts, &v1, &summary)?;
    sync_dir(&v1).map_err(io_err(&v1))?;
    let log = tmp.join(LOG);
    write_synced(&log, &deltalog::encode_header()).map_err(io_err(&log))?;
    replace_symlink(tmp, "current", "v1").map_err(io_err(tmp))?;
    sync_dir(tmp).map_err(io_err(tmp))?;
    Ok(summary)
}

/// The importing thread's side of parsing: keys from the parser threads,
/// their errors in document order (which one comes first), and the
/// statements of Turtle and TriG, rendered here in document order (their
/// blank nodes are numbered in order of first appearance).
struct Ingest<'a> {
    renderer: &'a mut render::Renderer,
    sorter: &'a mut sort::Sorter,
    summary: &'a mut ImportSummary,
    tokens: [String; 4],
    name: String,
    lenient: bool,
    spill_dir: &'a Path,
    fallback_graph: Option<&'a str>,
    started: Instant,
    progress: &'a mut dyn FnMut(&Progress),
}

impl Ingest<'_> {
    fn counted(&mut self, n: u64) {
        let before = self.summary.parsed / 100_000;
        self.summary.parsed += n;
        if self.summary.parsed / 100_000 != before {
            let elapsed = self.started.elapsed().as_secs_f64();
            (self.progress)(&Progress { phase: Phase::Parsing, quads: self.summary.parsed, elapsed });
        }
    }

    /// Keys a parser thread rendered already.
    fn keys(&mut self, batch: &mut parallel::Batch) -> Result<(), ImportError> {
        let n = batch.ends.len() as u64;
        self.sorter
            .push_sorted(std::mem::take(&mut batch.keys), &batch.sorted)
            .map_err(io_err(self.spill_dir))?;
        self.counted(n);
        Ok(())
    }

    /// One parsed statement, or the parser's error; `line_offset` turns a
    /// slice's line numbers into the file's.
    fn item(
        &mut self,
        item: Result<oxrdf::Quad, TurtleParseError>,
        line_offset: u64,
    ) -> Result<(), ImportError> {
        let q = match item {
            Ok(q) => q,
            Err(TurtleParseError::Io(e)) => {
                return Err(ImportError::Io { path: PathBuf::from(&self.name), source: e });
            }
            Err(TurtleParseError::Syntax(e)) => {
                let (loc, end) = (e.location().start, e.location().end);
                // oxttl reads an unclosed literal or IRI on to the end of its
                // input and says "Unexpected end of file" at the term's start,
                // which in a file with lines after it reads as nonsense.
                let message = match e.message() {
                    "Unexpected end of file" if end.line > loc.line => format!(
                        "the term that starts here is not closed (read on to line {} without finding its end)",
                        line_offset + end.line + 1
                    ),
                    m => m.to_string(),
                };
                let err = ImportError::Syntax {
                    file: self.name.clone(),
                    line: line_offset + loc.line + 1,
                    column: loc.column + 1,
                    message,
                };
                if !self.lenient {
                    return Err(err);
                }
                self.summary.skipped += 1;
                if self.summary.first_errors.len() < 5 {
                    self.summary.first_errors.push(err.to_string());
                }
                return Ok(());
            }
        };
        self.renderer.quad(&mut self.tokens, &q, self.fallback_graph);
        let [s, p, o, g] = &self.tokens;
        self.sorter
            .push([s.as_bytes(), p.as_bytes(), o.as_bytes(), g.as_bytes()])
            .map_err(io_err(self.spill_dir))?;
        self.counted(1);
        Ok(())
    }
}

/// `summary.json`: the fields of the original importer's summary that apply.
fn write_summary(opts: &ImportOptions, v1: &Path, s: &ImportSummary) -> Result<(), ImportError> {
    let source_path: Vec<String> = opts
        .inputs
        .iter()
        .map(|p| {
            if p.as_os_str() == "-" {
                "-".into()
            } else {
                fs::canonicalize(p).unwrap_or(p.clone()).display().to_string()
            }
        })
        .collect();
    let first = opts.inputs.first().map(|p| display_name(p)).unwrap_or_default();
    let format = opts.format.or_else(|| InputFormat::from_name(&first)).unwrap_or(InputFormat::NQuads);
    let suffixes: Vec<&str> =
        sidecars::SUFFIXES.iter().copied().filter(|suf| v1.join(format!("{BASE}{suf}")).exists()).collect();
    let v = serde_json::json!({
        "artifact_type": "cottas-tui-cottas",
        "source_path": if source_path.len() == 1 { serde_json::json!(source_path[0]) } else { serde_json::json!(source_path) },
        "source_format": format.media_type(),
        "dataset_name": opts.out.file_name().map(|n| n.to_string_lossy().into_owned()),
        "version": "v1",
        "parser_used": "oxttl",
        "quad_count": s.parsed,
        "distinct_quad_count": s.distinct,
        "graph_count": s.graphs,
        "index": "spog",
        "row_order": "producer",
        "row_group_size": opts.base.row_group_size,
        "sidecars_built": suffixes,
        "files": {"data_cottas": BASE},
        "writer": format!("cottas-tui {}", env!("CARGO_PKG_VERSION")),
    });
    let path = v1.join("summary.json");
    let mut text = serde_json::to_string_pretty(&v).map_err(|e| ImportError::Usage(e.to_string()))?;
    text.push('\n');
    write_synced(&path, text.as_bytes()).map_err(io_err(&path))
}
