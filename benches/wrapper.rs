//! Criterion benchmarks of generated wrappers against hand-written code.

fn main() {}
