//! Running one SPARQL query against a store and writing its results.
//!
//! Shared by `cottas-tui query` / `--batch` and, later, the TUI's query view.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{self, Write};
use std::time::Duration;

use oxrdf::{GraphName, Variable};
use oxttl::{NQuadsSerializer, NTriplesSerializer, TriGSerializer, TurtleSerializer};
use sparesults::{QueryResultsFormat, QueryResultsSerializer};
use spareval::{CancellationToken, QueryEvaluator, QueryResults};
use spargebra::SparqlParser;

use super::dataset::{Part, StoreDataset};
use crate::store::read::Explain;
use crate::store::StoreError;
use crate::view::View;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Json,
    Xml,
    Csv,
    Tsv,
    /// Aligned text columns (the default on a terminal).
    Table,
    #[value(name = "ntriples", alias = "nt")]
    NTriples,
    #[value(name = "nquads", alias = "nq")]
    NQuads,
    #[value(name = "turtle", alias = "ttl")]
    Turtle,
    /// A graph result as TriG (its triples in the default graph).
    #[value(name = "trig")]
    TriG,
}

#[derive(Clone, Default)]
pub struct QueryOptions {
    /// `None`: the table on a terminal, TSV (or N-Triples for graphs) otherwise.
    pub format: Option<OutputFormat>,
    pub tty: bool,
    pub union_default_graph: bool,
    pub timeout: Option<Duration>,
    pub explain: bool,
    /// Evaluate every query in full, never from a shortcut
    /// (`sparql::shortcut`; for tests that compare the two).
    pub no_shortcuts: bool,
    /// Stop after this many solutions (or triples) and say so in
    /// [`QuerySummary::truncated`].
    pub max_rows: Option<usize>,
    /// Cancelled from outside (the endpoint's deadlines); with `timeout`
    /// also set, a cancelled query reports [`QueryError::Timeout`]. Without
    /// it, `timeout` starts a timer thread of its own.
    pub cancel: Option<CancellationToken>,
    /// Decide [`QuerySummary::empty_default_graph`] (for `query`, which says
    /// it; the endpoint has nowhere to, so it does not pay for it).
    pub hints: bool,
    /// When an error (a timeout) stops a result midway, close the document
    /// written so far and report [`QueryError::Cut`]: for scripts, whose
    /// stdout must hold only whole documents. The endpoint leaves it open,
    /// so that an HTTP client sees a broken response, never a short one
    /// that looks whole.
    pub close_cut_documents: bool,
}

#[derive(Debug)]
pub enum QueryError {
    /// The query text does not parse; the message names line:column.
    Syntax(String),
    /// The query parsed but could not be evaluated or answered in that format.
    Evaluation(String),
    Timeout(Duration),
    /// Refused before evaluation: past a bound of [`super::limits`].
    Limit(String),
    Store(StoreError),
    Io(io::Error),
    /// `error` stopped a result after `rows` of it were written; what was
    /// written was closed as a complete document (a JSON or XML document
    /// ended, a Turtle statement finished), so stdout never holds half of one.
    Cut {
        error: Box<QueryError>,
        rows: usize,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Syntax(m) => write!(f, "query syntax: {m}"),
            QueryError::Evaluation(m) => write!(f, "query evaluation: {m}"),
            QueryError::Timeout(d) => write!(f, "query timed out after {:.1}s", d.as_secs_f64()),
            QueryError::Limit(m) => write!(f, "query refused: {m}"),
            QueryError::Store(e) => write!(f, "{e}"),
            QueryError::Io(e) => write!(f, "{e}"),
            QueryError::Cut { error, rows } => write!(
                f,
                "{error}; the output holds the {} written before it, closed as a complete document",
                crate::text::plural(*rows, "result", "results")
            ),
        }
    }
}

impl crate::exit::Classify for QueryError {
    /// A query that does not parse, hits a limit, fails or times out is bad
    /// input; the store's own errors keep their class.
    fn exit_class(&self) -> crate::exit::ExitClass {
        use crate::exit::ExitClass;
        match self {
            QueryError::Syntax(_)
            | QueryError::Evaluation(_)
            | QueryError::Limit(_)
            | QueryError::Timeout(_) => ExitClass::BadInput,
            QueryError::Store(e) => crate::exit::Classify::exit_class(e),
            QueryError::Io(_) => ExitClass::Failure,
            QueryError::Cut { error, .. } => error.exit_class(),
        }
    }
}

impl std::error::Error for QueryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            QueryError::Io(e) => Some(e),
            QueryError::Store(e) => Some(e),
            QueryError::Cut { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

impl From<super::limits::Refusal> for QueryError {
    fn from(r: super::limits::Refusal) -> Self {
        match r {
            super::limits::Refusal::Syntax(m) => QueryError::Syntax(m),
            super::limits::Refusal::Limit(m) => QueryError::Limit(m),
        }
    }
}

impl From<io::Error> for QueryError {
    fn from(e: io::Error) -> Self {
        QueryError::Io(e)
    }
}

/// What a query produced, for the caller's status line.
#[derive(Debug, Default)]
pub struct QuerySummary {
    pub rows: usize,
    /// `max_rows` cut the result: there was at least one more row.
    pub truncated: bool,
    pub explain: Explain,
    pub plan: Option<String>,
    /// Answered by `sparql::shortcut`, not evaluated.
    pub shortcut: bool,
    /// The query read the default graph where it is empty and named graphs
    /// are not (`sparql::hints`).
    pub empty_default_graph: bool,
}

/// Evaluates a parsed query over base ⊕ delta and hands the results to `f`
/// (for callers that consume results themselves, such as test harnesses).
pub fn with_results<R>(
    parts: &[View<'_>],
    query: &spargebra::Query,
    f: impl FnOnce(Result<QueryResults<'_>, spareval::QueryEvaluationError>) -> R,
) -> R {
    let explain = RefCell::new(Explain::default());
    let dataset = StoreDataset::of(parts.to_vec(), &explain);
    let evaluator = QueryEvaluator::new();
    f(evaluator.prepare(query).execute(dataset))
}

/// Parses, evaluates and writes one query over `parts` (one chunk, or every
/// chunk of a corpus).
pub fn run_query<'p>(
    parts: &[impl Copy + Into<Part<'p>>],
    text: &str,
    opts: &QueryOptions,
    out: &mut dyn Write,
) -> Result<QuerySummary, QueryError> {
    let query = super::limits::parse_query(SparqlParser::new(), text)?;
    run_parsed(parts, &query, opts, out)
}

/// Evaluates and writes one parsed query.
pub fn run_parsed<'p>(
    parts: &[impl Copy + Into<Part<'p>>],
    query: &spargebra::Query,
    opts: &QueryOptions,
    out: &mut dyn Write,
) -> Result<QuerySummary, QueryError> {
    let explain = RefCell::new(Explain::default());
    let union_default_graph = opts.union_default_graph && query.dataset().is_none();
    let parts: Vec<Part> = parts.iter().map(|&p| p.into()).collect();
    // The note explains an empty answer or a count of 0; deciding it may
    // fold chunks the query did not reach, so only for answers that small.
    let empty_default_graph = |rows: usize| {
        opts.hints
            && rows <= 1
            && super::hints::reads_an_empty_default_graph(query, &parts, union_default_graph)
    };
    let dataset =
        StoreDataset::of_parts(parts.clone(), &explain).with_union_default_graph(union_default_graph);
    let token = opts.cancel.clone().unwrap_or_default();
    // Shortcuts and evaluation alike stop at the deadline.
    let _deadline = opts.timeout.filter(|_| opts.cancel.is_none()).map(|d| Deadline::start(token.clone(), d));
    let cancelled = || token.is_cancelled();
    if let Some(results) = shortcut_until(query, &dataset, opts, &cancelled)? {
        let evaluation = |e: spareval::QueryEvaluationError| QueryError::Evaluation(e.to_string());
        let (rows, truncated) = write_results(results, opts, out, &evaluation, None)?;
        let explain = explain.into_inner();
        return Ok(QuerySummary {
            rows,
            truncated,
            explain,
            plan: None,
            shortcut: true,
            empty_default_graph: empty_default_graph(rows),
        });
    }
    let rewritten = answered_subqueries(query, &dataset, opts, &cancelled)?;
    let query = rewritten.as_ref().unwrap_or(query);
    let evaluator = QueryEvaluator::new().with_cancellation_token(token.clone());
    // spareval's own "union" covers the named graphs only; ours is every graph,
    // the default one included, answered by the dataset itself.
    let prepared = evaluator.prepare(query);
    let (results, plan) = if opts.explain {
        let (r, e) = prepared.explain(dataset);
        let mut buf = Vec::new();
        e.write_in_json(&mut buf)?;
        (r, Some(String::from_utf8_lossy(&buf).into_owned()))
    } else {
        (prepared.execute(dataset), None)
    };
    let map_eval = |e: spareval::QueryEvaluationError| {
        if cancelled() {
            QueryError::Timeout(opts.timeout.unwrap_or_default())
        } else {
            QueryError::Evaluation(e.to_string())
        }
    };
    let results = results.map_err(map_eval)?;
    let (rows, truncated) = write_results(results, opts, out, &map_eval, Some(&token))?;
    let explain = explain.into_inner();
    let empty_default_graph = empty_default_graph(rows);
    Ok(QuerySummary { rows, truncated, explain, plan, shortcut: false, empty_default_graph })
}

/// Cancels a token once its time is up, unless dropped first (the query
/// ended, or failed).
struct Deadline {
    stop: Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Deadline {
    fn start(token: CancellationToken, after: Duration) -> Deadline {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            if rx.recv_timeout(after).is_err() {
                token.cancel();
            }
        });
        Deadline { stop: Some((tx, h)) }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some((tx, h)) = self.stop.take() {
            let _ = tx.send(());
            let _ = h.join();
        }
    }
}

/// The answer from `sparql::shortcut`, when one applies (the TUI's query
/// view asks too, before it evaluates); `opts.cancel` stops it.
pub fn shortcut(
    query: &spargebra::Query,
    dataset: &StoreDataset,
    opts: &QueryOptions,
) -> Result<Option<QueryResults<'static>>, QueryError> {
    let cancelled = || opts.cancel.as_ref().is_some_and(CancellationToken::is_cancelled);
    shortcut_until(query, dataset, opts, &cancelled)
}

/// [`shortcut`], stopped with [`QueryError::Timeout`] once `cancelled` says
/// so (checked between row groups by the operators that read many).
pub fn shortcut_until(
    query: &spargebra::Query,
    dataset: &StoreDataset,
    opts: &QueryOptions,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<QueryResults<'static>>, QueryError> {
    use super::shortcut::{count_of, distinct_of, group_count_of};
    if opts.no_shortcuts || opts.explain {
        return Ok(None);
    }
    if let Some(count) = count_of(query) {
        if let Some(n) = count.count(dataset).map_err(QueryError::Store)? {
            return Ok(Some(count.solution(n).into()));
        }
    }
    if let Some(groups) = group_count_of(query) {
        if let Some(rows) = groups.rows(dataset).map_err(QueryError::Store)? {
            return Ok(Some(groups.solutions(rows).into()));
        }
    }
    if let Some(analytic) = super::analytic::analytic_of(query) {
        let stopped = |e| match e {
            StoreError::Cancelled { .. } => QueryError::Timeout(opts.timeout.unwrap_or_default()),
            e => QueryError::Store(e),
        };
        if let Some(results) = analytic.answer(dataset, cancelled).map_err(stopped)? {
            return Ok(Some(results.into()));
        }
    }
    if let Some(distinct) = distinct_of(query) {
        if let Some(values) = distinct.values(dataset).map_err(QueryError::Store)? {
            return Ok(Some(distinct.solutions(values).into()));
        }
    }
    Ok(None)
}

/// `query` with each sub-select [`shortcut`] answers replaced by its
/// solutions (`sparql::subquery`); `None` when none is, or shortcuts are off.
pub fn answered_subqueries(
    query: &spargebra::Query,
    dataset: &StoreDataset,
    opts: &QueryOptions,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<spargebra::Query>, QueryError> {
    if opts.no_shortcuts || opts.explain {
        return Ok(None);
    }
    super::subquery::answered(query, &mut |q| shortcut_until(q, dataset, opts, cancelled))
}

/// Writes the results; returns the rows written and whether `max_rows` cut
/// them (there was one more).
fn write_results(
    results: QueryResults<'_>,
    opts: &QueryOptions,
    out: &mut dyn Write,
    map_eval: &dyn Fn(spareval::QueryEvaluationError) -> QueryError,
    cancel: Option<&CancellationToken>,
) -> Result<(usize, bool), QueryError> {
    let limit = opts.max_rows.unwrap_or(usize::MAX);
    let cut = Cell::new(false);
    let tabular = |f: OutputFormat| match f {
        OutputFormat::Json => Some(QueryResultsFormat::Json),
        OutputFormat::Xml => Some(QueryResultsFormat::Xml),
        OutputFormat::Csv => Some(QueryResultsFormat::Csv),
        OutputFormat::Tsv => Some(QueryResultsFormat::Tsv),
        _ => None,
    };
    match results {
        QueryResults::Boolean(b) => {
            let f = opts.format.unwrap_or(if opts.tty { OutputFormat::Table } else { OutputFormat::Tsv });
            match (f, tabular(f)) {
                (_, Some(rf)) => {
                    QueryResultsSerializer::from_format(rf).serialize_boolean_to_writer(&mut *out, b)?;
                    // One result per line, so several queries in a batch stay
                    // apart; CSV's lines end in CRLF, as its rows do.
                    out.write_all(if rf == QueryResultsFormat::Csv { b"\r\n" } else { b"\n" })?;
                }
                (OutputFormat::Table, None) => writeln!(out, "{b}")?,
                (other, None) => {
                    return Err(QueryError::Evaluation(format!(
                        "an ASK result cannot be written as {other:?}"
                    )))
                }
            }
            Ok((1, false))
        }
        QueryResults::Solutions(solutions) => {
            let vars: Vec<Variable> = solutions.variables().to_vec();
            let solutions = limited(until_cancelled(solutions, cancel), limit, &cut);
            let f = opts.format.unwrap_or(if opts.tty { OutputFormat::Table } else { OutputFormat::Tsv });
            let n;
            match (f, tabular(f)) {
                (_, Some(rf)) => {
                    let mut ser = QueryResultsSerializer::from_format(rf)
                        .serialize_solutions_to_writer(&mut *out, vars)?;
                    let failed;
                    let (count, stopped) =
                        drain(solutions.map(|s| s.map_err(map_eval)), |s| Ok(ser.serialize(s.iter())?))?;
                    (n, failed) = (count, left_open(stopped, opts)?);
                    ser.finish()?;
                    if matches!(rf, QueryResultsFormat::Json | QueryResultsFormat::Xml) {
                        writeln!(out)?;
                    }
                    cut_by(failed, n)?;
                }
                (OutputFormat::Table, None) => {
                    let mut rows: Vec<Vec<String>> = Vec::new();
                    for s in solutions {
                        let s = s.map_err(map_eval)?;
                        rows.push(
                            vars.iter()
                                .map(|v| {
                                    s.get(v).map(|t| super::display::for_people(&t.to_string()).into_owned())
                                })
                                .map(Option::unwrap_or_default)
                                .collect(),
                        );
                    }
                    n = rows.len();
                    write_table(out, &vars, &rows, cut.get())?;
                }
                (other, None) => {
                    return Err(QueryError::Evaluation(format!(
                        "SELECT results cannot be written as {other:?}; use json, xml, csv, tsv or table"
                    )))
                }
            }
            Ok((n, cut.get()))
        }
        QueryResults::Graph(triples) => {
            let triples = limited(until_cancelled(triples, cancel), limit, &cut);
            let f = opts.format.unwrap_or(OutputFormat::NTriples);
            let n;
            let triples = triples.map(|t| t.map_err(map_eval));
            let failed;
            match f {
                OutputFormat::NTriples | OutputFormat::Table => {
                    let mut w = NTriplesSerializer::new().for_writer(&mut *out);
                    let (count, stopped) = drain(triples, |t| Ok(w.serialize_triple(&t)?))?;
                    (n, failed) = (count, left_open(stopped, opts)?);
                    w.finish();
                }
                OutputFormat::NQuads => {
                    let mut w = NQuadsSerializer::new().for_writer(&mut *out);
                    let (count, stopped) = drain(triples, |t| Ok(w.serialize_quad(&t.in_graph(GraphName::DefaultGraph))?))?;
                    (n, failed) = (count, left_open(stopped, opts)?);
                    w.finish();
                }
                OutputFormat::Turtle => {
                    let mut w = TurtleSerializer::new().for_writer(&mut *out);
                    let (count, stopped) = drain(triples, |t| Ok(w.serialize_triple(&t)?))?;
                    (n, failed) = (count, left_open(stopped, opts)?);
                    w.finish()?;
                }
                OutputFormat::TriG => {
                    let mut w = TriGSerializer::new().for_writer(&mut *out);
                    let (count, stopped) = drain(triples, |t| Ok(w.serialize_quad(&t.in_graph(GraphName::DefaultGraph))?))?;
                    (n, failed) = (count, left_open(stopped, opts)?);
                    w.finish()?;
                }
                other => {
                    return Err(QueryError::Evaluation(format!(
                        "CONSTRUCT/DESCRIBE results cannot be written as {other:?}; use ntriples, nquads, turtle or trig"
                    )))
                }
            }
            cut_by(failed, n)?;
            Ok((n, cut.get()))
        }
    }
}

/// Writes each item of `items` until the first error, which is returned
/// beside the count written (the caller closes its document first).
fn drain<T>(
    items: impl Iterator<Item = Result<T, QueryError>>,
    mut write: impl FnMut(T) -> Result<(), QueryError>,
) -> Result<(usize, Option<QueryError>), QueryError> {
    let mut n = 0;
    for item in items {
        match item {
            Ok(item) => write(item)?,
            Err(e) => return Ok((n, Some(e))),
        }
        n += 1;
    }
    Ok((n, None))
}

/// Without [`QueryOptions::close_cut_documents`], an error that stopped a
/// result is returned as it is, before its document is closed.
fn left_open(failed: Option<QueryError>, opts: &QueryOptions) -> Result<Option<QueryError>, QueryError> {
    match failed {
        Some(e) if !opts.close_cut_documents => Err(e),
        failed => Ok(failed),
    }
}

/// The error that stopped a result after `rows`, once its document is closed.
fn cut_by(failed: Option<QueryError>, rows: usize) -> Result<(), QueryError> {
    match failed {
        None => Ok(()),
        Some(error) => Err(QueryError::Cut { error: Box::new(error), rows }),
    }
}

/// `iter` until `cancel` fires, then one `Cancelled` error. spareval looks
/// at its token only when it reads the store; this stops a result whose
/// rows come from work in memory (a cross product of patterns read before
/// the deadline) at its next row.
fn until_cancelled<'c, T: 'c>(
    mut iter: impl Iterator<Item = Result<T, spareval::QueryEvaluationError>> + 'c,
    cancel: Option<&'c CancellationToken>,
) -> impl Iterator<Item = Result<T, spareval::QueryEvaluationError>> + 'c {
    let mut stopped = false;
    std::iter::from_fn(move || {
        if stopped {
            return None;
        }
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            stopped = true;
            return Some(Err(spareval::QueryEvaluationError::Cancelled));
        }
        iter.next()
    })
}

/// At most `limit` items of `iter`; when there is one more, `cut` is set.
fn limited<'c, I: Iterator + 'c>(
    mut iter: I,
    limit: usize,
    cut: &'c Cell<bool>,
) -> impl Iterator<Item = I::Item> + 'c {
    let mut left = limit;
    std::iter::from_fn(move || {
        if left == 0 {
            if !cut.get() && iter.next().is_some() {
                cut.set(true);
            }
            return None;
        }
        left -= 1;
        iter.next()
    })
}

/// The widest a table column but the last may be, in terminal columns: one
/// long literal (an abstract, a WKT polygon) would otherwise push every
/// column after it off the screen on every row.
const TABLE_CELL_CAP: usize = 60;

/// The table a terminal shows: columns padded to the terminal columns their
/// widest cell takes (an emoji or a CJK character takes two), so the rules
/// line up whatever the script. Cells of every column but the last are cut
/// at [`TABLE_CELL_CAP`] with `…`, and the last line says so; the last
/// column is whole (the terminal wraps it).
fn write_table(out: &mut dyn Write, vars: &[Variable], rows: &[Vec<String>], cut: bool) -> io::Result<()> {
    let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let last = vars.len().saturating_sub(1);
    let mut shortened = false;
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let cells = r.iter().enumerate().map(|(i, c)| {
                if i < last && width(c) > TABLE_CELL_CAP {
                    shortened = true;
                    super::display::fit(c, TABLE_CELL_CAP).into_owned()
                } else {
                    c.clone()
                }
            });
            cells.collect()
        })
        .collect();
    let mut w: Vec<usize> = vars.iter().map(|v| width(v.as_str()) + 1).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(width(c));
        }
    }
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c}{}", " ".repeat(w[i].saturating_sub(width(c)))))
            .collect::<Vec<_>>()
            .join(" │ ")
    };
    let header: Vec<String> = vars.iter().map(|v| format!("?{}", v.as_str())).collect();
    writeln!(out, "{}", line(&header).trim_end())?;
    let rule: Vec<String> = w.iter().map(|&n| "─".repeat(n.min(TABLE_CELL_CAP))).collect();
    writeln!(out, "{}", rule.join("─┼─"))?;
    for r in &rows {
        writeln!(out, "{}", line(r).trim_end())?;
    }
    let more = if cut { ", cut by the row limit" } else { "" };
    let cells = if shortened {
        format!("; cells cut at {TABLE_CELL_CAP} columns but in the last: --format tsv shows them whole")
    } else {
        String::new()
    };
    writeln!(out, "({}{more}{cells})", crate::text::plural(rows.len(), "row", "rows"))
}
