//! One file per view: each owns its state, its keys (`key`, `bindings`),
//! its part of the update step (`update`, which returns effects and reads
//! no file) and its drawing (`render`, which changes nothing). This file
//! draws the frame around them (tabs and breadcrumb, status line, keybar)
//! and the overlays.

pub mod corpus;
pub mod decoder;
pub mod editor;
pub mod files;
pub mod log;
pub mod prefixes;
pub mod query;
pub mod store;
pub mod timeline;
pub mod tree;
pub mod triage;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs, Wrap};
use ratatui::Frame;

use super::action::bindings;
use super::state::{App, Check, Tab};
use crate::format::span::Role;

/// Takes the colours out of a drawn frame. A cell whose background was
/// coloured (a selection, a highlighted span) is drawn in reverse video
/// instead, so what colour marked stays marked.
fn monochrome(buffer: &mut ratatui::buffer::Buffer) {
    for cell in &mut buffer.content {
        if cell.bg != Color::Reset {
            cell.modifier.insert(ratatui::style::Modifier::REVERSED);
        }
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

pub fn render(f: &mut Frame, app: &App) {
    let [top, main, status, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    render_tabs(f, top, app);
    match app.tab {
        Tab::Corpus => {
            if let Some(c) = &app.corpus {
                corpus::render(f, main, c);
            }
        }
        Tab::Store => store::render(f, main, app),
        Tab::Triage => triage::render(f, main, app),
        Tab::Files => files::render(f, main, app),
        Tab::Decoder => decoder::render(f, main, app),
        Tab::Log => log::render(f, main, app),
        Tab::Query => query::render(f, main, app),
        Tab::Timeline => timeline::render(f, main, app),
    }
    render_status(f, status, app);
    render_keybar(f, keys, app);
    if app.help {
        render_help(f, app);
    }
    if let Some(c) = &app.confirm {
        let area = confirm_area(f.area(), &c.text);
        f.render_widget(Clear, area);
        let block = Block::default()
            .borders(Borders::ALL)
            .title(c.title.as_str())
            .border_style(Style::new().fg(Color::Yellow));
        f.render_widget(Paragraph::new(c.text.as_str()).block(block).wrap(Wrap { trim: false }), area);
    }
    if app.monochrome {
        monochrome(f.buffer_mut());
    }
}

/// Whether `k` types its character: not with Ctrl or Alt alone (Ctrl+Alt
/// is AltGr on some keyboards, which types `{`, `@` and the like). A Ctrl
/// key the editor does not know must not turn into a letter in the text.
pub fn types_char(k: &KeyEvent) -> bool {
    let held = k.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
    held.is_empty() || held == KeyModifiers::CONTROL | KeyModifiers::ALT
}

/// Readline's kills before the cursor at byte `at`, never before byte
/// `keep`: Ctrl-U the current line up to the cursor (at a line's start, the
/// line break before it, so repeated presses clear upward), Ctrl-W the word
/// before the cursor with the blanks after it. The cursor's new place when
/// `k` was one of them.
pub fn kill(text: &mut String, keep: usize, at: usize, k: &KeyEvent) -> Option<usize> {
    if !k.modifiers.contains(KeyModifiers::CONTROL) || keep > at || at > text.len() {
        return None;
    }
    let body = &text[keep..at];
    let start = match k.code {
        KeyCode::Char('u') => match body.rfind('\n') {
            Some(i) if i + 1 == body.len() => i,
            Some(i) => i + 1,
            None => 0,
        },
        KeyCode::Char('w') => {
            let word_end = body.trim_end().len();
            let blank = body[..word_end].char_indices().rev().find(|(_, c)| c.is_whitespace());
            blank.map_or(0, |(i, c)| i + c.len_utf8())
        }
        _ => return None,
    };
    text.replace_range(keep + start..at, "");
    Some(keep + start)
}

/// Where a list's selection goes for a move (`j`/`k`, pages, `g`/`G`), in
/// a list of `len` rows; `None` for any other action.
pub fn list_move(sel: usize, len: usize, action: &super::action::Action) -> Option<usize> {
    use super::action::Action;
    Some(match action {
        Action::Up(k) => move_sel(sel, len, -(*k as isize)),
        Action::Down(k) => move_sel(sel, len, *k as isize),
        Action::Top => 0,
        Action::Bottom => len.saturating_sub(1),
        _ => return None,
    })
}

/// A list's own actions, for every view that shows one: a move (`j`/`k`,
/// pages, `g`/`G`) changes `sel`, and a click on one of the `len` rows
/// (drawn `above` rows below the view's top, as [`list_index`] counts)
/// selects it. `Some(true)` when the action was the list's, `Some(false)`
/// for a click past its rows, `None` for any other action.
pub fn select_in_list(
    sel: &mut usize,
    len: usize,
    action: &super::action::Action,
    above: u16,
) -> Option<bool> {
    use super::action::Action;
    match action {
        Action::Click { row, .. } => match list_index(*row, above) {
            Some(i) if i < len => *sel = i,
            _ => return Some(false),
        },
        _ => *sel = list_move(*sel, len, action)?,
    }
    Some(true)
}

/// `sel` moved by `delta` within `0..len`.
pub fn move_sel(sel: usize, len: usize, delta: isize) -> usize {
    if len == 0 {
        return 0;
    }
    (sel as isize).saturating_add(delta).clamp(0, len as isize - 1) as usize
}

/// The list row under a click on screen row `row`, for a list drawn
/// `above` rows below the top of the main area: under the tab bar (1), what
/// the view draws above the list, and the list's border and header (2). The
/// view's render uses the same `above` for its layout.
pub fn list_index(row: u16, above: u16) -> Option<usize> {
    (row as usize).checked_sub(3 + above as usize)
}

/// Rows a list in `area` can show (inside borders and a header row).
pub fn list_rows(area: Rect) -> usize {
    area.height.saturating_sub(3) as usize
}

fn render_tabs(f: &mut Frame, area: Rect, app: &App) {
    let shown = app.tabs();
    let titles: Vec<Line> = shown.iter().map(|t| Line::from(t.title())).collect();
    let sel = shown.iter().position(|t| *t == app.tab).unwrap_or(0);
    // Each title is padded by a space either side, with a divider between.
    let tabs_w: u16 = shown.iter().map(|t| t.title().chars().count() as u16 + 3).sum();
    let [tabs, crumb] = Layout::horizontal([Constraint::Length(tabs_w), Constraint::Min(0)]).areas(area);
    f.render_widget(
        Tabs::new(titles)
            .select(sel)
            .highlight_style(Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED))
            .divider("│"),
        tabs,
    );
    let mut path: Vec<String> = app.back.iter().map(|t| t.title().to_string()).collect();
    path.push(app.tab.title().to_string());
    let mode = if app.write { "rw" } else { "ro" };
    let file_name = |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let (root, chunk) = match &app.corpus {
        Some(c) if app.has_chunk() => {
            (file_name(&c.root).map(|r| format!("{r}/")), crate::corpus::chunk_name(&c.root, &app.chunk))
        }
        _ => (None, file_name(&app.chunk).unwrap_or_default()),
    };
    let root = root.unwrap_or_default();
    // The chunk's name stays whatever the width: the drill-down path goes
    // first (the tabs show the view), then the corpus's name, then the
    // chunk's name is cut.
    let room = usize::from(crumb.width);
    let text = [
        format!("[{mode}] {root}{chunk} › {}", path.join(" › ")),
        format!("[{mode}] {root}{chunk}"),
        format!("[{mode}] {chunk}"),
    ]
    .into_iter()
    .find(|t| unicode_width::UnicodeWidthStr::width(t.as_str()) <= room)
    .unwrap_or_else(|| crate::sparql::display::fit(&format!("[{mode}] {chunk}"), room).into_owned());
    f.render_widget(Paragraph::new(text).style(Style::new().add_modifier(Modifier::DIM)), crumb);
}

const SPINNER: [&str; 4] = ["⠋", "⠙", "⠸", "⠴"];

fn render_status(f: &mut Frame, area: Rect, app: &App) {
    let line = if let Some(c) = &app.cmdline {
        // After the cursor: what Tab found (the status is cleared when the
        // command line opens, so nothing older shows here).
        Line::from(vec![
            Span::styled(c.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw("█   "),
            Span::styled(app.status.clone(), Style::new().add_modifier(Modifier::DIM)),
        ])
    } else if app.query.running.is_some() || app.compaction.is_some() {
        Line::from(format!("{} {}", SPINNER[app.tick % SPINNER.len()], app.status))
    } else {
        Line::from(app.status.clone())
    };
    f.render_widget(Paragraph::new(line), area);
}

fn render_keybar(f: &mut Frame, area: Rect, app: &App) {
    let mut spans = Vec::new();
    for (k, what) in bindings(app) {
        spans.push(Span::styled(format!(" {k} "), Style::new().add_modifier(Modifier::REVERSED)));
        spans.push(Span::raw(format!(" {what} ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_help(f: &mut Frame, app: &App) {
    let area = centered(f.area(), 60, 22);
    f.render_widget(Clear, area);
    let mut lines = vec![Line::from(Span::styled(
        format!("{} view", app.tab.title()),
        Style::new().add_modifier(Modifier::BOLD),
    ))];
    for (k, what) in bindings(app) {
        lines.push(Line::from(format!("  {k:<12} {what}")));
    }
    lines.push(Line::from(""));
    lines.push(Line::from("  Shift-Tab    previous view     Esc  back"));
    lines.push(Line::from("  PgUp/PgDn    page              mouse: scroll, click"));
    lines.push(Line::from("  :open v2  :open FILE  :goto 0x1f0  :query [TEXT]"));
    lines.push(Line::from("  :export FILE [FORMAT]  :compact  :verify [deep]  :q"));
    if app.write {
        lines.push(Line::from("  :update SPARQL-UPDATE   :repair truncate-torn-tail|reset-current|"));
        lines.push(Line::from("                          rebuild-sidecars vN"));
    }
    lines.push(Line::from("  any key closes this help"));
    let block = Block::default().borders(Borders::ALL).title("Help");
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// A dialog as wide as its longest line (paths are long; a wide terminal
/// shows them whole), as tall as its text once wrapped, within the screen.
fn confirm_area(screen: Rect, text: &str) -> Rect {
    let longest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0) as u16;
    let w = (longest + 2).clamp(50, screen.width.saturating_sub(4).max(50));
    let inner = w.saturating_sub(2).max(1) as usize;
    let rows: usize = text.lines().map(|l| l.chars().count().div_ceil(inner).max(1)).sum();
    // One row of slack: words wrap, not characters.
    centered(screen, w, rows as u16 + 3)
}

pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

pub fn check_cell(c: Check) -> Span<'static> {
    match c {
        Check::Ok => Span::styled("✓", Style::new().fg(Color::Green)),
        Check::Bad => Span::styled("✗", Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)),
        Check::NotApplicable => Span::styled("–", Style::new().add_modifier(Modifier::DIM)),
        Check::Pending => Span::styled("…", Style::new().add_modifier(Modifier::DIM)),
    }
}

/// The colour of a byte by the role of its span, and whether it is good.
pub fn role_style(role: Role, ok: bool) -> Style {
    if !ok {
        return Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    }
    match role {
        Role::Magic => Style::new().fg(Color::Cyan),
        Role::Version => Style::new().fg(Color::Blue),
        Role::Length | Role::Count | Role::Offset => Style::new().fg(Color::Yellow),
        Role::Checksum => Style::new().fg(Color::Green),
        Role::Tail => Style::new().fg(Color::White).bg(Color::Red),
        Role::Padding => Style::new().add_modifier(Modifier::DIM),
        _ => Style::new(),
    }
}

pub fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

/// Something wrong with the store, said before anything else on the view
/// that finds it: what it is, in words, and what fixes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alarm {
    pub text: String,
    /// The repair `r` plans for it, if the UI has one, and the command
    /// line that does the same.
    pub repair: Option<crate::triage::repair::Repair>,
    pub command: Option<String>,
    /// What to do when there is no repair from here.
    pub advice: Option<String>,
    /// Damage (red) rather than something to tidy (yellow).
    pub damage: bool,
}

impl Alarm {
    /// Damage (drawn red).
    pub fn damage(text: String) -> Alarm {
        Alarm { text, repair: None, command: None, advice: None, damage: true }
    }
    /// Something to tidy (drawn yellow).
    pub fn notice(text: String) -> Alarm {
        Alarm { damage: false, ..Alarm::damage(text) }
    }
    pub fn with_repair(self, repair: crate::triage::repair::Repair) -> Alarm {
        Alarm { repair: Some(repair), ..self }
    }
    pub fn with_advice(self, advice: &str) -> Alarm {
        Alarm { advice: Some(advice.to_string()), ..self }
    }
}

/// `text` in lines of at most `width` columns, broken between words (a
/// word longer than a line is cut into pieces).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let width = width.max(8);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word.to_string();
        while word.width() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let cut: String = word
                .chars()
                .scan(0, |w, c| {
                    *w += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                    (*w <= width).then_some(c)
                })
                .collect();
            word = word[cut.len()..].to_string();
            lines.push(cut);
        }
        let room = if line.is_empty() { 0 } else { 1 };
        if !line.is_empty() && line.width() + room + word.width() > width {
            lines.push(std::mem::take(&mut line));
        } else if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The alarms as lines within `width` columns, at most `max_rows` of them:
/// `✗` and the text, then `r` and the repair (on the first that has one)
/// or the advice, indented under it. Alarms that do not fit are counted on
/// the last row.
pub fn alarm_lines(alarms: &[Alarm], width: u16, max_rows: usize, write: bool) -> Vec<Line<'static>> {
    let inner = usize::from(width).saturating_sub(2);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut offered = false;
    for (i, a) in alarms.iter().enumerate() {
        let colour = if a.damage { Color::Red } else { Color::Yellow };
        let mut block: Vec<Line<'static>> = Vec::new();
        for (k, piece) in wrap_words(&a.text, inner).into_iter().enumerate() {
            let mark = if k > 0 {
                "  "
            } else if a.damage {
                "✗ "
            } else {
                "! "
            };
            block.push(Line::styled(
                format!("{mark}{piece}"),
                Style::new().fg(colour).add_modifier(Modifier::BOLD),
            ));
        }
        let next = match (&a.repair, offered && write) {
            (Some(r), false) if write => Some(format!("r: {} (shows the plan first)", repair_words(r))),
            (Some(r), _) => {
                Some(format!("{}: {}", repair_words(r), a.command.as_deref().unwrap_or_default()))
            }
            (None, _) => None,
        };
        offered |= a.repair.is_some();
        for piece in next.iter().chain(a.advice.iter()).flat_map(|t| wrap_words(t, inner.saturating_sub(2))) {
            block.push(Line::styled(format!("  {piece}"), Style::new().add_modifier(Modifier::DIM)));
        }
        let left = alarms.len() - i;
        let avail = max_rows.saturating_sub(out.len() + usize::from(left > 1));
        if avail < 2 {
            let more = format!("  … and {left} more (Triage lists every finding)");
            out.push(Line::styled(more, Style::new().fg(colour)));
            break;
        }
        out.extend(cut_block(block, avail, text_rows(&a.text, inner)));
    }
    out
}

fn text_rows(text: &str, width: usize) -> usize {
    wrap_words(text, width).len()
}

/// An alarm's lines within `avail` rows: its text cut short (its last row
/// ending in `…`) so the line that says what to do stays.
fn cut_block(mut block: Vec<Line<'static>>, avail: usize, text_rows: usize) -> Vec<Line<'static>> {
    if block.len() <= avail {
        return block;
    }
    let tail = block.split_off(text_rows);
    let keep_tail = tail.len().min(avail.saturating_sub(1));
    block.truncate(avail - keep_tail);
    if let Some(last) = block.last_mut() {
        let style = last.style;
        let text: String = last.spans.iter().map(|s| s.content.as_ref()).collect();
        let width = unicode_width::UnicodeWidthStr::width(text.as_str());
        *last =
            Line::styled(crate::sparql::display::fit(&format!("{text} …"), width.max(3)).into_owned(), style);
    }
    block.extend(tail.into_iter().take(keep_tail));
    block
}

/// What a repair does, in a few words (the Triage and Store views).
pub fn repair_words(r: &crate::triage::repair::Repair) -> String {
    use crate::triage::repair::Repair;
    match r {
        Repair::TruncateTornTail => "cut the torn tail off the log".into(),
        Repair::ResetCurrent => "point `current` at the newest complete version".into(),
        Repair::RebuildSidecars(v) => format!("rebuild the sidecars of {v} from its base"),
        Repair::RestoreFooter(v) => format!("put back the footer of {v}/data.cottas from its copy"),
        Repair::CleanLeftovers => "remove the leftovers of interrupted operations".into(),
    }
}

/// `/` in a list: only the rows whose text holds the words typed (case
/// aside) are shown, and moves, clicks and Enter count among them; Esc
/// shows every row again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter(Option<String>);

impl ListFilter {
    /// Sets the filter (an empty text clears it).
    pub fn set(&mut self, text: &str) {
        let text = text.trim();
        self.0 = (!text.is_empty()).then(|| text.to_lowercase());
    }
    pub fn clear(&mut self) -> bool {
        self.0.take().is_some()
    }
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }
    /// Whether a row reading `text` is shown: every word of the filter is
    /// in it.
    pub fn keeps(&self, text: &str) -> bool {
        let Some(f) = &self.0 else { return true };
        let text = text.to_lowercase();
        f.split_whitespace().all(|w| text.contains(w))
    }
    /// The filter's text, when one is on.
    pub fn text(&self) -> Option<&str> {
        self.0.as_deref()
    }
    /// Whether the filter is on and is `text` (after trimming and case).
    pub fn keeps_only(&self, text: &str) -> bool {
        self.0.as_deref() == Some(text.trim().to_lowercase().as_str())
    }
    /// The indexes of `rows` shown.
    pub fn shown<T>(&self, rows: &[T], text: impl Fn(&T) -> String) -> Vec<usize> {
        (0..rows.len()).filter(|&i| self.keeps(&text(&rows[i]))).collect()
    }
    /// For a list's title: `: 3 of 40 match "torn" (Esc: all)`.
    pub fn title(&self, shown: usize, all: usize) -> String {
        match &self.0 {
            Some(f) => format!(": {shown} of {all} match \"{f}\" (Esc: all)"),
            None => String::new(),
        }
    }
}
