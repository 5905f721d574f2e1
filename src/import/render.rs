//! oxrdf terms → COTTAS cell tokens in the pycottas rendering, with blank-node
//! labels made deterministic and distinct between the documents of one
//! import (docs/format.md §3, "Blank-node labels").
//!
//! N-Quads and N-Triples spell every blank node with a label, so a label
//! keeps its spelling behind its document's prefix (`_:x` of the third input
//! is `_:b2_x`): any parser thread renders any line the same way, with no
//! numbering to keep in document order. Turtle and TriG parsers invent
//! random labels for `[]` and lists, so there labels are numbered in order
//! of first appearance (`_:b0`, `_:b1`, …; no `_`, so the two never meet).

use std::collections::HashMap;

use oxrdf::{GraphName, NamedOrBlankNode, Quad, Term};

use crate::format::term::{self, Escaping, Literal};

#[derive(Default)]
pub struct Renderer {
    labels: Labels,
}

enum Labels {
    /// In order of first appearance, numbered across documents.
    Numbered { seen: HashMap<String, u64>, next: u64 },
    /// The label as written, after `_:` and this document prefix.
    Kept { prefix: String },
}

impl Default for Labels {
    fn default() -> Self {
        Labels::Numbered { seen: HashMap::new(), next: 0 }
    }
}

/// The token prefix of the blank nodes of input `document` (counted from 0)
/// of a line-based syntax, whose labels are kept: `_:b<document>_`.
pub fn kept_label_prefix(document: usize) -> String {
    format!("_:b{document}_")
}

impl Renderer {
    /// A renderer for input `document` of a line-based syntax, whose blank
    /// nodes keep their labels behind [`kept_label_prefix`].
    pub fn keeping_labels(document: usize) -> Renderer {
        Renderer { labels: Labels::Kept { prefix: kept_label_prefix(document) } }
    }

    /// Blank nodes are scoped to one document: call between inputs.
    pub fn new_document(&mut self) {
        if let Labels::Numbered { seen, .. } = &mut self.labels {
            seen.clear();
        }
    }

    fn blank(&mut self, out: &mut String, label: &str) {
        match &mut self.labels {
            Labels::Kept { prefix } => {
                out.push_str(prefix);
                out.push_str(label);
            }
            Labels::Numbered { seen, next } => {
                let n = *seen.entry(label.to_owned()).or_insert_with(|| {
                    *next += 1;
                    *next - 1
                });
                out.push_str("_:b");
                out.push_str(&n.to_string());
            }
        }
    }

    /// The four cell tokens of `q`; `fallback_graph` replaces the default graph.
    pub fn quad(&mut self, tokens: &mut [String; 4], q: &Quad, fallback_graph: Option<&str>) {
        let [s, p, o, g] = tokens;
        self.subject(s, &q.subject);
        p.clear();
        push_iri(p, q.predicate.as_str());
        self.object(o, &q.object);
        let fallback = if q.graph_name.is_default_graph() { fallback_graph } else { None };
        self.graph(g, &q.graph_name, fallback);
    }

    pub fn subject(&mut self, out: &mut String, s: &NamedOrBlankNode) {
        out.clear();
        match s {
            NamedOrBlankNode::NamedNode(n) => push_iri(out, n.as_str()),
            NamedOrBlankNode::BlankNode(b) => self.blank(out, b.as_str()),
        }
    }

    pub fn object(&mut self, out: &mut String, o: &Term) {
        out.clear();
        match o {
            Term::NamedNode(n) => push_iri(out, n.as_str()),
            Term::BlankNode(b) => self.blank(out, b.as_str()),
            Term::Literal(l) => {
                let lit = match l.language() {
                    Some(tag) => Literal::lang(l.value(), tag),
                    None => Literal::typed(l.value(), l.datatype().as_str()),
                };
                term::write_token(out, &term::Term::Literal(lit), Escaping::Pycottas);
            }
            #[allow(unreachable_patterns)]
            _ => out.push_str("\"unsupported RDF 1.2 term\""),
        }
    }

    /// Blank-node graph names are outside the format (docs/format.md §3): they
    /// become `urn:cottas-tui:bnode-graph:<n>` IRIs, as deterministic as labels.
    pub fn graph(&mut self, out: &mut String, g: &GraphName, fallback: Option<&str>) {
        out.clear();
        match g {
            GraphName::NamedNode(n) => push_iri(out, n.as_str()),
            GraphName::BlankNode(b) => {
                let mut label = String::new();
                self.blank(&mut label, b.as_str());
                out.push_str("<urn:cottas-tui:bnode-graph:");
                out.push_str(&label[2..]);
                out.push('>');
            }
            GraphName::DefaultGraph => match fallback {
                Some(iri) => push_iri(out, iri),
                None => out.push_str(term::DEFAULT_GRAPH),
            },
        }
    }
}

fn push_iri(out: &mut String, iri: &str) {
    out.push('<');
    out.push_str(iri);
    out.push('>');
}
