//! HTTP/1.1 on connection threads kept between connections.
//!
//! Why not oxhttp's server, whose request and response types the routes
//! still use: it starts a thread for every connection and ends it when the
//! connection closes. Most SPARQL clients (urllib under SPARQLWrapper and
//! rdflib, curl from scripts) open a connection per request, so starting
//! and ending that thread was a quarter of the server's CPU for a selective
//! query (`perf`, 4 clients). Here a pool of threads ([`Workers`]) serves
//! connections one after another, and the accepting thread waits for a free
//! one past `--threads`.
//!
//! The wire rules, each chosen for a reason:
//! - request heads are parsed by httparse, at most [`MAX_HEAD`] bytes and
//!   [`MAX_FIELDS`] fields (431 beyond), and must arrive within
//!   [`Options::head_deadline`] of their first byte (slow clients cannot hold
//!   a thread by trickling a head);
//! - bodies are framed by `Content-Length` or by chunked transfer coding;
//!   both at once, several lengths that disagree, or any other coding are
//!   refused (400, 501) and the connection closed: a proxy in front must not
//!   read a different request boundary than ours (request smuggling);
//! - `Expect: 100-continue` is answered when the handler first reads the
//!   body, so a request refused on its head (403, 413) never makes the
//!   client send the body;
//! - HTTP/1.1 connections stay open unless either side says `close`, or the
//!   handler left more than [`DRAIN_LIMIT`] bytes of body unread; HTTP/1.0
//!   connections close after one exchange (as Oxigraph's server does, so the
//!   benchmark against it compares like with like);
//! - a response of unknown length is chunked (HTTP/1.0: ended by closing);
//!   if its body fails part-way, the connection closes without the final
//!   empty chunk, which every client reports as an incomplete response;
//! - HEAD gets the head of the response only; 1xx, 204 and 304 no body.

use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxhttp::model::header::{CONNECTION, CONTENT_LENGTH, DATE, EXPECT, HOST, SERVER, TRANSFER_ENCODING};
use oxhttp::model::{
    Body, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, Version,
};

use super::workers::Workers;

/// Largest request head (request line and fields).
pub const MAX_HEAD: usize = 8 << 10;
/// Most header fields in one request.
pub const MAX_FIELDS: usize = 100;
/// Unread request body the connection reads and drops to stay open.
pub const DRAIN_LIMIT: usize = 64 << 10;
/// Longest chunk-size line, extensions included.
const MAX_CHUNK_LINE: usize = 1024;
/// Response bodies up to this size go out with the head in one write.
const ONE_WRITE: usize = 64 << 10;

pub type Handler = dyn Fn(&mut Request<Body>) -> Response<Body> + Send + Sync;

pub struct Options {
    /// No lines on stderr for connection errors.
    pub quiet: bool,
    /// The `Server` header of every response.
    pub server: HeaderValue,
    /// How long a socket may go without progress (idle keep-alive included).
    pub idle: Duration,
    /// How long a request head may take to arrive once it has started.
    pub head_deadline: Duration,
    /// Set when the server stops: the accepting loop ends at its next error
    /// (the listener is shut down to wake it).
    pub stop: &'static AtomicBool,
}

/// Accepts connections until the listener fails, each served on a thread
/// of `pool` (waiting for a free one past its cap).
pub fn accept(listener: TcpListener, pool: Arc<Workers>, handler: Arc<Handler>, opts: Arc<Options>) {
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            Err(_) if opts.stop.load(Ordering::SeqCst) => return,
            Err(e) => {
                if !opts.quiet {
                    crate::eprint_line!("cottas-tui: cannot accept a connection: {e}");
                }
                // Out of file descriptors: give closing connections a moment.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let (handler, task_opts) = (Arc::clone(&handler), Arc::clone(&opts));
        let served = pool.run_when_free(move || serve_connection(stream, &*handler, &task_opts));
        if let Err(e) = served {
            if !opts.quiet {
                crate::eprint_line!("cottas-tui: no thread for a connection: {e}");
            }
        }
    }
}

/// Serves requests on one connection until it closes.
pub fn serve_connection(stream: TcpStream, handler: &Handler, opts: &Options) {
    let peer = stream.peer_addr().map_or_else(|_| "?".to_owned(), |a| a.to_string());
    let served = Connection::new(stream, opts).and_then(|mut c| c.run(handler));
    if let Err(e) = served {
        if !opts.quiet && !client_left(&e) {
            crate::eprint_line!("cottas-tui: connection from {peer}: {e}");
        }
    }
}

/// Errors that only mean the client went away or went quiet.
fn client_left(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::BrokenPipe
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::UnexpectedEof
            | ErrorKind::TimedOut
            | ErrorKind::WouldBlock
    )
}

struct Connection<'o> {
    input: Rc<RefCell<Input>>,
    opts: &'o Options,
    head: Vec<u8>,
    out: Vec<u8>,
}

/// The reading side of a connection, shared by the connection and the body
/// of the request in progress.
struct Input {
    reader: BufReader<TcpStream>,
    body: Framing,
    /// The client waits for `100 Continue` before sending the body.
    continue_due: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Framing {
    Length(u64),
    Chunked(Chunk),
    Done,
    /// A framing error: the rest of the connection cannot be trusted.
    Broken,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
}

/// Why a request head was not accepted.
#[derive(Debug)]
enum Refusal {
    Status(StatusCode, String),
    /// The socket failed or timed out: nothing can be answered.
    Io(io::Error),
}

impl Refusal {
    fn bad(why: impl Into<String>) -> Refusal {
        Refusal::Status(StatusCode::BAD_REQUEST, why.into())
    }
}

impl<'o> Connection<'o> {
    fn new(stream: TcpStream, opts: &'o Options) -> io::Result<Connection<'o>> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(opts.idle))?;
        stream.set_write_timeout(Some(opts.idle))?;
        let input = Input {
            reader: BufReader::with_capacity(16 << 10, stream),
            body: Framing::Done,
            continue_due: false,
        };
        Ok(Connection { input: Rc::new(RefCell::new(input)), opts, head: Vec::new(), out: Vec::new() })
    }

    fn run(&mut self, handler: &Handler) -> io::Result<()> {
        loop {
            let mut req = match self.next_request() {
                Ok(Some(req)) => req,
                Ok(None) => return Ok(()),
                Err(Refusal::Io(e)) => return Err(e),
                Err(Refusal::Status(status, why)) => {
                    if !self.opts.quiet {
                        crate::eprint_line!("- - {} - (refused: {why})", status.as_u16());
                    }
                    let response = plain(status, why);
                    return self.respond(response, false, false, Version::HTTP_11).map(drop);
                }
            };
            let mut response = handler(&mut req);
            let (head_only, version) = (req.method() == Method::HEAD, req.version());
            let keep_alive = version == Version::HTTP_11
                && !says_close(req.headers())
                && !says_close(response.headers())
                && self.input.borrow_mut().finish_body();
            drop(req);
            response.headers_mut().remove(CONNECTION);
            if !self.respond(response, head_only, keep_alive, version)? {
                return Ok(());
            }
        }
    }

    /// The next request, `None` when the client closed an idle connection.
    fn next_request(&mut self) -> Result<Option<Request<Body>>, Refusal> {
        if !self.read_head()? {
            return Ok(None);
        }
        let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut parsed = httparse::Request::new(&mut fields);
        match parsed.parse(&self.head) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => return Err(Refusal::bad("the request head is incomplete")),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(Refusal::Status(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    format!("more than {MAX_FIELDS} header fields"),
                ))
            }
            Err(httparse::Error::Version) => return Err(unsupported_version()),
            Err(e) => return Err(Refusal::bad(format!("malformed request head: {e}"))),
        }
        let version = match parsed.version {
            Some(0) => Version::HTTP_10,
            Some(1) => Version::HTTP_11,
            _ => return Err(unsupported_version()),
        };
        let method = Method::from_bytes(parsed.method.unwrap_or_default().as_bytes())
            .map_err(|_| Refusal::bad("malformed method"))?;
        let mut headers = HeaderMap::with_capacity(parsed.headers.len());
        for field in parsed.headers.iter() {
            let name = HeaderName::from_bytes(field.name.as_bytes())
                .map_err(|_| Refusal::bad(format!("malformed header name {:?}", field.name)))?;
            let value = HeaderValue::from_bytes(field.value)
                .map_err(|_| Refusal::bad(format!("malformed value of header {}", field.name)))?;
            headers.append(name, value);
        }
        let uri = request_uri(parsed.path.unwrap_or_default(), &headers)?;
        let body = framing(&headers, version)?;
        let continue_due = version == Version::HTTP_11 && expects_continue(&headers)?;
        {
            let mut input = self.input.borrow_mut();
            input.body = body;
            input.continue_due = continue_due && body != Framing::Done && body != Framing::Length(0);
        }
        let mut req = Request::new(Body::from_read(BodyReader(Rc::clone(&self.input))));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.version_mut() = version;
        *req.headers_mut() = headers;
        Ok(Some(req))
    }

    /// Reads one request head into `self.head`; `false` on a clean close
    /// before its first byte.
    fn read_head(&mut self) -> Result<bool, Refusal> {
        self.head.clear();
        let mut input = self.input.borrow_mut();
        let mut end = HeadEnd::default();
        let mut started: Option<Instant> = None;
        loop {
            let available = match input.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if self.head.is_empty() && client_left(&e) => return Ok(false),
                Err(e) => return Err(Refusal::Io(e)),
            };
            if available.is_empty() {
                return match self.head.is_empty() {
                    true => Ok(false),
                    false => Err(Refusal::Io(io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the client closed the connection in the middle of a request head",
                    ))),
                };
            }
            let started = *started.get_or_insert_with(Instant::now);
            let (taken, complete) = end.scan(available);
            self.head.extend_from_slice(&available[..taken]);
            input.reader.consume(taken);
            if self.head.len() > MAX_HEAD {
                return Err(Refusal::Status(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    format!("the request head is larger than {MAX_HEAD} bytes"),
                ));
            }
            if complete {
                return Ok(true);
            }
            if started.elapsed() > self.opts.head_deadline {
                return Err(Refusal::Status(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the request head took more than {} s", self.opts.head_deadline.as_secs()),
                ));
            }
        }
    }

    /// Writes `response` to a client speaking `version` (an HTTP/1.0
    /// client gets no chunked body); whether the connection stays open.
    fn respond(
        &mut self,
        mut response: Response<Body>,
        head_only: bool,
        keep_alive: bool,
        version: Version,
    ) -> io::Result<bool> {
        let status = response.status();
        let bodiless = status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        let length = response.body().len();
        let chunked = length.is_none() && !bodiless && !head_only && version == Version::HTTP_11;
        // Only a body whose end the client can tell leaves the connection usable.
        let keep_alive = keep_alive && (length.is_some() || bodiless || head_only || chunked);
        self.out.clear();
        self.write_head(&response, keep_alive, bodiless, length, chunked);
        let input = self.input.borrow();
        let mut socket: &TcpStream = input.reader.get_ref();
        if head_only || bodiless {
            socket.write_all(&self.out)?;
            return Ok(keep_alive);
        }
        let body = response.body_mut();
        if length.is_some_and(|n| n <= ONE_WRITE as u64) {
            if body.read_to_end(&mut self.out).is_err() {
                return Ok(false);
            }
            socket.write_all(&self.out)?;
            return Ok(keep_alive);
        }
        socket.write_all(&self.out)?;
        let sent = if chunked { send_chunked(body, socket)? } else { send_plain(body, socket)? };
        Ok(sent && keep_alive)
    }

    fn write_head(
        &mut self,
        response: &Response<Body>,
        keep_alive: bool,
        bodiless: bool,
        length: Option<u64>,
        chunked: bool,
    ) {
        let out = &mut self.out;
        let status = response.status();
        let reason = status.canonical_reason().unwrap_or("");
        let _ = write!(out, "HTTP/1.1 {} {reason}\r\n", status.as_u16());
        for (name, value) in response.headers() {
            if ![CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, DATE, SERVER].contains(name) {
                field(out, name.as_str(), value.as_bytes());
            }
        }
        field(out, "server", self.opts.server.as_bytes());
        http_date::with_now(|date| field(out, "date", date));
        if !keep_alive {
            field(out, "connection", b"close");
        }
        match (bodiless, length) {
            (true, _) => {}
            (false, Some(n)) => {
                let _ = write!(out, "content-length: {n}\r\n");
            }
            (false, None) if chunked => field(out, "transfer-encoding", b"chunked"),
            (false, None) => {}
        }
        out.extend_from_slice(b"\r\n");
    }
}

fn unsupported_version() -> Refusal {
    Refusal::Status(StatusCode::HTTP_VERSION_NOT_SUPPORTED, "only HTTP/1.0 and HTTP/1.1 are served".into())
}

fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Sends `body` in chunks; `false` if it failed part-way (no final chunk).
fn send_chunked(body: &mut Body, mut socket: &TcpStream) -> io::Result<bool> {
    let mut buf = vec![0u8; 64 << 10];
    let mut frame = Vec::with_capacity(buf.len() + 16);
    loop {
        let n = match body.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Ok(false),
        };
        frame.clear();
        let _ = write!(frame, "{n:X}\r\n");
        frame.extend_from_slice(&buf[..n]);
        frame.extend_from_slice(b"\r\n");
        if n == 0 {
            socket.write_all(&frame)?;
            return Ok(true);
        }
        socket.write_all(&frame)?;
    }
}

/// Sends `body` as it comes (known length, or HTTP/1.0 ended by closing).
fn send_plain(body: &mut Body, mut socket: &TcpStream) -> io::Result<bool> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match body.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(n) => socket.write_all(&buf[..n])?,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Ok(false),
        }
    }
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Body::from(format!("{text}\n")));
    *response.status_mut() = status;
    response.headers_mut().insert("content-type", HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn says_close(headers: &HeaderMap) -> bool {
    headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("close"))
}

/// The request target as an absolute URI (origin form takes its authority
/// from `Host`, which must then be present exactly once).
fn request_uri(target: &str, headers: &HeaderMap) -> Result<Uri, Refusal> {
    if !target.starts_with('/') {
        let uri =
            Uri::try_from(target).map_err(|e| Refusal::bad(format!("malformed request target: {e}")))?;
        return match uri.scheme_str() {
            Some("http") if uri.authority().is_some() => Ok(uri),
            _ => Err(Refusal::bad("the request target must be a path or an http:// URL")),
        };
    }
    let mut hosts = headers.get_all(HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Err(Refusal::bad("a request needs exactly one Host header"));
    };
    Uri::builder()
        .scheme("http")
        .authority(host.as_bytes())
        .path_and_query(target)
        .build()
        .map_err(|e| Refusal::bad(format!("malformed request target or Host: {e}")))
}

/// How the request body is delimited.
fn framing(headers: &HeaderMap, version: Version) -> Result<Framing, Refusal> {
    let codings: Vec<&HeaderValue> = headers.get_all(TRANSFER_ENCODING).iter().collect();
    let lengths: Vec<&HeaderValue> = headers.get_all(CONTENT_LENGTH).iter().collect();
    if !codings.is_empty() {
        if !lengths.is_empty() {
            return Err(Refusal::bad("a request cannot have both Content-Length and Transfer-Encoding"));
        }
        if version == Version::HTTP_10 {
            return Err(Refusal::bad("Transfer-Encoding is not defined in HTTP/1.0"));
        }
        let chunked_only =
            codings.len() == 1 && codings[0].as_bytes().trim_ascii().eq_ignore_ascii_case(b"chunked");
        if !chunked_only {
            return Err(Refusal::Status(
                StatusCode::NOT_IMPLEMENTED,
                "only the chunked transfer coding is supported".into(),
            ));
        }
        return Ok(Framing::Chunked(Chunk::Size));
    }
    let mut declared: Option<u64> = None;
    for value in lengths.iter().flat_map(|v| v.as_bytes().split(|&b| b == b',')) {
        let n = decimal(value.trim_ascii()).ok_or_else(|| Refusal::bad("malformed Content-Length"))?;
        if declared.is_some_and(|d| d != n) {
            return Err(Refusal::bad("Content-Length headers that disagree"));
        }
        declared = Some(n);
    }
    Ok(declared.map_or(Framing::Done, Framing::Length))
}

fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn expects_continue(headers: &HeaderMap) -> Result<bool, Refusal> {
    match headers.get(EXPECT) {
        None => Ok(false),
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"100-continue") => Ok(true),
        Some(_) => Err(Refusal::Status(
            StatusCode::EXPECTATION_FAILED,
            "only `Expect: 100-continue` is supported".into(),
        )),
    }
}

/// Finds the blank line that ends a request head, across reads.
#[derive(Default)]
struct HeadEnd {
    /// 0: inside a line; 1: just after a line feed; 2: after LF then CR.
    state: u8,
}

impl HeadEnd {
    /// How many bytes of `bytes` belong to the head, and whether it ended.
    fn scan(&mut self, bytes: &[u8]) -> (usize, bool) {
        for (i, &b) in bytes.iter().enumerate() {
            self.state = match (b, self.state) {
                (b'\n', 1 | 2) => return (i + 1, true),
                (b'\n', _) => 1,
                (b'\r', 1) => 2,
                _ => 0,
            };
        }
        (bytes.len(), false)
    }
}

/// The request body as the handler reads it.
struct BodyReader(Rc<RefCell<Input>>);

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.borrow_mut().read_body(buf)
    }
}

impl Input {
    fn read_body(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.read_framed(buf);
        if read.is_err() {
            self.body = Framing::Broken;
        }
        read
    }

    fn read_framed(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if std::mem::take(&mut self.continue_due) {
            let mut socket: &TcpStream = self.reader.get_ref();
            socket.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        loop {
            match self.body {
                Framing::Done => return Ok(0),
                Framing::Broken => return Err(invalid("the request body could not be read")),
                Framing::Length(0) => self.body = Framing::Done,
                Framing::Length(left) => {
                    let n = self.read_some(buf, left, "its Content-Length")?;
                    self.body = Framing::Length(left - n as u64);
                    return Ok(n);
                }
                Framing::Chunked(Chunk::Size) => {
                    let size = chunk_size(&self.line(MAX_CHUNK_LINE)?)?;
                    self.body = Framing::Chunked(if size == 0 { Chunk::Trailers } else { Chunk::Data(size) });
                }
                Framing::Chunked(Chunk::Data(left)) => {
                    let n = self.read_some(buf, left, "its chunk size")?;
                    let left = left - n as u64;
                    self.body = Framing::Chunked(if left == 0 { Chunk::DataEnd } else { Chunk::Data(left) });
                    return Ok(n);
                }
                Framing::Chunked(Chunk::DataEnd) => {
                    if !self.line(2)?.is_empty() {
                        return Err(invalid("a chunk's data is longer than its size"));
                    }
                    self.body = Framing::Chunked(Chunk::Size);
                }
                Framing::Chunked(Chunk::Trailers) => {
                    // Trailer fields are read and dropped, within the head's bound.
                    let mut total = 0;
                    loop {
                        let line = self.line(MAX_HEAD)?;
                        total += line.len() + 2;
                        if line.is_empty() {
                            break;
                        }
                        if total > MAX_HEAD {
                            return Err(invalid("the request's trailer fields are too large"));
                        }
                    }
                    self.body = Framing::Done;
                }
            }
        }
    }

    fn read_some(&mut self, buf: &mut [u8], left: u64, bound: &str) -> io::Result<usize> {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.reader.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                ErrorKind::UnexpectedEof,
                format!("the request body ended before {bound} said it would"),
            ));
        }
        Ok(n)
    }

    /// One line without its line break, at most `max` bytes.
    fn line(&mut self, max: usize) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        (&mut self.reader).take(max as u64 + 2).read_until(b'\n', &mut line)?;
        if line.pop() != Some(b'\n') {
            return Err(invalid("a line of the chunked body is too long or cut"));
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(line)
    }

    /// After the handler: reads what it left of the body, if little, so the
    /// next request starts where it should; whether the connection can
    /// stay open.
    fn finish_body(&mut self) -> bool {
        if self.continue_due {
            // The client has not sent the body and may never: close.
            return false;
        }
        let mut budget = DRAIN_LIMIT;
        let mut scratch = [0u8; 8 << 10];
        loop {
            match self.read_body(&mut scratch) {
                Ok(0) => return self.body == Framing::Done,
                Ok(n) if n < budget => budget -= n,
                _ => return false,
            }
        }
    }
}

fn chunk_size(line: &[u8]) -> io::Result<u64> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
    let malformed = || invalid(format!("malformed chunk size {:?}", String::from_utf8_lossy(line)));
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(malformed());
    }
    u64::from_str_radix(std::str::from_utf8(digits).map_err(|_| malformed())?, 16).map_err(|_| malformed())
}

fn invalid(why: impl Into<String>) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, why.into())
}

/// The `Date` header (RFC 9110 §5.6.7), formatted once a second per thread.
mod http_date {
    use std::cell::RefCell;
    use std::time::{SystemTime, UNIX_EPOCH};

    thread_local! {
        static CACHED: RefCell<(u64, Vec<u8>)> = const { RefCell::new((u64::MAX, Vec::new())) };
    }

    pub fn with_now(f: impl FnOnce(&[u8])) {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        CACHED.with(|cell| {
            let mut cached = cell.borrow_mut();
            if cached.0 != secs {
                *cached = (secs, format(secs).into_bytes());
            }
            f(&cached.1);
        });
    }

    /// IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    pub fn format(secs: u64) -> String {
        const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        const MONTHS: [&str; 12] =
            ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let days = secs / 86_400;
        let (year, month, day) = crate::store::fsutil::civil_date(days as i64);
        let time = secs % 86_400;
        format!(
            "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
            DAYS[(days % 7) as usize],
            MONTHS[month as usize - 1],
            time / 3600,
            time / 60 % 60,
            time % 60
        )
    }

    #[cfg(test)]
    #[test]
    fn dates_match_known_instants() {
        assert_eq!(format(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(format(1_796_083_199), "Mon, 30 Nov 2026 23:59:59 GMT");
        assert_eq!(format(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_blank_line_however_the_reads_split_it() {
        let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY";
        let head_len = request.len() - 4;
        for split in 0..request.len() {
            let mut end = HeadEnd::default();
            let (first, done) = end.scan(&request[..split]);
            let taken = if done { first } else { first + end.scan(&request[split..]).0 };
            assert_eq!(taken, head_len, "split at {split}");
        }
        let mut end = HeadEnd::default();
        assert_eq!(end.scan(b"GET / HTTP/1.0\n\nrest"), (16, true), "bare line feeds end a head too");
        assert_eq!(
            HeadEnd::default().scan(b"\r\nGET / HTTP/1.1\r\n"),
            (18, false),
            "a leading empty line is not the end"
        );
    }

    #[test]
    fn chunk_sizes_are_hex_with_optional_extensions() {
        assert_eq!(chunk_size(b"1f").unwrap(), 31);
        assert_eq!(chunk_size(b"A;name=value").unwrap(), 10);
        assert_eq!(chunk_size(b"0").unwrap(), 0);
        for bad in [&b""[..], b"g", b"-1", b"1 2", b"ffffffffffffffff"] {
            assert!(chunk_size(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
