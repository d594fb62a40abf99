//! The documents' tables of keys are rendered from the core crate's tables
//! (`bulkhead_core::keys`), so that they cannot drift from what the
//! attributes and configuration take.
//!
//! A table is found by its markers: `<!-- keys: <policy> -->` on the line
//! before it and `<!-- /keys -->` on the line after, in the README and in
//! any Markdown page under `docs/` (each attribute's page has its
//! policy's). Each policy has one in the README. To rewrite every marked
//! table from the core tables:
//! `KEY_TABLES=overwrite cargo test --test key_tables`.

use std::path::{Path, PathBuf};

use bulkhead_core::keys::{Key, Origin, PolicyKind, ValueKind};

const END: &str = "<!-- /keys -->";

/// The marker that opens `kind`'s table.
fn start(kind: PolicyKind) -> String {
    format!("<!-- keys: {} -->", kind.name())
}

/// `kind`'s table of keys, as the documents show it.
fn render(kind: PolicyKind) -> String {
    let mut table =
        String::from("| key | meaning | value | default | error |\n|---|---|---|---|---|\n");
    for key in kind.all_keys() {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            name(key),
            escape(key.summary()),
            escape(&key.kind().to_string()),
            default(key),
            code(key),
        ));
    }
    table
}

fn name(key: &Key) -> String {
    match key.origin() {
        Origin::Both => format!("`{}`", key.name()),
        Origin::Attribute => format!("`{}` (attribute)", key.name()),
        Origin::Configuration => format!("`{}` (configuration)", key.name()),
    }
}

fn default(key: &Key) -> String {
    match key.default() {
        "" => "none".to_owned(),
        written => format!("`{written}`"),
    }
}

fn code(key: &Key) -> String {
    match key.kind() {
        ValueKind::Duration { positive: true } => format!("{}, ATR-008 for zero", key.code()),
        _ => key.code().to_owned(),
    }
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The README and the pages of `docs/`.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents = vec![root.join("README.md")];
    let mut pages = Vec::new();
    markdown_below(&root.join("docs"), &mut pages);
    pages.sort();
    documents.extend(pages);
    documents
}

/// Every Markdown file in `dir` and its subfolders.
fn markdown_below(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|entry| Some(entry.ok()?.path())) {
        if path.is_dir() {
            markdown_below(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            found.push(path);
        }
    }
}

/// `text` with every marked table of `kind` rendered from the core table,
/// and how many there are.
fn rendered(text: &str, kind: PolicyKind, path: &Path) -> (String, usize) {
    let start = start(kind);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut count = 0;
    while let Some(at) = rest.find(&start) {
        let (before, marked) = rest.split_at(at + start.len());
        let end = marked
            .find(END)
            .unwrap_or_else(|| panic!("{}: {start} without {END}", path.display()));
        out.push_str(before);
        out.push('\n');
        out.push_str(&render(kind));
        out.push_str(END);
        rest = &marked[end + END.len()..];
        count += 1;
    }
    out.push_str(rest);
    (out, count)
}

#[test]
fn the_documented_key_tables_are_the_core_tables() {
    let overwrite = std::env::var("KEY_TABLES").is_ok_and(|v| v == "overwrite");
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut expected = text.clone();
        for kind in PolicyKind::ALL {
            let (next, count) = rendered(&expected, kind, &path);
            if path.ends_with("README.md") {
                assert_eq!(count, 1, "the README has one table of {kind}'s keys");
            }
            expected = next;
        }
        if expected == text {
            continue;
        }
        if overwrite {
            std::fs::write(&path, expected).unwrap();
        } else {
            let diff: Vec<String> = expected
                .lines()
                .zip(text.lines())
                .filter(|(expected, written)| expected != written)
                .map(|(expected, written)| format!("-{written}\n+{expected}"))
                .collect();
            panic!(
                "{}: the tables of keys differ from bulkhead_core::keys (rewrite them with KEY_TABLES=overwrite):\n{}",
                path.display(),
                diff.join("\n")
            );
        }
    }
}

#[test]
fn every_code_of_a_key_is_in_the_readmes_code_table() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for kind in PolicyKind::ALL {
        for key in kind.all_keys() {
            let mut codes = vec![key.code()];
            if matches!(key.kind(), ValueKind::Duration { positive: true }) {
                codes.push("ATR-008");
            }
            for code in codes {
                assert!(
                    readme.contains(&format!("\n| {code} | ")),
                    "{kind}.{}: {code} is not in the README's table of codes",
                    key.name()
                );
            }
        }
    }
}
