//! Who may ask: the checks made on a request's head before anything else.
//!
//! - **DNS rebinding.** A page on `evil.example` whose name the attacker
//!   rebinds to 127.0.0.1 reaches this server with `Host: evil.example`,
//!   and the browser treats the answers as that page's own. So `Host` must
//!   name this server: the address it listens on or the one the connection
//!   came in on, a loopback name, or a name given with `--allow-host`. Any
//!   other is a 421 and the request touches nothing.
//! - **Cross-site writes.** A browser sends a form POST (URL-encoded or
//!   multipart) to any origin without asking first, so `Content-Type` cannot
//!   tell a page's request from a client's. Browsers do say where a request
//!   comes from: `Origin` on every POST, PUT and DELETE, and
//!   `Sec-Fetch-Site`. A write whose `Origin` is not this server's own or
//!   one named with `--cors`, or that a browser marks `cross-site`, is a 403.
//!   Clients that are not browsers (curl, SPARQLWrapper, rdflib) send
//!   neither header and are not affected.

use std::net::SocketAddr;

use http::header::{HOST, ORIGIN};
use http::{HeaderMap, Method, Version};

/// Names that always mean this machine.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Why a request was refused on its head: status and message.
pub type Refusal = (http::StatusCode, String);

/// The host part of a `Host` value (`name`, `1.2.3.4` or `[::1]`), lower-cased.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(host.to_owned(), |(v6, _)| format!("[{v6}]")),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name).to_owned(),
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// An address as a `Host` names it: IPv6 in brackets.
fn address_name(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    }
}

/// Whether `Host` names this server: refused with 421 (a name this server
/// does not answer to) or 400 (HTTP/1.1 without `Host`, RFC 9112 §3.2).
pub fn check_host(
    headers: &HeaderMap,
    version: Version,
    bound: &SocketAddr,
    local: &SocketAddr,
    allowed: &[String],
) -> Result<(), Refusal> {
    let Some(value) = headers.get(HOST) else {
        if version == Version::HTTP_10 {
            return Ok(());
        }
        return Err((http::StatusCode::BAD_REQUEST, "an HTTP/1.1 request needs a Host header".into()));
    };
    let name = host_name(value.to_str().unwrap_or(""));
    let ours = LOOPBACK_NAMES.contains(&name.as_str())
        || name == address_name(bound)
        || name == address_name(local)
        || allowed.iter().any(|a| a == "*" || host_name(a) == name);
    if ours {
        return Ok(());
    }
    Err((
        http::StatusCode::MISDIRECTED_REQUEST,
        format!(
            "this server does not answer to the host name {name:?} (a page on another name reaching it through \
             DNS could read and write the store); start it with --allow-host {name} if that name is its own"
        ),
    ))
}

/// Framings hyper would accept that we cannot honour, refused outright: any
/// transfer coding but `chunked` alone (501: hyper would take the chunks and
/// leave, say, gzip undone). An expectation other than `100-continue` is a
/// 417 (RFC 9110 §10.1.1). (`Content-Length` beside `Transfer-Encoding`
/// never gets here: hyper frames such a request by its chunks, drops the
/// length, and closes the connection after the answer, as RFC 9112 §6.3 says.)
pub fn check_framing(headers: &HeaderMap) -> Result<(), Refusal> {
    use http::header::{EXPECT, TRANSFER_ENCODING};
    let codings: Vec<&str> = headers
        .get_all(TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("?").split(','))
        .map(str::trim)
        .collect();
    let chunked_alone = matches!(codings[..], [only] if only.eq_ignore_ascii_case("chunked"));
    if !codings.is_empty() && !chunked_alone {
        let message = format!(
            "transfer coding {:?} is not supported: send the body plain or chunked",
            codings.join(", ")
        );
        return Err((http::StatusCode::NOT_IMPLEMENTED, message));
    }
    let expect = headers.get(EXPECT).map(|v| v.to_str().unwrap_or("?").trim());
    if expect.is_some_and(|e| !e.eq_ignore_ascii_case("100-continue")) {
        let message = format!("Expect: {:?} cannot be met (only 100-continue is)", expect.unwrap_or(""));
        return Err((http::StatusCode::EXPECTATION_FAILED, message));
    }
    Ok(())
}

/// Whether this request writes: an update, or a Graph Store PUT, POST or DELETE.
pub fn is_write(method: &Method, path: &str) -> bool {
    let store = path == "/store" || path.starts_with("/store/");
    (path == "/update" && method == Method::POST)
        || (store && [Method::PUT, Method::POST, Method::DELETE].contains(method))
}

/// Whether a write may come from where the browser says it comes from:
/// refused (403) when `Sec-Fetch-Site` is `cross-site`, or `Origin` is
/// present and is neither this server's own (`scheme://Host`) nor an origin
/// named with `--cors` (`*` grants reading, not writing).
pub fn check_write_origin(headers: &HeaderMap, cors: &[String]) -> Result<(), Refusal> {
    let refused = |why: String| {
        Err((
            http::StatusCode::FORBIDDEN,
            format!(
                "{why}: a write from a web page of another origin is refused (a page could forge it); \
                 name the page's origin with --cors to allow it"
            ),
        ))
    };
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let origin = text(ORIGIN.as_str()).map(str::trim);
    // An origin the operator named may write, as a cross-site page too.
    if origin.is_some_and(|origin| cors.iter().any(|o| o != "*" && o.eq_ignore_ascii_case(origin))) {
        return Ok(());
    }
    if text("sec-fetch-site").is_some_and(|s| s.trim().eq_ignore_ascii_case("cross-site")) {
        return refused("the browser marked this request cross-site".into());
    }
    let Some(origin) = origin else { return Ok(()) };
    let own = text(HOST.as_str()).is_some_and(|host| {
        ["http://", "https://"].iter().any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}{host}")))
    });
    if own {
        return Ok(());
    }
    refused(format!("the request comes from the origin {origin:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(http::HeaderName::from_bytes(n.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    const BOUND: &str = "127.0.0.1:7878";

    fn host_ok(host: Option<&str>, allowed: &[&str]) -> bool {
        let h = headers(&host.map(|v| vec![("host", v)]).unwrap_or_default());
        let bound: SocketAddr = BOUND.parse().unwrap();
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        check_host(&h, Version::HTTP_11, &bound, &bound, &allowed).is_ok()
    }

    #[test]
    fn host_must_name_this_server() {
        for ok in ["127.0.0.1:7878", "localhost:7878", "LOCALHOST", "[::1]:7878", "localhost."] {
            assert!(host_ok(Some(ok), &[]), "{ok}");
        }
        for bad in ["evil.example:7878", "evil.example", "localhost.evil.example", "127.0.0.1.nip.io", ""] {
            assert!(!host_ok(Some(bad), &[]), "{bad}");
        }
        assert!(!host_ok(None, &[]));
        assert!(host_ok(Some("sparql.example.org"), &["sparql.example.org"]));
        assert!(host_ok(Some("Sparql.Example.org:443"), &["sparql.example.org"]));
        assert!(host_ok(Some("anything"), &["*"]));
        let bound: SocketAddr = "0.0.0.0:80".parse().unwrap();
        let local: SocketAddr = "10.1.2.3:80".parse().unwrap();
        assert!(check_host(&headers(&[("host", "10.1.2.3")]), Version::HTTP_11, &bound, &local, &[]).is_ok());
        assert!(check_host(&headers(&[]), Version::HTTP_10, &bound, &local, &[]).is_ok());
    }

    #[test]
    fn writes_from_other_origins_are_refused() {
        let cors = vec!["https://app.example.org".to_owned(), "*".to_owned()];
        let ok = |pairs: &[(&str, &str)]| check_write_origin(&headers(pairs), &cors).is_ok();
        assert!(ok(&[("host", BOUND)]), "a client that is not a browser");
        assert!(ok(&[("host", BOUND), ("origin", "http://127.0.0.1:7878")]), "the form at /");
        assert!(ok(&[
            ("host", BOUND),
            ("origin", "https://app.example.org"),
            ("sec-fetch-site", "cross-site")
        ]));
        assert!(ok(&[("host", BOUND), ("origin", "https://app.example.org")]));
        assert!(!ok(&[("host", BOUND), ("origin", "https://evil.example")]), "`*` grants no writes");
        assert!(!ok(&[("host", BOUND), ("origin", "null")]));
        assert!(!ok(&[("host", BOUND), ("origin", "http://127.0.0.1:9999")]), "another port");
        assert!(!ok(&[("host", BOUND), ("sec-fetch-site", "cross-site")]));
        assert!(ok(&[
            ("host", BOUND),
            ("sec-fetch-site", "same-origin"),
            ("origin", "http://127.0.0.1:7878")
        ]));
    }

    #[test]
    fn ambiguous_framings_and_unknown_expectations_are_refused() {
        let status = |pairs: &[(&str, &str)]| check_framing(&headers(pairs)).err().map(|(s, _)| s.as_u16());
        assert_eq!(status(&[("transfer-encoding", "chunked")]), None);
        assert_eq!(status(&[("content-length", "3"), ("expect", "100-continue")]), None);
        assert_eq!(status(&[("transfer-encoding", "gzip, chunked")]), Some(501));
        assert_eq!(status(&[("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")]), Some(501));
        assert_eq!(status(&[("expect", "the-unexpected")]), Some(417));
    }

    #[test]
    fn writes_are_updates_and_graph_store_changes() {
        assert!(is_write(&Method::POST, "/update"));
        assert!(!is_write(&Method::GET, "/update"), "a 405, not a write");
        assert!(is_write(&Method::PUT, "/store"));
        assert!(is_write(&Method::DELETE, "/store/g"));
        assert!(!is_write(&Method::GET, "/store"));
        assert!(!is_write(&Method::POST, "/query"));
        assert!(!is_write(&Method::POST, "/storefront"));
    }
}
