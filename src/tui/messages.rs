//! The workers' and the watcher's reports to the update step: each
//! `worker::Msg` changes the state it brings news for and may ask for more
//! effects (a refresh after a change on disk, the next query rows).

use super::action::{compaction_done, from_event, go, start_verify, update};
use super::effect::Effect;
use super::state::{App, Tab};
use super::views;
use super::worker::Msg;
use crate::text::plural;

/// A worker's report: the state takes what it brought.
pub(super) fn worker_msg(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Input(ev) => return from_event(app, ev).map(|a| update(app, a)).unwrap_or_default(),
        Msg::Observed(now) => return observed(app, now),
        Msg::Listed(listing, observed) => {
            app.apply_listing(listing, observed);
            return app.selected_version_dir().map(Effect::LoadVersion).into_iter().collect();
        }
        Msg::VersionLoaded(details) => app.apply_version(*details),
        Msg::LogFiltered(text, found) => match found {
            // A filter typed since has its own search on the way.
            Ok(m) if app.log_view.filter.keeps_only(&text) => {
                let all = app.log.as_ref().map_or(0, |l| l.count);
                app.status = format!("{} of {all} batches hold \"{text}\"", m.len());
                app.log_view.filtered(m);
            }
            Ok(_) => {}
            Err(e) => app.status = format!("filtering the log failed: {e}"),
        },
        Msg::LogIndexed(ix) => {
            let grew = app.log.as_ref().is_none_or(|old| old.count != ix.count || old.len != ix.len);
            app.log_view.reindexed(ix.count);
            if app.compaction.is_some() {
                app.timeline.reindexed(&ix);
            }
            app.log = Some(*ix);
            // A filtered list follows the log: its batches are looked for again.
            if let Some(text) = app.log_view.filter.text().filter(|_| grew) {
                return vec![Effect::FilterLog(text.to_string())];
            }
        }
        Msg::Opened(Ok(d), at) => opened(app, *d, at),
        Msg::Opened(Err(e), _) => app.status = e,
        Msg::VerifyProgress(done, all) => app.triage.progress(done, all),
        Msg::Verified(r) => verified(app, r.map(|r| *r)),
        Msg::CorpusListed(r) => {
            if let Some(c) = app.corpus.as_mut() {
                c.listed(r);
            }
        }
        Msg::CorpusVerified(statuses) => {
            if let Some(c) = app.corpus.as_mut() {
                c.verifying = false;
                let bad = statuses.iter().filter(|(_, s)| s.errors > 0).count();
                app.status =
                    format!("verified {}: {bad} with errors", plural(statuses.len(), "chunk", "chunks"));
                c.verified.extend(statuses);
            }
        }
        Msg::Planned(Ok(confirm)) => {
            // The plan is on screen: the status no longer says it is coming.
            app.status = "the plan is shown: y applies it, n or Esc cancels".into();
            app.confirm = Some(confirm);
        }
        Msg::Planned(Err(why)) => app.status = why,
        Msg::QueryRows(vars, rows) => query_rows(app, vars, rows),
        // Without them IRIs are still named from the result alone.
        Msg::Namespaces(Ok((version, list))) => app.query.namespaces_read(version, list),
        Msg::Namespaces(Err(_)) => {}
        Msg::SnapshotRead(_) => {}
        Msg::QueryDone(t) => query_done(app, t),
        Msg::CompactProgress(p) => {
            if p.phase != crate::compact::CompactPhase::Planning {
                app.timeline.progress(p.epochs, app.log.as_ref());
            }
            if let Some(c) = app.compaction.as_mut() {
                c.last = Some(p);
            }
        }
        Msg::CompactDone(r) => {
            app.compaction = None;
            compaction_done(app, r);
            return refresh(app);
        }
        Msg::Exported(r) => app.status = r.unwrap_or_else(|e| format!("export failed: {e}")),
        Msg::Failed(why) => {
            app.query.running = None;
            app.compaction = None;
            app.status = why;
        }
        Msg::Wrote(r) => {
            app.status = r.unwrap_or_else(|e| format!("failed: {e}"));
            app.repairing = false;
            if app.quit_when_idle && app.compaction.is_none() {
                app.quit = true;
            }
            let mut effects = refresh(app);
            // What the Triage view shows was true before the write: check again.
            if app.triage.report().is_some() {
                let deep = app.triage.deep;
                effects.extend(start_verify(app, deep));
            }
            return effects;
        }
    }
    Vec::new()
}

/// A decoded file arrives: the cursor goes to `at` (a finding's offset;
/// one past the end, as for a file cut short, shows the last byte).
fn opened(app: &mut App, mut d: super::state::Decoder, at: Option<u64>) {
    // The chunk's own files by their name in it: the offset stays in view.
    let name = d.path.strip_prefix(&app.chunk).unwrap_or(&d.path).display().to_string();
    app.status = name.clone();
    if let Some(at) = at {
        let last = (d.bytes.len() as u64).saturating_sub(1);
        match d.goto(at.min(last), app.screen) {
            Ok(()) => app.status = format!("{name} at byte {at} ({at:#x})"),
            Err(why) => app.status = why,
        }
    }
    app.decoder = Some(d);
    go(app, Tab::Decoder);
}

fn verified(app: &mut App, r: Result<crate::triage::verify::Report, String>) {
    app.status = match &r {
        Ok(r) if r.is_clean() => {
            format!("verify: clean ({}, {:.2} s)", plural(r.files_checked, "file", "files"), r.seconds)
        }
        Ok(r) => format!(
            "verify: {}, {} in all",
            plural(r.errors(), "error", "errors"),
            plural(r.findings.len(), "finding", "findings")
        ),
        Err(e) => format!("verify could not run: {e}"),
    };
    if let (Ok(r), Some(c)) = (&r, app.corpus.as_mut()) {
        let errors = r.errors();
        let status = views::triage::FileStatus { errors, warnings: r.findings.len() - errors };
        c.verified.insert(app.chunk.clone(), status);
    }
    app.triage.finished(r);
}

/// Rows of the running query: the table grows as they come (the first
/// ones reset the view and choose the prefixes).
fn query_rows(app: &mut App, vars: Vec<String>, rows: Vec<Vec<String>>) {
    if app.query.running.is_none() {
        return;
    }
    let first = app.query.result.is_none();
    let table =
        app.query.result.get_or_insert_with(|| super::state::QueryTable { vars, ..Default::default() });
    table.rows.extend(rows);
    let n = table.rows.len();
    if first {
        app.query.scroll = 0;
        app.query.col = 0;
        let rows = app.query.result.as_ref().map(|r| r.rows.as_slice()).unwrap_or_default();
        app.query.prefixes = app.query.prefixes_for(rows);
    }
    app.status = format!("{} so far… (Ctrl-C stops)", plural(n, "row", "rows"));
}

/// The query's outcome, with the rows not streamed yet. A query stopped or
/// failed part way keeps the rows it produced.
fn query_done(app: &mut App, t: super::state::QueryTable) {
    let took = app.query.running.take().map(|(s, _)| s.elapsed()).unwrap_or(t.elapsed);
    let ms = took.as_secs_f64() * 1e3;
    let streamed = app.query.result.take();
    let mut table = streamed.unwrap_or_else(|| {
        app.query.scroll = 0;
        app.query.col = 0;
        super::state::QueryTable::default()
    });
    if table.vars.is_empty() {
        table.vars = t.vars;
    }
    table.rows.extend(t.rows);
    (table.error, table.boolean, table.elapsed, table.total, table.note) =
        (t.error, t.boolean, t.elapsed, t.total, t.note);
    let n = table.rows.len();
    let rows = |n: usize| plural(n, "row", "rows");
    app.status = match (&table.error, table.boolean) {
        (Some(e), _) if e == "cancelled" => format!("stopped after {}, {ms:.1} ms", rows(n)),
        (Some(e), _) if n > 0 => format!("error after {}: {e}", rows(n)),
        (Some(e), _) => format!("error: {e}"),
        (None, Some(b)) => format!("ASK: {b} in {ms:.1} ms"),
        _ if table.total > n => format!("{} in {ms:.1} ms ({n} shown: display limit)", rows(table.total)),
        _ => format!("{} in {ms:.1} ms", rows(n)),
    };
    app.query.prefixes = app.query.prefixes_for(&table.rows);
    app.query.result = Some(table);
}

/// Re-lists versions and re-indexes the log (after a change on disk).
fn refresh(app: &mut App) -> Vec<Effect> {
    app.refreshing = true;
    vec![Effect::ListVersions, Effect::IndexLog, Effect::ReadSnapshot]
}

/// The watcher's report: appends and compactions by other processes show
/// up within a second. Reports that arrive while a listing is on its way
/// wait for it (the listing brings its own observation).
fn observed(app: &mut App, now: super::state::Observed) -> Vec<Effect> {
    if app.refreshing || now == app.watched {
        return Vec::new();
    }
    let what = if now.current != app.watched.current {
        let target = now.current.as_ref().map_or("nothing".into(), |p| p.display().to_string());
        format!("`current` now points at {target}")
    } else {
        format!("the log changed ({} → {} bytes)", app.watched.log_len, now.log_len)
    };
    if app.compaction.is_none() {
        app.status = what.clone();
    }
    if now.current != app.watched.current {
        app.timeline.event(what);
    }
    app.watched = now;
    refresh(app)
}
