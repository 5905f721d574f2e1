//! docs/architecture.md's module table is the rule for which module may use
//! which: this test reads the table and every `crate::` path in `src/`
//! (comments left out) and fails on a use the table does not allow, on a
//! module of `src/` without a row, and on a row that names a module listed
//! below it (which would let two modules use each other).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The table: each module with the modules it may use, in table order.
struct Layers {
    order: Vec<String>,
    may_use: BTreeMap<String, BTreeSet<String>>,
}

fn read_table(doc: &str) -> Layers {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with("| Module | Where | What it owns | May use |"));
    assert!(lines.next().is_some(), "docs/architecture.md has no `| Module | … | May use |` table");
    let mut layers = Layers { order: Vec::new(), may_use: BTreeMap::new() };
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let (module, uses) = (cells[0].to_owned(), cells[cells.len() - 1]);
        let names: BTreeSet<String> = if uses == "nothing of ours" {
            BTreeSet::new()
        } else {
            uses.split(',').map(|u| u.trim().trim_matches('`').to_owned()).collect()
        };
        layers.order.push(module.clone());
        layers.may_use.insert(module, names);
    }
    assert!(layers.order.len() > 10, "the table was read ({} rows)", layers.order.len());
    layers
}

/// The source without its line comments (doc comments name modules they do
/// not use). A `//` inside a string such as `"http://…"` follows a `:`, not
/// a space, so it is kept.
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                return "";
            }
            match line.find(" //") {
                Some(at) => &line[..at],
                None => line,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a source refers to through `crate::`: paths such
/// as `crate::store::Store` and every name in `use crate::{a::b, c}`.
fn modules_used(source: &str) -> BTreeSet<String> {
    let code = code_of(source);
    let mut used = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            used.extend(top_names_of_group(group));
        } else {
            used.insert(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    used.into_iter()
        .map(|m| if m == "eprint_line" || m == "eprint_text" { "stderr".to_owned() } else { m })
        .filter(|m| !m.is_empty())
        .collect()
}

/// The first name of each item in a `{…}` group (nested groups skipped).
fn top_names_of_group(group: &str) -> Vec<String> {
    let (mut depth, mut names, mut item) = (0, Vec::new(), String::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => names.push(std::mem::take(&mut item)),
            _ if depth == 0 => item.push(c),
            _ => {}
        }
    }
    names.push(item);
    names
        .iter()
        .map(|n| n.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Every `.rs` file under `src/` with the top-level module it belongs to;
/// `lib.rs` (which declares the modules) and `main.rs` (the binary, a user
/// of the library) belong to none.
fn sources(src: &Path) -> Vec<(String, String, String)> {
    walkdir::WalkDir::new(src)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(src).unwrap();
            let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
            let module = first.trim_end_matches(".rs").to_owned();
            if module == "lib" || module == "main" {
                return None;
            }
            Some((module, rel.display().to_string(), std::fs::read_to_string(e.path()).unwrap()))
        })
        .collect()
}

/// Everything that breaks the table's rule, one line each.
fn violations(layers: &Layers, sources: &[(String, String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, module) in layers.order.iter().enumerate() {
        for used in &layers.may_use[module] {
            if !layers.order[..i].contains(used) {
                found.push(format!("the row of `{module}` names `{used}`, which is not a row above it"));
            }
        }
    }
    for (module, file, source) in sources {
        let Some(allowed) = layers.may_use.get(module) else {
            found.push(format!("src/{file}: module `{module}` has no row in the table"));
            continue;
        };
        for used in modules_used(source) {
            if used != *module && !allowed.contains(&used) {
                found.push(format!(
                    "src/{file}: `{module}` uses `crate::{used}`, which its row does not allow"
                ));
            }
        }
    }
    found
}

fn the_table() -> Layers {
    read_table(&std::fs::read_to_string(common::repo().join("docs/architecture.md")).unwrap())
}

#[test]
fn every_use_in_src_is_one_the_architecture_table_allows() {
    let found = violations(&the_table(), &sources(&common::repo().join("src")));
    assert!(found.is_empty(), "docs/architecture.md's module table is broken:\n{}", found.join("\n"));
}

/// The check itself: a forbidden `use`, in either form, and a row naming a
/// module below it are each found.
#[test]
fn a_forbidden_use_is_found() {
    let layers = the_table();
    let planted = |code: &str| vec![("format".to_owned(), "format/planted.rs".to_owned(), code.to_owned())];
    assert_eq!(violations(&layers, &planted("use crate::tui::App;\n")).len(), 1);
    assert_eq!(violations(&layers, &planted("use crate::{text::plural, sparql::run};\n")).len(), 1);
    assert_eq!(violations(&layers, &planted("fn f() { crate::serve::run() }\n")).len(), 1);
    assert!(violations(&layers, &planted("/// See [`crate::view`].\nuse crate::text::plural;\n")).is_empty());

    let mut backwards = the_table();
    backwards.may_use.get_mut("text").unwrap().insert("cli".to_owned());
    assert_eq!(violations(&backwards, &[]).len(), 1);
}
