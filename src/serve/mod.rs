//! `cottas-tui serve`: the SPARQL 1.1 Protocol over the live store.
//!
//! The endpoint is a function from a request to a response
//! ([`Endpoint::handle`]), so most of it is tested without a socket;
//! [`http1`] owns the sockets (connections served on threads kept between
//! them, capped, with socket timeouts). Routes follow Oxigraph's layout so existing clients work:
//! `/query` (and `/sparql`), `/update`, `/store` (the Graph Store
//! Protocol), `/health`, and `/` (a query form).
//!
//! What it guarantees:
//! - each request reads one snapshot (see [`snapshot`]); other processes'
//!   appends and compactions show up at the next request;
//! - read-only unless `--write`; a non-loopback `--write` needs a token;
//! - an update request is one log batch, fsynced before the 204, taken
//!   under the writer lock for that request only (CLI writers and compaction
//!   keep working beside the server); a busy lock answers 503;
//! - no file system and no outbound request: `LOAD` and `SERVICE` are
//!   refused with 403 (`--allow-load DIR` lets `LOAD` read files under DIR
//!   only: [`load`]);
//! - `--timeout` cancels the evaluation itself; `--max-rows` cuts a result
//!   and says so (206 and a `Cottas-Truncated` header).

mod deadlines;
mod form;
mod graph_store;
mod http1;
mod load;
mod multipart;
pub mod negotiate;
mod routes;
mod stream;
mod workers;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxhttp::model::HeaderValue;

use workers::{Stack, Workers};

pub use routes::Endpoint;

#[derive(Clone, Debug)]
pub struct Config {
    pub chunk: PathBuf,
    pub bind: SocketAddr,
    /// Accept updates.
    pub write: bool,
    /// Required as `Authorization: Bearer …` on writes, when set.
    pub token: Option<String>,
    /// Origins allowed to call from a browser (`*` for any).
    pub cors: Vec<String>,
    pub timeout: Option<Duration>,
    pub max_rows: Option<usize>,
    pub max_body: usize,
    pub union_default_graph: bool,
    /// Connections served at once (one thread each).
    pub connections: usize,
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

impl Config {
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

/// How long a socket may make no progress, and a request head may take.
const SOCKET_IDLE: Duration = Duration::from_secs(60);

/// Set by SIGTERM and SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Serves until SIGTERM or SIGINT, then lets in-flight requests finish
/// (up to `drain`) and returns.
pub fn serve(mut config: Config) -> anyhow::Result<()> {
    if let Some(why) = config.refusal() {
        anyhow::bail!(why);
    }
    let listener = std::net::TcpListener::bind(config.bind)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.bind))?;
    // Port 0 asks the system for a free port; the endpoint's IRIs (and the
    // line below, which scripts read) name the one it gave.
    config.bind = listener.local_addr()?;
    let endpoint = Arc::new(Endpoint::new(config.clone())?);
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_stop_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_stop_signal as *const () as libc::sighandler_t);
    }
    let handler = Arc::clone(&endpoint);
    let handler: Arc<http1::Handler> = Arc::new(move |request: &mut _| handler.handle(request));
    let options = Arc::new(http1::Options {
        quiet: config.quiet,
        server: HeaderValue::from_static(concat!("cottas-tui/", env!("CARGO_PKG_VERSION"))),
        idle: SOCKET_IDLE,
        head_deadline: SOCKET_IDLE,
        stop: &STOP,
    });
    let connections = Arc::new(Workers::new(config.connections, Stack::Default, "connection"));
    let listening = std::os::fd::AsRawFd::as_raw_fd(&listener);
    std::thread::Builder::new()
        .name("accept".into())
        .spawn(move || http1::accept(listener, connections, handler, options))?;
    crate::eprint_line!(
        "cottas-tui: serving {} on http://{} ({}); SPARQL at /query, updates at /update",
        config.chunk.display(),
        config.bind,
        if config.write { "read-write" } else { "read-only" }
    );
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Stop accepting: from here a new connection is refused, not queued.
    // SAFETY: `listening` is the listener's descriptor, still open (the
    // accepting thread owns the listener and ends when accept fails).
    unsafe { libc::shutdown(listening, libc::SHUT_RDWR) };
    endpoint.drain(config.drain);
    Ok(())
}

/// Requests in progress (bodies still streaming included).
#[derive(Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    draining: AtomicBool,
}

/// Held while a request is in progress.
pub(crate) struct InFlightGuard(Arc<InFlight>);

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(Arc::clone(self))
    }

    fn wait_idle(&self, bound: Duration) -> bool {
        let started = Instant::now();
        while self.count.load(Ordering::SeqCst) > 0 {
            if started.elapsed() > bound {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}
