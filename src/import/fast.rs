//! Sort keys straight from the bytes of canonical N-Quads lines.
//!
//! A cell token is the N-Triples text of a term in pycottas's rendering
//! (`format::term`), and most lines of real input already spell every term
//! that way: an IRI without escapes, a literal whose only escapes are the
//! four the rendering itself writes (`\\ \" \n \r`), a lower-case language
//! tag, a datatype other than `xsd:string`. For such a line the key is the
//! line's own bytes, so parsing it into terms (oxttl allocates a string per
//! term and decodes escapes) and rendering them again (escaping again) was
//! most of an import's parse on long-literal data such as the vocabularies.
//!
//! A blank node's token is its label behind the document's prefix
//! (`render.rs`), so a subject or object blank node with an ASCII label is
//! keyed here too: an eighth of the vocabularies' statements have one, and
//! parsing them cost as much as all the others.
//!
//! A line is taken here only when every check strict parsing would make is
//! made and the token bytes are provably what rendering would write; any other
//! line (blank-node graphs, other labels, comments, other escapes, `\r`,
//! upper-case tags, unusual white space, anything malformed) answers
//! [`Line::Other`] and goes to the parser unchanged. So acceptance, errors
//! and output do not depend on this path: tests compare it with the parser
//! on the W3C suites, on near-misses and on generated lines.

use memchr::memchr2;
use oxrdf::vocab::{rdf, xsd};

use super::checked;

/// What [`line_key`] made of one line.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A statement whose key was appended.
    Key,
    /// Only white space: no statement.
    Empty,
    /// Anything else: for the parser. Nothing was appended.
    Other,
}

/// The last IRI found valid in each place of a statement (subject,
/// predicate, object, graph, datatype), kept by one parser thread. Lines of
/// real files repeat their neighbours' subject, graph and datatype, and
/// comparing bytes costs far less than validating them again (the IRI check
/// was an eighth of the parse threads' time on the vocabularies).
///
/// A place holds `None` until an IRI there is found valid: an empty IRI
/// (`<>`, which strict parsing refuses as relative) once matched the empty
/// starting value and was stored (found by the `import_unit` fuzz target).
#[derive(Default)]
pub struct Recent {
    iris: [Option<Vec<u8>>; 5],
}

const SUBJECT: usize = 0;
const PREDICATE: usize = 1;
const OBJECT: usize = 2;
const GRAPH: usize = 3;
const DATATYPE: usize = 4;

impl Recent {
    /// Whether `content` is an IRI strict parsing accepts, remembered for
    /// place `at` when it is.
    fn iri_ok(&mut self, at: usize, content: &[u8]) -> bool {
        if self.iris[at].as_deref() == Some(content) {
            return true;
        }
        if !iri_content_ok(content) {
            return false;
        }
        let last = self.iris[at].get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(content);
        true
    }
}

/// What the lines of one input share.
pub struct Document<'a> {
    /// The token of the graph of statements without one.
    pub graph: &'a [u8],
    /// What a blank node's label follows in its token: `_:` and the
    /// document's prefix.
    pub blank_prefix: &'a [u8],
    /// N-Triples: a fourth term is not accepted.
    pub triples: bool,
}

/// Appends the sort key of `line` (one line, its `\n` excluded) to `keys`.
pub fn line_key(line: &[u8], doc: &Document, recent: &mut Recent, keys: &mut Vec<u8>) -> Line {
    let i = skip_space(line, 0);
    if i == line.len() {
        return Line::Empty;
    }
    let Some(t) = terms(line, i, doc.triples, recent) else { return Line::Other };
    let token = |(a, b): (usize, usize)| &line[a..b];
    // The sort key (`store::sort::encode_key`) of tokens without NUL bytes.
    for (i, range) in [t.subject, t.predicate, t.object].into_iter().enumerate() {
        if t.blank[i] {
            keys.extend_from_slice(doc.blank_prefix);
            keys.extend_from_slice(&line[range.0 + 2..range.1]);
        } else {
            keys.extend_from_slice(token(range));
        }
        keys.extend_from_slice(&[0, 0]);
    }
    keys.extend_from_slice(t.graph.map_or(doc.graph, token));
    keys.extend_from_slice(&[0, 0]);
    Line::Key
}

/// Byte ranges of a statement's tokens within its line.
struct Terms {
    subject: (usize, usize),
    predicate: (usize, usize),
    object: (usize, usize),
    graph: Option<(usize, usize)>,
    /// Whether the subject, predicate and object are `_:` labels.
    blank: [bool; 3],
}

fn terms(line: &[u8], start: usize, triples: bool, recent: &mut Recent) -> Option<Terms> {
    // A NUL byte is legal in a literal but needs escaping in the key; such
    // lines are rare enough to leave to the parser.
    if memchr2(b'\r', 0, line).is_some() {
        return None;
    }
    let blank_subject = line.get(start) == Some(&b'_');
    let subject_end =
        if blank_subject { blank_end(line, start) } else { iri_end(line, start, recent, SUBJECT) };
    let subject = (start, subject_end?);
    let p = spaced(line, subject.1)?;
    let predicate = (p, iri_end(line, p, recent, PREDICATE)?);
    let o = spaced(line, predicate.1)?;
    let object = (o, object_end(line, o, recent)?);
    let blank = [blank_subject, false, line[o] == b'_'];
    let mut i = skip_space(line, object.1);
    let mut graph = None;
    if !triples && line.get(i) == Some(&b'<') && i > object.1 {
        graph = Some((i, iri_end(line, i, recent, GRAPH)?));
        i = skip_space(line, graph?.1);
    }
    if line.get(i) != Some(&b'.') || skip_space(line, i + 1) != line.len() {
        return None;
    }
    Some(Terms { subject, predicate, object, graph, blank })
}

fn skip_space(line: &[u8], mut i: usize) -> usize {
    while matches!(line.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// The start of the next term, which must follow at least one space or tab.
fn spaced(line: &[u8], i: usize) -> Option<usize> {
    let next = skip_space(line, i);
    (next > i).then_some(next)
}

/// `<…>` at `i` with no escape, whose content strict parsing accepts: the
/// index after `>`. `at` is the IRI's place in the statement.
fn iri_end(line: &[u8], i: usize, recent: &mut Recent, at: usize) -> Option<usize> {
    if line.get(i) != Some(&b'<') {
        return None;
    }
    let rest = &line[i + 1..];
    let end = memchr2(b'>', b'\\', rest)?;
    let content = &rest[..end];
    if rest[end] != b'>' || !recent.iri_ok(at, content) {
        return None;
    }
    Some(i + end + 2)
}

fn iri_content_ok(content: &[u8]) -> bool {
    checked::plain_absolute_iri(content) || std::str::from_utf8(content).is_ok_and(checked::iri_ok)
}

fn object_end(line: &[u8], i: usize, recent: &mut Recent) -> Option<usize> {
    match line.get(i)? {
        b'<' => iri_end(line, i, recent, OBJECT),
        b'"' => literal_end(line, i, recent),
        b'_' => blank_end(line, i),
        _ => None,
    }
}

/// `_:label` at `i` with an ASCII label that strict parsing accepts whole:
/// the index after it. The label's first byte is a letter, digit or `_`,
/// the others may also be `-` or `.`, but not the last: a label followed by
/// a `.` (`_:o.`) or holding other characters is left to the parser.
fn blank_end(line: &[u8], i: usize) -> Option<usize> {
    let label = line.get(i..)?.strip_prefix(b"_:")?;
    let first_ok = label.first().is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
    let len =
        label.iter().take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')).count();
    let ends_well = label.get(len).is_none_or(|&b| b == b' ' || b == b'\t');
    (first_ok && ends_well && label[len - 1] != b'.').then_some(i + 2 + len)
}

/// A `"…"` literal at `i` whose rendering is its own bytes: the index after
/// its language tag or datatype.
fn literal_end(line: &[u8], i: usize, recent: &mut Recent) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr2(b'"', b'\\', &line[j..])?;
        if line[j] == b'"' {
            break;
        }
        // The four escapes the rendering writes itself; any other is decoded
        // by parsing and written differently.
        match line.get(j + 1) {
            Some(b'\\' | b'"' | b'n' | b'r') => j += 2,
            _ => return None,
        }
    }
    let after = j + 1;
    match line.get(after) {
        Some(b'@') => language_end(line, after + 1),
        Some(b'^') => {
            if line.get(after + 1) != Some(&b'^') {
                return None;
            }
            let end = iri_end(line, after + 2, recent, DATATYPE)?;
            let datatype = &line[after + 3..end - 1];
            let dropped_or_refused =
                [xsd::STRING.as_str(), rdf::LANG_STRING.as_str(), checked::DIR_LANG_STRING];
            (!dropped_or_refused.iter().any(|d| d.as_bytes() == datatype)).then_some(end)
        }
        _ => Some(after),
    }
}

/// A lower-case language tag starting at `i` that strict parsing accepts:
/// the index after it.
fn language_end(line: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    let mut first = true;
    loop {
        let start = j;
        while line.get(j).is_some_and(|&b| b.is_ascii_lowercase() || (!first && b.is_ascii_digit())) {
            j += 1;
        }
        if j == start {
            return None;
        }
        if line.get(j) != Some(&b'-') {
            break;
        }
        j += 1;
        first = false;
    }
    // Upper case would be lower-cased by rendering; anything the tag
    // grammar allows but BCP 47 does not is refused by strict parsing.
    if line.get(j).is_some_and(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let tag = std::str::from_utf8(&line[i..j]).ok()?;
    oxilangtag::LanguageTag::parse(tag).is_ok().then_some(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUADS: Document = Document { graph: b"DEFAULT", blank_prefix: b"_:b0_", triples: false };

    fn key(line: &str) -> Line {
        line_key(line.as_bytes(), &QUADS, &mut Recent::default(), &mut Vec::new())
    }

    #[test]
    fn canonical_lines_are_taken_and_others_left_to_the_parser() {
        for taken in [
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> <http://ex.org/g> .",
            "<http://ex.org/s>\t<http://ex.org/p>  \"a \\\"b\\\" \\\\ \\n \\r\"@en-gb <http://ex.org/g>.",
            "<http://ex.org/s> <http://ex.org/p> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .  ",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@de-1996 .",
            "<http://ex.org/s> <http://ex.org/p> \"tab\there\" .",
            "_:b <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> _:o .",
            "_:1a.b-c_ <http://ex.org/p> _:_x\t<http://ex.org/g> .",
        ] {
            assert_eq!(key(taken), Line::Key, "{taken}");
        }
        assert_eq!(key("  \t"), Line::Empty);
        for other in [
            // An empty IRI is relative: strict parsing refuses it in every
            // place, on a parser thread's first line too.
            "<> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> <> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> <> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> _:g .",
            "<http://ex.org/s> <http://ex.org/p> _:o. ",
            "<http://ex.org/s> <http://ex.org/p> _:o.",
            "_:a. <http://ex.org/p> <http://ex.org/o> .",
            "_:-a <http://ex.org/p> <http://ex.org/o> .",
            "_: <http://ex.org/p> <http://ex.org/o> .",
            "_:é <http://ex.org/p> <http://ex.org/o> .",
            "_:aé <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> _:p <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> _:o<http://ex.org/g> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@EN .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@en- .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"@1en .",
            "<http://ex.org/s> <http://ex.org/p> \"x\\t\" .",
            "<http://ex.org/s> <http://ex.org/p> \"x\\u0041\" .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<http://www.w3.org/2001/XMLSchema#string> .",
            "<http://ex.org/s> <http://ex.org/p> \"x\"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> . # comment",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\r",
            "<http://ex.org/s><http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o>",
            "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> <http://ex.org/g> <http://ex.org/h> .",
            "<http://ex.org/a b> <http://ex.org/p> <http://ex.org/o> .",
            "<relative> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/\\u0041> <http://ex.org/p> <http://ex.org/o> .",
            "<http://ex.org/s> <http://ex.org/p> \"unterminated .",
            "<http://ex.org/s> <http://ex.org/p> \"a NUL \u{0} in a literal\" .",
            "# a comment",
        ] {
            assert_eq!(key(other), Line::Other, "{other}");
        }
    }

    #[test]
    fn n_triples_lines_take_the_given_graph_and_refuse_a_fourth_term() {
        let mut keys = Vec::new();
        let line = b"<http://ex.org/s> <http://ex.org/p> \"v\" .";
        let triples = Document { graph: b"<http://ex.org/g>", blank_prefix: b"_:b3_", triples: true };
        assert_eq!(line_key(line, &triples, &mut Recent::default(), &mut keys), Line::Key);
        let mut expected = Vec::new();
        crate::store::sort::encode_key(
            &mut expected,
            [b"<http://ex.org/s>", b"<http://ex.org/p>", b"\"v\"", b"<http://ex.org/g>"],
        );
        assert_eq!(keys, expected);
        let quad = b"<http://ex.org/s> <http://ex.org/p> \"v\" <http://ex.org/h> .";
        assert_eq!(line_key(quad, &triples, &mut Recent::default(), &mut keys), Line::Other);
        assert_eq!(keys, expected, "nothing appended for a line left to the parser");
        let blank = b"_:s <http://ex.org/p> _:o .";
        assert_eq!(line_key(blank, &triples, &mut Recent::default(), &mut keys), Line::Key);
        crate::store::sort::encode_key(
            &mut expected,
            [b"_:b3_s", b"<http://ex.org/p>", b"_:b3_o", b"<http://ex.org/g>"],
        );
        assert_eq!(keys, expected, "blank nodes keep their labels behind the document's prefix");
    }
}
