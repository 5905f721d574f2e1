//! Epochs over time: the log as one horizontal axis (batch order, to scale)
//! with each epoch a band and each version's compacted-epoch marker an edge
//! between bands; below it batches per epoch, the live compacted-epoch line,
//! and a running compaction's progress.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph};
use ratatui::Frame;

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use std::time::Instant;

use crate::text::plural;
use crate::tui::action::Action;
use crate::tui::state::App;

/// What happened to the chunk while the UI watched: compactions started,
/// the epochs they fold, batches appended meanwhile, the flip of
/// `current`, what was carried. Newest last. A progress count (batches
/// appended while compacting) is one line updated in place, so the
/// milestones around it stay on screen.
#[derive(Debug, Default)]
pub struct TimelineView {
    pub events: Vec<Event>,
    /// The epochs the running compaction folds: (old marker, new marker).
    pub folding: Option<(Option<u64>, u64)>,
    /// Batches in the log when the compaction started folding, so the ones
    /// appended since (which it will carry) can be counted.
    pub count_at_start: usize,
    /// Batches appended while compacting, as last counted.
    pub appended: usize,
    /// Events scrolled back from the newest (0: the newest at the bottom).
    pub scroll: usize,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub at: Instant,
    pub text: String,
    /// A count that the next report replaces (not a milestone).
    pub progress: bool,
}

/// Events kept (older ones are dropped).
const EVENTS: usize = 200;

impl TimelineView {
    /// A milestone: a new line.
    pub fn event(&mut self, text: String) {
        if self.events.len() == EVENTS {
            self.events.remove(0);
        }
        self.events.push(Event { at: Instant::now(), text, progress: false });
    }

    /// A count: replaces the running compaction's last count, if it is the
    /// newest line or follows only other counts; else a new line.
    fn count(&mut self, text: String) {
        match self.events.last_mut() {
            Some(e) if e.progress => {
                e.text = text;
                e.at = Instant::now();
            }
            _ => {
                self.event(text);
                if let Some(e) = self.events.last_mut() {
                    e.progress = true;
                }
            }
        }
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
        let folded = plural(folded, "batch", "batches");
        self.event(format!("folding {folded} of epochs {first}..={} into a new version", epochs.1));
    }

    /// A new log index while compacting: batches that were not there when
    /// folding began were appended meanwhile (a finished compaction carries
    /// them into its new log; a cancelled one leaves them where they are).
    pub fn reindexed(&mut self, log: &crate::store::log::index::LogIndex) {
        if self.folding.is_none() {
            return;
        }
        let appended = log.count.saturating_sub(self.count_at_start);
        if appended > self.appended {
            self.appended = appended;
            let appended = plural(appended, "batch", "batches");
            self.count(format!("{appended} appended while compacting"));
        }
    }

    /// The end of a compaction: the count line says what became of the
    /// batches appended meanwhile (`carried`: the compaction published),
    /// then the milestone.
    pub fn finished(&mut self, text: String, carried: bool) {
        if self.folding.take().is_some() && self.appended > 0 {
            let appended = plural(self.appended, "batch", "batches");
            let fate = if carried { "carried into the new log" } else { "left in the log as they were" };
            self.count(format!("{appended} appended while compacting: {fate}"));
            if let Some(e) = self.events.last_mut() {
                e.progress = false;
            }
        }
        self.appended = 0;
        self.event(text);
    }

    /// Moves the events pane `delta` lines back (up) or forward.
    pub fn scroll_by(&mut self, delta: isize) {
        let most = self.events.len().saturating_sub(1) as isize;
        self.scroll = (self.scroll as isize + delta).clamp(0, most) as usize;
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
    let gauge_h = if app.compaction.is_some() { 3 } else { 0 };
    // The events take the room the epochs chart does not need (it keeps
    // eight rows), and at least six lines when there are that many.
    let room = area.height.saturating_sub(gauge_h + 8).max(6);
    let events = (app.timeline.events.len() as u16).min(room.saturating_sub(2));
    let [gauge, body, log] = Layout::vertical([
        Constraint::Length(gauge_h),
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

/// The events that fit, the newest at the bottom unless scrolled back,
/// with how long ago each happened.
fn render_events(f: &mut Frame, area: Rect, app: &App) {
    let shown = area.height.saturating_sub(2) as usize;
    let events = &app.timeline.events;
    let end = events.len().saturating_sub(app.timeline.scroll);
    let start = end.saturating_sub(shown);
    let lines: Vec<Line> = events[start..end]
        .iter()
        .map(|e| {
            let ago = e.at.elapsed().as_secs();
            Line::from(vec![
                ratatui::text::Span::styled(
                    format!("{ago:>4} s ago  "),
                    Style::new().add_modifier(Modifier::DIM),
                ),
                ratatui::text::Span::raw(e.text.clone()),
            ])
        })
        .collect();
    let title = if start > 0 || end < events.len() {
        format!("Events {}–{} of {} (j/k scroll)", start + 1, end, events.len())
    } else {
        "Events".to_string()
    };
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
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

/// How one epoch's batches stand: folded into the current version, being
/// folded by the running compaction, appended meanwhile (to be carried), or
/// pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochState {
    Folded,
    Folding,
    Carried,
    Pending,
}

impl EpochState {
    pub fn of(e: u64, current: Option<u64>, folding: Option<(Option<u64>, u64)>) -> EpochState {
        let shadowed = current.is_some_and(|m| e <= m);
        match folding {
            Some((old, new)) if !shadowed && old.is_none_or(|o| e > o) && e <= new => EpochState::Folding,
            Some((_, new)) if e > new => EpochState::Carried,
            _ if shadowed => EpochState::Folded,
            _ => EpochState::Pending,
        }
    }

    fn note(self) -> &'static str {
        match self {
            EpochState::Folding => " (folding)",
            EpochState::Carried => " (appended: will be carried)",
            EpochState::Folded => " (folded)",
            EpochState::Pending => "",
        }
    }

    fn style(self) -> Style {
        match self {
            EpochState::Folding => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            EpochState::Carried => Style::new().fg(Color::Magenta),
            EpochState::Folded => Style::new().fg(Color::DarkGray),
            EpochState::Pending => Style::new().fg(Color::Cyan),
        }
    }
}

/// Columns for each count so that they add up to `width` in proportion,
/// every non-empty count getting at least one while there is room.
pub fn to_scale(counts: &[usize], width: usize) -> Vec<usize> {
    let total: usize = counts.iter().sum();
    if total == 0 || width == 0 {
        return vec![0; counts.len()];
    }
    let mut cols: Vec<usize> = counts.iter().map(|&n| n * width / total).collect();
    // Rounding leaves columns over: to the largest remainders first.
    let mut rest: Vec<usize> = (0..counts.len()).collect();
    rest.sort_by_key(|&i| std::cmp::Reverse((counts[i] * width) % total));
    let mut left = width - cols.iter().sum::<usize>();
    for &i in rest.iter().cycle().take(counts.len() * 2) {
        if left == 0 {
            break;
        }
        if counts[i] > 0 {
            cols[i] += 1;
            left -= 1;
        }
    }
    // An epoch too small to show takes a column from the widest.
    for i in 0..counts.len() {
        if counts[i] > 0 && cols[i] == 0 {
            let widest = (0..cols.len()).max_by_key(|&j| cols[j]).unwrap_or(i);
            if cols[widest] > 1 {
                cols[widest] -= 1;
                cols[i] = 1;
            }
        }
    }
    cols
}

/// The log as an axis: a band per epoch (to scale, alternating shades so
/// neighbours with the same state stay apart), the epochs' names under
/// their bands, and each version's marker as an edge (`┃` on the axis, its
/// name under it). `markers` are (compacted epoch, version, is current).
/// While a compaction runs, `progress` (0 to 1) fills the bands it folds
/// from the left; the rest of them is drawn `░`.
pub fn axis(
    epochs: &[(u64, usize)],
    markers: &[(u64, String, bool)],
    state: impl Fn(u64) -> EpochState,
    progress: Option<f64>,
    width: usize,
) -> Vec<Line<'static>> {
    let total: usize = epochs.iter().map(|(_, n)| n).sum();
    let cols = to_scale(&epochs.iter().map(|(_, n)| *n).collect::<Vec<_>>(), width);
    let folding: usize =
        epochs.iter().zip(&cols).filter(|((e, _), _)| state(*e) == EpochState::Folding).map(|(_, c)| c).sum();
    let filled = (progress.unwrap_or(1.0).clamp(0.0, 1.0) * folding as f64).round() as usize;
    let mut folded_cols = 0;
    // The column after the last batch each marker covers.
    let edge =
        |m: u64| -> usize { epochs.iter().zip(&cols).filter(|((e, _), _)| *e <= m).map(|(_, c)| c).sum() };
    let edges: Vec<(usize, &str, bool)> =
        markers.iter().map(|(m, name, cur)| (edge(*m), name.as_str(), *cur)).collect();
    let mut bands: Vec<Span> = vec![Span::styled("log │", Style::new().add_modifier(Modifier::DIM))];
    let mut names = String::from("     ");
    let mut at = 0;
    for (k, ((e, _), &w)) in epochs.iter().zip(&cols).enumerate() {
        let st = state(*e);
        let shade = if k % 2 == 0 { '█' } else { '▓' };
        let mut band = String::new();
        for c in at..at + w {
            let edge_here = c > 0 && edges.iter().any(|(x, _, _)| *x == c);
            let done = st != EpochState::Folding || folded_cols < filled;
            folded_cols += usize::from(st == EpochState::Folding);
            band.push(if edge_here {
                '┃'
            } else if done {
                shade
            } else {
                '░'
            });
        }
        let style = st.style();
        bands.push(Span::styled(band, style));
        let label = format!("e{e}");
        if w > label.len() {
            names.push_str(&format!("{label:<w$}"));
        } else {
            names.push_str(&" ".repeat(w));
        }
        at += w;
    }
    bands.push(Span::styled(
        format!("│ {}", plural(total, "batch", "batches")),
        Style::new().add_modifier(Modifier::DIM),
    ));
    let mut marks: Vec<Span> = vec![Span::raw("     ")];
    let mut sorted = edges.clone();
    sorted.sort_by_key(|(x, _, _)| *x);
    let mut cursor = 0;
    for (x, name, current) in sorted {
        let text = if current { format!("▲{name} (current)") } else { format!("▲{name}") };
        let pad = x.saturating_sub(cursor);
        marks.push(Span::raw(" ".repeat(pad)));
        let style = if current {
            Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(Color::Yellow)
        };
        cursor += pad + text.chars().count() + 1;
        marks.push(Span::styled(text, style));
        marks.push(Span::raw(" "));
    }
    vec![Line::from(bands), Line::from(names.trim_end().to_string()), Line::from(marks)]
}

/// The log as an axis, then batches per epoch and each version's marker
/// among them.
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
    // While compacting: the epochs being folded, and those above the new
    // marker (appended meanwhile, to be carried).
    let folding = app.timeline.folding.filter(|_| app.compaction.is_some());
    let state = |e| EpochState::of(e, marker, folding);
    let mut lines = Vec::new();
    if !epochs.is_empty() {
        let axis_w = body.width.saturating_sub(2 + 5 + 16).max(10) as usize;
        let progress = app.compaction.as_ref().and_then(|c| c.last.as_ref()).map(|p| {
            if p.rows_total == 0 {
                0.0
            } else {
                p.rows_done as f64 / p.rows_total as f64
            }
        });
        lines.extend(axis(&epochs, &markers, state, progress.filter(|_| folding.is_some()), axis_w));
        lines.push(Line::from(""));
    }
    for e in all {
        if let Some((_, n)) = epochs.iter().find(|(x, _)| *x == e) {
            let bar = "█".repeat((n * width).div_ceil(max));
            let st = state(e);
            lines.push(Line::styled(
                format!("epoch {e:>4} │{bar} {}{}", plural(*n, "batch", "batches"), st.note()),
                st.style(),
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_to_scale_and_no_epoch_vanishes() {
        assert_eq!(to_scale(&[30, 2], 32), vec![30, 2]);
        assert_eq!(to_scale(&[1, 1_000_000], 20), vec![1, 19]);
        assert_eq!(to_scale(&[1, 1, 1], 10).iter().sum::<usize>(), 10);
        assert_eq!(to_scale(&[], 10), Vec::<usize>::new());
        assert_eq!(to_scale(&[0, 5], 10), vec![0, 10]);
    }

    #[test]
    fn the_axis_puts_bands_labels_and_marker_edges_in_log_order() {
        let epochs = [(2, 30), (3, 10)];
        let markers = [(2, "v3".to_string(), true), (1, "v2".to_string(), false)];
        let state = |e| EpochState::of(e, Some(2), None);
        let lines = axis(&epochs, &markers, state, None, 40);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text[0].chars().filter(|&c| c == '█' || c == '▓' || c == '┃').count(), 40);
        // v3's edge after epoch 2's 30 columns; epoch 3 from there.
        assert_eq!(text[0].chars().nth(5 + 30), Some('┃'), "{}", text[0]);
        assert!(text[0].ends_with("│ 40 batches"), "{}", text[0]);
        assert_eq!(text[1].find("e3"), Some(5 + 30), "{}", text[1]);
        assert!(text[2].contains("▲v2") && text[2].contains("▲v3 (current)"), "{}", text[2]);
        assert_eq!(
            text[2].chars().position(|c| c == '▲'),
            Some(5),
            "v2 covers no batch of the log: at its start"
        );
        // Folded epoch 2 is grey, pending epoch 3 cyan.
        assert_eq!(lines[0].spans[1].style.fg, Some(Color::DarkGray));
        assert_eq!(lines[0].spans[2].style.fg, Some(Color::Cyan));
    }

    /// A running compaction's progress fills the bands it folds from the
    /// left, across epochs; the other bands are whole.
    #[test]
    fn the_folding_bands_fill_with_the_compactions_progress() {
        let epochs = [(1, 10), (2, 10), (3, 20)];
        let state = |e| EpochState::of(e, Some(0), Some((Some(0), 2)));
        let lines = axis(&epochs, &[], state, Some(0.25), 40);
        let band: String = lines[0].to_string().chars().skip(5).take(40).collect();
        assert_eq!(band, format!("{}{}{}", "█████", "░".repeat(15), "█".repeat(20)), "{band}");
        let done = axis(&epochs, &[], state, Some(1.0), 40)[0].to_string();
        assert!(!done.contains('░'), "{done}");
    }
}
