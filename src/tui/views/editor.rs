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

/// The text as lines, with the character at `at` (a space at a line's end)
/// drawn in reverse video.
pub fn lines_with_cursor(text: &str, at: usize) -> Vec<Line<'static>> {
    let cursor = Style::new().add_modifier(Modifier::REVERSED);
    let mut lines = Vec::new();
    let mut start = 0;
    for line in text.split('\n') {
        let end = start + line.len();
        if (start..=end).contains(&at) {
            let here = at - start;
            let next = right(line, here);
            let under = if next == here { " " } else { &line[here..next] };
            lines.push(Line::from(vec![
                Span::raw(line[..here].to_string()),
                Span::styled(under.to_string(), cursor),
                Span::raw(line[next..].to_string()),
            ]));
        } else {
            lines.push(Line::raw(line.to_string()));
        }
        start = end + 1;
    }
    lines
}

/// The row the cursor is drawn on when lines wrap at `width` characters
/// (counting each line's wrapped rows as the editor's height does).
pub fn cursor_row(text: &str, at: usize, width: usize) -> usize {
    let width = width.max(1);
    let start = line_start(text, at);
    let above: usize =
        text[..start].split_terminator('\n').map(|l| l.chars().count().div_ceil(width).max(1)).sum();
    above + text[start..at].chars().count() / width
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
        let shown = |t: &str, at| {
            lines_with_cursor(t, at)
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect::<Vec<_>>().join("|"))
                .collect::<Vec<_>>()
        };
        assert_eq!(shown("ab\ncd", 1), ["a|b|", "cd"]);
        assert_eq!(shown("ab\ncd", 2), ["ab| |", "cd"]);
        assert_eq!(shown("ab\ncd", 5), ["ab", "cd| |"]);
        assert_eq!(shown("", 0), ["| |"]);
        assert_eq!(cursor_row("ab\ncdefg\nh", 9, 3), 3, "the second line wraps to two rows");
        assert_eq!(cursor_row("abcdefg", 7, 3), 2);
    }
}
