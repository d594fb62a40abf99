//! The pages of `docs/` are read in two places: on their own (GitHub, an
//! editor), where their links end in definitions pointing to the other
//! pages and to docs.rs, and in rustdoc, where `src/lib.rs` and
//! `src/guide.rs` pull them in after link definitions of their own, which
//! win. A link added to a page without its rustdoc definition would send
//! rustdoc readers to docs.rs: these tests find it.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The labels of the link definitions of `text` (`[label]: target` lines,
/// with or without a leading `/// `).
fn definitions(lines: &[&str]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|line| {
            let line = line.trim_start_matches("///").trim();
            let rest = line.strip_prefix('[')?;
            let (label, target) = rest.split_once("]: ")?;
            (!target.is_empty()).then(|| label.to_owned())
        })
        .collect()
}

/// Every page, and the source file that includes it.
fn pages() -> Vec<(String, &'static str)> {
    let mut pages = Vec::new();
    for (dir, source) in [("docs", "src/guide.rs"), ("docs/attributes", "src/lib.rs")] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for entry in fs::read_dir(root).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap();
            // The dated history of BENCHMARKS.md's figures goes with the
            // repository's root files, not with the guide's pages.
            if path.extension().is_some_and(|ext| ext == "md") && name != "benchmarks-history.md" {
                pages.push((format!("{dir}/{name}"), source));
            }
        }
    }
    pages.sort();
    pages
}

#[test]
fn every_page_is_pulled_into_rustdoc() {
    for (page, source) in pages() {
        let include = format!("#[doc = include_str!(\"../{page}\")]");
        assert!(
            read(source).contains(&include),
            "{source} does not include {page}"
        );
    }
}

#[test]
fn every_link_of_a_page_has_a_rustdoc_definition_before_it() {
    for (page, source) in pages() {
        let text = read(&page);
        let needed = definitions(&text.lines().collect::<Vec<_>>());
        let source_text = read(source);
        let lines: Vec<&str> = source_text.lines().collect();
        let include = format!("#[doc = include_str!(\"../{page}\")]");
        let at = lines.iter().position(|line| *line == include).unwrap();
        let above: Vec<&str> = lines[..at]
            .iter()
            .rev()
            .take_while(|line| line.starts_with("/// ["))
            .copied()
            .collect();
        let given = definitions(&above);
        let missing: Vec<_> = needed.difference(&given).collect();
        assert!(
            missing.is_empty(),
            "{page}: no rustdoc definition in {source} for {missing:?}"
        );
    }
}

#[test]
fn pages_link_by_reference_only() {
    for (page, _) in pages() {
        for (n, line) in read(&page).lines().enumerate() {
            // An inline link's target would be a file for GitHub and a
            // broken path for rustdoc, or the reverse.
            let inline = line.match_indices("](").any(|(at, _)| {
                !line[at + 2..].starts_with("http") && !line.trim_start().starts_with("//")
            });
            assert!(!inline, "{page}:{}: an inline link: {line}", n + 1);
        }
    }
}
