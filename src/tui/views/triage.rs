//! Triage: `verify` on a worker, its findings grouped by file (errors
//! first), the selected one in full, and the way from a finding to its
//! bytes (Enter: the Decoder at the offset) and to its repair (`r`, with
//! `--write`). The findings are the library's `verify::Report`, the same
//! the CLI prints; the Files view's status column reads them too.

use std::time::Instant;

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::selected;
use crate::text::plural;
use crate::triage::repair::Repair;
use crate::triage::verify::{Finding, Report, Severity};
use crate::tui::action::Action;
use crate::tui::state::{App, Check};

/// The last verify report, the run in progress, and the selected finding.
#[derive(Debug, Default)]
pub struct TriageView {
    report: Option<Report>,
    /// Indexes into the report's findings in display order: by file, errors
    /// before warnings, then by offset.
    order: Vec<usize>,
    pub sel: usize,
    /// `/`: which findings are listed (`order` holds only those).
    pub filter: super::ListFilter,
    pub running: Option<Running>,
    /// Why the last run could not run at all.
    pub error: Option<String>,
    /// Whether the last run (or the one running) is `--deep`.
    pub deep: bool,
}

#[derive(Debug)]
pub struct Running {
    pub started: Instant,
    /// Row groups read and to read, of the version being checked.
    pub progress: Option<(u64, u64)>,
}

/// What the triage view asks of the app.
pub enum TriageMove {
    /// Run verify (again), deep or not.
    Verify(bool),
    /// Open this file (relative to the chunk) in the Decoder at this offset.
    Open(String, Option<u64>),
    /// Plan this repair and ask for confirmation.
    Repair(Repair),
    /// The finding has no repair of its own; say why.
    NoRepair(String),
    Nothing,
}

pub fn bindings(write: bool) -> Vec<(&'static str, &'static str)> {
    let mut b = vec![("Enter", "bytes"), ("v", "verify"), ("D", "deep")];
    if write {
        b.push(("r", "repair"));
    }
    b.push(("/", "filter"));
    b.push(("Esc", "back"));
    b
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('v') => Some(Action::Verify { deep: false }),
        KeyCode::Char('D') => Some(Action::Verify { deep: true }),
        KeyCode::Char('r') => Some(Action::RepairSelected),
        KeyCode::Char('/') => Some(Action::OpenCmdline('/')),
        _ => None,
    }
}

/// Rows above the findings list: the summary or the gauge (clicks count from it).
const SUMMARY_ROWS: u16 = 3;
/// Rows of the detail pane under the list.
const DETAIL_ROWS: u16 = 8;

impl TriageView {
    pub fn report(&self) -> Option<&Report> {
        self.report.as_ref()
    }

    /// Marks a run as started; `false` when one is already running.
    pub fn start(&mut self, deep: bool) -> bool {
        if self.running.is_some() {
            return false;
        }
        self.deep = deep;
        self.running = Some(Running { started: Instant::now(), progress: None });
        true
    }

    pub fn progress(&mut self, done: u64, all: u64) {
        if let Some(r) = self.running.as_mut() {
            r.progress = Some((done, all));
        }
    }

    /// Takes a finished run: the findings in display order, the selection
    /// kept on the same place in the list.
    pub fn finished(&mut self, result: Result<Report, String>) {
        self.running = None;
        match result {
            Ok(report) => {
                self.report = Some(report);
                self.reorder();
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// The findings listed, in display order, those `/` keeps (by file,
    /// check, message and next step); the selection kept in the list.
    fn reorder(&mut self) {
        let Some(report) = &self.report else { return };
        let keeps = |f: &Finding| {
            self.filter.keeps(&format!(
                "{} {} {} {}",
                f.file,
                f.check,
                f.message,
                f.next.as_deref().unwrap_or("")
            ))
        };
        self.order =
            display_order(&report.findings).into_iter().filter(|&i| keeps(&report.findings[i])).collect();
        self.sel = self.sel.min(self.order.len().saturating_sub(1));
    }

    /// `/TEXT`: only the findings that match; the first of them selected.
    pub fn set_filter(&mut self, text: &str) -> String {
        self.filter.set(text);
        self.sel = 0;
        self.reorder();
        let all = self.report.as_ref().map_or(0, |r| r.findings.len());
        format!("{} of {all} findings shown", self.order.len())
    }

    pub fn selected_finding(&self) -> Option<&Finding> {
        let report = self.report.as_ref()?;
        report.findings.get(*self.order.get(self.sel)?)
    }

    /// Whether verify has run and what it found for the file at `name`
    /// (relative to the chunk); `None` before the first report.
    pub fn file_status(&self, name: &str) -> Option<FileStatus> {
        let report = self.report.as_ref()?;
        let mine = report.findings.iter().filter(|f| f.file == name);
        let (errors, warnings) = mine.fold((0, 0), |(e, w), f| match f.severity {
            Severity::Error => (e + 1, w),
            Severity::Warning => (e, w + 1),
        });
        Some(FileStatus { errors, warnings })
    }

    /// The triage view's part of an action; `None` when it is not its own.
    pub fn update(&mut self, action: &Action) -> Option<TriageMove> {
        if let Some(inside) = super::select_in_list(&mut self.sel, self.order.len(), action, SUMMARY_ROWS) {
            return inside.then_some(TriageMove::Nothing);
        }
        Some(match action {
            Action::Back if self.filter.clear() => {
                self.reorder();
                TriageMove::Nothing
            }
            Action::Verify { deep } => TriageMove::Verify(*deep),
            Action::Enter => {
                let f = self.selected_finding()?;
                TriageMove::Open(f.file.clone(), f.offset)
            }
            Action::RepairSelected => {
                let f = self.selected_finding()?;
                match Repair::for_finding(f) {
                    Some(r) => TriageMove::Repair(r),
                    None => TriageMove::NoRepair(match &f.next {
                        Some(next) => format!("no repair from here for {}; next: {next}", f.check),
                        None => format!("no repair from here for {}", f.check),
                    }),
                }
            }
            _ => return None,
        })
    }
}

/// Counts of one file's findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStatus {
    pub errors: usize,
    pub warnings: usize,
}

impl FileStatus {
    pub fn check(self) -> Check {
        if self.errors > 0 {
            Check::Bad
        } else {
            Check::Ok
        }
    }

    /// The Files view's status cell.
    pub fn cell(self) -> Span<'static> {
        match (self.errors, self.warnings) {
            (0, 0) => Span::styled("✓ verified", Style::new().fg(Color::Green)),
            (0, w) => Span::styled(
                format!("! {}", plural(w, "warning", "warnings")),
                Style::new().fg(Color::Yellow),
            ),
            (e, _) => Span::styled(
                format!("✗ {}", plural(e, "error", "errors")),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
        }
    }
}

/// By file, errors before warnings, then by offset: one file's findings
/// stay together, and the worst of them comes first.
fn display_order(findings: &[Finding]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..findings.len()).collect();
    let rank = |s: Severity| match s {
        Severity::Error => 0,
        Severity::Warning => 1,
    };
    order.sort_by(|&a, &b| {
        let (a, b) = (&findings[a], &findings[b]);
        (&a.file, rank(a.severity), a.offset).cmp(&(&b.file, rank(b.severity), b.offset))
    });
    order
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let [summary, list, detail] = Layout::vertical([
        Constraint::Length(SUMMARY_ROWS),
        Constraint::Min(4),
        Constraint::Length(DETAIL_ROWS),
    ])
    .areas(area);
    render_summary(f, summary, app);
    render_findings(f, list, app);
    render_detail(f, detail, app);
}

/// The gauge while verify runs; afterwards what it found, how long ago.
fn render_summary(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.triage;
    let title = if t.deep { "verify --deep" } else { "verify" };
    let block = Block::default().borders(Borders::ALL).title(title);
    if let Some(run) = &t.running {
        let (ratio, label) = match run.progress {
            Some((done, all)) if all > 0 => {
                (done as f64 / all as f64, format!("row group {done}/{all} of a version"))
            }
            _ => (0.0, "checking headers, sidecars and the log…".to_string()),
        };
        let secs = run.started.elapsed().as_secs_f64();
        let gauge = Gauge::default()
            .block(block)
            .gauge_style(Style::new().fg(Color::Cyan))
            .ratio(ratio.clamp(0.0, 1.0))
            .label(format!("{label}  {secs:.1} s"));
        f.render_widget(gauge, area);
        return;
    }
    let line = match (&t.error, &t.report) {
        (Some(e), _) => Line::styled(format!("verify could not run: {e}"), Style::new().fg(Color::Red)),
        (None, None) => Line::from("not verified yet: v verifies, D verifies --deep"),
        (None, Some(r)) => summary_line(r),
    };
    f.render_widget(Paragraph::new(line).block(block), area);
}

fn summary_line(r: &Report) -> Line<'static> {
    let errors = r.errors();
    let warnings = r.findings.len() - errors;
    let head = format!("{} checked in {:.2} s: ", plural(r.files_checked, "file", "files"), r.seconds);
    let verdict = if r.is_clean() {
        Span::styled("clean".to_string(), Style::new().fg(Color::Green).add_modifier(Modifier::BOLD))
    } else {
        let style = if errors > 0 { Color::Red } else { Color::Yellow };
        Span::styled(
            format!("{}, {}", plural(errors, "error", "errors"), plural(warnings, "warning", "warnings")),
            Style::new().fg(style).add_modifier(Modifier::BOLD),
        )
    };
    Line::from(vec![Span::raw(head), verdict])
}

fn severity_cell(s: Severity) -> Span<'static> {
    match s {
        Severity::Error => Span::styled("✗", Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)),
        Severity::Warning => Span::styled("!", Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)),
    }
}

fn offset_cell(offset: Option<u64>) -> String {
    offset.map_or("–".into(), |o| format!("{o:#x}"))
}

/// One row per finding; a file's name only on its first row, so each file
/// reads as a group.
fn render_findings(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.triage;
    let findings = t.report.as_ref().map_or(&[][..], |r| &r.findings[..]);
    let visible = super::list_rows(area).max(1);
    let top = t.sel.saturating_sub(visible - 1);
    let mut rows = Vec::new();
    for (i, &ix) in t.order.iter().enumerate().skip(top).take(visible) {
        let finding = &findings[ix];
        let first_of_file = i == 0 || findings[t.order[i - 1]].file != finding.file || i == top;
        let file = if first_of_file { finding.file.clone() } else { String::new() };
        let row = Row::new(vec![
            Line::from(severity_cell(finding.severity)),
            Line::styled(file, Style::new().add_modifier(Modifier::BOLD)),
            Line::from(offset_cell(finding.offset)),
            Line::from(finding.check),
            Line::from(finding.message.clone()),
        ]);
        rows.push(if i == t.sel { row.style(selected()) } else { row });
    }
    // The file column fits the longest name, up to a third of the width.
    let longest = findings.iter().map(|f| f.file.chars().count()).max().unwrap_or(4) as u16;
    let widths = [
        Constraint::Length(1),
        Constraint::Length(longest.clamp(4, area.width / 3)),
        Constraint::Length(10),
        Constraint::Length(14),
        Constraint::Min(20),
    ];
    let header =
        Row::new(["", "file", "offset", "check", "what"]).style(Style::new().add_modifier(Modifier::BOLD));
    let title = match t.report.as_ref() {
        Some(r) if t.filter.is_on() => format!("Findings{}", t.filter.title(t.order.len(), r.findings.len())),
        Some(r) if !r.findings.is_empty() => format!("Findings ({})", r.findings.len()),
        _ => "Findings".to_string(),
    };
    f.render_widget(
        Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// The selected finding whole: where, what, and what to do about it.
fn render_detail(f: &mut Frame, area: Rect, app: &App) {
    let block = Block::default().borders(Borders::ALL).title("Finding");
    let Some(finding) = app.triage.selected_finding() else {
        f.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let label = |s: &'static str| Span::styled(s, Style::new().add_modifier(Modifier::DIM));
    let at = finding.offset.map_or("no offset".to_string(), |o| format!("byte {o} ({o:#x})"));
    let mut lines = vec![
        Line::from(vec![
            severity_cell(finding.severity),
            Span::raw(" "),
            Span::styled(finding.file.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!("  {at}  ")),
            label("check "),
            Span::raw(finding.check),
        ]),
        Line::from(finding.message.clone()),
    ];
    if let Some(next) = &finding.next {
        lines.push(Line::from(vec![
            label("next: "),
            Span::styled(next.clone(), Style::new().fg(Color::Cyan)),
        ]));
    }
    lines.push(repair_line(finding, app.write));
    f.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

fn repair_line(finding: &Finding, write: bool) -> Line<'static> {
    let dim = Style::new().add_modifier(Modifier::DIM);
    match (Repair::for_finding(finding), write) {
        (None, _) => Line::styled("no repair from the UI for this finding", dim),
        (Some(r), true) => Line::from(vec![
            Span::styled(" r ", Style::new().add_modifier(Modifier::REVERSED)),
            Span::raw(format!(" {} (shows the plan first; a backup is kept)", super::repair_words(&r))),
        ]),
        (Some(r), false) => {
            Line::styled(format!("{}: start with --write to repair from here", super::repair_words(&r)), dim)
        }
    }
}
