//! What the macro tests share: an error type, a backend whose calls can be
//! held open, a `#[resilient]` trait over it, and polling helpers.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bulkhead::{ManualClock, Registry, Rejection, RejectionKind, resilient};
use tokio::sync::oneshot;

/// The error of every test method: a rejection or the backend's own.
#[derive(Debug)]
pub enum ServiceError {
    Rejected(Rejection),
    Backend(String),
}

impl From<Rejection> for ServiceError {
    fn from(rejection: Rejection) -> Self {
        ServiceError::Rejected(rejection)
    }
}

impl ServiceError {
    /// The id of the bulkhead that was full, if this is a BulkheadFull.
    pub fn full(&self) -> Option<&'static str> {
        match self {
            ServiceError::Rejected(r) if r.kind() == RejectionKind::BulkheadFull => {
                Some(r.instance())
            }
            _ => None,
        }
    }
}

/// Asserts that `result` is a BulkheadFull from bulkhead `id`.
#[track_caller]
pub fn assert_full<T: std::fmt::Debug>(result: Result<T, ServiceError>, id: &str) {
    match result {
        Err(e) if e.full() == Some(id) => {}
        other => panic!("expected BulkheadFull from {id:?}, got {other:?}"),
    }
}

/// Keeps a sync call running until the matching [`Release`] is dropped or
/// fired; `Hold::none()` returns at once.
#[derive(Debug)]
pub struct Hold(pub Option<mpsc::Receiver<()>>);

/// Lets the held call return.
#[derive(Debug)]
pub struct Release(mpsc::Sender<()>);

impl Hold {
    pub fn none() -> Self {
        Hold(None)
    }

    pub fn until_released() -> (Hold, Release) {
        let (tx, rx) = mpsc::channel();
        (Hold(Some(rx)), Release(tx))
    }

    pub fn wait(self) {
        if let Some(rx) = self.0 {
            let _ = rx.recv();
        }
    }
}

impl Release {
    pub fn release(self) {
        let _ = self.0.send(());
    }
}

/// The async counterpart of [`Hold`]: the delegate's future stays pending
/// until released.
#[derive(Debug)]
pub struct AsyncHold(Option<oneshot::Receiver<()>>);

impl AsyncHold {
    pub fn none() -> Self {
        AsyncHold(None)
    }

    pub fn until_released() -> (AsyncHold, oneshot::Sender<()>) {
        let (tx, rx) = oneshot::channel();
        (AsyncHold(Some(rx)), tx)
    }

    pub async fn wait(self) {
        if let Some(rx) = self.0 {
            let _ = rx.await;
        }
    }
}

/// The trait most tests wrap. Each method has its own bulkhead unless it
/// names a shared one.
#[resilient]
pub trait Service: Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self, hold: Hold) -> Result<u32, ServiceError>;

    #[bulkhead(max_concurrent = 1, max_wait = "1s")]
    fn call_waiting(&self, hold: Hold) -> Result<u32, ServiceError>;

    #[bulkhead(max_concurrent = 2, max_wait = "1s")]
    async fn call_async(&self, hold: AsyncHold) -> Result<u32, ServiceError>;

    #[bulkhead(max_concurrent = 1)]
    async fn call_async_no_wait(&self, hold: AsyncHold) -> Result<u32, ServiceError>;

    #[bulkhead(name = "shared", max_concurrent = 1, max_wait = "1s")]
    fn shared_sync(&self, hold: Hold) -> Result<u32, ServiceError>;

    #[bulkhead(name = "shared", max_concurrent = 1, max_wait = "1s")]
    fn shared_async(
        &self,
        hold: AsyncHold,
    ) -> impl Future<Output = Result<u32, ServiceError>> + Send;

    #[bulkhead(max_concurrent = 1)]
    fn panics(&self) -> Result<u32, ServiceError>;

    #[bulkhead(max_concurrent = 1)]
    async fn panics_async(&self) -> Result<u32, ServiceError>;

    #[bulkhead(max_concurrent = 1, enabled = false)]
    fn disabled(&self, hold: Hold) -> Result<u32, ServiceError>;

    #[bulkhead(max_concurrent = 1)]
    fn fails(&self) -> Result<u32, ServiceError>;

    /// Not annotated: a plain call to the delegate.
    fn runs(&self) -> u32;
}

/// Counts the calls that reached it.
#[derive(Debug, Default)]
pub struct Backend {
    runs: AtomicU32,
}

impl Backend {
    fn run(&self) -> u32 {
        self.runs.fetch_add(1, Ordering::SeqCst) + 1
    }
}

impl Service for Backend {
    fn call(&self, hold: Hold) -> Result<u32, ServiceError> {
        let n = self.run();
        hold.wait();
        Ok(n)
    }

    fn call_waiting(&self, hold: Hold) -> Result<u32, ServiceError> {
        self.call(hold)
    }

    async fn call_async(&self, hold: AsyncHold) -> Result<u32, ServiceError> {
        let n = self.run();
        hold.wait().await;
        Ok(n)
    }

    async fn call_async_no_wait(&self, hold: AsyncHold) -> Result<u32, ServiceError> {
        self.call_async(hold).await
    }

    fn shared_sync(&self, hold: Hold) -> Result<u32, ServiceError> {
        self.call(hold)
    }

    fn shared_async(
        &self,
        hold: AsyncHold,
    ) -> impl Future<Output = Result<u32, ServiceError>> + Send {
        self.call_async(hold)
    }

    fn panics(&self) -> Result<u32, ServiceError> {
        self.run();
        panic!("the backend fell over");
    }

    async fn panics_async(&self) -> Result<u32, ServiceError> {
        self.run();
        panic!("the async backend fell over");
    }

    fn disabled(&self, hold: Hold) -> Result<u32, ServiceError> {
        self.call(hold)
    }

    fn fails(&self) -> Result<u32, ServiceError> {
        self.run();
        Err(ServiceError::Backend("no such image".into()))
    }

    fn runs(&self) -> u32 {
        self.runs.load(Ordering::SeqCst)
    }
}

/// The id `#[resilient]` gives an unnamed method of [`Service`].
pub fn id(method: &str) -> String {
    format!("macros::support::Service#{method}")
}

/// A registry on a clock that moves only when the test moves it.
pub fn manual() -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    (clock, registry)
}

/// A wrapped [`Backend`] on `registry`.
pub fn service(registry: &Registry) -> ResilientService<Backend> {
    ResilientService::new(Backend::default(), registry).expect("the policies resolve")
}

/// Spins (yielding) until `condition` holds. Not a timing assertion: the
/// bound only turns a hang into a failure with a message.
#[track_caller]
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < give_up, "gave up waiting until {what}");
        std::thread::yield_now();
    }
}

/// Polls `future` once with a waker that does nothing.
pub fn poll<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}
