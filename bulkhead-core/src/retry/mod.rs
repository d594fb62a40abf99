//! The retry policy (being written).
