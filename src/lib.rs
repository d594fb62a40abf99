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
//! - [`resilient`] and [`bulkhead`]: the attribute macros;
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
    check_limit, check_range, parse_bool, parse_duration, sleep_blocking,
};
pub use bulkhead_registry::{
    BulkheadHandle, BulkheadSnapshot, CircuitBreakerHandle, CircuitBreakerSnapshot, Conflict,
    DEFAULT_CONFIG, Declarations, Pipeline, PipelineBuilder, RateLimiterHandle,
    RateLimiterSnapshot, Registry, RegistryBuilder, RegistryError, RegistrySnapshot, RetryHandle,
    RetrySnapshot, TimeoutHandle, TimeoutSnapshot,
};

/// Generates a wrapper that implements a trait around any implementation of
/// it, running each method annotated with [`#[bulkhead(...)]`](bulkhead)
/// under its bulkhead.
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
/// compiled out declares no bulkhead.
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
/// Compile errors carry a code. ATR-001, ATR-002, ATR-003 and ATR-006 are
/// described at [`bulkhead`]; besides them:
///
/// | code | when |
/// |---|---|
/// | ATR-002 | `#[resilient]` is given arguments, a method has two `#[bulkhead]`, or `#[bulkhead]` is written inside `#[cfg_attr(..)]` (write it directly) |
/// | ATR-004 | an annotated method does not return `Result<T, E>`, or `E` does not implement `From<Rejection>` (reported once, over the whole return type) |
/// | ATR-007 | the trait cannot be wrapped: an `unsafe trait`; a supertrait other than `Send`, `Sync`, `Unpin`, `Sized`, `UnwindSafe`, `RefUnwindSafe`, `Clone`, `Debug`; items made by a macro; a receiver such as `self: Box<Self>`; `Self` used outside the receiver (`Self::Item` and `<Self as ThisTrait>::Item` are fine); an attribute on a parameter; a method named `delegate` or `into_inner`, which the wrapper's own methods would shadow; `#[bulkhead]` on an associated function or on a method whose future is declared `Unpin`; `#[resilient]` on something else than a trait |
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
/// function, under a bulkhead.
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
/// A function cannot return a registry error. If its bulkhead cannot be
/// resolved (REG-004: `config` names no configuration of the global
/// registry; REG-008: its `name` is taken with another configuration), it
/// runs under a bulkhead of its own made from the attribute's values over
/// the built-in defaults, which is not in the registry, and the error is
/// kept for [`function_policy_errors`]. Install a configured registry with
/// [`Registry::set_global`] before the first call.
///
/// A `const fn` cannot be wrapped (ATR-007), and the function must return
/// `Result<T, E>` (or a future of one) with `E: From<Rejection>` (ATR-004).
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

mod functions;

pub use functions::function_policy_errors;

/// Not public API: what code generated by the attribute macros refers to.
///
/// Everything the generated code names goes through here, with absolute
/// paths, so that it never depends on the user's imports or on modules of
/// theirs called `core` or `std`.
#[doc(hidden)]
pub mod __private;
