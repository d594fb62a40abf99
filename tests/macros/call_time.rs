//! When a wrapper calls its delegate's method for a method returning a
//! future (B2 in `docs/bulkhead.md`: a rejected call does not call the
//! method): inside the
//! wrapper's future once it holds a slot, wherever the future can hold the
//! receiver and the arguments until then; at once where it cannot (a `Send`
//! future over a receiver or argument not known to be `Send`, a future
//! bound by a lifetime the arguments may not outlive). Also futures tied to
//! the lifetime of an argument rather than the receiver's.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Poll;

use bulkhead::{Registry, resilient};

use crate::support::{ServiceError, poll};

/// Every method's delegate counts, before its `async` part, that it was
/// called: its "synchronous prelude".
#[resilient]
pub trait Prelude: Send + Sync {
    #[bulkhead(max_concurrent = 1)]
    fn shared(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send;

    #[bulkhead(max_concurrent = 1)]
    fn exclusive(
        &mut self,
        key: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send;

    #[bulkhead(max_concurrent = 1)]
    fn owned(self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send
    where
        Self: Sized;

    #[bulkhead(max_concurrent = 1)]
    fn borrowed(&self, key: &str) -> impl Future<Output = Result<usize, ServiceError>> + Send;

    #[bulkhead(max_concurrent = 1)]
    async fn via_async_fn(&self, key: String) -> Result<String, ServiceError>;

    #[bulkhead(max_concurrent = 1)]
    fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<u32, ServiceError>> + Send + '_>>;
}

#[derive(Debug, Default, Clone)]
struct Counting {
    preludes: Arc<AtomicU32>,
}

impl Counting {
    fn prelude(&self) -> u32 {
        self.preludes.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn preludes(&self) -> u32 {
        self.preludes.load(Ordering::SeqCst)
    }
}

impl Prelude for Counting {
    fn shared(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send {
        self.prelude();
        async move { Ok(key) }
    }
    fn exclusive(
        &mut self,
        key: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send {
        self.prelude();
        async move { Ok(key) }
    }
    fn owned(self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send {
        self.prelude();
        async move { Ok(key) }
    }
    fn borrowed(&self, key: &str) -> impl Future<Output = Result<usize, ServiceError>> + Send {
        self.prelude();
        let len = key.len();
        async move { Ok(len) }
    }
    // An `async fn` of the trait may be implemented by a `fn` with a
    // prelude.
    #[allow(clippy::manual_async_fn)]
    fn via_async_fn(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> {
        self.prelude();
        async move { Ok(key) }
    }
    fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<u32, ServiceError>> + Send + '_>> {
        let n = self.prelude();
        Box::pin(async move { Ok(n) })
    }
}

/// Holds every slot of the bulkhead `id` of the `Prelude` trait.
fn fill(registry: &Registry, method: &str) -> bulkhead::BulkheadHandle {
    registry
        .bulkhead(&format!("macros::call_time::Prelude#{method}"))
        .unwrap()
}

#[track_caller]
fn assert_rejected<T: std::fmt::Debug>(future: impl Future<Output = Result<T, ServiceError>>) {
    let mut future = pin!(future);
    match poll(future.as_mut()) {
        Poll::Ready(Err(ServiceError::Rejected(_))) => {}
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn b2_a_rejected_call_does_not_run_the_delegates_prelude() {
    let registry = Registry::new();
    let mut wrapper = ResilientPrelude::new(Counting::default(), &registry).unwrap();

    let handle = fill(&registry, "shared(String)");
    let slot = handle.bulkhead().try_enter().unwrap();
    assert_rejected(wrapper.shared("a".into()));
    drop(slot);

    let handle = fill(&registry, "exclusive(String)");
    let slot = handle.bulkhead().try_enter().unwrap();
    assert_rejected(wrapper.exclusive("a".into()));
    drop(slot);

    let handle = fill(&registry, "borrowed(&str)");
    let slot = handle.bulkhead().try_enter().unwrap();
    assert_rejected(wrapper.borrowed("a"));
    drop(slot);

    let handle = fill(&registry, "via_async_fn(String)");
    let slot = handle.bulkhead().try_enter().unwrap();
    assert_rejected(wrapper.via_async_fn("a".into()));
    drop(slot);

    let handle = fill(&registry, "boxed()");
    let slot = handle.bulkhead().try_enter().unwrap();
    assert_rejected(wrapper.boxed());
    drop(slot);

    assert_eq!(wrapper.delegate().preludes(), 0, "no delegate method ran");

    let handle = fill(&registry, "owned(String)");
    let slot = handle.bulkhead().try_enter().unwrap();
    let counting = wrapper.delegate().clone();
    assert_rejected(wrapper.owned("a".into()));
    assert_eq!(counting.preludes(), 0, "nor does a call taking `self`");
    drop(slot);
}

#[test]
fn the_delegate_runs_once_the_future_holds_a_slot() {
    let registry = Registry::new();
    let wrapper = ResilientPrelude::new(Counting::default(), &registry).unwrap();
    let handle = fill(&registry, "shared(String)");
    let mut call = pin!(wrapper.shared("k".into()));
    assert_eq!(
        wrapper.delegate().preludes(),
        0,
        "nothing runs before a poll"
    );
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(k)) if k == "k"));
    assert_eq!(wrapper.delegate().preludes(), 1);
    assert_eq!(handle.concurrent_calls(), 0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(wrapper.borrowed("four")).unwrap(), 4);
    assert_eq!(runtime.block_on(wrapper.boxed()).unwrap(), 3);
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

#[test]
fn deferred_futures_keep_the_traits_send_promise() {
    let registry = Registry::new();
    let wrapper = ResilientPrelude::new(Counting::default(), &registry).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let wrapper = std::sync::Arc::new(wrapper);
    let spawned = std::sync::Arc::clone(&wrapper);
    let key = runtime
        .block_on(runtime.spawn(async move { assert_send(spawned.shared("s".into())).await }))
        .unwrap();
    assert_eq!(key.unwrap(), "s");
}

/// A trait without `Sync`: a `+ Send` future cannot hold `&D` (not known to
/// be `Send`), so the delegate is called at once, as documented.
#[resilient]
pub trait NotSyncPrelude {
    #[bulkhead(max_concurrent = 1)]
    fn fetch(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send;

    /// Without `Send`, the future may hold anything: deferred.
    #[bulkhead(max_concurrent = 1)]
    fn local(&self, key: String) -> impl Future<Output = Result<String, ServiceError>>;
}

#[derive(Debug, Default)]
struct Cell(std::cell::Cell<u32>);

impl NotSyncPrelude for Cell {
    fn fetch(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send {
        self.0.set(self.0.get() + 1);
        async move { Ok(key) }
    }
    fn local(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> {
        self.0.set(self.0.get() + 1);
        async move { Ok(key) }
    }
}

#[test]
fn without_a_sync_supertrait_a_send_future_is_made_at_once_and_others_are_deferred() {
    let registry = Registry::new();
    let wrapper = ResilientNotSyncPrelude::new(Cell::default(), &registry).unwrap();
    let fetch = registry
        .bulkhead("macros::call_time::NotSyncPrelude#fetch(String)")
        .unwrap();
    let local = registry
        .bulkhead("macros::call_time::NotSyncPrelude#local(String)")
        .unwrap();
    let _slots = (
        fetch.bulkhead().try_enter().unwrap(),
        local.bulkhead().try_enter().unwrap(),
    );
    assert_rejected(wrapper.local("a".into()));
    assert_eq!(wrapper.delegate().0.get(), 0, "deferred: never ran");
    assert_rejected(assert_send(wrapper.fetch("a".into())));
    assert_eq!(wrapper.delegate().0.get(), 1, "made at once, then rejected");
}

/// Futures tied to an argument's lifetime rather than the receiver's: the
/// wrapper's future cannot borrow the wrapper, so it gets its own handle on
/// the bulkhead.
#[resilient]
pub trait Lookup: Send + Sync {
    #[bulkhead(max_concurrent = 1)]
    fn get<'a>(
        &self,
        key: &'a str,
    ) -> impl Future<Output = Result<usize, ServiceError>> + Send + 'a;

    #[bulkhead(max_concurrent = 1)]
    fn get_boxed<'a>(
        &self,
        key: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<usize, ServiceError>> + Send + 'a>>;

    #[bulkhead(max_concurrent = 1)]
    fn get_both<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Future<Output = Result<usize, ServiceError>> + Send + 'a;
}

#[derive(Debug)]
struct Lengths;

// `async fn` would borrow `self` too, which the trait's futures may not.
#[allow(clippy::manual_async_fn)]
impl Lookup for Lengths {
    fn get<'a>(
        &self,
        key: &'a str,
    ) -> impl Future<Output = Result<usize, ServiceError>> + Send + 'a {
        async move { Ok(key.len()) }
    }
    fn get_boxed<'a>(
        &self,
        key: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<usize, ServiceError>> + Send + 'a>> {
        Box::pin(async move { Ok(key.len()) })
    }
    fn get_both<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Future<Output = Result<usize, ServiceError>> + Send + 'a {
        async move { Ok(key.len()) }
    }
}

#[test]
fn a_future_tied_to_an_arguments_lifetime_outlives_the_wrapper_borrow() {
    let registry = Registry::new();
    let wrapper = ResilientLookup::new(Lengths, &registry).unwrap();
    let key = String::from("three");
    // The futures borrow `key`, not `wrapper`: the wrapper can go first.
    let (get, boxed) = (wrapper.get(&key), wrapper.get_boxed(&key));
    drop(wrapper);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(get).unwrap(), 5);
    assert_eq!(runtime.block_on(boxed).unwrap(), 5);

    let wrapper = ResilientLookup::new(Lengths, &registry).unwrap();
    assert_eq!(runtime.block_on(wrapper.get_both(&key)).unwrap(), 5);
    let handle = registry
        .bulkhead("macros::call_time::Lookup#get(&'a str)")
        .unwrap();
    let _slot = handle.bulkhead().try_enter().unwrap();
    assert_rejected(wrapper.get("x"));
}
