//! The common mistakes in a refused request, said in words.
//!
//! peg's expected set is a poor guide to them. Keywords are matched without
//! case by a rule peg reports as one of its alternatives, so `SELECT ?s, ?p`
//! came out as "expected DISTINCT", `SELEC ?s` as "expected CONSTRUCT", a
//! missing `)` as "expected NOT" and an unclosed string as the escapes it
//! could have held. These checks look at the tokens instead: unclosed strings
//! and IRIs, brackets that do not pair, the query form, the SELECT clause,
//! `AS`, `LIMIT`, and words that are no keyword. A finding is used only if
//! it was detected no later than where spargebra gave up (the furthest point
//! any alternative reached), so a finding never points past the real error.

use super::scan::{scan, Kind, Pos, Problem, Scan, Token};

/// What the text was parsed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Query,
    Update,
}

const QUERY_FORMS: [&str; 4] = ["SELECT", "CONSTRUCT", "DESCRIBE", "ASK"];

const UPDATE_OPERATIONS: [&str; 10] =
    ["INSERT", "DELETE", "WITH", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY"];

/// Every other keyword of SPARQL 1.1 (and the 1.2 words spargebra knows).
#[rustfmt::skip]
const KEYWORDS: &[&str] = &[
    "BASE", "PREFIX", "DISTINCT", "REDUCED", "AS", "FROM", "NAMED", "WHERE", "GROUP", "BY",
    "HAVING", "ORDER", "ASC", "DESC", "LIMIT", "OFFSET", "VALUES", "SILENT", "INTO", "TO", "DATA",
    "USING", "DEFAULT", "ALL", "GRAPH", "OPTIONAL", "SERVICE", "BIND", "UNDEF", "MINUS", "UNION",
    "FILTER", "NOT", "IN", "EXISTS", "SEPARATOR", "LATERAL", "VERSION", "a", "true", "false",
];

/// The built-in functions and aggregates.
#[rustfmt::skip]
pub const FUNCTIONS: &[&str] = &[
    "STR", "LANG", "LANGMATCHES", "DATATYPE", "BOUND", "IRI", "URI", "BNODE", "RAND", "ABS",
    "CEIL", "FLOOR", "ROUND", "CONCAT", "STRLEN", "UCASE", "LCASE", "ENCODE_FOR_URI", "CONTAINS",
    "STRSTARTS", "STRENDS", "STRBEFORE", "STRAFTER", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES",
    "SECONDS", "TIMEZONE", "TZ", "NOW", "UUID", "STRUUID", "MD5", "SHA1", "SHA256", "SHA384",
    "SHA512", "COALESCE", "IF", "STRLANG", "STRDT", "sameTerm", "isIRI", "isURI", "isBLANK",
    "isLITERAL", "isNUMERIC", "REGEX", "SUBSTR", "REPLACE", "COUNT", "SUM", "MIN", "MAX", "AVG",
    "SAMPLE", "GROUP_CONCAT", "TRIPLE", "SUBJECT", "PREDICATE", "OBJECT", "isTRIPLE", "LANGDIR",
    "STRLANGDIR", "hasLANG", "hasLANGDIR", "ADJUST",
];

struct Finding {
    /// Where the mistake shows: compared with where spargebra gave up.
    detected: Pos,
    /// Where the message points.
    at: Pos,
    message: String,
}

/// The message for `text`, refused by spargebra at `refused_at`, when one of
/// the checks explains it.
pub fn explain(text: &str, request: Request, refused_at: Pos) -> Option<String> {
    let scan = scan(text);
    let checks = [
        lexical(&scan),
        brackets(&scan),
        form(&scan, request),
        select_clause(&scan.tokens),
        as_names(&scan.tokens),
        counts(&scan.tokens),
        empty_clauses(&scan.tokens),
        bare_language_tags(&scan.tokens),
        short_triples(&scan.tokens),
        unknown_words(&scan.tokens),
        (request == Request::Update).then(|| update_operations(&scan)).flatten(),
        (request == Request::Query).then(|| second_query(&scan.tokens)).flatten(),
    ];
    let found =
        checks.into_iter().flatten().filter(|f| f.detected <= refused_at).min_by_key(|f| f.detected)?;
    Some(format!("error at {}: {}", found.at, found.message))
}

fn lexical(scan: &Scan) -> Option<Finding> {
    Some(match scan.problem.as_ref()? {
        Problem::UnclosedString { at, end, long } => {
            let message = if *long {
                "this long string is not closed (it needs its three closing quotes)".to_string()
            } else if *end < scan.end {
                "this string is not closed before the end of its line (strings over several lines take three quotes)".to_string()
            } else {
                "this string is not closed".to_string()
            };
            Finding { detected: *end, at: *at, message }
        }
        Problem::UnclosedIri { at, end, text } => {
            let before =
                if *end < scan.end { format!("before the space at {end}") } else { "at the end".into() };
            Finding {
                detected: *end,
                at: *at,
                message: format!("the IRI `{text}` is not closed: expected `>` {before}"),
            }
        }
    })
}

/// `{}`, `()` and `[]` pair up.
fn brackets(scan: &Scan) -> Option<Finding> {
    let mut open: Vec<&Token> = Vec::new();
    for t in scan.tokens.iter().filter(|t| t.kind == Kind::Punct) {
        if ['{', '(', '['].into_iter().any(|o| t.is(o)) {
            open.push(t);
            continue;
        }
        let wants = match t.text {
            "}" => '{',
            ")" => '(',
            "]" => '[',
            _ => continue,
        };
        let message = match open.pop() {
            Some(o) if o.is(wants) => continue,
            Some(o) => {
                format!(
                    "`{}` does not close the `{}` opened at {} (expected `{}` first)",
                    t.text,
                    o.text,
                    o.at,
                    closer(o)
                )
            }
            None => format!("`{}` has nothing to close", t.text),
        };
        return Some(Finding { detected: t.at, at: t.at, message });
    }
    // An unclosed string or IRI hides the rest: its own finding says more.
    if scan.problem.is_some() {
        return None;
    }
    let o = open.pop()?;
    let message = format!("this `{}` is not closed (expected `{}`)", o.text, closer(o));
    Some(Finding { detected: scan.end, at: o.at, message })
}

fn closer(opener: &Token) -> char {
    match opener.text.chars().next() {
        Some('{') => '}',
        Some('(') => ')',
        _ => ']',
    }
}

/// The first word after the prologue (`BASE <…>`, `PREFIX p: <…>`).
fn form(scan: &Scan, request: Request) -> Option<Finding> {
    let tokens = &scan.tokens;
    let i = after_prologue(tokens);
    let (own, other, their, other_name) = match request {
        Request::Query => (&QUERY_FORMS[..], &UPDATE_OPERATIONS[..], "a query", "an update"),
        Request::Update => (&UPDATE_OPERATIONS[..], &QUERY_FORMS[..], "an update", "a query"),
    };
    let Some(t) = tokens.get(i) else {
        return (request == Request::Query && scan.problem.is_none()).then(|| Finding {
            detected: scan.end,
            at: scan.end,
            message: "the query is empty: expected SELECT, CONSTRUCT, DESCRIBE or ASK".into(),
        });
    };
    if own.iter().any(|w| t.is_word(w)) {
        return None;
    }
    let message = if other.iter().any(|w| t.is_word(w)) {
        format!("`{}` begins {other_name}, not {their}", t.text)
    } else {
        let expected = match request {
            Request::Query => "SELECT, CONSTRUCT, DESCRIBE or ASK",
            Request::Update => "INSERT, DELETE, WITH, LOAD, CLEAR, DROP, CREATE, ADD, MOVE or COPY",
        };
        let hint = suggestion(t.text, own).map(|s| format!(" (did you mean {s}?)")).unwrap_or_default();
        format!("{their} begins with {expected} (after any PREFIX and BASE), not `{}`{hint}", t.text)
    };
    Some(Finding { detected: t.at, at: t.at, message })
}

/// The index of the first token after the prologue: `BASE <…>` and
/// `PREFIX p: <…>`, as many as there are.
fn after_prologue(tokens: &[Token]) -> usize {
    let mut i = 0;
    loop {
        match tokens.get(i) {
            Some(t) if t.is_word("BASE") => i += 2,
            Some(t) if t.is_word("PREFIX") => i += 3,
            _ => return i,
        }
    }
}

/// Between SELECT and the first `{`, FROM or WHERE: no commas, and
/// expressions in parentheses with a name.
fn select_clause(tokens: &[Token]) -> Option<Finding> {
    let start = tokens.iter().position(|t| t.is_word("SELECT"))? + 1;
    let mut depth = 0usize;
    let mut group_start: Option<&Token> = None;
    let mut named = false;
    for (i, t) in tokens.iter().enumerate().skip(start) {
        let finding = |message: String| Some(Finding { detected: t.at, at: t.at, message });
        if depth == 0 {
            if t.is('{') || t.is_word("WHERE") || t.is_word("FROM") {
                return None;
            }
            if t.is(',') {
                return finding("variables in SELECT are separated by spaces, not commas".into());
            }
            let modifier = t.is_word("DISTINCT") || t.is_word("REDUCED");
            if t.kind == Kind::Word && !modifier && tokens.get(i + 1).is_some_and(|n| n.is('(')) {
                return finding(format!(
                    "`{}(…)` in SELECT is written in parentheses with a name: `({}(…) AS ?name)`",
                    t.text, t.text
                ));
            }
        }
        if t.is('(') {
            if depth == 0 {
                (group_start, named) = (Some(t), false);
            }
            depth += 1;
        } else if t.is(')') {
            depth = depth.checked_sub(1)?;
            if depth == 0 && !named {
                let at = group_start?.at;
                return Some(Finding {
                    detected: t.at,
                    at,
                    message: "an expression in SELECT needs a name: `(… AS ?name)`".into(),
                });
            }
        } else if depth == 1 && t.is_word("AS") {
            named = true;
        }
    }
    None
}

/// `AS` names a variable, in SELECT and in BIND.
fn as_names(tokens: &[Token]) -> Option<Finding> {
    tokens.windows(2).find(|w| w[0].is_word("AS") && w[1].kind != Kind::Var).map(|w| Finding {
        detected: w[1].at,
        at: w[0].at,
        message: format!("AS takes a variable (`AS ?name`), not `{}`", w[1].text),
    })
}

/// `LIMIT` and `OFFSET` take a whole number.
fn counts(tokens: &[Token]) -> Option<Finding> {
    tokens.iter().enumerate().find_map(|(i, t)| {
        let word = ["LIMIT", "OFFSET"].into_iter().find(|w| t.is_word(w))?;
        let next = tokens.get(i + 1);
        let whole =
            next.is_some_and(|n| n.kind == Kind::Number && n.text.bytes().all(|b| b.is_ascii_digit()));
        (!whole).then(|| Finding {
            detected: next.map_or(t.at, |n| n.at),
            at: t.at,
            message: format!("{word} takes a whole number, as in `{word} 10`"),
        })
    })
}

/// SELECT with nothing to project, ORDER BY and GROUP BY with nothing to
/// order or group by.
fn empty_clauses(tokens: &[Token]) -> Option<Finding> {
    let ends_clause = |t: Option<&Token>| {
        t.is_none_or(|t| {
            t.is('{')
                || t.is('}')
                || ["WHERE", "FROM", "LIMIT", "OFFSET", "HAVING", "VALUES", "ORDER", "GROUP"]
                    .iter()
                    .any(|w| t.is_word(w))
        })
    };
    tokens.iter().enumerate().find_map(|(i, t)| {
        let (clause, next) = if t.is_word("SELECT") {
            let modifier = tokens.get(i + 1).is_some_and(|n| n.is_word("DISTINCT") || n.is_word("REDUCED"));
            ("SELECT", i + 1 + usize::from(modifier))
        } else if (t.is_word("ORDER") || t.is_word("GROUP"))
            && tokens.get(i + 1).is_some_and(|n| n.is_word("BY"))
        {
            (if t.is_word("ORDER") { "ORDER BY" } else { "GROUP BY" }, i + 2)
        } else {
            return None;
        };
        ends_clause(tokens.get(next)).then(|| {
            let what = match clause {
                "SELECT" => "the variables it returns (`SELECT ?s ?o`) or `*`",
                "GROUP BY" => "variables or expressions, as in `GROUP BY ?g`",
                _ => "variables or expressions, as in `ORDER BY ?s DESC(?n)`",
            };
            Finding {
                detected: tokens.get(next).map_or(t.at, |n| n.at),
                at: t.at,
                message: format!("{clause} needs {what}"),
            }
        })
    })
}

/// A query form, `PREFIX` or `BASE` after a query's last group has closed:
/// a second query in one request (a file holding several).
fn second_query(tokens: &[Token]) -> Option<Finding> {
    let (mut depth, mut closed) = (0, false);
    for t in tokens {
        let begins = QUERY_FORMS.iter().chain(&["PREFIX", "BASE"]).any(|w| t.is_word(w));
        if depth == 0 && closed && begins {
            return Some(Finding {
                detected: t.at,
                at: t.at,
                message: format!(
                    "a second query begins here (`{}`): a request holds one query (on the command line, give each its own -e or -f)",
                    t.text
                ),
            });
        }
        depth = nested(depth, t);
        closed |= depth == 0 && t.is('}');
    }
    None
}

/// A triple pattern of two terms, as `{ ?s ?p }` or `?s ?p .`: spargebra
/// names what might follow (`OPTIONAL`, `LATERAL`, `SERVICE`), which depends
/// on the text after it; the mistake is the missing object. Not inside a
/// `VALUES ?x { … }` block, whose rows are single terms.
fn short_triples(tokens: &[Token]) -> Option<Finding> {
    let is_term = |t: &Token| matches!(t.kind, Kind::Var | Kind::Iri | Kind::Name) || t.is_word("a");
    let mut values_block = false;
    for (i, t) in tokens.iter().enumerate() {
        if t.is('{') {
            values_block = i >= 2 && tokens[i - 2].is_word("VALUES");
        }
        let starts_triple = i == 0 || tokens[i - 1].is('{') || tokens[i - 1].is('.');
        let (Some(second), Some(end)) = (tokens.get(i + 1), tokens.get(i + 2)) else { break };
        if starts_triple && !values_block && is_term(t) && is_term(second) && (end.is('}') || end.is('.')) {
            return Some(Finding {
                detected: end.at,
                at: t.at,
                message: format!(
                    "a triple pattern needs a subject, a predicate and an object: `{} {}` has no object",
                    t.text, second.text
                ),
            });
        }
    }
    None
}

/// `@` after a literal with no language tag.
fn bare_language_tags(tokens: &[Token]) -> Option<Finding> {
    tokens.iter().find(|t| t.kind == Kind::LangTag && t.text == "@").map(|t| Finding {
        detected: t.at,
        at: t.at,
        message: "`@` after a literal takes a language tag, as in `\"chat\"@fr`".into(),
    })
}

/// The shape of each operation of an update request (they are separated by
/// `;` outside brackets): a template (`INSERT {…}`, `DELETE {…}`, `WITH`)
/// needs a WHERE clause, CLEAR and DROP name a graph with GRAPH, and an
/// operation ends where its last block closes.
fn update_operations(scan: &Scan) -> Option<Finding> {
    let tokens = &scan.tokens;
    let mut start = 0;
    while start < tokens.len() {
        let end = operation_end(tokens, start);
        let after = tokens.get(end).map_or(scan.end, |t| t.at);
        if let Some(f) = operation(&tokens[start..end], after) {
            return Some(f);
        }
        start = end + 1;
    }
    None
}

/// The index of the `;` that ends the operation starting at `start`, or the
/// token count.
fn operation_end(tokens: &[Token], start: usize) -> usize {
    let mut depth = 0;
    for (i, t) in tokens.iter().enumerate().skip(start) {
        if depth == 0 && t.is(';') {
            return i;
        }
        depth = nested(depth, t);
    }
    tokens.len()
}

/// One operation's tokens; `after` is where the next one (or the text) begins.
fn operation(op: &[Token], after: Pos) -> Option<Finding> {
    let i = after_prologue(op);
    let head = op.get(i)?;
    let next = op.get(i + 1);
    if (head.is_word("CLEAR") || head.is_word("DROP")) && next.is_some_and(|n| n.kind == Kind::Iri) {
        let word = head.text.to_uppercase();
        let message =
            format!("{word} names a graph after GRAPH (`{word} GRAPH <…>`), or takes DEFAULT, NAMED or ALL");
        return Some(Finding { detected: next?.at, at: next?.at, message });
    }
    let data = next.is_some_and(|n| n.is_word("DATA") || (head.is_word("DELETE") && n.is_word("WHERE")));
    let template = ["INSERT", "DELETE", "WITH"].iter().any(|w| head.is_word(w)) && !data;
    let depth_zero_where = top_level(op).find(|&j| op[j].is_word("WHERE"));
    if template && depth_zero_where.is_none() {
        let word = head.text.to_uppercase();
        let message = match word.as_str() {
            "WITH" => "WITH <…> and its templates need a WHERE clause: `WITH <g> DELETE { … } WHERE { … }`",
            "INSERT" => "`INSERT { … }` needs a WHERE clause: `INSERT { … } WHERE { … }`, or `INSERT DATA { … }` for data without variables",
            _ => "`DELETE { … }` needs a WHERE clause: `DELETE { … } WHERE { … }`, or `DELETE WHERE { … }` to delete what the pattern matches",
        };
        return Some(Finding { detected: after, at: head.at, message: message.into() });
    }
    // The block that ends the operation: DATA's, DELETE WHERE's, or WHERE's.
    let from = if data { i } else { depth_zero_where? };
    let open = (from..op.len()).find(|&j| op[j].is('{'))?;
    let close = block_end(op, open)?;
    let extra = op.get(close + 1)?;
    let operation_word = UPDATE_OPERATIONS.iter().any(|w| extra.is_word(w));
    operation_word.then(|| Finding {
        detected: extra.at,
        at: extra.at,
        message: format!("a `;` goes between update operations, before `{}`", extra.text),
    })
}

/// Indices of `op`'s tokens outside any bracket.
fn top_level<'a>(op: &'a [Token]) -> impl Iterator<Item = usize> + 'a {
    let mut depth = 0;
    op.iter().enumerate().filter_map(move |(j, t)| {
        let at_top = depth == 0;
        depth = nested(depth, t);
        at_top.then_some(j)
    })
}

/// The index of the bracket that closes the one at `open`.
fn block_end(op: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, t) in op.iter().enumerate().skip(open) {
        depth = nested(depth, t);
        if depth == 0 {
            return Some(j);
        }
    }
    None
}

/// The bracket depth after `t`: one more after an opening bracket, one
/// less after a closing one (never below 0).
fn nested(depth: usize, t: &Token) -> usize {
    if t.is('{') || t.is('(') || t.is('[') {
        depth + 1
    } else if t.is('}') || t.is(')') || t.is(']') {
        depth.saturating_sub(1)
    } else {
        depth
    }
}

/// A bare word that is no keyword, function or query form: a misspelt
/// keyword, or a term without its `<…>`, `?`, `:` or quotes.
fn unknown_words(tokens: &[Token]) -> Option<Finding> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        if t.is('{') {
            depth += 1;
        } else if t.is('}') {
            depth = depth.saturating_sub(1);
        }
        if t.kind != Kind::Word || is_known(t.text) {
            continue;
        }
        let call = tokens.get(i + 1).is_some_and(|n| n.is('('));
        let among = if call { [FUNCTIONS, &["FILTER", "BIND", "EXISTS"]].concat() } else { all_words() };
        let hint = suggestion(t.text, &among).map(|s| format!(" (did you mean {s}?)")).unwrap_or_default();
        let message = if call && hint.is_empty() {
            format!(
                "`{}` is not a SPARQL function (others are named by an IRI, as in `ex:{}(…)`)",
                t.text, t.text
            )
        } else if call {
            format!("`{}` is not a SPARQL keyword or function{hint}", t.text)
        } else if depth > 0 && hint.is_empty() {
            format!(
                "`{w}` is not a keyword or an RDF term: write an IRI (`<…>`), a prefixed name (`ex:{w}`), a variable (`?{w}`) or a literal (`\"{w}\"`)",
                w = t.text
            )
        } else {
            format!("`{}` is not a SPARQL keyword{hint}", t.text)
        };
        return Some(Finding { detected: t.at, at: t.at, message });
    }
    None
}

fn all_words() -> Vec<&'static str> {
    [&QUERY_FORMS[..], &UPDATE_OPERATIONS[..], KEYWORDS, FUNCTIONS].concat()
}

fn is_known(word: &str) -> bool {
    all_words().iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// The known word within two edits of `word` (one for short words), the
/// nearest first.
fn suggestion(word: &str, among: &[&'static str]) -> Option<&'static str> {
    if word.chars().count() < 3 {
        return None;
    }
    let allowed = if word.chars().count() <= 4 { 1 } else { 2 };
    let upper = word.to_uppercase();
    among
        .iter()
        .map(|k| (edits(&upper, &k.to_uppercase()), *k))
        .filter(|&(d, _)| d <= allowed)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Levenshtein distance.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let replaced = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = replaced.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_and_suggestions() {
        assert_eq!(edits("SELEC", "SELECT"), 1);
        assert_eq!(edits("OPTINAL", "OPTIONAL"), 1);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(suggestion("selec", &QUERY_FORMS), Some("SELECT"));
        assert_eq!(suggestion("FILTR", &all_words()), Some("FILTER"));
        assert_eq!(suggestion("foo", &all_words()), None);
        assert_eq!(suggestion("ab", &all_words()), None, "too short to guess");
    }
}
