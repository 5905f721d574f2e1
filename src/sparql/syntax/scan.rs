//! A SPARQL tokenizer good enough to say what is wrong with a request that
//! spargebra refused: where strings, IRIs and brackets open and close, and
//! which words stand where. It never decides whether a request is valid
//! (spargebra does, and this runs only on refused text), so it can be
//! approximate where the grammar is subtle, such as `<` as less-than or as the
//! start of an IRI.

/// A place in the text: 1-based line and column, the column counted in
/// characters, as spargebra's errors count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bare word: a keyword, a function name, `a`, `true`, or a mistake.
    Word,
    /// A prefixed name or a blank node label (it has a `:`).
    Name,
    Var,
    Iri,
    Str,
    Number,
    LangTag,
    /// Any other single character: brackets, `.`, `;`, `,`, operators.
    Punct,
}

#[derive(Debug)]
pub struct Token<'t> {
    pub kind: Kind,
    pub text: &'t str,
    pub at: Pos,
}

impl Token<'_> {
    pub fn is(&self, punct: char) -> bool {
        self.kind == Kind::Punct && self.text.starts_with(punct)
    }

    pub fn is_word(&self, word: &str) -> bool {
        self.kind == Kind::Word && self.text.eq_ignore_ascii_case(word)
    }
}

/// Where the tokens stop making sense.
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    /// A string opened at `at` runs to `end`: the end of its line (short
    /// strings) or of the text.
    UnclosedString { at: Pos, end: Pos, long: bool },
    /// `<scheme:…` opened at `at` stops at `end` (a space, a line end or the
    /// end of the text) without its `>`.
    UnclosedIri { at: Pos, end: Pos, text: String },
}

pub struct Scan<'t> {
    pub tokens: Vec<Token<'t>>,
    /// The first lexical problem; the tokens stop before it.
    pub problem: Option<Problem>,
    /// The end of the text.
    pub end: Pos,
}

pub fn scan(text: &str) -> Scan<'_> {
    let mut c = Cursor { text, i: 0, pos: Pos { line: 1, column: 1 } };
    let mut tokens = Vec::new();
    let mut problem = None;
    loop {
        c.skip_space_and_comments();
        let (start, at) = (c.i, c.pos);
        let Some(ch) = c.peek() else { break };
        let kind = match ch {
            '"' | '\'' => match c.string(ch) {
                Ok(()) => Kind::Str,
                Err(p) => {
                    problem = Some(p);
                    break;
                }
            },
            '<' => match c.iri() {
                Ok(kind) => kind,
                Err(p) => {
                    problem = Some(p);
                    break;
                }
            },
            '?' | '$' => c.var(),
            '@' => {
                c.bump();
                c.take_while(|ch| ch.is_ascii_alphanumeric() || ch == '-');
                Kind::LangTag
            }
            _ if ch.is_ascii_digit() || (ch == '.' && c.nth(1).is_some_and(|d| d.is_ascii_digit())) => {
                c.number();
                Kind::Number
            }
            _ if is_name_char(ch) && ch != '-' && ch != '.' => c.name(),
            _ => {
                c.bump();
                Kind::Punct
            }
        };
        tokens.push(Token { kind, text: &text[start..c.i], at });
    }
    while c.bump().is_some() {}
    Scan { tokens, problem, end: c.pos }
}

/// Characters of words and prefixed names (`%` and `\` for their escapes).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '%' | '\\' | '\u{00B7}')
}

struct Cursor<'t> {
    text: &'t str,
    i: usize,
    pos: Pos,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.i..].chars().next()
    }

    fn nth(&self, n: usize) -> Option<char> {
        self.text[self.i..].chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        if c == '\n' {
            self.pos = Pos { line: self.pos.line + 1, column: 1 };
        } else {
            self.pos.column += 1;
        }
        Some(c)
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&f) {
            self.bump();
        }
    }

    fn skip_space_and_comments(&mut self) {
        loop {
            self.take_while(char::is_whitespace);
            if self.peek() != Some('#') {
                return;
            }
            self.take_while(|c| c != '\n');
        }
    }

    /// A string opened by `quote` (three of them: a long string, which may
    /// span lines).
    fn string(&mut self, quote: char) -> Result<(), Problem> {
        let at = self.pos;
        let long = self.nth(1) == Some(quote) && self.nth(2) == Some(quote);
        if self.nth(1) == Some(quote) && !long {
            self.bump();
            self.bump();
            return Ok(());
        }
        for _ in 0..if long { 3 } else { 1 } {
            self.bump();
        }
        loop {
            match self.peek() {
                None => return Err(Problem::UnclosedString { at, end: self.pos, long }),
                Some('\n' | '\r') if !long => {
                    return Err(Problem::UnclosedString { at, end: self.pos, long })
                }
                Some('\\') => {
                    self.bump();
                    self.bump();
                }
                Some(c)
                    if c == quote
                        && (!long || (self.nth(1) == Some(quote) && self.nth(2) == Some(quote))) =>
                {
                    for _ in 0..if long { 3 } else { 1 } {
                        self.bump();
                    }
                    return Ok(());
                }
                Some(_) => {
                    self.bump();
                }
            }
        }
    }

    /// `<…>` as an IRI; a `<` that starts no IRI is less-than. `<scheme:…`
    /// that stops at a space or the end without `>` is an unclosed IRI.
    fn iri(&mut self) -> Result<Kind, Problem> {
        let rest = &self.text[self.i + 1..];
        let stop = rest.find(|c: char| c <= ' ' || "<>\"{}|^`".contains(c)).unwrap_or(rest.len());
        if rest[stop..].starts_with('>') {
            for _ in 0..rest[..=stop].chars().count() + 1 {
                self.bump();
            }
            return Ok(Kind::Iri);
        }
        let inside = &rest[..stop];
        let stops_at_space = rest[stop..].chars().next().is_none_or(char::is_whitespace);
        if stops_at_space && has_scheme(inside) && !inside.contains(['(', ')']) {
            let at = self.pos;
            for _ in 0..inside.chars().count() + 1 {
                self.bump();
            }
            return Err(Problem::UnclosedIri { at, end: self.pos, text: format!("<{inside}") });
        }
        self.bump();
        Ok(Kind::Punct)
    }

    fn var(&mut self) -> Kind {
        self.bump();
        let before = self.i;
        self.take_while(|c| c.is_alphanumeric() || c == '_' || c == '\u{00B7}');
        if self.i == before {
            Kind::Punct
        } else {
            Kind::Var
        }
    }

    fn number(&mut self) {
        self.take_while(|c| c.is_ascii_digit());
        if self.peek() == Some('.') && self.nth(1).is_some_and(|d| d.is_ascii_digit()) {
            self.bump();
            self.take_while(|c| c.is_ascii_digit());
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.nth(1), Some('+' | '-')));
            if self.nth(1 + sign).is_some_and(|d| d.is_ascii_digit()) {
                for _ in 0..=sign {
                    self.bump();
                }
                self.take_while(|c| c.is_ascii_digit());
            }
        }
    }

    /// A word or a prefixed name; a final `.` ends a triple, not the name,
    /// and `\\` escapes the character after it (`ex:a\\(b`).
    fn name(&mut self) -> Kind {
        let rest = &self.text[self.i..];
        // The end of the name so far, leaving out trailing plain dots.
        let mut len = 0;
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '\\' {
                len = chars.next().map_or(rest.len(), |(j, e)| j + e.len_utf8());
            } else if !is_name_char(c) {
                break;
            } else if c != '.' {
                len = i + c.len_utf8();
            }
        }
        let word = &rest[..len];
        for _ in 0..word.chars().count() {
            self.bump();
        }
        if word.contains(':') {
            Kind::Name
        } else {
            Kind::Word
        }
    }
}

/// `http:`, `urn:`, `tag:`: a scheme and its colon.
fn has_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else { return false };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, &str)> {
        scan(text).tokens.iter().map(|t| (t.kind, t.text)).collect()
    }

    #[test]
    fn tokens_of_a_query() {
        use Kind::*;
        assert_eq!(
            kinds("SELECT ?s { ?s ex:p \"a\\\"b\"@en, 1.5e3 . <http://x/y> a _:b1 } # c\nLIMIT 2"),
            [
                (Word, "SELECT"),
                (Var, "?s"),
                (Punct, "{"),
                (Var, "?s"),
                (Name, "ex:p"),
                (Str, "\"a\\\"b\""),
                (LangTag, "@en"),
                (Punct, ","),
                (Number, "1.5e3"),
                (Punct, "."),
                (Iri, "<http://x/y>"),
                (Word, "a"),
                (Name, "_:b1"),
                (Punct, "}"),
                (Word, "LIMIT"),
                (Number, "2"),
            ]
        );
        assert_eq!(kinds("?o.}"), [(Var, "?o"), (Punct, "."), (Punct, "}")]);
        assert_eq!(kinds("ex:o.}"), [(Name, "ex:o"), (Punct, "."), (Punct, "}")]);
        assert_eq!(kinds("FILTER(?a < 3)")[3], (Punct, "<"));
        assert_eq!(kinds("'''x\n'y'''")[0], (Str, "'''x\n'y'''"));
        assert_eq!(kinds("\"\" .")[0], (Str, "\"\""));
        assert_eq!(kinds("ex:a\\(b\\.. }"), [(Name, "ex:a\\(b\\."), (Punct, "."), (Punct, "}")]);
    }

    #[test]
    fn positions_count_characters_and_lines() {
        let s = scan("ASK {\n  ?é ?p \"ü\" }");
        let at: Vec<String> = s.tokens.iter().map(|t| t.at.to_string()).collect();
        assert_eq!(at, ["1:1", "1:5", "2:3", "2:6", "2:9", "2:13"]);
        assert_eq!(s.end, Pos { line: 2, column: 14 });
    }

    #[test]
    fn unclosed_strings_and_iris() {
        let p = |t| scan(t).problem;
        assert_eq!(
            p("ASK { ?s ?p \"abc }\n"),
            Some(Problem::UnclosedString {
                at: Pos { line: 1, column: 13 },
                end: Pos { line: 1, column: 19 },
                long: false
            })
        );
        assert!(matches!(p("ASK { ?s ?p '''abc }\n}"), Some(Problem::UnclosedString { long: true, .. })));
        assert_eq!(
            p("ASK { ?s <http://ex/p ?o }"),
            Some(Problem::UnclosedIri {
                at: Pos { line: 1, column: 10 },
                end: Pos { line: 1, column: 22 },
                text: "<http://ex/p".into()
            })
        );
        assert_eq!(p("ASK { FILTER(?a <?b) }"), None, "less-than, not an IRI");
        assert_eq!(p("ASK { FILTER(?a<ex:b) }"), None);
    }
}
