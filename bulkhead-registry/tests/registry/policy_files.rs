//! A new policy is one file of the registry: `src/policy/<policy>.rs`
//! holds its impls and everything the registry names after it, and the
//! other files that name it are the few this test lists (ARCHITECTURE.md,
//! *Adding a policy*), each one the compiler points at. It walks every
//! policy's names (`Retry`, `RetryConfig`, `RetryConfigBuilder`,
//! `RetryHandle`, `RetrySnapshot`, `RetryEvent`, `RetryEventKind`) through
//! the library code of `src/`, tests and comments aside.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use bulkhead_core::keys::PolicyKind;

/// The files besides its own that name every policy, and why.
const EVERY_POLICY: &[&str] = &[
    // Its module, its re-exports, and its arm in `for_kind`.
    "policy/mod.rs",
    // The re-exports of its handle and its snapshot.
    "lib.rs",
    // Its list in `RegistrySnapshot` (`Managed::snapshots` names it).
    "snapshot.rs",
    // Its events (`EventVisitor` names them) and its sample (a match on
    // `PolicyKind`).
    "observe/tracing.rs",
    "observe/metrics/events.rs",
    "observe/metrics/mod.rs",
    // The OpenTelemetry exporter's: its events, and its sample (a match on
    // `PolicyKind`, with the instruments sampled from each policy's state).
    "observe/otel/events.rs",
    "observe/otel/samples.rs",
];

/// The files that name a policy for what it has of its own.
fn own(kind: PolicyKind) -> &'static [&'static str] {
    match kind {
        // Resources and their budgets, fleets, sizing, the tower layer
        // and functions with a bulkhead alone are the bulkhead's.
        PolicyKind::Bulkhead => &[
            "budget.rs",
            "fleet/mod.rs",
            "function/policy.rs",
            // Keyed bulkheads: configured and resolved as bulkheads.
            "keyed/mod.rs",
            "keyed/store.rs",
            // The dashboard counts its refusals from its events.
            "observe/dashboard/sample.rs",
            "observe/metrics/samples.rs",
            "registry/declare.rs",
            "registry/fleet.rs",
            "registry/mod.rs",
            "registry/resources.rs",
            "sizing.rs",
            "tower/layer.rs",
            "tower/retry_after.rs",
            "tower/service.rs",
            "tower/wait.rs",
        ],
        // Gauges sampled from its state.
        PolicyKind::Retry
        | PolicyKind::CircuitBreaker
        | PolicyKind::Timeout
        | PolicyKind::Chaos => &["observe/metrics/samples.rs"],
        // And the dashboard counts its refusals from its events.
        PolicyKind::RateLimiter => &["observe/dashboard/sample.rs", "observe/metrics/samples.rs"],
        PolicyKind::Hedge | PolicyKind::Fallback => &[],
    }
}

/// The library code of `path`: its lines before a test module, comments
/// aside; nothing for a file of tests.
fn library_code(path: &Path) -> String {
    let name = path.file_name().unwrap().to_str().unwrap();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return String::new();
    }
    let text = fs::read_to_string(path).unwrap();
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|l| l.starts_with("mod ") && l.ends_with('{'))
        {
            break;
        }
        code.push_str(line.split("//").next().unwrap_or_default());
        code.push('\n');
    }
    code
}

/// Every `.rs` file under `dir`, by its path from `root`, with its code.
fn files(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.strip_prefix(root).unwrap().to_str().unwrap();
            out.push((name.replace('\\', "/"), library_code(&path)));
        }
    }
}

/// Whether `code` has one of `names` as a word.
fn names_any(code: &str, names: &[String]) -> bool {
    code.split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|word| names.iter().any(|name| name == word))
}

#[test]
fn a_policy_is_named_only_in_its_file_and_the_files_listed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&root, &root, &mut all);
    for kind in PolicyKind::ALL {
        let policy = kind.config_type().strip_suffix("Config").unwrap();
        let names: Vec<String> = ["", "Config", "ConfigBuilder", "Handle", "Snapshot", "Event"]
            .iter()
            .chain(&["EventKind"])
            .map(|suffix| format!("{policy}{suffix}"))
            .collect();
        let its_file = format!("policy/{}.rs", kind.name());
        let naming: BTreeSet<&str> = all
            .iter()
            .filter(|(file, code)| *file != its_file && names_any(code, &names))
            .map(|(file, _)| file.as_str())
            .collect();
        let expected: BTreeSet<&str> = EVERY_POLICY.iter().chain(own(kind)).copied().collect();
        assert_eq!(naming, expected, "the files naming {policy}");
        assert!(all.iter().any(|(file, _)| *file == its_file), "{its_file}");
    }
}
