//! Traits held as `Arc<dyn Trait>`: written with `#[async_trait]`, in
//! either order of the two attributes, or returning boxed futures by hand.
//! The wrapper is the trait object, and its policies apply to every call
//! made through it: sync methods, and async ones around the boxed future
//! (a full bulkhead refuses, a retry calls again, a timeout drops the
//! delegate's future and frees its slot).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use async_trait::async_trait;
use bulkhead::{Registry, RejectionKind, resilient};

use crate::support::{AsyncHold, Hold, ServiceError, assert_full, manual, poll, wait_until};

/// The delegate: counts the calls that reached it, and fails the first
/// `fails` of those that can fail.
#[derive(Debug, Default, Clone)]
pub struct Store {
    calls: Arc<AtomicU32>,
    fails: Arc<AtomicU32>,
}

impl Store {
    fn failing(fails: u32) -> Self {
        let store = Store::default();
        store.fails.store(fails, Ordering::SeqCst);
        store
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Counts a call; `Err` while failures are left.
    fn run(&self) -> Result<u32, ServiceError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let left = self.fails.load(Ordering::SeqCst);
        if left > 0 {
            self.fails.store(left - 1, Ordering::SeqCst);
            return Err(ServiceError::Backend("transient".into()));
        }
        Ok(n)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn rejected<T: std::fmt::Debug>(outcome: Poll<Result<T, ServiceError>>) -> RejectionKind {
    match outcome {
        Poll::Ready(Err(ServiceError::Rejected(rejection))) => rejection.kind(),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// One `#[async_trait]` trait with the two attributes in the given order,
/// its implementation, and the tests every order must pass.
macro_rules! async_trait_order {
    ($module:ident: $(#[$attr:meta])+) => {
        pub mod $module {
            use super::*;

            $(#[$attr])+
            pub trait Repository: Send + Sync {
                #[bulkhead(max_concurrent = 1)]
                async fn find(&self, id: &str, hold: AsyncHold) -> Result<String, ServiceError>;

                #[retry(max_attempts = 3, wait = "0")]
                async fn flaky(&self, id: &str) -> Result<u32, ServiceError>;

                #[timeout(duration = "1s")]
                #[bulkhead(max_concurrent = 1)]
                async fn slow(&self, id: &str, hold: AsyncHold) -> Result<String, ServiceError>;

                #[bulkhead(max_concurrent = 1)]
                fn count(&self, hold: Hold) -> Result<u32, ServiceError>;

                #[retry(max_attempts = 2, wait = "0")]
                fn count_flaky(&self) -> Result<u32, ServiceError>;

                /// Not annotated: delegates.
                async fn name(&self) -> String;
            }

            #[async_trait]
            impl Repository for Store {
                async fn find(&self, id: &str, hold: AsyncHold) -> Result<String, ServiceError> {
                    self.run()?;
                    hold.wait().await;
                    Ok(id.to_owned())
                }
                async fn flaky(&self, _id: &str) -> Result<u32, ServiceError> {
                    self.run()
                }
                async fn slow(&self, id: &str, hold: AsyncHold) -> Result<String, ServiceError> {
                    self.find(id, hold).await
                }
                fn count(&self, hold: Hold) -> Result<u32, ServiceError> {
                    let n = self.run()?;
                    hold.wait();
                    Ok(n)
                }
                fn count_flaky(&self) -> Result<u32, ServiceError> {
                    self.run()
                }
                async fn name(&self) -> String {
                    "store".to_owned()
                }
            }

            /// The wrapper as the trait object an application holds.
            fn wrapped(store: &Store, registry: &Registry) -> Arc<dyn Repository> {
                Arc::new(ResilientRepository::new(store.clone(), registry).unwrap())
            }

            /// The id of a method: its parameter types as written, whatever
            /// `#[async_trait]` named their lifetimes.
            fn id(method: &str) -> String {
                format!("macros::dyn_traits::{}::Repository#{method}", stringify!($module))
            }

            #[test]
            fn a_full_bulkhead_refuses_a_call_made_through_dyn() {
                let registry = Registry::new();
                let store = Store::default();
                let repository = wrapped(&store, &registry);
                let handle = registry.bulkhead(&id("find(&str, AsyncHold)")).unwrap();
                let (hold, release) = AsyncHold::until_released();
                let mut first = repository.find("a", hold);
                assert!(poll(first.as_mut()).is_pending());
                assert_eq!(handle.concurrent_calls(), 1);

                let mut second = repository.find("b", AsyncHold::none());
                assert_eq!(rejected(poll(second.as_mut())), RejectionKind::BulkheadFull);
                assert_eq!(store.calls(), 1, "the refused call never reached the store");

                release.send(()).unwrap();
                assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(ref id)) if id == "a"));
                assert_eq!(handle.concurrent_calls(), 0);
                assert_eq!(runtime().block_on(repository.name()), "store");
            }

            #[test]
            fn a_call_through_dyn_allocates_one_box_more_than_the_delegate() {
                let registry = Registry::new();
                let store = Store::default();
                let repository = wrapped(&store, &registry);
                let direct: &dyn Repository = &store;
                let boxes = |repository: &dyn Repository| {
                    crate::counting::allocated_by(|| {
                        let mut call = repository.find("a", AsyncHold::none());
                        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(_))));
                    })
                    .0
                };
                // The store's: #[async_trait]'s box and the String it answers.
                assert_eq!(boxes(direct), 2);
                assert_eq!(boxes(&*repository), 3, "and the wrapper's box");

                let handle = registry.bulkhead(&id("find(&str, AsyncHold)")).unwrap();
                let _slot = handle.bulkhead().try_enter().unwrap();
                let refused = crate::counting::allocated_by(|| {
                    let mut call = repository.find("b", AsyncHold::none());
                    assert_eq!(rejected(poll(call.as_mut())), RejectionKind::BulkheadFull);
                });
                assert_eq!(refused.0, 1, "the wrapper's box: the delegate is not called");
            }

            #[test]
            fn retries_apply_through_dyn() {
                let registry = Registry::new();
                let store = Store::failing(2);
                let repository = wrapped(&store, &registry);
                assert_eq!(runtime().block_on(repository.flaky("k")).unwrap(), 3);
                assert_eq!(store.calls(), 3);

                let store = Store::failing(5);
                let repository = wrapped(&store, &registry);
                assert!(matches!(
                    runtime().block_on(repository.flaky("k")),
                    Err(ServiceError::Backend(_))
                ));
                assert_eq!(store.calls(), 3, "max_attempts = 3");
            }

            #[test]
            fn a_timeout_drops_the_boxed_future_and_frees_its_slot() {
                let (clock, registry) = manual();
                let store = Store::default();
                let repository = wrapped(&store, &registry);
                let handle = registry.bulkhead(&id("slow(&str, AsyncHold)")).unwrap();
                let (hold, release) = AsyncHold::until_released();
                let mut call = repository.slow("k", hold);
                assert!(poll(call.as_mut()).is_pending());
                assert_eq!(handle.concurrent_calls(), 1);
                assert!(!release.is_closed());

                clock.advance(Duration::from_secs(1));
                assert_eq!(rejected(poll(call.as_mut())), RejectionKind::Timeout);
                assert_eq!(handle.concurrent_calls(), 0, "the slot is free at the deadline");
                assert!(release.is_closed(), "the store's future was dropped");
            }

            #[test]
            fn sync_methods_of_the_trait_object_run_under_their_policies() {
                let registry = Registry::new();
                let store = Store::default();
                let repository = wrapped(&store, &registry);
                let handle = registry.bulkhead(&id("count(Hold)")).unwrap();
                let (hold, release) = Hold::until_released();
                thread::scope(|s| {
                    let first = s.spawn(|| repository.count(hold));
                    wait_until("the first call holds the slot", || handle.concurrent_calls() == 1);
                    assert_full(repository.count(Hold::none()), &id("count(Hold)"));
                    release.release();
                    assert_eq!(first.join().unwrap().unwrap(), 1);
                });

                let store = Store::failing(1);
                let repository = wrapped(&store, &registry);
                assert_eq!(repository.count_flaky().unwrap(), 2);
                assert_eq!(store.calls(), 2);
            }
        }
    };
}

async_trait_order!(resilient_first: #[resilient] #[async_trait]);
async_trait_order!(async_trait_first: #[async_trait] #[resilient]);

/// A trait made `dyn`-compatible by hand: each method returns a boxed
/// future, bound by the receiver's lifetime (`'_`, or an `'a` the borrowed
/// arguments share), as `#[async_trait]` would write it.
pub mod boxed {
    use super::*;

    /// A boxed future of `T`.
    pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, ServiceError>> + Send + 'a>>;

    #[resilient]
    pub trait Images: Send + Sync {
        #[bulkhead(max_concurrent = 1)]
        fn fetch<'a>(
            &'a self,
            id: &'a str,
            hold: AsyncHold,
        ) -> Pin<Box<dyn Future<Output = Result<String, ServiceError>> + Send + 'a>>;

        #[retry(max_attempts = 3, wait = "0")]
        fn flaky(
            &self,
            id: String,
        ) -> Pin<Box<dyn Future<Output = Result<u32, ServiceError>> + Send + '_>>;

        #[timeout(duration = "1s")]
        fn slow<'a>(
            &'a self,
            id: &'a str,
            hold: AsyncHold,
        ) -> Pin<Box<dyn Future<Output = Result<String, ServiceError>> + Send + 'a>>;
    }

    // The boxes are written out in the trait (an alias would be read as a
    // sync return type); the implementation may use one.
    impl Images for Store {
        fn fetch<'a>(&'a self, id: &'a str, hold: AsyncHold) -> Boxed<'a, String> {
            // Counted before the `async` part: a refused call never gets here.
            let counted = self.run();
            Box::pin(async move {
                counted?;
                hold.wait().await;
                Ok(id.to_owned())
            })
        }
        fn flaky(&self, _id: String) -> Boxed<'_, u32> {
            let outcome = self.run();
            Box::pin(async move { outcome })
        }
        fn slow<'a>(&'a self, id: &'a str, hold: AsyncHold) -> Boxed<'a, String> {
            self.fetch(id, hold)
        }
    }

    fn wrapped(store: &Store, registry: &Registry) -> Arc<dyn Images> {
        Arc::new(ResilientImages::new(store.clone(), registry).unwrap())
    }

    #[test]
    fn a_full_bulkhead_refuses_before_the_delegate_makes_its_box() {
        let registry = Registry::new();
        let store = Store::default();
        let images = wrapped(&store, &registry);
        let (hold, release) = AsyncHold::until_released();
        let mut first = images.fetch("a", hold);
        assert!(poll(first.as_mut()).is_pending());
        let mut second = images.fetch("b", AsyncHold::none());
        assert_eq!(rejected(poll(second.as_mut())), RejectionKind::BulkheadFull);
        assert_eq!(
            store.calls(),
            1,
            "the arguments outlive the box's lifetime: the delegate is called once the call holds a slot"
        );
        release.send(()).unwrap();
        assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(_))));
    }

    #[test]
    fn retries_and_timeouts_apply_through_dyn() {
        let (clock, registry) = manual();
        let store = Store::failing(2);
        let images = wrapped(&store, &registry);
        assert_eq!(runtime().block_on(images.flaky("k".into())).unwrap(), 3);
        assert_eq!(store.calls(), 3);

        let handle = registry
            .bulkhead("macros::dyn_traits::boxed::Images#slow(&'a str, AsyncHold)")
            .unwrap_err();
        assert_eq!(handle.code(), "REG-009", "#[timeout] alone has no bulkhead");
        let (hold, release) = AsyncHold::until_released();
        let mut call = images.slow("k", hold);
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(Duration::from_secs(1));
        assert_eq!(rejected(poll(call.as_mut())), RejectionKind::Timeout);
        assert!(release.is_closed(), "the delegate's box was dropped");
    }
}
