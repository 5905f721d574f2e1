//! SPARQL 1.1 Update over base ⊕ delta: one request becomes one delta-log
//! batch, appended through [`crate::store::log::writer`].
//!
//! spargebra parses (and already rewrites ADD, COPY, MOVE and WITH into the
//! basic operations); WHERE clauses are evaluated by spareval over the same
//! [`StoreDataset`] queries use. The request is planned in memory against a
//! scratch copy of the overlay, so each operation sees the ones before it, and
//! only entries that change the view are kept: a request that changes nothing
//! appends nothing. Nothing touches the disk until the whole request has been
//! planned, so a request applies in full or not at all.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oxrdf::{BlankNode, NamedOrBlankNode, Term};
use spareval::{DeleteInsertQuad, QueryEvaluator};
use spargebra::algebra::GraphTarget;
use spargebra::term::{GraphName as SparqlGraph, GroundTerm};
use spargebra::{GraphUpdateOperation, SparqlParser};

use super::dataset::StoreDataset;
use crate::format::deltalog::{self, BatchFrame, Entry, Object, Subject};
use crate::import::input::{self, InputFormat};
use crate::store::log::writer::{LogPosition, LogWriter, Receipt};
use crate::store::log::BatchState;
use crate::store::read::{ColumnCache, Explain};
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view::kept::{DiskState, Kept};
use crate::view::overlay::Overlay;
use crate::view::terms::{from_token, Tok};

#[derive(Debug)]
pub enum UpdateError {
    /// The request does not parse; the message names line:column.
    Syntax(String),
    /// The request parsed but cannot be applied (a missing graph without
    /// SILENT, a WHERE clause that fails, a term the log cannot hold).
    Evaluation(String),
    /// LOAD could not read or parse its file.
    Load {
        path: PathBuf,
        message: String,
    },
    /// Refused before evaluation: past a bound of [`super::limits`].
    Limit(String),
    Store(StoreError),
}

impl From<super::limits::Refusal> for UpdateError {
    fn from(r: super::limits::Refusal) -> Self {
        match r {
            super::limits::Refusal::Syntax(m) => UpdateError::Syntax(m),
            super::limits::Refusal::Limit(m) => UpdateError::Limit(m),
        }
    }
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateError::Syntax(m) => write!(f, "update syntax: {m}"),
            UpdateError::Evaluation(m) => write!(f, "update: {m}"),
            UpdateError::Limit(m) => write!(f, "update refused: {m}"),
            UpdateError::Load { path, message } => write!(f, "LOAD {}: {message}", path.display()),
            UpdateError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl crate::exit::Classify for UpdateError {
    /// An update that does not parse, hits a limit, fails or cannot load
    /// its source is bad input; the store's own errors keep their class.
    fn exit_class(&self) -> crate::exit::ExitClass {
        use crate::exit::ExitClass;
        match self {
            UpdateError::Syntax(_)
            | UpdateError::Evaluation(_)
            | UpdateError::Limit(_)
            | UpdateError::Load { .. } => ExitClass::BadInput,
            UpdateError::Store(e) => crate::exit::Classify::exit_class(e),
        }
    }
}

impl std::error::Error for UpdateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UpdateError::Store(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StoreError> for UpdateError {
    fn from(e: StoreError) -> Self {
        UpdateError::Store(e)
    }
}

/// What one request did.
#[derive(Debug)]
pub struct UpdateOutcome {
    /// `None` when the request changed nothing (nothing was appended).
    pub receipt: Option<Receipt>,
    pub operations: usize,
    /// Things the user may want to know (a no-op CREATE, a SILENT failure).
    pub notes: Vec<String>,
    /// From parse to the end of the fsync.
    pub elapsed: Duration,
}

impl fmt::Display for UpdateOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.receipt {
            Some(r) => write!(f, "{r} in {:.2} ms", self.elapsed.as_secs_f64() * 1e3),
            None => write!(
                f,
                "no change: nothing appended ({})",
                crate::text::plural(self.operations, "operation", "operations")
            ),
        }
    }
}

/// A writer session: the lock, the log and a view of the store, kept across
/// requests so many small updates do not re-read the log each time.
pub struct Updater {
    writer: LogWriter,
    store: Store,
    cache: ColumnCache,
    overlay: Overlay,
    /// Base IRI for relative IRIs: `file://` + the working directory, so that
    /// `LOAD <data.nt>` names a local file.
    base_iri: String,
    /// The view was copied from a reader's snapshot ([`Updater::open_over`]).
    adopted: bool,
}

/// What a long-lived writer (the endpoint) keeps between requests, without
/// the writer lock: the open store, its decoded columns, the folded log and
/// where the log ended ([`Updater::suspend`], [`Updater::resume`]).
pub struct Suspended {
    position: LogPosition,
    store: Store,
    cache: ColumnCache,
    overlay: Overlay,
}

impl Updater {
    /// Takes the writer lock on `chunk` (waiting up to `wait`), repairs a torn
    /// tail, and loads the current view.
    pub fn open(chunk: &Path, wait: Option<Duration>) -> Result<Updater, UpdateError> {
        let (writer, batches) = LogWriter::open_with_batches(chunk, wait)?;
        Self::with_writer(writer, chunk, Some(batches))
    }

    /// [`open`](Self::open) for a process that already holds a reader's
    /// snapshot of the chunk (the TUI): when the disk is still as that
    /// snapshot describes it (same `current`, the log the same file at the
    /// same length and time; a torn tail the writer cut changed it), the
    /// snapshot's fold of the log is taken instead of folding the log
    /// again: a copy that shares the fold's sets (O(graphs in the log)),
    /// where folding renders and looks up every logged quad. The writer
    /// still reads the log once, to check its tail.
    pub fn open_over(
        chunk: &Path,
        wait: Option<Duration>,
        reader: Option<&Kept>,
    ) -> Result<Updater, UpdateError> {
        let (writer, batches) = LogWriter::open_with_batches(chunk, wait)?;
        Self::adopt_or_fold(writer, chunk, Some(batches), reader)
    }

    /// The writer with `reader`'s fold when the disk is as that snapshot
    /// describes it, else with the log folded (`batches`, when given, as the
    /// writer decoded them).
    fn adopt_or_fold(
        writer: LogWriter,
        chunk: &Path,
        batches: Option<Vec<BatchFrame>>,
        reader: Option<&Kept>,
    ) -> Result<Updater, UpdateError> {
        // Read after the writer opened: a torn tail it cut changed the log.
        let unchanged = |k: &&Kept| k.disk == DiskState::read(chunk);
        let Some(kept) = reader.filter(unchanged) else {
            return Self::with_writer(writer, chunk, batches);
        };
        drop(batches);
        let store = Store::open(chunk)?;
        let cache = ColumnCache::new(256 << 20);
        let overlay = kept.view.overlay.clone();
        Ok(Updater { writer, store, cache, overlay, base_iri: working_directory_iri(), adopted: true })
    }

    /// Whether this writer's view is a reader's fold ([`open_over`](Self::open_over)).
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// [`open`](Self::open) for a writer that kept what it had open: when
    /// nothing was written to the store since [`suspend`](Self::suspend)
    /// (no other writer, no compaction), the kept view is used as it is, and
    /// neither the log nor the store is read again; otherwise it takes
    /// `reader`'s fold if the disk is as that describes (a reader of this
    /// process already read the other writer's batches), or folds the log.
    /// Without a kept writer, [`open_over`](Self::open_over) `reader`.
    pub fn resume(
        chunk: &Path,
        wait: Option<Duration>,
        kept: Option<Suspended>,
        reader: Option<&Kept>,
    ) -> Result<Updater, UpdateError> {
        let Some(kept) = kept else { return Self::open_over(chunk, wait, reader) };
        let writer = LogWriter::reopen(chunk, wait, &kept.position)?;
        if !writer.resumed {
            return Self::adopt_or_fold(writer, chunk, None, reader);
        }
        let Suspended { store, cache, overlay, .. } = kept;
        Ok(Updater { writer, store, cache, overlay, base_iri: working_directory_iri(), adopted: false })
    }

    /// Releases the writer lock and keeps the rest for [`resume`](Self::resume).
    pub fn suspend(self) -> Result<Suspended, UpdateError> {
        let position = self.writer.position()?;
        Ok(Suspended { position, store: self.store, cache: self.cache, overlay: self.overlay })
    }

    /// The writer with the store's current view: `batches`, when given, are
    /// the log's committed batches as the writer decoded them (it cut any
    /// torn tail and refused hidden ones), folded instead of reading the
    /// log a second time.
    fn with_writer(
        writer: LogWriter,
        chunk: &Path,
        batches: Option<Vec<BatchFrame>>,
    ) -> Result<Updater, UpdateError> {
        let store = Store::open(chunk)?;
        let cache = ColumnCache::new(256 << 20);
        let overlay = match batches {
            Some(batches) => Overlay::from_batches(&store, &cache, batches)?,
            None => Overlay::load(&store, &cache)?,
        };
        Ok(Updater { writer, store, cache, overlay, base_iri: working_directory_iri(), adopted: false })
    }

    /// Resolves relative IRIs (and relative LOAD paths) against `iri`.
    pub fn with_base_iri(mut self, iri: impl Into<String>) -> Self {
        self.base_iri = iri.into();
        self
    }

    pub fn writer(&self) -> &LogWriter {
        &self.writer
    }

    /// The folded log as of the last committed request: what a reader that
    /// opened the store now would fold (the endpoint hands it to readers
    /// instead of folding the log again after each update).
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Ends the session (the writer lock is released) and hands back the
    /// folded log.
    pub fn into_overlay(self) -> Overlay {
        self.overlay
    }

    /// Parses, plans and commits one request.
    pub fn apply(&mut self, text: &str) -> Result<UpdateOutcome, UpdateError> {
        let started = Instant::now();
        let parser = SparqlParser::new()
            .with_base_iri(self.base_iri.clone())
            .map_err(|e| UpdateError::Evaluation(format!("bad base IRI {}: {e}", self.base_iri)))?;
        let update = super::limits::parse_update(parser, text)?;
        self.apply_parsed(&update, started)
    }

    /// Plans and commits one request parsed by the caller (the endpoint,
    /// which inspects and amends it first). `started` is when the request
    /// began, for the outcome's timing.
    pub fn apply_parsed(
        &mut self,
        update: &spargebra::Update,
        started: Instant,
    ) -> Result<UpdateOutcome, UpdateError> {
        // The plan folds its entries straight into the session's overlay (no
        // copy: the overlay may hold a large log). If planning or the append
        // fails, the overlay is read again from the log, which is unchanged.
        let overlay = std::mem::take(&mut self.overlay);
        let mut plan = Plan::new(&self.store, &self.cache, overlay);
        let planned = update.operations.iter().try_for_each(|op| plan.operation(op));
        let Plan { view, entries, notes, .. } = plan;
        let appended = planned.and_then(|_| self.writer.append(entries).map_err(UpdateError::from));
        let receipt = match appended {
            Ok(receipt) => {
                self.overlay = view;
                let seen = self.store.visibility();
                if receipt.as_ref().is_some_and(|r| seen.of_epoch(r.epoch) == BatchState::Visible) {
                    self.overlay.batches_visible += 1;
                }
                receipt
            }
            Err(e) => {
                drop(view);
                self.overlay = Overlay::load(&self.store, &self.cache)?;
                return Err(e);
            }
        };
        Ok(UpdateOutcome { receipt, operations: update.operations.len(), notes, elapsed: started.elapsed() })
    }
}

/// `file://` + the working directory, for relative IRIs and LOAD paths.
fn working_directory_iri() -> String {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    format!("file://{}/", cwd.display())
}

/// A request being planned: the entries so far and the view they produce.
struct Plan<'a> {
    store: &'a Store,
    cache: &'a ColumnCache,
    view: Overlay,
    entries: Vec<Entry>,
    notes: Vec<String>,
    /// Prefix for fresh blank-node labels ([`fresh_prefix`]).
    fresh: String,
    fresh_count: u64,
    /// Read-path figures; not reported for updates, reset per lookup.
    explain: RefCell<Explain>,
}

/// The prefix of one request's fresh blank-node labels: `u`, 128 random
/// bits in hex (as spareval makes a template's blank nodes), `x`; the
/// request's labels count on from it. Fresh labels must differ from every
/// label the store will ever hold: they used to be `u<batch sequence>x`,
/// but sequences start at 1 again in each epoch, so after a compaction
/// an INSERT DATA of a new blank node reused one already folded into the
/// base (adding nothing, or giving that node the new node's statements).
fn fresh_prefix() -> String {
    format!("u{}x", oxrdf::BlankNode::default().as_str())
}

fn eval_err(e: impl fmt::Display) -> UpdateError {
    UpdateError::Evaluation(e.to_string())
}

impl<'a> Plan<'a> {
    fn new(store: &'a Store, cache: &'a ColumnCache, view: Overlay) -> Self {
        Plan {
            store,
            cache,
            view,
            entries: Vec::new(),
            notes: Vec::new(),
            fresh: fresh_prefix(),
            fresh_count: 0,
            explain: RefCell::default(),
        }
    }

    fn dataset(&self) -> StoreDataset<'_> {
        *self.explain.borrow_mut() = Explain::default();
        StoreDataset::single(self.store, &self.view, self.cache, &self.explain)
    }

    fn fresh_blank(&mut self) -> String {
        self.fresh_count += 1;
        format!("{}{}", self.fresh, self.fresh_count)
    }

    fn push(&mut self, e: Entry) -> Result<(), UpdateError> {
        self.view.apply_entry(&e, self.store, self.cache)?;
        self.entries.push(e);
        Ok(())
    }

    fn add(&mut self, q: deltalog::Quad) -> Result<(), UpdateError> {
        if !self.view.contains(&q, self.store, self.cache)? {
            self.push(Entry::add(q))?;
        }
        Ok(())
    }

    fn remove(&mut self, q: deltalog::Quad) -> Result<(), UpdateError> {
        if self.view.contains(&q, self.store, self.cache)? {
            self.push(Entry::remove(q))?;
        }
        Ok(())
    }

    fn operation(&mut self, op: &GraphUpdateOperation) -> Result<(), UpdateError> {
        match op {
            GraphUpdateOperation::InsertData { data } => {
                let mut labels = HashMap::new();
                for q in data {
                    let s = self.subject(&q.subject, &mut labels);
                    let o = self.object(&q.object, &mut labels)?;
                    self.add(deltalog::Quad {
                        subject: s,
                        predicate: q.predicate.as_str().to_owned(),
                        object: o,
                        graph: graph_of(&q.graph_name),
                    })?;
                }
            }
            GraphUpdateOperation::DeleteData { data } => {
                for q in data {
                    let o = match &q.object {
                        GroundTerm::NamedNode(n) => Object::Iri(n.as_str().to_owned()),
                        GroundTerm::Literal(l) => literal(l),
                        #[allow(unreachable_patterns)]
                        _ => return Err(eval_err("RDF 1.2 triple terms cannot be stored in the delta log")),
                    };
                    self.remove(deltalog::Quad {
                        subject: Subject::Iri(q.subject.as_str().to_owned()),
                        predicate: q.predicate.as_str().to_owned(),
                        object: o,
                        graph: graph_of(&q.graph_name),
                    })?;
                }
            }
            GraphUpdateOperation::DeleteInsert { delete, insert, using, pattern } => {
                // Solutions first, against the view before this operation;
                // then every delete, then every insert (SPARQL 1.1 Update §3.1.3).
                let changes: Vec<DeleteInsertQuad> = {
                    let evaluator = QueryEvaluator::new();
                    let prepared = evaluator.prepare_delete_insert(
                        delete.clone(),
                        insert.clone(),
                        None,
                        using.clone(),
                        pattern,
                    );
                    prepared
                        .execute(self.dataset())
                        .map_err(eval_err)?
                        .collect::<Result<_, _>>()
                        .map_err(eval_err)?
                };
                let (mut dels, mut adds) = (Vec::new(), Vec::new());
                let mut labels = HashMap::new();
                for c in changes {
                    match c {
                        DeleteInsertQuad::Delete(q) => dels.push(self.oxrdf_quad(&q, false, &mut labels)?),
                        DeleteInsertQuad::Insert(q) => adds.push(self.oxrdf_quad(&q, false, &mut labels)?),
                    }
                }
                for q in dels {
                    self.remove(q)?;
                }
                for q in adds {
                    self.add(q)?;
                }
            }
            GraphUpdateOperation::Load { silent, source, destination } => {
                if let Err(e) = self.load(source.as_str(), destination) {
                    if !silent {
                        return Err(e);
                    }
                    self.notes.push(format!("LOAD SILENT <{}> skipped: {e}", source.as_str()));
                }
            }
            GraphUpdateOperation::Clear { silent, graph } => self.clear_or_drop(graph, *silent, false)?,
            GraphUpdateOperation::Drop { silent, graph } => self.clear_or_drop(graph, *silent, true)?,
            GraphUpdateOperation::Create { silent, graph } => {
                let iri = graph.as_str().to_owned();
                if self.named_graphs()?.contains(&iri) {
                    if self.graph_has_quads(Some(&iri))? {
                        if !silent {
                            return Err(eval_err(format!("CREATE GRAPH <{iri}>: the graph already exists")));
                        }
                    } else {
                        self.notes
                            .push(format!("CREATE GRAPH <{iri}>: already known (empty); nothing to do"));
                    }
                } else {
                    self.push(Entry::create(iri))?;
                }
            }
        }
        Ok(())
    }

    /// Named graphs of the view, as bare IRIs.
    fn named_graphs(&self) -> Result<Vec<String>, UpdateError> {
        let ds = self.dataset();
        let names = ds.named_graphs()?;
        Ok(names
            .iter()
            .filter_map(|t| match from_token(t.bytes()) {
                Some(Term::NamedNode(n)) => Some(n.into_string()),
                _ => None,
            })
            .collect())
    }

    fn graph_has_quads(&self, graph: Option<&str>) -> Result<bool, UpdateError> {
        let ds = self.dataset();
        let g = graph.map(|i| Tok::from_term(&Term::NamedNode(oxrdf::NamedNode::new_unchecked(i))));
        Ok(ds.quads(None, None, None, Some(g.as_ref()))?.next().transpose()?.is_some())
    }

    /// CLEAR / DROP, with NAMED and ALL expanded to the concrete graphs.
    /// Emptying a graph that is already empty changes nothing and logs nothing.
    fn clear_or_drop(&mut self, target: &GraphTarget, silent: bool, drop: bool) -> Result<(), UpdateError> {
        let verb = if drop { "DROP" } else { "CLEAR" };
        let named = self.named_graphs()?;
        let (default, graphs) = match target {
            GraphTarget::DefaultGraph => (true, Vec::new()),
            GraphTarget::NamedNode(n) => {
                let iri = n.as_str().to_owned();
                if !named.contains(&iri) {
                    if silent {
                        self.notes.push(format!("{verb} SILENT GRAPH <{iri}>: no such graph"));
                        return Ok(());
                    }
                    return Err(eval_err(format!(
                        "{verb} GRAPH <{iri}>: no such graph (add SILENT to ignore)"
                    )));
                }
                (false, vec![iri])
            }
            GraphTarget::NamedGraphs => (false, named),
            GraphTarget::AllGraphs => (true, named),
        };
        if default && self.graph_has_quads(None)? {
            self.push(Entry::clear(None))?;
        }
        for g in graphs {
            if self.graph_has_quads(Some(&g))? {
                self.push(if drop { Entry::drop_graph(g) } else { Entry::clear(Some(g)) })?;
            }
        }
        Ok(())
    }

    fn load(&mut self, source: &str, destination: &SparqlGraph) -> Result<(), UpdateError> {
        let path = match load_path(source) {
            Some(p) => p,
            None => {
                return Err(eval_err(format!(
                    "LOAD <{source}>: only local files can be loaded (a file: IRI or a path)"
                )))
            }
        };
        let load_err = |message: String| UpdateError::Load { path: path.clone(), message };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let format = InputFormat::from_name(&name).ok_or_else(|| {
            load_err("unknown syntax: name it .nq, .nt, .ttl or .trig (optionally .gz/.zst)".into())
        })?;
        let reader = input::open(&path).map_err(|e| load_err(e.to_string()))?;
        let into = graph_of(destination);
        let mut labels = HashMap::new();
        for quad in crate::import::parser_for(format, reader) {
            let quad = quad.map_err(|e| load_err(e.to_string()))?;
            let mut q = self.oxrdf_quad(&quad, true, &mut labels)?;
            // Into the named destination; a quad syntax keeps its own graphs
            // when loading into the default graph.
            if into.is_some() || !format.has_graphs() {
                q.graph = into.clone();
            }
            self.add(q)?;
        }
        Ok(())
    }

    /// Blank nodes from request text are fresh: a label maps to a new one,
    /// the same within one operation (SPARQL 1.1 Update §3.1.1).
    fn blank(&mut self, b: &BlankNode, labels: &mut HashMap<String, String>) -> String {
        if let Some(l) = labels.get(b.as_str()) {
            return l.clone();
        }
        let l = self.fresh_blank();
        labels.insert(b.as_str().to_owned(), l.clone());
        l
    }

    fn subject(&mut self, s: &NamedOrBlankNode, labels: &mut HashMap<String, String>) -> Subject {
        match s {
            NamedOrBlankNode::NamedNode(n) => Subject::Iri(n.as_str().to_owned()),
            NamedOrBlankNode::BlankNode(b) => Subject::Blank(self.blank(b, labels)),
        }
    }

    fn object(&mut self, o: &Term, labels: &mut HashMap<String, String>) -> Result<Object, UpdateError> {
        Ok(match o {
            Term::NamedNode(n) => Object::Iri(n.as_str().to_owned()),
            Term::BlankNode(b) => Object::Blank(self.blank(b, labels)),
            Term::Literal(l) => literal(l),
            #[allow(unreachable_patterns)]
            _ => return Err(eval_err("RDF 1.2 triple terms cannot be stored in the delta log")),
        })
    }

    /// A quad from spareval (WHERE solutions: blank nodes bound from the
    /// store, or template ones spareval already made fresh, keep their labels)
    /// or from a LOADed file (`relabel`: the file's labels are made fresh).
    fn oxrdf_quad(
        &mut self,
        q: &oxrdf::Quad,
        relabel: bool,
        labels: &mut HashMap<String, String>,
    ) -> Result<deltalog::Quad, UpdateError> {
        let subject = match &q.subject {
            NamedOrBlankNode::BlankNode(b) if !relabel => Subject::Blank(b.as_str().to_owned()),
            other => self.subject(other, labels),
        };
        let object = match &q.object {
            Term::BlankNode(b) if !relabel => Object::Blank(b.as_str().to_owned()),
            other => self.object(other, labels)?,
        };
        let graph = match &q.graph_name {
            oxrdf::GraphName::DefaultGraph => None,
            oxrdf::GraphName::NamedNode(n) => Some(n.as_str().to_owned()),
            oxrdf::GraphName::BlankNode(_) => {
                return Err(eval_err("a blank node cannot name a graph in the delta log"));
            }
        };
        Ok(deltalog::Quad { subject, predicate: q.predicate.as_str().to_owned(), object, graph })
    }
}

fn literal(l: &oxrdf::Literal) -> Object {
    Object::Literal {
        lexical: l.value().to_owned(),
        datatype: l.datatype().as_str().to_owned(),
        language: l.language().map(str::to_owned),
    }
}

fn graph_of(g: &SparqlGraph) -> Option<String> {
    match g {
        SparqlGraph::NamedNode(n) => Some(n.as_str().to_owned()),
        SparqlGraph::DefaultGraph => None,
    }
}

/// The file a `LOAD` source IRI names: a `file:` IRI, percent-decoded;
/// `None` for any other scheme. (The one reading of a LOAD IRI: the
/// endpoint's `--allow-load` checks the same path the load then opens.)
pub fn load_path(source: &str) -> Option<PathBuf> {
    source.strip_prefix("file://").map(|p| PathBuf::from(percent_decode(p)))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
