//! Criterion benchmarks of the bulkhead against the floor and its peers.

fn main() {}
