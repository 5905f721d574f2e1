//! The `:` command line of the terminal UI: its keys, completion, and each
//! command (`:open`, `:goto`, `:export`, `:update`, `:compact`, `:repair`,
//! `:q`) turned into state changes and effects, as the rest of the update
//! step is.

use std::path::PathBuf;

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::action::{ask_compaction, ask_repair, go, select_version, start_verify};
use super::effect::Effect;
use super::state::{App, Tab};
use crate::sparql::run::OutputFormat;

/// `:open v2`, `:open FILE`, `:goto 0x1f0`, `:query`, `:export FILE [FORMAT]`,
/// `:compact`, `:q`; and `/text` or `/x:1f8b` searches in the decoder.
pub(super) fn cmd_key(app: &mut App, k: KeyEvent) -> Vec<Effect> {
    let Some(line) = app.cmdline.as_mut() else { return Vec::new() };
    // The line keeps its `:` or `/`.
    if super::views::kill(line, 1, line.len(), &k).is_some() {
        return Vec::new();
    }
    match k.code {
        KeyCode::Esc => app.cmdline = None,
        KeyCode::Backspace => {
            line.pop();
            if line.is_empty() {
                app.cmdline = None;
            }
        }
        KeyCode::Char(c) if super::views::types_char(&k) => line.push(c),
        KeyCode::Tab => complete(app),
        KeyCode::Enter => {
            let line = app.cmdline.take().unwrap_or_default();
            return run_command(app, &line);
        }
        _ => {}
    }
    Vec::new()
}

/// The commands `:` takes, for completion.
const COMMANDS: &[&str] =
    &["open", "goto", "query", "export", "compact", "update", "repair", "verify", "quit"];

/// Tab in the command line: completes a command name, or `:open`'s
/// argument from the versions and files listed. One match is completed
/// whole; several are completed to what they share and listed in the
/// status line.
fn complete(app: &mut App) {
    let Some(line) = app.cmdline.as_deref() else { return };
    let Some(body) = line.strip_prefix(':') else { return };
    let (head, partial, candidates): (String, &str, Vec<String>) = match body.split_once(' ') {
        None => (":".into(), body, COMMANDS.iter().map(|c| format!("{c} ")).collect()),
        Some(("open", arg)) => (":open ".into(), arg, open_candidates(app)),
        Some(_) => return,
    };
    let matches: Vec<&String> = candidates.iter().filter(|c| c.starts_with(partial)).collect();
    let completed = match matches.as_slice() {
        [] => {
            app.status = format!("nothing to complete for {partial:?}");
            return;
        }
        [one] => one.to_string(),
        many => {
            let shown: Vec<&str> = many.iter().map(|m| m.trim_end()).collect();
            app.status = shown.join("  ");
            shared_prefix(many)
        }
    };
    app.cmdline = Some(format!("{head}{completed}"));
}

/// What `:open` can name: each version, and each file of the listed one.
fn open_candidates(app: &App) -> Vec<String> {
    let versions = app.listing.iter().flat_map(|l| l.versions.iter().map(|v| v.name.clone()));
    versions.chain(app.files.rows.iter().map(|r| r.name.clone())).collect()
}

fn shared_prefix(words: &[&String]) -> String {
    let first = words[0].as_str();
    let mut len = words[1..].iter().fold(first.len(), |len, w| {
        first.bytes().zip(w.bytes()).take(len).take_while(|(a, b)| a == b).count()
    });
    // Two names may share the first byte of different characters.
    while !first.is_char_boundary(len) {
        len -= 1;
    }
    first[..len].to_owned()
}

fn parse_offset(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `:open v2`, `:open FILE`, `:goto 0x1f0`, `:query`, `:export FILE [FORMAT]`,
/// `:compact`, `:update …`, `:repair …`, `:q`; and `/text` or `/x:1f8b`
/// searches in the decoder.
pub fn run_command(app: &mut App, line: &str) -> Vec<Effect> {
    if let Some(needle) = line.strip_prefix('/') {
        // In the decoder a search; in a list a filter.
        app.status = match (app.tab, app.decoder.as_mut(), app.corpus.as_mut()) {
            (Tab::Decoder, Some(d), _) => d.start_search(needle, app.screen),
            (Tab::Corpus, _, Some(c)) => c.set_filter(needle),
            (Tab::Files, ..) => app.files.set_filter(needle),
            (Tab::Triage, ..) => app.triage.set_filter(needle),
            (Tab::Store, ..) => {
                app.store.filter.set(needle);
                let shown = app.store.shown(app.listing.as_ref());
                let all = app.listing.as_ref().map_or(0, |l| l.versions.len());
                app.status = format!("{} of {all} versions shown", shown.len());
                // The selection moves onto a version the list shows.
                return match shown.first() {
                    Some(&first) if !shown.contains(&app.store.sel) => select_version(app, first),
                    _ => Vec::new(),
                };
            }
            (Tab::Log, ..) if app.log_view.set_filter(needle) => {
                app.status = format!("looking for \"{}\" in every batch…", needle.trim());
                return vec![Effect::FilterLog(needle.trim().to_string())];
            }
            (Tab::Log, ..) => "every batch shown".into(),
            _ => "`/` filters the lists and searches the decoder".into(),
        };
        return Vec::new();
    }
    let body = line.trim_start_matches(':').trim();
    let (cmd, arg) = body.split_once(' ').map_or((body, ""), |(c, a)| (c, a.trim()));
    if !app.has_chunk() {
        if let Some(why) = needs_a_chunk(cmd) {
            app.status = why;
            return Vec::new();
        }
    }
    match cmd {
        "q" | "quit" => super::action::ask_quit(app),
        "open" => return open(app, arg),
        "goto" => goto(app, arg),
        "query" => {
            go(app, Tab::Query);
            if !arg.is_empty() {
                app.query.text = arg.to_string();
                app.query.cursor = None;
            }
        }
        "export" => return export(app, arg),
        "compact" => {
            go(app, Tab::Timeline);
            return ask_compaction(app);
        }
        "update" => return update_command(app, arg),
        "repair" => return ask_repair(app, arg),
        "verify" if !app.has_chunk() => return super::action::verify_corpus(app),
        "verify" => {
            go(app, Tab::Triage);
            return start_verify(app, matches!(arg, "deep" | "--deep"));
        }
        "" => {}
        other => {
            app.status = format!(
                "unknown command :{other} (try :open, :goto, :query, :export, :compact, :update, :repair, :verify, :q)"
            )
        }
    }
    Vec::new()
}

/// Why `cmd` cannot run on a corpus root with no chunk open, and what does:
/// queries and `:verify` read every chunk, the rest act on one.
fn needs_a_chunk(cmd: &str) -> Option<String> {
    let every_chunk = match cmd {
        "compact" => ", or run `cottas-tui corpus compact ROOT`",
        "update" | "repair" | "open" => "",
        _ => return None,
    };
    Some(format!(":{cmd} works on one chunk: open it first (Enter on it){every_chunk}"))
}

/// `:open v2` selects a version; anything else is a file to decode
/// (relative to the chunk).
fn open(app: &mut App, arg: &str) -> Vec<Effect> {
    if let Some(i) = super::state::version_index(app, arg) {
        go(app, Tab::Files);
        return select_version(app, i);
    }
    let p = PathBuf::from(arg);
    let p = if p.is_absolute() { p } else { app.chunk.join(p) };
    app.status = format!("opening {arg}…");
    vec![Effect::OpenFile { path: p, at: None }]
}

/// `:goto 0x1f0`, `:goto 4096` or `:goto 50%` (of the file's length: the
/// way across a file of gigabytes).
fn goto(app: &mut App, arg: &str) {
    let Some(d) = app.decoder.as_mut() else {
        app.status = "open a file in the decoder first".into();
        return;
    };
    let len = d.bytes.len() as u64;
    let percent = arg.trim().strip_suffix('%').and_then(|p| p.trim().parse::<f64>().ok());
    let offset = match percent {
        Some(p) if (0.0..=100.0).contains(&p) => {
            Some(((len as f64 * p / 100.0) as u64).min(len.saturating_sub(1)))
        }
        Some(_) => None,
        None => parse_offset(arg),
    };
    let Some(offset) = offset else {
        app.status = format!("not an offset: {arg:?} (decimal, 0x hex, or a percentage like 50%)");
        return;
    };
    match d.goto(offset, app.screen) {
        Ok(()) => go(app, Tab::Decoder),
        Err(why) => app.status = why,
    }
}

fn export(app: &mut App, arg: &str) -> Vec<Effect> {
    let mut parts = arg.split_whitespace();
    let Some(file) = parts.next() else {
        app.status = "usage: :export FILE [json|xml|csv|tsv|table|ntriples|nquads|turtle]".into();
        return Vec::new();
    };
    let format = match parts.next().map(|f| <OutputFormat as clap::ValueEnum>::from_str(f, true)) {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            app.status = format!("format: {e}");
            return Vec::new();
        }
        None => format_for_extension(file),
    };
    app.status = format!("exporting to {file}…");
    vec![Effect::Export { text: app.query.text.clone(), out: PathBuf::from(file), format }]
}

fn format_for_extension(file: &str) -> OutputFormat {
    match file.rsplit('.').next() {
        Some("json") => OutputFormat::Json,
        Some("xml") => OutputFormat::Xml,
        Some("csv") => OutputFormat::Csv,
        Some("nt") => OutputFormat::NTriples,
        Some("nq") => OutputFormat::NQuads,
        Some("ttl") => OutputFormat::Turtle,
        Some("trig") => OutputFormat::TriG,
        _ => OutputFormat::Tsv,
    }
}

fn update_command(app: &mut App, arg: &str) -> Vec<Effect> {
    if !app.write {
        app.status = "read-only: start with --write to update".into();
        return Vec::new();
    }
    if arg.is_empty() {
        app.status = "usage: :update INSERT DATA { … }".into();
        return Vec::new();
    }
    app.status = "updating…".into();
    vec![Effect::Update(arg.to_string())]
}
