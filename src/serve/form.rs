//! `application/x-www-form-urlencoded` (URL query strings and POSTed
//! forms): `+` is a space, `%XX` a byte, and the decoded bytes must be UTF-8.

/// The name/value pairs in order; an error names the bad byte's offset.
pub fn parse(input: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut offset = 0;
    for part in input.split(|&b| b == b'&') {
        if !part.is_empty() {
            let (name, value) = match part.iter().position(|&b| b == b'=') {
                Some(eq) => (&part[..eq], &part[eq + 1..]),
                None => (part, &[][..]),
            };
            pairs.push((decode(name, offset)?, decode(value, offset + name.len() + 1)?));
        }
        offset += part.len() + 1;
    }
    Ok(pairs)
}

fn decode(bytes: &[u8], offset: usize) -> Result<String, String> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(|| {
                    format!("bad percent-escape at byte {} of the form data: `%` must be followed by two hex digits", offset + i)
                })?;
                out.push(byte);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|e| {
        format!(
            "form data at byte {offset}: the decoded value is not UTF-8 (at its byte {})",
            e.utf8_error().valid_up_to()
        )
    })
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
    }

    #[test]
    fn bad_input_names_the_offset() {
        let e = parse(b"a=1&query=%zz").unwrap_err();
        assert!(e.contains("byte 10"), "{e}");
        assert!(parse(b"q=%C3").unwrap_err().contains("not UTF-8"));
        assert!(parse(b"q=%4").is_err());
    }
}
