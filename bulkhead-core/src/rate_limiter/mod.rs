//! The rate_limiter policy (being written).
