//! `multipart/form-data` bodies (RFC 7578): several documents in one Graph
//! Store POST or PUT, as an HTML form with file inputs uploads them.
//!
//! Only what the Graph Store Protocol needs: the parts, each with its own
//! media type (from its `Content-Type` header) and bytes. Errors name the
//! byte offset in the body and what was expected there.

/// One part of the body.
#[derive(Debug, PartialEq, Eq)]
pub struct Part<'a> {
    /// The part's media type, lower-cased, without parameters (`""` when the
    /// part has no `Content-Type`).
    pub media: String,
    /// The part's `filename` or `name`, for messages.
    pub name: String,
    pub body: &'a [u8],
}

/// The boundary of a `multipart/form-data; boundary=…` content type.
pub fn boundary(content_type: &str) -> Result<String, String> {
    let value = content_type
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_owned())
        .ok_or("multipart/form-data without a `boundary` parameter")?;
    // RFC 2046 §5.1.1: 1 to 70 characters.
    if value.is_empty() || value.len() > 70 {
        return Err(format!("the multipart boundary {value:?} is not 1 to 70 characters"));
    }
    Ok(value)
}

/// The parts of `body`, delimited by `--boundary` lines and ended by
/// `--boundary--`. A preamble before the first delimiter and an epilogue
/// after the last are ignored, as RFC 2046 says.
pub fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, String> {
    let delimiter = format!("--{boundary}");
    let first = find(body, delimiter.as_bytes(), 0)
        .ok_or_else(|| format!("no `{delimiter}` line in the {}-byte body", body.len()))?;
    let next_delimiter = format!("\r\n--{boundary}");
    let mut at = first + delimiter.len();
    let mut out = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(out);
        }
        at = skip_line_end(body, at)?;
        let end = find(body, next_delimiter.as_bytes(), at).ok_or_else(|| {
            format!("byte {at}: a part with no `{delimiter}` line after it (the body ends first)")
        })?;
        out.push(part(body, at, end)?);
        at = end + next_delimiter.len();
    }
}

/// The part whose headers start at `start` and whose content ends at `end`.
fn part(body: &[u8], start: usize, end: usize) -> Result<Part<'_>, String> {
    let bytes = &body[start..end];
    let split = find(bytes, b"\r\n\r\n", 0)
        .map(|i| (i, i + 4))
        .or_else(|| bytes.starts_with(b"\r\n").then_some((0, 2)))
        .ok_or_else(|| format!("byte {start}: a part's headers with no empty line after them"))?;
    let headers = std::str::from_utf8(&bytes[..split.0])
        .map_err(|e| format!("byte {}: a part's headers are not UTF-8", start + e.valid_up_to()))?;
    let header = |name: &str| {
        headers.lines().find_map(|l| {
            l.split_once(':').filter(|(n, _)| n.trim().eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
        })
    };
    let media = header("content-type").unwrap_or("");
    let media = super::negotiate::media_type(media);
    let disposition = header("content-disposition").unwrap_or("");
    let name = ["filename", "name"]
        .iter()
        .find_map(|key| {
            disposition.split(';').filter_map(|p| p.split_once('=')).find_map(|(k, v)| {
                (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().trim_matches('"').to_owned())
            })
        })
        .unwrap_or_else(|| format!("the part at byte {start}"));
    Ok(Part { media, name, body: &bytes[split.1..] })
}

/// After a delimiter: optional spaces, then CRLF.
fn skip_line_end(body: &[u8], mut at: usize) -> Result<usize, String> {
    while body.get(at).is_some_and(|b| *b == b' ' || *b == b'\t') {
        at += 1;
    }
    if body[at..].starts_with(b"\r\n") {
        Ok(at + 2)
    } else {
        Err(format!("byte {at}: expected a line break after the boundary"))
    }
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] =
        b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"; filename=\"a.ttl\"\r\n\
Content-Type: text/turtle; charset=utf-8\r\n\r\n<a> <b> <c> .\r\n\r\n--XyZ\r\n\
Content-Disposition: form-data; name=\"b\"\r\n\r\nplain\r\n--XyZ--\r\nepilogue";

    #[test]
    fn parts_keep_their_media_types_names_and_bytes() {
        assert_eq!(boundary("multipart/form-data; boundary=\"XyZ\"").unwrap(), "XyZ");
        let parts = parts(BODY, "XyZ").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].media.as_str(), parts[0].name.as_str()), ("text/turtle", "a.ttl"));
        assert_eq!(parts[0].body, b"<a> <b> <c> .\r\n");
        assert_eq!(
            (parts[1].media.as_str(), parts[1].name.as_str(), parts[1].body),
            ("", "b", &b"plain"[..])
        );
    }

    #[test]
    fn malformed_bodies_name_the_byte() {
        assert!(boundary("multipart/form-data").is_err());
        assert!(parts(b"no delimiter", "XyZ").unwrap_err().contains("no `--XyZ` line"));
        let cut = &BODY[..60];
        assert!(parts(cut, "XyZ").unwrap_err().contains("byte 17"), "{}", parts(cut, "XyZ").unwrap_err());
        let junk = b"--XyZjunk\r\n\r\nx\r\n--XyZ--";
        assert!(parts(junk, "XyZ").unwrap_err().contains("byte 5: expected a line break"));
    }
}
