//! The server: hyper's HTTP/1.1 on tokio, and every bound a client meets.
//!
//! Why this shape: a thread per connection let 70 clients that trickled
//! their bodies take the endpoint down, and hand-written framing is what
//! request smuggling is made of. Here a connection is a task of a few
//! kilobytes, so idle and slow clients cost no thread, and hyper (the most
//! used and fuzzed HTTP implementation in Rust) owns the framing: chunked
//! coding, `Content-Length` and `Transfer-Encoding` together, `Expect`,
//! keep-alive, `Date`, the header bounds (431).
//!
//! Each request goes through, in order:
//! 1. hyper, with a deadline for its head (`--head-timeout`; it also closes
//!    an idle keep-alive connection) and a bound on its size (`--max-head`);
//! 2. [`guard`](super::guard): `Host` must name this server (421), a write
//!    must not come from another origin (403);
//! 3. the endpoint's refusals that need no body (read-only, token,
//!    `Content-Length` over `--max-body`): the body is then never read, and
//!    `Expect: 100-continue` is never answered;
//! 4. the body, read in the task, within `--max-body` (413) and
//!    `--body-timeout` from the head (408);
//! 5. a worker: at most `--max-queries` requests are evaluated at once, each
//!    on a blocking thread with the large request stack; the rest wait here,
//!    as tasks, up to `--queue-wait` (503 and `Retry-After`);
//! 6. the answer, whole or streamed; a client that does not read it for
//!    `--send-timeout` is dropped, which ends the query behind it.
//!
//! Connections past `--max-connections` are answered 503 with `Retry-After`
//! and closed. SIGTERM or SIGINT: the listener closes, open connections
//! finish the request in progress (each update is then committed and
//! answered) and close; after `drain` the process exits regardless.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, ORIGIN, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::routes::{Endpoint, Finish, Refused, Reply};
use super::{Body, Config, Limits};

/// Serves until SIGTERM or SIGINT, then lets in-flight requests finish
/// (up to `drain`) and returns.
pub fn serve(mut config: Config) -> anyhow::Result<()> {
    if let Some(why) = config.refusal() {
        anyhow::bail!(why);
    }
    config.limits.connections = config.limits.connections.min(raise_open_files_limit());
    let runtime = runtime(&config.limits)?;
    let listener = runtime
        .block_on(TcpListener::bind(config.bind))
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.bind))?;
    // Port 0 asks the system for a free port; the endpoint's IRIs (and the
    // line below, which scripts read) name the one it gave.
    config.bind = listener.local_addr()?;
    let endpoint = Arc::new(Endpoint::new(config.clone())?);
    crate::eprint_line!(
        "cottas-tui: serving {} on http://{} ({}); SPARQL at /query, updates at /update",
        config.chunk.display(),
        config.bind,
        if config.write { "read-write" } else { "read-only" }
    );
    // On a worker of the runtime, not this thread: a connection's task is
    // then spawned onto the worker that accepted it and runs there next,
    // where from `block_on`'s thread each one had to wake another thread.
    let served = runtime
        .block_on(runtime.spawn(accept_until_stopped(listener, endpoint)))
        .unwrap_or_else(|e| Err(anyhow::anyhow!("the accepting task failed: {e}")));
    // Work that outlived the drain (a query stuck in memory) ends with the process.
    runtime.shutdown_timeout(Duration::from_millis(100));
    served
}

/// The runtime: tokio's workers run the connections; its blocking pool
/// runs evaluation, with the large request stack (parsing and evaluation
/// recurse: `sparql::limits`).
pub fn runtime(limits: &Limits) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_name("serve")
        .thread_stack_size(crate::sparql::limits::STACK_BYTES)
        // Streamed queries hold a thread each besides the one that routed them.
        .max_blocking_threads(limits.workers * 2 + 2)
        .thread_keep_alive(Duration::from_secs(60))
        .enable_all()
        .build()
}

/// The most connections this process can hold: its open-file limit raised
/// to the hard limit, less a margin for the store's own files.
fn raise_open_files_limit() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return usize::MAX;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX).saturating_sub(256).max(16)
}

async fn accept_until_stopped(listener: TcpListener, endpoint: Arc<Endpoint>) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let (mut term, mut int) = (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(endpoint.config().limits.connections));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => admit(tcp, &endpoint, &slots, &graceful),
                Err(e) => {
                    // Out of descriptors, most often: the connections that
                    // hold them end at their deadlines.
                    crate::eprint_line!("cottas-tui: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    // From here a new connection is refused, not queued.
    drop(listener);
    let drain = endpoint.config().drain;
    if tokio::time::timeout(drain, graceful.shutdown()).await.is_err() {
        crate::eprint_line!(
            "cottas-tui: stopping with requests still running after {:.0} s",
            drain.as_secs_f64()
        );
    }
    Ok(())
}

/// Serves one accepted connection as a task, or turns it away past the cap.
fn admit(tcp: TcpStream, endpoint: &Arc<Endpoint>, slots: &Arc<Semaphore>, graceful: &GracefulShutdown) {
    let limits = &endpoint.config().limits;
    let Ok(slot) = Arc::clone(slots).try_acquire_owned() else {
        tokio::spawn(turn_away(tcp, limits.head_timeout.min(Duration::from_secs(2))));
        return;
    };
    let _ = tcp.set_nodelay(true);
    let local = tcp.local_addr().unwrap_or(endpoint.config().bind);
    let mut io = tokio_io_timeout::TimeoutStream::new(tcp);
    io.set_write_timeout(Some(limits.send_timeout));
    let io = TokioIo::new(Box::pin(io));
    let connection =
        graceful.watch(connection_builder(limits).serve_connection(io, service(endpoint, local)));
    let quiet = endpoint.config().quiet;
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(e) = connection.await {
            log_connection_error(&e, quiet);
        }
    });
}

/// Each request of a connection whose local address is `local`, through [`respond`].
fn service(
    endpoint: &Arc<Endpoint>,
    local: SocketAddr,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<Response<Body>, Infallible>> + Send,
> + Clone {
    let served = Arc::clone(endpoint);
    service_fn(move |req| {
        let endpoint = Arc::clone(&served);
        async move { Ok::<_, Infallible>(respond(endpoint, req, local).await) }
    })
}

fn connection_builder(limits: &Limits) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(limits.max_head.max(8192))
        .max_headers(100)
        // A client may send its request and shut its side (`nc -N`, some
        // scripts): it still gets the answer, as HTTP/1.1 allows.
        .half_close(true)
        .keep_alive(true);
    builder
}

/// A connection past `--max-connections`: its request gets a 503 with
/// `Retry-After`, from hyper, and the connection closes.
async fn turn_away(tcp: TcpStream, head_timeout: Duration) {
    let service = service_fn(|_req: Request<Incoming>| async {
        let refused = Refused::new(StatusCode::SERVICE_UNAVAILABLE, "too many connections; retry shortly")
            .with(RETRY_AFTER, "1");
        Ok::<_, Infallible>(refused.response())
    });
    let mut builder = connection_builder(&Limits { head_timeout, ..Limits::default() });
    builder.keep_alive(false);
    let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
}

/// Connection errors on stderr, but for the ordinary ends: a client that
/// leaves, a head that never came (an idle keep-alive connection), a
/// client that stopped reading.
fn log_connection_error(e: &hyper::Error, quiet: bool) {
    if quiet || e.is_incomplete_message() || e.is_timeout() || e.is_canceled() || e.is_closed() {
        return;
    }
    let broken =
        std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>()).is_some_and(|io| {
            use std::io::ErrorKind::*;
            matches!(io.kind(), BrokenPipe | ConnectionReset | ConnectionAborted | TimedOut | UnexpectedEof)
        });
    if !broken {
        crate::eprint_line!("cottas-tui: connection: {e}");
    }
}

/// One request through steps 2 to 6 of the module's list.
async fn respond(endpoint: Arc<Endpoint>, req: Request<Incoming>, local: SocketAddr) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let finish = Finish::new(&parts, endpoint.config().quiet);
    let origin = parts.headers.get(ORIGIN).cloned();
    let reply = match endpoint.refusal_on_head(&parts, &local) {
        Some(refused) => refused.reply(),
        None => match read_body(body, &endpoint.config().limits).await {
            Err(refused) => refused.reply(),
            Ok(bytes) => on_worker(&endpoint, Request::from_parts(parts, bytes)).await,
        },
    };
    let mut response = endpoint.respond_with(reply, finish).await;
    endpoint.add_cors(origin.as_ref(), &mut response);
    response
}

/// The body, within `--max-body` and `--body-timeout`. A refusal closes the
/// connection: what is left of the body is not read.
async fn read_body(body: Incoming, limits: &Limits) -> Result<Bytes, Refused> {
    let limited = http_body_util::Limited::new(body, limits.max_body);
    let closing = |r: Refused| r.with(CONNECTION, "close");
    match tokio::time::timeout(limits.body_timeout, limited.collect()).await {
        Err(_) => Err(closing(Refused::new(
            StatusCode::REQUEST_TIMEOUT,
            format!("the request body did not arrive within {:.0} s", limits.body_timeout.as_secs_f64()),
        ))),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(closing(Refused::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than --max-body ({} bytes)", limits.max_body),
        ))),
        Ok(Err(e)) => Err(closing(Refused::bad(format!("cannot read the request body: {}", chain(&*e))))),
    }
}

/// An error and its sources on one line (hyper's own message is general:
/// "error reading a body from connection"; its source says what was wrong).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Routes the request on a blocking worker, once one of `--max-queries` is free.
async fn on_worker(endpoint: &Arc<Endpoint>, req: Request<Bytes>) -> Reply {
    let wait = endpoint.config().limits.queue_wait;
    let permit = match tokio::time::timeout(wait, Arc::clone(endpoint.gate()).acquire_owned()).await {
        Ok(Ok(permit)) => permit,
        _ => {
            let message = format!(
                "every worker is busy (--max-queries {}) and none came free within {:.0} s; retry shortly",
                endpoint.config().limits.workers,
                wait.as_secs_f64()
            );
            return Refused::new(StatusCode::SERVICE_UNAVAILABLE, message).with(RETRY_AFTER, "1").reply();
        }
    };
    let routed = Arc::clone(endpoint);
    match tokio::task::spawn_blocking(move || routed.handle(req, permit)).await {
        Ok(reply) => reply,
        Err(_) => {
            Refused::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error (logged by the server)").reply()
        }
    }
}

/// Serves `input` as the bytes one client sent on one connection, through
/// the whole server (hyper, the guards, the limits, the routes), and
/// returns what the server answered: for the fuzz target, and for tests of
/// framing that want no socket. The connection's local address is the
/// bound one.
pub fn answer_bytes(endpoint: &Arc<Endpoint>, runtime: &tokio::runtime::Runtime, input: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let local = endpoint.config().bind;
        let service = service(endpoint, local);
        let limits = endpoint.config().limits.clone();
        let connection = tokio::spawn(async move {
            let _ = connection_builder(&limits).serve_connection(TokioIo::new(server), service).await;
        });
        let (mut read, mut write) = tokio::io::split(client);
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            let _ = write.write_all(&input).await;
            let _ = write.shutdown().await;
        });
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(30), read.read_to_end(&mut out)).await;
        writer.abort();
        connection.abort();
        out
    })
}
