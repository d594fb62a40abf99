//! The circuit_breaker policy (being written).
