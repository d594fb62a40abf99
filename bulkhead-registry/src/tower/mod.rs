//! Bulkheads and pipelines as [tower] middleware, for axum, tonic and hyper
//! services (feature `tower`).
//!
//! [`BulkheadLayer`] puts a service behind a [`Bulkhead`]: a request that
//! finds a free slot runs and holds it until its response future completes.
//! A request that finds none waits for one up to the bulkhead's `max_wait`,
//! inside its response future; if none comes (at once when `max_wait` is
//! zero, the default) it is refused with [`ServiceError::Unavailable`],
//! which an HTTP server answers with `503 Service Unavailable` and a
//! `Retry-After` header.
//!
//! ```
//! use std::convert::Infallible;
//! use std::future::{Ready, ready};
//! use std::task::{Context, Poll};
//! use std::time::Duration;
//!
//! use bulkhead_core::BulkheadConfig;
//! use bulkhead_registry::Registry;
//! use bulkhead_registry::tower::{BulkheadLayer, ServiceError};
//! use tower_layer::Layer;
//! use tower_service::Service;
//!
//! /// A reports backend that answers at once.
//! #[derive(Clone)]
//! struct Reports;
//!
//! impl Service<&'static str> for Reports {
//!     type Response = String;
//!     type Error = Infallible;
//!     type Future = Ready<Result<String, Infallible>>;
//!
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
//!         Poll::Ready(Ok(()))
//!     }
//!     fn call(&mut self, id: &'static str) -> Self::Future {
//!         ready(Ok(format!("report {id}")))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::new();
//! let bulkhead = registry.bulkhead_policy(
//!     "reports",
//!     "my_app::routes",
//!     &BulkheadConfig::builder().max_concurrent(1),
//! )?;
//! let mut service = BulkheadLayer::new(bulkhead.clone()).layer(Reports);
//!
//! // A slow report holds the only slot...
//! let slow = bulkhead.try_enter()?;
//! // ...so the next request is refused at once, without calling `Reports`.
//! let ServiceError::Unavailable(refused) = service.call("r-2").await.unwrap_err();
//! assert_eq!(refused.rejection().instance(), "reports");
//! assert_eq!(refused.retry_after_secs(), 1); // the Retry-After header's value
//!
//! drop(slow);
//! assert_eq!(service.call("r-3").await?, "report r-3");
//!
//! // With a `max_wait`, a request that finds no free slot waits for one.
//! let exports = registry.bulkhead_policy(
//!     "exports",
//!     "my_app::routes",
//!     &BulkheadConfig::builder().max_concurrent(1).max_wait(Duration::from_millis(250)),
//! )?;
//! let mut service = BulkheadLayer::new(exports.clone()).layer(Reports);
//! let slow = exports.try_enter()?;
//! let waiting = service.call("e-1"); // queued: `Reports` is not called yet
//! assert_eq!(exports.waiting_calls(), 1);
//! drop(slow); // the slot goes to the waiting request, which now runs
//! assert_eq!(waiting.await?, "report e-1");
//! # Ok(())
//! # }
//! ```
//!
//! # Where the slot is taken, and when it goes back
//!
//! - `poll_ready` is the inner service's own: the layer never makes a caller
//!   wait for a slot there. A bulkhead that waited in `poll_ready` would
//!   hold up every request of the route, and the service that axum or hyper
//!   clones for each connection, behind one full bulkhead; waiting in the
//!   response future makes the wait each request's own.
//! - `call` takes a free slot, with the same compare-and-swap as
//!   [`Bulkhead::try_enter`], and calls the inner service.
//! - If there is none and the bulkhead's `max_wait` is zero, `call` returns
//!   a future that is ready at once with the refusal: the inner service is
//!   not called and the request is dropped.
//! - If there is none and the bulkhead has a `max_wait`, `call` puts the
//!   request in the bulkhead's queue, in the order of the calls (the queue
//!   sync and async callers of the bulkhead share, see
//!   [`Bulkhead::enter_async`]), and returns a future that holds the request
//!   and the instance of the inner service that was polled ready for it
//!   (hence `S: Clone`: the service keeps a clone for the next request).
//!   When a slot is released, the oldest waiter receives it, and its
//!   response future calls the inner service at its next poll. When
//!   `max_wait` passes first, measured on the registry's clock (a
//!   `ManualClock` in tests), the future resolves to the same refusal as an
//!   immediate one. Dropping the future while it waits leaves the queue at
//!   once; the inner service is never called for it.
//! - The response future holds the slot until the inner future completes,
//!   and gives it back then; dropping the future (a client that went away, a
//!   timeout layer outside) gives it back too. For HTTP, the slot covers the
//!   handler, not the streaming of the response body after it.
//! - A refusal publishes a bulkhead `Rejected` event to the registry's
//!   subscribers (`waited: true` after a wait); admitted requests publish
//!   nothing.
//!
//! A request that gets a free slot and a request refused at once allocate
//! nothing: the response future is a named type holding the inner future
//! and an [`OwnedBulkheadPermit`](bulkhead_core::OwnedBulkheadPermit), and a
//! refusal is a small `Copy` value (see `BENCHMARKS.md`, "tower layers"). A
//! request that waits allocates one box, its place in the queue.
//!
//! # The `Retry-After` hint
//!
//! A refusal carries a hint, [`Unavailable::retry_after`], for the
//! `Retry-After` header: the layer's own ([`BulkheadLayer::retry_after`],
//! [`DEFAULT_RETRY_AFTER`] of one second unless set), unless the registry
//! tracks sizing (`Registry::builder().track_sizing(true)`) and some call of
//! the bulkhead has completed. Then the bulkhead knows W, how long its calls
//! hold a slot on average (over its life), and at the refusal L calls in
//! flight, its limit N and Q requests queued. By Little's law (L = X × W)
//! slots come free at X = L / W per second, and a client that comes back
//! needs k = max(L − N, 0) + Q + 1 of them (the queue goes first), so the
//! hint is
//!
//! ```text
//! Retry-After = ⌈k × W / L⌉ seconds
//! ```
//!
//! no less than the layer's hint and no more than [`MAX_RETRY_AFTER`] (one
//! minute, or the layer's hint if longer). For example, 3 slots held 1.5 s
//! on average with 2 requests queued: ⌈3 × 1.5 / 3⌉ = 2 seconds.
//! [`PipelineLayer`] does the same for a refusal by the pipeline's
//! bulkhead; its other refusals carry the layer's hint.
//!
//! # Answering 503 with `Retry-After` (axum)
//!
//! The services' error is [`ServiceError<E>`]: `Unavailable` for a refusal,
//! `Inner(E)` for the inner service's own error. axum wants services that
//! cannot fail, so a `HandleErrorLayer` outside the bulkhead turns the
//! refusal into a response. With axum handlers `E` is `Infallible`, and the
//! refusal is the only case:
//!
//! ```ignore
//! use std::convert::Infallible;
//! use axum::{error_handling::HandleErrorLayer, http::{StatusCode, header}, response::IntoResponse};
//! use bulkhead_registry::tower::{BulkheadLayer, ServiceError};
//! use tower::ServiceBuilder;
//!
//! async fn unavailable(error: ServiceError<Infallible>) -> impl IntoResponse {
//!     let ServiceError::Unavailable(refused) = error;
//!     (
//!         StatusCode::SERVICE_UNAVAILABLE,
//!         [(header::RETRY_AFTER, refused.retry_after_secs().to_string())],
//!         refused.to_string(),
//!     )
//! }
//!
//! let app = Router::new().route(
//!     "/reports",
//!     get(report).layer(
//!         ServiceBuilder::new()
//!             .layer(HandleErrorLayer::new(unavailable))
//!             .layer(BulkheadLayer::new(reports_bulkhead)),
//!     ),
//! );
//! ```
//!
//! (This block is compiled and run as `examples/axum_service.rs` and
//! `extras/tests/axum_service.rs` of the repository: the library itself does not
//! depend on axum.) Where other layers box their errors into
//! `tower::BoxError`, [`Unavailable::find`] finds the refusal in the box.
//!
//! # Pipelines
//!
//! [`PipelineLayer`] runs each request under all of a [`Pipeline`]'s
//! policies, in their fixed order. Its bulkhead waits up to its `max_wait`
//! (without blocking a thread) as a [`BulkheadLayer`]'s does, except that
//! the request joins the queue at the future's first poll rather than in
//! `call`; the inner service is called only once the request holds a slot,
//! and a timeout drops the inner future at its deadline (also while it
//! waits for a slot: the wait counts towards the timeout). A pipeline with
//! a retry or a hedge needs a way to send a request again:
//! [`PipelineLayer::with_replay`] ([`PipelineLayer::new`] refuses it with
//! [`RetryNeedsReplay`], REG-012). It allocates one box per request.
//!
//! # Deadlines, classes and pushback
//!
//! Four layers carry SPEC section 11 over HTTP and gRPC:
//!
//! - [`DeadlineLayer`] (server side) reads the caller's deadline from
//!   `grpc-timeout` (or a millisecond header it is given, with
//!   [`DeadlineHeader`]), capped by `.max(..)`, and runs the inner service's
//!   `call` and every poll of its future under `bulkhead::deadline::scope`:
//!   every wait below it is cut to the time left, and a [`PipelineLayer`]
//!   refuses a request that cannot start in time with `DeadlineExceeded` (a
//!   [`BulkheadLayer`]'s refusal at the deadline stays `BulkheadFull`).
//! - [`PriorityLayer`] gives a request its class from a `Priority` in its
//!   extensions or from a header (`critical`, `high`, `normal`,
//!   `sheddable`); an attribute's or a scope's class beats it.
//! - [`PropagateDeadlineLayer`] (client side) writes the time left into the
//!   outgoing request (rounded down, never raising a shorter value already
//!   there) and refuses a request with no time left before it is sent.
//! - [`PushbackLayer`] (client side) turns a `429`/`503` with `Retry-After`,
//!   or any response with `grpc-retry-pushback-ms` but a `grpc-status` of
//!   0, into a [`PushedBack`] error that implements
//!   `bulkhead::retry::Pushback`, so a retry above it waits at least that
//!   long, or gives up past its `max_wait_interval` or when told not to
//!   retry.
//!
//! `extras/tests/tonic_deadline.rs` runs them between a real tonic client
//! and server over loopback.
//!
//! [tower]: https://docs.rs/tower
//! [`Bulkhead`]: bulkhead_core::Bulkhead
//! [`Bulkhead::try_enter`]: bulkhead_core::Bulkhead::try_enter
//! [`Bulkhead::enter_async`]: bulkhead_core::Bulkhead::enter_async
//! [`Pipeline`]: crate::Pipeline

mod error;
mod future;
mod keyed;
mod layer;
mod replay;
mod retry_after;
mod service;
mod wait;

pub use error::{RetryNeedsReplay, ServiceError, Unavailable};
pub use future::{PipelineFuture, ResponseFuture};
pub use keyed::{KeyedBulkheadLayer, KeyedBulkheadService};
pub use layer::{BulkheadLayer, PipelineLayer};
pub use replay::{Replay, ReplayWith, SendOnce};
pub use retry_after::{DEFAULT_RETRY_AFTER, MAX_RETRY_AFTER};
pub use service::{BulkheadService, PipelineService};

// Deadlines, classes and pushback over HTTP and gRPC (issue 30).
mod overload;
pub use overload::{
    DeadlineFuture, DeadlineHeader, DeadlineLayer, DeadlineService, PROPAGATE_DEADLINE,
    PriorityFuture, PriorityLayer, PriorityService, PropagateDeadline, PropagateDeadlineLayer,
    PropagateFuture, PushbackError, PushbackFuture, PushbackLayer, PushbackService, PushedBack,
    grpc_timeout,
};

#[cfg(test)]
mod tests;
