//! `application/x-www-form-urlencoded` (URL query strings and POSTed
//! forms), decoded by the `form_urlencoded` crate (the WHATWG URL
//! standard's parser: `+` is a space, `%XX` a byte, a `%` without two hex
//! digits stays as it is). The standard decodes bytes that are not UTF-8 to
//! U+FFFD; a SPARQL request so damaged would run as something else, so such
//! input is refused instead, naming where.

/// The name/value pairs in order.
pub fn parse(input: &[u8]) -> Result<Vec<(String, String)>, String> {
    refuse_bad_utf8(input)?;
    Ok(form_urlencoded::parse(input).map(|(n, v)| (n.into_owned(), v.into_owned())).collect())
}

/// Every name and value must decode to UTF-8. `&`, `=` and `+` are ASCII,
/// so decoding the whole input at once finds the same faults as decoding
/// each part.
fn refuse_bad_utf8(input: &[u8]) -> Result<(), String> {
    let decoded: Vec<u8> = percent_encoding::percent_decode(input).collect();
    match std::str::from_utf8(&decoded) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "the form data is not UTF-8 once decoded (at decoded byte {}; percent-escapes must spell UTF-8)",
            e.valid_up_to()
        )),
    }
}

/// Every value of `name`.
pub fn all<'a>(pairs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    pairs.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_pluses_escapes_and_repeats() {
        let pairs =
            parse(b"query=SELECT+*+%7B%3Fs+%3Fp+%3Fo%7D&default-graph-uri=a&default-graph-uri=b&flag")
                .unwrap();
        assert_eq!(pairs[0], ("query".into(), "SELECT * {?s ?p ?o}".into()));
        assert_eq!(all(&pairs, "default-graph-uri"), ["a", "b"]);
        assert_eq!(pairs[3], ("flag".into(), String::new()));
        assert_eq!(parse(b"q=%C3%A9").unwrap()[0].1, "é");
        // As browsers send it: a stray `%` is itself.
        assert_eq!(parse(b"q=100%").unwrap()[0].1, "100%");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused() {
        let e = parse(b"a=1&q=%C3").unwrap_err();
        assert!(e.contains("not UTF-8") && e.contains("decoded byte 6"), "{e}");
        assert!(parse(b"q=\xff").is_err());
    }
}
