//! Requests to responses: routing, the protocol's parameters, and status
//! codes. Evaluation happens in `stream` (queries) and `sparql::update`.
//! The request arrives here with its body read and its head checked
//! ([`super::http`]); everything here runs on a blocking worker.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{
    ACCEPT, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW,
    AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER, VARY, WWW_AUTHENTICATE,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use oxrdf::NamedNode;
use spareval::CancellationToken;
use spargebra::algebra::QueryDataset;
use spargebra::{GraphUpdateOperation, Query, SparqlParser, Update};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::deadlines::Deadlines;
use super::graph_store::{delete_update, graph_exists, write_update, Target, Upload};
use super::load::{self, LoadRefusal};
use super::negotiate::{choose, Offer};
use super::stream::{self, Message, PieceWriter, Start, StreamBody};
use super::{form, guard, Body, Config};
use crate::sparql::limits::{self, Refusal};
use crate::sparql::run::{run_parsed, OutputFormat, QueryError, QueryOptions, QuerySummary};
use crate::sparql::update::{Suspended, UpdateError, Updater};
use crate::store::StoreError;
use crate::view::kept::{Budget, Kept, Snapshots};

const RESULT_FORMATS: &[Offer<OutputFormat>] = &[
    ("application/sparql-results+json", OutputFormat::Json),
    ("application/sparql-results+xml", OutputFormat::Xml),
    ("text/csv", OutputFormat::Csv),
    ("text/tab-separated-values", OutputFormat::Tsv),
    ("application/json", OutputFormat::Json),
    ("application/xml", OutputFormat::Xml),
];

const GRAPH_FORMATS: &[Offer<OutputFormat>] = &[
    ("application/n-triples", OutputFormat::NTriples),
    ("text/turtle", OutputFormat::Turtle),
    ("application/n-quads", OutputFormat::NQuads),
    ("application/trig", OutputFormat::TriG),
    ("text/plain", OutputFormat::NTriples),
];

/// A response not yet sent, a result to stream, or a worker's output
/// whose status is not known yet.
pub(super) enum Reply {
    Whole(Response<Body>, Option<usize>),
    Stream {
        content_type: &'static str,
        first: Vec<u8>,
        rx: tokio::sync::mpsc::Receiver<Message>,
    },
    /// A worker is evaluating: its first pieces choose the status
    /// (`stream::start`, awaited by the connection, not on a thread).
    Pending {
        rx: tokio::sync::mpsc::Receiver<Message>,
        hold_all: bool,
    },
}

type Step<T> = Result<T, Refused>;

/// A request whose body is read (within `--max-body`).
type ReadRequest = Request<Bytes>;

/// The worker slot a request holds (`--max-queries`); a query streamed
/// from a worker of its own takes it along.
#[derive(Clone)]
struct Slot(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

fn take_slot(req: &ReadRequest) -> Option<OwnedSemaphorePermit> {
    req.extensions().get::<Slot>().and_then(|s| super::lock(&s.0).take())
}

pub struct Endpoint {
    config: Config,
    gate: Arc<Semaphore>,
    snapshots: Arc<Snapshots>,
    deadlines: Deadlines,
    turns: Arc<WriterTurns>,
}

impl Endpoint {
    /// Opens the store once, so a path that is not a store fails at start-up.
    pub fn new(config: Config) -> anyhow::Result<Endpoint> {
        let snapshots = Snapshots::new(&config.chunk, Budget::Cache(config.cache_bytes));
        snapshots.current()?;
        Ok(Endpoint {
            deadlines: Deadlines::start()?,
            gate: Arc::new(Semaphore::new(config.limits.workers.max(1))),
            snapshots: Arc::new(snapshots),
            turns: Default::default(),
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The `--max-queries` worker slots.
    pub(super) fn gate(&self) -> &Arc<Semaphore> {
        &self.gate
    }

    /// The refusals a request's head decides, before its body is read:
    /// `Host` (421), a write's origin (403), a write to a read-only server
    /// (403) or without the token (401), a declared body over `--max-body`
    /// (413), ambiguous framing (400, 501), an unknown `Expect` (417). The
    /// connection of a refused request is closed.
    pub(super) fn refusal_on_head(
        &self,
        head: &http::request::Parts,
        local: &std::net::SocketAddr,
    ) -> Option<Refused> {
        let c = &self.config;
        let write = guard::is_write(&head.method, head.uri.path());
        let checked = guard::check_host(&head.headers, head.version, &c.bind, local, &c.allow_hosts)
            .and_then(|()| guard::check_framing(&head.headers))
            .and_then(|()| if write { guard::check_write_origin(&head.headers, &c.cors) } else { Ok(()) });
        let refused = match checked {
            Err((status, message)) => Some(Refused::new(status, message)),
            Ok(()) if write => self.refuse_read_only().err().or_else(|| self.authorize(&head.headers).err()),
            Ok(()) => None,
        };
        let limit = c.limits.max_body;
        let too_large = declared_length(&head.headers).is_some_and(|n| n > limit as u64);
        let refused = refused.or_else(|| {
            too_large.then(|| {
                Refused::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is larger than --max-body ({limit} bytes)"),
                )
            })
        })?;
        // What is left of the request is not read: the connection closes.
        Some(refused.with(CONNECTION, "close"))
    }

    /// Routes a request whose head passed and whose body is read, holding
    /// `slot` (a query streamed by a worker of its own takes it along).
    pub(super) fn handle(&self, mut req: ReadRequest, slot: OwnedSemaphorePermit) -> Reply {
        req.extensions_mut().insert(Slot(Arc::new(Mutex::new(Some(slot)))));
        // A panic is a bug of ours; it costs this request (500), never
        // the worker or the server.
        let routed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.route(&req)));
        routed.unwrap_or_else(|_| {
            Refused::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error (logged by the server)").reply()
        })
    }

    /// The response for `reply`: a worker's output is awaited here (as a
    /// task) until its status is known. `finish` logs the request when the
    /// response is built, or for a stream when it ends.
    pub(super) async fn respond_with(&self, reply: Reply, finish: Finish) -> Response<Body> {
        let reply = match reply {
            Reply::Pending { rx, hold_all } => {
                let start = stream::start(rx, hold_all, self.patience()).await;
                self.reply_from(start).unwrap_or_else(Refused::reply)
            }
            other => other,
        };
        match reply {
            Reply::Whole(response, rows) => {
                finish.log(response.status(), rows, "");
                response
            }
            Reply::Stream { content_type, first, rx } => {
                let on_end = Box::new(move |rows, complete: bool| {
                    finish.log(StatusCode::OK, rows, if complete { "" } else { " (cut)" })
                });
                let body = StreamBody::new(first, rx, self.patience(), on_end);
                with_type(Response::builder().status(StatusCode::OK), content_type)
                    .body(Body::Stream(Box::new(body)))
                    .unwrap()
            }
            Reply::Pending { .. } => unreachable!("settled above"),
        }
    }

    fn route(&self, req: &ReadRequest) -> Reply {
        if req.method() == Method::OPTIONS {
            return Reply::Whole(self.preflight(req), None);
        }
        let path = req.uri().path().to_owned();
        let result = match path.as_str() {
            "/" => get_only(req, || Ok(Reply::Whole(page(), None))),
            "/health" => get_only(req, || self.health()),
            "/query" | "/sparql" => self.query(req),
            "/update" => self.update(req),
            "/store" => self.graph_store(req),
            p if p.starts_with("/store/") => self.graph_store(req),
            _ => Err(Refused::new(
                StatusCode::NOT_FOUND,
                "no such route: the endpoint has /query, /update, /store, /health and /",
            )),
        };
        result.unwrap_or_else(Refused::reply)
    }

    fn health(&self) -> Step<Reply> {
        let snap = self.snapshot()?;
        let body = format!(
            "{{\"status\":\"ok\",\"version\":{:?},\"log_bytes\":{},\"visible_batches\":{},\"base_quads\":{},\"log_folds\":{}}}\n",
            snap.version(),
            snap.disk.log.map_or(0, |l| l.len),
            snap.view.overlay.batches_visible,
            snap.view.store.base.num_rows(),
            crate::view::overlay::log_folds()
        );
        Ok(Reply::Whole(typed(StatusCode::OK, "application/json", body), None))
    }

    fn snapshot(&self) -> Step<Arc<Kept>> {
        self.snapshots.current().map_err(Refused::store)
    }

    /// How long the connection waits for the worker's next piece.
    fn patience(&self) -> Duration {
        self.config.timeout.map_or(Duration::from_secs(24 * 3600), |t| t + Duration::from_secs(2))
    }

    // ---- /query -------------------------------------------------------

    fn query(&self, req: &ReadRequest) -> Step<Reply> {
        let url = url_params(req)?;
        let (text, params) = match *req.method() {
            Method::GET => (single(&url, "query")?, url),
            Method::POST => match media_type(req).as_str() {
                "application/x-www-form-urlencoded" => {
                    let form = form::parse(&self.read_body(req)?).map_err(Refused::bad)?;
                    (single(&form, "query")?, form)
                }
                "application/sparql-query" => (Some(utf8(self.read_body(req)?)?), url),
                other => return Err(Refused::unsupported(other, "application/sparql-query or a form")),
            },
            _ => return Err(not_allowed("GET, POST")),
        };
        let Some(text) = text else {
            return match *req.method() {
                Method::GET => Ok(Reply::Whole(self.service_description(), None)),
                _ => Err(Refused::bad("no `query` parameter".into())),
            };
        };
        let job = QueryJob {
            text,
            base: format!("http://{}/query", self.config.bind),
            default_graphs: iris(&params, "default-graph-uri")?,
            named_graphs: iris(&params, "named-graph-uri")?,
            accept: header(req, ACCEPT).map(str::to_owned),
            snapshot: self.snapshot()?,
            deadlines: self.deadlines.clone(),
            timeout: self.config.timeout,
            max_rows: self.config.max_rows,
            union_default_graph: self.config.union_default_graph,
        };
        self.run_query(job, take_slot(req))
    }

    /// A small query is answered here; any other goes to a worker of its
    /// own, which keeps `slot` while it streams.
    fn run_query(&self, job: QueryJob, slot: Option<OwnedSemaphorePermit>) -> Step<Reply> {
        if let Some(start) = job.run_inline() {
            return self.reply_from(start);
        }
        let (tx, rx) = stream::channel();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            job.run(tx)
        });
        Ok(Reply::Pending { rx, hold_all: self.config.max_rows.is_some() })
    }

    /// The reply for what the worker produced before the status was due.
    fn reply_from(&self, start: Start) -> Step<Reply> {
        match start {
            Start::Whole { content_type, body, summary } => {
                let mut builder = Response::builder().status(StatusCode::OK);
                if summary.truncated {
                    // 200, not 206: Partial Content answers Range requests,
                    // and a cache would take it for a fragment of a body.
                    let rows = self.config.max_rows.unwrap_or_default();
                    builder = builder.header("Cottas-Truncated", format!("max-rows={rows}"));
                }
                Ok(Reply::Whole(
                    with_type(builder, content_type).body(Body::whole(body)).unwrap(),
                    Some(summary.rows),
                ))
            }
            Start::Streaming { content_type, first, rx } => Ok(Reply::Stream { content_type, first, rx }),
            Start::Failed(e) => Err(query_failure(&e)),
            Start::Refused(status, message) => {
                Err(Refused::new(StatusCode::from_u16(status).unwrap(), message))
            }
            Start::Silent => {
                Err(Refused::new(StatusCode::SERVICE_UNAVAILABLE, "the query did not stop at its timeout"))
            }
        }
    }

    /// A reply whose status must be known on this worker (a HEAD request's).
    fn settled(&self, reply: Reply) -> Step<Reply> {
        match reply {
            Reply::Pending { rx, hold_all } => {
                let start =
                    tokio::runtime::Handle::current().block_on(stream::start(rx, hold_all, self.patience()));
                self.reply_from(start)
            }
            other => Ok(other),
        }
    }

    fn service_description(&self) -> Response<Body> {
        let update = if self.config.write { " , sd:SPARQL11Update" } else { "" };
        let union =
            if self.config.union_default_graph { "\n  sd:feature sd:UnionDefaultGraph ;" } else { "" };
        let cut = match self.config.max_rows {
            Some(n) => format!(
                "\n  rdfs:comment \"Results are cut after {n} rows; a cut result is a 200 with the header Cottas-Truncated: max-rows={n}.\" ;"
            ),
            None => String::new(),
        };
        let body = format!(
            "@prefix sd: <http://www.w3.org/ns/sparql-service-description#> .\n\
             @prefix fmt: <http://www.w3.org/ns/formats/> .\n\
             @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\n\
             [] a sd:Service ;\n  sd:endpoint <http://{}/query> ;\n  sd:supportedLanguage sd:SPARQL11Query{update} ;{union}{cut}\n  \
             sd:resultFormat fmt:SPARQL_Results_JSON , fmt:SPARQL_Results_XML , fmt:SPARQL_Results_CSV , \
             fmt:SPARQL_Results_TSV , fmt:N-Triples , fmt:Turtle , fmt:N-Quads .\n",
            self.config.bind
        );
        typed(StatusCode::OK, "text/turtle", body)
    }

    // ---- /update ------------------------------------------------------

    fn refuse_read_only(&self) -> Step<()> {
        if self.config.write {
            return Ok(());
        }
        Err(Refused::new(
            StatusCode::FORBIDDEN,
            "this endpoint is read-only: start it with `cottas-tui serve --write` to accept updates and Graph Store writes",
        ))
    }

    fn update(&self, req: &ReadRequest) -> Step<Reply> {
        if req.method() != Method::POST {
            return Err(not_allowed("POST"));
        }
        self.refuse_read_only()?;
        self.authorize(req.headers())?;
        let url = url_params(req)?;
        let (text, params) = match media_type(req).as_str() {
            "application/x-www-form-urlencoded" => {
                let form = form::parse(&self.read_body(req)?).map_err(Refused::bad)?;
                (single(&form, "update")?.ok_or_else(|| Refused::bad("no `update` parameter".into()))?, form)
            }
            "application/sparql-update" => (utf8(self.read_body(req)?)?, url),
            other => return Err(Refused::unsupported(other, "application/sparql-update or a form")),
        };
        let job = UpdateJob {
            text,
            using: iris(&params, "using-graph-uri")?,
            using_named: iris(&params, "using-named-graph-uri")?,
            base: format!("http://{}/update", self.config.bind),
            chunk: self.config.chunk.clone(),
            lock_wait: self.config.lock_wait,
            allow_load: self.config.allow_load.clone(),
            turns: Arc::clone(&self.turns),
            snapshots: Arc::clone(&self.snapshots),
            reader: self.snapshots.held(),
        };
        let outcome = self.write(move || job.run());
        outcome.map(|_| {
            Reply::Whole(
                Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty()).unwrap(),
                None,
            )
        })
    }

    /// Runs a write here (a worker with the large request stack); a panic
    /// appends nothing and is a 500. After a failure the next request reads
    /// the disk: whatever the failure left there is what readers must see
    /// (a write that committed installed its snapshot in [`commit`]).
    fn write(&self, f: impl FnOnce() -> Result<(), Refused>) -> Result<(), Refused> {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
            Err(Refused::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error (logged by the server); nothing was appended",
            ))
        });
        if outcome.is_err() {
            self.snapshots.invalidate();
        }
        outcome
    }

    fn authorize(&self, headers: &HeaderMap) -> Step<()> {
        let Some(token) = &self.config.token else { return Ok(()) };
        let sent = headers
            .get(AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        if sent.is_some_and(|s| same_secret(s.as_bytes(), token.as_bytes())) {
            return Ok(());
        }
        Err(Refused::new(
            StatusCode::UNAUTHORIZED,
            "writes need `Authorization: Bearer <token>` with the server's token",
        )
        .with(WWW_AUTHENTICATE, "Bearer realm=\"cottas-tui\""))
    }

    // ---- /store (Graph Store Protocol) ----------------------------------

    fn graph_store(&self, req: &ReadRequest) -> Step<Reply> {
        let params = url_params(req)?;
        let target = match req.uri().path() {
            "/store" => Target::from_params(&params)?,
            direct => Target::direct(direct, &params, &self.config.bind.to_string())?,
        };
        match *req.method() {
            Method::GET | Method::HEAD => self.read_graph(req, &target),
            Method::PUT | Method::POST | Method::DELETE => self.write_graph(req, &target),
            _ => Err(not_allowed("GET, HEAD, PUT, POST, DELETE")),
        }
    }

    fn read_graph(&self, req: &ReadRequest, target: &Target) -> Step<Reply> {
        let snapshot = self.snapshot()?;
        if let Target::Named(g) = target {
            if !graph_exists(&snapshot.view, g)? {
                return Err(Refused::new(StatusCode::NOT_FOUND, format!("the store has no graph {g}")));
            }
        }
        let accept = header(req, ACCEPT).map(str::to_owned);
        let reply = match target.construct() {
            Some(text) => self.run_query(
                QueryJob {
                    text,
                    base: format!("http://{}/store", self.config.bind),
                    default_graphs: Vec::new(),
                    named_graphs: Vec::new(),
                    accept,
                    snapshot,
                    deadlines: self.deadlines.clone(),
                    timeout: self.config.timeout,
                    max_rows: self.config.max_rows,
                    union_default_graph: false,
                },
                take_slot(req),
            )?,
            None => self.dump(snapshot, accept, take_slot(req))?,
        };
        if req.method() != Method::HEAD {
            return Ok(reply);
        }
        // HEAD: the status and type of GET, without the body.
        let content_type = match &self.settled(reply)? {
            Reply::Whole(r, _) => r.headers().get(CONTENT_TYPE).cloned(),
            Reply::Stream { content_type, .. } => HeaderValue::from_str(content_type).ok(),
            Reply::Pending { .. } => None,
        };
        let mut r = Response::builder().status(StatusCode::OK).body(Body::empty()).unwrap();
        if let Some(t) = content_type {
            r.headers_mut().insert(CONTENT_TYPE, t);
        }
        Ok(Reply::Whole(r, None))
    }

    /// Every quad of the snapshot as N-Quads or TriG, streamed.
    fn dump(
        &self,
        snapshot: Arc<Kept>,
        accept: Option<String>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Step<Reply> {
        let offers: &[Offer<bool>] = &[("application/n-quads", false), ("application/trig", true)];
        let Some((content_type, trig)) = choose(accept.as_deref(), offers) else {
            return Err(Refused::new(
                StatusCode::NOT_ACCEPTABLE,
                "the whole dataset is served as application/n-quads or application/trig",
            ));
        };
        let (tx, rx) = stream::channel();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            let mut out = PieceWriter::new(tx, content_type);
            let done = if trig {
                write_trig(&snapshot.view, &mut out)
            } else {
                write_nquads(&snapshot.view, &mut out)
            };
            out.finish(done);
        });
        Ok(Reply::Pending { rx, hold_all: false })
    }

    fn write_graph(&self, req: &ReadRequest, target: &Target) -> Step<Reply> {
        self.refuse_read_only()?;
        self.authorize(req.headers())?;
        let method = req.method().clone();
        if target == &Target::Dataset && method != Method::POST {
            return Err(not_allowed("GET, HEAD, POST"));
        }
        let body = if method == Method::DELETE { Bytes::new() } else { self.read_body(req)? };
        let content_type = header(req, CONTENT_TYPE).unwrap_or("").to_owned();
        // A DELETE has no body to read; anything else is split once.
        let upload = match method {
            Method::DELETE => None,
            _ => Some(Upload::split(body, &content_type)?),
        };
        // POST of triples to the store itself creates a graph (GSP §5.5).
        let new_graph = (target == &Target::Dataset && upload.as_ref().is_some_and(Upload::is_triples))
            .then(|| self.new_graph_iri());
        let target = &new_graph.clone().map_or_else(|| target.clone(), Target::Named);
        let existed = match target {
            Target::Named(g) => graph_exists(&self.snapshot()?.view, g)?,
            _ => true,
        };
        let update = match &upload {
            None if !existed => {
                return Err(Refused::new(StatusCode::NOT_FOUND, "the store has no such graph"))
            }
            None => delete_update(target),
            Some(upload) => {
                let base = format!("http://{}/store", self.config.bind);
                write_update(target, upload.parse(target, &base)?, method == Method::PUT)?
            }
        };
        let (chunk, lock_wait, started) = (self.config.chunk.clone(), self.config.lock_wait, Instant::now());
        let reader = self.snapshots.held();
        self.write(|| {
            commit(&chunk, lock_wait, &update, started, &self.turns, &self.snapshots, reader.as_deref())
        })?;
        let created = !existed && method != Method::DELETE;
        let status = if created { StatusCode::CREATED } else { StatusCode::NO_CONTENT };
        let mut response = Response::builder().status(status);
        if let Some(iri) = new_graph {
            response = response.header(LOCATION, iri.as_str());
        }
        Ok(Reply::Whole(response.body(Body::empty()).unwrap(), None))
    }

    /// A graph name no other request gets: the endpoint's URL, the time and
    /// a counter.
    fn new_graph_iri(&self) -> oxrdf::NamedNode {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        oxrdf::NamedNode::new_unchecked(format!("http://{}/store/graph-{nanos:x}-{n}", self.config.bind))
    }

    // ---- bodies, CORS ---------------------------------------------------

    /// The request body (read, within `--max-body`, before routing), as
    /// text in UTF-8 or another charset it declares (refused).
    fn read_body(&self, req: &ReadRequest) -> Step<Bytes> {
        refuse_other_charsets(req)?;
        Ok(req.body().clone())
    }

    fn allowed_origin(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let origin = origin?;
        let any = self.config.cors.iter().any(|o| o == "*");
        let named = || self.config.cors.iter().any(|o| origin.to_str().is_ok_and(|v| o == v));
        (any || named()).then(|| if any { HeaderValue::from_static("*") } else { origin.clone() })
    }

    pub(super) fn add_cors(&self, origin: Option<&HeaderValue>, response: &mut Response<Body>) {
        if let Some(origin) = self.allowed_origin(origin) {
            response.headers_mut().insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            response.headers_mut().insert(VARY, HeaderValue::from_static("Origin"));
        }
    }

    fn preflight(&self, req: &ReadRequest) -> Response<Body> {
        // The Graph Store Protocol's writes are PUT and DELETE: a browser
        // asks before sending them.
        const METHODS: &str = "GET, HEAD, POST, PUT, DELETE, OPTIONS";
        let mut r = Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty()).unwrap();
        r.headers_mut().insert(ALLOW, HeaderValue::from_static(METHODS));
        if self.allowed_origin(req.headers().get(http::header::ORIGIN)).is_some() {
            r.headers_mut().insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(METHODS));
            r.headers_mut().insert(
                ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("Content-Type, Accept, Authorization"),
            );
        }
        r
    }
}

/// What a query's worker needs, owned.
struct QueryJob {
    text: String,
    /// Relative IRIs in the query resolve against this (the endpoint's URL).
    base: String,
    default_graphs: Vec<NamedNode>,
    named_graphs: Vec<NamedNode>,
    accept: Option<String>,
    snapshot: Arc<Kept>,
    deadlines: Deadlines,
    timeout: Option<Duration>,
    max_rows: Option<usize>,
    union_default_graph: bool,
}

/// A query that parsed, may run here, and has a result format.
struct Prepared {
    query: Query,
    content_type: &'static str,
    format: OutputFormat,
}

/// The most an inline query may write before it is handed to a worker to
/// stream instead (two stream pieces: what `stream::start` holds too).
const INLINE_BYTES: usize = 128 << 10;

impl QueryJob {
    /// Parses the query and chooses its format; a refusal is a status and
    /// its message.
    fn prepare(&self) -> Result<Prepared, (u16, String)> {
        let parser = SparqlParser::new()
            .with_base_iri(&self.base)
            .map_err(|e| (500, format!("the endpoint's base IRI {}: {e}", self.base)))?;
        let mut query = limits::parse_query(parser, &self.text).map_err(|r| match r {
            Refusal::Syntax(m) => (400, format!("query syntax: {m}")),
            Refusal::Limit(m) => (400, format!("query refused: {m}")),
        })?;
        if limits::query_calls_service(&query) {
            return Err((403, "SERVICE is refused: this endpoint makes no outbound requests".into()));
        }
        set_dataset(&mut query, &self.default_graphs, &self.named_graphs);
        let offers = match query {
            Query::Select { .. } | Query::Ask { .. } => RESULT_FORMATS,
            Query::Construct { .. } | Query::Describe { .. } => GRAPH_FORMATS,
        };
        let Some((content_type, format)) = choose(self.accept.as_deref(), offers) else {
            let types: Vec<&str> = offers.iter().map(|(t, _)| *t).collect();
            let message =
                format!("no acceptable result format; this query can be answered as {}", types.join(", "));
            return Err((406, message));
        };
        Ok(Prepared { query, content_type, format })
    }

    /// Evaluates under the deadline and writes the results to `out`.
    fn evaluate(
        &self,
        prepared: &Prepared,
        out: &mut dyn std::io::Write,
    ) -> Result<QuerySummary, QueryError> {
        let cancel = CancellationToken::new();
        if let Some(t) = self.timeout {
            self.deadlines.add(Instant::now() + t, cancel.clone());
        }
        let opts = QueryOptions {
            format: Some(prepared.format),
            union_default_graph: self.union_default_graph,
            timeout: self.timeout,
            max_rows: self.max_rows,
            cancel: Some(cancel.clone()),
            ..QueryOptions::default()
        };
        super::debug_panic(&self.text);
        let snap = &self.snapshot.view;
        let done = run_parsed(&[snap.view()], &prepared.query, &opts, out);
        // Nothing left to cancel: the deadline thread may drop the token.
        cancel.cancel();
        done
    }

    /// On a worker: the results go to the connection thread in pieces.
    fn run(self, tx: tokio::sync::mpsc::Sender<Message>) {
        match self.prepare() {
            Err((status, message)) => {
                let _ = tx.blocking_send(Message::Refused(status, message));
            }
            Ok(prepared) => {
                let mut out = PieceWriter::new(tx, prepared.content_type);
                let done = self.evaluate(&prepared, &mut out);
                out.finish(done);
            }
        }
    }

    /// On the connection's own thread, for a small query with a small
    /// answer: no hand-over to a worker and back, which was most of a
    /// selective query's cost. `None` hands the job to a worker: the text
    /// or algebra is too deep for this thread's stack, all the work may come
    /// before the first row (a sort or grouping without a small LIMIT, an
    /// analytic answer of many rows: `Analytic::rows_may_be_many`), or
    /// the answer outgrew [`INLINE_BYTES`] (the worker evaluates it again
    /// from the start, on the same snapshot, and streams it).
    fn run_inline(&self) -> Option<Start> {
        if !limits::is_small_text(&self.text) {
            return None;
        }
        let prepared = match self.prepare() {
            Ok(p) => p,
            Err((status, message)) => return Some(Start::Refused(status, message)),
        };
        let shape = limits::query_shape(&prepared.query);
        let small_limit = shape.limit.is_some_and(|n| n <= 10_000);
        let materialized =
            crate::sparql::analytic::analytic_of(&prepared.query).is_some_and(|a| a.rows_may_be_many());
        if shape.depth > limits::SMALL_ALGEBRA_DEPTH
            || ((shape.sorts_or_groups || materialized) && !small_limit)
        {
            return None;
        }
        let mut out = CappedBuffer { bytes: Vec::new(), overflowed: false };
        let done =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.evaluate(&prepared, &mut out)));
        let content_type = prepared.content_type;
        match done {
            Ok(Ok(summary)) => Some(Start::Whole { content_type, body: out.bytes, summary }),
            Ok(Err(_)) if out.overflowed => None,
            Ok(Err(e)) => Some(Start::Failed(e)),
            // The panic message is on stderr (the default hook); a fault of ours.
            Err(_) => Some(Start::Failed(QueryError::Io(std::io::Error::other(
                "the query stopped unexpectedly (an internal error; see the server's log)",
            )))),
        }
    }
}

/// An inline query's output, refused past [`INLINE_BYTES`].
struct CappedBuffer {
    bytes: Vec<u8>,
    overflowed: bool,
}

impl std::io::Write for CappedBuffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + data.len() > INLINE_BYTES {
            self.overflowed = true;
            return Err(std::io::Error::other("the answer is too large to hold: streamed by a worker"));
        }
        self.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The protocol's `default-graph-uri` / `named-graph-uri` replace the
/// query's own FROM / FROM NAMED (SPARQL 1.1 Protocol §2.1.4).
fn set_dataset(query: &mut Query, default: &[NamedNode], named: &[NamedNode]) {
    if default.is_empty() && named.is_empty() {
        return;
    }
    let dataset = Some(QueryDataset { default: default.to_vec(), named: Some(named.to_vec()) });
    match query {
        Query::Select { dataset: d, .. }
        | Query::Construct { dataset: d, .. }
        | Query::Describe { dataset: d, .. }
        | Query::Ask { dataset: d, .. } => *d = dataset,
    }
}

struct UpdateJob {
    text: String,
    using: Vec<NamedNode>,
    using_named: Vec<NamedNode>,
    base: String,
    chunk: std::path::PathBuf,
    lock_wait: Duration,
    allow_load: Option<std::path::PathBuf>,
    turns: Arc<WriterTurns>,
    snapshots: Arc<Snapshots>,
    /// The readers' snapshot when the request came: a first update takes
    /// over its fold of the log if the disk still matches it.
    reader: Option<Arc<Kept>>,
}

/// An error response before it is built: small, and `Send` (responses are
/// not), so updates can fail on their worker thread.
#[derive(Debug)]
pub(super) struct Refused {
    status: StatusCode,
    message: String,
    headers: Vec<(HeaderName, &'static str)>,
}

impl Refused {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> Refused {
        Refused { status, message: message.into(), headers: Vec::new() }
    }

    pub(super) fn with(mut self, name: HeaderName, value: &'static str) -> Refused {
        self.headers.push((name, value));
        self
    }

    pub(super) fn bad(message: String) -> Refused {
        Refused::new(StatusCode::BAD_REQUEST, message)
    }

    pub(super) fn store(e: StoreError) -> Refused {
        Refused::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot read the store: {e}"))
    }

    pub(super) fn unsupported(got: &str, expected: &str) -> Refused {
        let got = if got.is_empty() { "no Content-Type" } else { got };
        Refused::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, format!("{got}: expected {expected}"))
    }

    /// The same refusal with its message rewritten (context added).
    pub(super) fn reworded(mut self, f: impl FnOnce(&str) -> String) -> Refused {
        self.message = f(&self.message);
        self
    }

    #[cfg(test)]
    pub(super) fn message(&self) -> &str {
        &self.message
    }

    /// A refusal as the reply to send.
    pub(super) fn reply(self) -> Reply {
        Reply::Whole(self.response(), None)
    }

    pub(super) fn response(self) -> Response<Body> {
        let mut r = text(self.status, &self.message);
        for (name, value) in self.headers {
            r.headers_mut().insert(name, HeaderValue::from_static(value));
        }
        r
    }
}

impl UpdateJob {
    fn run(self) -> Result<(), Refused> {
        let started = Instant::now();
        let bad = |m: String| Refused::new(StatusCode::BAD_REQUEST, m);
        let parser = SparqlParser::new().with_base_iri(&self.base).map_err(|e| bad(e.to_string()))?;
        let mut update = limits::parse_update(parser, &self.text).map_err(|r| match r {
            Refusal::Syntax(m) => bad(format!("update syntax: {m}")),
            Refusal::Limit(m) => bad(format!("update refused: {m}")),
        })?;
        refuse_outside_access(&update, self.allow_load.as_deref())?;
        super::debug_panic(&self.text);
        self.set_using(&mut update)?;
        let reader = self.reader.as_deref();
        commit(&self.chunk, self.lock_wait, &update, started, &self.turns, &self.snapshots, reader)
    }

    /// `using-graph-uri` / `using-named-graph-uri` set the WHERE clauses'
    /// dataset; a request that names its own (USING, or WITH) conflicts.
    fn set_using(&self, update: &mut Update) -> Result<(), Refused> {
        if self.using.is_empty() && self.using_named.is_empty() {
            return Ok(());
        }
        for op in &mut update.operations {
            if let GraphUpdateOperation::DeleteInsert { using, .. } = op {
                if using.is_some() {
                    return Err(Refused::new(
                        StatusCode::BAD_REQUEST,
                        "using-graph-uri / using-named-graph-uri conflict with the request's own USING or WITH",
                    ));
                }
                *using =
                    Some(QueryDataset { default: self.using.clone(), named: Some(self.using_named.clone()) });
            }
        }
        Ok(())
    }
}

/// Appends `update` as one batch under the writer lock, held for this
/// request only, and hands its fold to the readers.
///
/// The endpoint's writes take turns ([`WriterTurns`]): a write waits for the
/// one before it to end, then takes over the open store and folded log that
/// one left, so an update whose store nobody else wrote to since reads
/// neither the log nor the store again (O(1), not O(delta)), however many
/// clients write at once. With nothing kept (the first update, or one after
/// a failure), the readers' snapshot `reader` is taken over while the disk
/// still matches it. The readers' snapshot is replaced before the turn ends,
/// so snapshots are installed in the order their batches were appended.
///
/// `lock_wait` bounds the whole wait: for the turn, then for the file lock
/// (another process's writer).
fn commit(
    chunk: &std::path::Path,
    lock_wait: Duration,
    update: &Update,
    started: Instant,
    turns: &WriterTurns,
    snapshots: &Snapshots,
    reader: Option<&Kept>,
) -> Result<(), Refused> {
    let mut turn = turns.take(lock_wait)?;
    let left = lock_wait.saturating_sub(started.elapsed());
    let resumed = Updater::resume(chunk, Some(left), turn.kept.take(), reader);
    let mut updater = resumed.map_err(|e| update_failure(&e))?;
    let writing = snapshots.writing();
    updater.apply_parsed(update, started).map_err(|e| update_failure(&e))?;
    // Before `suspend` releases the lock: no other writer can have appended.
    // Without a snapshot (dropping `writing`), readers read the disk again.
    if let Ok(next) = Kept::after_update(chunk, updater.overlay(), Budget::Cache(snapshots.cache_bytes())) {
        writing.install(next);
    }
    // If the log's position cannot be read, the next update opens afresh.
    turn.kept = updater.suspend().ok();
    Ok(())
}

/// The endpoint's writes, one at a time, and what the last one left open.
/// In-process turns instead of each write polling the file lock: a write
/// waiting here is woken when the one before it ends, and takes over its
/// writer (see [`commit`]). The file lock still orders the endpoint against
/// other processes.
#[derive(Default)]
struct WriterTurns {
    state: std::sync::Mutex<TurnState>,
    ended: std::sync::Condvar,
}

#[derive(Default)]
struct TurnState {
    busy: bool,
    kept: Option<Suspended>,
}

/// A write's turn: what the last write left, and, when it ends (returned,
/// failed or panicked), what this one leaves for the next: `kept`, or
/// nothing after a failure (the next write opens afresh).
struct Turn<'a> {
    turns: &'a WriterTurns,
    kept: Option<Suspended>,
}

impl WriterTurns {
    /// Waits up to `wait` for the write before this one to end.
    fn take(&self, wait: Duration) -> Result<Turn<'_>, Refused> {
        let state = super::lock(&self.state);
        let (mut state, timeout) =
            self.ended.wait_timeout_while(state, wait, |s| s.busy).unwrap_or_else(|p| p.into_inner());
        if timeout.timed_out() && state.busy {
            let message = format!(
                "the endpoint's previous updates still ran after --lock-wait ({:.1} s); retry shortly",
                wait.as_secs_f64()
            );
            return Err(Refused::new(StatusCode::SERVICE_UNAVAILABLE, message).with(RETRY_AFTER, "1"));
        }
        state.busy = true;
        Ok(Turn { turns: self, kept: state.kept.take() })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = super::lock(&self.turns.state);
        state.kept = self.kept.take();
        state.busy = false;
        drop(state);
        self.turns.ended.notify_one();
    }
}

/// LOAD reads files or URLs and SERVICE calls out: neither through an endpoint.
fn refuse_outside_access(update: &Update, allow_load: Option<&std::path::Path>) -> Result<(), Refused> {
    for op in &update.operations {
        if let GraphUpdateOperation::Load { source, .. } = op {
            load::check(source.as_str(), allow_load).map_err(|refusal| match refusal {
                LoadRefusal::Forbidden(m) => Refused::new(StatusCode::FORBIDDEN, m),
                LoadRefusal::Unreadable(m) => Refused::bad(m),
            })?;
        }
    }
    if limits::update_calls_service(update) {
        return Err(Refused::new(
            StatusCode::FORBIDDEN,
            "SERVICE is refused: this endpoint makes no outbound requests",
        ));
    }
    Ok(())
}

fn query_failure(e: &QueryError) -> Refused {
    let status = match e {
        QueryError::Syntax(_) | QueryError::Evaluation(_) | QueryError::Limit(_) => StatusCode::BAD_REQUEST,
        QueryError::Timeout(_) => StatusCode::SERVICE_UNAVAILABLE,
        QueryError::Store(_) | QueryError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        QueryError::Cut { error, .. } => return query_failure(error),
    };
    Refused::new(status, e.to_string())
}

fn update_failure(e: &dyn UpdateFailure) -> Refused {
    if e.locked() {
        let message = format!("another writer holds the store's lock; retry shortly ({})", e.message());
        return Refused::new(StatusCode::SERVICE_UNAVAILABLE, message).with(RETRY_AFTER, "1");
    }
    let status = if e.bad_input() { StatusCode::BAD_REQUEST } else { StatusCode::INTERNAL_SERVER_ERROR };
    Refused::new(status, e.message())
}

/// The two error types an update can end in, for one status mapping.
trait UpdateFailure {
    fn locked(&self) -> bool;
    fn bad_input(&self) -> bool;
    fn message(&self) -> String;
}

impl UpdateFailure for StoreError {
    fn locked(&self) -> bool {
        matches!(self, StoreError::Locked { .. })
    }
    fn bad_input(&self) -> bool {
        false
    }
    fn message(&self) -> String {
        self.to_string()
    }
}

impl UpdateFailure for UpdateError {
    fn locked(&self) -> bool {
        matches!(self, UpdateError::Store(StoreError::Locked { .. }))
    }
    fn bad_input(&self) -> bool {
        !matches!(self, UpdateError::Store(_))
    }
    fn message(&self) -> String {
        self.to_string()
    }
}

// ---- small helpers -------------------------------------------------------

/// The request's line in the server's log (stderr), written once its
/// status is known (for a stream, when it ends).
pub(super) struct Finish {
    method: String,
    path: String,
    started: Instant,
    quiet: bool,
}

impl Finish {
    pub(super) fn new(head: &http::request::Parts, quiet: bool) -> Finish {
        Finish {
            method: head.method.to_string(),
            path: head.uri.path().to_owned(),
            started: Instant::now(),
            quiet,
        }
    }

    fn log(self, status: StatusCode, rows: Option<usize>, note: &str) {
        if !self.quiet {
            let rows = rows.map_or_else(|| "-".to_owned(), |n| n.to_string());
            let ms = self.started.elapsed().as_secs_f64() * 1e3;
            crate::eprint_line!("{} {} {} {rows} {ms:.1}ms{note}", self.method, self.path, status.as_u16());
        }
    }
}

/// `f` for GET (and HEAD, whose body hyper drops); 405 for any
/// other method.
fn get_only(req: &ReadRequest, f: impl FnOnce() -> Step<Reply>) -> Step<Reply> {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        f()
    } else {
        Err(not_allowed("GET, HEAD"))
    }
}

/// The body's length as the client declared it (`Content-Length`).
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

fn header(req: &ReadRequest, name: HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn media_type(req: &ReadRequest) -> String {
    super::negotiate::media_type(header(req, CONTENT_TYPE).unwrap_or(""))
}

/// Every body this endpoint reads is text in UTF-8 (the protocol's only
/// encoding); a `charset` parameter naming another is refused, not misread.
fn refuse_other_charsets(req: &ReadRequest) -> Step<()> {
    let content_type = header(req, CONTENT_TYPE).unwrap_or("");
    let charset =
        content_type.split(';').skip(1).filter_map(|p| p.split_once('=')).find_map(|(name, value)| {
            name.trim().eq_ignore_ascii_case("charset").then(|| value.trim().trim_matches('"'))
        });
    match charset {
        Some(c) if !c.eq_ignore_ascii_case("utf-8") && !c.eq_ignore_ascii_case("utf8") => Err(Refused::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("charset={c}: request bodies must be UTF-8"),
        )),
        _ => Ok(()),
    }
}

fn url_params(req: &ReadRequest) -> Step<Vec<(String, String)>> {
    form::parse(req.uri().query().unwrap_or("").as_bytes()).map_err(Refused::bad)
}

/// The one value of `name`, if any; repeating it is an error.
fn single(pairs: &[(String, String)], name: &str) -> Step<Option<String>> {
    match form::all(pairs, name)[..] {
        [] => Ok(None),
        [one] => Ok(Some(one.to_owned())),
        _ => Err(Refused::bad(format!("`{name}` is given more than once"))),
    }
}

fn iris(pairs: &[(String, String)], name: &str) -> Step<Vec<NamedNode>> {
    form::all(pairs, name)
        .into_iter()
        .map(|v| NamedNode::new(v).map_err(|e| Refused::bad(format!("`{name}` {v:?} is not an IRI: {e}"))))
        .collect()
}

fn utf8(body: Bytes) -> Step<String> {
    String::from_utf8(body.into()).map_err(|e| {
        Refused::bad(format!("the request body is not UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
    })
}

/// Whether two secrets are equal, in time that does not depend on where
/// they first differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

fn with_type(builder: http::response::Builder, content_type: &str) -> http::response::Builder {
    let charset = if content_type.starts_with("text/") { "; charset=utf-8" } else { "" };
    builder.header(CONTENT_TYPE, format!("{content_type}{charset}"))
}

fn typed(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    with_type(Response::builder().status(status), content_type).body(Body::whole(body)).unwrap()
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    typed(status, "text/plain", format!("{message}\n"))
}

fn not_allowed(allow: &'static str) -> Refused {
    Refused::new(StatusCode::METHOD_NOT_ALLOWED, format!("this route answers {allow}")).with(ALLOW, allow)
}

fn page() -> Response<Body> {
    typed(StatusCode::OK, "text/html", include_str!("page.html").to_owned())
}

/// Every quad of the snapshot, in every graph, handed to `f`.
fn for_each_quad(
    view: &crate::view::Snapshot,
    mut f: impl FnMut(crate::view::ViewQuad) -> Result<(), QueryError>,
) -> Result<QuerySummary, QueryError> {
    let v = view.view();
    let (quads, _) = v.quads(None, None, None, crate::view::Graphs::All).map_err(QueryError::Store)?;
    let mut rows = 0;
    for q in quads {
        f(q.map_err(QueryError::Store)?)?;
        rows += 1;
    }
    Ok(QuerySummary { rows, ..QuerySummary::default() })
}

/// The view's quads as N-Quads lines: the store's tokens are N-Triples
/// terms already, so each line is its four tokens (three in the default graph).
fn write_nquads(
    view: &crate::view::Snapshot,
    out: &mut dyn std::io::Write,
) -> Result<QuerySummary, QueryError> {
    for_each_quad(view, |q| {
        out.write_all(q.s.bytes())?;
        for t in [Some(&q.p), Some(&q.o), q.g.as_ref()].into_iter().flatten() {
            out.write_all(b" ")?;
            out.write_all(t.bytes())?;
        }
        Ok(out.write_all(b" .\n")?)
    })
}

/// The view's quads as TriG, each token turned into an oxrdf term (unlike
/// N-Quads, TriG abbreviates, so the tokens cannot be copied as they are).
fn write_trig(
    view: &crate::view::Snapshot,
    out: &mut dyn std::io::Write,
) -> Result<QuerySummary, QueryError> {
    let mut w = oxttl::TriGSerializer::new().for_writer(out);
    let summary = for_each_quad(view, |q| Ok(w.serialize_quad(&as_oxrdf(&q)?)?))?;
    w.finish()?;
    Ok(summary)
}

fn as_oxrdf(q: &crate::view::ViewQuad) -> Result<oxrdf::Quad, QueryError> {
    let term = |t: &crate::view::terms::Tok| {
        crate::view::terms::from_token(t.bytes()).ok_or_else(|| {
            QueryError::Evaluation(format!("not an RDF term: {}", String::from_utf8_lossy(t.bytes())))
        })
    };
    let not = |what: &str| QueryError::Evaluation(format!("a quad whose {what} is not valid in TriG"));
    let subject = oxrdf::NamedOrBlankNode::try_from(term(&q.s)?).map_err(|_| not("subject"))?;
    let predicate = oxrdf::NamedNode::try_from(term(&q.p)?).map_err(|_| not("predicate"))?;
    let graph = match &q.g {
        None => oxrdf::GraphName::DefaultGraph,
        Some(g) => match term(g)? {
            oxrdf::Term::NamedNode(n) => n.into(),
            oxrdf::Term::BlankNode(b) => b.into(),
            _ => return Err(not("graph name")),
        },
    };
    Ok(oxrdf::Quad::new(subject, predicate, term(&q.o)?, graph))
}
