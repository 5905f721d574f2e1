//! Epochs over time: batches per epoch, where each version's marker falls,
//! the live compacted-epoch line, and a running compaction's progress.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph};
use ratatui::Frame;

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use std::time::Instant;

use crate::tui::action::Action;
use crate::tui::state::App;

/// What happened to the chunk while the UI watched: compactions started,
/// the epochs they fold, batches appended meanwhile, the flip of
/// `current`, what was carried. Newest last.
#[derive(Debug, Default)]
pub struct TimelineView {
    pub events: Vec<(Instant, String)>,
    /// The epochs the running compaction folds: (old marker, new marker).
    pub folding: Option<(Option<u64>, u64)>,
    /// Batches in the log when the compaction started folding, so the ones
    /// appended since (which it will carry) can be counted.
    pub count_at_start: usize,
    /// Batches appended while compacting, as last counted.
    pub appended: usize,
}

/// Events kept (older ones are dropped).
const EVENTS: usize = 50;

impl TimelineView {
    pub fn event(&mut self, text: String) {
        if self.events.len() == EVENTS {
            self.events.remove(0);
        }
        self.events.push((Instant::now(), text));
    }

    /// A compaction's progress: the first one names the epochs it folds.
    pub fn progress(&mut self, epochs: (Option<u64>, u64), log: Option<&crate::store::log::index::LogIndex>) {
        if self.folding.is_some() {
            return;
        }
        self.folding = Some(epochs);
        let all = log.map(|l| &l.epochs);
        let folded: usize =
            all.map_or(0, |e| e.range(epochs.0.map_or(0, |m| m + 1)..=epochs.1).map(|(_, n)| n).sum());
        self.count_at_start = log.map_or(0, |l| l.count);
        self.appended = 0;
        let first = epochs.0.map_or(0, |m| m + 1);
        self.event(format!("folding {folded} batches of epochs {first}..={} into a new version", epochs.1));
    }

    /// A new log index while compacting: batches that were not there when
    /// folding began were appended meanwhile (the swap carries them).
    pub fn reindexed(&mut self, log: &crate::store::log::index::LogIndex) {
        if self.folding.is_none() {
            return;
        }
        let appended = log.count.saturating_sub(self.count_at_start);
        if appended > self.appended {
            self.appended = appended;
            self.event(format!("{appended} batches appended while compacting: they will be carried"));
        }
    }

    pub fn finished(&mut self, text: String) {
        self.folding = None;
        self.event(text);
    }
}

pub fn bindings(write: bool, compacting: bool) -> Vec<(&'static str, &'static str)> {
    match (write, compacting) {
        (_, true) => vec![("x", "cancel compaction")],
        (true, false) => vec![("c", "compact")],
        (false, false) => Vec::new(),
    }
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('c') => Some(Action::AskCompaction),
        KeyCode::Char('x') => Some(Action::CancelCompaction),
        _ => None,
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let events = app.timeline.events.len().min(6) as u16;
    let [gauge, body, log] = Layout::vertical([
        Constraint::Length(if app.compaction.is_some() { 3 } else { 0 }),
        Constraint::Min(3),
        Constraint::Length(if events > 0 { events + 2 } else { 0 }),
    ])
    .areas(area);
    if let Some(c) = &app.compaction {
        render_progress(f, gauge, c);
    }
    render_epochs(f, body, app);
    if events > 0 {
        render_events(f, log, app);
    }
}

/// The newest events, with how long ago each happened.
fn render_events(f: &mut Frame, area: Rect, app: &App) {
    let shown = area.height.saturating_sub(2) as usize;
    let events = &app.timeline.events;
    let lines: Vec<Line> = events[events.len().saturating_sub(shown)..]
        .iter()
        .map(|(at, text)| {
            let ago = at.elapsed().as_secs();
            Line::from(vec![
                ratatui::text::Span::styled(
                    format!("{ago:>4} s ago  "),
                    Style::new().add_modifier(Modifier::DIM),
                ),
                ratatui::text::Span::raw(text.clone()),
            ])
        })
        .collect();
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title("Events")),
        area,
    );
}

/// A running compaction's gauge.
fn render_progress(f: &mut Frame, gauge: Rect, c: &crate::tui::state::Compaction) {
    let (ratio, label) = match &c.last {
        Some(p) => {
            let r = if p.rows_total > 0 { p.rows_done as f64 / p.rows_total as f64 } else { 0.0 };
            (
                r.clamp(0.0, 1.0),
                format!(
                    "{} {}/{} rows, epochs {}→{}",
                    p.phase.as_str(),
                    p.rows_done,
                    p.rows_total,
                    p.epochs.0.map_or("none".into(), |e| e.to_string()),
                    p.epochs.1
                ),
            )
        }
        None => (0.0, "starting".into()),
    };
    f.render_widget(
        Gauge::default()
            .block(Block::default().borders(Borders::ALL).title("Compacting"))
            .gauge_style(Style::new().fg(Color::Green))
            .ratio(ratio)
            .label(label),
        gauge,
    );
}

/// Batches per epoch, and each version's marker among them.
fn render_epochs(f: &mut Frame, body: Rect, app: &App) {
    let marker = app.current_marker();
    let mut markers: Vec<(u64, String, bool)> = app
        .listing
        .iter()
        .flat_map(|l| l.versions.iter())
        .filter_map(|v| v.marker.map(|m| (m, v.name.clone(), v.is_current)))
        .collect();
    markers.sort();
    let epochs: Vec<(u64, usize)> =
        app.log.as_ref().map(|l| l.epochs.iter().map(|(e, n)| (*e, *n)).collect()).unwrap_or_default();
    let max = epochs.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1);
    // Room for "epoch NNNN │" before the bar and the longest note after it.
    let width = body.width.saturating_sub(58).max(10) as usize;
    let mut all: Vec<u64> = epochs.iter().map(|(e, _)| *e).chain(markers.iter().map(|m| m.0)).collect();
    all.sort();
    all.dedup();
    let mut lines = Vec::new();
    for e in all {
        if let Some((_, n)) = epochs.iter().find(|(x, _)| *x == e) {
            let bar = "█".repeat((n * width).div_ceil(max));
            let shadowed = marker.is_some_and(|m| e <= m);
            // While compacting: the epochs being folded, and those above
            // the new marker (appended meanwhile, to be carried).
            let folding = app.timeline.folding.filter(|_| app.compaction.is_some());
            let (note, style) = match folding {
                Some((old, new)) if !shadowed && old.is_none_or(|o| e > o) && e <= new => {
                    (" (folding)", Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD))
                }
                Some((_, new)) if e > new => {
                    (" (appended: will be carried)", Style::new().fg(Color::Magenta))
                }
                _ if shadowed => (" (folded)", Style::new().add_modifier(Modifier::DIM)),
                _ => ("", Style::new().fg(Color::Cyan)),
            };
            lines.push(Line::styled(format!("epoch {e:>4} │{bar} {n} batches{note}"), style));
        }
        for (_, name, current) in markers.iter().filter(|m| m.0 == e) {
            let text = format!(
                "──────────── {name}: compacted-epoch {e}{} ────────────",
                if *current { " (current)" } else { "" }
            );
            let style = if *current {
                Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
            } else {
                Style::new().fg(Color::Yellow)
            };
            lines.push(Line::styled(text, style));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from("no batches and no markers yet"));
    }
    let hint = if app.write { "c: compact" } else { "read-only (--write enables c: compact)" };
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::ALL).title(format!("Epoch timeline — {hint}"))),
        body,
    );
}
