//! `cottas-tui serve` as a real process on loopback, driven by curl (and,
//! in `serve_clients.rs`, by SPARQLWrapper and rdflib), and by raw sockets
//! for requests no polite client sends.

mod common;

use common::server::{count_at, curl, write_until_refused, Reply, Server};

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cottas-tui");

/// Every quad of the store, in every graph.
fn count(server: &Server) -> u64 {
    count_at(
        &server.url("/query"),
        "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
    )
}

fn update(server: &Server, text: &str, extra: &[&str]) -> Reply {
    let mut args = vec!["-H", "Content-Type: application/sparql-update", "--data-binary", text];
    args.extend_from_slice(extra);
    let url = server.url("/update");
    args.push(&url);
    curl(&args)
}

#[test]
fn queries_answer_in_the_negotiated_format() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &[]);
    let query = "query=SELECT ?o { <https://example.org/default-subject> ?p ?o }";
    for (accept, content_type, needle) in [
        ("application/sparql-results+json", "application/sparql-results+json", "\"value\":\"default\""),
        ("application/sparql-results+xml", "application/sparql-results+xml", "<literal>default</literal>"),
        ("text/csv", "text/csv; charset=utf-8", "o\r\ndefault"),
        ("text/tab-separated-values", "text/tab-separated-values; charset=utf-8", "?o\n\"default\""),
        ("text/html, */*;q=0.1", "application/sparql-results+json", "\"default\""),
    ] {
        let accept_header = format!("Accept: {accept}");
        // GET with the query in the URL, and POST as a form.
        let get = curl(&["-G", "-H", &accept_header, "--data-urlencode", query, &server.url("/query")]);
        let post = curl(&["-H", &accept_header, "--data-urlencode", query, &server.url("/sparql")]);
        for r in [get, post] {
            assert_eq!(r.status, 200, "{accept}: {}", r.body);
            assert_eq!(r.header("content-type"), Some(content_type), "{accept}");
            assert!(r.body.contains(needle), "{accept}: {}", r.body);
        }
    }
    // POST application/sparql-query, and a CONSTRUCT as N-Triples / Turtle.
    let r = curl(&[
        "-H",
        "Content-Type: application/sparql-query",
        "-H",
        "Accept: text/turtle;q=0.5, application/n-triples",
        "--data-binary",
        "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
        &server.url("/query"),
    ]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/n-triples"));
    assert_eq!(
        r.body.trim(),
        "<https://example.org/default-subject> <https://example.org/status> \"default\" ."
    );
    let r = curl(&[
        "-H",
        "Accept: application/trig",
        "--data-urlencode",
        "query=CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
        &server.url("/query"),
    ]);
    assert_eq!(r.header("content-type"), Some("application/trig"));
    assert_eq!(
        r.body.trim(),
        "<https://example.org/default-subject> <https://example.org/status> \"default\" ."
    );
    let r = curl(&["-H", "Accept: image/png", "--data-urlencode", "query=ASK {}", &server.url("/query")]);
    assert_eq!(r.status, 406);
    assert!(r.body.contains("application/sparql-results+json"), "{}", r.body);
}

#[test]
fn bad_requests_get_the_right_status_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &[]);
    let r = curl(&["--data-urlencode", "query=SELECT * WHERE { ?s ?p }", &server.url("/query")]);
    assert_eq!(r.status, 400);
    assert!(r.body.contains("1:18: a triple pattern needs"), "the message names line:column: {}", r.body);
    let r = curl(&["--data", "query=ASK%7B%7D%C3", &server.url("/query")]);
    assert_eq!(r.status, 400);
    assert!(r.body.contains("not UTF-8") && r.body.contains("byte 11"), "{}", r.body);
    let r = curl(&["-H", "Content-Type: text/plain", "--data", "ASK {}", &server.url("/query")]);
    assert_eq!(r.status, 415);
    let utf16 = "Content-Type: application/sparql-query; charset=UTF-16";
    let r = curl(&["-H", utf16, "--data", "ASK {}", &server.url("/query")]);
    assert_eq!(r.status, 415);
    assert!(r.body.contains("UTF-8"), "{}", r.body);
    let utf8 = "Content-Type: application/sparql-query; charset=utf-8";
    assert_eq!(curl(&["-H", utf8, "--data", "ASK {}", &server.url("/query")]).status, 200);
    let r = curl(&["--data", "query=ASK{}&query=ASK{}", &server.url("/query")]);
    assert_eq!(r.status, 400);
    let r = curl(&["-X", "DELETE", &server.url("/query")]);
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, POST"));
    assert_eq!(curl(&[&server.url("/nope")]).status, 404);
    let r = curl(&[
        "--data-urlencode",
        "query=SELECT * { SERVICE <http://example.org/> { ?s ?p ?o } }",
        &server.url("/query"),
    ]);
    assert_eq!(r.status, 403, "{}", r.body);
    let r = curl(&[
        "--data-urlencode",
        "default-graph-uri=not an iri",
        "--data-urlencode",
        "query=ASK {}",
        &server.url("/query"),
    ]);
    assert_eq!(r.status, 400);
}

#[test]
fn cors_answers_the_origins_it_was_given_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let app = "https://app.example.org";
    let server = Server::start(&store, &["--cors", app]);
    let ask = |origin: &str| {
        curl(&["-H", &format!("Origin: {origin}"), "--data-urlencode", "query=ASK {}", &server.url("/query")])
    };
    let allowed = ask(app);
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.header("access-control-allow-origin"), Some(app));
    assert_eq!(allowed.header("vary"), Some("Origin"));
    let other = ask("https://elsewhere.example");
    assert_eq!(other.status, 200, "CORS decides what a browser may read, not what the server answers");
    assert_eq!(other.header("access-control-allow-origin"), None);
    // The preflight of a Graph Store PUT from the allowed origin.
    let preflight = |origin: &str| {
        curl(&[
            "-X",
            "OPTIONS",
            "-H",
            &format!("Origin: {origin}"),
            "-H",
            "Access-Control-Request-Method: PUT",
            &server.url("/store?default"),
        ])
    };
    let pre = preflight(app);
    assert_eq!(pre.status, 204);
    assert!(pre
        .header("access-control-allow-methods")
        .is_some_and(|m| m.contains("PUT") && m.contains("DELETE")));
    assert!(pre.header("access-control-allow-headers").is_some_and(|h| h.contains("Authorization")));
    assert_eq!(preflight("https://elsewhere.example").header("access-control-allow-methods"), None);
    drop(server);
    // `--cors '*'`: any origin, answered with `*`.
    let server = Server::start(&store, &["--cors", "*"]);
    let any = curl(&["-H", "Origin: https://anyone.example", &server.url("/health")]);
    assert_eq!(any.header("access-control-allow-origin"), Some("*"));
}

#[test]
fn a_read_only_server_refuses_updates_and_describes_itself() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &[]);
    let r = update(&server, "INSERT DATA { <http://ex.org/a> <http://ex.org/b> 1 }", &[]);
    assert_eq!(r.status, 403);
    assert!(r.body.contains("--write"), "{}", r.body);
    assert_eq!(count(&server), 5);
    let sd = curl(&[&server.url("/query")]);
    assert_eq!(sd.status, 200);
    assert!(sd.body.contains("sd:SPARQL11Query") && !sd.body.contains("sd:SPARQL11Update"), "{}", sd.body);
    let health = curl(&[&server.url("/health")]);
    assert!(
        health.body.contains("\"version\":\"v1\"") && health.body.contains("\"base_quads\":5"),
        "{}",
        health.body
    );
    let page = curl(&[&server.url("/")]);
    assert!(page.body.contains("<form") && !page.body.contains("http://") && !page.body.contains("https://"));
}

#[test]
fn updates_commit_and_other_writers_and_compaction_show_up_at_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--write"]);
    let r = update(&server, "INSERT DATA { <http://ex.org/a> <http://ex.org/b> 1 }", &[]);
    assert_eq!(r.status, 204, "{}", r.body);
    let r = curl(&[
        "--data-urlencode",
        "update=INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/a> <http://ex.org/b> 2 } }",
        &server.url("/update"),
    ]);
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(count(&server), 7);
    // Another process appends: the server does not hold the writer lock.
    let cli = Command::new(BIN)
        .arg("update")
        .arg(&store)
        .args(["-e", "DELETE DATA { <http://ex.org/a> <http://ex.org/b> 1 }"])
        .output()
        .unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    assert_eq!(count(&server), 6);
    // Compaction by the CLI flips `current`; the same answers from v2.
    let compact = Command::new(BIN).arg("compact").arg(&store).output().unwrap();
    assert!(compact.status.success(), "{}", String::from_utf8_lossy(&compact.stderr));
    assert_eq!(count(&server), 6);
    assert!(curl(&[&server.url("/health")]).body.contains("\"version\":\"v2\""));
    // USING from the protocol, and its conflict with the request's own.
    let url = format!("{}?using-graph-uri=http%3A%2F%2Fex.org%2Fg", server.url("/update"));
    let with_using =
        |text: &str| curl(&["-H", "Content-Type: application/sparql-update", "--data-binary", text, &url]);
    let r =
        with_using("INSERT { <http://ex.org/copy> <http://ex.org/b> ?o } WHERE { ?s <http://ex.org/b> ?o }");
    assert_eq!(r.status, 204, "{}", r.body);
    let copied = curl(&[
        "-H",
        "Accept: text/csv",
        "--data-urlencode",
        "query=SELECT ?o { <http://ex.org/copy> ?p ?o }",
        &server.url("/query"),
    ]);
    assert_eq!(
        copied.body.lines().skip(1).collect::<Vec<_>>(),
        ["2"],
        "only the USING graph's value is copied"
    );
    let r = with_using(
        "INSERT { <http://ex.org/x> <http://ex.org/b> ?o } USING <http://ex.org/g> WHERE { ?s ?p ?o }",
    );
    assert_eq!(r.status, 400, "{}", r.body);
}

#[test]
fn load_and_service_cannot_reach_files_or_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--write"]);
    for text in [
        "LOAD <file:///etc/passwd>",
        "LOAD SILENT <file:///etc/passwd> INTO GRAPH <http://ex.org/p>",
        "LOAD <http://example.org/data.nt>",
        "INSERT { ?s ?p ?o } WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
    ] {
        let r = update(&server, text, &[]);
        assert_eq!(r.status, 403, "{text}: {}", r.body);
    }
    assert_eq!(count(&server), 5, "nothing was appended");
    let r = curl(&[
        "-H",
        "Accept: text/csv",
        "--data-urlencode",
        "query=SELECT ?o { ?s ?p ?o FILTER(CONTAINS(STR(?o), \"root:\")) }",
        &server.url("/query"),
    ]);
    assert_eq!(r.body.trim(), "o");
}

#[test]
fn allow_load_reads_files_under_its_directory_and_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let allowed = dir.path().join("loadable");
    std::fs::create_dir(&allowed).unwrap();
    std::fs::write(allowed.join("extra.nt"), "<http://ex.org/l> <http://ex.org/p> \"loaded\" .\n").unwrap();
    std::fs::write(dir.path().join("outside.nt"), "<http://ex.org/o> <http://ex.org/p> \"secret\" .\n")
        .unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.nt"), allowed.join("link.nt")).unwrap();
    let refused =
        Command::new(BIN).arg("serve").arg(&store).arg("--allow-load").arg(&allowed).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "--allow-load needs --write");
    let server = Server::start(&store, &["--write", "--allow-load", allowed.to_str().unwrap()]);
    let canonical = allowed.canonicalize().unwrap();
    let iri = |p: &Path| format!("<file://{}>", p.display());
    for (path, status) in [
        (dir.path().join("outside.nt"), 403),
        (canonical.join("../outside.nt"), 403),
        (canonical.join("link.nt"), 403),
        (canonical.join("missing.nt"), 400),
        (PathBuf::from("/etc/passwd"), 403),
    ] {
        let text = format!("LOAD {} INTO GRAPH <http://ex.org/loaded>", iri(&path));
        let r = update(&server, &text, &[]);
        assert_eq!(r.status, status, "{text}: {}", r.body);
    }
    assert_eq!(count(&server), 5, "nothing was appended");
    let r = update(
        &server,
        &format!("LOAD {} INTO GRAPH <http://ex.org/loaded>", iri(&canonical.join("extra.nt"))),
        &[],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(count(&server), 6);
    assert_eq!(
        count_at(
            &server.url("/query"),
            "SELECT (COUNT(*) AS ?n) { GRAPH <http://ex.org/loaded> { ?s ?p \"loaded\" } }"
        ),
        1
    );
}

#[test]
fn writes_need_the_token_when_one_is_set_and_beyond_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let refused =
        Command::new(BIN).arg("serve").arg(&store).args(["--bind", "0.0.0.0:0", "--write"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--token-file"));
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    let server = Server::start(&store, &["--write", "--token-file", token.to_str().unwrap()]);
    let insert = "INSERT DATA { <http://ex.org/a> <http://ex.org/b> 1 }";
    let r = update(&server, insert, &[]);
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").is_some());
    assert_eq!(update(&server, insert, &["-H", "Authorization: Bearer wrong-token!"]).status, 401);
    assert_eq!(update(&server, insert, &["-H", "Authorization: Bearer s3cret-token"]).status, 204);
    assert_eq!(count(&server), 6, "reads need no token");
}

#[test]
fn max_rows_cuts_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--max-rows", "3", "--union-default-graph"]);
    let all = "query=SELECT * { ?s ?p ?o }";
    let r = curl(&["-H", "Accept: text/csv", "--data-urlencode", all, &server.url("/query")]);
    assert_eq!(r.status, 200, "a cut result is a 200 (206 answers Range requests)");
    assert_eq!(r.header("cottas-truncated"), Some("max-rows=3"));
    assert_eq!(r.body.lines().count(), 4, "a header line and three rows: {}", r.body);
    let r = curl(&[
        "-H",
        "Accept: text/csv",
        "--data-urlencode",
        "query=SELECT * { ?s ?p ?o } LIMIT 3",
        &server.url("/query"),
    ]);
    assert_eq!(r.status, 200, "exactly N rows is not a cut");
    assert_eq!(r.header("cottas-truncated"), None);
    let description = curl(&[&server.url("/query")]);
    assert!(description.body.contains("Cottas-Truncated: max-rows=3"), "{}", description.body);
}

#[test]
fn the_timeout_cancels_the_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), 40_000);
    let server = Server::start(&store, &["--timeout", "1"]);
    // 1.6 billion joined rows: the evaluation reads the store as it goes,
    // and spareval stops at its next read once the token is cancelled.
    // (Without the FILTER the count is `sparql::analytic`'s, instant.)
    let slow = "query=SELECT (COUNT(*) AS ?n) { ?s ?p ?o . ?s2 ?p ?o2 FILTER(?o != ?o2) }";
    let started = Instant::now();
    let r = curl(&["--data-urlencode", slow, &server.url("/query")]);
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("timed out after 1.0s"), "{}", r.body);
    assert!(started.elapsed() < Duration::from_secs(20), "the timeout stopped the work");
    // No work is left running: the process uses no CPU once answered.
    let busy = cpu_ticks(server.child.id());
    std::thread::sleep(Duration::from_secs(1));
    let idle = cpu_ticks(server.child.id()) - busy;
    assert!(idle < 30, "{idle} clock ticks of CPU in the second after the timeout");
    assert_eq!(curl(&["--data-urlencode", "query=ASK {}", &server.url("/query")]).status, 200);
    // A billion rows made in memory from three VALUES tables: spareval never
    // reads the store, so the token is looked at between rows. The result
    // streams, so the timeout cuts it (curl: exit 18, a partial transfer).
    let values = |v: &str| {
        format!("VALUES ?{v} {{ {} }}", (0..1000).map(|i| i.to_string()).collect::<Vec<_>>().join(" "))
    };
    let product = format!("query=SELECT * {{ {} {} {} }}", values("a"), values("b"), values("c"));
    let started = Instant::now();
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "--max-time",
            "60",
            "--data-urlencode",
            &product,
            &server.url("/query"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(18), "the stream is cut, not completed");
    assert!(started.elapsed() < Duration::from_secs(20), "the timeout stopped the rows");
    let busy = cpu_ticks(server.child.id());
    std::thread::sleep(Duration::from_secs(1));
    let idle = cpu_ticks(server.child.id()) - busy;
    assert!(idle < 30, "{idle} clock ticks of CPU in the second after the cut");
}

/// User + system CPU of a process, in clock ticks (`/proc/PID/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn hostile_requests_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--write", "--max-body", "1K"]);
    // A body larger than --max-body is refused without being read.
    let big = format!("INSERT DATA {{ <http://ex.org/a> <http://ex.org/b> \"{}\" }}", "x".repeat(4096));
    let r = update(&server, &big, &[]);
    assert_eq!(r.status, 413, "{}", r.body);
    // A declared length of 1 GB is refused before a byte of it arrives.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "POST /update HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/sparql-update\r\nContent-Length: 1000000000\r\n\r\n").unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 413");
    // Headers past the limit, and garbage, get an answer, not a hang.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(s, "GET /query HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(64 << 10));
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    assert!(
        answer.starts_with(b"HTTP/1.1 4"),
        "{:?}",
        String::from_utf8_lossy(&answer[..answer.len().min(80)])
    );
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"\x00\x01 not http at all\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    assert!(answer.starts_with(b"HTTP/1.1 400"), "{:?}", String::from_utf8_lossy(&answer));
    // A body that is not UTF-8 is named as such, not misread.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = b"ASK { \"\xff\xfe\" }";
    write!(s, "POST /query HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/sparql-query\r\nContent-Length: {}\r\n\r\n", body.len()).unwrap();
    s.write_all(body).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400") && answer.contains("not UTF-8 (at byte 7)"), "{answer}");
    assert_eq!(count(&server), 5);
}

/// A store of `n` quads `<s_i> <p> "value number i"`.
fn numbered_store(dir: &Path, n: usize) -> PathBuf {
    let store = dir.join("big");
    let nq = dir.join("big.nq");
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!("<http://ex.org/s{i}> <http://ex.org/p> \"value number {i}\" .\n"));
    }
    std::fs::write(&nq, text).unwrap();
    assert!(Command::new(BIN)
        .args(["import", "-q", "--out"])
        .arg(&store)
        .arg(&nq)
        .status()
        .unwrap()
        .success());
    store
}

#[test]
fn a_large_result_streams_and_sigterm_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), 40_000);
    let server = Server::start(&store, &[]);
    let r = curl(&[
        "-H",
        "Accept: text/tab-separated-values",
        "--data-urlencode",
        "query=SELECT * { ?s ?p ?o }",
        &server.url("/query"),
    ]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"), "larger than a piece: streamed");
    assert_eq!(r.body.lines().count(), 40_001);
    // An HTTP/1.0 client cannot read chunks: the same result, ended by closing.
    let mut s = connect(&server);
    let query = "SELECT%20*%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D";
    write!(
        s.get_mut(),
        "GET /query?query={query} HTTP/1.0\r\nHost: localhost\r\nAccept: text/tab-separated-values\r\n\r\n"
    )
    .unwrap();
    let answer = until_closed(&mut s);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") && !head.to_ascii_lowercase().contains("transfer-encoding"),
        "{head}"
    );
    assert_eq!(body.lines().count(), 40_001);
    // An HTTP/1.1 client gets it in chunks and keeps the connection.
    let mut s = connect(&server);
    let get = format!(
        "GET /query?query={query} HTTP/1.1\r\nHost: localhost\r\nAccept: text/tab-separated-values\r\n\r\n"
    );
    for _ in 0..2 {
        s.get_mut().write_all(get.as_bytes()).unwrap();
        let (status, head, body) = read_response(&mut s);
        assert!(status == 200 && head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
        assert_eq!(body.iter().filter(|&&b| b == b'\n').count(), 40_001);
    }
    let status = server.stop();
    assert_eq!(status.code(), Some(0), "SIGTERM ends the server with status 0");
}

#[test]
fn sigterm_refuses_new_connections_and_lets_a_request_in_flight_finish() {
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), 500);
    let mut server = Server::start(&store, &[]);
    // 250,000 rows (22 MB): far more than the socket buffers hold, so the
    // server is still writing while this client has read only the head.
    let query = "SELECT * { ?s ?p ?o . ?a ?b ?c }".replace(' ', "%20").replace('?', "%3F");
    let mut slow = connect(&server);
    write!(slow.get_mut(), "GET /query?query={query} HTTP/1.1\r\nHost: localhost\r\nAccept: text/tab-separated-values\r\nConnection: close\r\n\r\n").unwrap();
    let mut head = [0u8; 12];
    slow.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    let waited = Instant::now();
    while TcpStream::connect(("127.0.0.1", server.port)).is_ok() {
        assert!(waited.elapsed() < Duration::from_secs(10), "still accepting connections after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rest = until_closed(&mut slow);
    assert!(
        rest.ends_with("\r\n0\r\n\r\n"),
        "the request in flight was cut: ...{:?}",
        &rest[rest.len().saturating_sub(40)..]
    );
    assert!(rest.matches('\n').count() > 250_000, "every row arrived");
    assert_eq!(server.child.wait().unwrap().code(), Some(0));
}

const WRITTEN: &str = "SELECT (COUNT(*) AS ?n) { ?s <http://ex.org/w> ?o }";

/// The quads `write_one` and `write_until_refused` committed.
fn written(server: &Server) -> u64 {
    count_at(&server.url("/query"), WRITTEN)
}

/// The one-quad update numbered `i`.
fn insert_text(i: u64) -> String {
    format!("INSERT DATA {{ <http://ex.org/k{i}> <http://ex.org/w> {i} }}")
}

/// `kill -9` while a client commits, restart, repeat: every update that was
/// answered 204 is there, at most the one in flight is extra, and the log
/// verifies clean. 5 rounds here; `COTTAS_SERVE_KILLS=100` for a long run.
#[test]
fn every_answered_update_survives_kill_dash_nine_in_the_middle_of_writing() {
    let rounds: u64 = std::env::var("COTTAS_SERVE_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let mut rng = common::Rng(0x5e7e);
    let mut committed = 0;
    for round in 0..rounds {
        let server = Server::start(&store, &["--write"]);
        let before = written(&server);
        assert!(
            before == committed || before == committed + 1,
            "round {round}: {before} after {committed} answered"
        );
        let port = server.port;
        let writer = std::thread::spawn(move || {
            write_until_refused(port, before + 1_000_000 * (round + 1), insert_text).len() as u64
        });
        std::thread::sleep(Duration::from_millis(100 + rng.next() % 400));
        drop(server); // SIGKILL, whatever it was doing
        committed = before + writer.join().unwrap();
    }
    let server = Server::start(&store, &[]);
    let after = written(&server);
    assert!(after == committed || after == committed + 1, "{after} quads after {committed} answered inserts");
    drop(server);
    let verify = Command::new(BIN).arg("verify").arg(&store).output().unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
}

/// Eight readers and a writer against a running server while the CLI
/// compacts the store: no request fails, no reader's count goes back, and
/// every answered update is there at the end. A few seconds on 20,000 quads
/// here; `COTTAS_SERVE_SOAK=1` runs 60 s on 1,000,000.
#[test]
fn eight_readers_and_a_writer_through_a_compaction_lose_nothing() {
    let soak = std::env::var("COTTAS_SERVE_SOAK").is_ok_and(|v| v == "1");
    let (quads, seconds) = if soak { (1_000_000, 60) } else { (20_000, 4) };
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), quads);
    let server = Server::start(&store, &["--write"]);
    let port = server.port;
    let until = Instant::now() + Duration::from_secs(seconds);
    let readers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let url = format!("http://127.0.0.1:{port}/query");
                let mut seen = Vec::new();
                while Instant::now() < until {
                    seen.push(count_at(&url, WRITTEN));
                }
                seen
            })
        })
        .collect();
    let writer = std::thread::spawn(move || {
        let mut answered = 0;
        while Instant::now() < until {
            answered += write_one(port, answered);
        }
        answered
    });
    std::thread::sleep(Duration::from_secs(seconds / 2));
    let compact = Command::new(BIN).arg("compact").arg(&store).output().unwrap();
    assert!(compact.status.success(), "{}", String::from_utf8_lossy(&compact.stderr));
    let answered = writer.join().unwrap();
    for reader in readers {
        let seen = reader.join().unwrap();
        assert!(!seen.is_empty());
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "a count went back: {seen:?}");
    }
    assert!(answered > 0);
    assert_eq!(written(&server), answered, "every answered update is there");
    assert!(curl(&[&server.url("/health")]).body.contains("\"version\":\"v2\""));
}

/// One update (`<k_i> <w> i`), which must be answered 204; returns 1.
fn write_one(port: u16, i: u64) -> u64 {
    let url = format!("http://127.0.0.1:{port}/update");
    let text = insert_text(i);
    let r = curl(&["-H", "Content-Type: application/sparql-update", "--data-binary", &text, &url]);
    assert_eq!(r.status, 204, "{}", r.body);
    1
}

/// `log_folds` from `/health`: how many times the server read and folded
/// the whole log.
fn log_folds(server: &Server) -> u64 {
    let body = curl(&[&server.url("/health")]).body;
    let field = body.split("\"log_folds\":").nth(1).unwrap_or_else(|| panic!("{body}"));
    field.trim_end_matches(['}', '\n']).parse().unwrap_or_else(|_| panic!("{body}"))
}

/// Eight clients writing at once over a pending log: the updates take turns
/// in the process, each taking over the writer the one before it left, so
/// every one commits, each client reads its own write right after its 204,
/// and neither the writes nor the reads after them read the log again (they
/// did, one whole fold per concurrent write, before the turns). A write by
/// another process is read once.
#[test]
fn concurrent_updates_take_turns_and_never_read_the_log_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let pending =
        Command::new(BIN).arg("update").arg(&store).args(["-e", &insert_text(1_000)]).output().unwrap();
    assert!(pending.status.success(), "{}", String::from_utf8_lossy(&pending.stderr));
    let server = Server::start(&store, &["--write"]);
    assert_eq!(log_folds(&server), 1, "start-up folds the pending log once");
    let port = server.port;
    let writers: Vec<_> = (0..8u64)
        .map(|k| {
            std::thread::spawn(move || {
                for i in 0..5 {
                    let n = k * 100 + i;
                    write_one(port, n);
                    let ask = format!("ASK {{ <http://ex.org/k{n}> <http://ex.org/w> {n} }}");
                    let r = curl(&[
                        "-H",
                        "Accept: text/csv",
                        "--data-urlencode",
                        &format!("query={ask}"),
                        &format!("http://127.0.0.1:{port}/query"),
                    ]);
                    assert!(r.body.contains("true"), "client {k} does not see its write {n}: {}", r.body);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(written(&server), 41);
    assert_eq!(log_folds(&server), 1, "a write or a read after one folded the log again");
    let other =
        Command::new(BIN).arg("update").arg(&store).args(["-e", &insert_text(2_000)]).output().unwrap();
    assert!(other.status.success());
    assert_eq!(written(&server), 42, "another process's write is seen");
    assert_eq!(log_folds(&server), 2, "and read once");
    write_one(port, 3_000);
    assert_eq!(written(&server), 43);
    assert_eq!(log_folds(&server), 2, "the next write takes over the readers' fold");
}

#[test]
fn sparqlwrapper_and_rdflib_use_the_endpoint_like_any_sparql_server() {
    let Some(python) = common::venv_python("SPARQLWrapper, rdflib") else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &["--write"]);
    let out = Command::new(python)
        .arg(common::repo().join("tests/clients/sparql_clients.py"))
        .arg(server.url(""))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("SPARQLWrapper: ok") && stdout.contains("rdflib SPARQLUpdateStore: ok"),
        "{stdout}"
    );
}

fn quad_set<E: std::fmt::Debug>(quads: impl Iterator<Item = Result<oxrdf::Quad, E>>) -> BTreeSet<String> {
    quads.map(|q| q.unwrap().to_string()).collect()
}

#[test]
fn direct_graph_paths_name_graphs_by_the_endpoint_url() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &["--write"]);
    let direct = server.url("/store/people/alice");
    let turtle =
        ["-H", "Content-Type: text/turtle", "--data-binary", "<http://ex.org/a> <http://ex.org/b> 1 ."];
    assert_eq!(curl(&[&direct]).status, 404);
    let put: Vec<&str> = ["-X", "PUT"].iter().chain(&turtle).copied().chain([direct.as_str()]).collect();
    assert_eq!(curl(&put).status, 201);
    // The same graph through indirect identification, by its full IRI.
    let iri = format!("http://127.0.0.1:{}/store/people/alice", server.port);
    let q = format!("SELECT (COUNT(*) AS ?n) {{ GRAPH <{iri}> {{ ?s ?p ?o }} }}");
    assert_eq!(count_at(&server.url("/query"), &q), 1);
    let post: Vec<&str> = turtle.iter().copied().chain([direct.as_str()]).collect();
    assert_eq!(curl(&post).status, 204, "POST adds to the graph");
    assert_eq!(curl(&["-I", &direct]).status, 200);
    // POST of triples to /store creates a graph whose Location is a direct path.
    let created = curl(&turtle.iter().copied().chain([server.url("/store").as_str()]).collect::<Vec<_>>());
    assert_eq!(created.status, 201);
    let location = created.header("location").unwrap().to_owned();
    assert!(location.starts_with(&server.url("/store/")), "{location}");
    assert_eq!(curl(&[&location]).status, 200, "the Location answers GET");
    for bad in ["/store/", "/store/a//b", "/store/a/./b"] {
        let r = curl(&["--path-as-is", &server.url(bad)]);
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    // An HTML-form upload of two files (curl -F builds multipart/form-data).
    let (a, b) = (dir.path().join("a.ttl"), dir.path().join("b.nt"));
    std::fs::write(&a, "<http://ex.org/a> <http://ex.org/b> 2 .").unwrap();
    std::fs::write(&b, "<http://ex.org/a> <http://ex.org/b> \"3\" .").unwrap();
    let fa = format!("a=@{};type=text/turtle", a.display());
    let fb = format!("b=@{};type=application/n-triples", b.display());
    assert_eq!(curl(&["-F", &fa, "-F", &fb, &direct]).status, 204);
    let q = format!("SELECT (COUNT(*) AS ?n) {{ GRAPH <{iri}> {{ ?s ?p ?o }} }}");
    assert_eq!(count_at(&server.url("/query"), &q), 3, "1 from PUT, the POST's again, 2 from the form");
    let fc = format!("c=@{};type=image/png", a.display());
    let r = curl(&["-F", &fa, "-F", &fc, &direct]);
    assert_eq!(r.status, 415, "{}", r.body);
    assert!(r.body.contains("multipart part \"a.ttl\"") && r.body.contains("image/png"), "{}", r.body);
    assert_eq!(count_at(&server.url("/query"), &q), 3, "a refused upload writes no part");
    let cut = ["-H", "Content-Type: multipart/form-data; boundary=XyZ", "--data-binary", "--XyZ\r\n\r\nx"];
    let r = curl(&cut.iter().copied().chain([direct.as_str()]).collect::<Vec<_>>());
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("multipart/form-data body") && r.body.contains("incomplete"), "{}", r.body);
    let both = server.url("/store/people/alice?default");
    assert_eq!(curl(&[&both]).status, 400);
    assert_eq!(curl(&["-X", "DELETE", &direct]).status, 204);
    assert_eq!(curl(&[&direct]).status, 404);
}

#[test]
fn the_graph_store_protocol_reads_and_writes_graphs_with_its_status_codes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &["--write"]);
    let g = server.url("/store?graph=http%3A%2F%2Fex.org%2Fg");
    let put = |body: &str| curl(&["-X", "PUT", "-H", "Content-Type: text/turtle", "--data-binary", body, &g]);
    assert_eq!(curl(&[&g]).status, 404);
    assert_eq!(curl(&["-I", &g]).status, 404);
    assert_eq!(put("<http://ex.org/a> <http://ex.org/b> 1, 2 .").status, 201, "a new graph");
    assert_eq!(put("<http://ex.org/a> <http://ex.org/b> 3 .").status, 204, "replaced");
    let r = curl(&["-H", "Accept: application/n-triples", &g]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body.trim(),
        "<http://ex.org/a> <http://ex.org/b> \"3\"^^<http://www.w3.org/2001/XMLSchema#integer> ."
    );
    let head = curl(&["-I", &g]);
    assert_eq!((head.status, head.header("content-type")), (200, Some("application/n-triples")));
    let post = curl(&[
        "-H",
        "Content-Type: application/n-triples",
        "--data-binary",
        "<http://ex.org/a> <http://ex.org/b> \"x\" .",
        &g,
    ]);
    assert_eq!(post.status, 204);
    assert_eq!(curl(&[&g]).body.lines().count(), 2);
    // The default graph, and the whole dataset as N-Quads.
    let default = curl(&[&server.url("/store?default")]);
    assert_eq!(
        default.body.trim(),
        "<https://example.org/default-subject> <https://example.org/status> \"default\" ."
    );
    let all = curl(&[&server.url("/store")]);
    assert_eq!(all.header("content-type"), Some("application/n-quads"));
    assert_eq!(all.body.lines().count(), 7);
    assert!(all.body.contains("<http://ex.org/a> <http://ex.org/b> \"x\" <http://ex.org/g> ."));
    // The same dataset as TriG: the same quads.
    let trig = curl(&["-H", "Accept: application/trig", &server.url("/store")]);
    assert_eq!(trig.header("content-type"), Some("application/trig"));
    assert!(trig.body.contains(" {\n"), "graph blocks: {}", trig.body);
    assert_eq!(
        quad_set(oxttl::TriGParser::new().for_slice(&trig.body)),
        quad_set(oxttl::NQuadsParser::new().for_slice(&all.body))
    );
    let quads = "<http://ex.org/q> <http://ex.org/b> \"q\" <http://ex.org/g2> .\n";
    let r = curl(&["-H", "Content-Type: application/n-quads", "--data-binary", quads, &server.url("/store")]);
    assert_eq!(r.status, 204);
    assert_eq!(curl(&[&server.url("/store?graph=http%3A%2F%2Fex.org%2Fg2")]).status, 200);
    // Quads into one graph, a bad body, DELETE twice.
    let r = curl(&["-X", "PUT", "-H", "Content-Type: application/n-quads", "--data-binary", quads, &g]);
    assert_eq!(r.status, 415);
    let before = curl(&[&g]).body;
    let r = curl(&["-X", "PUT", "-H", "Content-Type: text/turtle", "--data-binary", "<a> <b> .", &g]);
    assert_eq!(r.status, 400);
    assert!(r.body.contains("does not parse as text/turtle"), "{}", r.body);
    assert_eq!(curl(&[&g]).body, before, "a refused PUT writes nothing");
    // Paths are not files: traversal finds no route, and a file IRI names a graph.
    let traversal = curl(&["--path-as-is", &server.url("/store/../../etc/passwd")]);
    assert_eq!(traversal.status, 400, "a graph path with `..` segments: {}", traversal.body);
    assert_eq!(curl(&["--path-as-is", &server.url("/../etc/passwd")]).status, 404);
    assert_eq!(curl(&[&server.url("/store?graph=file%3A%2F%2F%2Fetc%2Fpasswd")]).status, 404);
    assert_eq!(curl(&["-X", "DELETE", &g]).status, 204);
    assert_eq!(curl(&["-X", "DELETE", &g]).status, 404);
    assert_eq!(count(&server), 6);
    assert_eq!(
        curl(&["-X", "PUT", "-H", "Content-Type: text/turtle", "--data-binary", "", &server.url("/store")])
            .status,
        405
    );
}

#[test]
fn readers_never_see_a_count_go_down_or_a_torn_batch_while_writers_commit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &["--write"]);
    let port = server.port;
    let readers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let url = format!("http://127.0.0.1:{port}/query");
                let query = "SELECT (COUNT(*) AS ?n) { ?s <http://ex.org/pair> ?o }";
                let seen: Vec<u64> = (0..30).map(|_| count_at(&url, query)).collect();
                seen
            })
        })
        .collect();
    // Each request inserts two quads in one batch: a reader sees both or neither.
    for i in 0..30 {
        let text = format!(
            "INSERT DATA {{ <http://ex.org/s{i}> <http://ex.org/pair> 1 . <http://ex.org/t{i}> <http://ex.org/pair> 2 }}"
        );
        assert_eq!(update(&server, &text, &[]).status, 204);
    }
    for reader in readers {
        let seen = reader.join().unwrap();
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "a count went down: {seen:?}");
        assert!(seen.iter().all(|n| n % 2 == 0), "half a batch was visible: {seen:?}");
    }
    assert_eq!(count(&server), 65);
}

#[test]
fn requests_built_to_exhaust_the_stack_answer_400_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &["--write"]);
    let depth = 50_000;
    let nested = format!("ASK {{ FILTER({}1{}) }}", "(".repeat(depth), ")".repeat(depth));
    let groups = vec!["{ ?s ?p ?o }"; 20_000].join(" UNION ");
    let unions = format!("SELECT (COUNT(*) AS ?n) WHERE {{ {groups} }}");
    let update = format!("INSERT {{ ?s ?p ?o }} WHERE {{ {groups} }}");
    let file = dir.path().join("request.rq");
    for (route, content_type, text) in [
        ("/query", "application/sparql-query", &nested),
        ("/query", "application/sparql-query", &unions),
        ("/update", "application/sparql-update", &update),
    ] {
        std::fs::write(&file, text).unwrap();
        let body = format!("@{}", file.display());
        let ct = format!("Content-Type: {content_type}");
        let r = curl(&["-H", &ct, "--data-binary", &body, &server.url(route)]);
        assert_eq!(r.status, 400, "{route}: {}", r.body);
        assert!(r.body.contains("nested more than"), "{}", r.body);
        assert_eq!(curl(&[&server.url("/health")]).status, 200);
    }
    assert_eq!(count(&server), 5);
}

#[test]
fn a_panic_in_one_request_costs_that_request_a_500_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "injected-panic-marker";
    let env = [("COTTAS_TUI_DEBUG_PANIC", marker)];
    let server = Server::start_with_env(&common::sample_store(dir.path()), &["--write"], &env);
    let query = format!("ASK {{ ?s ?p \"{marker}\" }}");
    let r = curl(&["--data-urlencode", &format!("query={query}"), &server.url("/query")]);
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(r.body.contains("internal error"), "{}", r.body);
    let r =
        update(&server, &format!("INSERT DATA {{ <http://ex.org/a> <http://ex.org/b> \"{marker}\" }}"), &[]);
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(r.body.contains("nothing was appended"), "{}", r.body);
    // The server, its workers and the store carry on.
    assert_eq!(curl(&[&server.url("/health")]).status, 200);
    for _ in 0..3 {
        assert_eq!(count(&server), 5);
    }
    assert_eq!(update(&server, &insert_text(1), &[]).status, 204);
    assert_eq!(count(&server), 6);
}

/// Small queries run on the connection's own thread (default stack) rather
/// than a large-stack worker. Queries at the bounds of "small" still answer,
/// and one just past each goes to a worker and answers too: a stack
/// overflow would abort the server and fail every later request.
#[test]
fn queries_at_the_bounds_of_the_connection_thread_answer() {
    use cottas_tui::sparql::limits::{SMALL_ALGEBRA_DEPTH, SMALL_TEXT_BYTES, SMALL_TEXT_NESTING};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&common::sample_store(dir.path()), &[]);
    let brackets = |n: usize| format!("ASK {{ FILTER({}1{}) }}", "(".repeat(n - 2), ")".repeat(n - 2));
    let unions = |n: usize| format!("SELECT * {{ {} }}", vec!["{ ?s ?p ?o }"; n].join(" UNION "));
    let optionals = |n: usize| format!("SELECT * {{ ?s ?p ?o {} }}", "OPTIONAL { ?s ?p ?o } ".repeat(n));
    let path = |n: usize| format!("ASK {{ ?s {} ?o }}", vec!["<https://example.org/knows>"; n].join("/"));
    let sum = |n: usize| format!("SELECT ({} AS ?x) {{}}", vec!["1"; n].join("+"));
    let padded = |n: usize| format!("ASK {{}} #{}", "x".repeat(n));
    let inside = SMALL_ALGEBRA_DEPTH - 4;
    let past = SMALL_ALGEBRA_DEPTH + 1;
    for query in [
        brackets(SMALL_TEXT_NESTING),
        brackets(SMALL_TEXT_NESTING + 1),
        unions(inside),
        unions(past),
        optionals(inside),
        optionals(past),
        path(inside),
        path(past),
        sum(inside),
        sum(SMALL_TEXT_BYTES / 2),
        padded(SMALL_TEXT_BYTES - 12),
        padded(SMALL_TEXT_BYTES),
    ] {
        let r = curl(&["--data-urlencode", &format!("query={query}"), &server.url("/query")]);
        assert_eq!(r.status, 200, "{}: {}", &query[..query.len().min(80)], r.body);
        assert_eq!(curl(&[&server.url("/health")]).status, 200);
    }
}

/// The endpoint and `cottas-tui query` agree on the same queries over the
/// same store (sorted TSV rows).
#[test]
fn the_endpoint_answers_as_the_cli_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), 3_000);
    let extra = "INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/s1> <http://ex.org/q> \"x\"@en } } ; DELETE DATA { <http://ex.org/s2> <http://ex.org/p> \"value number 2\" }";
    assert!(Command::new(BIN).arg("update").arg(&store).args(["-e", extra]).status().unwrap().success());
    let server = Server::start(&store, &[]);
    for query in [
        "SELECT * { ?s ?p ?o } ORDER BY ?s LIMIT 50",
        "SELECT ?o { <http://ex.org/s1> ?p ?o }",
        "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }",
        "SELECT ?g ?s ?o { GRAPH ?g { ?s ?p ?o } }",
        "SELECT ?s { ?s <http://ex.org/p> ?o FILTER(STRENDS(?o, \"99\")) }",
        "SELECT DISTINCT ?p { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
        "ASK { <http://ex.org/s2> ?p ?o }",
        "SELECT ?s ?o2 { ?s <http://ex.org/p> ?o OPTIONAL { GRAPH ?g { ?s ?q ?o2 } } } ORDER BY ?s LIMIT 5",
        // Starts on the connection thread, outgrows what it may hold there,
        // and is evaluated again by a worker that streams it.
        "SELECT ?s ?o { ?s ?p ?o }",
    ] {
        let (http, cli) = endpoint_and_cli_rows(&server, &store, query);
        assert_eq!(http, cli, "{query}");
    }
}

/// The sorted TSV lines of `query` from the endpoint and from `cottas-tui
/// query` on the same store (which folds the log from disk).
fn endpoint_and_cli_rows(server: &Server, store: &Path, query: &str) -> (Vec<String>, Vec<String>) {
    let cli =
        Command::new(BIN).arg("query").arg(store).args(["--format", "tsv", "-e", query]).output().unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let http = curl(&[
        "-H",
        "Accept: text/tab-separated-values",
        "--data-urlencode",
        &format!("query={query}"),
        &server.url("/query"),
    ]);
    assert_eq!(http.status, 200, "{query}: {}", http.body);
    let rows = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    (rows(&http.body), rows(&String::from_utf8_lossy(&cli.stdout)))
}

/// After each of its own updates the endpoint answers from the writer's fold
/// of the log instead of reading the log again: it must answer exactly as a
/// process that folds the log from disk does, and count the same batches.
#[test]
fn after_its_own_updates_the_endpoint_answers_as_a_fresh_read_of_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), 2_000);
    let server = Server::start(&store, &["--write"]);
    let updates = [
        "INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/s1> <http://ex.org/q> \"x\"@en . <http://ex.org/new> <http://ex.org/p> <http://ex.org/s3> } }",
        "DELETE DATA { <http://ex.org/s2> <http://ex.org/p> \"value number 2\" }",
        // Already in the base: seen once, not twice.
        "INSERT DATA { <http://ex.org/s5> <http://ex.org/p> \"value number 5\" }",
        "DELETE { ?s <http://ex.org/p> ?o } INSERT { ?s <http://ex.org/r> ?o } WHERE { ?s <http://ex.org/p> ?o FILTER(STRENDS(?o, \"7\")) }",
        "INSERT { GRAPH <http://ex.org/g> { ?s <http://ex.org/copy> ?o } } WHERE { ?s <http://ex.org/r> ?o FILTER(STRSTARTS(STR(?s), \"http://ex.org/s1\")) }",
        "CLEAR GRAPH <http://ex.org/g>",
        "INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/s1> <http://ex.org/q> \"y\" } }",
    ];
    let queries = [
        "SELECT ?g ?p ?o { { <http://ex.org/s1> ?p ?o } UNION { GRAPH ?g { <http://ex.org/s1> ?p ?o } } }",
        "SELECT ?g ?s ?p { { ?s ?p <http://ex.org/s3> } UNION { GRAPH ?g { ?s ?p <http://ex.org/s3> } } }",
        "SELECT ?s ?o { ?s <http://ex.org/r> ?o }",
        "SELECT ?g ?s ?p ?o { GRAPH ?g { ?s ?p ?o } }",
        "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
        "ASK { <http://ex.org/s5> <http://ex.org/p> \"value number 5\" }",
    ];
    for (i, text) in updates.iter().enumerate() {
        let r = update(&server, text, &[]);
        assert_eq!(r.status, 204, "{text}: {}", r.body);
        for query in queries {
            let (http, from_disk) = endpoint_and_cli_rows(&server, &store, query);
            assert_eq!(http, from_disk, "after update {i}, {query}");
        }
        // An update that changes nothing appends no batch; the count comes
        // from the disk's own fold.
        let explain =
            Command::new(BIN).arg("query").arg(&store).args(["--explain", "-e", "ASK {}"]).output().unwrap();
        let explained = String::from_utf8_lossy(&explain.stderr).into_owned();
        let batches = explained.split("delta: ").nth(1).and_then(|t| t.split(' ').next()).unwrap();
        let health = curl(&[&server.url("/health")]).body;
        assert!(
            health.contains(&format!("\"visible_batches\":{batches},")),
            "after update {i}: {health} / {explained}"
        );
    }
}

/// One response read off a connection that stays open: status, head and body.
fn read_response(s: &mut std::io::BufReader<TcpStream>) -> (u16, String, Vec<u8>) {
    use std::io::BufRead;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(s.read_line(&mut line).unwrap() > 0, "the connection closed in a head: {head}");
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let status = head[9..12].parse().unwrap();
    let field = |name: &str| {
        head.lines().find_map(|l| {
            l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_owned())
        })
    };
    let mut body = Vec::new();
    if let Some(n) = field("content-length") {
        body.resize(n.parse().unwrap(), 0);
        s.read_exact(&mut body).unwrap();
    } else if field("transfer-encoding").is_some() {
        loop {
            let mut size = String::new();
            s.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0u8; n + 2];
            s.read_exact(&mut chunk).unwrap();
            body.extend_from_slice(&chunk[..n]);
            if n == 0 {
                break;
            }
        }
    }
    (status, head, body)
}

fn connect(server: &Server) -> std::io::BufReader<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    std::io::BufReader::new(s)
}

/// Everything the server sends until it closes the connection.
fn until_closed(s: &mut std::io::BufReader<TcpStream>) -> String {
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    String::from_utf8_lossy(&rest).into_owned()
}

#[test]
fn connections_frame_requests_as_http_1_1_says() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &[]);
    let ask = "ASK { ?s ?p ?o }";

    // Two requests sent at once on one connection get two answers, in order.
    let mut s = connect(&server);
    let get = |q: &str| {
        format!(
            "GET /query?query={} HTTP/1.1\r\nHost: localhost\r\nAccept: text/csv\r\n\r\n",
            q.replace(' ', "%20").replace('<', "%3C").replace('>', "%3E")
        )
    };
    s.get_mut()
        .write_all(format!("{}{}", get(ask), get("ASK { <http://no/such> ?p ?o }")).as_bytes())
        .unwrap();
    let (status, head, body) = read_response(&mut s);
    assert_eq!((status, String::from_utf8_lossy(&body).trim()), (200, "true"), "{head}");
    assert!(head.to_ascii_lowercase().contains("\r\ndate: "), "{head}");
    let (status, _, body) = read_response(&mut s);
    assert_eq!((status, String::from_utf8_lossy(&body).trim()), (200, "false"));

    // A chunked body, with an extension and a trailer, on the same connection.
    let chunked = format!(
        "POST /query HTTP/1.1\r\nHost: localhost\r\nAccept: text/csv\r\nContent-Type: application/sparql-query\r\n\
         Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nASK {{\r\n{:x}\r\n{}\r\n0\r\nX-Trailer: t\r\n\r\n",
        ask.len() - 5,
        &ask[5..]
    );
    s.get_mut().write_all(chunked.as_bytes()).unwrap();
    let (status, head, body) = read_response(&mut s);
    assert_eq!((status, String::from_utf8_lossy(&body).trim()), (200, "true"), "{head}");

    // `Expect: 100-continue`: the interim answer comes before the body is sent.
    let post = format!(
        "POST /query HTTP/1.1\r\nHost: localhost\r\nAccept: text/csv\r\nContent-Type: application/sparql-query\r\n\
         Expect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        ask.len()
    );
    s.get_mut().write_all(post.as_bytes()).unwrap();
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.get_mut().write_all(ask.as_bytes()).unwrap();
    let (status, _, body) = read_response(&mut s);
    assert_eq!((status, String::from_utf8_lossy(&body).trim()), (200, "true"));

    // ... and none when the head alone is refused (a read-only server's
    // update): the client never sends the body, and the connection closes.
    s.get_mut()
        .write_all(b"POST /update HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/sparql-update\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
        .unwrap();
    let (status, head, _) = read_response(&mut s);
    assert_eq!(status, 403, "{head}");
    assert!(head.to_ascii_lowercase().contains("connection: close"), "{head}");
    assert_eq!(until_closed(&mut s), "");

    // HEAD: the head of GET, with its length, and no body.
    let mut s = connect(&server);
    s.get_mut().write_all(b"HEAD /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let rest = until_closed(&mut s);
    let (head, body) = rest.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("content-length: "), "{head}");
    assert_eq!(body, "");

    // HTTP/1.0: one exchange, then the server closes.
    let mut s = connect(&server);
    s.get_mut().write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    assert!(until_closed(&mut s).starts_with("HTTP/1.0 200"));

    // Refused framings, each answered and the connection closed.
    for (request, status) in [
        // Both framings: hyper reads the chunks, answers, and closes.
        ("POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "415"),
        ("POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "400"),
        ("POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: -3\r\n\r\n", "400"),
        ("POST /query HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "501"),
        ("GET /health HTTP/1.1\r\n\r\n", "400"),
        ("GET /health HTTP/1.1\r\nHost: localhost\r\nExpect: the-unexpected\r\n\r\n", "417"),
        ("GET /health HTTP/2.0\r\nHost: localhost\r\n\r\n", "400"),
    ] {
        let mut s = connect(&server);
        s.get_mut().write_all(request.as_bytes()).unwrap();
        let answer = until_closed(&mut s);
        assert!(answer.starts_with(&format!("HTTP/1.1 {status}")), "{request:?} -> {answer}");
    }
    // A chunk size that is not hex is the body's error (400), and closes.
    let mut s = connect(&server);
    s.get_mut()
        .write_all(b"POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/sparql-query\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        .unwrap();
    let answer = until_closed(&mut s);
    assert!(answer.starts_with("HTTP/1.1 400") && answer.contains("chunk size"), "{answer}");
}

/// A server whose stderr reader went away (a supervisor's pipe closed, `2>&1
/// | head`) keeps answering: its request log cannot be written, and that
/// must not take the request's thread (it did: `eprintln!` panics on a
/// broken pipe, and every request was dropped without a response).
#[test]
fn a_server_whose_stderr_is_closed_keeps_answering() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let store = numbered_store(dir.path(), 10);
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(&store)
        .args(["--bind", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line.split("http://").nth(1).and_then(|a| a.split_whitespace().next()).unwrap().to_owned();
    drop(stderr);
    let url = format!("http://{address}/query");
    for _ in 0..5 {
        assert_eq!(count_at(&url, "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"), 10);
    }
    // A request refused before it reaches a route (a malformed head) logs
    // too, and the connection is closed after the answer.
    let mut s = TcpStream::connect(&address).unwrap();
    s.write_all(b"not http at all\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 "), "{answer:?}");
    assert_eq!(count_at(&url, "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"), 10);
    assert!(child.try_wait().unwrap().is_none(), "still running");
    child.kill().unwrap();
    child.wait().unwrap();
}
