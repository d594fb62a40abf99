//! The timeout policy (being written).
