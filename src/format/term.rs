//! N-Triples term tokens: the text stored in every `data.cottas` cell and every
//! `.dict` entry (reference §2).
//!
//! Store lookups compare tokens byte for byte, so the exact rendering matters.
//! Three producers exist and escape differently; [`Escaping`] names them. We
//! write the pycottas rendering (so our files and pycottas's agree byte for
//! byte) and can produce every known variant so a bound literal is found
//! whichever producer wrote the file. Decoding accepts any valid N-Triples
//! escaping.

use std::fmt;

pub const XSD_STRING: &str = "http://www.w3.org/2001/XMLSchema#string";
/// The XML Schema namespace.
pub const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
/// The local names of XSD's numeric datatypes (SPARQL's numeric literals).
pub const XSD_NUMERIC_TYPES: [&str; 16] = [
    "integer",
    "decimal",
    "double",
    "float",
    "int",
    "long",
    "short",
    "byte",
    "nonNegativeInteger",
    "nonPositiveInteger",
    "negativeInteger",
    "positiveInteger",
    "unsignedLong",
    "unsignedInt",
    "unsignedShort",
    "unsignedByte",
];
pub const RDF_LANG_STRING: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString";
pub const RDF_DIR_LANG_STRING: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString";
/// The `g` cell of a default-graph quad.
pub const DEFAULT_GRAPH: &str = "DEFAULT";

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    Iri(String),
    /// Label without the `_:` prefix.
    Blank(String),
    Literal(Literal),
    /// Only in column `g`.
    DefaultGraph,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Literal {
    pub lexical: String,
    pub kind: LiteralKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LiteralKind {
    /// `xsd:string`, written without a datatype.
    Simple,
    /// Language tag, stored lower-cased by every writer of ours.
    Lang(String),
    /// Any datatype other than `xsd:string` and `rdf:langString`.
    Typed(String),
}

impl Literal {
    pub fn simple(lexical: impl Into<String>) -> Self {
        Literal { lexical: lexical.into(), kind: LiteralKind::Simple }
    }
    pub fn lang(lexical: impl Into<String>, tag: &str) -> Self {
        Literal { lexical: lexical.into(), kind: LiteralKind::Lang(tag.to_ascii_lowercase()) }
    }
    /// A typed literal; `xsd:string` becomes [`LiteralKind::Simple`].
    pub fn typed(lexical: impl Into<String>, datatype: impl Into<String>) -> Self {
        let datatype = datatype.into();
        let kind = if datatype == XSD_STRING { LiteralKind::Simple } else { LiteralKind::Typed(datatype) };
        Literal { lexical: lexical.into(), kind }
    }
    /// The datatype IRI, explicit even for simple and language-tagged literals.
    pub fn datatype(&self) -> &str {
        match &self.kind {
            LiteralKind::Simple => XSD_STRING,
            LiteralKind::Lang(_) => RDF_LANG_STRING,
            LiteralKind::Typed(dt) => dt,
        }
    }
}

/// Which producer's escaping rules a rendering follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escaping {
    /// pycottas 1.1 (pyoxigraph 0.3 `str()`): only `\\ \" \n \r`. Our writers use it.
    Pycottas,
    /// factoidal's query side: `\\ \" \n \r \t`.
    Factoidal,
    /// oxrdf 0.3+/pyoxigraph 0.5 `Display`: also `\t \b \f`, other controls as `\uXXXX`.
    Oxrdf,
}

impl Escaping {
    pub const ALL: [Escaping; 3] = [Escaping::Pycottas, Escaping::Factoidal, Escaping::Oxrdf];
}

fn escape_into(out: &mut String, s: &str, esc: Escaping) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if esc != Escaping::Pycottas => out.push_str("\\t"),
            '\u{8}' if esc == Escaping::Oxrdf => out.push_str("\\b"),
            '\u{c}' if esc == Escaping::Oxrdf => out.push_str("\\f"),
            c if esc == Escaping::Oxrdf && (c < ' ' || c == '\u{7f}') => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
}

/// Appends the token for `term` to `out`.
pub fn write_token(out: &mut String, term: &Term, esc: Escaping) {
    match term {
        Term::Iri(iri) => {
            out.push('<');
            out.push_str(iri);
            out.push('>');
        }
        Term::Blank(label) => {
            out.push_str("_:");
            out.push_str(label);
        }
        Term::DefaultGraph => out.push_str(DEFAULT_GRAPH),
        Term::Literal(lit) => {
            out.push('"');
            escape_into(out, &lit.lexical, esc);
            out.push('"');
            match &lit.kind {
                LiteralKind::Simple => {}
                LiteralKind::Lang(tag) => {
                    out.push('@');
                    out.push_str(&tag.to_ascii_lowercase());
                }
                LiteralKind::Typed(dt) => {
                    out.push_str("^^<");
                    out.push_str(dt);
                    out.push('>');
                }
            }
        }
    }
}

/// The token for `term` in the given producer's rendering.
pub fn render(term: &Term, esc: Escaping) -> String {
    // Sized for the common case (nothing to escape): one allocation, where
    // growing from empty took three (a fold renders every quad of the log).
    let size = match term {
        Term::Iri(t) | Term::Blank(t) => t.len() + 2,
        Term::DefaultGraph => DEFAULT_GRAPH.len(),
        Term::Literal(l) => l.lexical.len() + 2 + l.datatype().len() + 4,
    };
    let mut s = String::with_capacity(size);
    write_token(&mut s, term, esc);
    s
}

/// Every distinct rendering of `term` that a known producer might have stored.
pub fn token_variants(term: &Term) -> Vec<String> {
    // The producers differ only on control characters inside literals.
    let same_everywhere = match term {
        Term::Literal(l) => !l.lexical.chars().any(|c| c < ' ' && c != '\n' && c != '\r' || c == '\u{7f}'),
        _ => true,
    };
    if same_everywhere {
        return vec![render(term, Escaping::Pycottas)];
    }
    let mut out: Vec<String> = Vec::with_capacity(3);
    for esc in Escaping::ALL {
        let t = render(term, esc);
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self, Escaping::Pycottas))
    }
}

/// A token that is not valid N-Triples term syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenError {
    /// Byte offset inside the token.
    pub offset: usize,
    pub expected: &'static str,
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid term token at byte {} of the token: expected {}", self.offset, self.expected)
    }
}
impl std::error::Error for TokenError {}

/// A byte an IRI token holds as it is: not `>`, `\\`, a space or control,
/// nor a character IRIs forbid. Bytes of multi-byte characters are plain,
/// so a run of plain bytes ends on a character boundary.
fn plain_iri_byte(c: u8) -> bool {
    PLAIN_IRI_BYTES[c as usize]
}

/// [`plain_iri_byte`] as a table: the lexer asks it for every byte of every
/// IRI, and a join parses each bound IRI once per lookup and per chunk
/// (searching the nine excluded characters was a sixth of a corpus join).
const PLAIN_IRI_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = b' ' as usize + 1;
    while c < 256 {
        table[c] = true;
        c += 1;
    }
    let excluded = b"<>\"{}|^`\\";
    let mut i = 0;
    while i < excluded.len() {
        table[excluded[i] as usize] = false;
        i += 1;
    }
    table
};

struct Lexer<'a> {
    b: &'a [u8],
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn err<T>(&self, expected: &'static str) -> Result<T, TokenError> {
        Err(TokenError { offset: self.pos, expected })
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }
    fn next_char(&mut self) -> Option<char> {
        let c = self.s[self.pos..].chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn hex(&mut self, digits: usize) -> Result<char, TokenError> {
        let start = self.pos;
        if self.pos + digits > self.b.len() {
            return self.err("hexadecimal digits of a \\u or \\U escape");
        }
        // Check the raw bytes first: slicing the str could split a character.
        let raw = &self.b[start..start + digits];
        if !raw.iter().all(|c| c.is_ascii_hexdigit()) {
            return self.err("hexadecimal digits of a \\u or \\U escape");
        }
        let text = std::str::from_utf8(raw).unwrap_or("");
        let v = u32::from_str_radix(text, 16)
            .map_err(|_| TokenError { offset: start, expected: "hexadecimal digits" })?;
        self.pos += digits;
        char::from_u32(v).ok_or(TokenError { offset: start, expected: "a Unicode scalar value" })
    }
    fn uchar(&mut self) -> Result<char, TokenError> {
        match self.peek() {
            Some(b'u') => {
                self.pos += 1;
                self.hex(4)
            }
            Some(b'U') => {
                self.pos += 1;
                self.hex(8)
            }
            _ => self.err("`u` or `U` after a backslash"),
        }
    }
    fn iri(&mut self) -> Result<String, TokenError> {
        if self.peek() != Some(b'<') {
            return self.err("`<` opening an IRI");
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            // The plain characters up to the next one that needs a look, in
            // one copy (a join's inner lookup parses every bound IRI).
            let run = self.b[self.pos..]
                .iter()
                .position(|&c| !plain_iri_byte(c))
                .unwrap_or(self.b.len() - self.pos);
            out.push_str(&self.s[self.pos..self.pos + run]);
            self.pos += run;
            match self.peek() {
                None => return self.err("`>` closing the IRI"),
                Some(b'>') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let at = self.pos - 1;
                    let c = self.uchar()?;
                    // An escape may not smuggle in a character IRIs forbid.
                    if c <= ' ' || "<>\"{}|^`\\".contains(c) {
                        return Err(TokenError {
                            offset: at,
                            expected: "an escaped character that IRIs allow",
                        });
                    }
                    out.push(c);
                }
                Some(c) if c <= b' ' || b"<\"{}|^`".contains(&c) => {
                    return self.err("an IRI character (no space, control, <, \", {, }, |, ^ or `)")
                }
                Some(_) => out.push(self.next_char().unwrap_or('\u{fffd}')),
            }
        }
    }
    fn literal(&mut self) -> Result<Literal, TokenError> {
        self.pos += 1; // opening quote
        let mut lex = String::new();
        loop {
            match self.peek() {
                None => return self.err("`\"` closing the literal"),
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = match self.peek() {
                        Some(b't') => '\t',
                        Some(b'b') => '\u{8}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b'f') => '\u{c}',
                        Some(b'"') => '"',
                        Some(b'\'') => '\'',
                        Some(b'\\') => '\\',
                        Some(b'u') | Some(b'U') => {
                            lex.push(self.uchar()?);
                            continue;
                        }
                        _ => return self.err("an escape: \\t \\b \\n \\r \\f \\\" \\' \\\\ \\u \\U"),
                    };
                    self.pos += 1;
                    lex.push(c);
                }
                Some(_) => lex.push(self.next_char().unwrap_or('\u{fffd}')),
            }
        }
        match self.peek() {
            None => Ok(Literal::simple(lex)),
            Some(b'@') => {
                self.pos += 1;
                let start = self.pos;
                let tag = &self.s[start..];
                if !valid_lang_tag(tag) {
                    return self.err("a language tag ([a-zA-Z]+ ('-' [a-zA-Z0-9]+)*)");
                }
                self.pos = self.b.len();
                Ok(Literal::lang(lex, tag))
            }
            Some(b'^') => {
                if self.b.get(self.pos + 1) != Some(&b'^') {
                    return self.err("`^^` before a datatype IRI");
                }
                self.pos += 2;
                let dt = self.iri()?;
                if dt == RDF_LANG_STRING || dt == RDF_DIR_LANG_STRING {
                    return self.err("a language tag instead of an explicit rdf:langString datatype");
                }
                Ok(Literal::typed(lex, dt))
            }
            Some(_) => self.err("end of token, `@` or `^^` after the literal"),
        }
    }
}

/// `[a-zA-Z]+ ('-' [a-zA-Z0-9]+)*`
pub fn valid_lang_tag(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let first = parts.next().unwrap_or("");
    !first.is_empty()
        && first.bytes().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphanumeric()))
}

fn valid_blank_label(label: &str) -> bool {
    !label.is_empty()
        && !label.ends_with('.')
        && !label.starts_with(['-', '.'])
        && label.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.') || !c.is_ascii())
}

/// Parses one term token (any valid N-Triples escaping, plus `DEFAULT`).
pub fn parse_token(token: &str) -> Result<Term, TokenError> {
    let mut lx = Lexer { b: token.as_bytes(), s: token, pos: 0 };
    let term = match lx.peek() {
        None => return lx.err("a term token, found an empty cell"),
        Some(b'<') => Term::Iri(lx.iri()?),
        Some(b'"') => Term::Literal(lx.literal()?),
        Some(b'_') => {
            if !token.starts_with("_:") {
                return lx.err("`_:` opening a blank node label");
            }
            if !valid_blank_label(&token[2..]) {
                lx.pos = 2;
                return lx.err("a blank node label of letters, digits, `_`, `-` and `.`");
            }
            lx.pos = token.len();
            Term::Blank(token[2..].to_owned())
        }
        Some(_) if token == DEFAULT_GRAPH => {
            lx.pos = token.len();
            Term::DefaultGraph
        }
        Some(_) => return lx.err("`<`, `\"`, `_:` or DEFAULT at the start of a token"),
    };
    if lx.pos != token.len() {
        return lx.err("end of token");
    }
    Ok(term)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_iri_byte_table_is_the_rule_it_stands_for() {
        for c in 0..=255u8 {
            let rule = c > b' ' && !b"<>\"{}|^`\\".contains(&c);
            assert_eq!(plain_iri_byte(c), rule, "byte {c:#04x}");
        }
    }

    #[test]
    fn pycottas_escapes_only_four_characters() {
        let t = Term::Literal(Literal::simple("a\tb\"c\\d\ne\rf\u{7}"));
        assert_eq!(render(&t, Escaping::Pycottas), "\"a\tb\\\"c\\\\d\\ne\\rf\u{7}\"");
        assert_eq!(render(&t, Escaping::Factoidal), "\"a\\tb\\\"c\\\\d\\ne\\rf\u{7}\"");
        assert_eq!(render(&t, Escaping::Oxrdf), "\"a\\tb\\\"c\\\\d\\ne\\rf\\u0007\"");
        assert_eq!(token_variants(&t).len(), 3);
        for v in token_variants(&t) {
            assert_eq!(parse_token(&v).unwrap(), t);
        }
    }

    #[test]
    fn lang_tags_are_lower_cased_and_xsd_string_dropped() {
        let t = Term::Literal(Literal::lang("colour", "EN-GB"));
        assert_eq!(t.to_string(), "\"colour\"@en-gb");
        let s = parse_token("\"x\"^^<http://www.w3.org/2001/XMLSchema#string>").unwrap();
        assert_eq!(s.to_string(), "\"x\"");
    }

    #[test]
    fn errors_name_the_offset() {
        assert_eq!(parse_token("<a b>").unwrap_err().offset, 2);
        assert_eq!(parse_token("\"abc").unwrap_err().offset, 4);
        assert_eq!(parse_token("\"a\"@").unwrap_err().offset, 4);
        assert_eq!(parse_token("<a>x").unwrap_err().offset, 3);
        assert_eq!(parse_token("<é€a{b>").unwrap_err().offset, 7, "after a run of multi-byte characters");
        assert_eq!(parse_token("<abc").unwrap_err().offset, 4);
        assert!(parse_token("").is_err());
        assert!(parse_token("DEFAULTX").is_err());
    }

    #[test]
    fn short_escape_before_a_multibyte_char_is_an_error_not_a_panic() {
        // Found by the `term` fuzz target.
        assert!(parse_token("\"\u{7f}\u{0}2\u{4}\u{0}\\U.11\u{4}\u{8}\",\u{6e5}\"i").is_err());
        assert!(parse_token("\"\\u12é\"").is_err());
    }

    #[test]
    fn uchar_escapes_decode() {
        assert_eq!(parse_token("<http://a/\\u00E9>").unwrap(), Term::Iri("http://a/é".into()));
        assert_eq!(parse_token("\"\\U0001F600\"").unwrap(), Term::Literal(Literal::simple("\u{1F600}")));
        assert!(parse_token("\"\\uD800\"").is_err());
        assert_eq!(parse_token("<a\\u0020b>").unwrap_err().offset, 2);
    }
}
