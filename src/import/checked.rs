//! Strict parsing at the cost of lenient parsing, for N-Quads and N-Triples.
//!
//! oxttl's strict mode validates every IRI with a full RFC 3987 parser, and
//! on LUBM-like data that was 60% of the parse (350 ns an IRI, measured).
//! Its `lenient` mode skips that and a few other checks, so by itself it
//! would import data the strict parser refuses. Here a unit of lines is
//! parsed leniently and then *proven* to be what strict parsing would give:
//! every check that `lenient` turns off is redone, most of them by a cheap
//! byte scan. A unit that does not pass every check, or that has any error at
//! all, is parsed again strictly, so error messages and positions are always
//! the strict parser's own.
//!
//! What oxttl 0.2's `lenient` relaxes for these two syntaxes, and how each is
//! re-checked:
//! - IRIs are not validated: [`iri_ok`] accepts a plain ASCII subset of
//!   absolute IRIs in one table-driven pass and asks oxiri (through oxrdf)
//!   about anything else;
//! - language tags are not validated: [`oxilangtag`] checks them;
//! - `rdf:langString` (and `rdf:dirLangString`) datatypes are accepted: such
//!   literals make the unit suspect;
//! - raw line breaks inside string literals are accepted: when a literal's
//!   value holds a CR or LF, [`raw_line_break_in_string`] lexes the unit's
//!   bytes once to tell an escaped `\n` (strict) from a raw one (suspect).
//!   Vocabularies put escaped line breaks in most long comments, so treating
//!   every such literal as suspect parsed nearly every unit twice;
//! - UTF-16 surrogate pairs in `\u` escapes are accepted: a unit with any
//!   `\u` escape of a high surrogate is parsed strictly.
//!
//! A test runs both paths over the W3C N-Triples and N-Quads suites and over
//! hand-made near-misses, and requires identical output.

use oxrdf::vocab::{rdf, xsd};
use oxrdf::{GraphName, NamedOrBlankNode, Quad, Term};

const UNRESERVED_OR_SUB_DELIM: u8 = 1;
const SCHEME: u8 = 2;
/// Allowed in a path, a query or a fragment besides the above (`?` starts
/// the query, and is allowed in queries and fragments).
const PCHAR_EXTRA: u8 = 4;

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        let alnum = b.is_ascii_alphanumeric();
        if alnum
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            )
        {
            t[c] |= UNRESERVED_OR_SUB_DELIM;
        }
        if alnum || matches!(b, b'+' | b'-' | b'.') {
            t[c] |= SCHEME;
        }
        if matches!(b, b':' | b'@' | b'/' | b'?') {
            t[c] |= PCHAR_EXTRA;
        }
        c += 1;
    }
    t
}

static CLASS: [u8; 256] = classes();

fn is(b: u8, class: u8) -> bool {
    CLASS[b as usize] & class != 0
}

fn percent_escape_at(s: &[u8], i: usize) -> bool {
    i + 2 < s.len() && s[i + 1].is_ascii_hexdigit() && s[i + 2].is_ascii_hexdigit()
}

/// `true` only for absolute IRIs made of ASCII, without userinfo and without
/// an IP-literal host: `scheme ":" ["//" reg-name [":" port]] path ["?" query]
/// ["#" fragment]`. Every string accepted here is accepted by oxiri (a
/// property test checks this); `false` means "not known", not "invalid".
pub fn plain_absolute_iri(s: &[u8]) -> bool {
    let n = s.len();
    if n == 0 || !s[0].is_ascii_alphabetic() {
        return false;
    }
    let mut i = 1;
    while i < n && is(s[i], SCHEME) {
        i += 1;
    }
    if i == n || s[i] != b':' {
        return false;
    }
    i += 1;
    if s[i..].starts_with(b"//") {
        i += 2;
        loop {
            // Tight loops over the common bytes; the rest decided one by one.
            while i < n && is(s[i], UNRESERVED_OR_SUB_DELIM) {
                i += 1;
            }
            match s.get(i) {
                Some(b'%') if percent_escape_at(s, i) => i += 3,
                Some(b':') => {
                    i += 1;
                    while i < n && s[i].is_ascii_digit() {
                        i += 1;
                    }
                    break;
                }
                _ => break,
            }
        }
        if i < n && !matches!(s[i], b'/' | b'?' | b'#') {
            return false;
        }
    }
    let mut in_fragment = false;
    loop {
        while i < n && is(s[i], UNRESERVED_OR_SUB_DELIM | PCHAR_EXTRA) {
            i += 1;
        }
        match s.get(i) {
            None => return true,
            Some(b'%') if percent_escape_at(s, i) => i += 3,
            Some(b'#') if !in_fragment => {
                in_fragment = true;
                i += 1;
            }
            _ => return false,
        }
    }
}

/// Whether oxttl's strict mode accepts `iri` (an IRIREF's decoded content).
pub fn iri_ok(iri: &str) -> bool {
    plain_absolute_iri(iri.as_bytes()) || oxrdf::NamedNode::new(iri).is_ok()
}

/// Whether a leniently parsed statement is one the strict parser produces
/// unchanged. Blank-node labels are lexed the same way in both modes.
/// `no_raw_breaks` is asked, at most as often as a literal's value holds a
/// line break, whether the unit's string literals are free of raw ones.
pub fn quad_ok(q: &Quad, no_raw_breaks: &mut dyn FnMut() -> bool) -> bool {
    let subject = match &q.subject {
        NamedOrBlankNode::NamedNode(n) => iri_ok(n.as_str()),
        _ => true,
    };
    let object = match &q.object {
        Term::NamedNode(n) => iri_ok(n.as_str()),
        Term::BlankNode(_) => true,
        // A line break in a value may have been a raw one, which only
        // lenient parsing accepts.
        Term::Literal(l)
            if memchr::memchr2(b'\n', b'\r', l.value().as_bytes()).is_some() && !no_raw_breaks() =>
        {
            false
        }
        Term::Literal(l) => match l.language() {
            Some(tag) => oxilangtag::LanguageTag::parse(tag).is_ok(),
            None => {
                let d = l.datatype();
                d == xsd::STRING
                    || (d != rdf::LANG_STRING && d.as_str() != DIR_LANG_STRING && iri_ok(d.as_str()))
            }
        },
        #[allow(unreachable_patterns)]
        _ => false,
    };
    let graph = match &q.graph_name {
        GraphName::NamedNode(n) => iri_ok(n.as_str()),
        _ => true,
    };
    subject && iri_ok(q.predicate.as_str()) && object && graph
}

/// Whether a string literal in `bytes` (whole N-Quads or N-Triples lines)
/// may hold a raw CR or LF. It follows oxttl's N-Triples lexer as far as
/// quotes matter: `<…>` IRIs, `"…"` strings with backslash escapes, and
/// `#` comments to the end of the line; every other token is free of `"`,
/// `<` and `#`. Anything it does not follow (a backslash in an IRI, an
/// unterminated IRI or string) answers `true`, which only costs a strict parse.
pub fn raw_line_break_in_string(bytes: &[u8]) -> bool {
    let mut i = 0;
    while let Some(at) = memchr::memchr3(b'"', b'<', b'#', &bytes[i..]) {
        i += at;
        let next = match bytes[i] {
            b'<' if bytes.get(i + 1) == Some(&b'<') => Some(i + 2),
            b'<' => memchr::memchr2(b'>', b'\\', &bytes[i + 1..])
                .filter(|&end| bytes[i + 1 + end] == b'>')
                .map(|end| i + end + 2),
            b'#' => match memchr::memchr2(b'\n', b'\r', &bytes[i..]) {
                Some(end) => Some(i + end + 1),
                None => return false,
            },
            _ => end_of_one_line_string(bytes, i + 1),
        };
        match next {
            Some(next) => i = next,
            None => return true,
        }
    }
    false
}

/// The index after the closing quote of the string whose content starts at
/// `i`, or `None` if the string holds a raw line break or does not close.
fn end_of_one_line_string(bytes: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let rest = bytes.get(i..)?;
        let at = memchr::memchr3(b'"', b'\\', b'\n', rest)?;
        if memchr::memchr(b'\r', &rest[..at]).is_some() {
            return None;
        }
        i += at;
        match bytes[i] {
            b'"' => return Some(i + 1),
            // An escape: the byte after the backslash is taken as it is,
            // unless it is a line break.
            b'\\' if !matches!(bytes.get(i + 1), None | Some(b'\n' | b'\r')) => i += 2,
            _ => return None,
        }
    }
}

pub(crate) const DIR_LANG_STRING: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString";

/// What a unit's bytes say before parsing.
pub struct UnitScan {
    /// `\n` bytes in the unit, to number the lines of the units after it.
    pub newlines: u64,
    /// A `\u` escape of a high surrogate: lenient parsing might join it
    /// with the next escape into one character, so parse strictly.
    pub suspect: bool,
}

pub fn scan_unit(bytes: &[u8]) -> UnitScan {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    let suspect = memchr::memmem::find_iter(bytes, b"\\u").any(|i| match &bytes[i + 2..] {
        [d, h, ..] => {
            d.eq_ignore_ascii_case(&b'd') && matches!(h.to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'b')
        }
        _ => false,
    });
    UnitScan { newlines, suspect }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_iris_are_recognised() {
        for ok in [
            "http://example.org/a/b?c=d#e",
            "urn:isbn:0451450523",
            "http://ex.org:8080/p",
            "http://ex.org:/",
            "mailto:a@example.org",
            "file:///tmp/x",
            "http://ex.org/%C3%A9",
            "tag:",
            "http://ex.org/a?b?c/d#e?f/g",
        ] {
            assert!(plain_absolute_iri(ok.as_bytes()), "{ok}");
            assert!(oxrdf::NamedNode::new(ok).is_ok(), "{ok}");
        }
        for unknown in [
            "",
            "relative/path",
            "1http://x",
            "http://user@host/",
            "http://[::1]/",
            "http://ex.org/a b",
            "http://ex.org/%zz",
            "http://ex.org/%4",
            "http://ex.org/a#b#c",
            "http://ex.org:80a/",
            "http://ex.org/é",
            "http://ex.org/{x}",
            "http://ex.org/a|b",
            "http://ex.org/a\\b",
        ] {
            assert!(!plain_absolute_iri(unknown.as_bytes()), "{unknown}");
        }
    }

    #[test]
    fn raw_line_breaks_are_told_from_escaped_ones() {
        for one_line in [
            "<a> <b> \"escaped\\nbreak\\r\" .\n<a> <b> \"x\" .\r\n",
            "<a#\"> <b> \"q \\\" still\" . # comment \"\n<a> <b> \"\" .\n",
            "<<( <a> <b> \"x\" )>> <b> \"<#\" .\n",
            "# \"open in a comment\r<a> <b> \"y\" .",
            "",
        ] {
            assert!(!raw_line_break_in_string(one_line.as_bytes()), "{one_line:?}");
        }
        for raw_or_unknown in [
            "<a> <b> \"raw\nbreak\" .\n",
            "<a> <b> \"raw\rreturn\" .\n",
            "<a> <b> \"backslash then break\\\n\" .\n",
            "<a> <b> \"unterminated .",
            "<a> <b> \"ends in a backslash\\",
            "<a\\u0041> <b> \"x\" .\n",
            "<a <b \"x\" .",
        ] {
            assert!(raw_line_break_in_string(raw_or_unknown.as_bytes()), "{raw_or_unknown:?}");
        }
    }

    #[test]
    fn the_scan_finds_what_lenient_parsing_lets_through() {
        let s = scan_unit(b"<a> <b> <c> .\n\n  # comment\n\t\n<a> <b> \"x\" .\r\n");
        assert_eq!((s.newlines, s.suspect), (5, false));
        assert!(scan_unit(b"<a> <b> \"\\uD83D\\uDE00\" .\n").suspect);
        assert!(scan_unit(b"<a> <b> \"\\udbff\\udfff\" .\n").suspect);
        assert!(!scan_unit(b"<a> <b> \"\\u00e9\\uDC00\" .\n").suspect);
        assert_eq!(scan_unit(b"<a> <b> \"no newline at end\" .").newlines, 0);
    }

    fn iri_like() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "http", "urn", "a", "Z9", "+", "-", ".", ":", "//", "/", "?", "#", "@", "[", "]", "%", "%4",
            "%41", "%g1", "é", "\u{E000}", "\u{FFFF}", " ", "{", "|", "\\", "^", "`", "<", "\"", "0", "80",
            "!", "$", "&", "'", "(", ")", "*", ",", ";", "=", "_", "~", "x", "\t", "\u{7f}",
        ]);
        prop::collection::vec(pieces, 0..14).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        /// The fast check may say "not known" for a valid IRI, never "valid"
        /// for one oxiri refuses.
        #[test]
        fn the_fast_check_never_accepts_what_oxiri_refuses(s in iri_like()) {
            if plain_absolute_iri(s.as_bytes()) {
                prop_assert!(oxrdf::NamedNode::new(s.as_str()).is_ok(), "{:?}", s);
            }
        }
    }
}
