//! What each policy's refusal carries: the payloads of [`Rejection`]'s
//! variants, and [`RejectionKinds`], a set of kinds.
//!
//! `Rejection::BulkheadFull(BulkheadFull)`, `Rejection::CircuitOpen(CircuitOpen)`,
//! `Rejection::Timeout(CallTimeout)`, `Rejection::RateLimited(RateLimited)`,
//! `Rejection::Injected(InjectedFault)` and
//! `Rejection::DeadlineExceeded(DeadlineExceeded)`:
//! each payload names the refusing instance ([`BulkheadFull::instance`], ...).
//! Most code matches on [`Rejection`] or on its [`kind`](crate::Rejection::kind)
//! and never names them; [`Bulkhead::try_enter`] returns a [`BulkheadFull`]
//! on its own.
//!
//! All are small `Copy` values naming their instance by a `&'static str`:
//! building one allocates nothing and captures no backtrace.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Bulkhead, BulkheadConfig, Rejection, RejectionKind};
//! use bulkhead::rejection::BulkheadFull;
//!
//! let reports = Bulkhead::new("reports", BulkheadConfig::builder().max_concurrent(1).build()?);
//! let _held = reports.try_enter()?;
//! let full: BulkheadFull = reports.try_enter().unwrap_err();
//! assert_eq!(full.instance(), "reports");
//!
//! let rejection = Rejection::from(full);
//! assert!(matches!(rejection, Rejection::BulkheadFull(_)));
//! assert_eq!(rejection.kind(), RejectionKind::BulkheadFull);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Rejection`]: crate::Rejection
//! [`Bulkhead::try_enter`]: crate::Bulkhead::try_enter

pub use bulkhead_core::{
    BulkheadFull, CallTimeout, CircuitOpen, DeadlineExceeded, InjectedFault, RateLimited,
    RejectionKinds,
};
