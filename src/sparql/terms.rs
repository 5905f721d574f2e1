//! Conversions between oxrdf terms (spareval's model) and cell tokens.

use oxrdf::{BlankNode, Literal, NamedNode, Term};

use crate::format::term::{self as tok, LiteralKind};

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
