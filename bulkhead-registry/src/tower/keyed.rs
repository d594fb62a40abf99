//! [`KeyedBulkheadLayer`]: a limit per key (a tenant, a user) of the
//! requests, under one global limit, as a tower layer.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{BulkheadFull, InstanceTelemetry, KeyedBulkhead, Rejection};
use tower_layer::Layer;
use tower_service::Service;

use super::error::{ServiceError, Unavailable};
use super::future::{ResponseFuture, Timing};
use super::retry_after::DEFAULT_RETRY_AFTER;
use super::wait::Queued;
use crate::error::RegistryError;
use crate::keyed::BulkheadKey;
use crate::registry::Registry;

/// Runs every request of the services it wraps through a
/// [`KeyedBulkhead`], under the key its extractor reads from the request
/// (a tenant id from a header, the caller's identity from an extension):
/// a request is admitted while its key holds fewer than its `per_key`
/// slots and all keys together fewer than `max_concurrent`, and waits up
/// to the bulkhead's `max_wait` otherwise, inside the response future. A
/// request that gets no slot is refused with
/// [`ServiceError::Unavailable`](super::ServiceError::Unavailable), as a
/// [`BulkheadLayer`](super::BulkheadLayer)'s: a 503 with `Retry-After` (the
/// layer's hint, [`DEFAULT_RETRY_AFTER`] unless set).
///
/// The extractor runs once per request, in `call`; it should be cheap (a
/// header lookup) and map requests that carry no key to a key of their own
/// (an "anonymous" tenant), which then shares one limit.
///
/// A request admitted or refused at once allocates nothing; with a
/// `max_wait`, a request that finds no free slot of its key allocates one
/// box (its place in the queue).
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::future::{Ready, ready};
/// use std::task::{Context, Poll};
///
/// use bulkhead_core::{BulkheadConfig, KeyedBulkhead};
/// use bulkhead_registry::tower::{KeyedBulkheadLayer, ServiceError};
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// /// A request: a tenant and what it asks for.
/// struct Request { tenant: String, path: &'static str }
///
/// #[derive(Clone)]
/// struct Api;
///
/// impl Service<Request> for Api {
///     type Response = String;
///     type Error = Infallible;
///     type Future = Ready<Result<String, Infallible>>;
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, request: Request) -> Self::Future {
///         ready(Ok(format!("{} for {}", request.path, request.tenant)))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = BulkheadConfig::builder().max_concurrent(10).per_key(1).build()?;
/// let tenants: KeyedBulkhead<String> = KeyedBulkhead::new("api", config);
/// let layer = KeyedBulkheadLayer::new(tenants.clone(), |r: &Request| r.tenant.clone());
/// let mut service = layer.layer(Api);
///
/// let busy = tenants.try_enter("acme")?; // acme's one slot is taken
/// let request = |tenant: &str| Request { tenant: tenant.to_owned(), path: "/report" };
/// let ServiceError::Unavailable(refused) = service.call(request("acme")).await.unwrap_err();
/// assert_eq!(refused.rejection().instance(), "api");
/// assert_eq!(service.call(request("globex")).await?, "/report for globex");
/// drop(busy);
/// assert_eq!(service.call(request("acme")).await?, "/report for acme");
/// # Ok(())
/// # }
/// ```
pub struct KeyedBulkheadLayer<K, F> {
    keyed: KeyedBulkhead<K>,
    key: F,
    retry_after: Duration,
}

impl<K, F: Clone> Clone for KeyedBulkheadLayer<K, F> {
    fn clone(&self) -> Self {
        KeyedBulkheadLayer {
            keyed: self.keyed.clone(),
            key: self.key.clone(),
            retry_after: self.retry_after,
        }
    }
}

impl<K, F> KeyedBulkheadLayer<K, F> {
    /// A layer over `keyed`, reading each request's key with `key`.
    pub fn new(keyed: KeyedBulkhead<K>, key: F) -> Self {
        KeyedBulkheadLayer {
            keyed,
            key,
            retry_after: DEFAULT_RETRY_AFTER,
        }
    }

    /// A layer over the registry's keyed bulkhead `id` (made from its
    /// configuration on first use: see
    /// [`Registry::keyed_bulkhead`](crate::Registry::keyed_bulkhead)).
    ///
    /// # Errors
    ///
    /// As [`Registry::keyed_bulkhead`](crate::Registry::keyed_bulkhead):
    /// REG-018 if `id` is a plain bulkhead or keyed by another type.
    pub fn from_registry<Req>(registry: &Registry, id: &str, key: F) -> Result<Self, RegistryError>
    where
        K: BulkheadKey,
        F: Fn(&Req) -> K,
    {
        Ok(KeyedBulkheadLayer::new(
            registry.keyed_bulkhead::<K>(id)?,
            key,
        ))
    }

    /// Sets the `Retry-After` hint of refusals ([`DEFAULT_RETRY_AFTER`]
    /// unless set).
    #[must_use]
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// The keyed bulkhead.
    pub fn keyed_bulkhead(&self) -> &KeyedBulkhead<K> {
        &self.keyed
    }
}

impl<K, F> fmt::Debug for KeyedBulkheadLayer<K, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBulkheadLayer")
            .field("keyed", &self.keyed)
            .field("retry_after", &self.retry_after)
            .finish_non_exhaustive()
    }
}

impl<S, K, F: Clone> Layer<S> for KeyedBulkheadLayer<K, F> {
    type Service = KeyedBulkheadService<S, K, F>;

    fn layer(&self, inner: S) -> Self::Service {
        KeyedBulkheadService {
            inner,
            telemetry: self.keyed.telemetry(),
            keyed: self.keyed.clone(),
            key: self.key.clone(),
            retry_after: self.retry_after,
        }
    }
}

/// A service whose calls each hold a slot of their key in a
/// [`KeyedBulkhead`]; made by a [`KeyedBulkheadLayer`].
///
/// `poll_ready` is the inner service's (the layer never waits there).
/// `call` reads the request's key, takes a free slot of it and calls the
/// inner service; with none free, it refuses at once (`max_wait` zero) or
/// queues the request, and the response future calls the instance of the
/// inner service polled ready for it once the slot is there (hence
/// `S: Clone`). The response future holds the slot until it completes or
/// is dropped.
pub struct KeyedBulkheadService<S, K, F> {
    inner: S,
    keyed: KeyedBulkhead<K>,
    key: F,
    retry_after: Duration,
    /// The histograms of the keyed bulkhead's instance in its registry.
    telemetry: Option<Arc<InstanceTelemetry>>,
}

impl<S: Clone, K, F: Clone> Clone for KeyedBulkheadService<S, K, F> {
    fn clone(&self) -> Self {
        KeyedBulkheadService {
            telemetry: self.telemetry.clone(),
            inner: self.inner.clone(),
            keyed: self.keyed.clone(),
            key: self.key.clone(),
            retry_after: self.retry_after,
        }
    }
}

impl<S, K, F> KeyedBulkheadService<S, K, F> {
    /// The keyed bulkhead.
    pub fn keyed_bulkhead(&self) -> &KeyedBulkhead<K> {
        &self.keyed
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: fmt::Debug, K, F> fmt::Debug for KeyedBulkheadService<S, K, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBulkheadService")
            .field("inner", &self.inner)
            .field("keyed", &self.keyed)
            .field("retry_after", &self.retry_after)
            .finish_non_exhaustive()
    }
}

impl<S, K, F, Req> Service<Req> for KeyedBulkheadService<S, K, F>
where
    S: Service<Req> + Clone,
    K: Hash + Eq + Clone + Send + Sync + 'static,
    F: Fn(&Req) -> K,
{
    type Response = S::Response;
    type Error = ServiceError<S::Error>;
    type Future = ResponseFuture<S, Req>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ServiceError::Inner)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let timing = self.telemetry.as_ref().and_then(Timing::start);
        let key = (self.key)(&request);
        let hint = self.retry_after;
        let refusal = move |full: BulkheadFull| Unavailable::new(Rejection::from(full), hint);
        let entered = if self.keyed.max_wait().is_zero() {
            self.keyed.try_enter_owned(&key).map_err(refusal)
        } else if let Some(permit) = self.keyed.try_enter_owned_if_free(&key) {
            Ok(permit)
        } else {
            let keyed = self.keyed.clone();
            let mut queued: Queued =
                Box::pin(async move { keyed.enter_owned_async(&key).await.map_err(refusal) });
            match queued
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                Poll::Ready(entered) => entered,
                Poll::Pending => {
                    return ResponseFuture::waiting(queued, &mut self.inner, request, timing);
                }
            }
        };
        ResponseFuture::at_once(entered, &mut self.inner, request, timing)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::{Future, Ready, ready};
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use bulkhead_core::{BulkheadConfig, KeyedBulkhead, ManualClock, PolicyContext};
    use tower_layer::Layer;
    use tower_service::Service;

    use super::KeyedBulkheadLayer;
    use crate::tower::ServiceError;

    #[derive(Clone)]
    struct Echo;

    impl Service<(u32, &'static str)> for Echo {
        type Response = &'static str;
        type Error = Infallible;
        type Future = Ready<Result<&'static str, Infallible>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, (_, body): (u32, &'static str)) -> Self::Future {
            ready(Ok(body))
        }
    }

    fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn keyed(max_wait: Duration, clock: &ManualClock) -> KeyedBulkhead<u32> {
        let config = BulkheadConfig::builder()
            .max_concurrent(2)
            .per_key(1)
            .max_wait(max_wait)
            .build()
            .unwrap();
        KeyedBulkhead::with_context("api", config, PolicyContext::new(Arc::new(clock.clone())))
    }

    #[test]
    fn a_layer_over_the_registrys_keyed_bulkhead_shares_its_slots() {
        let registry = crate::Registry::new();
        let layer =
            KeyedBulkheadLayer::from_registry(&registry, "api", |r: &(u32, &'static str)| {
                u64::from(r.0)
            })
            .unwrap();
        let mut service = layer.layer(Echo);
        let keyed = registry.keyed_bulkhead::<u64>("api").unwrap();
        let held: Vec<_> = (0..keyed.per_key())
            .map(|_| keyed.try_enter(&1).unwrap())
            .collect();
        assert!(matches!(
            poll(pin!(service.call((1, "a")))),
            Poll::Ready(Err(ServiceError::Unavailable(_)))
        ));
        drop(held);
        assert!(matches!(
            poll(pin!(service.call((1, "b")))),
            Poll::Ready(Ok("b"))
        ));
        // Another key type for the same id: REG-018.
        let other =
            KeyedBulkheadLayer::from_registry(&registry, "api", |r: &(u32, &'static str)| {
                r.0.to_string()
            });
        assert_eq!(other.unwrap_err().code(), "REG-018");
    }

    /// While the registry's histograms record, the layer records each
    /// request under the keyed bulkhead's instance: admitted and refused.
    #[test]
    fn a_keyed_layer_records_its_requests_while_the_histograms_record() {
        use bulkhead_core::HistogramKind;

        let registry = crate::Registry::new();
        let layer =
            KeyedBulkheadLayer::from_registry(&registry, "api", |r: &(u32, &'static str)| {
                u64::from(r.0)
            })
            .unwrap();
        let mut service = layer.layer(Echo);
        registry.telemetry().record();
        let keyed = registry.keyed_bulkhead::<u64>("api").unwrap();
        let held: Vec<_> = (0..keyed.per_key())
            .map(|_| keyed.try_enter(&1).unwrap())
            .collect();
        assert!(poll(pin!(service.call((1, "a")))).is_ready());
        drop(held);
        assert!(matches!(
            poll(pin!(service.call((1, "b")))),
            Poll::Ready(Ok("b"))
        ));
        let read: Vec<(HistogramKind, String, u64)> = registry
            .telemetry()
            .histograms()
            .iter()
            .filter(|h| h.instance() == "api")
            .map(|h| (h.kind(), h.outcome().to_owned(), h.histogram().count()))
            .collect();
        for expected in [
            (HistogramKind::CallDuration, "success", 1),
            (HistogramKind::CallDuration, "bulkhead_full", 1),
            (HistogramKind::SlotWait, "admitted", 1),
            (HistogramKind::SlotWait, "rejected", 1),
        ] {
            assert!(
                read.contains(&(expected.0, expected.1.to_owned(), expected.2)),
                "{expected:?} not in {read:?}"
            );
        }
    }

    #[test]
    fn a_tenant_at_its_limit_is_refused_and_others_pass() {
        let clock = ManualClock::new();
        let tenants = keyed(Duration::ZERO, &clock);
        let mut service =
            KeyedBulkheadLayer::new(tenants.clone(), |r: &(u32, &'static str)| r.0).layer(Echo);
        let busy = tenants.try_enter(&1).unwrap();
        let refused = poll(pin!(service.call((1, "a"))));
        let Poll::Ready(Err(ServiceError::Unavailable(unavailable))) = refused else {
            panic!("tenant 1 was not refused: {refused:?}");
        };
        assert_eq!(unavailable.rejection().instance(), "api");
        assert_eq!(unavailable.retry_after_secs(), 1);
        assert!(matches!(
            poll(pin!(service.call((2, "b")))),
            Poll::Ready(Ok("b"))
        ));
        drop(busy);
        assert!(matches!(
            poll(pin!(service.call((1, "c")))),
            Poll::Ready(Ok("c"))
        ));
        assert_eq!(tenants.concurrent_calls(), 0);
    }

    #[test]
    fn a_waiting_request_is_served_when_its_key_frees_and_a_dropped_one_leaves() {
        let clock = ManualClock::new();
        let tenants = keyed(Duration::from_secs(1), &clock);
        let mut service =
            KeyedBulkheadLayer::new(tenants.clone(), |r: &(u32, &'static str)| r.0).layer(Echo);
        let busy = tenants.try_enter_owned(&1).unwrap();
        let mut waiting = Box::pin(service.call((1, "w")));
        assert!(poll(waiting.as_mut()).is_pending());
        assert_eq!(tenants.waiting_calls(), 1);
        let dropped = Box::pin(service.call((1, "d")));
        drop(dropped);
        assert_eq!(
            tenants.waiting_calls(),
            1,
            "a dropped request leaves the queue"
        );
        drop(busy);
        assert!(matches!(poll(waiting.as_mut()), Poll::Ready(Ok("w"))));
        // One that waits past max_wait is refused.
        let busy = tenants.try_enter_owned(&1).unwrap();
        let mut late = Box::pin(service.call((1, "l")));
        assert!(poll(late.as_mut()).is_pending());
        clock.advance(Duration::from_secs(1));
        assert!(matches!(
            poll(late.as_mut()),
            Poll::Ready(Err(ServiceError::Unavailable(_)))
        ));
        drop(busy);
        assert_eq!(tenants.concurrent_calls(), 0);
        assert_eq!(tenants.waiting_calls(), 0);
    }
}
