//! Where effects run: each on its own thread, opening what it needs itself
//! and reporting back over the channel, so the UI thread only ever receives
//! messages. [`perform`] is the work; [`spawn`] runs it on a worker and
//! [`settle`] runs it in place (tests, and the benchmark's set-up).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::Event;
use spareval::{CancellationToken, QueryEvaluator, QueryResults};
use spargebra::SparqlParser;

use super::effect::Effect;
use super::load;
use super::state::{App, Confirm, Decoder, Observed, Pending, QueryTable, Repair, VersionDetails};
use super::views::triage::FileStatus;
use crate::compact::{self, CompactOptions, CompactProgress};
use crate::corpus::{self, ChunkSummary};
use crate::format::deltalog::BatchFrame;
use crate::sparql::dataset::{Part, StoreDataset};
use crate::sparql::limits::{on_request_stack, spawn_request_thread};
use crate::sparql::run::{run_query, OutputFormat, QueryOptions};
use crate::sparql::update::{Suspended, Updater};
use crate::store::log::index::LogIndex;
use crate::store::read::Explain;
use crate::store::versions::Listing;
use crate::triage::verify::{self, Report, VerifyOptions};
use crate::view::kept::{Budget, Kept, Snapshots};
use crate::view::lazy::LazyChunk;

/// Rows kept for display; the status line says when a result has more.
pub const MAX_ROWS: usize = 10_000;

/// How long a TUI write waits for another writer's lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How a compaction started from the UI ended.
pub enum CompactEnd {
    /// What it did, and the versions it went between.
    Done {
        text: String,
        from: String,
        to: String,
        carried: usize,
    },
    /// No version written; what it did instead (dropped batches an
    /// interrupted compaction had folded, or nothing).
    NothingFolded(String),
    /// Stopped on request; nothing was changed.
    Cancelled,
    Failed(String),
}

pub enum Msg {
    /// A key, mouse or resize event from the input thread.
    Input(Event),
    /// What the watcher sees on disk now (sent twice a second).
    Observed(Observed),
    Listed(Result<Listing, String>, Observed),
    VersionLoaded(Box<VersionDetails>),
    LogIndexed(Box<LogIndex>),
    /// A decoded file, and the offset to put the cursor on.
    Opened(Result<Box<Decoder>, String>, Option<u64>),
    /// Row groups read, of those to read, by a running verify.
    VerifyProgress(u64, u64),
    Verified(Result<Box<Report>, String>),
    CorpusListed(Result<Vec<ChunkSummary>, String>),
    /// Each chunk's errors and warnings.
    CorpusVerified(Vec<(PathBuf, FileStatus)>),
    /// The numbers of the log's batches that match a filter's text.
    LogFiltered(String, Result<Vec<usize>, String>),
    /// A plan to confirm, or why there is nothing to confirm.
    Planned(Result<Confirm, String>),
    /// Rows of the running query as they are produced (in order; the rest
    /// and the outcome come with `QueryDone`).
    QueryRows(Vec<String>, Vec<Vec<String>>),
    /// The chunk's snapshot is kept, the log folded (or why not: the query
    /// that needs it will say so).
    SnapshotRead(Result<(), String>),
    /// The current version (its directory name) and its namespaces.
    Namespaces(Result<(String, Vec<(String, usize)>), String>),
    QueryDone(QueryTable),
    CompactProgress(CompactProgress),
    CompactDone(CompactEnd),
    Exported(Result<String, String>),
    /// An update request or a repair finished (the message says what it did).
    Wrote(Result<String, String>),
    /// An effect could not be started.
    Failed(String),
}

/// What every effect runs against: the chunk, the memory limit, and the
/// chunk's kept snapshot (shared by the queries and exports of a session).
#[derive(Clone)]
pub struct Context {
    pub chunk: PathBuf,
    pub memory: usize,
    pub reads: Arc<Snapshots>,
    /// The writer of the last `:update`, its fold of the log kept.
    pub writer: KeptWriter,
}

/// A writer between updates: the next one resumes it instead of folding
/// the log again, unless another process wrote in between.
pub type KeptWriter = Arc<std::sync::Mutex<Option<Suspended>>>;

impl Context {
    pub fn of(app: &App) -> Context {
        Context {
            chunk: app.chunk.clone(),
            memory: app.memory_limit,
            reads: Arc::clone(&app.reads),
            writer: Arc::clone(&app.writer),
        }
    }

    /// The snapshot a query starting now reads: the kept one while the disk
    /// has not changed (the log is folded once, not once per query).
    fn snapshot(&self) -> Result<Arc<Kept>, String> {
        let budget = Budget::Memory(self.memory);
        let kept = if self.reads.chunk() == self.chunk && self.reads.budget() == budget {
            self.reads.current()
        } else {
            Snapshots::new(&self.chunk, budget).current()
        };
        kept.map_err(|e| e.to_string())
    }

    /// What a query or an export starting now reads: the chunk's kept
    /// snapshot; or, on a corpus root with no chunk open, every chunk of
    /// the corpus as one dataset, as `cottas-tui query ROOT` reads it.
    fn source(&self) -> Result<Source, String> {
        match corpus::chunks_of_root(&self.chunk).map_err(|e| e.to_string())? {
            Some(found) => {
                LazyChunk::open_all(&found, self.memory).map(Source::Corpus).map_err(|e| e.to_string())
            }
            None => self.snapshot().map(Source::Chunk),
        }
    }
}

/// The stores one query reads.
enum Source {
    Chunk(Arc<Kept>),
    /// Opened per query, each chunk's log folded only if a pattern reaches
    /// it (a session keeps no corpus-wide fold: the chunks may be written
    /// by others between queries).
    Corpus(Vec<LazyChunk>),
}

impl Source {
    fn parts(&self) -> Vec<Part<'_>> {
        match self {
            Source::Chunk(kept) => vec![Part::View(kept.view.view())],
            Source::Corpus(chunks) => chunks.iter().map(Part::Lazy).collect(),
        }
    }
}

/// Runs `effect` on a worker thread; its messages arrive on `tx`.
pub fn spawn(ctx: Context, effect: Effect, tx: &Sender<Msg>) {
    let (tx, status_tx) = (tx.clone(), tx.clone());
    // SPARQL runs on a stack sized for the limits in `sparql::limits`.
    let started = if matches!(effect, Effect::Query { .. } | Effect::Export { .. } | Effect::Update(_)) {
        spawn_request_thread(move || perform(&ctx, effect, &tx)).map(drop)
    } else {
        std::thread::Builder::new().spawn(move || perform(&ctx, effect, &tx)).map(drop)
    };
    if let Err(e) = started {
        // The work is gone with the thread that never started; say so.
        let _ = status_tx.send(Msg::Failed(format!("cannot start a worker thread: {e}")));
    }
}

/// Runs `effects` here, feeding their messages back through `update`, until
/// nothing more is asked for.
pub fn settle(app: &mut App, effects: Vec<Effect>) {
    let (tx, rx) = mpsc::channel();
    let mut queue: std::collections::VecDeque<Effect> = effects.into();
    while let Some(effect) = queue.pop_front() {
        let ctx = Context::of(app);
        on_request_stack(|| perform(&ctx, effect, &tx));
        while let Ok(msg) = rx.try_recv() {
            queue.extend(super::action::update(app, super::action::Action::Worker(msg)));
        }
    }
}

/// The work of one effect, reported on `tx`; `memory` bounds a query,
/// export, verify or compaction as their commands' `--memory-limit` does.
pub fn perform(ctx: &Context, effect: Effect, tx: &Sender<Msg>) {
    let (chunk, memory) = (ctx.chunk.as_path(), ctx.memory);
    let msg = match effect {
        Effect::ListVersions => {
            let (listing, observed) = load::list_versions(chunk);
            Msg::Listed(listing, observed)
        }
        Effect::LoadVersion(dir) => Msg::VersionLoaded(Box::new(load::version_details(chunk, &dir))),
        Effect::IndexLog => {
            Msg::LogIndexed(Box::new(LogIndex::build(&chunk.join(crate::store::versions::layout::LOG))))
        }
        Effect::OpenFile { path, at } => Msg::Opened(load::open_file(&path).map(Box::new), at),
        Effect::Namespaces => Msg::Namespaces(load::namespaces(chunk)),
        Effect::FilterLog(text) => Msg::LogFiltered(text.clone(), filter_log(chunk, &text)),
        Effect::ReadSnapshot => Msg::SnapshotRead(ctx.snapshot().map(drop)),
        Effect::Query { text, token } => Msg::QueryDone(query_table(ctx, &text, token, tx)),
        Effect::Export { text, out, format } => Msg::Exported(export(ctx, &text, &out, format)),
        Effect::Update(text) => Msg::Wrote(update(ctx, &text)),
        Effect::PlanCompaction => Msg::Planned(plan_compaction(chunk)),
        Effect::Compact { cancel } => {
            let end = run_compaction(chunk, memory, cancel, tx);
            ctx.reads.invalidate();
            Msg::CompactDone(end)
        }
        Effect::PlanRepair(kind) => Msg::Planned(plan_repair(chunk, kind)),
        Effect::Repair(kind) => {
            let done = repair(chunk, &kind);
            ctx.reads.invalidate();
            Msg::Wrote(done)
        }
        Effect::Verify { deep } => Msg::Verified(verify_chunk(chunk, memory, deep, tx)),
        Effect::ListCorpus(root) => Msg::CorpusListed(list_corpus(&root)),
        Effect::VerifyCorpus(root) => Msg::CorpusVerified(verify_corpus(&root, memory)),
    };
    let _ = tx.send(msg);
}

/// Reports what is on disk every half second, for as long as the UI runs.
pub fn spawn_watcher(chunk: PathBuf, tx: Sender<Msg>) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500));
        if tx.send(Msg::Observed(load::observe(&chunk))).is_err() {
            return;
        }
    });
}

/// Forwards terminal events into the loop's channel, so one `recv` waits
/// for input and workers alike.
pub fn spawn_input(tx: std::sync::Arc<std::sync::Mutex<Sender<Msg>>>) {
    std::thread::spawn(move || {
        while let Ok(ev) = ratatui::crossterm::event::read() {
            let Ok(tx) = tx.lock() else { return };
            if tx.send(Msg::Input(ev)).is_err() {
                return;
            }
        }
    });
}

/// Applies an update through the writer the last one left (its fold of the
/// log kept: the log is read again only if another process wrote since);
/// the writer's fold, taken before it lets go of the lock, becomes the next
/// query's snapshot.
fn update(ctx: &Context, text: &str) -> Result<String, String> {
    let kept = ctx.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
    // The first update takes over the queries' fold of the log, if the disk
    // still matches it; later ones resume their own writer.
    let reader = (ctx.reads.chunk() == ctx.chunk).then(|| ctx.reads.held()).flatten();
    let mut writer = match Updater::resume(&ctx.chunk, Some(LOCK_WAIT), kept, reader.as_deref()) {
        Ok(w) => w,
        Err(e) => return Err(e.to_string()),
    };
    let outcome = writer.apply(text).map(|o| o.to_string()).map_err(|e| e.to_string());
    // Still holding the writer lock: the fold describes the disk as it is.
    let handed_over = (outcome.is_ok() && ctx.reads.chunk() == ctx.chunk)
        .then(|| Kept::after_update(&ctx.chunk, writer.overlay(), ctx.reads.budget()).ok())
        .flatten();
    match handed_over {
        Some(kept) => ctx.reads.install(kept),
        None => ctx.reads.invalidate(),
    }
    if outcome.is_ok() {
        *ctx.writer.lock().unwrap_or_else(|p| p.into_inner()) = writer.suspend().ok();
    }
    outcome
}

fn plan_compaction(chunk: &Path) -> Result<Confirm, String> {
    match compact::plan(chunk) {
        Ok(p) if !p.has_work() => Err("nothing to fold: the log has no visible batch".into()),
        Ok(p) if p.finishes_truncation() => Ok(Confirm {
            title: "Finish an interrupted compaction?".into(),
            text: format!(
                "{p}\n\nA compaction stopped after flipping `current` and before emptying the log. Press y to drop the folded batches (their bytes are saved beside the log), n to cancel."
            ),
            then: Pending::Compact,
        }),
        Ok(p) => Ok(Confirm {
            title: "Compact?".into(),
            text: format!("{p}\n\nPress y to compact, n to cancel."),
            then: Pending::Compact,
        }),
        Err(e) => Err(e.to_string()),
    }
}

fn run_compaction(
    chunk: &Path,
    memory: usize,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    tx: &Sender<Msg>,
) -> CompactEnd {
    let opts = CompactOptions { cancel: Some(cancel), memory_limit: memory, ..CompactOptions::default() };
    let r = compact::compact(chunk, &opts, |p| {
        let _ = tx.send(Msg::CompactProgress(p.clone()));
    });
    match r {
        Ok(outcome @ compact::Compaction::NothingToFold { .. }) => {
            CompactEnd::NothingFolded(outcome.to_string())
        }
        Ok(compact::Compaction::Folded(s)) => CompactEnd::Done {
            text: s.to_string(),
            from: s.plan.from_version.clone(),
            to: s.plan.to_version.clone(),
            carried: s.carried,
        },
        Err(crate::store::StoreError::Cancelled { .. }) => CompactEnd::Cancelled,
        Err(e) => CompactEnd::Failed(e.to_string()),
    }
}

fn plan_repair(chunk: &Path, kind: Repair) -> Result<Confirm, String> {
    let plan = kind.plan(chunk).map_err(|e| e.to_string())?;
    if plan.noop {
        return Err(plan.lines.join("; "));
    }
    let backups = chunk.join(crate::store::sidecars::rebuild::BACKUPS);
    Ok(Confirm {
        title: "Repair?".into(),
        text: format!(
            "{}\n\nEvery byte removed or replaced is copied first to a new directory under\n{}/\nThe same as: {}\nPress y to apply, n to cancel.",
            plan.lines.join("\n"),
            backups.display(),
            kind.command(chunk),
        ),
        then: Pending::Repair(kind),
    })
}

/// The numbers of the batches whose row or entries hold every word of
/// `text`: one pass over the log, a batch at a time.
fn filter_log(chunk: &Path, text: &str) -> Result<Vec<usize>, String> {
    let path = chunk.join(crate::store::versions::layout::LOG);
    let Some(bytes) = crate::store::log::Log::read_bytes(&path).map_err(|e| e.to_string())? else {
        return Ok(Vec::new());
    };
    let mut filter = super::views::ListFilter::default();
    filter.set(text);
    let keeps = |f: &BatchFrame| {
        let entries: Vec<String> = f.batch.entries.iter().map(|e| e.describe()).collect();
        filter.keeps(&format!("{} {} {} {}", f.offset, f.batch.seq, f.batch.epoch, entries.join(" ")))
    };
    let mut kept = Vec::new();
    let mut n = 0;
    let scanned = crate::store::log::Log::scan(&path, &bytes, &mut |f| {
        if keeps(&f) {
            kept.push(n);
        }
        n += 1;
    })
    .map_err(|e| e.to_string())?;
    Ok(match scanned.legacy {
        Some(frames) => frames.iter().enumerate().filter(|(_, f)| keeps(f)).map(|(i, _)| i).collect(),
        None => kept,
    })
}

/// A repair through the same code as `cottas-tui repair … --yes`.
fn repair(chunk: &Path, kind: &Repair) -> Result<String, String> {
    kind.apply(chunk, Some(LOCK_WAIT)).map(|a| a.lines.join("; ")).map_err(|e| e.to_string())
}

/// `verify` of the whole chunk, through the same code as the CLI; progress
/// goes to the view as it is made.
fn verify_chunk(chunk: &Path, memory: usize, deep: bool, tx: &Sender<Msg>) -> Result<Box<Report>, String> {
    let progress = |done: u64, all: u64| {
        let _ = tx.send(Msg::VerifyProgress(done, all));
    };
    let opts = VerifyOptions { deep, memory_limit: memory, progress: Some(&progress) };
    verify::verify(chunk, opts).map(Box::new).map_err(|e| e.to_string())
}

/// The chunks under `root`, as `corpus list` summarises them.
fn list_corpus(root: &Path) -> Result<Vec<ChunkSummary>, String> {
    let chunks = corpus::find_chunks(root, corpus::DEFAULT_DEPTH).map_err(|e| e.to_string())?;
    Ok(chunks.iter().map(|c| corpus::summarize(root, c)).collect())
}

/// `corpus verify` of every chunk (two at a time), counted per chunk; a
/// chunk verify could not run on counts as one error.
fn verify_corpus(root: &Path, memory: usize) -> Vec<(PathBuf, FileStatus)> {
    let Ok(chunks) = corpus::find_chunks(root, corpus::DEFAULT_DEPTH) else { return Vec::new() };
    // Two chunks at a time, so each gets half.
    let opts = VerifyOptions { memory_limit: memory / 2, ..VerifyOptions::default() };
    let reports = corpus::verify_all(root, &chunks, opts, 2);
    let counted = reports.into_iter().map(|r| match r.outcome {
        corpus::ChunkOutcome::Report(report) => {
            let errors = report.errors();
            FileStatus { errors, warnings: report.findings.len() - errors }
        }
        corpus::ChunkOutcome::Failed(_) => FileStatus { errors: 1, warnings: 0 },
    });
    chunks.into_iter().zip(counted).collect()
}

/// Rows of a running query on their way to the UI: the first screenful as
/// soon as it exists, then what came meanwhile every `EVERY`; the rows not
/// yet sent go with the outcome.
struct RowStream<'a> {
    tx: &'a Sender<Msg>,
    vars: Vec<String>,
    pending: Vec<Vec<String>>,
    /// Rows produced so far (sent, pending, and those past `MAX_ROWS`).
    seen: usize,
    sent: usize,
    last: Instant,
    /// The query reads an empty default graph (`sparql::hints`).
    empty_default_graph: bool,
}

/// Rows that make a first screen; sent as soon as they exist.
const FIRST: usize = 100;
const EVERY: Duration = Duration::from_millis(200);

impl RowStream<'_> {
    fn push(&mut self, row: impl FnOnce() -> Vec<String>) {
        self.seen += 1;
        if self.sent + self.pending.len() < MAX_ROWS {
            self.pending.push(row());
        }
        let first = self.sent == 0 && self.pending.len() >= FIRST;
        if first || (!self.pending.is_empty() && self.last.elapsed() >= EVERY) {
            self.sent += self.pending.len();
            self.last = Instant::now();
            let _ = self.tx.send(Msg::QueryRows(self.vars.clone(), std::mem::take(&mut self.pending)));
        }
    }
}

fn query_table(ctx: &Context, text: &str, token: CancellationToken, tx: &Sender<Msg>) -> QueryTable {
    let started = Instant::now();
    let mut stream = RowStream {
        tx,
        vars: Vec::new(),
        pending: Vec::new(),
        seen: 0,
        sent: 0,
        last: Instant::now(),
        empty_default_graph: false,
    };
    let outcome = run_for_table(ctx, text, token, &mut stream);
    let note = stream.empty_default_graph.then(|| crate::sparql::hints::EMPTY_DEFAULT_GRAPH.to_string());
    let mut table = QueryTable {
        vars: stream.vars,
        rows: stream.pending,
        total: stream.seen,
        note,
        ..QueryTable::default()
    };
    match outcome {
        Ok(boolean) => table.boolean = boolean,
        Err(e) => table.error = Some(e),
    }
    table.elapsed = started.elapsed();
    table
}

/// Evaluates `text`, handing solutions (or triples) to `out` as they come;
/// an ASK's answer is returned.
fn run_for_table(
    ctx: &Context,
    text: &str,
    token: CancellationToken,
    out: &mut RowStream,
) -> Result<Option<bool>, String> {
    let query = crate::sparql::limits::parse_query(SparqlParser::new(), text)
        .map_err(|e| crate::sparql::run::QueryError::from(e).to_string())?;
    let source = ctx.source()?;
    let parts = source.parts();
    let explain = std::cell::RefCell::new(Explain::default());
    let dataset = StoreDataset::of_parts(parts.clone(), &explain);
    let evaluator = QueryEvaluator::new().with_cancellation_token(token.clone());
    let cancelled = |e: spareval::QueryEvaluationError| {
        if token.is_cancelled() {
            "cancelled".to_string()
        } else {
            e.to_string()
        }
    };
    let stop = || token.is_cancelled();
    let quick = crate::sparql::run::shortcut_until(&query, &dataset, &QueryOptions::default(), &stop)
        .map_err(|e| e.to_string())?;
    let results = match quick {
        Some(results) => results,
        None => {
            let rewritten =
                crate::sparql::run::answered_subqueries(&query, &dataset, &QueryOptions::default(), &stop)
                    .map_err(|e| e.to_string())?;
            evaluator.prepare(rewritten.as_ref().unwrap_or(&query)).execute(dataset).map_err(cancelled)?
        }
    };
    match results {
        QueryResults::Boolean(b) => {
            out.empty_default_graph =
                !b && crate::sparql::hints::reads_an_empty_default_graph(&query, &parts, false);
            return Ok(Some(b));
        }
        QueryResults::Solutions(sols) => {
            out.vars = sols.variables().iter().map(|v| v.as_str().to_string()).collect();
            for s in sols {
                let s = s.map_err(cancelled)?;
                out.push(|| {
                    s.values().iter().map(|t| t.as_ref().map(|t| t.to_string()).unwrap_or_default()).collect()
                });
            }
        }
        QueryResults::Graph(triples) => {
            out.vars = vec!["subject".into(), "predicate".into(), "object".into()];
            for t in triples {
                let t = t.map_err(cancelled)?;
                out.push(|| vec![t.subject.to_string(), t.predicate.to_string(), t.object.to_string()]);
            }
        }
    }
    // Decided after the rows, for an answer that small: on a corpus it may
    // fold chunks the query did not reach.
    out.empty_default_graph =
        out.seen <= 1 && crate::sparql::hints::reads_an_empty_default_graph(&query, &parts, false);
    Ok(None)
}

fn export(ctx: &Context, text: &str, out: &Path, format: OutputFormat) -> Result<String, String> {
    let source = ctx.source()?;
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut file = std::io::BufWriter::new(file);
    let opts = QueryOptions { format: Some(format), ..QueryOptions::default() };
    let s = run_query(&source.parts(), text, &opts, &mut file).map_err(|e| e.to_string())?;
    std::io::Write::flush(&mut file).map_err(|e| e.to_string())?;
    Ok(format!("exported {} to {}", crate::text::plural(s.rows, "result", "results"), out.display()))
}
