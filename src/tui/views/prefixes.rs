//! Short names for long IRIs in the results table: the query's own PREFIX
//! declarations first, then well-known vocabularies, then the store's most
//! frequent namespaces (named once per version, so a namespace keeps its
//! name from one result to the next), then the namespaces the result itself
//! uses most; each named after its last path segment. Pure functions of the
//! query text, the store's namespaces and the cells, run once per result.

use std::collections::HashMap;

/// Namespaces people recognise by their usual prefix.
const WELL_KNOWN: &[(&str, &str)] = &[
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("foaf", "http://xmlns.com/foaf/0.1/"),
    ("dcterms", "http://purl.org/dc/terms/"),
    ("schema", "https://schema.org/"),
    ("skos", "http://www.w3.org/2004/02/skos/core#"),
];

/// How many namespaces of the result get a name of their own.
const AUTO: usize = 8;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prefixes {
    /// (prefix, namespace), longest namespace first so the most specific wins.
    pub entries: Vec<(String, String)>,
    /// How many of `entries` were named here rather than declared or well known.
    pub auto: Vec<(String, String)>,
}

/// `PREFIX p: <ns>` declarations of a query text (case-insensitive keyword).
pub fn declared(query: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let lower = query.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("prefix") {
        let start = at + i + "prefix".len();
        at = start;
        let rest = &query[start..];
        let Some(colon) = rest.find(':') else { break };
        let name = rest[..colon].trim();
        if !name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.') {
            continue;
        }
        let after = rest[colon + 1..].trim_start();
        let Some(ns) = after.strip_prefix('<').and_then(|s| s.split_once('>')).map(|(ns, _)| ns) else {
            continue;
        };
        out.push((name.to_string(), ns.to_string()));
    }
    out
}

/// The namespace of an IRI: up to and including its last `#` or `/`.
fn namespace(iri: &str) -> Option<&str> {
    let cut = iri.rfind(['#', '/'])?;
    (cut + 1 < iri.len()).then(|| &iri[..=cut])
}

/// Every IRI a cell mentions: itself, or a literal's datatype.
fn iris(cell: &str) -> impl Iterator<Item = &str> {
    let own = cell.strip_prefix('<').and_then(|c| c.strip_suffix('>'));
    let datatype = cell.rsplit_once("^^<").and_then(|(_, d)| d.strip_suffix('>'));
    own.into_iter().chain(datatype)
}

/// A prefix name for a namespace: its last path segment, letters and
/// digits only (`https://x.example/people/` → `people`); for a namespace
/// that is a host alone, the host's most specific name, without `www` and
/// the top-level domain (`http://www.Department0.University0.edu/` →
/// `department0`, not `wwwdepartment0university0edu`); an ontology file's
/// name without its extension (`…/univ-bench.owl#` → `univbench`).
fn name_for(ns: &str) -> String {
    let trimmed = ns.trim_end_matches(['/', '#']);
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    let segment = if after_scheme.contains(['/', '#']) {
        // An ontology file's name without its extension (`univ-bench.owl#`).
        let last = trimmed.rsplit(['/', '#', ':']).next().unwrap_or("");
        [".owl", ".rdfs", ".rdf", ".ttl", ".nt", ".n3", ".xml"]
            .iter()
            .find_map(|ext| last.strip_suffix(ext))
            .unwrap_or(last)
    } else {
        let host = after_scheme.split(':').next().unwrap_or("");
        let labels: Vec<&str> = host.split('.').filter(|l| !l.eq_ignore_ascii_case("www")).collect();
        let named = if labels.len() > 1 { &labels[..labels.len() - 1] } else { &labels[..] };
        named.first().copied().unwrap_or("")
    };
    let name: String =
        segment.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_lowercase();
    match name.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => name,
        _ => String::new(),
    }
}

/// The namespaces of a sample of IRIs (dictionary tokens: `<iri>` or a
/// literal with a datatype), most frequent first, those seen at least twice.
pub fn frequent_namespaces<'a>(tokens: impl Iterator<Item = &'a str>, keep: usize) -> Vec<(String, usize)> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in tokens {
        for iri in iris(t) {
            if let Some(ns) = namespace(iri) {
                *counts.entry(ns).or_default() += 1;
            }
        }
    }
    let mut v: Vec<(String, usize)> =
        counts.into_iter().filter(|(_, n)| *n >= 2).map(|(ns, n)| (ns.to_string(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(keep);
    v
}

/// A name for `ns` that no entry has taken: its last segment, else `nsN`.
fn fresh_name(entries: &[(String, String)], ns: &str) -> String {
    let taken = |p: &str| entries.iter().any(|(n, _)| n == p);
    let name = name_for(ns);
    if !name.is_empty() && !taken(&name) {
        return name;
    }
    (1..).map(|i| format!("ns{i}")).find(|n| !taken(n)).expect("unbounded")
}

/// The prefixes for a result of `query` with these rows, over a store whose
/// most frequent namespaces are `store` (most frequent first).
pub fn for_result(query: &str, rows: &[Vec<String>], store: &[(String, usize)]) -> Prefixes {
    let mut entries = declared(query);
    let known = |entries: &[(String, String)], ns: &str| entries.iter().any(|(_, n)| n == ns);
    let taken = |entries: &[(String, String)], p: &str| entries.iter().any(|(n, _)| n == p);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for cell in rows.iter().flatten() {
        for iri in iris(cell) {
            if let Some(ns) = namespace(iri) {
                *counts.entry(ns).or_default() += 1;
            }
        }
    }
    for (p, ns) in WELL_KNOWN {
        if counts.contains_key(ns) && !known(&entries, ns) && !taken(&entries, p) {
            entries.push((p.to_string(), ns.to_string()));
        }
    }
    // The store's namespaces are named in the store's order whatever the
    // result holds (stable names); only those the result uses are kept.
    let mut auto = Vec::new();
    let mut named = entries.clone();
    let store: Vec<&(String, usize)> =
        store.iter().filter(|(ns, _)| !known(&entries, ns)).take(AUTO).collect();
    for (ns, _) in store {
        let name = fresh_name(&named, ns);
        named.push((name.clone(), ns.clone()));
        if counts.contains_key(ns.as_str()) {
            entries.push((name.clone(), ns.clone()));
            auto.push((name, ns.clone()));
        }
    }
    let mut frequent: Vec<(&str, usize)> =
        counts.into_iter().filter(|(ns, n)| *n >= 2 && !known(&named, ns)).collect();
    frequent.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (ns, _) in frequent.into_iter().take(AUTO.saturating_sub(auto.len())) {
        let name = fresh_name(&named, ns);
        named.push((name.clone(), ns.to_string()));
        entries.push((name.clone(), ns.to_string()));
        auto.push((name, ns.to_string()));
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.1.len()));
    Prefixes { entries, auto }
}

/// Whether `local` can follow `prefix:` as written (a conservative subset
/// of SPARQL's PN_LOCAL, so what is shown can be typed back).
fn is_local(local: &str) -> bool {
    !local.is_empty()
        && !local.ends_with('.')
        && local.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn shorten<'a>(iri: &'a str, prefixes: &'a Prefixes) -> Option<String> {
    prefixes.entries.iter().find_map(|(p, ns)| {
        let local = iri.strip_prefix(ns.as_str())?;
        is_local(local).then(|| format!("{p}:{local}"))
    })
}

/// A cell as shown: an IRI (or a literal's datatype) under a prefix written
/// `prefix:local`; anything else as it is.
pub fn abbreviate(cell: &str, prefixes: &Prefixes) -> String {
    if let Some(iri) = cell.strip_prefix('<').and_then(|c| c.strip_suffix('>')) {
        return shorten(iri, prefixes).unwrap_or_else(|| cell.to_string());
    }
    if let Some((lexical, dt)) = cell.rsplit_once("^^<") {
        if let Some(short) = dt.strip_suffix('>').and_then(|d| shorten(d, prefixes)) {
            return format!("{lexical}^^{short}");
        }
    }
    cell.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_auto_and_well_known_prefixes_shorten_cells() {
        let q = "PREFIX ex: <https://ex.example/a/>\nprefix : <https://ex.example/empty#> SELECT * {}";
        assert_eq!(
            declared(q),
            [("ex".into(), "https://ex.example/a/".into()), ("".into(), "https://ex.example/empty#".into())]
        );
        let rows = vec![
            vec![
                "<https://demo.example/people/ada>".to_string(),
                "\"1\"^^<http://www.w3.org/2001/XMLSchema#integer>".into(),
            ],
            vec!["<https://demo.example/people/grace>".to_string(), "<https://ex.example/a/b>".into()],
            vec!["<https://demo.example/people/has space?>".to_string(), "\"x\"@en".into()],
        ];
        let p = for_result(q, &rows, &[]);
        assert_eq!(p.auto, [("people".to_string(), "https://demo.example/people/".to_string())]);
        assert_eq!(abbreviate(&rows[0][0], &p), "people:ada");
        assert_eq!(abbreviate(&rows[0][1], &p), "\"1\"^^xsd:integer");
        assert_eq!(abbreviate(&rows[1][1], &p), "ex:b");
        assert_eq!(
            abbreviate(&rows[2][0], &p),
            "<https://demo.example/people/has space?>",
            "not a local name"
        );
        assert_eq!(abbreviate("\"x\"@en", &p), "\"x\"@en");
        assert_eq!(abbreviate("<https://ex.example/empty#z>", &p), ":z");
    }

    #[test]
    fn a_host_alone_is_named_by_its_most_specific_label() {
        assert_eq!(name_for("http://www.Department0.University0.edu/"), "department0");
        assert_eq!(name_for("https://example.org/"), "example");
        assert_eq!(name_for("http://localhost:8080/"), "localhost");
        assert_eq!(name_for("http://dbpedia.org/resource/"), "resource");
        assert_eq!(name_for("http://www.w3.org/ns/prov#"), "prov");
        assert_eq!(name_for("http://swat.cse.lehigh.edu/onto/univ-bench.owl#"), "univbench");
    }

    #[test]
    fn a_namespace_without_a_usable_name_is_numbered() {
        let rows: Vec<Vec<String>> =
            (0..3).map(|i| vec![format!("<https://h.example/2024/{i}x>"), format!("<urn:x:{i}>")]).collect();
        let p = for_result("", &rows, &[]);
        let names: Vec<&str> = p.auto.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ns1"], "an IRI with no / or # has no namespace: {p:?}");
        assert_eq!(abbreviate("<https://h.example/2024/1x>", &p), "ns1:1x");
    }

    /// A namespace frequent in the store keeps its name whatever the result
    /// holds, even used once; one the result does not use stays out of the
    /// legend but keeps its name reserved.
    #[test]
    fn the_stores_namespaces_name_first_and_stay_stable() {
        let tokens = [
            "<https://s.example/people/a>",
            "<https://s.example/people/b>",
            "<https://t.example/people/c>",
            "<https://t.example/people/d>",
            "<https://t.example/people/e>",
            "\"1\"^^<https://u.example/types#int>",
        ];
        let store = frequent_namespaces(tokens.into_iter(), 10);
        assert_eq!(store, [("https://t.example/people/".into(), 3), ("https://s.example/people/".into(), 2)]);
        let one = vec![vec!["<https://s.example/people/z>".to_string()]];
        let p = for_result("", &one, &store);
        assert_eq!(p.auto, [("ns1".to_string(), "https://s.example/people/".to_string())], "people is t's");
        assert_eq!(abbreviate(&one[0][0], &p), "ns1:z");
        let both =
            vec![vec!["<https://t.example/people/q>".to_string(), "<https://s.example/people/r>".into()]];
        let p = for_result("", &both, &store);
        assert_eq!(abbreviate(&both[0][0], &p), "people:q");
        assert_eq!(abbreviate(&both[0][1], &p), "ns1:r", "the same name as in the other result");
    }
}
