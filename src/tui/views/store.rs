//! The chunk: its versions, `current`, and the row groups of the selected version.

use humansize::{format_size, BINARY};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Borders, Paragraph, Row, Sparkline, Table};
use ratatui::Frame;

use super::{selected, Alarm};
use crate::triage::repair::Repair;
use crate::triage::verify::Severity;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::tui::action::Action;
use crate::tui::state::{App, RowGroups};

/// The selected version and its row groups (footer figures, from a worker).
#[derive(Debug, Default)]
pub struct StoreView {
    /// Index into the listing's versions (a filter hides some, never moves it).
    pub sel: usize,
    /// `/`: which versions are listed.
    pub filter: super::ListFilter,
    pub row_groups: RowGroups,
}

/// What the store view asks of the app.
pub enum StoreMove {
    /// Select version `n` (its files load on a worker).
    Select(usize),
    /// Show the files of the selected version.
    OpenFiles,
    /// Plan the repair of the first alarm that has one.
    Repair(Repair),
    Nothing,
}

pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![("Enter", "files of version"), ("r", "repair damage"), ("g/G", "first/last"), ("/", "filter")]
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('r') => Some(Action::RepairSelected),
        KeyCode::Char('/') => Some(Action::OpenCmdline('/')),
        _ => None,
    }
}

impl StoreView {
    /// The indexes of the versions listed (all, or those `/` keeps: by
    /// name, status and time).
    pub fn shown(&self, listing: Option<&crate::store::versions::Listing>) -> Vec<usize> {
        let versions = listing.map_or(&[][..], |l| &l.versions[..]);
        self.filter.shown(versions, |v| {
            let status = if v.problem.is_some() { "damaged" } else { "complete" };
            format!("{} {status} {}", v.name, v.created.as_deref().unwrap_or(""))
        })
    }

    /// The store view's part of an action over `versions` versions; `None`
    /// when the action is not its own.
    pub fn update(
        &mut self,
        action: &Action,
        shown: &[usize],
        above: u16,
        first_repair: Option<Repair>,
    ) -> Option<StoreMove> {
        let at = shown.iter().position(|&i| i == self.sel).unwrap_or(0);
        let to = |delta: isize| match shown.get(super::move_sel(at, shown.len(), delta)) {
            Some(&next) if next != self.sel => StoreMove::Select(next),
            _ => StoreMove::Nothing,
        };
        Some(match action {
            Action::Back if self.filter.clear() => StoreMove::Nothing,
            Action::Up(n) => to(-(*n as isize)),
            Action::Down(n) => to(*n as isize),
            Action::Top => to(isize::MIN / 2),
            Action::Bottom => to(isize::MAX / 2),
            Action::Enter => StoreMove::OpenFiles,
            Action::RepairSelected => match first_repair {
                Some(r) => StoreMove::Repair(r),
                None => StoreMove::Nothing,
            },
            Action::Click { row, .. } => match super::list_index(*row, above).and_then(|i| shown.get(i)) {
                Some(&i) => StoreMove::Select(i),
                _ => return None,
            },
            _ => return None,
        })
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let lines = info_lines(app, area.width, area.height);
    let info_h = lines.len() as u16;
    let chart_h = match 9.min(area.height.saturating_sub(info_h + 5)) {
        h if h >= 6 => h,
        _ => 0,
    };
    let [info, list, chart_area] =
        Layout::vertical([Constraint::Length(info_h), Constraint::Min(5), Constraint::Length(chart_h)])
            .areas(area);
    f.render_widget(Paragraph::new(lines), info);
    render_versions(f, list, app);
    if chart_h >= 6 {
        render_row_groups(f, chart_area, app);
    }
}

/// Rows above the versions list in a view `width` × `height` (clicks on
/// the list count from it).
pub fn info_rows(app: &App, width: u16, height: u16) -> u16 {
    info_lines(app, width, height).len() as u16
}

/// Damage first (each thing wrong and what fixes it), then the chunk, where
/// `current` points and the log.
fn info_lines(app: &App, width: u16, height: u16) -> Vec<Line<'static>> {
    // Damage before the chart: the alarms may take the chart's rows; the
    // three lines below them and the versions list (header and two rows)
    // keep theirs.
    let max_alarm_rows = usize::from(height.saturating_sub(9)).max(3);
    let mut lines = super::alarm_lines(&alarms(app), width, max_alarm_rows, app.write);
    lines.push(Line::from(format!("chunk {}", app.chunk.display())));
    lines.push(current_line(app));
    lines.push(log_line(app));
    lines
}

/// What is wrong with the chunk, worst first, from what the workers found:
/// a version that does not open (the current one first), `current`,
/// leftovers of interrupted operations, what the last verify found, the
/// log's tail. Each with the repair `r` plans and its command line.
pub fn alarms(app: &App) -> Vec<Alarm> {
    let chunk_prefix = format!("{}/", app.chunk.display());
    let short = |text: &str| text.replace(&chunk_prefix, "");
    let mut out = Vec::new();
    if let Some(e) = &app.listing_error {
        out.push(Alarm::damage(format!("cannot list versions: {}", short(e))));
    }
    if let Some(l) = &app.listing {
        let mut damaged: Vec<_> = l.versions.iter().filter(|v| v.problem.is_some()).collect();
        damaged.sort_by_key(|v| !v.is_current);
        for v in damaged {
            let problem = short(v.problem.as_deref().unwrap_or_default());
            let problem = problem.strip_prefix(&format!("{}/", v.name)).unwrap_or(&problem).to_string();
            let current = if v.is_current { " (current)" } else { "" };
            let alarm = Alarm::damage(format!("{}{current} does not open: {problem}", v.name));
            out.push(if v.footer_restorable {
                alarm.with_repair(Repair::RestoreFooter(v.name.clone()))
            } else if v.is_current && l.versions.iter().any(|o| o.complete && o.name != v.name) {
                alarm.with_repair(Repair::ResetCurrent)
            } else {
                alarm.with_advice("Triage (v) verifies every file and names the next step")
            });
        }
        if l.current.is_none() && l.versions.iter().any(|v| v.complete) {
            let text = "no `current` link: readers use the highest complete version";
            out.push(Alarm::damage(text.into()).with_repair(Repair::ResetCurrent));
        }
        let dead: Vec<_> = l.debris.iter().filter(|d| d.live_pid.is_none()).collect();
        if !dead.is_empty() {
            let bytes: u64 = dead.iter().map(|d| d.bytes).sum();
            let names: Vec<String> = dead
                .iter()
                .map(|d| format!("{} ({})", short(&d.path.display().to_string()), d.what))
                .collect();
            let text = format!(
                "{} of interrupted operations, {}: {}",
                crate::text::plural(dead.len(), "leftover", "leftovers"),
                format_size(bytes, BINARY),
                names.join(", ")
            );
            out.push(Alarm::notice(text).with_repair(Repair::CleanLeftovers));
        }
    }
    if let Some(report) = app.triage.report().filter(|r| r.errors() > 0) {
        let errors = report.findings.iter().filter(|f| f.severity == Severity::Error);
        // Each file once, in the report's order (its findings need not be adjacent).
        let mut files: Vec<&str> = Vec::new();
        for f in errors.clone() {
            if !files.contains(&f.file.as_str()) {
                files.push(&f.file);
            }
        }
        let found = crate::text::plural(report.errors(), "error", "errors");
        let alarm = Alarm::damage(format!("verify found {found} in {}", files.join(", ")));
        let alarm = alarm.with_advice("Triage lists each finding with its repair");
        out.push(match errors.filter_map(Repair::for_finding).next() {
            Some(r) => alarm.with_repair(r),
            None => alarm,
        });
    }
    match app.log.as_ref().map(|ix| (&ix.error, ix.damage_summary())) {
        Some((Some(e), _)) => out.push(Alarm::damage(format!("log: {}", short(e)))),
        Some((None, Some(damage))) => {
            out.push(Alarm::damage(format!("log: {damage}")).with_repair(Repair::TruncateTornTail))
        }
        _ => {}
    }
    for a in &mut out {
        a.command = a.repair.as_ref().map(|r| r.command(&app.chunk));
    }
    out
}

fn current_line(app: &App) -> Line<'static> {
    match (&app.listing, &app.listing_error) {
        (_, Some(_)) => Line::styled("versions: not listed (see above)", Style::new().fg(Color::Red)),
        (Some(l), None) => match &l.current {
            Some(c) => {
                let complete = l.versions.iter().any(|v| &v.name == c && v.complete);
                let style =
                    if complete { Style::new().fg(Color::Green) } else { Style::new().fg(Color::Red) };
                let what = if complete { "complete" } else { "NOT a complete version" };
                Line::styled(format!("current -> {c}  ({what})"), style)
            }
            None => Line::styled(
                "no `current` link: readers use the highest complete version",
                Style::new().fg(Color::Yellow),
            ),
        },
        (None, None) => Line::from("loading…"),
    }
}

/// The log as the on-call reader needs it: how much the current version
/// still folds in on every open (damage at its end is an alarm above).
fn log_line(app: &App) -> Line<'static> {
    let Some(ix) = &app.log else { return Line::from("log: indexing…") };
    if ix.error.is_some() {
        return Line::styled("log: does not read (see above)", Style::new().fg(Color::Red));
    }
    let current = app.listing.as_ref().and_then(|l| l.current.clone()).unwrap_or_else(|| "the base".into());
    Line::from(ix.summary(&current, app.current_visibility()))
}

fn render_versions(f: &mut Frame, list: Rect, app: &App) {
    let shown = app.store.shown(app.listing.as_ref());
    let rows: Vec<Row> = app
        .listing
        .iter()
        .flat_map(|l| l.versions.iter())
        .enumerate()
        .filter(|(i, _)| shown.contains(i))
        .map(|(i, v)| {
            let r = Row::new(vec![
                v.name.clone(),
                if v.is_current { "●".into() } else { String::new() },
                v.quads.map_or("?".into(), |q| q.to_string()),
                v.row_groups.map_or("?".into(), |q| q.to_string()),
                v.marker.map_or("none".into(), |m| m.to_string()),
                format_size(v.bytes, BINARY),
                v.created.clone().unwrap_or_default(),
                if v.problem.is_some() { "✗ damaged".into() } else { "complete".to_string() },
            ]);
            let r = if v.problem.is_some() { r.style(Style::new().fg(Color::Red)) } else { r };
            if i == app.store.sel {
                r.style(selected())
            } else {
                r
            }
        })
        .collect();
    let widths = [
        Constraint::Length(7),
        Constraint::Length(3),
        Constraint::Length(11),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(20),
        Constraint::Min(8),
    ];
    let header = Row::new(["version", "cur", "quads", "rgs", "marker", "size", "created", "status"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    f.render_widget(
        Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(format!(
            "Versions{}",
            app.store.filter.title(shown.len(), app.listing.as_ref().map_or(0, |l| l.versions.len()))
        ))),
        list,
    );
}

/// Columns one bar of the chart takes (its width and the gap after it).
const BAR_COLUMNS: u16 = 10;

fn render_row_groups(f: &mut Frame, chart_area: Rect, app: &App) {
    let rg = &app.store.row_groups;
    let inner = chart_area.width.saturating_sub(2);
    if rg.rows.len() > usize::from(inner / BAR_COLUMNS) {
        return render_many_row_groups(f, chart_area, rg);
    }
    let bars: Vec<Bar> = rg
        .rows
        .iter()
        .zip(&rg.bytes)
        .enumerate()
        .map(|(i, (r, b))| {
            Bar::default()
                .value(*r)
                .label(Line::from(format!("rg{i}")))
                .text_value(format!("{r} / {}", format_size(*b, BINARY)))
        })
        .collect();
    let chart = BarChart::default()
        .block(Block::default().borders(Borders::ALL).title("rows (and bytes) per row group"))
        .data(BarGroup::default().bars(&bars))
        .bar_width(BAR_COLUMNS - 1)
        .bar_gap(1);
    f.render_widget(chart, chart_area);
}

/// More row groups than bars fit (82 at 10M quads, 814 at 100M): what
/// they hold in two lines, and every row group's bytes as one sparkline,
/// each column the largest of the row groups it stands for, so that one
/// outsized row group shows wherever it is.
fn render_many_row_groups(f: &mut Frame, chart_area: Rect, rg: &RowGroups) {
    let block = Block::default().borders(Borders::ALL).title(format!(
        "row groups: {}, {} compressed; each one's bytes below",
        group_digits(rg.rows.len() as u64),
        format_size(rg.bytes.iter().sum::<u64>(), BINARY)
    ));
    let inner = block.inner(chart_area);
    f.render_widget(block, chart_area);
    let [summary, spark, axis] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(1), Constraint::Length(1)]).areas(inner);
    let lines: Vec<Line> = row_group_summary(rg).into_iter().map(Line::from).collect();
    f.render_widget(Paragraph::new(lines), summary);
    let columns = bucket_maxima(&rg.bytes, usize::from(spark.width));
    f.render_widget(Sparkline::default().data(&columns).style(Style::new().fg(Color::Cyan)), spark);
    let last = format!("rg{}", rg.rows.len().saturating_sub(1));
    let gap = usize::from(axis.width).saturating_sub(3 + last.len());
    f.render_widget(Paragraph::new(format!("rg0{}{last}", " ".repeat(gap))), axis);
}

/// Two lines for a person: how many rows the row groups hold (they are all
/// full but the last, unless something wrote them otherwise), and the
/// median, smallest and largest compressed size, naming the row groups.
fn row_group_summary(rg: &RowGroups) -> [String; 2] {
    let n = rg.rows.len();
    let full = rg.rows.first().copied().unwrap_or(0);
    let rows = match rg.rows.split_last() {
        Some((last, rest)) if rest.iter().all(|&r| r == full) => {
            format!(
                "rows: {} × {}, the last {}",
                group_digits(rest.len() as u64),
                group_digits(full),
                group_digits(*last)
            )
        }
        _ => {
            let (least, most) = extremes(&rg.rows);
            format!(
                "rows: fewest {} (rg{least}), most {} (rg{most}), {} in all",
                group_digits(rg.rows.get(least).copied().unwrap_or(0)),
                group_digits(rg.rows.get(most).copied().unwrap_or(0)),
                group_digits(rg.rows.iter().sum())
            )
        }
    };
    let mut sorted = rg.bytes.clone();
    sorted.sort_unstable();
    let (least, most) = extremes(&rg.bytes);
    let size = |i: usize| format_size(rg.bytes.get(i).copied().unwrap_or(0), BINARY);
    let bytes = format!(
        "bytes: median {}, least {} (rg{least}), most {} (rg{most})",
        format_size(sorted.get(n / 2).copied().unwrap_or(0), BINARY),
        size(least),
        size(most),
    );
    [rows, bytes]
}

/// Where the first smallest and the first largest value are.
fn extremes(values: &[u64]) -> (usize, usize) {
    let mut at = (0, 0);
    for (i, &v) in values.iter().enumerate() {
        if v < values[at.0] {
            at.0 = i;
        }
        if v > values[at.1] {
            at.1 = i;
        }
    }
    at
}

/// `values` across `columns` columns, in order: each column the largest of
/// the values it stands for, every value in at least one column, and fewer
/// values than columns each spread over several (so the axis's ends hold).
fn bucket_maxima(values: &[u64], columns: usize) -> Vec<u64> {
    if values.is_empty() {
        return Vec::new();
    }
    (0..columns)
        .map(|c| {
            let from = c * values.len() / columns;
            let to = ((c + 1) * values.len() / columns).max(from + 1);
            values[from..to].iter().copied().max().unwrap_or(0)
        })
        .collect()
}

/// `1234567` as `1,234,567`.
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_maxima_keep_every_value_and_the_largest_of_each_column() {
        let values: Vec<u64> = (0..1000).map(|i| if i == 777 { 5000 } else { i % 7 }).collect();
        let columns = bucket_maxima(&values, 78);
        assert_eq!(columns.len(), 78);
        // The one outsized row group shows in its column, wherever it is.
        assert_eq!(columns.iter().filter(|&&v| v == 5000).count(), 1);
        assert_eq!(columns[777 * 78 / 1000], 5000);
        // Fewer values than columns: each spread, in order, first and last at the ends.
        let few = bucket_maxima(&[1, 2, 3], 7);
        assert_eq!(few, vec![1, 1, 1, 2, 2, 3, 3]);
        assert!(bucket_maxima(&[], 10).is_empty());
    }

    #[test]
    fn the_summary_names_uneven_row_groups_and_the_byte_extremes() {
        let even =
            RowGroups { rows: vec![122_880, 122_880, 46_720], bytes: vec![300 << 10, 290 << 10, 100 << 10] };
        let [rows, bytes] = row_group_summary(&even);
        assert_eq!(rows, "rows: 2 × 122,880, the last 46,720");
        assert_eq!(bytes, "bytes: median 290 KiB, least 100 KiB (rg2), most 300 KiB (rg0)");
        let uneven = RowGroups { rows: vec![10, 3, 10, 7], bytes: vec![1, 1, 1, 1] };
        let [rows, _] = row_group_summary(&uneven);
        assert_eq!(rows, "rows: fewest 3 (rg1), most 10 (rg0), 30 in all");
        assert_eq!(group_digits(1_234_567), "1,234,567");
        assert_eq!(group_digits(999), "999");
        let none = row_group_summary(&RowGroups::default());
        assert_eq!(none[0], "rows: fewest 0 (rg0), most 0 (rg0), 0 in all");
    }
}
