//! Fuzzes the SPARQL endpoint through the whole server: hyper's HTTP/1.1
//! framing, the Host and origin guards, the body limits, routing, the
//! query string and form bodies, content negotiation, multipart uploads,
//! the Graph Store Protocol and SPARQL parsing and evaluation over a small
//! store, all fed one connection's bytes through `serve::answer_bytes` (an
//! in-memory connection to the same code a socket is served by).
//!
//! Two shapes of input. A first byte with its high bit set: the rest is the
//! connection's bytes as they are (framing, smuggling attempts, garbage).
//! Otherwise a request spelled for the fuzzer to mutate: its method (first
//! byte), its target (the first line), its header fields (up to an empty
//! line) and its body (the rest), written out as an HTTP/1.1 request with
//! `Host: localhost` and the body's `Content-Length`. A panic anywhere, even
//! one the endpoint would catch and turn into a 500, is a bug, and
//! libfuzzer-sys's panic hook aborts the process on the first, on whichever
//! thread. Read-only, as `serve` runs by default. Needs the library's
//! `full` feature, and leak detection off: the runtime's worker threads
//! outlive an input (`cargo fuzz run --features full endpoint --
//! -detect_leaks=0`).
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cottas_tui::import::{import, ImportOptions};
use cottas_tui::serve::{answer_bytes, runtime, Config, Endpoint};
use libfuzzer_sys::fuzz_target;

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"];

/// An endpoint over the 5-quad sample and its runtime, built once per
/// fuzzing process.
fn server() -> &'static (Arc<Endpoint>, tokio::runtime::Runtime) {
    static SERVER: OnceLock<(Arc<Endpoint>, tokio::runtime::Runtime)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("cottas-fuzz-endpoint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/cottas_sample.nq");
        import(&ImportOptions::new(vec![sample.into()], dir.clone()), |_| {}).expect("the sample imports");
        let mut config = Config::new(dir);
        config.cors = vec!["*".into()];
        config.timeout = Some(Duration::from_secs(2));
        config.max_rows = Some(10_000);
        config.limits.max_body = 1 << 20;
        config.limits.head_timeout = Duration::from_secs(2);
        config.limits.body_timeout = Duration::from_secs(2);
        config.limits.workers = 2;
        config.quiet = true;
        config.cache_bytes = 16 << 20;
        config.lock_wait = Duration::from_secs(1);
        let runtime = runtime(&config.limits).expect("a runtime");
        let endpoint = Endpoint::new(config).expect("the endpoint opens the sample store");
        (Arc::new(endpoint), runtime)
    })
}

/// The structured input written out as one HTTP/1.1 request.
fn request(data: &[u8]) -> Option<Vec<u8>> {
    let (&method, rest) = data.split_first()?;
    let mut lines = rest.splitn(2, |&b| b == b'\n');
    let target = lines.next()?;
    let mut rest = lines.next().unwrap_or_default();
    let mut out = Vec::new();
    out.extend_from_slice(METHODS[usize::from(method) % METHODS.len()].as_bytes());
    out.push(b' ');
    out.extend_from_slice(target);
    out.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    loop {
        let (line, after) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        rest = after;
        if line.is_empty() {
            break;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", rest.len()).as_bytes());
    out.extend_from_slice(rest);
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let bytes = match data.split_first() {
        Some((&first, raw)) if first & 0x80 != 0 => raw.to_vec(),
        _ => match request(data) {
            Some(r) => r,
            None => return,
        },
    };
    let (endpoint, runtime) = server();
    let answer = answer_bytes(endpoint, runtime, &bytes);
    // Whatever came in, what goes out is HTTP (or nothing, for a
    // connection closed at its deadline or with no request).
    // (HTTP/1.0 requests are answered `HTTP/1.0`.)
    assert!(answer.is_empty() || answer.starts_with(b"HTTP/1."), "{:?}", String::from_utf8_lossy(&answer));
});
