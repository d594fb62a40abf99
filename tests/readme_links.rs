//! The READMEs' relative links lead somewhere, on GitHub and on crates.io.
//!
//! crates.io renders a crate's README with its relative links resolved
//! against the `repository` of its Cargo.toml (`.../blob/HEAD/<path>`), so
//! a relative link works there exactly when the file or folder it names
//! exists in the repository, relative to the README. Anchors (`#...`) and
//! absolute URLs are not checked.

use std::path::Path;

/// The targets of the inline links `[text](target)` of `text`.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            if let Some(end) = rest.find(')') {
                found.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
        }
    }
    found
}

#[test]
fn every_relative_link_of_a_readme_names_a_file_of_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readmes = [
        "README.md",
        "bulkhead-core/README.md",
        "bulkhead-registry/README.md",
        "bulkhead-macros/README.md",
    ];
    let mut checked = 0;
    for readme in readmes {
        let path = root.join(readme);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{readme}: {e}"));
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() {
                continue;
            }
            let resolved = path.parent().unwrap().join(file);
            assert!(
                resolved.exists(),
                "{readme}: the link ({target}) names {}, which does not exist",
                resolved.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "only {checked} relative links found: the parser is broken"
    );
}

#[test]
fn the_parser_finds_inline_links_outside_code() {
    let text = "see [a](docs/a.md) and [b](https://x.y)\n```\n[c](no.md)\n```\n";
    assert_eq!(links(text), ["docs/a.md", "https://x.y"]);
}
