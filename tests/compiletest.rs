//! The macros' compile errors and accepted shapes, with trybuild: one
//! mistake per file in `tests/ui/`, each with its committed `.stderr`, and
//! `tests/ui/pass/` for traits that must compile. The cases of the macro
//! corpus that a one-file binary in this package's edition can hold are
//! here too, each naming its corpus case; `tools/macro-corpus/` keeps the
//! rest.
//!
//! The `pass/` cases run on every toolchain. Compiler messages change
//! between rustc versions, so the `.stderr` files hold for the version
//! recorded in `tests/ui/RUSTC_VERSION` only: on any other version the
//! compile-fail cases are skipped, saying why (no other toolchain can be
//! installed here to pin one). To regenerate after a toolchain upgrade:
//! `TRYBUILD=overwrite cargo test --test compiletest`, then write `rustc -V`
//! into `tests/ui/RUSTC_VERSION`.

use std::io::Write;
use std::process::Command;

/// Says why the compile-fail cases are skipped, on the real stderr: libtest
/// would swallow `println!` output of a passing test.
fn skip(reason: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "skipping the compile-fail ui tests: {reason}"
    );
}

/// Why the `.stderr` files cannot be compared on this toolchain, if they
/// cannot.
fn stderr_mismatch() -> Option<String> {
    let recorded = include_str!("ui/RUSTC_VERSION").trim();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    match Command::new(&rustc).arg("-V").output() {
        Ok(output) if output.status.success() => {
            let current = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            (current != recorded).then(|| {
                format!("their .stderr files were made with `{recorded}`, this is `{current}`")
            })
        }
        _ => Some(format!("cannot run `{rustc} -V`")),
    }
}

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    match stderr_mismatch() {
        None => cases.compile_fail("tests/ui/*.rs"),
        Some(reason) => skip(&reason),
    }
}
