//! A file as its structure tree beside its bytes. Selecting a field
//! highlights its bytes; moving in the hex pane selects the field that owns
//! the byte. Bytes are coloured by their field's role, red when it is bad.

use crate::format::span::Span as ByteSpan;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::role_style;
use super::tree::{self, FieldTree, Folds, Node};
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
    /// Damage found from outside the bytes (the version's recorded digests
    /// and footer copy): marked on the spans however often they are rebuilt.
    pub marks: Vec<crate::inspect::Problem>,
    /// `spans` as nested groups, and which groups are open.
    pub tree: FieldTree,
    pub folds: Folds,
    /// The selected tree node (always a shown one).
    pub sel: usize,
    /// The byte under the hex cursor.
    pub cursor: u64,
    /// First hex row shown.
    pub top: u64,
    pub search: Option<Vec<u8>>,
    /// Whether the structure tree (true) or the hex pane has the keys.
    pub tree_focus: bool,
    /// [`Decoder::tree_need`] of the current spans, kept so the layout does
    /// not change as groups open and close.
    need: u16,
}

impl Decoder {
    pub fn new(
        path: PathBuf,
        bytes: Vec<u8>,
        kind: Option<FileKind>,
        spans: Vec<ByteSpan>,
        problems: Vec<String>,
    ) -> Decoder {
        let tree = FieldTree::build(&spans);
        let folds = Folds::for_tree(&tree, false);
        Decoder {
            path,
            bytes: FileBytes::Read(bytes),
            window: None,
            kind,
            spans,
            problems,
            marks: Vec::new(),
            tree,
            folds,
            sel: 0,
            cursor: 0,
            top: 0,
            search: None,
            tree_focus: true,
            need: 0,
        }
        .with_need()
    }

    fn with_need(mut self) -> Decoder {
        self.need = self.tree_need();
        self
    }

    /// The split of a terminal this wide.
    pub fn panes(&self, width: u16) -> Panes {
        panes(width, self.need)
    }

    /// A large sidecar, mapped, with the spans near its first bytes.
    pub fn windowed(path: PathBuf, map: memmap2::Mmap, win: Windowed) -> Decoder {
        let kind = Some(win.kind);
        let mut d = Decoder::new(path, Vec::new(), kind, Vec::new(), Vec::new());
        d.bytes = FileBytes::Mapped(map);
        let (range, spans) = win.spans(&d.bytes, 0);
        d.set_spans(spans);
        // A sidecar's few elements near the cursor are shown open; a base's
        // tree lists every row group, closed but for the cursor's.
        d.folds = Folds::for_tree(&d.tree, !win.lists_whole_file());
        d.window = Some((win, range));
        d
    }

    fn set_spans(&mut self, mut spans: Vec<ByteSpan>) {
        crate::inspect::mark_spans(&mut spans, &self.marks);
        self.tree = FieldTree::build(&spans);
        self.spans = spans;
        self.sel = 0;
        self.need = self.tree_need();
    }

    /// Adds damage found from outside the bytes (see `marks`): listed with
    /// the problems and marked on the spans.
    pub fn add_marks(&mut self, marks: Vec<crate::inspect::Problem>) {
        if marks.is_empty() {
            return;
        }
        self.problems.extend(marks.iter().map(|p| p.message.clone()));
        self.marks.extend(marks);
        let spans = std::mem::take(&mut self.spans);
        let (sel, folds) = (self.sel, self.folds.clone());
        self.set_spans(spans);
        self.sel = sel.min(self.tree.nodes.len().saturating_sub(1));
        self.folds = folds;
    }

    /// The selected node's own span (a group of fields has none).
    pub fn selected_span(&self) -> Option<&ByteSpan> {
        self.tree.nodes.get(self.sel).and_then(|n| n.span).map(|i| &self.spans[i])
    }

    pub fn selected_node(&self) -> Option<&Node> {
        self.tree.nodes.get(self.sel)
    }

    /// The tree rows shown, folding applied.
    pub fn visible(&self) -> Vec<usize> {
        tree::visible(&self.tree, &self.folds)
    }

    /// Selects node `i`, opening the groups around it so it is shown.
    fn select_node(&mut self, i: usize) {
        for a in self.tree.ancestors(i) {
            let node = &self.tree.nodes[a];
            if !self.folds.is_open(node) {
                self.folds.set(node, true);
            }
        }
        self.sel = i;
    }

    /// After the cursor moved: new spans when it left the covered range
    /// (or came near its edge), the selection kept on the cursor's field.
    /// Whether the spans were rebuilt.
    fn follow_cursor(&mut self) -> bool {
        let Some((win, range)) = &self.window else { return false };
        // Near an edge of what is shown, unless that edge is the file's.
        let margin = crate::inspect::window::REACH / 4;
        let low_ok = range.start == 0 || self.cursor >= range.start + margin;
        let high_ok = range.end == self.bytes.len() as u64 || self.cursor + margin < range.end;
        let inside = range.contains(&self.cursor) && low_ok && high_ok;
        if inside {
            return false;
        }
        let (range, spans) = win.spans(&self.bytes, self.cursor);
        self.set_spans(spans);
        if let Some((_, r)) = &mut self.window {
            *r = range;
        }
        self.select_span_at_cursor();
        true
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

    /// How wide the tree pane would like to be to show every row whole
    /// (values are cut at 40 columns: the detail pane shows them whole).
    fn tree_need(&self) -> u16 {
        let label = self.tree.nodes.iter().map(label_width).max().unwrap_or(0);
        let value =
            (0..self.tree.nodes.len()).map(|i| self.value_text(i).chars().count().min(40)).max().unwrap_or(0);
        (offset_digits(self.bytes.len() as u64) + 1 + label + 1 + value + 2).min(u16::MAX as usize) as u16
    }

    /// What the tree's value column says of node `i`: the span's decoded
    /// value, or for a group its size and parts.
    fn value_text(&self, i: usize) -> String {
        let n = &self.tree.nodes[i];
        let own = n.span.and_then(|s| self.spans[s].value.clone());
        let mut text = match own {
            Some(v) => v,
            None if n.is_group() => format!(
                "{}, {} B",
                crate::text::plural(n.children, "part", "parts"),
                n.range.end - n.range.start
            ),
            None => format!("{} B", n.range.end - n.range.start),
        };
        if n.bad > 0 {
            text = if n.is_group() { format!("✗ {} bad · {text}", n.bad) } else { format!("✗ {text}") };
        }
        text
    }
}

/// Columns of a tree row before its value: indent, fold mark, label.
fn label_width(n: &Node) -> usize {
    2 * n.depth + 2 + n.label.chars().count()
}

/// Hex digits of the largest offset in a file this long (at least 4).
fn offset_digits(len: u64) -> usize {
    let bits = 64 - len.saturating_sub(1).leading_zeros() as usize;
    bits.div_ceil(4).max(4)
}

/// How the decoder splits its width: the tree's columns and the hex pane's
/// bytes per row (the hex pane takes the rest). The hex pane needs a fixed
/// width (16 bytes a row, hexyl's layout); the tree takes the rest, and when
/// 16 bytes a row would leave the tree too little for its rows, the hex
/// pane drops to 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Panes {
    pub tree: u16,
    pub bytes_per_row: u64,
}

/// A hex pane's width at `bpr` bytes a row: borders, offset, bytes with a
/// gap after the eighth, the characters.
pub const fn hex_width(bpr: u64) -> u16 {
    let bpr = bpr as u16;
    2 + 10 + 3 * bpr + 1 + 1 + bpr
}

/// The tree gets at least this much when the terminal allows.
const TREE_MIN: u16 = 24;

pub fn panes(width: u16, tree_need: u16) -> Panes {
    let wide = hex_width(16);
    let narrow = hex_width(8);
    let enough = tree_need.clamp(TREE_MIN, 44);
    if width >= wide + enough {
        return Panes { tree: width - wide, bytes_per_row: 16 };
    }
    let tree = width.saturating_sub(narrow).max(width * 2 / 5);
    Panes { tree, bytes_per_row: 8 }
}

/// The decoder's keys, for the keybar and `?`.
pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("h/l", "fold/unfold"),
        ("Enter", "fold/bytes"),
        ("e/c", "open/close all"),
        ("Space", "tree/hex"),
        ("/", "search"),
        ("n/N", "next/prev"),
        ("]/[", "next/prev structure"),
        ("!", "next damage"),
        ("PgDn/PgUp", "a screen of bytes"),
        (":goto", "offset or %"),
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
        KeyCode::Char('e') => Some(Action::FoldAll(true)),
        KeyCode::Char('c') => Some(Action::FoldAll(false)),
        KeyCode::Char(']') => Some(Action::NextStructure(true)),
        KeyCode::Char('[') => Some(Action::NextStructure(false)),
        KeyCode::Char('!') => Some(Action::NextDamage),
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
        Action::Left if d.tree_focus => d.fold_or_parent(),
        Action::Right if d.tree_focus => d.unfold_or_child(),
        Action::Left => d.move_cursor(-1),
        Action::Right => d.move_cursor(1),
        Action::Enter if d.tree_focus => d.toggle_or_bytes(),
        Action::Enter | Action::ToggleFocus => d.tree_focus = !d.tree_focus,
        Action::FoldAll(open) => d.fold_all(*open),
        Action::SearchNext(forward) => return Some(d.search(*forward, layout)),
        Action::PageBytes(forward) => return Some(d.page(*forward, layout)),
        Action::NextStructure(forward) => return Some(d.next_structure(*forward, layout)),
        Action::NextDamage => return Some(d.next_damage(layout)),
        _ => {}
    }
    None
}

impl Decoder {
    /// PgDn/PgUp: the hex cursor and view move by the rows shown, whatever
    /// the file's size; the field under the cursor is selected.
    fn page(&mut self, forward: bool, layout: Screen) -> String {
        let rows = layout.page.max(1) as u64;
        let step = rows * self.panes(layout.width).bytes_per_row;
        let last = (self.bytes.len() as u64).saturating_sub(1);
        self.cursor = if forward {
            self.cursor.saturating_add(step).min(last)
        } else {
            self.cursor.saturating_sub(step)
        };
        self.top = if forward { self.top + rows } else { self.top.saturating_sub(rows) };
        self.follow_cursor();
        self.select_span_at_cursor();
        self.keep_cursor_visible(layout);
        self.position()
    }

    /// Where the cursor is, for the status line.
    fn position(&self) -> String {
        let len = self.bytes.len().max(1) as u64;
        let name = self.selected_node().map(|n| n.path.clone()).unwrap_or_default();
        format!("byte {} of {len} ({}%)  {name}", self.cursor, self.cursor * 100 / len)
    }

    /// `]`/`[`: the start of the next (or previous) structure, a node at
    /// the top of the tree (a batch, a row group, the footer, a section).
    fn next_structure(&mut self, forward: bool, layout: Screen) -> String {
        let starts = self.tree.nodes.iter().filter(|n| n.depth == 0).map(|n| n.range.start);
        let target = if forward {
            starts.filter(|&s| s > self.cursor).min()
        } else {
            starts.filter(|&s| s < self.cursor).max()
        };
        let target = match (target, &self.window) {
            (Some(t), _) => t,
            // Past what a windowed file shows: the edge of the window, where
            // the next spans are decoded.
            (None, Some((_, range))) if forward && range.end < self.bytes.len() as u64 => range.end,
            (None, Some((_, range))) if !forward && range.start > 0 => range.start - 1,
            (None, _) => return format!("no {} structure", if forward { "next" } else { "previous" }),
        };
        self.jump(target, layout)
    }

    /// `!`: the next damaged byte after the cursor (a field the decoder
    /// found bad, or damage the version's records name), wrapping round.
    fn next_damage(&mut self, layout: Screen) -> String {
        let mut at: Vec<u64> = self.spans.iter().filter(|s| !s.is_ok()).map(|s| s.range.start).collect();
        at.extend(self.marks.iter().map(|m| m.offset));
        at.extend(self.problems.iter().filter_map(|p| problem_offset(p)));
        at.retain(|&o| o < self.bytes.len() as u64);
        at.sort_unstable();
        at.dedup();
        let Some(&target) = at.iter().find(|&&o| o > self.cursor).or(at.first()) else {
            return "no damage found in this file".into();
        };
        let wrapped = target <= self.cursor;
        let text = self.jump(target, layout);
        let k = at.iter().position(|&o| o == target).unwrap_or(0) + 1;
        format!("damage {k} of {}{}: {text}", at.len(), if wrapped { " (from the top)" } else { "" })
    }

    fn jump(&mut self, target: u64, layout: Screen) -> String {
        match self.goto(target, layout) {
            Ok(()) => self.position(),
            Err(e) => e,
        }
    }
}

/// The byte offset a problem's text starts with ("at byte 1390: …").
fn problem_offset(p: &str) -> Option<u64> {
    p.strip_prefix("at byte ")?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

impl Decoder {
    /// ← in the tree: closes an open group, else selects the parent; on a
    /// field at the top, moves the hex cursor back a byte.
    fn fold_or_parent(&mut self) {
        let Some(n) = self.tree.nodes.get(self.sel) else { return };
        if n.is_group() && self.folds.is_open(n) {
            let n = n.clone();
            self.folds.set(&n, false);
        } else if let Some(p) = self.tree.parent(self.sel) {
            self.select_node(p);
            self.cursor = self.tree.nodes[p].range.start;
        } else {
            self.move_cursor(-1);
        }
    }

    /// → in the tree: opens a closed group, else steps into its first part;
    /// on a field, moves the hex cursor on a byte.
    fn unfold_or_child(&mut self) {
        let Some(n) = self.tree.nodes.get(self.sel) else { return };
        if !n.is_group() {
            self.move_cursor(1);
        } else if !self.folds.is_open(n) {
            let n = n.clone();
            self.folds.set(&n, true);
        } else {
            self.sel += 1;
            self.cursor = self.tree.nodes[self.sel].range.start;
        }
    }

    /// Enter in the tree: a group opens or closes; a field hands the keys to
    /// the hex pane at its first byte.
    fn toggle_or_bytes(&mut self) {
        let Some(n) = self.tree.nodes.get(self.sel).cloned() else { return };
        if n.is_group() {
            let open = self.folds.is_open(&n);
            self.folds.set(&n, !open);
        } else {
            self.cursor = n.range.start;
            self.tree_focus = false;
        }
    }

    fn fold_all(&mut self, open: bool) {
        self.folds.set_all(open);
        // The selection stays shown: closing all selects its outermost group.
        if let Some(&top) = self.tree.ancestors(self.sel).first().filter(|_| !open) {
            self.sel = top;
        }
    }

    fn step(&mut self, delta: i64, layout: Screen) {
        if self.tree_focus {
            let rows = self.visible();
            let pos = rows.iter().position(|&i| i >= self.sel).unwrap_or(0) as i64;
            let want = pos.saturating_add(delta);
            if self.window.is_some() && self.step_past_window(want, pos, rows.len()) {
                self.keep_cursor_visible(layout);
                return;
            }
            let at = want.clamp(0, rows.len().saturating_sub(1) as i64) as usize;
            if let Some(&node) = rows.get(at) {
                self.sel = node;
                self.cursor = self.tree.nodes[node].range.start;
            }
            let before = self.tree.nodes.get(self.sel).map(|n| n.path.clone());
            // New spans near the cursor: keep the same field selected.
            if self.follow_cursor() {
                if let Some(i) = before.and_then(|p| self.tree.find(&p)) {
                    self.select_node(i);
                }
            }
        } else {
            let len = self.bytes.len() as i128;
            let bpr = self.panes(layout.width).bytes_per_row as i128;
            self.cursor = (self.cursor as i128 + bpr * delta as i128).clamp(0, (len - 1).max(0)) as u64;
            self.follow_cursor();
            self.select_span_at_cursor();
        }
        self.keep_cursor_visible(layout);
    }

    /// In a windowed file, a tree step beyond the rows shown moves the cursor
    /// to the field after the last one (or before the first element) and
    /// shows the fields there. `false` when the step stays inside.
    fn step_past_window(&mut self, want: i64, pos: i64, shown: usize) -> bool {
        let Some((win, range)) = &self.window else { return false };
        if win.lists_whole_file() {
            return false;
        }
        let header = win.header.len() as i64;
        let len = self.bytes.len() as u64;
        let target = if want >= shown as i64 {
            self.spans.iter().map(|s| s.range.end).max().filter(|&end| end < len)
        } else if want < header && range.start > 0 && pos >= header {
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

    /// Selects the innermost field under the hex cursor, opening its groups.
    fn select_span_at_cursor(&mut self) {
        if let Some(node) = self.span_at(self.cursor).and_then(|i| self.tree.node_of_span(i)) {
            self.select_node(node);
        }
    }

    fn keep_cursor_visible(&mut self, layout: Screen) {
        let page = layout.page.max(1) as u64;
        let row = self.cursor / self.panes(layout.width).bytes_per_row;
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
        // A jump into damage selects the damage (a torn tail's `leftover`,
        // say, rather than the good-looking magic inside it).
        let bad = self.spans.iter().enumerate().filter(|(_, s)| !s.is_ok() && s.contains(offset));
        if let Some(node) = bad.min_by_key(|(_, s)| s.len()).and_then(|(i, _)| self.tree.node_of_span(i)) {
            self.select_node(node);
        }
        // A jump shows what comes after the offset too: its row a third of
        // the way down the page.
        let row = offset / self.panes(layout.width).bytes_per_row;
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
    let a = d.areas(area);
    let problems = a.problems;
    render_tree(f, a.tree, d);
    render_detail(f, a.detail, d);
    render_hex(f, a.hex, d, a.bytes_per_row);
    if !d.problems.is_empty() {
        let text: Vec<Line> =
            d.problems.iter().map(|p| Line::styled(p.clone(), Style::new().fg(Color::Red))).collect();
        f.render_widget(
            Paragraph::new(text).block(Block::default().borders(Borders::TOP).title("problems")),
            problems,
        );
    }
}

/// Where the decoder's panes are in `area` (the frame's main area): the one
/// layout that drawing and mouse clicks both read.
pub struct Areas {
    pub tree: Rect,
    pub detail: Rect,
    pub hex: Rect,
    pub problems: Rect,
    pub bytes_per_row: u64,
}

impl Decoder {
    pub fn areas(&self, area: Rect) -> Areas {
        let problems_h = if self.problems.is_empty() { 0 } else { 3 };
        let [body, problems] =
            Layout::vertical([Constraint::Min(4), Constraint::Length(problems_h)]).areas(area);
        let p = self.panes(area.width);
        let [left, hex] = Layout::horizontal([Constraint::Length(p.tree), Constraint::Min(0)]).areas(body);
        // The detail pane under the tree; a short terminal gives it fewer rows.
        let detail_h = if left.height >= 24 { 9 } else { 7.min(left.height / 2) };
        let [tree, detail] = Layout::vertical([Constraint::Min(3), Constraint::Length(detail_h)]).areas(left);
        Areas { tree, detail, hex, problems, bytes_per_row: p.bytes_per_row }
    }

    /// The first tree row drawn in a pane showing `rows_shown` rows: the
    /// selection kept near the middle.
    fn tree_start(&self, visible: &[usize], rows_shown: usize) -> usize {
        let pos = visible.iter().position(|&i| i == self.sel).unwrap_or(0);
        pos.saturating_sub(rows_shown / 2).min(visible.len().saturating_sub(rows_shown))
    }

    /// The first hex row drawn in a pane showing `rows` rows: the page the
    /// update step scrolled to, or lower when the cursor's row would not be
    /// drawn (the problems pane can make the pane shorter than a page).
    fn hex_top(&self, rows: usize, bpr: u64) -> u64 {
        let cursor_row = self.cursor / bpr;
        if cursor_row >= self.top + rows as u64 {
            cursor_row + 1 - rows as u64
        } else {
            self.top
        }
    }

    /// A click at (`col`, `row`) of the screen, whose main area is `main`:
    /// on a tree row selects it, on a byte (or its character) moves the hex
    /// cursor there.
    pub fn click(&mut self, col: u16, row: u16, main: Rect) {
        let a = self.areas(main);
        let inside = |r: Rect| col > r.x && col + 1 < r.x + r.width && row > r.y && row + 1 < r.y + r.height;
        if inside(a.tree) {
            let visible = self.visible();
            let rows_shown = a.tree.height.saturating_sub(2) as usize;
            let at = self.tree_start(&visible, rows_shown) + (row - a.tree.y - 1) as usize;
            if let Some(&node) = visible.get(at) {
                self.sel = node;
                self.cursor = self.tree.nodes[node].range.start;
                self.tree_focus = true;
            }
        } else if inside(a.hex) {
            let bpr = a.bytes_per_row;
            let line =
                self.hex_top(a.hex.height.saturating_sub(2) as usize, bpr) + u64::from(row - a.hex.y - 1);
            let Some(i) = byte_at_column(col - a.hex.x - 1, bpr) else { return };
            let offset = line * bpr + i;
            if offset < self.bytes.len() as u64 {
                self.cursor = offset;
                self.tree_focus = false;
                self.follow_cursor();
                self.select_span_at_cursor();
            }
        }
    }
}

/// Which byte of a hex row a column inside the pane shows: its two hex
/// digits or its character (the layout [`hex_line`] draws).
fn byte_at_column(x: u16, bpr: u64) -> Option<u64> {
    let x = u64::from(x);
    let gap = u64::from(bpr == 16); // the extra space after the eighth byte
    let hex_end = 10 + 3 * bpr + gap;
    if x >= 10 && x < hex_end {
        let mut rel = x - 10;
        if gap == 1 && rel >= 24 {
            rel = rel.saturating_sub(1);
        }
        let i = rel / 3;
        return (rel % 3 != 2 && i < bpr).then_some(i);
    }
    let chars = hex_end + 1;
    (x >= chars && x < chars + bpr).then(|| x - chars)
}

fn render_tree(f: &mut Frame, area: Rect, d: &Decoder) {
    let rows_shown = area.height.saturating_sub(2) as usize;
    let rows = d.visible();
    let start = d.tree_start(&rows, rows_shown);
    let digits = offset_digits(d.bytes.len() as u64);
    let inner = area.width.saturating_sub(2) as usize;
    // Values line up in one column, as far right as the widest label shown
    // (but never past half the pane).
    let value_col =
        rows[start..].iter().take(rows_shown).map(|&i| label_width(&d.tree.nodes[i])).max().unwrap_or(0);
    let value_col = value_col.min(inner.saturating_sub(digits + 1) / 2).max(8);
    let lines: Vec<Line> = rows[start..]
        .iter()
        .take(rows_shown)
        .map(|&i| tree_line(d, i, digits, value_col, i == d.sel))
        .collect();
    let focus = if d.tree_focus { " [keys]" } else { "" };
    let shown = match &d.window {
        Some((_, r)) => format!("fields near {:#x}..{:#x}", r.start, r.end),
        None => crate::text::plural(d.spans.len(), "field", "fields"),
    };
    let title = format!("{} — {shown}{focus}", d.kind.map_or("raw", |k| k.id()));
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}

/// One tree row: offset, indent, fold mark, label, then the value column.
fn tree_line(d: &Decoder, i: usize, digits: usize, value_col: usize, selected: bool) -> Line<'static> {
    let n = &d.tree.nodes[i];
    let mark = match (n.is_group(), d.folds.is_open(n)) {
        (false, _) => "  ",
        (true, true) => "▾ ",
        (true, false) => "▸ ",
    };
    let own = n.span.map(|s| &d.spans[s]);
    let style = match own {
        Some(s) => role_style(s.role, s.is_ok()),
        None if n.bad > 0 => role_style(crate::format::span::Role::Value, false),
        None => Style::new().add_modifier(Modifier::BOLD),
    };
    let label = format!("{}{mark}{}", "  ".repeat(n.depth), n.label);
    let pad = value_col.saturating_sub(label.chars().count()) + 1;
    let value = d.value_text(i);
    let value_style =
        if n.bad > 0 { role_style(crate::format::span::Role::Value, false) } else { Style::new() };
    let mut spans = vec![
        Span::styled(format!("{:>digits$x} ", n.range.start), Style::new().add_modifier(Modifier::DIM)),
        Span::styled(label, style),
        Span::raw(" ".repeat(pad)),
        Span::styled(value, value_style),
    ];
    if selected {
        for s in &mut spans {
            s.style = s.style.add_modifier(Modifier::REVERSED);
        }
    }
    Line::from(spans)
}

/// The selected node whole: where its bytes are, the bytes, what they
/// decode to, and whether the decoder found them good (for a checksum,
/// stored against computed).
fn render_detail(f: &mut Frame, area: Rect, d: &Decoder) {
    if area.height == 0 {
        return;
    }
    let Some(n) = d.selected_node() else { return };
    let own = n.span.map(|s| &d.spans[s]);
    let dim = Style::new().add_modifier(Modifier::DIM);
    let field = |k: &str, v: String, style: Style| {
        Line::from(vec![Span::styled(format!("{k:<7}"), dim), Span::styled(v, style)])
    };
    let len = n.range.end - n.range.start;
    let role = own.map_or("group".to_string(), |s| s.role.as_str().to_string());
    let mut lines = vec![
        field(
            "bytes",
            format!("{:#x}..{:#x}  ({} B, {role})", n.range.start, n.range.end, len),
            Style::new(),
        ),
        field("raw", raw_bytes(&d.bytes, &n.range, 16), Style::new()),
    ];
    match own.and_then(|s| s.value.clone()) {
        Some(v) => lines.push(field("value", v, Style::new())),
        None if n.is_group() => lines.push(field(
            "parts",
            format!("{} direct, {} in all", n.children, n.end - d.sel - 1),
            Style::new(),
        )),
        None => {}
    }
    let red = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    let green = Style::new().fg(Color::Green);
    lines.push(match own {
        Some(s) if !s.is_ok() => field("status", format!("✗ {}", s.reason.as_deref().unwrap_or("bad")), red),
        _ if n.bad > 0 => field("status", format!("✗ {} bad field(s) inside", n.bad), red),
        // Parquet's page CRCs are optional and not compared by the decoder.
        Some(s) if s.role == crate::format::span::Role::Checksum && d.kind != Some(FileKind::Parquet) => {
            field("status", "✓ stored = computed over the bytes it covers".into(), green)
        }
        Some(s) if s.role == crate::format::span::Role::Checksum => {
            field("status", "– stored; not compared here (verify --deep reads the pages)".into(), dim)
        }
        _ => field("status", "✓ decoded without complaint".into(), green),
    });
    let block = Block::default().borders(Borders::ALL).title(format!("detail — {}", n.path));
    f.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

/// Up to `max` bytes of `range` in hex, `…` when there are more.
fn raw_bytes(bytes: &[u8], range: &std::ops::Range<u64>, max: u64) -> String {
    let end = range.end.min(range.start + max).min(bytes.len() as u64);
    let shown = bytes.get(range.start as usize..end as usize).unwrap_or(&[]);
    let mut out: Vec<String> = shown.iter().map(|b| format!("{b:02x}")).collect();
    if range.end > end {
        out.push("…".into());
    }
    out.join(" ")
}

/// A byte's class, as hexyl colours it: NUL, printable ASCII, ASCII white
/// space, other ASCII, and bytes above 0x7f.
fn byte_class(b: u8) -> (Style, char) {
    match b {
        0 => (Style::new().fg(Color::DarkGray), '⋄'),
        b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => (Style::new().fg(Color::Green), '_'),
        b if b.is_ascii_graphic() => (Style::new().fg(Color::Cyan), b as char),
        b if b.is_ascii() => (Style::new().fg(Color::Green), '•'),
        _ => (Style::new().fg(Color::Yellow), '×'),
    }
}

/// The colour of a byte in the hex pane: its field's role colour where the
/// role has one (magic, lengths, checksums, bad bytes), else its class.
/// `near` holds the spans that reach the rows drawn.
fn byte_style(near: &[&ByteSpan], off: u64, b: u8) -> Style {
    let class = byte_class(b).0;
    let owner = near.iter().filter(|s| s.range.contains(&off)).min_by_key(|s| s.len());
    match owner {
        Some(s) => {
            let role = role_style(s.role, s.is_ok());
            if role == Style::new() {
                class
            } else {
                role
            }
        }
        None => class,
    }
}

fn render_hex(f: &mut Frame, area: Rect, d: &Decoder, bpr: u64) {
    let rows = area.height.saturating_sub(2) as usize;
    let sel = d.selected_node().map(|n| n.range.clone());
    let top = d.hex_top(rows, bpr);
    // The spans that reach the rows drawn, found once: a file can have tens
    // of thousands, and every byte drawn asks which one owns it.
    let (first, last) = (top * bpr, (top + rows as u64) * bpr);
    let near: Vec<&ByteSpan> =
        d.spans.iter().filter(|s| s.range.start < last && s.range.end > first).collect();
    let mut lines = Vec::with_capacity(rows);
    for r in 0..rows as u64 {
        let start = (top + r) * bpr;
        if start >= d.bytes.len() as u64 {
            break;
        }
        lines.push(hex_line(d, &near, start, bpr, sel.as_ref()));
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

/// One hex row: offset, `bpr` bytes (a gap after the eighth), characters.
fn hex_line(
    d: &Decoder,
    near: &[&ByteSpan],
    start: u64,
    bpr: u64,
    sel: Option<&std::ops::Range<u64>>,
) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{start:08x}  "), Style::new().add_modifier(Modifier::DIM))];
    let mut chars = vec![Span::raw(" ")];
    for i in 0..bpr {
        let off = start + i;
        let Some(&b) = d.bytes.get(off as usize) else {
            spans.push(Span::raw("   "));
            continue;
        };
        let mut style = byte_style(near, off, b);
        if sel.is_some_and(|r| r.contains(&off)) {
            style = style.add_modifier(Modifier::REVERSED);
        }
        if off == d.cursor {
            style = style.add_modifier(Modifier::UNDERLINED | Modifier::BOLD);
        }
        spans.push(Span::styled(format!("{b:02x}"), style));
        spans.push(Span::raw(if i == 7 && bpr == 16 { "  " } else { " " }));
        let (class, c) = byte_class(b);
        chars.push(Span::styled(c.to_string(), class));
    }
    spans.extend(chars);
    Line::from(spans)
}
