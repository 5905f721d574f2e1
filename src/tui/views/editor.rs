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

/// The same column (in characters) on the line above or below, or the end
/// of that line when it is shorter; `at` itself on the first (last) line.
pub fn vertical(text: &str, at: usize, up: bool) -> usize {
    let start = line_start(text, at);
    let column = text[start..at].chars().count();
    let target = if up {
        if start == 0 {
            return at;
        }
        line_start(text, start - 1)
    } else {
        let end = line_end(text, at);
        if end == text.len() {
            return at;
        }
        end + 1
    };
    let end = line_end(text, target);
    text[target..end].char_indices().nth(column).map_or(end, |(i, _)| target + i)
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
        assert_eq!(vertical(t, e + 2, false), second + 4);
        assert_eq!(vertical(t, second + 4, true), 4);
        assert_eq!(vertical("abc\nxéz", 2, false), 7, "column 2 below is z, after the two-byte é");
        assert_eq!(vertical(t, second + 2, true), 2);
        assert_eq!(vertical(t, second + 2, false), t.rfind("WHERE").unwrap() + 2);
        assert_eq!(vertical(t, 3, true), 3, "the first line has none above");
        assert_eq!(vertical(t, t.len(), false), t.len(), "the last line has none below");
        assert_eq!(kill_to_line_end(t, 2), 2..e + 2);
        assert_eq!(kill_to_line_end(t, e + 2), e + 2..e + 3, "at a line's end: its break");
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
