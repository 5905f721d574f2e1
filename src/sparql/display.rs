//! How a result cell reads in a table a person looks at (the CLI's table
//! and the TUI's results): numbers as numbers, and a cell too wide for its
//! column cut with an ellipsis, never silently. Scripts get the SPARQL
//! result formats, which these rules never touch.

use std::borrow::Cow;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::format::term::{XSD, XSD_NUMERIC_TYPES};

/// The lexical form of a numeric literal cell (`"24297"^^<…#integer>` →
/// `24297`), when it is a plain number; `None` for anything else, which is
/// shown as it is.
pub fn plain_number(cell: &str) -> Option<&str> {
    let (quoted, datatype) = cell.rsplit_once("^^<")?;
    let local = datatype.strip_suffix('>')?.strip_prefix(XSD)?;
    let lexical = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let number_like = !lexical.is_empty()
        && lexical.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && lexical.bytes().any(|b| b.is_ascii_digit());
    (XSD_NUMERIC_TYPES.contains(&local) && number_like).then_some(lexical)
}

/// A cell as a table shows it: a plain number bare, anything else whole.
pub fn for_people(cell: &str) -> Cow<'_, str> {
    plain_number(cell).map_or(Cow::Borrowed(cell), Cow::Borrowed)
}

/// `cell` within `width` terminal columns: whole when it fits, else cut with
/// `…` as its last column (a wide character is not split).
pub fn fit(cell: &str, width: usize) -> Cow<'_, str> {
    if cell.width() <= width {
        return Cow::Borrowed(cell);
    }
    let mut used = 0;
    let mut kept: String = cell
        .chars()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used < width
        })
        .collect();
    kept.push('…');
    Cow::Owned(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_numbers_and_nothing_else_changes() {
        let int = "\"24297\"^^<http://www.w3.org/2001/XMLSchema#integer>";
        assert_eq!(for_people(int), "24297");
        assert_eq!(for_people("\"-1.5e3\"^^<http://www.w3.org/2001/XMLSchema#double>"), "-1.5e3");
        let date = "\"2026-12-06\"^^<http://www.w3.org/2001/XMLSchema#date>";
        assert_eq!(for_people(date), date);
        let odd = "\"twelve\"^^<http://www.w3.org/2001/XMLSchema#integer>";
        assert_eq!(for_people(odd), odd, "an ill-typed literal is shown as written");
        assert_eq!(for_people("\"42\""), "\"42\"", "a string is a string");
        assert_eq!(for_people("<http://ex.org/42>"), "<http://ex.org/42>");
    }

    #[test]
    fn a_cut_cell_ends_in_an_ellipsis_within_its_width() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("<http://example.org/a/long/iri>", 10), "<http://e…");
        assert_eq!(fit("<http://example.org/a/long/iri>", 10).width(), 10);
        let wide = fit("日本語のテキスト", 7);
        assert!(wide.width() <= 7 && wide.ends_with('…'), "{wide}");
    }
}
