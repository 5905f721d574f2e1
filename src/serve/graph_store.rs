//! The SPARQL 1.1 Graph Store HTTP Protocol at `/store`: indirect
//! identification (`?default`, `?graph=IRI`, or neither for the whole
//! dataset, as Oxigraph does) and direct identification under `/store/…`,
//! where the graph's IRI is the request's URL on this endpoint
//! (`http://{bind}/store/…`). A direct path is a name, never a file: it
//! only has to be an IRI, and `.` / `..` segments are refused so that one
//! graph has one spelling.
//!
//! Reads are CONSTRUCT queries (or, for the dataset, a dump of the view's
//! quads) through the same streamed path as `/query`; writes become one
//! update request each (PUT = DROP SILENT then INSERT DATA, one batch, so a
//! reader never sees the graph half-replaced).

use oxrdf::{GraphName, NamedNode, Quad};
use oxttl::{NQuadsParser, NTriplesParser, TriGParser, TurtleParser};
use spargebra::algebra::GraphTarget;
use spargebra::term::{GraphName as SparqlGraph, Quad as SparqlQuad};
use spargebra::{GraphUpdateOperation, Update};

use super::negotiate::media_type;
use super::routes::Refused;
use super::{form, multipart};
use crate::view::terms::Tok;
use crate::view::Graphs;

/// What a `/store` request names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Default,
    Named(NamedNode),
    /// No parameter: every graph.
    Dataset,
}

impl Target {
    pub fn from_params(params: &[(String, String)]) -> Result<Target, Refused> {
        let graphs = form::all(params, "graph");
        let default = params.iter().any(|(n, _)| n == "default");
        match (default, &graphs[..]) {
            (false, []) => Ok(Target::Dataset),
            (true, []) => Ok(Target::Default),
            (false, &[iri]) => NamedNode::new(iri)
                .map(Target::Named)
                .map_err(|e| Refused::bad(format!("`graph` {iri:?} is not an IRI: {e}"))),
            _ => Err(Refused::bad("give either `default` or one `graph=IRI`".to_owned())),
        }
    }

    /// The graph a direct path names (`path` starts with `/store/`).
    pub fn direct(path: &str, params: &[(String, String)], bind: &str) -> Result<Target, Refused> {
        let rest = path.strip_prefix("/store/").unwrap_or_default();
        if params.iter().any(|(n, _)| n == "graph" || n == "default") {
            return Err(Refused::bad(
                "give either a graph path under /store/ or `graph=IRI` / `default`".into(),
            ));
        }
        if rest.is_empty() || rest.split('/').any(|seg| seg == "." || seg == ".." || seg.is_empty()) {
            return Err(Refused::bad(format!(
                "{path:?} is not a graph path: segments must be non-empty and not `.` or `..`"
            )));
        }
        let iri = format!("http://{bind}{path}");
        NamedNode::new(&iri)
            .map(Target::Named)
            .map_err(|e| Refused::bad(format!("{path:?} does not make a graph IRI ({iri}): {e}")))
    }

    /// The CONSTRUCT that reads this graph.
    pub fn construct(&self) -> Option<String> {
        match self {
            Target::Default => Some("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }".to_owned()),
            Target::Named(g) => {
                Some(format!("CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {g} {{ ?s ?p ?o }} }}"))
            }
            Target::Dataset => None,
        }
    }

    fn graph_target(&self) -> GraphTarget {
        match self {
            Target::Named(g) => GraphTarget::NamedNode(g.clone()),
            _ => GraphTarget::DefaultGraph,
        }
    }

    fn sparql_graph(&self) -> SparqlGraph {
        match self {
            Target::Named(g) => SparqlGraph::NamedNode(g.clone()),
            _ => SparqlGraph::DefaultGraph,
        }
    }
}

/// Whether the snapshot holds any quad in the named graph (a quad store
/// has no empty graphs).
pub fn graph_exists(snapshot: &crate::view::Snapshot, g: &NamedNode) -> Result<bool, Refused> {
    let tok = Tok::from_term(&oxrdf::Term::NamedNode(g.clone()));
    let view = snapshot.view();
    let (mut quads, _) = view.quads(None, None, None, Graphs::Named(&tok)).map_err(Refused::store)?;
    quads.next().transpose().map(|q| q.is_some()).map_err(Refused::store)
}

/// Whether `media` is a syntax of triples (one graph), not of quads.
pub fn is_triple_syntax(media: &str) -> bool {
    matches!(media, "application/n-triples" | "text/plain" | "text/turtle" | "application/x-turtle")
}

/// The body's statements, parsed as its media type says. A graph takes
/// triple syntaxes; the dataset also takes N-Quads and TriG.
pub fn parse_body(body: &[u8], media: &str, target: &Target, base: &str) -> Result<Vec<Quad>, Refused> {
    let bad = |e: String| Refused::bad(format!("the request body does not parse as {media}: {e}"));
    let into = |t: oxrdf::Triple| t.in_graph(GraphName::DefaultGraph);
    let quads: Result<Vec<Quad>, _> = match media {
        "application/n-triples" | "text/plain" => {
            NTriplesParser::new().for_slice(body).map(|r| r.map(into)).collect()
        }
        "text/turtle" | "application/x-turtle" => {
            let parser = TurtleParser::new().with_base_iri(base).map_err(|e| bad(e.to_string()))?;
            parser.for_slice(body).map(|r| r.map(into)).collect()
        }
        "application/n-quads" if *target == Target::Dataset => NQuadsParser::new().for_slice(body).collect(),
        "application/trig" if *target == Target::Dataset => {
            let parser = TriGParser::new().with_base_iri(base).map_err(|e| bad(e.to_string()))?;
            parser.for_slice(body).collect()
        }
        other => {
            let accepted = if *target == Target::Dataset {
                "application/n-triples, text/turtle, application/n-quads or application/trig"
            } else {
                "application/n-triples or text/turtle (a graph holds triples)"
            };
            return Err(Refused::unsupported(other, accepted));
        }
    };
    quads.map_err(|e| bad(e.to_string()))
}

/// A write's body, split once: one document of the request's media type,
/// or with `multipart/form-data` its parts, each of its own type (as an HTML
/// form with several file inputs uploads them).
pub struct Upload {
    body: bytes::Bytes,
    media: String,
    parts: Option<Vec<multipart::Part>>,
}

impl Upload {
    pub fn split(body: bytes::Bytes, content_type: &str) -> Result<Upload, Refused> {
        let media = media_type(content_type);
        let parts = if media == "multipart/form-data" {
            let bad =
                |m: String| Refused::bad(format!("the multipart/form-data body ({} bytes): {m}", body.len()));
            Some(multipart::parts(body.clone(), content_type).map_err(bad)?)
        } else {
            None
        };
        Ok(Upload { body, media, parts })
    }

    /// Whether it holds triples only (a POST of it to `/store` creates a
    /// graph): a triple syntax, or parts that all are.
    pub fn is_triples(&self) -> bool {
        match &self.parts {
            Some(parts) => !parts.is_empty() && parts.iter().all(|p| is_triple_syntax(&p.media)),
            None => is_triple_syntax(&self.media),
        }
    }

    /// Its statements, each document parsed as its type says.
    pub fn parse(&self, target: &Target, base: &str) -> Result<Vec<Quad>, Refused> {
        let Some(parts) = &self.parts else {
            return parse_body(&self.body, &self.media, target, base);
        };
        let mut quads = Vec::new();
        for part in parts {
            let parsed = parse_body(&part.body, &part.media, target, base)
                .map_err(|r| r.reworded(|m| format!("multipart part {:?}: {m}", part.name)))?;
            quads.extend(parsed);
        }
        Ok(quads)
    }
}

/// The update a write performs: `replace` drops the graph first (PUT).
pub fn write_update(target: &Target, quads: Vec<Quad>, replace: bool) -> Result<Update, Refused> {
    let mut operations = Vec::new();
    if replace {
        operations.push(GraphUpdateOperation::Drop { silent: true, graph: target.graph_target() });
    }
    let data = quads.into_iter().map(|q| to_sparql(q, target)).collect::<Result<Vec<_>, _>>()?;
    if !data.is_empty() {
        operations.push(GraphUpdateOperation::InsertData { data });
    }
    Ok(Update { base_iri: None, operations })
}

/// DELETE: the graph dropped.
pub fn delete_update(target: &Target) -> Update {
    Update {
        base_iri: None,
        operations: vec![GraphUpdateOperation::Drop { silent: true, graph: target.graph_target() }],
    }
}

fn to_sparql(q: Quad, target: &Target) -> Result<SparqlQuad, Refused> {
    let graph_name = match (target, q.graph_name) {
        (Target::Dataset, GraphName::NamedNode(g)) => SparqlGraph::NamedNode(g),
        (Target::Dataset, GraphName::DefaultGraph) => SparqlGraph::DefaultGraph,
        (Target::Dataset, GraphName::BlankNode(b)) => {
            return Err(Refused::bad(format!(
                "graph name {b}: a blank node cannot name a graph in this store"
            )))
        }
        (target, _) => target.sparql_graph(),
    };
    Ok(SparqlQuad { subject: q.subject, predicate: q.predicate, object: q.object, graph_name })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn targets_come_from_the_parameters() {
        assert_eq!(Target::from_params(&params(&[])).unwrap(), Target::Dataset);
        assert_eq!(Target::from_params(&params(&[("default", "")])).unwrap(), Target::Default);
        let named = Target::from_params(&params(&[("graph", "http://ex.org/g")])).unwrap();
        assert_eq!(named, Target::Named(NamedNode::new("http://ex.org/g").unwrap()));
        assert!(Target::from_params(&params(&[("default", ""), ("graph", "http://ex.org/g")])).is_err());
        assert!(Target::from_params(&params(&[("graph", "not an iri")])).is_err());
    }

    #[test]
    fn a_put_is_one_request_that_drops_then_inserts() {
        let target = Target::Named(NamedNode::new("http://ex.org/g").unwrap());
        let quads = parse_body(b"<a> <b> <c> .", "text/turtle", &target, "http://ex.org/").unwrap();
        let update = write_update(&target, quads, true).unwrap();
        assert_eq!(
            update.to_string().split_whitespace().collect::<Vec<_>>().join(" "),
            "DROP SILENT GRAPH <http://ex.org/g> ; INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/a> <http://ex.org/b> <http://ex.org/c> } } ;"
        );
    }

    #[test]
    fn a_graph_refuses_quad_syntaxes_and_bad_bodies_say_where() {
        let g = Target::Default;
        assert!(parse_body(
            b"<http://a> <http://b> <http://c> <http://g> .",
            "application/n-quads",
            &g,
            "http://x/"
        )
        .is_err());
        let e =
            parse_body(b"<http://a> <http://b> .", "application/n-triples", &g, "http://x/").err().unwrap();
        assert!(e.message().contains("line 1") || e.message().contains("1:"), "{}", e.message());
    }
}
