//! Fuzzes the SPARQL endpoint's request handling: routing, the query string
//! and form bodies, content negotiation, multipart uploads, the Graph Store
//! Protocol and SPARQL parsing and evaluation over a small store. The input
//! is one request: its method (first byte), its target (the first line),
//! its header fields (up to an empty line) and its body (the rest). Whatever
//! the request, the endpoint answers it; a panic anywhere, even one the
//! endpoint would catch and turn into a 500, is a bug, and libfuzzer-sys's
//! panic hook aborts the process on the first, on whichever thread (the
//! queries run on the endpoint's workers). Read-only, as `serve` runs by
//! default. Needs the library's `full` feature, and leak detection off:
//! the pool's query workers outlive an input and still hold what they
//! answered with when libFuzzer counts allocations after it (`cargo fuzz
//! run --features full endpoint -- -detect_leaks=0`).
#![no_main]

use std::io::Read;
use std::sync::OnceLock;
use std::time::Duration;

use cottas_tui::import::{import, ImportOptions};
use cottas_tui::serve::{Config, Endpoint};
use libfuzzer_sys::fuzz_target;
use oxhttp::model::{Body, HeaderName, HeaderValue, Method, Request, Uri};

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"];

/// An endpoint over the 5-quad sample, built once per fuzzing process.
fn endpoint() -> &'static Endpoint {
    static ENDPOINT: OnceLock<Endpoint> = OnceLock::new();
    ENDPOINT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("cottas-fuzz-endpoint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/cottas_sample.nq");
        import(&ImportOptions::new(vec![sample.into()], dir.clone()), |_| {}).expect("the sample imports");
        Endpoint::new(Config {
            chunk: dir,
            bind: "127.0.0.1:7878".parse().expect("an address"),
            write: false,
            token: None,
            cors: vec!["*".into()],
            timeout: Some(Duration::from_secs(2)),
            max_rows: Some(10_000),
            max_body: 1 << 20,
            union_default_graph: false,
            connections: 2,
            quiet: true,
            cache_bytes: 16 << 20,
            lock_wait: Duration::from_secs(1),
            drain: Duration::from_secs(1),
            allow_load: None,
        })
        .expect("the endpoint opens the sample store")
    })
}

/// The request the bytes spell, if they spell one the HTTP layer would
/// hand over (a valid target, field names and values).
fn request(data: &[u8]) -> Option<Request<Body>> {
    let (&method, rest) = data.split_first()?;
    let mut lines = rest.splitn(2, |&b| b == b'\n');
    let target = std::str::from_utf8(lines.next()?).ok()?;
    let mut rest = lines.next().unwrap_or_default();
    let mut req = Request::new(Body::default());
    *req.method_mut() = Method::from_bytes(METHODS[usize::from(method) % METHODS.len()].as_bytes()).ok()?;
    *req.uri_mut() = Uri::try_from(target).ok()?;
    loop {
        let (line, after) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        rest = after;
        if line.is_empty() {
            break;
        }
        let colon = line.iter().position(|&b| b == b':')?;
        let name = HeaderName::from_bytes(&line[..colon]).ok()?;
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii()).ok()?;
        req.headers_mut().append(name, value);
    }
    *req.body_mut() = Body::from(rest.to_vec());
    Some(req)
}

fuzz_target!(|data: &[u8]| {
    let Some(mut req) = request(data) else { return };
    let mut response = endpoint().handle(&mut req);
    // A streamed answer is produced while it is read.
    let mut sink = Vec::new();
    let _ = response.body_mut().read_to_end(&mut sink);
});
