//! **bulkhead**: the bulkhead pattern for Rust. Each dependency gets a fixed
//! share of concurrency, so one slow dependency can use up only its own share
//! and the rest of the service keeps working.
//!
//! Annotate a trait's methods, and [`#[resilient]`](resilient) generates a
//! wrapper implementing the same trait around any implementation of it:
//!
//! ```
//! use bulkhead::{Registry, Rejection, resilient};
//!
//! #[derive(Debug)]
//! pub enum ThumbError { Busy(Rejection), Backend(String) }
//! impl From<Rejection> for ThumbError {
//!     fn from(r: Rejection) -> Self { ThumbError::Busy(r) }
//! }
//!
//! #[resilient]
//! pub trait ThumbnailService: Send + Sync {
//!     #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
//!     fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, ThumbError>;
//!
//!     #[bulkhead(name = "thumbnails-async", max_concurrent = 2, max_wait = "1s")]
//!     async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, ThumbError>;
//!
//!     fn name(&self) -> String; // not annotated: plain delegation
//! }
//! # struct Disk;
//! # impl ThumbnailService for Disk {
//! #     fn thumbnail(&self, id: &str) -> Result<Vec<u8>, ThumbError> { Ok(id.into()) }
//! #     async fn thumbnail_async(&self, id: &str) -> Result<Vec<u8>, ThumbError> { Ok(id.into()) }
//! #     fn name(&self) -> String { "disk".into() }
//! # }
//! # let backend = Disk;
//!
//! let registry = Registry::new();
//! // Every policy is resolved here: a conflict fails now, never on a call.
//! let service = ResilientThumbnailService::new(backend, &registry)?;
//!
//! // Four calls at most run `thumbnail` at once; a fifth waits up to 250ms
//! // for a slot, then fails with `Rejection::BulkheadFull`.
//! assert_eq!(service.thumbnail("cat").unwrap(), b"cat");
//!
//! let thumbnails = registry.bulkhead("thumbnails")?;
//! assert_eq!(thumbnails.snapshot().max_concurrent, 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same policies can be built in code, without a trait:
//!
//! ```
//! use bulkhead::{CallError, Pipeline, Registry, Rejection};
//!
//! let registry = Registry::new();
//! let reports = Pipeline::builder(&registry, "reports")
//!     .bulkhead(|b| b.max_concurrent(1))
//!     .build()?;
//!
//! // A slow report holds the only slot...
//! let handle = registry.bulkhead("reports")?;
//! let slow = handle.bulkhead().try_enter()?;
//! // ...so the next report is rejected at once instead of queueing behind it.
//! let next = reports.execute(|| Ok::<_, std::io::Error>("report"));
//! assert!(matches!(next, Err(CallError::Rejected(Rejection::BulkheadFull(_)))));
//!
//! drop(slow);
//! assert_eq!(reports.execute(|| Ok::<_, std::io::Error>("report")).unwrap(), "report");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The parts
//!
//! At the root, what most code writes every day:
//!
//! - [`resilient`](macro@resilient), and the policy attributes
//!   [`bulkhead`](macro@bulkhead), [`retry`](macro@retry),
//!   [`circuit_breaker`](macro@circuit_breaker), [`timeout`](macro@timeout),
//!   [`rate_limiter`](macro@rate_limiter), [`hedge`](macro@hedge),
//!   [`fallback`](macro@fallback) and [`chaos`](macro@chaos);
//! - [`Registry`] (and [`RegistryBuilder`], [`RegistryError`]): named
//!   instances, their configuration, clock and events;
//! - [`Pipeline`]: policies built in code;
//! - [`Rejection`], [`RejectionKind`], [`CallError`]: what a refused call
//!   returns;
//! - [`ManualClock`]: deterministic time for tests;
//! - [`Bulkhead`], the semaphore itself, shared by sync and async callers,
//!   with its configuration ([`BulkheadConfig`]), permits, and the handle
//!   and snapshot the registry gives of it ([`BulkheadHandle`],
//!   [`BulkheadSnapshot`]);
//! - [`KeyedBulkhead`], a limit per key (a tenant, a user) under one
//!   global limit (`registry.keyed_bulkhead::<K>(id)`), with its keys'
//!   own limits ([`KeyLimits`]), its snapshot ([`KeyedSnapshot`],
//!   [`KeyOccupancy`]), its async wait ([`KeyedEnter`]) and why it refused
//!   a call ([`KeyRefusal`]).
//!
//! The other policies, one module each: [`retry`](mod@retry),
//! [`circuit_breaker`](mod@circuit_breaker), [`timeout`](mod@timeout),
//! [`rate_limiter`](mod@rate_limiter), [`hedge`](mod@hedge),
//! [`fallback`](mod@fallback), [`chaos`](mod@chaos) (the policy, its
//! configuration, handle and snapshot). Then by topic: [`rejection`] (the payloads of
//! `Rejection`), [`events`], [`clock`], [`config`] (configuration errors),
//! [`registry`], [`pipeline`] (policies composed by hand), [`sizing`],
//! `tower` (feature `tower`), `observe` (features `tracing`, `metrics`,
//! `opentelemetry`, `dashboard`) and
//! `fleet` (feature `redis`: a resource's budget shared by a fleet of
//! processes).
//! [`guide::paths`] lists every name's module.
//!
//! # Guides
//!
//! - [`guide::bulkhead`]: how a bulkhead behaves, the rules B1 to B14;
//! - [`guide::composition`]: the fixed order of the policies and what
//!   follows from it;
//! - [`guide::configuration`]: keys, sources, precedence and reloads;
//! - `guide::fleet` (feature `redis`): budgets shared by a fleet on Redis;
//! - [`guide::paths`]: where each name lives.
//!
//! Each attribute's page is its reference: keys, errors and examples.
//! These pages are the Markdown files of the repository's `docs/` folder.

#![forbid(unsafe_code)]
#![cfg_attr(bulkhead_docsrs, feature(doc_cfg))]

pub use bulkhead_core::QueueDiscipline;
pub use bulkhead_core::{
    Adaptive, Bulkhead, BulkheadConfig, BulkheadConfigBuilder, BulkheadPermit, CallError,
    CallOutcome, Enter, EnterError, ManualClock, Occupancy, OwnedBulkheadPermit, Priority,
    Rejection, RejectionKind, ShedAt,
};
pub use bulkhead_core::{
    KeyLimits, KeyOccupancy, KeyRefusal, KeyedBulkhead, KeyedEnter, KeyedSnapshot,
};
pub use bulkhead_registry::{
    BulkheadHandle, BulkheadSnapshot, KeyedPipeline, Pipeline, Registry, RegistryBuilder,
    RegistryError,
};

pub mod adaptive;
pub mod chaos;
pub mod circuit_breaker;
pub mod clock;
pub mod config;
pub mod deadline;
pub mod events;
pub mod fallback;
#[cfg(feature = "redis")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "redis")))]
pub mod fleet;
pub mod guide;
pub mod hedge;
pub mod pipeline;
pub mod priority;
pub mod rate_limiter;
pub mod registry;
pub mod rejection;
pub mod retry;
pub mod sizing;
pub mod timeout;

/// `tower` layers for bulkheads and pipelines (feature `tower`): a request
/// that finds the bulkhead full waits up to its `max_wait` inside the
/// response future (never in `poll_ready`), and a refusal becomes, through
/// axum, a 503 with `Retry-After`; see `examples/axum_service.rs`.
#[cfg(feature = "tower")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "tower")))]
pub use bulkhead_registry::tower;

/// Policy events as `tracing` events (feature `tracing`) and policy state as
/// `metrics` gauges and counters (feature `metrics`) or OpenTelemetry
/// instruments and spans (feature `opentelemetry`), exported so that no
/// caller waits on them; a live page of the policies as an axum router
/// (feature `dashboard`).
#[cfg(any(
    feature = "metrics",
    feature = "tracing",
    feature = "opentelemetry",
    feature = "dashboard"
))]
#[cfg_attr(
    bulkhead_docsrs,
    doc(cfg(any(
        feature = "metrics",
        feature = "tracing",
        feature = "opentelemetry",
        feature = "dashboard"
    )))
)]
pub use bulkhead_registry::observe;

// Each attribute's reference is a page of `docs/attributes/`, readable on
// its own: there, its links end in definitions that point to the other pages
// and to docs.rs. The definitions written above each page come first, and
// Markdown keeps a label's first definition, so rustdoc links the same words
// to this crate's items instead.

/// [attr-bulkhead]: macro@bulkhead
/// [attr-retry]: macro@retry
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-timeout]: macro@timeout
/// [attr-rate_limiter]: macro@rate_limiter
/// [attr-hedge]: macro@hedge
/// [attr-fallback]: macro@fallback
/// [`Policies`]: crate::pipeline::Policies
#[doc = include_str!("../docs/attributes/resilient.md")]
#[doc(inline)]
pub use bulkhead_macros::resilient;

/// [attr-resilient]: macro@resilient
/// [attr-retry]: macro@retry
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-timeout]: macro@timeout
/// [attr-rate_limiter]: macro@rate_limiter
/// [`resilient`]: macro@resilient
/// [`Registry::global`]: crate::Registry::global
/// [`std::any::type_name`]: std::any::type_name
/// [`function_policy_errors`]: crate::function_policy_errors
/// [`Registry::set_global`]: crate::Registry::set_global
/// [`Policies`]: crate::pipeline::Policies
#[doc = include_str!("../docs/attributes/bulkhead.md")]
#[doc(inline)]
pub use bulkhead_macros::bulkhead;

/// [attr-resilient]: macro@resilient
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-rate_limiter]: macro@rate_limiter
/// [attr-timeout]: macro@timeout
/// [attr-bulkhead]: macro@bulkhead
/// [`RetryConfigBuilder`]: crate::retry::RetryConfigBuilder
/// [`resilient`]: macro@resilient
/// [`bulkhead`]: macro@bulkhead
#[doc = include_str!("../docs/attributes/retry.md")]
#[doc(inline)]
pub use bulkhead_macros::retry;

/// [attr-resilient]: macro@resilient
/// [attr-retry]: macro@retry
/// [attr-rate_limiter]: macro@rate_limiter
/// [attr-timeout]: macro@timeout
/// [attr-bulkhead]: macro@bulkhead
#[doc = include_str!("../docs/attributes/circuit_breaker.md")]
#[doc(inline)]
pub use bulkhead_macros::circuit_breaker;

/// [attr-resilient]: macro@resilient
/// [attr-retry]: macro@retry
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-rate_limiter]: macro@rate_limiter
/// [attr-bulkhead]: macro@bulkhead
#[doc = include_str!("../docs/attributes/timeout.md")]
#[doc(inline)]
pub use bulkhead_macros::timeout;

/// [attr-resilient]: macro@resilient
/// [attr-retry]: macro@retry
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-timeout]: macro@timeout
/// [attr-bulkhead]: macro@bulkhead
#[doc = include_str!("../docs/attributes/rate_limiter.md")]
#[doc(inline)]
pub use bulkhead_macros::rate_limiter;

/// [attr-resilient]: macro@resilient
/// [attr-retry]: macro@retry
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-rate_limiter]: macro@rate_limiter
/// [attr-timeout]: macro@timeout
/// [attr-bulkhead]: macro@bulkhead
/// [attr-fallback]: macro@fallback
/// [`HedgeConfigBuilder`]: crate::hedge::HedgeConfigBuilder
/// [`Pipeline`]: crate::Pipeline
#[doc = include_str!("../docs/attributes/hedge.md")]
#[doc(inline)]
pub use bulkhead_macros::hedge;

/// [attr-resilient]: macro@resilient
/// [attr-retry]: macro@retry
/// [attr-hedge]: macro@hedge
/// [`Pipeline`]: crate::Pipeline
#[doc = include_str!("../docs/attributes/fallback.md")]
#[doc(inline)]
pub use bulkhead_macros::fallback;

/// [attr-resilient]: macro@resilient
/// [attr-bulkhead]: macro@bulkhead
/// [attr-timeout]: macro@timeout
/// [attr-circuit_breaker]: macro@circuit_breaker
/// [attr-retry]: macro@retry
/// [attr-fallback]: macro@fallback
#[doc = include_str!("../docs/attributes/chaos.md")]
#[doc(inline)]
pub use bulkhead_macros::chaos;

/// The errors met so far resolving the policies of functions with a body
/// (policy attributes outside a `#[resilient]` trait) from
/// [`Registry::global`]: [`Registry::function_policy_errors`] of the global
/// registry.
///
/// Such a function resolves its policies on its first call and cannot
/// return a registry error from it. If resolution fails (REG-004: a `config`
/// is not defined in the global registry; REG-008: it shares a `name` with a
/// differently configured policy), the function still runs, under policies
/// of its own built from the attributes' values over the built-in defaults
/// and left out of the registry (none of its policies is registered), and
/// the error is kept here. Check this list at startup after a first call,
/// or in a test.
///
/// # Examples
///
/// ```
/// use bulkhead::{bulkhead, Rejection};
///
/// #[bulkhead(config = "no-such-config")]
/// fn render() -> Result<(), Rejection> {
///     Ok(())
/// }
///
/// assert!(render().is_ok()); // runs, on a fallback bulkhead
/// let errors = bulkhead::function_policy_errors();
/// assert_eq!(errors[0].code(), "REG-004");
/// ```
pub fn function_policy_errors() -> Vec<RegistryError> {
    Registry::global().function_policy_errors()
}

/// Not public API: what code generated by the attribute macros refers to.
///
/// Everything the generated code names goes through here, with absolute
/// paths, so that it never depends on the user's imports or on modules of
/// theirs called `core` or `std`. Its name carries the version
/// (`__private_0_1_0`): the macros name the one of their own version, so a
/// macro crate of another version fails to compile at once.
#[doc(hidden)]
#[path = "__private/mod.rs"]
pub mod __private_0_1_0;
