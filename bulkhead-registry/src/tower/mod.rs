//! Bulkheads and pipelines as [tower] middleware, for axum, tonic and hyper
//! services (feature `tower`).
//!
//! [`BulkheadLayer`] puts a service behind a [`Bulkhead`]: a request that
//! finds a free slot runs and holds it until its response future completes;
//! a request that finds none is refused at once with
//! [`ServiceError::Unavailable`], which an HTTP server answers with
//! `503 Service Unavailable` and a `Retry-After` header.
//!
//! ```
//! use std::convert::Infallible;
//! use std::future::{Ready, ready};
//! use std::task::{Context, Poll};
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
//! # Ok(())
//! # }
//! ```
//!
//! # Where the slot is taken, and when it goes back
//!
//! - `poll_ready` is the inner service's own: the layer never makes a caller
//!   wait for a slot there. A bulkhead that waited in `poll_ready` would
//!   queue every request of the route behind a slow dependency, which is the
//!   failure the pattern exists to prevent.
//! - `call` takes a free slot, with the same compare-and-swap as
//!   [`Bulkhead::try_enter`], and calls the inner service. If there is none it
//!   returns a future that is ready at once with the refusal: the inner
//!   service is not called and the request is dropped. The bulkhead's
//!   `max_wait` is not used: the layer answers at once. Use a
//!   [`PipelineLayer`] over a pipeline whose bulkhead has a `max_wait` for a
//!   short queue.
//! - The response future holds the slot until the inner future completes,
//!   and gives it back then; dropping the future (a client that went away, a
//!   timeout layer outside) gives it back too. For HTTP, the slot covers the
//!   handler, not the streaming of the response body after it.
//! - A refusal publishes a bulkhead `Rejected` event to the registry's
//!   subscribers (`waited: false`); admitted requests publish nothing.
//!
//! Neither path allocates: the response future is a named type holding the
//! inner future and an [`OwnedBulkheadPermit`](bulkhead_core::OwnedBulkheadPermit),
//! and a refusal is a small `Copy` value (see `BENCHMARKS.md`, "tower
//! layers").
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
//! `tests/axum_service.rs` of the repository: the library itself does not
//! depend on axum.) Where other layers box their errors into
//! `tower::BoxError`, [`Unavailable::find`] finds the refusal in the box.
//!
//! # Pipelines
//!
//! [`PipelineLayer`] runs each request under all of a [`Pipeline`]'s
//! policies, in their fixed order. Its bulkhead waits up to its `max_wait`
//! (without blocking a thread), the inner service is called only once the
//! request holds a slot, and a timeout drops the inner future at its
//! deadline. A pipeline with a retry needs a way to send a request again:
//! [`PipelineLayer::with_replay`]. It allocates one box per request.
//!
//! [tower]: https://docs.rs/tower
//! [`Bulkhead`]: bulkhead_core::Bulkhead
//! [`Bulkhead::try_enter`]: bulkhead_core::Bulkhead::try_enter
//! [`Pipeline`]: crate::Pipeline

mod error;
mod future;
mod layer;
mod replay;
mod service;

pub use error::{ServiceError, Unavailable};
pub use future::{PipelineFuture, ResponseFuture};
pub use layer::{BulkheadLayer, DEFAULT_RETRY_AFTER, PipelineLayer};
pub use replay::{Replay, ReplayWith, SendOnce};
pub use service::{BulkheadService, PipelineService};

#[cfg(test)]
mod tests;
