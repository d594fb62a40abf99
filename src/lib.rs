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
//! The parts:
//!
//! - [`resilient`], and the policy attributes [`bulkhead`], [`retry`],
//!   [`circuit_breaker`], [`timeout`] and [`rate_limiter`];
//! - [`Bulkhead`]: the semaphore itself, shared by sync and async callers;
//! - [`Registry`]: named instances, their configuration, clock and events;
//! - [`Pipeline`]: policies built in code;
//! - [`Rejection`], [`CallError`]: what a refused call returns;
//! - [`ManualClock`]: deterministic time for tests.

#![forbid(unsafe_code)]

pub use bulkhead_core::{
    AcquirePermit, AttemptFailure, BreakerOutcome, BreakerPermit, Bulkhead, BulkheadConfig,
    BulkheadConfigBuilder, BulkheadEvent, BulkheadEventKind, BulkheadFull, BulkheadPermit,
    CallError, CallTimeout, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder,
    CircuitBreakerEvent, CircuitBreakerEventKind, CircuitBreakerMetrics, CircuitOpen, CircuitState,
    Classifier, Clock, ConfigError, Enter, EnterError, ErrorPredicate, Event, EventBus,
    EventStream, ManualClock, OwnedBreakerPermit, OwnedBulkheadPermit, Policies, PolicyContext,
    RateLimited, RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder, RateLimiterEvent,
    RateLimiterEventKind, Rejection, RejectionKind, RejectionKinds, Retry, RetryConfig,
    RetryConfigBuilder, RetryEvent, RetryEventKind, RetryState, Sleep, SlidingWindow, SystemClock,
    Timeout, TimeoutConfig, TimeoutConfigBuilder, TimeoutEvent, TimeoutEventKind, TimeoutFuture,
    Traffic, check_limit, check_range, parse_bool, parse_duration, sleep_blocking,
};
pub use bulkhead_registry::{
    BulkheadHandle, BulkheadSizing, BulkheadSnapshot, Change, CircuitBreakerHandle,
    CircuitBreakerSnapshot, Conflict, DEFAULT_CONFIG, DEFAULT_HEADROOM, Declarations, Diagnosis,
    InstanceEvents, Pipeline, PipelineBuilder, PolicyEvent, PolicySpecs, RateLimiterHandle,
    RateLimiterSnapshot, Registry, RegistryBuilder, RegistryError, RegistrySnapshot, RetryHandle,
    RetrySnapshot, SizingReport, TimeoutHandle, TimeoutSnapshot,
};

/// `tower` layers for bulkheads and pipelines (feature `tower`): a request
/// that finds the bulkhead full waits up to its `max_wait` inside the
/// response future (never in `poll_ready`), and a refusal becomes, through
/// axum, a 503 with `Retry-After`; see `examples/axum_service.rs`.
#[cfg(feature = "tower")]
pub use bulkhead_registry::tower;

/// Policy events as `tracing` events (feature `tracing`) and policy state as
/// `metrics` gauges and counters (feature `metrics`), exported from a thread
/// of their own so that no caller waits on them.
#[cfg(any(feature = "metrics", feature = "tracing"))]
pub use bulkhead_registry::observe;

/// Generates a wrapper that implements a trait around any implementation of
/// it, running each method annotated with policy attributes
/// ([`#[bulkhead]`](bulkhead), [`#[retry]`](retry),
/// [`#[circuit_breaker]`](circuit_breaker), [`#[timeout]`](timeout),
/// [`#[rate_limiter]`](rate_limiter)) under its policies.
///
/// On `pub trait Shop`, `#[resilient]` generates `pub struct
/// ResilientShop<D>` (with the trait's visibility), implementing `Shop` for
/// every `D: Shop`, and:
///
/// - `ResilientShop::new(delegate: D, registry: &Registry) -> Result<Self,
///   RegistryError>`: resolves every policy from `registry`, so that a call
///   never looks anything up. REG-004 (an unknown `config`), REG-008 (a
///   shared `name` resolving to two configurations; the message names both
///   methods) and invalid configured values fail here, and then none of the
///   wrapper's policies is registered: they are declared together;
/// - `delegate(&self) -> &D` and `into_inner(self) -> D`;
/// - `Clone` when `D: Clone` (clones share the same slots) and `Debug` when
///   `D: Debug`.
///
/// Methods without a policy attribute, associated types, associated consts
/// and associated functions delegate unchanged; default methods call the
/// delegate's version. Methods may take `&self`, `&mut self` or `self`, be
/// generic, have lifetimes, and be sync, `async fn`, `fn -> impl
/// Future<Output = Result<..>> (+ Send)` or `fn -> Pin<Box<dyn Future<..>
/// (+ Send)>>`. A method's `#[cfg(..)]` (and the conditions inside its
/// `#[cfg_attr(..)]`) apply to everything generated for it: a method
/// compiled out declares no policy.
///
/// # Policies
///
/// A method takes any subset of the five policy attributes, in any order,
/// each at most once. They always compose in one order, whatever order they
/// are written in:
///
/// ```text
/// Retry( CircuitBreaker( RateLimiter( Timeout( Bulkhead( method ) ) ) ) )
/// ```
///
/// so that a slot is held only while the method runs (never during a retry
/// delay); a rejection by an inner policy is an outcome like any other to
/// the outer ones (retried unless `abort_on` lists its kind, a breaker
/// failure unless `ignore_on` does); the time spent waiting for a slot
/// counts towards the timeout; and a call the bulkhead rejects has already
/// taken a rate-limiter permit. Every policy of a method without `name` has
/// the method's id (see *Instance ids*), so `registry.retry(id)`,
/// `registry.circuit_breaker(id)`, ... find them after `new`.
///
/// A method with `#[bulkhead]` alone takes its slot itself, as described
/// under *Calls*. Any other method holds one [`Policies`], built in `new`
/// from the registry on its clock, and a call runs the delegate through
/// it: `Policies::call` for a sync method, `Policies::call_async` for one
/// returning a future. The outcome is the method's own `Result<T, E>`: a
/// rejection becomes `E` with `From<Rejection>` (no `CallError`, no nested
/// error). `retry_if` and `record_if` are passed to each call as references
/// to the functions they name: no allocation, no lookup. A call that
/// triggers no policy allocates nothing.
///
/// With `#[retry]`, each attempt calls the delegate again, with its own
/// clone of every argument: the arguments must be `Clone` (ATR-012 over the
/// argument's type otherwise; references are `Copy`, so `&str` and `&T`
/// just work). A `&mut self` method is borrowed again by each attempt; an
/// async one lends the delegate to each attempt's future in turn. `#[retry]`
/// cannot call the delegate again, and is refused with ATR-007, on a method
/// taking `self` by value, and on a method whose future may not borrow the
/// wrapper (bound by `'static`, by the lifetime of an argument or by
/// `use<..>`) or, taking arguments, is bound by the receiver's lifetime
/// (`+ '_`). With `#[retry]` an async method always calls the delegate from
/// inside its future, for each attempt: if the trait declares the future
/// `Send`, the receiver and the arguments must be `Send` in the trait's
/// generic context. Without `#[retry]`, the one attempt moves the receiver
/// and the arguments into the call: nothing is cloned.
///
/// # Calls
///
/// A sync method takes a slot (waiting up to `max_wait` on the registry's
/// clock), calls the delegate, and gives the slot back when the delegate
/// returns or panics.
///
/// An async method returns a future that takes its slot when first polled
/// and holds it until the delegate's future completes. Dropping the future
/// frees the slot, or leaves the queue. The delegate's method is called
/// inside that future, once it holds a slot: a rejected call does not call
/// it, nor run what a `fn -> impl Future` implementation does before its
/// `async` part. Until then the future holds the receiver (`&D`, `&mut D`
/// or `D`) and the arguments. Where it cannot hold them, the delegate's
/// method is called at once, when the wrapper's method is called, and only
/// its future waits for the slot (an `async fn` runs none of its body before
/// it is polled, so this matters only for implementations with work before
/// their `async` part):
///
/// - the future is declared `Send` but the receiver or an argument is not
///   known to be `Send` from the trait's bounds: `&self` without a `Sync`
///   supertrait, `&mut self` or `self` without a `Send` supertrait, an
///   argument of a generic or associated type not bounded by `Send`, or of
///   a type that is not `Send` (the type checker decides, in the wrapper's
///   generic implementation);
/// - the future may not borrow the wrapper: it is bound by a lifetime other
///   than `'_` and the receiver's (`+ 'static`, or the `+ 'a` of an
///   argument), by `use<..>`, or it is a boxed `dyn Future` without a
///   lifetime (so `'static`). Such a future also gets its own handle on the
///   bulkhead, at the cost of one reference-count increment per call;
/// - the future is bound by the receiver's lifetime (`+ '_`, `dyn Future +
///   '_` in a box) and the method takes arguments, which may not live as
///   long.
///
/// A `+ Send` in the trait holds for every delegate. A future the trait does
/// not declare `Send` (an `async fn`'s) is `Send` when the delegate's future,
/// the receiver and the arguments are. A future declared `+ Unpin` cannot be
/// wrapped (ATR-007): the wrapper's future, which waits for a slot, is not
/// `Unpin`; a boxed future is.
///
/// A rejected call returns `Err(E::from(Rejection::BulkheadFull(..)))`: the
/// method must return `Result<T, E>` (or an alias of it) with `E:
/// From<Rejection>`. A call with a free slot costs what `Bulkhead::enter`
/// and a call to the delegate cost: no allocation, no lookup, no clock read.
///
/// # Instance ids
///
/// A method without `name` has its own bulkhead, with the id
/// `<module_path>::<Trait>#<method>(<param types>)`: the parameter types
/// without `self`, as written, with spaces removed except after commas and
/// between words, e.g. `shop::Shop#resize(&str, u32)`. Methods with the same
/// `name` share one bulkhead, also across traits, and must resolve to the
/// same configuration.
///
/// # Errors
///
/// Compile errors carry a code. The codes of the attributes' keys (ATR-001,
/// ATR-002, ATR-003, ATR-006, ATR-008, ATR-009, ATR-010, ATR-011) are
/// described at each attribute; besides them:
///
/// | code | when |
/// |---|---|
/// | ATR-002 | `#[resilient]` is given arguments, a method has one policy attribute twice, or a policy attribute is written inside `#[cfg_attr(..)]` (write it directly) |
/// | ATR-004 | an annotated method does not return `Result<T, E>`, or `E` does not implement `From<Rejection>` (reported once, over the whole return type) |
/// | ATR-007 | the trait cannot be wrapped: an `unsafe trait`; a supertrait other than `Send`, `Sync`, `Unpin`, `Sized`, `UnwindSafe`, `RefUnwindSafe`, `Clone`, `Debug`; items made by a macro; a receiver such as `self: Box<Self>`; `Self` used outside the receiver (`Self::Item` and `<Self as ThisTrait>::Item` are fine); an attribute on a parameter; a method named `delegate` or `into_inner`, which the wrapper's own methods would shadow; a policy attribute on an associated function or on a method whose future is declared `Unpin`; `#[retry]` on a method it cannot call again (see *Policies*); `#[resilient]` on something else than a trait |
/// | ATR-012 | with `#[retry]`, an argument that is not `Clone` (over its type) |
///
/// On an error the trait is still emitted (and its wrapper, when the trait
/// can be wrapped), so that one mistake does not cascade into others. A
/// trait that does not parse is reported with the parser's error alone.
///
/// # Examples
///
/// ```
/// use std::future::Future;
/// use bulkhead::{Registry, Rejection, resilient};
///
/// #[derive(Debug)]
/// pub struct DbError(Option<Rejection>);
/// impl From<Rejection> for DbError {
///     fn from(r: Rejection) -> Self { DbError(Some(r)) }
/// }
///
/// #[resilient]
/// pub trait Accounts {
///     /// Reads and writes share the pool's 10 connections.
///     #[bulkhead(name = "db", max_concurrent = 10, max_wait = "50ms")]
///     fn balance(&self, account: u64) -> Result<i64, DbError>;
///
///     #[bulkhead(name = "db", max_concurrent = 10, max_wait = "50ms")]
///     fn deposit(&mut self, account: u64, amount: i64)
///         -> impl Future<Output = Result<(), DbError>> + Send;
/// }
///
/// #[derive(Debug, Default)]
/// struct Memory(std::collections::HashMap<u64, i64>);
///
/// impl Accounts for Memory {
///     fn balance(&self, account: u64) -> Result<i64, DbError> {
///         Ok(self.0.get(&account).copied().unwrap_or(0))
///     }
///     fn deposit(&mut self, account: u64, amount: i64)
///         -> impl Future<Output = Result<(), DbError>> + Send {
///         *self.0.entry(account).or_default() += amount;
///         async { Ok(()) }
///     }
/// }
///
/// let registry = Registry::new();
/// let accounts = ResilientAccounts::new(Memory::default(), &registry)?;
/// assert_eq!(accounts.balance(7).unwrap(), 0);
///
/// let db = registry.bulkhead("db")?;
/// let held: Vec<_> = (0..10).map(|_| db.bulkhead().try_enter().unwrap()).collect();
/// assert!(accounts.balance(7).is_err()); // waited 50ms for one of the 10 slots
/// # drop(held);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(inline)]
pub use bulkhead_macros::resilient;

/// Runs a method of a [`#[resilient]`](resilient) trait, or the body of a
/// function, under a bulkhead: the innermost policy, right around the call,
/// alone or with [`#[retry]`](retry), [`#[circuit_breaker]`](circuit_breaker),
/// [`#[timeout]`](timeout) and [`#[rate_limiter]`](rate_limiter).
///
/// # Keys
///
/// | key | value | default | compile error |
/// |---|---|---|---|
/// | `name` | string | none: the method has its own bulkhead | ATR-002 if not a non-empty string |
/// | `config` | string: a named configuration of the registry | `"default"` | REG-004 at `new` if unknown |
/// | `max_concurrent` | integer, 1 to 2^30 - 1, without a type suffix | 25 | ATR-003 |
/// | `max_wait` | duration string (`"250ms"`, `"1s"`, `"1m 30s"`, `"0"`) | `"0"`: reject at once | ATR-001 |
/// | `enabled` | `true` / `false` (or `"true"` / `"false"`) | `true` | ATR-006 |
/// | `resource` | string | none | ATR-002 if not a non-empty string; REG-010 at `new` if the bulkheads on it would exceed its budget, REG-011 if it has none (see `Registry::resource`) |
///
/// Only the keys written are passed to the registry, which lays them over
/// the named configuration (and lays its per-instance overrides over them).
/// An unknown or repeated key is ATR-002, with a did-you-mean. Every error
/// of an attribute is reported at once, each on its own token.
///
/// # On trait methods
///
/// Inside a `#[resilient]` trait, see [`resilient`]. On a trait without
/// `#[resilient]` the attribute is an error (ATR-005) saying to add it.
///
/// # On functions with a body
///
/// On a free function, or a method in an impl block, `#[bulkhead]` wraps
/// the body: sync `fn`s, `async fn`s and `fn`s returning `impl Future` or
/// `Pin<Box<dyn Future>>` (whose body then runs when called, and whose slot
/// is taken when the future is first polled). The bulkhead is resolved from
/// [`Registry::global`] on the first call and kept in a `static`; later
/// calls cost what `Bulkhead::enter` costs.
///
/// The instance id (unless `name` is given) is
/// `<module_path>::<fn>(<param types>)` for a function without `self`, and
/// `<SelfType>::<fn>(<param types>)` for a method, where `SelfType` is the
/// type as [`std::any::type_name`] writes it, with its path and generic
/// arguments: `my_app::shop::Renderer<u32>::render(&str)`,
/// `(my_app::A, my_app::B)::render()`. (`type_name`'s output is not
/// guaranteed to stay the same across compiler versions: give a `name` to
/// rely on an id.) Each `Self` type has its own bulkhead: every
/// instantiation of a generic impl, and every implementor of a trait's
/// default method. A method compares `type_name::<Self>()` with the type it
/// first resolved on each call; only methods of generic impls and default
/// methods ever run for other types, which they look up in a small map
/// (under a read lock), each type being resolved once. (An associated
/// function without `self` is named like a free function; give it a `name`
/// if two impls in one module have one of the same name.)
///
/// A function cannot return a registry error. If its policies cannot be
/// resolved (REG-004: a `config` names no configuration of the global
/// registry; REG-008: a `name` is taken with another configuration), it
/// runs under policies of its own made from the attributes' values over the
/// built-in defaults, none of which is in the registry, and the error is
/// kept for [`function_policy_errors`]. Install a configured registry with
/// [`Registry::set_global`] before the first call.
///
/// A `const fn` cannot be wrapped (ATR-007), and the function must return
/// `Result<T, E>` (or a future of one) with `E: From<Rejection>` (ATR-004).
///
/// ## With other policy attributes
///
/// A function may carry any of the five policy attributes, in any order;
/// the first to expand applies all of them, composed in the fixed order of
/// [`resilient`]'s *Policies*, each with the function's id unless it has a
/// `name`, all resolved together on the first call (a [`Policies`]). The
/// body then runs from a closure, once per attempt:
///
/// - a sync `fn` or an `async fn`: with `#[retry]`, each attempt binds the
///   parameters to its own clones of the arguments (ATR-012 for an argument
///   that is not `Clone`); without, the one attempt binds them to the
///   arguments themselves. A `return` or `?` in the body ends the attempt
///   with its result;
/// - a `fn` returning a future: the body runs when the function is called,
///   and its future runs under the policies when polled (`#[retry]` is not
///   supported there yet: ATR-007, write an `async fn`).
///
/// Not supported yet, with ATR-007 (`#[bulkhead]` alone supports them, and
/// so does a [`#[resilient]`](resilient) trait's wrapper): a method taking
/// `self` by value (or as `self: Box<Self>` and the like), and an `async
/// fn` taking `&mut self`.
///
/// # Examples
///
/// ```
/// use bulkhead::{Registry, Rejection, bulkhead};
///
/// #[bulkhead(max_concurrent = 2)]
/// fn render(report: &str) -> Result<String, Rejection> {
///     Ok(format!("<h1>{report}</h1>"))
/// }
///
/// struct Renderer;
///
/// impl Renderer {
///     #[bulkhead(name = "renderer", max_concurrent = 4, max_wait = "100ms")]
///     async fn render(&self, report: &str) -> Result<String, Rejection> {
///         Ok(format!("<p>{report}</p>"))
///     }
/// }
///
/// assert_eq!(render("q3")?, "<h1>q3</h1>");
/// let id = format!("{}::render(&str)", module_path!());
/// assert_eq!(Registry::global().bulkhead(&id)?.max_concurrent(), 2);
/// # let _ = Renderer.render("x");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(inline)]
pub use bulkhead_macros::bulkhead;

/// Retries a method of a [`#[resilient]`](resilient) trait, or the body of a
/// function, when an attempt fails: the outermost policy, around
/// [`#[circuit_breaker]`](circuit_breaker), [`#[rate_limiter]`](rate_limiter),
/// [`#[timeout]`](timeout) and [`#[bulkhead]`](bulkhead), whatever order the
/// attributes are written in.
///
/// # Keys
///
/// | key | value | default | compile error |
/// |---|---|---|---|
/// | `name` | string: the retry's instance id | the method's id, shared by its other policies | ATR-002 |
/// | `config` | string: a named retry configuration of the registry | `"default"` | REG-004 at `new` if unknown |
/// | `max_attempts` | integer, at least 1: attempts, the first call included | 3 | ATR-008 |
/// | `wait` | duration string: the wait after the first failed attempt | `"500ms"` | ATR-001 |
/// | `backoff_multiplier` | number, at least 1: each further wait is multiplied by it | 1 | ATR-008 |
/// | `max_wait_interval` | duration string, longer than zero: the longest any wait may be, jitter included; waits at the cap are drawn from `max_wait_interval * (1 - jitter)` to `max_wait_interval` | none | ATR-001, ATR-008 for zero |
/// | `jitter` | number, at least 0 and less than 1 (as in Resilience4j: no wait is zero unless `wait` is): each wait `d` is drawn from `d * (1 ± jitter)`, cut at `max_wait_interval` | 0 | ATR-008 |
/// | `retry_if` | path of a `fn(&E) -> bool`, `E` the method's error type | every error is retried | ATR-011 |
/// | `abort_on` | rejection kinds: `[BulkheadFull, CircuitOpen, Timeout, RateLimited]` | `[]`: every rejection is retried | ATR-009 |
///
/// Numbers are written without a type suffix; every value is checked at
/// compile time exactly as [`RetryConfigBuilder`] checks it, so that no
/// literal can make `new` fail.
///
/// # Attempts
///
/// An attempt that fails with the method's own error is retried if
/// `retry_if` says so; one refused by an inner policy (a full bulkhead, an
/// open breaker, a timeout, no rate-limiter permit) is retried unless its
/// kind is in `abort_on`. Between attempts the call waits on the registry's
/// clock (a sync call blocks its thread; an async call's future waits
/// without blocking one), holding no bulkhead slot. The last attempt's
/// outcome is the method's result.
///
/// Each attempt calls the delegate (or runs the body) again, with its own
/// clone of every argument: arguments must be `Clone` (ATR-012). Where it
/// cannot call it again, `#[retry]` is refused with ATR-007: see
/// [`resilient`]'s *Policies* and [`bulkhead`]'s *With other policy
/// attributes*.
///
/// # Examples
///
/// ```
/// use bulkhead::{Registry, Rejection, resilient};
///
/// #[derive(Debug)]
/// pub enum DbError { Busy(Rejection), Transient, NotFound }
/// impl From<Rejection> for DbError {
///     fn from(r: Rejection) -> Self { DbError::Busy(r) }
/// }
///
/// pub fn is_transient(error: &DbError) -> bool {
///     matches!(error, DbError::Transient)
/// }
///
/// #[resilient]
/// pub trait Accounts {
///     #[retry(max_attempts = 3, wait = "10ms", retry_if = is_transient, abort_on = [BulkheadFull])]
///     #[bulkhead(max_concurrent = 10)]
///     fn balance(&self, account: &str) -> Result<i64, DbError>;
/// }
///
/// struct Flaky(std::sync::atomic::AtomicU32);
///
/// impl Accounts for Flaky {
///     fn balance(&self, account: &str) -> Result<i64, DbError> {
///         match self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
///             0 => Err(DbError::Transient),
///             _ if account == "nobody" => Err(DbError::NotFound),
///             _ => Ok(42),
///         }
///     }
/// }
///
/// let registry = Registry::new();
/// let accounts = ResilientAccounts::new(Flaky(Default::default()), &registry)?;
/// assert_eq!(accounts.balance("alice").unwrap(), 42); // the second attempt
/// assert!(matches!(accounts.balance("nobody"), Err(DbError::NotFound))); // not retried
///
/// let id = format!("{}::Accounts#balance(&str)", module_path!());
/// assert_eq!(registry.retry(&id)?.snapshot().max_attempts, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(inline)]
pub use bulkhead_macros::retry;

/// Runs a method of a [`#[resilient]`](resilient) trait, or the body of a
/// function, behind a circuit breaker: after too many failures (or slow
/// calls) among the recent ones, calls are refused with
/// `Rejection::CircuitOpen` without running, until `wait_in_open` has
/// passed; then a few trial calls decide whether to close it again. It sits
/// inside [`#[retry]`](retry), around [`#[rate_limiter]`](rate_limiter),
/// [`#[timeout]`](timeout) and [`#[bulkhead]`](bulkhead).
///
/// # Keys
///
/// | key | value | default | compile error |
/// |---|---|---|---|
/// | `name` | string: the breaker's instance id | the method's id | ATR-002 |
/// | `config` | string: a named circuit breaker configuration | `"default"` | REG-004 at `new` if unknown |
/// | `failure_rate_threshold` | percentage, more than 0 and at most 100 | 50 | ATR-008 |
/// | `sliding_window` | `"count"` (the last N calls) or `"time"` (the last N seconds) | `"count"` | ATR-010 |
/// | `sliding_window_size` | integer, 1 to 1,000,000 | 100 | ATR-008 |
/// | `minimum_calls` | integer, at least 1: calls recorded before a rate counts | 100 | ATR-008 |
/// | `wait_in_open` | duration string, longer than zero: a call exactly this long after the breaker opened is the first let through | `"60s"` | ATR-001, ATR-008 for zero |
/// | `permitted_calls_in_half_open` | integer, at least 1 | 10 | ATR-008 |
/// | `slow_call_threshold` | duration string, longer than zero: a call longer than this is slow (calls are timed: two clock reads each) | `"60s"` | ATR-001, ATR-008 for zero |
/// | `slow_call_rate_threshold` | percentage, more than 0 and at most 100 (100: a window in which every call was slow opens it) | 100 | ATR-008 |
/// | `record_if` | path of a `fn(&E) -> bool`: which of the method's errors are failures (the others count as successes) | every error | ATR-011 |
/// | `ignore_on` | rejection kinds of the inner policies that are not recorded at all | `[]`: every rejection is a failure | ATR-009 |
///
/// Each attempt is recorded: its duration is measured on the registry's
/// clock, a full bulkhead, a timeout or a missing rate-limiter permit is a
/// failure unless `ignore_on` lists its kind. `registry.circuit_breaker(id)`
/// shows the breaker's state and metrics, and can force it open or reset it.
///
/// # Examples
///
/// ```
/// use bulkhead::{CircuitState, Registry, Rejection, RejectionKind, resilient};
///
/// #[derive(Debug)]
/// pub enum PayError { Refused(Rejection), Down }
/// impl From<Rejection> for PayError {
///     fn from(r: Rejection) -> Self { PayError::Refused(r) }
/// }
///
/// #[resilient]
/// pub trait Payments {
///     #[circuit_breaker(minimum_calls = 2, sliding_window_size = 2, wait_in_open = "30s")]
///     fn charge(&self, cents: u64) -> Result<(), PayError>;
/// }
///
/// struct Down;
/// impl Payments for Down {
///     fn charge(&self, _: u64) -> Result<(), PayError> { Err(PayError::Down) }
/// }
///
/// let registry = Registry::new();
/// let payments = ResilientPayments::new(Down, &registry)?;
/// assert!(matches!(payments.charge(100), Err(PayError::Down)));
/// assert!(matches!(payments.charge(100), Err(PayError::Down)));
/// // Two failures out of two: open. The backend is spared the next calls.
/// match payments.charge(100) {
///     Err(PayError::Refused(r)) => assert_eq!(r.kind(), RejectionKind::CircuitOpen),
///     other => panic!("{other:?}"),
/// }
/// let id = format!("{}::Payments#charge(u64)", module_path!());
/// assert_eq!(registry.circuit_breaker(&id)?.state(), CircuitState::Open);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(inline)]
pub use bulkhead_macros::circuit_breaker;

/// Bounds how long a method of a [`#[resilient]`](resilient) trait, or the
/// body of a function, may take: inside [`#[retry]`](retry),
/// [`#[circuit_breaker]`](circuit_breaker) and
/// [`#[rate_limiter]`](rate_limiter), around [`#[bulkhead]`](bulkhead), so
/// that the time spent waiting for a slot counts.
///
/// # Keys
///
/// | key | value | default | compile error |
/// |---|---|---|---|
/// | `name` | string: the timeout's instance id | the method's id | ATR-002 |
/// | `config` | string: a named timeout configuration | `"default"` | REG-004 at `new` if unknown |
/// | `duration` | duration string, longer than zero | `"1s"` | ATR-001, ATR-008 for zero |
///
/// An async call that has not completed at the deadline (measured on the
/// registry's clock) is dropped there, freeing its bulkhead slot, and ends
/// with `Rejection::Timeout`. A sync call cannot be pre-empted: the timeout
/// bounds its wait for a bulkhead slot (a wait cut short ends with
/// `Rejection::Timeout`); a body that overruns keeps its result and is
/// reported with a timeout event. The wait for a rate-limiter permit comes
/// before the timeout in the fixed order and is not part of it, for sync
/// and async calls alike: the deadline counts from when the permit was
/// granted.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead::{Registry, Rejection, timeout};
///
/// #[timeout(name = "render", duration = "250ms")]
/// async fn render(report: &str) -> Result<String, Rejection> {
///     Ok(format!("<h1>{report}</h1>"))
/// }
///
/// let rendered = tokio::runtime::Builder::new_current_thread()
///     .enable_all()
///     .build()?
///     .block_on(render("q3"))?;
/// assert_eq!(rendered, "<h1>q3</h1>");
/// let timeout = Registry::global().timeout("render")?;
/// assert_eq!(timeout.snapshot().duration, Duration::from_millis(250));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(inline)]
pub use bulkhead_macros::timeout;

/// Limits how often a method of a [`#[resilient]`](resilient) trait, or the
/// body of a function, may be called: `limit_for_period` calls per
/// `refresh_period`. It sits inside [`#[retry]`](retry) and
/// [`#[circuit_breaker]`](circuit_breaker), around [`#[timeout]`](timeout)
/// and [`#[bulkhead]`](bulkhead): a call the bulkhead rejects has already
/// taken a permit.
///
/// # Keys
///
/// | key | value | default | compile error |
/// |---|---|---|---|
/// | `name` | string: the rate limiter's instance id | the method's id | ATR-002 |
/// | `config` | string: a named rate limiter configuration | `"default"` | REG-004 at `new` if unknown |
/// | `limit_for_period` | integer, at least 1 | 50 | ATR-008 |
/// | `refresh_period` | duration string, longer than zero | `"500ns"` | ATR-001, ATR-008 for zero |
/// | `max_wait` | duration string (`"0"`: refuse at once) | `"5s"` | ATR-001 |
///
/// A call without a permit waits for the next period, up to `max_wait`, on
/// the registry's clock (a sync call blocks its thread, an async call's
/// future waits without blocking one), then fails with
/// `Rejection::RateLimited`.
///
/// # Examples
///
/// ```
/// use bulkhead::{Registry, Rejection, RejectionKind, rate_limiter};
///
/// #[rate_limiter(name = "geocoder", limit_for_period = 2, refresh_period = "1h", max_wait = "0")]
/// fn geocode(address: &str) -> Result<usize, Rejection> {
///     Ok(address.len())
/// }
///
/// assert!(geocode("a").is_ok() && geocode("b").is_ok());
/// assert_eq!(geocode("c").unwrap_err().kind(), RejectionKind::RateLimited);
/// assert_eq!(Registry::global().rate_limiter("geocoder")?.snapshot().limit_for_period, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(inline)]
pub use bulkhead_macros::rate_limiter;

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
/// theirs called `core` or `std`.
#[doc(hidden)]
pub mod __private;
