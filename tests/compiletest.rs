//! The macros' compile errors and accepted shapes, with trybuild: one
//! mistake per file in `tests/ui/`, each with its committed `.stderr`, and
//! `tests/ui/pass/` for traits that must compile.
//!
//! Compiler messages change between rustc versions, so the `.stderr` files
//! hold for the version recorded in `tests/ui/RUSTC_VERSION` only. On any
//! other version this test prints why and passes without comparing (no
//! other toolchain can be installed here to pin one). To regenerate after a
//! toolchain upgrade: `TRYBUILD=overwrite cargo test --test compiletest`,
//! then write `rustc -V` into `tests/ui/RUSTC_VERSION`.

use std::io::Write;
use std::process::Command;

/// Says why the ui tests are skipped, on the real stderr: libtest would
/// swallow `println!` output of a passing test.
fn skip(reason: &str) {
    let _ = writeln!(std::io::stderr(), "skipping the ui tests: {reason}");
}

#[test]
fn ui() {
    let recorded = include_str!("ui/RUSTC_VERSION").trim();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let current = match Command::new(&rustc).arg("-V").output() {
        Ok(output) if output.status.success() => {
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
        _ => {
            skip(&format!("cannot run `{rustc} -V`"));
            return;
        }
    };
    if current != recorded {
        skip(&format!(
            "their .stderr files were made with `{recorded}`, this is `{current}`"
        ));
        return;
    }
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
