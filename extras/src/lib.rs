//! Nothing: this package only holds targets (see its Cargo.toml), the
//! bulkhead crate's benchmarks against its peers, its axum examples and
//! their HTTP tests, which need crates the facade's first build should not
//! compile.
