//! Moving a cursor through multi-line text, and drawing it.
//!
//! The query editor used to edit only at the end of its text: a typo in the
//! first line of a long query meant deleting everything after it. These are
//! the cursor's moves as pure functions of the text and a byte offset (always
//! on a character boundary), so the view keeps one `usize` and the moves are
//! tested without a terminal.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

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
/// terminal columns: the same column on the row above or below (or the
/// character covering it, when a wide one does), or the end of that row when
/// it is shorter; `at` itself on the first (last) row. A long line wrapped
/// over several rows is walked row by row, as it is seen.
pub fn vertical(text: &str, at: usize, up: bool, width: usize) -> usize {
    let width = width.max(1);
    let start = line_start(text, at);
    let end = line_end(text, at);
    let starts = row_starts(&text[start..end], width);
    let (row, x) = position(&text[start..end], &starts, at - start, width);
    // The target line, its row and where its rows start (the line's own
    // starts when the move stays on it).
    let (line, row, line_starts) = if up && row > 0 {
        (start, row - 1, starts)
    } else if up {
        if start == 0 {
            return at;
        }
        let above = line_start(text, start - 1);
        let above_starts = row_starts(&text[above..start - 1], width);
        (above, above_starts.len() - 1, above_starts)
    } else if row + 1 < starts.len() {
        (start, row + 1, starts)
    } else {
        if end == text.len() {
            return at;
        }
        (end + 1, 0, row_starts(&text[end + 1..line_end(text, end + 1)], width))
    };
    line + column_in_row(&text[line..line_end(text, line)], &line_starts, row, x)
}

/// Home on a line wrapped over rows of `width` columns: the start of the
/// row `at` is on, and from there the start of the line (as editors with
/// soft wrap do).
pub fn row_home(text: &str, at: usize, width: usize) -> usize {
    let (start, row_start, _) = row_around(text, at, width);
    if at == row_start {
        start
    } else {
        row_start
    }
}

/// End on a wrapped line: the last character of the row `at` is on (a
/// cursor past it would be on the next row), or the line's end on its last
/// row; from there, the end of the line.
pub fn row_end(text: &str, at: usize, width: usize) -> usize {
    let (_, _, row_end) = row_around(text, at, width);
    if at == row_end {
        line_end(text, at)
    } else {
        row_end
    }
}

/// The start of `at`'s line, and where the row `at` is on starts and where
/// End puts the cursor on it.
fn row_around(text: &str, at: usize, width: usize) -> (usize, usize, usize) {
    let width = width.max(1);
    let (start, end) = (line_start(text, at), line_end(text, at));
    let line = &text[start..end];
    let starts = row_starts(line, width);
    let row = position(line, &starts, at - start, width).0.min(starts.len() - 1);
    let last = starts.get(row + 1).map_or(line.len(), |&next| left(line, next));
    (start, start + starts[row], start + last)
}

/// Where each row of `line` starts (byte offsets) when it is cut into rows
/// of `width` terminal columns: a character that would cross the edge (a
/// wide one, with one column left) starts the next row.
fn row_starts(line: &str, width: usize) -> Vec<usize> {
    let mut starts = vec![0];
    let mut used = 0;
    for (i, c) in line.char_indices() {
        let w = c.width().unwrap_or(0);
        if used > 0 && used + w > width {
            starts.push(i);
            used = 0;
        }
        used += w;
    }
    starts
}

/// The row and terminal column of byte `at` of `line`; after a full last
/// row, the cursor is on a row of its own (one past the last of `starts`).
fn position(line: &str, starts: &[usize], at: usize, width: usize) -> (usize, usize) {
    let row = starts.iter().rposition(|&s| s <= at).unwrap_or(0);
    let x = line[starts[row]..at].width();
    if at == line.len() && at > starts[row] && x >= width {
        (row + 1, 0)
    } else {
        (row, x)
    }
}

/// The byte offset in `line` (cut into rows at `starts`) of terminal
/// column `x` on row `row`: the
/// character at or covering that column; past the row's end, the line's
/// end on its last row, else the row's last character (so the cursor stays
/// on the row).
fn column_in_row(line: &str, starts: &[usize], row: usize, x: usize) -> usize {
    let from = starts[row.min(starts.len() - 1)];
    let to = starts.get(row + 1).copied().unwrap_or(line.len());
    let mut column = 0;
    for (i, c) in line[from..to].char_indices() {
        let w = c.width().unwrap_or(0);
        if column + w > x {
            return from + i;
        }
        column += w;
    }
    if to == line.len() {
        to
    } else {
        left(line, to)
    }
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

/// The text as rows of at most `width` terminal columns (each line of the
/// text starts a row; a wide character that would cross the edge starts the
/// next), and the row the cursor is on. With a cursor, the character at `at`
/// (a space at a line's end) is drawn in reverse video. Rows are cut here
/// rather than by the paragraph's word wrap, so the row to scroll to is
/// exact.
pub fn rows(text: &str, at: Option<usize>, width: usize) -> (Vec<Line<'static>>, usize) {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut cursor_row = 0;
    let mut start = 0;
    for line in text.split('\n') {
        let starts = row_starts(line, width);
        let ends = starts.iter().skip(1).copied().chain([line.len()]);
        let mut pieces: Vec<&str> = starts.iter().zip(ends).map(|(&a, b)| &line[a..b]).collect();
        // The cursor's piece and its byte offset in it, when on this line.
        let here = at.filter(|&a| (start..=start + line.len()).contains(&a)).map(|a| {
            let (piece, _) = position(line, &starts, a - start, width);
            (piece, a - start - starts.get(piece).copied().unwrap_or(line.len()))
        });
        if let Some((piece, _)) = here {
            if piece == pieces.len() {
                pieces.push("");
            }
            cursor_row = rows.len() + piece;
        }
        for (k, piece) in pieces.into_iter().enumerate() {
            rows.push(match here {
                Some((p, offset)) if p == k => with_cursor(piece, offset),
                _ => Line::raw(piece.to_string()),
            });
        }
        start += line.len() + 1;
    }
    (rows, cursor_row)
}

/// `piece` with the character at byte `at` (a space past its end) reversed.
fn with_cursor(piece: &str, at: usize) -> Line<'static> {
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

    /// The rows as text, each span apart from the next by `|` (the cursor's
    /// span is the middle one), and the cursor's row.
    fn shown(t: &str, at: Option<usize>, width: usize) -> (Vec<String>, usize) {
        let (rows, row) = rows(t, at, width);
        let rows: Vec<String> = rows
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect::<Vec<_>>().join("|"))
            .collect();
        (rows, row)
    }

    #[test]
    fn home_and_end_go_to_the_row_then_to_the_line() {
        // Rows of 3: "ab" | "cdé" "fgh" "ij" | "k"; é is two bytes.
        let t = "ab\ncdéfghij\nk";
        let at = |s: &str| t.find(s).unwrap();
        assert_eq!(row_home(t, at("h"), 3), at("f"), "the row's start");
        assert_eq!(row_home(t, at("f"), 3), at("c"), "then the line's");
        assert_eq!(row_home(t, at("c"), 3), at("c"), "and there it stays");
        assert_eq!(row_end(t, at("f"), 3), at("h"), "the row's last character");
        assert_eq!(row_end(t, at("h"), 3), at("j") + 1, "then the line's end");
        assert_eq!(row_end(t, at("i"), 3), at("j") + 1, "the last row ends where the line does");
        assert_eq!(row_end(t, at("c"), 3), at("é"), "a two-byte last character");
        assert_eq!(row_home(t, at("b"), 80), 0, "an unwrapped line: its start");
        assert_eq!(row_end(t, 0, 80), at("b") + 1);
        // After a full last row the cursor is on a row of its own.
        assert_eq!(row_home("abcdef", 6, 3), 3);
    }

    #[test]
    fn the_cursor_is_drawn_on_its_character_or_after_the_line() {
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

    /// Rows are cut in terminal columns: 東, 京 and 😀 take two each, so a
    /// row of three holds one of them (or one and a narrow character), and
    /// Up and Down keep the column, landing on the wide character covering
    /// it.
    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(shown("a東京😀b", None, 3).0, ["a東", "京", "😀b"]);
        assert_eq!(shown("東京", None, 4).0, ["東京"], "exactly full");
        assert_eq!(shown("東京", Some(6), 4), (vec!["東京".into(), "| |".into()], 1), "after a full row");
        assert_eq!(shown("a東京😀b", Some(4), 3), (vec!["a東".into(), "|京|".into(), "😀b".into()], 1));
        assert_eq!(shown("東", None, 1).0, ["東"], "wider than a row: a row of its own");

        // "ab東cd" over "xyzuvw", rows of 80: column 2 is 東, column 3 is
        // covered by it, column 4 is c.
        let t = "ab東cd\nxyzuvw";
        let at = |s: &str| t.find(s).unwrap();
        assert_eq!(vertical(t, at("z"), true, 80), at("東"), "column 2: 東");
        assert_eq!(vertical(t, at("u"), true, 80), at("東"), "column 3: covered by 東");
        assert_eq!(vertical(t, at("v"), true, 80), at("c"), "column 4: c, after the two columns of 東");
        assert_eq!(vertical(t, at("c"), false, 80), at("v"));
        assert_eq!(vertical(t, at("東"), false, 80), at("z"));
        // Rows of 3 over "a東京😀b": "a東" | "京" | "😀b". Column 2 of the
        // first row is covered by 東; the second row has one character, so
        // column 2 there is its last one (the cursor stays on the row).
        let t = "a東京😀b";
        let at = |s: &str| t.find(s).unwrap();
        assert_eq!(
            vertical(t, at("b"), true, 3),
            at("京"),
            "b is at column 2; 京 covers 0-1 only: the row's last"
        );
        assert_eq!(vertical(t, at("京"), true, 3), at("a"));
        assert_eq!(vertical(t, at("東"), false, 3), at("京"));
        assert_eq!(vertical(t, at("京"), false, 3), at("😀"));
    }
}
