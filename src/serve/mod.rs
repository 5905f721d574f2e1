//! `cottas-tui serve`: the SPARQL 1.1 Protocol over the live store.
//!
//! Two halves. [`http`] is the server: hyper on tokio owns the sockets and
//! the HTTP/1.1 framing, bounds every connection in time and size, checks
//! `Host` and a write's origin ([`guard`]) and reads bodies, all without a
//! thread per connection; then it hands the request to the endpoint on a
//! bounded pool of blocking workers. [`Endpoint`] is a function from a
//! request whose body is read to a response ([`routes`]): routes follow
//! Oxigraph's layout so existing clients work: `/query` (and `/sparql`),
//! `/update`, `/store` (the Graph Store Protocol), `/health`, and `/` (a
//! query form).
//!
//! What it guarantees (docs/serve.md has the threat model):
//! - each request reads one snapshot (see `view::kept`); other processes'
//!   appends and compactions show up at the next request;
//! - read-only unless `--write`; a non-loopback `--write` needs a token; a
//!   write a browser sends from another origin is refused, and so is any
//!   request whose `Host` is not this server's (DNS rebinding);
//! - an update request is one log batch, fsynced before the 204, taken
//!   under the writer lock for that request only;
//! - no file system and no outbound request: `LOAD` and `SERVICE` are
//!   refused with 403 (`--allow-load DIR` lets `LOAD` read files under DIR
//!   only: [`load`]);
//! - `--timeout` cancels the evaluation itself; `--max-rows` cuts a result
//!   and says so (a `Cottas-Truncated` header on the 200);
//! - no idle or slow client holds a thread, and each is dropped at its
//!   deadline.

mod body;
mod deadlines;
mod form;
mod graph_store;
mod guard;
mod http;
mod load;
mod multipart;
pub mod negotiate;
mod routes;
mod stream;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use body::Body;
pub use http::{answer_bytes, runtime, serve};
pub use routes::Endpoint;

#[derive(Clone, Debug)]
pub struct Config {
    pub chunk: PathBuf,
    pub bind: SocketAddr,
    /// Accept updates.
    pub write: bool,
    /// Required as `Authorization: Bearer …` on writes, when set.
    pub token: Option<String>,
    /// Origins allowed to call from a browser (`*` for any); the named ones
    /// (not `*`) may also write.
    pub cors: Vec<String>,
    /// Host names (besides the bound address and loopback names) a request
    /// may name in `Host`; `*` for any.
    pub allow_hosts: Vec<String>,
    pub timeout: Option<Duration>,
    pub max_rows: Option<usize>,
    pub limits: Limits,
    pub union_default_graph: bool,
    pub quiet: bool,
    /// Decoded-column cache of each snapshot.
    pub cache_bytes: usize,
    /// How long an update waits for the writer lock before 503.
    pub lock_wait: Duration,
    /// How long in-flight requests may take to finish at shutdown.
    pub drain: Duration,
    /// `LOAD` may read files under this directory (canonical); `None`: no LOAD.
    pub allow_load: Option<PathBuf>,
}

/// What one client may cost: each bound is a flag of `serve`.
#[derive(Clone, Debug)]
pub struct Limits {
    /// A request head must arrive within this of the connection's start or
    /// of the previous response; the connection is then closed without an
    /// answer, as hyper does (an idle keep-alive connection too).
    pub head_timeout: Duration,
    /// The whole body must arrive within this of the head (408 beyond).
    pub body_timeout: Duration,
    /// A response the client does not read for this long is dropped.
    pub send_timeout: Duration,
    /// Largest request body (413 beyond).
    pub max_body: usize,
    /// Largest request head in bytes (431 beyond); at least 8 KiB.
    pub max_head: usize,
    /// Connections open at once; the next one gets 503 and `Retry-After`.
    pub connections: usize,
    /// Requests evaluated at once (queries and updates), each on a worker
    /// thread; the next ones wait, without a thread, up to `queue_wait`.
    pub workers: usize,
    /// How long a request waits for a free worker before 503.
    pub queue_wait: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            max_body: 16 << 20,
            max_head: 16 << 10,
            connections: 4096,
            workers: 64,
            queue_wait: Duration::from_secs(10),
        }
    }
}

impl Config {
    /// A configuration for `chunk` with every other setting at its default:
    /// loopback, read-only.
    pub fn new(chunk: PathBuf) -> Config {
        Config {
            chunk,
            bind: SocketAddr::from(([127, 0, 0, 1], 7878)),
            write: false,
            token: None,
            cors: Vec::new(),
            allow_hosts: Vec::new(),
            timeout: None,
            max_rows: None,
            limits: Limits::default(),
            union_default_graph: false,
            quiet: false,
            cache_bytes: 512 << 20,
            lock_wait: Duration::from_secs(5),
            drain: Duration::from_secs(10),
            allow_load: None,
        }
    }

    /// The refusal to start, if the configuration is unsafe: writes from
    /// beyond this machine without a token.
    pub fn refusal(&self) -> Option<String> {
        (self.write && !self.bind.ip().is_loopback() && self.token.is_none()).then(|| {
            format!(
                "refusing to accept writes on {} without a token: anyone who can reach it could change the store; \
                 pass --token-file FILE (clients send `Authorization: Bearer <token>`), or bind to 127.0.0.1",
                self.bind
            )
        })
    }
}

/// Locks `m`, taking it over when a request panicked while holding it: the
/// endpoint's locks guard values that are replaced whole, never half-written.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Fault injection for tests: `COTTAS_TUI_DEBUG_PANIC=MARKER` makes a
/// request whose query or update text contains MARKER panic on its worker,
/// as a bug in evaluation would, so a test can check that a panic costs one
/// request and not the server. Read once; absent in normal use.
fn debug_panic(text: &str) {
    static MARKER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let marker =
        MARKER.get_or_init(|| std::env::var("COTTAS_TUI_DEBUG_PANIC").ok().filter(|m| !m.is_empty()));
    if let Some(m) = marker.as_deref().filter(|m| text.contains(m)) {
        panic!("COTTAS_TUI_DEBUG_PANIC: injected panic for a request containing {m:?}");
    }
}
