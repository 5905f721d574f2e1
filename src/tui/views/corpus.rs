//! The corpus: every chunk under the root `cottas-tui ROOT` was given, one
//! row each (current version, quads, pending batches and log bytes, debris,
//! last verify, whether it opens), as `corpus list` sees them. Enter opens
//! a chunk in the chunk views; Esc from there comes back here.

use std::collections::HashMap;
use std::path::PathBuf;

use humansize::{format_size, BINARY};
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;

use super::triage::FileStatus;
use super::{selected, Alarm};
use crate::corpus::ChunkSummary;
use crate::text::plural;
use crate::tui::action::Action;

/// The corpus root, its chunks as a worker summarised them, the selected
/// one, and what verify found in each this session.
#[derive(Debug)]
pub struct CorpusView {
    pub root: PathBuf,
    pub chunks: Option<Vec<ChunkSummary>>,
    pub error: Option<String>,
    pub sel: usize,
    /// Errors and warnings of the last verify of each chunk (by path).
    pub verified: HashMap<PathBuf, FileStatus>,
    /// Every chunk is being verified.
    pub verifying: bool,
    /// The chunk the chunk views show.
    pub opened: Option<PathBuf>,
    /// A listing is on its way, asked for at this time.
    pub listing: Option<std::time::Instant>,
    /// When the list on screen was made.
    pub listed_at: Option<std::time::Instant>,
    /// `/`: which chunks are shown.
    pub filter: super::ListFilter,
}

/// How often the list is made again while it is on screen: other processes
/// append, compact and repair, and the list should say so without a key.
pub const RELIST_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// What the corpus view asks of the app.
pub enum CorpusMove {
    Open(PathBuf),
    Refresh,
    VerifyAll,
    Nothing,
}

pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Enter", "open chunk"),
        ("v", "verify all"),
        (":query", "every chunk"),
        ("R", "refresh"),
        ("/", "filter"),
    ]
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('v') => Some(Action::Verify { deep: false }),
        KeyCode::Char('R') => Some(Action::Refresh),
        KeyCode::Char('/') => Some(Action::OpenCmdline('/')),
        _ => None,
    }
}

impl CorpusView {
    pub fn new(root: PathBuf) -> CorpusView {
        CorpusView {
            root,
            chunks: None,
            error: None,
            sel: 0,
            verified: HashMap::new(),
            verifying: false,
            opened: None,
            listing: None,
            listed_at: None,
            filter: super::ListFilter::default(),
        }
    }

    /// The indexes of the chunks shown (all, or those `/` keeps: by name,
    /// current version and status).
    pub fn shown(&self) -> Vec<usize> {
        let chunks = self.chunks.as_deref().unwrap_or_default();
        self.filter
            .shown(chunks, |c| format!("{} {} {}", c.name, c.current.as_deref().unwrap_or(""), c.status))
    }

    /// `/TEXT`: only the chunks that match; the first of them selected.
    pub fn set_filter(&mut self, text: &str) -> String {
        self.filter.set(text);
        self.sel = 0;
        let all = self.chunks.as_ref().map_or(0, Vec::len);
        format!("{} of {all} chunks shown", self.shown().len())
    }

    /// Asks for the list (again); `false` when one is already on its way.
    pub fn ask_listing(&mut self) -> bool {
        if self.listing.is_some() {
            return false;
        }
        self.listing = Some(std::time::Instant::now());
        true
    }

    /// Whether the list on screen is old enough to be made again.
    pub fn stale(&self) -> bool {
        self.listing.is_none() && self.listed_at.is_none_or(|t| t.elapsed() >= RELIST_EVERY)
    }

    /// A new list: the selection stays on the same chunk when it is still there.
    pub fn listed(&mut self, r: Result<Vec<ChunkSummary>, String>) {
        self.listing = None;
        self.listed_at = Some(std::time::Instant::now());
        match r {
            Ok(chunks) => {
                let shown = self.shown();
                let was =
                    shown.get(self.sel).and_then(|&k| self.chunks.as_ref()?.get(k)).map(|c| c.path.clone());
                self.chunks = Some(chunks);
                self.error = None;
                let shown = self.shown();
                let chunks = self.chunks.as_deref().unwrap_or_default();
                let same = was.and_then(|p| shown.iter().position(|&k| chunks[k].path == p));
                self.sel = same.unwrap_or(self.sel).min(shown.len().saturating_sub(1));
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// The corpus view's part of an action; `None` when it is not its own.
    /// `above`: rows drawn above the table (the alarms), for clicks.
    pub fn update(&mut self, action: &Action, above: u16) -> Option<CorpusMove> {
        let shown = self.shown();
        if let Some(inside) = super::select_in_list(&mut self.sel, shown.len(), action, above) {
            return inside.then_some(CorpusMove::Nothing);
        }
        Some(match action {
            Action::Back if self.filter.clear() => CorpusMove::Nothing,
            Action::Enter => CorpusMove::Open(self.chunks.as_ref()?.get(*shown.get(self.sel)?)?.path.clone()),
            Action::Refresh => CorpusMove::Refresh,
            Action::Verify { .. } => CorpusMove::VerifyAll,
            _ => return None,
        })
    }
}

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or("–".into(), |v| v.to_string())
}

fn verify_cell(status: Option<FileStatus>) -> Span<'static> {
    match status {
        None => Span::styled("not run", Style::new().add_modifier(Modifier::DIM)),
        Some(s) => s.cell(),
    }
}

/// A chunk's status in its cell: `ok` or `✗ damaged` (what the damage is
/// is an alarm above the table, in words that wrap).
fn status_cell(s: &ChunkSummary) -> Span<'static> {
    if s.status == "ok" {
        Span::styled("ok", Style::new().fg(Color::Green))
    } else {
        Span::styled("✗ damaged", Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
    }
}

/// What is wrong in the corpus, one alarm per chunk: it does not open or
/// its log is damaged, what the last verify found, leftovers.
pub fn alarms(view: &CorpusView) -> Vec<Alarm> {
    let root = format!("{}/", view.root.display());
    let mut out = Vec::new();
    for c in view.chunks.as_deref().unwrap_or_default() {
        let mut parts = Vec::new();
        if c.status != "ok" {
            parts.push(c.status.replace(&root, ""));
        }
        let verified = view.verified.get(&c.path).copied().filter(|v| v.errors > 0);
        if let Some(FileStatus { errors, warnings }) = verified {
            let found = format!("verify found {}", plural(errors, "error", "errors"));
            parts.push(if warnings > 0 {
                format!("{found} and {}", plural(warnings, "warning", "warnings"))
            } else {
                found
            });
        }
        let damage = !parts.is_empty();
        if c.debris > 0 {
            parts.push(format!("{} of interrupted operations", plural(c.debris, "leftover", "leftovers")));
        }
        if parts.is_empty() {
            continue;
        }
        let text = format!("{}: {}", c.name, parts.join("; "));
        let alarm = if damage { Alarm::damage(text) } else { Alarm::notice(text) };
        out.push(
            alarm.with_advice(&format!("Enter on {} opens it; its Store view says what fixes it", c.name)),
        );
    }
    out
}

fn chunk_row(c: &ChunkSummary, verified: Option<FileStatus>) -> Row<'static> {
    let pending = match (c.pending_batches, c.shadowed_batches) {
        (Some(p), Some(s)) if s > 0 => format!("{p} (+{s} shadowed)"),
        (p, _) => or_dash(p),
    };
    let debris = if c.debris == 0 {
        Line::from("–")
    } else {
        Line::styled(c.debris.to_string(), Style::new().fg(Color::Yellow))
    };
    Row::new(vec![
        Line::from(c.name.clone()),
        Line::from(or_dash(c.current.as_deref())),
        Line::from(or_dash(c.base_quads)),
        Line::from(pending),
        Line::from(format_size(c.log_bytes, BINARY)),
        debris,
        Line::from(verify_cell(verified)),
        Line::from(status_cell(c)),
    ])
}

/// Rows above the table in a view `width` × `height` (clicks count from it).
pub fn alarm_rows(view: &CorpusView, width: u16, height: u16) -> u16 {
    alarm_lines(view, width, height).len() as u16
}

fn alarm_lines(view: &CorpusView, width: u16, height: u16) -> Vec<Line<'static>> {
    super::alarm_lines(&alarms(view), width, usize::from(height / 3).max(2), false)
}

pub fn render(f: &mut Frame, area: Rect, view: &CorpusView) {
    let lines = alarm_lines(view, area.width, area.height);
    let [top, area] =
        Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Min(3)]).areas(area);
    f.render_widget(Paragraph::new(lines), top);
    let chunks = view.chunks.as_deref().unwrap_or_default();
    let shown = view.shown();
    let rows: Vec<Row> = shown
        .iter()
        .map(|&k| &chunks[k])
        .enumerate()
        .map(|(i, c)| {
            let row = chunk_row(c, view.verified.get(&c.path).copied());
            if i == view.sel {
                row.style(selected())
            } else {
                row
            }
        })
        .collect();
    let longest = chunks.iter().map(|c| c.name.chars().count()).max().unwrap_or(5) as u16;
    let widths = [
        Constraint::Length(longest.clamp(5, area.width / 4)),
        Constraint::Length(7),
        Constraint::Length(11),
        Constraint::Length(9),
        Constraint::Length(10),
        Constraint::Length(6),
        Constraint::Length(11),
        Constraint::Min(6),
    ];
    let header = Row::new(["chunk", "current", "quads", "pending", "log", "debris", "verify", "status"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    let title = match (&view.error, &view.chunks) {
        (Some(e), _) => format!("Corpus {}: {e}", view.root.display()),
        (None, None) => format!("Corpus {}: listing…", view.root.display()),
        (None, Some(c)) => {
            let age = match (view.listing, view.listed_at) {
                (Some(_), _) => "listing again…".to_string(),
                (None, Some(t)) => format!("listed {} s ago", t.elapsed().as_secs()),
                (None, None) => String::new(),
            };
            let chunks = plural(c.len(), "chunk", "chunks");
            match view.filter.title(shown.len(), c.len()) {
                // The filter first: the root's path is what a narrow title cuts.
                f if !f.is_empty() => format!("Corpus{f} — {}", view.root.display()),
                _ => format!("Corpus {} — {chunks}, {age}", view.root.display()),
            }
        }
    };
    f.render_widget(
        Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}
