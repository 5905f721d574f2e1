//! `multipart/form-data` bodies (RFC 7578): several documents in one Graph
//! Store POST or PUT, as an HTML form with file inputs uploads them. The
//! parsing is multer's (axum's parser); this only collects the parts of a
//! body that is already read.

use std::task::{Context, Poll, Waker};

use bytes::Bytes;

/// One part of the body.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// The part's media type, lower-cased, without parameters (`""` when the
    /// part has no `Content-Type`).
    pub media: String,
    /// The part's `filename` or `name`, for messages.
    pub name: String,
    pub body: Bytes,
}

/// The parts of `body`, sent with `content_type` (`multipart/form-data;
/// boundary=…`).
pub fn parts(body: Bytes, content_type: &str) -> Result<Vec<Part>, String> {
    let boundary = multer::parse_boundary(content_type).map_err(|e| e.to_string())?;
    let stream = futures_once(body);
    let mut multipart = multer::Multipart::new(stream, boundary);
    let mut out = Vec::new();
    while let Some(field) = ready(multipart.next_field()).map_err(|e| e.to_string())? {
        let media = super::negotiate::media_type(field.content_type().map_or("", |m| m.essence_str()));
        let name = field
            .file_name()
            .or(field.name())
            .map_or_else(|| format!("part {}", out.len() + 1), str::to_owned);
        let body = ready(field.bytes()).map_err(|e| format!("{name}: {e}"))?;
        out.push(Part { media, name, body });
    }
    Ok(out)
}

/// The whole body as a stream of one chunk, as multer reads bodies.
fn futures_once(body: Bytes) -> impl futures_core::Stream<Item = Result<Bytes, std::convert::Infallible>> {
    struct Once(Option<Bytes>);
    impl futures_core::Stream for Once {
        type Item = Result<Bytes, std::convert::Infallible>;
        fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.0.take().map(Ok))
        }
    }
    Once(Some(body))
}

/// The value of a future over a body held in memory: it never waits, so
/// one poll ends it (a future that would wait is a bug, reported as one).
fn ready<T>(future: impl std::future::Future<Output = Result<T, multer::Error>>) -> Result<T, multer::Error> {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => Err(multer::Error::IncompleteStream),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] =
        b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"; filename=\"a.ttl\"\r\n\
Content-Type: text/turtle; charset=utf-8\r\n\r\n<a> <b> <c> .\r\n\r\n--XyZ\r\n\
Content-Disposition: form-data; name=\"b\"\r\n\r\nplain\r\n--XyZ--\r\nepilogue";
    const TYPE: &str = "multipart/form-data; boundary=\"XyZ\"";

    #[test]
    fn parts_keep_their_media_types_names_and_bytes() {
        let parts = parts(Bytes::from_static(BODY), TYPE).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].media.as_str(), parts[0].name.as_str()), ("text/turtle", "a.ttl"));
        assert_eq!(&parts[0].body[..], b"<a> <b> <c> .\r\n");
        assert_eq!((parts[1].media.as_str(), parts[1].name.as_str()), ("", "b"));
        assert_eq!(&parts[1].body[..], b"plain");
    }

    #[test]
    fn malformed_bodies_are_refused_with_a_reason() {
        assert!(parts(Bytes::from_static(BODY), "multipart/form-data").is_err());
        let cut = parts(Bytes::copy_from_slice(&BODY[..60]), TYPE).unwrap_err();
        assert!(!cut.is_empty());
        assert!(parts(Bytes::from_static(b"no delimiter"), TYPE).is_err());
    }
}
