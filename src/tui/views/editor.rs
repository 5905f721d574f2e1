//! Moving a cursor through multi-line text, and drawing it.
//!
//! The query editor used to edit only at the end of its text: a typo in the
//! first line of a long query meant deleting everything after it. These are
//! the cursor's moves as pure functions of the text and a byte offset (always
//! on a character boundary), so the view keeps one `usize` and the moves are
//! tested without a terminal.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// The character boundary before `at` (`at` itself at the start).
pub fn left(text: &str, at: usize) -> usize {
    text[..at].chars().next_back().map_or(at, |c| at - c.len_utf8())
}

/// The character boundary after `at` (`at` itself at the end).
pub fn right(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(at, |c| at + c.len_utf8())
}

/// The start of the line `at` is on.
pub fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The end of the line `at` is on (before its line break).
pub fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i)
}

/// One row up or down as [`rows`] cuts the text into rows of `width`
/// characters: the same column on the row above or below, or the end of
/// that row's line when it is shorter; `at` itself on the first (last) row.
/// A long line wrapped over several rows is walked row by row, as it is seen.
pub fn vertical(text: &str, at: usize, up: bool, width: usize) -> usize {
    let width = width.max(1);
    let start = line_start(text, at);
    let end = line_end(text, at);
    let column = text[start..at].chars().count();
    let length = text[start..end].chars().count();
    let (row, x) = (column / width, column % width);
    let (line, column) = if up && row > 0 {
        (start, (row - 1) * width + x)
    } else if up {
        if start == 0 {
            return at;
        }
        let above = line_start(text, start - 1);
        let length = text[above..start - 1].chars().count();
        (above, (length.max(1) - 1) / width * width + x)
    } else if (row + 1) * width < length {
        (start, (row + 1) * width + x)
    } else {
        if end == text.len() {
            return at;
        }
        (end + 1, x)
    };
    let line_end = line_end(text, line);
    text[line..line_end].char_indices().nth(column).map_or(line_end, |(i, _)| line + i)
}

/// Readline's Ctrl-K: the rest of the line after `at`, or the line break
/// when `at` is at the end of its line. Returns the range to remove.
pub fn kill_to_line_end(text: &str, at: usize) -> std::ops::Range<usize> {
    let end = line_end(text, at);
    if end == at {
        at..right(text, at)
    } else {
        at..end
    }
}

/// The text as rows of at most `width` characters (each line of the text
/// starts a row), and the row the cursor is on. With a cursor, the character
/// at `at` (a space at a line's end) is drawn in reverse video. Rows are cut
/// here rather than by the paragraph's word wrap, so the row to scroll to is
/// exact.
pub fn rows(text: &str, at: Option<usize>, width: usize) -> (Vec<Line<'static>>, usize) {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut cursor_row = 0;
    let mut start = 0;
    for line in text.split('\n') {
        let cuts: Vec<usize> =
            line.char_indices().map(|(i, _)| i).step_by(width).chain([line.len()]).collect();
        let mut pieces: Vec<&str> = cuts.windows(2).map(|w| &line[w[0]..w[1]]).collect();
        if pieces.is_empty() {
            pieces.push("");
        }
        // The cursor's piece and column, when it is on this line.
        let here = at.filter(|&a| (start..=start + line.len()).contains(&a)).map(|a| {
            let column = line[..a - start].chars().count();
            (column / width, column % width)
        });
        if let Some((piece, _)) = here {
            if piece == pieces.len() {
                pieces.push("");
            }
            cursor_row = rows.len() + piece;
        }
        for (k, piece) in pieces.into_iter().enumerate() {
            rows.push(match here {
                Some((p, column)) if p == k => with_cursor(piece, column),
                _ => Line::raw(piece.to_string()),
            });
        }
        start += line.len() + 1;
    }
    (rows, cursor_row)
}

/// `piece` with its `column`th character (a space past its end) reversed.
fn with_cursor(piece: &str, column: usize) -> Line<'static> {
    let at = piece.char_indices().nth(column).map_or(piece.len(), |(i, _)| i);
    let next = right(piece, at);
    let under = if next == at { " " } else { &piece[at..next] };
    Line::from(vec![
        Span::raw(piece[..at].to_string()),
        Span::styled(under.to_string(), Style::new().add_modifier(Modifier::REVERSED)),
        Span::raw(piece[next..].to_string()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_stay_on_character_boundaries_and_lines() {
        let t = "SELECT é\n  ?s\nWHERE {}";
        let e = t.find('é').unwrap();
        assert_eq!(right(t, e), e + 'é'.len_utf8());
        assert_eq!(left(t, e + 2), e);
        assert_eq!((left(t, 0), right(t, t.len())), (0, t.len()));
        let second = t.find("  ?s").unwrap();
        assert_eq!(line_start(t, second + 3), second);
        assert_eq!(line_end(t, second), second + 4);
        // Column 8 on the first line is past the second line's end: its end.
        assert_eq!(vertical(t, e + 2, false, 80), second + 4);
        assert_eq!(vertical(t, second + 4, true, 80), 4);
        assert_eq!(vertical("abc\nxéz", 2, false, 80), 7, "column 2 below is z, after the two-byte é");
        assert_eq!(vertical(t, second + 2, true, 80), 2);
        assert_eq!(vertical(t, second + 2, false, 80), t.rfind("WHERE").unwrap() + 2);
        assert_eq!(vertical(t, 3, true, 80), 3, "the first line has none above");
        assert_eq!(vertical(t, t.len(), false, 80), t.len(), "the last line has none below");
        assert_eq!(kill_to_line_end(t, 2), 2..e + 2);
        assert_eq!(kill_to_line_end(t, e + 2), e + 2..e + 3, "at a line's end: its break");
    }

    /// Up and Down walk the rows `rows` draws: a line wrapped over three
    /// rows takes three presses to cross, keeping the column on each.
    #[test]
    fn up_and_down_move_by_the_rows_on_screen() {
        // Rows of 3: "ab" | "cdé" "fgh" "ij" | "k"; é is two bytes.
        let t = "ab\ncdéfghij\nk";
        let at = |s: &str| t.find(s).unwrap();
        assert_eq!(vertical(t, at("b"), false, 3), at("d"), "into the long line's first row");
        assert_eq!(vertical(t, at("d"), false, 3), at("g"), "its second row");
        assert_eq!(vertical(t, at("g"), false, 3), at("j"), "its third");
        assert_eq!(vertical(t, at("j"), false, 3), t.len(), "column 1 of k's row is its end");
        assert_eq!(vertical(t, at("k"), true, 3), at("i"), "up into the long line's last row");
        assert_eq!(vertical(t, at("i"), true, 3), at("f"));
        assert_eq!(vertical(t, at("f"), true, 3), at("c"));
        assert_eq!(vertical(t, at("c"), true, 3), at("a"));
        assert_eq!(vertical(t, at("é"), true, 3), at("\n"), "column 2 of \"ab\" is its end");
        assert_eq!(vertical(t, at("h"), false, 3), at("\nk"), "the last row is shorter: its end");
        // After a full last row the cursor is drawn on a row of its own.
        let full = "abcdef\nxy";
        assert_eq!(vertical(full, 6, true, 3), 3, "from the row after \"def\" to column 0 of it");
        assert_eq!(vertical(full, 6, false, 3), 7, "down to column 0 below");
        assert_eq!(vertical(full, 8, true, 3), 4, "from y (column 1) to e on the last drawn row");
        assert_eq!(vertical("abc\n\nxy", 5, true, 3), 4, "through an empty line");
        assert_eq!(vertical("abc\n\nxy", 4, true, 3), 0);
    }

    #[test]
    fn the_cursor_is_drawn_on_its_character_or_after_the_line() {
        let shown = |t: &str, at, width| {
            let (rows, row) = rows(t, at, width);
            let rows: Vec<String> = rows
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect::<Vec<_>>().join("|"))
                .collect();
            (rows, row)
        };
        assert_eq!(shown("ab\ncd", Some(1), 80), (vec!["a|b|".into(), "cd".into()], 0));
        assert_eq!(shown("ab\ncd", Some(2), 80), (vec!["ab| |".into(), "cd".into()], 0));
        assert_eq!(shown("ab\ncd", Some(5), 80), (vec!["ab".into(), "cd| |".into()], 1));
        assert_eq!(shown("", Some(0), 80), (vec!["| |".into()], 0));
        assert_eq!(shown("ab\ncd", None, 80), (vec!["ab".into(), "cd".into()], 0));
        // Rows of three characters: a line of six takes two, and a cursor
        // after its end a third; é is one character of two bytes.
        assert_eq!(
            shown("ab\ncdéfgh\ni", Some(10), 3),
            (vec!["ab".into(), "cdé".into(), "fgh".into(), "| |".into(), "i".into()], 3)
        );
        assert_eq!(
            shown("ab\ncdéfgh\ni", Some(4), 3),
            (vec!["ab".into(), "c|d|é".into(), "fgh".into(), "i".into()], 1)
        );
        assert_eq!(shown("abcdefg", Some(7), 3).1, 2);
        assert_eq!(shown("abcdefg", None, 3).0, ["abc", "def", "g"]);
    }
}
