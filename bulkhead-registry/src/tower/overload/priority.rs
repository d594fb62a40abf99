//! [`PriorityLayer`]: a server's requests run with the class their caller
//! gave them.

use std::fmt;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use bulkhead_core::{Priority, priority};
use http::HeaderName;
use tower_layer::Layer;
use tower_service::Service;

/// Where a [`PriorityLayer`] finds a request's class.
#[derive(Debug, Clone)]
enum Source {
    Extension,
    Header(HeaderName),
}

/// Runs each request with the class it carries, in its extensions (a
/// [`Priority`] an outer layer put there, such as an authentication layer)
/// or in a header (`critical`, `high`, `normal` or `sheddable`; any other
/// value is ignored): the inner service's `call`, where a
/// [`BulkheadLayer`](super::super::BulkheadLayer) takes its slot, and
/// every poll of its response future.
///
/// The class is a tower layer's: a [`priority::scope`] or
/// [`priority::with`] around or inside the handler's calls, and a
/// bulkhead's own key `priority`, take precedence over it. A request that
/// carries none runs as it would without the layer.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::future::{Ready, ready};
/// use std::task::{Context, Poll};
///
/// use bulkhead_core::{Priority, priority};
/// use bulkhead_registry::tower::PriorityLayer;
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// /// Answers with the class its request runs with.
/// struct Class;
///
/// impl Service<http::Request<()>> for Class {
///     type Response = Option<Priority>;
///     type Error = Infallible;
///     type Future = Ready<Result<Option<Priority>, Infallible>>;
///
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: http::Request<()>) -> Self::Future {
///         ready(Ok(priority::current()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut service = PriorityLayer::header("x-priority".parse().unwrap()).layer(Class);
/// let tagged = |class| http::Request::builder().header("x-priority", class).body(()).unwrap();
/// assert_eq!(service.call(tagged("sheddable")).await.unwrap(), Some(Priority::Sheddable));
/// assert_eq!(service.call(tagged("urgent")).await.unwrap(), None); // ignored
///
/// let mut service = PriorityLayer::from_extension().layer(Class);
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(Priority::Critical);
/// assert_eq!(service.call(request).await.unwrap(), Some(Priority::Critical));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PriorityLayer {
    source: Source,
}

impl PriorityLayer {
    /// A layer taking the class from a [`Priority`] in the request's
    /// extensions.
    pub fn from_extension() -> Self {
        PriorityLayer {
            source: Source::Extension,
        }
    }

    /// A layer taking the class from the header `name`, whose value is a
    /// class's name in lower case (`critical`, `high`, `normal`,
    /// `sheddable`).
    pub fn header(name: HeaderName) -> Self {
        PriorityLayer {
            source: Source::Header(name),
        }
    }

    /// The class `request` carries, if any.
    fn class<B>(&self, request: &http::Request<B>) -> Option<Priority> {
        match &self.source {
            Source::Extension => request.extensions().get::<Priority>().copied(),
            Source::Header(name) => {
                let value = request.headers().get(name)?.as_bytes();
                Priority::ALL
                    .into_iter()
                    .find(|class| class.name().as_bytes() == value)
            }
        }
    }
}

impl<S> Layer<S> for PriorityLayer {
    type Service = PriorityService<S>;

    fn layer(&self, inner: S) -> PriorityService<S> {
        PriorityService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of a [`PriorityLayer`].
#[derive(Debug, Clone)]
pub struct PriorityService<S> {
    inner: S,
    layer: PriorityLayer,
}

impl<S, B> Service<http::Request<B>> for PriorityService<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = PriorityFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let service = &mut self.inner;
        let inner = match self.layer.class(&request) {
            Some(class) => Inner::Classed {
                future: priority::scope_weak(class, weak(class, || service.call(request))),
            },
            None => Inner::Plain {
                future: service.call(request),
            },
        };
        PriorityFuture { inner }
    }
}

/// Runs `f` with `class` set as a tower layer's (there is no closure form
/// of [`priority::scope_weak`]: this polls a future that is ready at once).
fn weak<R>(class: Priority, f: impl FnOnce() -> R) -> R {
    let mut future = pin!(priority::scope_weak(class, async move { f() }));
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        // An async block without an await is ready at its first poll.
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`PriorityService`]: the inner one, each
    /// poll with the request's class.
    #[must_use = "futures do nothing unless polled"]
    pub struct PriorityFuture<F> {
        #[pin]
        inner: Inner<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = Projected]
    enum Inner<F> {
        // The request carries a class.
        Classed { #[pin] future: priority::Prioritized<F> },
        // It carries none.
        Plain { #[pin] future: F },
    }
}

impl<F: Future> Future for PriorityFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.project().inner.project() {
            Projected::Classed { future } => future.poll(cx),
            Projected::Plain { future } => future.poll(cx),
        }
    }
}

impl<F> fmt::Debug for PriorityFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = match &self.inner {
            Inner::Classed { future } => Some(future.class()),
            Inner::Plain { .. } => None,
        };
        f.debug_struct("PriorityFuture")
            .field("class", &class)
            .finish_non_exhaustive()
    }
}
