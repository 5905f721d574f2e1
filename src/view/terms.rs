//! Terms as the evaluator sees them ([`Tok`]) and conversions to oxrdf terms.
//!
//! spareval lets a dataset pick its own internal term type. Ours is the cell
//! token in the canonical (pycottas) rendering, borrowed from the store's
//! dictionaries or the overlay whenever the stored bytes are already canonical,
//! so a pattern lookup that returns a million cells allocates nothing per cell,
//! and joins compare bytes. Canonical rendering is one-to-one with RDF terms,
//! so byte equality is `sameTerm`. Only results that leave the evaluator, and
//! terms that expressions compute on, are parsed into oxrdf terms.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use oxrdf::{BlankNode, Literal, NamedNode, Term};

use crate::format::term::{self as tok, Escaping, LiteralKind};

/// A canonical cell token: borrowed from the store, or owned when it had to
/// be re-rendered (another producer's escaping) or came from the query.
#[derive(Clone, Debug)]
pub enum Tok<'a> {
    Ref(&'a [u8]),
    Own(Arc<[u8]>),
}

impl<'a> Tok<'a> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Tok::Ref(b) => b,
            Tok::Own(b) => b,
        }
    }

    /// The token as text (tokens are UTF-8; anything else has no canonical form).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.bytes()).unwrap_or("")
    }

    /// A stored cell as a term: borrowed when its bytes are canonical, else
    /// re-rendered. `None` when the cell is not a term token at all.
    pub fn from_cell(cell: &'a [u8]) -> Option<Tok<'a>> {
        if is_canonical_fast(cell) {
            return Some(Tok::Ref(cell));
        }
        let s = std::str::from_utf8(cell).ok()?;
        let t = tok::parse_token(s).ok()?;
        Some(Tok::Own(tok::render(&t, Escaping::Pycottas).into_bytes().into()))
    }

    /// The canonical token of an oxrdf term.
    pub fn from_term(t: &Term) -> Tok<'static> {
        Tok::Own(tok::render(&to_ours(t), Escaping::Pycottas).into_bytes().into())
    }

    /// Our term model, for read-path patterns.
    pub fn to_ours(&self) -> Option<tok::Term> {
        tok::parse_token(std::str::from_utf8(self.bytes()).ok()?).ok()
    }

    pub fn is_literal(&self) -> bool {
        self.bytes().first() == Some(&b'"')
    }

    pub fn is_iri(&self) -> bool {
        self.bytes().first() == Some(&b'<')
    }
}

impl PartialEq for Tok<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Tok<'_> {}

impl Hash for Tok<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

const XSD_STRING_SUFFIX: &[u8] = b"^^<http://www.w3.org/2001/XMLSchema#string>";

/// True when `token` is certainly already in the canonical rendering, decided
/// from its bytes alone: no escapes at all (the only place renderings differ),
/// a literal's two quotes only, a lower-case language tag and no explicit
/// `xsd:string`. Anything else takes the parse-and-render path; a false
/// `false` only costs time.
pub fn is_canonical_fast(token: &[u8]) -> bool {
    if token.iter().any(|&b| b == b'\\' || b == b'\n' || b == b'\r') {
        return false;
    }
    match token.first() {
        Some(b'"') => {}
        // An IRI, a blank node, the default graph; anything else is parsed
        // (and refused if it is not a term).
        Some(b'<') => return token.len() > 2 && token.ends_with(b">"),
        Some(b'_') => return token.len() > 2 && token.starts_with(b"_:"),
        _ => return token == b"DEFAULT",
    }
    let quotes = token.iter().filter(|&&b| b == b'"').count();
    if quotes != 2 {
        return false;
    }
    let close = token.iter().rposition(|&b| b == b'"').unwrap_or(0);
    let suffix = &token[close + 1..];
    match suffix.first() {
        None => true,
        Some(b'@') => suffix.len() > 1 && !suffix.iter().any(u8::is_ascii_uppercase),
        Some(b'^') => suffix.starts_with(b"^^<") && suffix.ends_with(b">") && suffix != XSD_STRING_SUFFIX,
        Some(_) => false,
    }
}

/// A cell token as an oxrdf term (`DEFAULT` has no term: `None`).
pub fn from_token(token: &[u8]) -> Option<Term> {
    let s = std::str::from_utf8(token).ok()?;
    Some(match tok::parse_token(s).ok()? {
        tok::Term::Iri(i) => NamedNode::new_unchecked(i).into(),
        tok::Term::Blank(b) => BlankNode::new_unchecked(b).into(),
        tok::Term::Literal(l) => match l.kind {
            LiteralKind::Simple => Literal::new_simple_literal(l.lexical).into(),
            LiteralKind::Lang(tag) => Literal::new_language_tagged_literal_unchecked(l.lexical, tag).into(),
            LiteralKind::Typed(dt) => {
                Literal::new_typed_literal(l.lexical, NamedNode::new_unchecked(dt)).into()
            }
        },
        tok::Term::DefaultGraph => return None,
    })
}

/// An oxrdf term as our term model (for pattern lookups).
pub fn to_ours(t: &Term) -> tok::Term {
    match t {
        Term::NamedNode(n) => tok::Term::Iri(n.as_str().to_owned()),
        Term::BlankNode(b) => tok::Term::Blank(b.as_str().to_owned()),
        Term::Literal(l) => tok::Term::Literal(match l.language() {
            Some(tag) => tok::Literal::lang(l.value(), tag),
            None => tok::Literal::typed(l.value(), l.datatype().as_str()),
        }),
        #[allow(unreachable_patterns)]
        _ => tok::Term::Iri(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast check never calls a token canonical that rendering would change.
    #[test]
    fn fast_check_agrees_with_rendering() {
        let cases: &[&str] = &[
            "<http://a/b>",
            "_:b0",
            "\"plain\"",
            "\"x\"@en",
            "\"x\"@EN",
            "\"x\"@en-GB",
            "\"1\"^^<http://www.w3.org/2001/XMLSchema#integer>",
            "\"s\"^^<http://www.w3.org/2001/XMLSchema#string>",
            "\"tab\there\"",
            "\"tab\\there\"",
            "\"q\\\"uote\"",
            "\"new\\nline\"",
            "\"caf\\u00E9\"",
            "<http://a/\\u00E9>",
            "\"\"",
            "DEFAULT",
            "garbage",
            "<unclosed",
        ];
        let mut canonical = 0;
        for c in cases {
            let rendered = tok::parse_token(c).map(|t| tok::render(&t, Escaping::Pycottas));
            if is_canonical_fast(c.as_bytes()) {
                canonical += 1;
                assert_eq!(rendered.as_deref(), Ok(*c), "{c} was called canonical");
            }
            if let Ok(r) = &rendered {
                let t = Tok::from_cell(c.as_bytes()).expect("parses");
                assert_eq!(t.bytes(), r.as_bytes(), "{c}");
            }
        }
        assert!(canonical >= 8, "the fast path should take the common shapes");
    }
}
