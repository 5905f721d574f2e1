//! `cottas-tui serve` as an attacker meets it, through real sockets: writes a
//! web page could forge (cross-site forms, DNS rebinding), clients that
//! hold connections open without finishing a request, request smuggling,
//! too many connections, and SIGTERM in the middle of updates.

mod common;

use common::server::{count_at, curl, write_until_refused, Reply, Server};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The write a forging page would send.
const FORGED: &str = "INSERT DATA { <urn:evil> <urn:p> \"pwned\" }";

const MARK: &str = "SELECT (COUNT(*) AS ?n) { ?s <urn:p> ?o }";

/// How many quads `<… <urn:p> …>` the store holds: the forged writes' mark.
fn marked(server: &Server) -> u64 {
    count_at(&server.url("/query"), MARK)
}

fn form_update(server: &Server, text: &str, headers: &[&str]) -> Reply {
    let mut args = vec!["--data-urlencode".to_owned(), format!("update={text}")];
    for h in headers {
        args.extend(["-H".to_owned(), (*h).to_owned()]);
    }
    args.push(server.url("/update"));
    curl(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_web_page_of_another_origin_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--write", "--cors", "https://app.example.org"]);
    let insert = FORGED;
    // What a hidden form on another site sends, without a preflight.
    let r = form_update(&server, insert, &["Origin: https://evil.example"]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("https://evil.example"), "{}", r.body);
    let r = form_update(&server, insert, &["Origin: null"]);
    assert_eq!(r.status, 403, "a sandboxed page: {}", r.body);
    let r = form_update(&server, insert, &["Sec-Fetch-Site: cross-site"]);
    assert_eq!(r.status, 403, "{}", r.body);
    // A multipart POST to the Graph Store, as a form with a file input.
    let file = dir.path().join("evil.nt");
    std::fs::write(&file, "<urn:evil> <urn:p> \"pwned\" .\n").unwrap();
    let r = curl(&[
        "-H",
        "Origin: https://evil.example",
        "-F",
        &format!("file=@{};type=application/n-triples", file.display()),
        &server.url("/store?default"),
    ]);
    assert_eq!(r.status, 403, "{}", r.body);
    let r = curl(&["-X", "DELETE", "-H", "Origin: https://evil.example", &server.url("/store?default")]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(marked(&server), 0, "no forged write reached the store");

    // The query form at / is same-origin: its POST carries the server's own origin.
    let own = format!("Origin: http://127.0.0.1:{}", server.port);
    let r = form_update(&server, insert, &[&own, "Sec-Fetch-Site: same-origin"]);
    assert_eq!(r.status, 204, "{}", r.body);
    // A page of an origin named with --cors may write, cross-site as it is.
    let r = form_update(
        &server,
        "INSERT DATA { <urn:app> <urn:p> 1 }",
        &["Origin: https://app.example.org", "Sec-Fetch-Site: cross-site"],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    // A client that is not a browser sends no Origin.
    let r = form_update(&server, "INSERT DATA { <urn:curl> <urn:p> 1 }", &[]);
    assert_eq!(r.status, 204, "{}", r.body);
    let r = curl(&[
        "-F",
        &format!("file=@{};type=application/n-triples", file.display()),
        &server.url("/store?default"),
    ]);
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(marked(&server), 3);
    // Reads from any origin are answered (CORS decides what a page may see).
    let r = curl(&["-H", "Origin: https://evil.example", &server.url("/health")]);
    assert_eq!(r.status, 200);
}

#[test]
fn a_host_name_that_is_not_the_servers_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--write", "--allow-host", "sparql.example.org"]);
    let insert = FORGED;
    // A page on evil.example whose name now resolves to 127.0.0.1.
    let port = server.port;
    for host in
        [format!("evil.example:{port}"), "evil.example".into(), format!("localhost.evil.example:{port}")]
    {
        let r = form_update(&server, insert, &[&format!("Host: {host}")]);
        assert_eq!(r.status, 421, "{host}: {}", r.body);
        let r = curl(&["-H", &format!("Host: {host}"), &server.url("/health")]);
        assert_eq!(r.status, 421, "reads too: {host}");
    }
    assert_eq!(marked(&server), 0);
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "sparql.example.org".into()] {
        let r = curl(&["-H", &format!("Host: {host}"), &server.url("/health")]);
        assert_eq!(r.status, 200, "{host}: {}", r.body);
    }
    // HTTP/1.1 without Host is malformed (RFC 9112 §3.2).
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
}

/// Raises this process's open-file limit to its hard limit (a thousand
/// client sockets need more than the usual 1,024).
fn raise_open_files() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct passed in.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
}

/// Whether the server has closed `s` (EOF or reset), waiting up to `wait`.
fn closed_within(mut s: &TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait.max(Duration::from_millis(10)))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a 408 before the close
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// Whether `s` is still open (nothing to read yet, no EOF).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let open = matches!((&*s).read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// A thousand connections that trickle a head, trickle a body or sit idle
/// hold no thread: the server answers `/health` and a selective query while
/// they are open, then closes each at its deadline.
#[test]
fn a_thousand_slow_or_idle_connections_do_not_stop_the_server() {
    raise_open_files();
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let deadline = 8;
    let secs = deadline.to_string();
    let server = Server::start(&store, &["--write", "--head-timeout", &secs, "--body-timeout", &secs]);
    let opened = Instant::now();
    let mut slow = Vec::new();
    for i in 0..1000 {
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        match i % 3 {
            0 => s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: a").unwrap(),
            1 => s
                .write_all(
                    b"POST /update HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/sparql-update\r\n\
                      Content-Length: 100000\r\n\r\nINSERT DATA {",
                )
                .unwrap(),
            _ => {} // idle: connected, nothing sent
        }
        slow.push(s);
    }
    // One more byte on each trickling connection: progress, not completion.
    for s in slow.iter_mut().step_by(3) {
        s.write_all(b"b").unwrap();
    }
    let asked = Instant::now();
    let health = curl(&[&server.url("/health")]);
    let query = curl(&[
        "-H",
        "Accept: text/csv",
        "--data-urlencode",
        "query=SELECT ?o { GRAPH ?g { <https://example.org/alice> ?p ?o } }",
        &server.url("/query"),
    ]);
    let answered = asked.elapsed();
    assert_eq!(health.status, 200, "{}", health.body);
    assert_eq!(query.status, 200, "{}", query.body);
    eprintln!("/health and a selective query answered in {answered:?} beside 1,000 slow connections");
    if opened.elapsed() < Duration::from_secs(deadline - 2) {
        let open = slow.iter().filter(|s| still_open(s)).count();
        assert_eq!(open, 1000, "the slow connections were all open while the server answered");
    }
    // Each is closed at its deadline (a head or a body not finished in time,
    // or no request at all), not held until the client gives up.
    let bound = Duration::from_secs(deadline * 3);
    let lingering = slow.iter().filter(|s| !closed_within(s, bound.saturating_sub(opened.elapsed()))).count();
    assert_eq!(lingering, 0, "connections still open {:?} after they were opened", opened.elapsed());
    assert_eq!(marked(&server), 0);
    assert_eq!(curl(&[&server.url("/health")]).status, 200);
}

/// Past `--max-connections`, a connection is answered 503 with
/// `Retry-After` at once (not queued), and the server stays responsive.
#[test]
fn connections_past_the_cap_are_told_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--max-connections", "4"]);
    let held: Vec<TcpStream> =
        (0..4).map(|_| TcpStream::connect(("127.0.0.1", server.port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let r = curl(&[&server.url("/health")]);
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    drop(held);
    let waited = Instant::now();
    while curl(&[&server.url("/health")]).status != 200 {
        assert!(waited.elapsed() < Duration::from_secs(10), "the freed slots were not taken again");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Everything the server sends on one connection given `request`, until it closes.
fn exchange(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request).unwrap();
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// The status codes of the responses in `answer`, in order.
fn statuses(answer: &str) -> Vec<u16> {
    answer
        .match_indices("HTTP/1.1 ")
        .filter(|(at, _)| *at == 0 || answer[..*at].ends_with('\n'))
        .filter_map(|(at, _)| answer.get(at + 9..at + 12)?.parse().ok())
        .collect()
}

/// The classic request-smuggling shapes, each hiding a second request (an
/// update that would leave a mark) where a server framing it another way
/// than hyper does would run it. Each is refused, or framed as one request,
/// and the hidden update never runs.
#[test]
fn smuggled_requests_are_refused_or_framed_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let server = Server::start(&store, &["--write"]);
    let hidden = "INSERT DATA { <urn:smuggled> <urn:p> 1 }";
    let smuggled = format!(
        "POST /update HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/sparql-update\r\nContent-Length: {}\r\n\r\n{hidden}",
        hidden.len()
    );
    let ask = "ASK {}";
    let head = "POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/sparql-query\r\n";
    let cases: Vec<(&str, String)> = vec![
        // CL.TE: a proxy reading Content-Length forwards it all as one body.
        ("CL and TE", format!("{head}Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}")),
        ("TE and CL", format!("{head}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n6\r\n{ask}\r\n0\r\n\r\n{smuggled}")),
        ("two Content-Lengths", format!("{head}Content-Length: 6\r\nContent-Length: 0\r\n\r\n{ask}{smuggled}")),
        ("TE obfuscated", format!("{head}Transfer-Encoding: chunked\r\nTransfer-encoding: identity\r\n\r\n0\r\n\r\n{smuggled}")),
        ("TE not last chunked", format!("{head}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n{smuggled}")),
        ("bare LF in chunk lines", format!("{head}Transfer-Encoding: chunked\r\n\r\n6\n{ask}\n0\n\n{smuggled}")),
        ("obs-fold", format!("{head}Content-Length: 6\r\nX-Folded: a\r\n b\r\n\r\n{ask}{smuggled}")),
        ("folded TE", format!("{head}X: y\r\n Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n{ask}{smuggled}")),
        ("space before colon", format!("{head}Content-Length : 6\r\n\r\n{ask}{smuggled}")),
        ("oversized chunk extension", format!("{head}Transfer-Encoding: chunked\r\n\r\n6;{}\r\n{ask}\r\n0\r\n\r\n{smuggled}", "x".repeat(100_000))),
        ("invalid chunk size", format!("{head}Transfer-Encoding: chunked\r\n\r\n6x\r\n{ask}\r\n0\r\n\r\n{smuggled}")),
        ("chunk size overflow", format!("{head}Transfer-Encoding: chunked\r\n\r\n1{}6\r\n{ask}\r\n0\r\n\r\n{smuggled}", "0".repeat(16))),
        ("negative length", format!("{head}Content-Length: -6\r\n\r\n{ask}{smuggled}")),
        ("plus-signed length", format!("{head}Content-Length: +6\r\n\r\n{ask}{smuggled}")),
        ("NUL in a field", format!("{head}X-A: a\0b\r\nContent-Length: 6\r\n\r\n{ask}{smuggled}")),
    ];
    for (name, request) in &cases {
        let answer = exchange(server.port, request.as_bytes());
        let seen = statuses(&answer);
        eprintln!("{name}: {seen:?}");
        assert!(
            seen.len() <= 1 || seen[1] != 204,
            "{name}: the hidden update was answered as a second request: {answer}"
        );
        assert!(
            seen.first().is_none_or(|s| *s == 200 || (400..500).contains(s) || *s == 501),
            "{name}: {answer}"
        );
    }
    assert_eq!(marked(&server), 0, "a hidden update ran");
    // The same update sent plainly does run (the mark is reachable).
    let plain = exchange(
        server.port,
        smuggled.replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n").as_bytes(),
    );
    assert_eq!(statuses(&plain), [204], "{plain}");
    assert_eq!(marked(&server), 1);
}

/// SIGTERM while a client commits: every update answered 204 is in the
/// store, and no other (an update is committed and answered, or absent).
#[test]
fn sigterm_during_updates_leaves_each_answered_and_committed_or_absent() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::sample_store(dir.path());
    let mut rng = common::Rng(0x7e53);
    let mut answered = 0;
    for round in 0..4u64 {
        let server = Server::start(&store, &["--write"]);
        assert_eq!(marked(&server), answered, "round {round}");
        let port = server.port;
        let insert = |i| format!("INSERT DATA {{ <urn:k{i}> <urn:p> {i} }}");
        let writer = std::thread::spawn(move || write_until_refused(port, 1_000_000 * (round + 1), insert));
        std::thread::sleep(Duration::from_millis(150 + rng.next() % 400));
        let status = server.stop();
        assert_eq!(status.code(), Some(0), "SIGTERM ends the server with status 0");
        answered += writer.join().unwrap().len() as u64;
    }
    let server = Server::start(&store, &[]);
    assert_eq!(marked(&server), answered, "the store holds exactly the answered updates");
}
