//! A file as its structure tree beside its bytes. Selecting a field
//! highlights its bytes; moving in the hex pane selects the field that owns
//! the byte. Bytes are coloured by their field's role, red when it is bad.

use crate::format::span::Span as ByteSpan;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, Paragraph};
use ratatui::Frame;

use super::{list_rows, role_style};
use std::path::PathBuf;

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::format::kind::FileKind;
use crate::inspect::window::Windowed;
use crate::tui::action::Action;
use crate::tui::state::{App, Screen};

/// A file's bytes: read, or mapped when large (only the pages shown are
/// then resident).
pub enum FileBytes {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Read(v) => v,
            FileBytes::Mapped(m) => m,
        }
    }
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.len())
    }
}

#[derive(Debug)]
pub struct Decoder {
    pub path: PathBuf,
    pub bytes: FileBytes,
    /// For a large sidecar: its header, and the byte range `spans` covers
    /// (the header plus the elements near the cursor, recomputed as it moves).
    pub window: Option<(Windowed, std::ops::Range<u64>)>,
    pub kind: Option<FileKind>,
    pub spans: Vec<ByteSpan>,
    pub problems: Vec<String>,
    pub span_sel: usize,
    /// The byte under the hex cursor.
    pub cursor: u64,
    /// First hex row shown (16 bytes a row).
    pub top: u64,
    pub search: Option<Vec<u8>>,
    /// Whether the structure tree (true) or the hex pane has the keys.
    pub tree_focus: bool,
}

impl Decoder {
    pub fn new(
        path: PathBuf,
        bytes: Vec<u8>,
        kind: Option<FileKind>,
        spans: Vec<ByteSpan>,
        problems: Vec<String>,
    ) -> Decoder {
        Decoder {
            path,
            bytes: FileBytes::Read(bytes),
            window: None,
            kind,
            spans,
            problems,
            span_sel: 0,
            cursor: 0,
            top: 0,
            search: None,
            tree_focus: true,
        }
    }

    /// A large sidecar, mapped, with the spans near its first bytes.
    pub fn windowed(path: PathBuf, map: memmap2::Mmap, win: Windowed) -> Decoder {
        let kind = Some(win.kind);
        let mut d = Decoder::new(path, Vec::new(), kind, Vec::new(), Vec::new());
        d.bytes = FileBytes::Mapped(map);
        let (range, spans) = win.spans(&d.bytes, 0);
        d.spans = spans;
        d.window = Some((win, range));
        d
    }

    /// After the cursor moved: new spans when it left the covered range
    /// (or came near its edge), the selection kept on the cursor's field.
    fn follow_cursor(&mut self) {
        let Some((win, range)) = &self.window else { return };
        // Near an edge of what is shown, unless that edge is the file's.
        let margin = crate::inspect::window::REACH / 4;
        let low_ok = range.start == 0 || self.cursor >= range.start + margin;
        let high_ok = range.end == self.bytes.len() as u64 || self.cursor + margin < range.end;
        let inside = range.contains(&self.cursor) && low_ok && high_ok;
        if inside {
            return;
        }
        let (range, spans) = win.spans(&self.bytes, self.cursor);
        self.spans = spans;
        if let Some((_, r)) = &mut self.window {
            *r = range;
        }
        self.span_sel = self.span_at(self.cursor).unwrap_or(0);
    }

    /// The innermost span holding `offset`.
    pub fn span_at(&self, offset: u64) -> Option<usize> {
        self.spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.range.contains(&offset))
            .min_by_key(|(_, s)| s.range.end - s.range.start)
            .map(|(i, _)| i)
    }
}

/// The decoder's keys, for the keybar and `?`.
pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("h/l", "hex ←/→"),
        ("Space", "tree/hex"),
        ("/", "search"),
        ("n/N", "next/prev"),
        (":goto", "offset"),
        ("Esc", "back"),
    ]
}

/// Keys only the decoder has.
pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('/') => Some(Action::OpenCmdline('/')),
        KeyCode::Char('n') => Some(Action::SearchNext(true)),
        KeyCode::Char('N') => Some(Action::SearchNext(false)),
        KeyCode::Char(' ') => Some(Action::ToggleFocus),
        _ => None,
    }
}

/// The decoder's part of an action; a status line to show, if any.
pub fn update(d: &mut Decoder, action: &Action, layout: Screen) -> Option<String> {
    match action {
        Action::Up(n) => d.step(-(*n as i64), layout),
        Action::Down(n) => d.step(*n as i64, layout),
        Action::Top => d.step(i64::MIN / 2, layout),
        Action::Bottom => d.step(i64::MAX / 2, layout),
        Action::Left => d.move_cursor(-1),
        Action::Right => d.move_cursor(1),
        Action::Enter | Action::ToggleFocus => d.tree_focus = !d.tree_focus,
        Action::SearchNext(forward) => return Some(d.search(*forward, layout)),
        _ => {}
    }
    None
}

impl Decoder {
    fn step(&mut self, delta: i64, layout: Screen) {
        if self.tree_focus {
            let n = self.spans.len();
            let want = (self.span_sel as i64).saturating_add(delta);
            if self.window.is_some() && self.step_past_window(want) {
                self.keep_cursor_visible(layout);
                return;
            }
            self.span_sel = want.clamp(0, n.saturating_sub(1) as i64) as usize;
            if let Some(s) = self.spans.get(self.span_sel) {
                self.cursor = s.range.start;
            }
            self.follow_cursor();
        } else {
            let len = self.bytes.len() as i128;
            self.cursor = (self.cursor as i128 + layout.hex_cols as i128 * delta as i128)
                .clamp(0, (len - 1).max(0)) as u64;
            self.follow_cursor();
            self.select_span_at_cursor();
        }
        self.keep_cursor_visible(layout);
    }

    /// In a windowed file, a tree step beyond the fields shown moves the
    /// cursor to the field after the last one (or before the first element)
    /// and shows the fields there. `false` when the step stays inside.
    fn step_past_window(&mut self, want: i64) -> bool {
        let Some((win, range)) = &self.window else { return false };
        let header = win.header.len() as i64;
        let len = self.bytes.len() as u64;
        let target = if want >= self.spans.len() as i64 {
            self.spans.last().map(|s| s.range.end).filter(|&end| end < len)
        } else if want < header && range.start > 0 && (self.span_sel as i64) >= header {
            self.spans.get(header as usize).map(|s| s.range.start.saturating_sub(1))
        } else {
            None
        };
        let Some(cursor) = target else { return false };
        self.cursor = cursor;
        self.window.as_mut().expect("windowed").1 = 0..0;
        self.follow_cursor();
        self.select_span_at_cursor();
        true
    }

    fn move_cursor(&mut self, delta: i64) {
        let last = (self.bytes.len() as u64).saturating_sub(1);
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
        self.tree_focus = false;
        self.follow_cursor();
        self.select_span_at_cursor();
    }

    fn select_span_at_cursor(&mut self) {
        if let Some(i) = self.span_at(self.cursor) {
            self.span_sel = i;
        }
    }

    fn keep_cursor_visible(&mut self, layout: Screen) {
        let page = layout.page.max(1) as u64;
        let row = self.cursor / layout.hex_cols.max(1);
        if row < self.top {
            self.top = row;
        } else if row >= self.top + page {
            self.top = row + 1 - page;
        }
    }

    /// Moves the hex cursor to `offset` (`:goto`).
    pub fn goto(&mut self, offset: u64, layout: Screen) -> Result<(), String> {
        if offset >= self.bytes.len() as u64 {
            return Err("offset beyond the end of the file".into());
        }
        self.cursor = offset;
        self.tree_focus = false;
        self.follow_cursor();
        self.select_span_at_cursor();
        // A jump shows what comes after the offset too: its row a third of
        // the way down the page.
        let row = offset / layout.hex_cols.max(1);
        self.top = row.saturating_sub(layout.page as u64 / 3);
        Ok(())
    }

    /// `/text` or `/x:1f8b`: the needle, then the first match after the cursor.
    pub fn start_search(&mut self, needle: &str, layout: Screen) -> String {
        let bytes = match needle.strip_prefix("x:") {
            Some(hex) => (0..hex.len() / 2)
                .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
                .collect(),
            None => needle.as_bytes().to_vec(),
        };
        self.search = Some(bytes);
        self.search(true, layout)
    }

    /// The next (or previous) match of the search needle; what to say.
    fn search(&mut self, forward: bool, layout: Screen) -> String {
        let Some(needle) = self.search.clone().filter(|n| !n.is_empty()) else {
            return "no search: type /text or /x:hex".into();
        };
        let hay = &self.bytes;
        let found = if forward {
            let from = (self.cursor + 1) as usize;
            hay.get(from..)
                .and_then(|h| h.windows(needle.len()).position(|w| w == needle.as_slice()))
                .map(|i| from + i)
        } else {
            let upto = (self.cursor as usize).min(hay.len());
            hay[..upto].windows(needle.len()).rposition(|w| w == needle.as_slice())
        };
        match found {
            Some(at) => {
                self.cursor = at as u64;
                self.tree_focus = false;
                self.follow_cursor();
                self.select_span_at_cursor();
                self.keep_cursor_visible(layout);
                format!("match at {at:#x}")
            }
            None => "no more matches".into(),
        }
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let Some(d) = &app.decoder else {
        f.render_widget(
            Paragraph::new(
                "No file open. Pick one in Files and press Enter, or type :open v1/data.cottas.s.dict",
            )
            .block(Block::default().borders(Borders::ALL).title("Decoder")),
            area,
        );
        return;
    };
    let [body, problems] =
        Layout::vertical([Constraint::Min(4), Constraint::Length(if d.problems.is_empty() { 0 } else { 3 })])
            .areas(area);
    let tree_w = if area.width >= 124 { 46 } else { 26.min(area.width / 3) };
    let [tree, hex] = Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(20)]).areas(body);
    render_tree(f, tree, d);
    render_hex(f, hex, d);
    if !d.problems.is_empty() {
        let text: Vec<Line> =
            d.problems.iter().map(|p| Line::styled(p.clone(), Style::new().fg(Color::Red))).collect();
        f.render_widget(
            Paragraph::new(text).block(Block::default().borders(Borders::TOP).title("problems")),
            problems,
        );
    }
}

fn render_tree(f: &mut Frame, area: Rect, d: &Decoder) {
    let rows = list_rows(area) + 1;
    let start = d.span_sel.saturating_sub(rows / 2).min(d.spans.len().saturating_sub(rows));
    let items: Vec<ListItem> = d
        .spans
        .iter()
        .enumerate()
        .skip(start)
        .take(rows)
        .map(|(i, s)| {
            let mark = if s.is_ok() { "" } else { " ✗" };
            let text = format!(
                "{:>6} {} {}{mark}",
                s.range.start,
                s.name,
                s.value.as_deref().map(|v| format!("= {v}")).unwrap_or_default()
            );
            let style = role_style(s.role, s.is_ok());
            let style = if i == d.span_sel { style.add_modifier(Modifier::REVERSED) } else { style };
            ListItem::new(Line::styled(text, style))
        })
        .collect();
    let focus = if d.tree_focus { " [keys]" } else { "" };
    let shown = match &d.window {
        Some((_, r)) => format!("fields near {:#x}..{:#x}", r.start, r.end),
        None => format!("{} fields", d.spans.len()),
    };
    let title = format!("{} — {shown}{focus}", d.kind.map_or("raw", |k| k.id()));
    f.render_widget(List::new(items).block(Block::default().borders(Borders::ALL).title(title)), area);
}

/// Bytes per hex row that fit in a pane `width` wide (16, or 8 when narrow).
pub fn bytes_per_row(width: u16) -> u64 {
    if width >= 80 {
        16
    } else {
        8
    }
}

fn render_hex(f: &mut Frame, area: Rect, d: &Decoder) {
    let rows = list_rows(area) + 1;
    let bpr = bytes_per_row(area.width);
    let sel = d.spans.get(d.span_sel).map(|s| s.range.clone());
    // The update step scrolls by the page the terminal's size gives; the
    // pane can be shorter (the problems pane takes rows), and the cursor's
    // row is drawn whatever it is.
    let cursor_row = d.cursor / bpr;
    let top = if cursor_row >= d.top + rows as u64 { cursor_row + 1 - rows as u64 } else { d.top };
    // Owner of each visible byte, found once per row window.
    let mut lines = Vec::with_capacity(rows);
    for r in 0..rows as u64 {
        let row = top + r;
        let start = row * bpr;
        if start >= d.bytes.len() as u64 {
            break;
        }
        let mut spans =
            vec![Span::styled(format!("{start:08x}  "), Style::new().add_modifier(Modifier::DIM))];
        let mut ascii = String::new();
        for i in 0..bpr {
            let off = start + i;
            let Some(&b) = d.bytes.get(off as usize) else {
                spans.push(Span::raw("   "));
                continue;
            };
            let owner = d.span_at(off).map(|k| &d.spans[k]);
            let mut style = owner.map_or(Style::new(), |s| role_style(s.role, s.is_ok()));
            if sel.as_ref().is_some_and(|r| r.contains(&off)) {
                style = style.add_modifier(Modifier::REVERSED);
            }
            if off == d.cursor {
                style = style.add_modifier(Modifier::UNDERLINED | Modifier::BOLD);
            }
            spans.push(Span::styled(format!("{b:02x}"), style));
            spans.push(Span::raw(if i == 7 && bpr == 16 { "  " } else { " " }));
            ascii.push(if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' });
        }
        spans.push(Span::styled(format!(" {ascii}"), Style::new().add_modifier(Modifier::DIM)));
        lines.push(Line::from(spans));
    }
    let focus = if d.tree_focus { "" } else { " [keys]" };
    let title = format!(
        "{} — {} bytes, cursor {:#x}{focus}",
        d.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        d.bytes.len(),
        d.cursor
    );
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}
