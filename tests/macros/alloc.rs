//! B11 through generated code: a call with a free slot and a rejected call
//! allocate nothing, sync or async, wrapper or function; nor does a call
//! through all five policies when none of them is triggered. Allocations
//! are counted per thread by the binary's global allocator
//! (`tests/support/counting.rs`).

use std::pin::pin;
use std::task::Poll;

use bulkhead::{bulkhead, resilient, retry, timeout};

use crate::support::{AsyncHold, Hold, Service, ServiceError, id, manual, poll, service};

/// How many allocations `f` made on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> usize {
    crate::counting::allocated_by(f).0
}

#[test]
fn b11_sync_calls_through_a_wrapper_allocate_nothing() {
    let (_, registry) = manual();
    let service = service(&registry);
    service.call(Hold::none()).unwrap();
    assert_eq!(allocations(|| service.call(Hold::none()).unwrap()), 0);

    let handle = registry.bulkhead(&id("call(Hold)")).unwrap();
    let _slots = [
        handle.bulkhead().try_enter().unwrap(),
        handle.bulkhead().try_enter().unwrap(),
    ];
    assert_eq!(
        allocations(|| assert!(service.call(Hold::none()).is_err())),
        0,
        "a rejection allocates nothing"
    );
}

#[test]
fn b11_async_calls_through_a_wrapper_allocate_nothing() {
    let (_, registry) = manual();
    let service = service(&registry);
    let free = allocations(|| {
        let mut call = pin!(service.call_async_no_wait(AsyncHold::none()));
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(_))));
    });
    assert_eq!(free, 0);

    let handle = registry
        .bulkhead(&id("call_async_no_wait(AsyncHold)"))
        .unwrap();
    let _slot = handle.bulkhead().try_enter().unwrap();
    let rejected = allocations(|| {
        let mut call = pin!(service.call_async_no_wait(AsyncHold::none()));
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Err(_))));
    });
    assert_eq!(rejected, 0, "a rejection allocates nothing");
}

#[bulkhead(max_concurrent = 2)]
fn counted() -> Result<u8, ServiceError> {
    Ok(1)
}

#[test]
fn b11_a_function_allocates_only_on_its_first_call() {
    assert!(
        allocations(|| counted().unwrap()) > 0,
        "resolves its bulkhead"
    );
    assert_eq!(allocations(|| counted().unwrap()), 0);
}

#[derive(Debug)]
struct Counted<T>(T);

impl<T: Copy> Counted<T> {
    #[bulkhead(max_concurrent = 2)]
    fn get(&self) -> Result<T, ServiceError> {
        Ok(self.0)
    }
}

#[derive(Debug)]
struct Plain;

impl Plain {
    #[bulkhead(max_concurrent = 2)]
    fn get(&self) -> Result<u8, ServiceError> {
        Ok(1)
    }
}

#[test]
fn b11_a_method_allocates_only_on_its_first_call() {
    assert!(
        allocations(|| Plain.get().unwrap()) > 0,
        "resolves its bulkhead"
    );
    assert_eq!(allocations(|| Plain.get().unwrap()), 0);
}

#[test]
fn b11_a_generic_method_allocates_only_on_its_first_call_for_each_type() {
    let (small, large) = (Counted(1u8), Counted(2u64));
    assert!(allocations(|| small.get().unwrap()) > 0);
    assert!(allocations(|| large.get().unwrap()) > 0);
    assert_eq!(allocations(|| small.get().unwrap()), 0, "the first type");
    assert_eq!(allocations(|| large.get().unwrap()), 0, "a type in the map");
}

/// Every policy, on settings no call here triggers: a free slot, a first
/// attempt that succeeds, a closed breaker, permits left, a distant
/// deadline.
#[resilient]
trait Guarded: Send + Sync {
    #[retry(max_attempts = 3, wait = "0")]
    #[circuit_breaker(minimum_calls = 100)]
    #[rate_limiter(limit_for_period = 1000000, refresh_period = "1h")]
    #[timeout(duration = "60s")]
    #[bulkhead(max_concurrent = 25)]
    fn get(&self, key: &str) -> Result<usize, ServiceError>;

    #[retry(max_attempts = 3, wait = "0")]
    #[circuit_breaker(minimum_calls = 100)]
    #[rate_limiter(limit_for_period = 1000000, refresh_period = "1h")]
    #[timeout(duration = "60s")]
    #[bulkhead(max_concurrent = 25)]
    async fn get_async(&self, key: &str) -> Result<usize, ServiceError>;

    #[retry(max_attempts = 3, wait = "0")]
    #[timeout(duration = "60s")]
    async fn bump(&mut self, by: usize) -> Result<usize, ServiceError>;
}

#[derive(Debug, Default)]
struct Table(usize);

impl Guarded for Table {
    fn get(&self, key: &str) -> Result<usize, ServiceError> {
        Ok(key.len())
    }
    async fn get_async(&self, key: &str) -> Result<usize, ServiceError> {
        Ok(key.len())
    }
    async fn bump(&mut self, by: usize) -> Result<usize, ServiceError> {
        self.0 += by;
        Ok(self.0)
    }
}

#[test]
fn untriggered_policies_allocate_nothing_sync() {
    let (_, registry) = manual();
    let guarded = ResilientGuarded::new(Table::default(), &registry).unwrap();
    guarded.get("warm").unwrap();
    assert_eq!(allocations(|| guarded.get("key").unwrap()), 0);
}

#[test]
fn untriggered_policies_allocate_nothing_async() {
    let (_, registry) = manual();
    let mut guarded = ResilientGuarded::new(Table::default(), &registry).unwrap();
    let free = allocations(|| {
        let mut call = pin!(guarded.get_async("key"));
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(3))));
    });
    assert_eq!(free, 0);
    let lent = allocations(|| {
        let mut call = pin!(guarded.bump(2));
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(2))));
    });
    assert_eq!(lent, 0, "`&mut self` lent to the attempt");
}

#[test]
fn a_call_rejected_by_every_attempt_allocates_nothing() {
    let (_, registry) = manual();
    let guarded = ResilientGuarded::new(Table::default(), &registry).unwrap();
    let handle = registry
        .bulkhead("macros::alloc::Guarded#get(&str)")
        .unwrap();
    let _slots: Vec<_> = (0..25)
        .map(|_| handle.bulkhead().try_enter().unwrap())
        .collect();
    assert!(guarded.get("key").is_err());
    assert_eq!(
        allocations(|| assert!(guarded.get("key").is_err())),
        0,
        "three rejected attempts, recorded by the breaker"
    );
}

#[retry(max_attempts = 3, wait = "0")]
#[timeout(duration = "60s")]
fn counted_retry(key: &str) -> Result<usize, ServiceError> {
    Ok(key.len())
}

#[test]
fn a_function_with_policies_allocates_only_on_its_first_call() {
    assert!(allocations(|| counted_retry("k").unwrap()) > 0);
    assert_eq!(allocations(|| counted_retry("key").unwrap()), 0);
}

#[resilient]
pub trait Quick: Send + Sync {
    #[bulkhead::fallback(method = "slow", on_error = true)]
    #[bulkhead::hedge(delay = "1s")]
    #[bulkhead(max_concurrent = 2)]
    async fn fast(&self, key: &str) -> Result<u8, ServiceError>;

    #[bulkhead::fallback(method = "slow_sync")]
    #[retry(max_attempts = 2, budget_ratio = 0.1)]
    fn fast_sync(&self, key: &str) -> Result<u8, ServiceError>;

    async fn slow(&self, key: &str) -> Result<u8, ServiceError>;
    fn slow_sync(&self, key: &str) -> Result<u8, ServiceError>;
}

pub struct Answers;

impl Quick for Answers {
    async fn fast(&self, _: &str) -> Result<u8, ServiceError> {
        Ok(1)
    }
    fn fast_sync(&self, _: &str) -> Result<u8, ServiceError> {
        Ok(2)
    }
    async fn slow(&self, _: &str) -> Result<u8, ServiceError> {
        Ok(0)
    }
    fn slow_sync(&self, _: &str) -> Result<u8, ServiceError> {
        Ok(0)
    }
}

#[test]
fn an_untriggered_fallback_hedge_and_budget_allocate_nothing_through_a_wrapper() {
    let (_, registry) = manual();
    let quick = ResilientQuick::new(Answers, &registry).unwrap();
    let calls = allocations(|| {
        for _ in 0..10 {
            let mut call = pin!(quick.fast("k"));
            assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(1))));
            assert_eq!(quick.fast_sync("k").unwrap(), 2);
        }
    });
    assert_eq!(calls, 0);
}
