//! The W3C SPARQL 1.1 Protocol tests (`protocol/manifest.ttl`, 34
//! `mf:ProtocolTest`s) against `cottas-tui serve --write` on loopback.
//!
//! Each test's `ut:graphData` becomes a fresh store; its `ht:Request`s are
//! sent in order, as written, over a raw socket. The manifest addresses one
//! endpoint at `/sparql/`; ours has `/query` and `/update`, so a request goes
//! to `/update` when it is an update (by the test's name, as the manifest
//! groups them), else to `/query`. Each response is checked for its status
//! class, and, where given, the result format and the ASK answer. The suite
//! is read from fixtures/w3c-rdf-tests.
//!
//! The Graph Store Protocol's indirect-identification manifest runs the same
//! way against `/store` (the manifest's `/gsp`); expected status codes are
//! exact there, and an expected body is compared with the response as a
//! graph (blank nodes canonicalised). The direct-identification manifest
//! needs `/store/<path>` graph names, which the endpoint does not serve.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::manifest::*;
use common::server::Server;
use oxrdf::{NamedOrBlankNode, Term};

const HT: &str = "http://www.w3.org/2011/http#";
const CNT: &str = "http://www.w3.org/2011/content#";
const HTS: &str = "http://www.w3.org/2011/http-statusCodes#";

/// Tests not passed, each with its reason.
const SKIPS: &[(&str, &str)] = &[];
const GSP_SKIPS: &[(&str, &str)] = &[];

#[derive(Clone)]
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
    /// Acceptable statuses: a class (`2` for 2xx) or an exact code.
    statuses: Vec<u16>,
    /// An expected graph in the response body (Turtle).
    graph: Option<String>,
    /// The response's `Location` names what later requests call this.
    location: Option<String>,
    boolean: Option<bool>,
    format: Option<String>,
}

struct ProtocolTest {
    name: String,
    data: Vec<(Option<String>, PathBuf)>,
    requests: Vec<Request>,
}

fn literal(m: &Manifest, node: &NamedOrBlankNode, p: &str) -> Option<String> {
    match m.object(node, p)? {
        Term::Literal(l) => Some(l.value().to_owned()),
        _ => None,
    }
}

fn request(m: &Manifest, node: &NamedOrBlankNode) -> Request {
    let headers = m
        .object(node, &format!("{HT}headers"))
        .map(|h| m.list(h))
        .unwrap_or_default()
        .iter()
        .filter_map(as_subject)
        .filter_map(|h| {
            Some((literal(m, &h, &format!("{HT}fieldName"))?, literal(m, &h, &format!("{HT}fieldValue"))?))
        })
        .collect();
    let body = m
        .object(node, &format!("{HT}body"))
        .and_then(as_subject)
        .and_then(|b| literal(m, &b, &format!("{CNT}chars")));
    let response = m.object(node, &format!("{HT}resp")).and_then(as_subject).expect("ht:resp");
    let statuses = m
        .objects(&response, &format!("{MF}expectedStatus"))
        .iter()
        .filter_map(|t| match t {
            Term::NamedNode(n) => status_named(n.as_str().strip_prefix(HTS)?),
            _ => None,
        })
        .collect();
    let graph = m
        .object(&response, &format!("{HT}body"))
        .and_then(as_subject)
        .and_then(|b| literal(m, &b, &format!("{CNT}chars")));
    Request {
        method: literal(m, node, &format!("{HT}methodName")).expect("ht:methodName"),
        path: literal(m, node, &format!("{HT}absolutePath")).expect("ht:absolutePath"),
        headers,
        body,
        statuses,
        graph,
        location: literal(m, &response, &format!("{MF}expectedLocation")),
        boolean: literal(m, &response, &format!("{MF}expectedBoolean")).map(|b| b == "true"),
        format: literal(m, &response, &format!("{MF}expectedFormat")),
    }
}

fn protocol_tests(manifest: &Path, kind: &str) -> Vec<ProtocolTest> {
    let (m, entries) = entries_of(manifest, kind);
    entries
        .into_iter()
        .map(|(e, node)| {
            let connection = m.object(&node, &format!("{MF}action")).and_then(as_subject).expect("mf:action");
            let requests = m
                .object(&connection, &format!("{HT}requests"))
                .map(|l| m.list(l))
                .unwrap_or_default()
                .iter()
                .filter_map(as_subject)
                .map(|r| request(&m, &r))
                .collect();
            let name = e.to_string();
            let name = name.rsplit('#').next().unwrap_or(&name).trim_end_matches('>').to_owned();
            ProtocolTest { name, data: graph_files(&m, &node), requests }
        })
        .collect()
}

/// A store holding the test's graphs (N-Quads through the real importer).
fn store_for(dir: &Path, data: &[(Option<String>, PathBuf)]) -> PathBuf {
    let mut nq = String::new();
    for (graph, file) in data {
        let g = graph.as_ref().map(|g| format!(" <{g}>")).unwrap_or_default();
        for t in parse_turtle(file).unwrap() {
            nq.push_str(&format!("{} {} {}{g} .\n", t.subject, t.predicate, t.object));
        }
    }
    if nq.is_empty() {
        // An empty store has one placeholder quad that no test asks about.
        nq.push_str("<urn:cottas:test> <urn:cottas:placeholder> \"\" <urn:cottas:graph> .\n");
    }
    let input = dir.join("data.nq");
    std::fs::write(&input, nq).unwrap();
    let store = dir.join("store");
    let out = common::bin().args(["import", "-q", "--out"]).arg(&store).arg(&input).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store
}

/// Sends `r` to `path` and returns status, content type, body (chunked
/// bodies decoded) and `Location`.
fn send(port: u16, path: &str, r: &Request) -> (u16, String, String, Option<String>) {
    let mut text = format!("{} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", r.method);
    for (name, value) in &r.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = r.body.as_deref().unwrap_or("");
    if r.body.is_some() {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    text.push_str(body);
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
        })
    };
    let body = if header("transfer-encoding") == Some("chunked") { dechunk(body) } else { body.to_owned() };
    let location = header("location").map(str::to_owned);
    (status, header("content-type").unwrap_or("").to_owned(), body, location)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// `StatusCode2xx` → 2 (a class); `Created` → 201.
fn status_named(name: &str) -> Option<u16> {
    if let Some(class) = name.strip_prefix("StatusCode").and_then(|c| c.strip_suffix("xx")) {
        return class.parse().ok();
    }
    Some(match name {
        "OK" => 200,
        "Created" => 201,
        "NoContent" => 204,
        "BadRequest" => 400,
        "NotFound" => 404,
        "MethodNotAllowed" => 405,
        "UnsupportedMediaType" => 415,
        _ => return None,
    })
}

/// The graph a Turtle (or N-Triples) text holds, blank nodes canonicalised.
fn canonical_graph(text: &str) -> Result<oxrdf::Graph, String> {
    let mut g = oxrdf::Graph::new();
    for t in oxttl::TurtleParser::new().for_slice(text.as_bytes()) {
        g.insert(&t.map_err(|e| e.to_string())?);
    }
    g.canonicalize(oxrdf::graph::CanonicalizationAlgorithm::Unstable);
    Ok(g)
}

/// What is wrong with one response, if anything.
fn check(r: &Request, status: u16, content_type: &str, body: &str) -> Option<String> {
    let status_ok = r.statuses.iter().any(|&s| s == status || s == status / 100);
    if !status_ok {
        return Some(format!("status {status}, expected one of {:?}: {}", r.statuses, body.trim()));
    }
    if let Some(expected) = &r.graph {
        let (want, got) = (canonical_graph(expected), canonical_graph(body));
        if want.is_err() || want != got {
            return Some(format!("the body is not the expected graph: {body}"));
        }
    }
    let kind = match content_type.split(';').next().unwrap_or("").trim() {
        "application/sparql-results+json" if body.contains("\"boolean\"") => "boolean",
        "application/sparql-results+json" | "text/csv" | "text/tab-separated-values" => "tabular",
        "application/n-triples" | "text/turtle" | "application/n-quads" => "RDF",
        other => other,
    };
    if let Some(format) = &r.format {
        if format != kind {
            return Some(format!("result format {kind:?} ({content_type}), expected {format:?}"));
        }
    }
    if let Some(b) = r.boolean {
        if !body.contains(&format!("\"boolean\":{b}")) {
            return Some(format!("expected the answer {b}: {body}"));
        }
    }
    None
}

fn run(t: &ProtocolTest) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&store_for(dir.path(), &t.data), &["--write"]);
    if t.requests.iter().all(|r| r.path.starts_with("/gsp")) {
        // `$LOCATION$` stands for a Location an earlier response gave.
        let mut names: Vec<(String, String)> = Vec::new();
        for (i, r) in t.requests.iter().enumerate() {
            let fill = |text: &str| names.iter().fold(text.to_owned(), |t, (k, v)| t.replace(k, v));
            let r = Request { body: r.body.as_deref().map(fill), ..r.clone() };
            let path = fill(&r.path).replacen("/gsp", "/store", 1);
            let (status, content_type, body, location) = send(server.port, &path, &r);
            if let Some(problem) = check(&r, status, &content_type, &body) {
                return Err(format!("request {} ({} {path}): {problem}", i + 1, r.method));
            }
            if let (Some(name), Some(location)) = (&r.location, location) {
                names.push((name.clone(), location));
            }
        }
        return Ok(());
    }
    let route = if t.name.contains("update") { "/update" } else { "/query" };
    for (i, r) in t.requests.iter().enumerate() {
        // A test's later requests read what its update wrote.
        let route = if i > 0 && r.body.as_deref().is_some_and(|b| b.trim_start().starts_with("ASK")) {
            "/query"
        } else {
            route
        };
        let (status, content_type, body, _) = send(server.port, &r.path.replacen("/sparql/", route, 1), r);
        if let Some(problem) = check(r, status, &content_type, &body) {
            return Err(format!("request {} ({} {}): {problem}", i + 1, r.method, r.path));
        }
    }
    Ok(())
}

#[test]
fn w3c_sparql11_protocol() {
    run_manifest("protocol/manifest.ttl", "ProtocolTest", 34, SKIPS);
}

#[test]
fn w3c_graph_store_protocol_indirect() {
    run_manifest("graph-store-protocol/manifest-indirect.ttl", "GraphStoreProtocolTest", 9, GSP_SKIPS);
}

#[test]
fn w3c_graph_store_protocol_direct() {
    run_manifest("graph-store-protocol/manifest-direct.ttl", "GraphStoreProtocolTest", 4, GSP_SKIPS);
}

/// Runs the `kind` tests of one manifest under `sparql/sparql11/`, which
/// holds `count` of them.
fn run_manifest(rel: &str, kind: &str, count: usize, skips: &[(&str, &str)]) {
    let tests = protocol_tests(&common::w3c_suites().join("sparql/sparql11").join(rel), kind);
    assert_eq!(tests.len(), count, "{rel} holds {count} tests");
    run_all(&tests, skips);
}

/// Runs every test; fails on any failure not listed in `skips`, and on
/// any listed test that passes.
fn run_all(tests: &[ProtocolTest], skips: &[(&str, &str)]) {
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for t in tests {
        let reason = skips.iter().find(|(n, _)| *n == t.name).map(|(_, why)| *why);
        let outcome = match (run(t), reason) {
            (Ok(()), Some(_)) => {
                failures.push(format!("{}: passes now; take it off the skip list", t.name));
                "FAILED (listed as skipped)".to_owned()
            }
            (Ok(()), None) => "ok".to_owned(),
            (Err(e), Some(why)) => {
                skipped.push(format!("{}: {why} ({e})", t.name));
                format!("skipped: {why}")
            }
            (Err(e), None) => {
                failures.push(format!("{}: {e}", t.name));
                "FAILED".to_owned()
            }
        };
        common::announce(&format!("test w3c-protocol {} ... {outcome}", t.name));
    }
    for s in &skipped {
        eprintln!("skipped {s}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} protocol tests fail:\n{}",
        failures.len(),
        tests.len(),
        failures.join("\n")
    );
}
