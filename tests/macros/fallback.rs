//! `#[fallback]` through generated wrappers: which outcomes it answers
//! (`on`, `on_error`), that it calls the delegate's method outside every
//! policy, sync and async (`&mut self` too), its events and instance.

use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::task::Poll;

use bulkhead::events::{Event, FallbackEventKind};
use bulkhead::{Registry, RejectionKind, resilient};

use crate::support::{ServiceError, manual, poll};

#[resilient]
pub trait Thumbnails: Send + Sync {
    #[fallback(name = "thumbs-listed", method = "cached", on = [BulkheadFull])]
    #[circuit_breaker(name = "thumbs-listed", minimum_calls = 100)]
    #[bulkhead(name = "thumbs-listed", max_concurrent = 1)]
    fn listed(&self, id: &str) -> Result<String, ServiceError>;

    #[fallback(name = "thumbs-any", method = "cached")]
    #[bulkhead(name = "thumbs-any", max_concurrent = 1)]
    fn any_rejection(&self, id: &str) -> Result<String, ServiceError>;

    #[fallback(name = "thumbs-errors", method = "cached", on = [], on_error = true)]
    #[retry(name = "thumbs-errors", max_attempts = 2, wait = "0")]
    fn errors(&self, id: &str) -> Result<String, ServiceError>;

    /// The fallback: under a bulkhead of its own, which the fallback call
    /// does not go through.
    #[bulkhead(name = "thumbs-cached", max_concurrent = 1)]
    fn cached(&self, id: &str) -> Result<String, ServiceError>;
}

/// Fails every call with its own error once `failing` is set, counting the
/// calls of each method.
#[derive(Default)]
pub struct Store {
    failing: std::sync::atomic::AtomicBool,
    calls: AtomicU32,
    cached: AtomicU32,
}

impl Store {
    fn answer(&self, id: &str) -> Result<String, ServiceError> {
        self.calls.fetch_add(1, SeqCst);
        if self.failing.load(SeqCst) {
            Err(ServiceError::Backend(format!("{id} is corrupt")))
        } else {
            Ok(format!("{id}.png"))
        }
    }
}

impl Thumbnails for Store {
    fn listed(&self, id: &str) -> Result<String, ServiceError> {
        self.answer(id)
    }
    fn any_rejection(&self, id: &str) -> Result<String, ServiceError> {
        self.answer(id)
    }
    fn errors(&self, id: &str) -> Result<String, ServiceError> {
        self.answer(id)
    }
    fn cached(&self, id: &str) -> Result<String, ServiceError> {
        self.cached.fetch_add(1, SeqCst);
        Ok(format!("cached {id}"))
    }
}

fn answer(result: Result<String, ServiceError>) -> String {
    match result {
        Ok(answer) => answer,
        Err(error) => format!("error: {error:?}"),
    }
}

#[test]
fn the_fallback_answers_the_rejections_listed_in_on_and_no_other() {
    let registry = Registry::new();
    let thumbnails = ResilientThumbnails::new(Store::default(), &registry).unwrap();
    assert_eq!(answer(thumbnails.listed("cat")), "cat.png");

    let held = registry
        .bulkhead("thumbs-listed")
        .unwrap()
        .bulkhead()
        .try_enter_owned()
        .unwrap();
    assert_eq!(
        answer(thumbnails.listed("cat")),
        "cached cat",
        "BulkheadFull is listed"
    );
    drop(held);

    registry
        .circuit_breaker("thumbs-listed")
        .unwrap()
        .force_open();
    let open = thumbnails.listed("cat");
    assert!(
        matches!(&open, Err(ServiceError::Rejected(r)) if r.kind() == RejectionKind::CircuitOpen),
        "CircuitOpen is not listed: {open:?}"
    );

    thumbnails.delegate().failing.store(true, SeqCst);
    registry.circuit_breaker("thumbs-listed").unwrap().reset();
    assert!(
        matches!(thumbnails.listed("cat"), Err(ServiceError::Backend(_))),
        "nor errors"
    );
    assert_eq!(thumbnails.delegate().cached.load(SeqCst), 1);
}

#[test]
fn without_on_any_rejection_is_answered_but_not_the_methods_errors() {
    let registry = Registry::new();
    let thumbnails = ResilientThumbnails::new(Store::default(), &registry).unwrap();
    let held = registry
        .bulkhead("thumbs-any")
        .unwrap()
        .bulkhead()
        .try_enter_owned()
        .unwrap();
    assert_eq!(answer(thumbnails.any_rejection("dog")), "cached dog");
    drop(held);
    thumbnails.delegate().failing.store(true, SeqCst);
    assert!(matches!(
        thumbnails.any_rejection("dog"),
        Err(ServiceError::Backend(_))
    ));
    let config = registry.fallback("thumbs-any").unwrap().config();
    assert_eq!(
        config.on().iter().count(),
        bulkhead::RejectionKind::ALL.len()
    );
    assert!(!config.on_error());
}

#[test]
fn on_error_answers_the_methods_own_errors_after_the_last_retry() {
    let registry = Registry::new();
    let thumbnails = ResilientThumbnails::new(Store::default(), &registry).unwrap();
    thumbnails.delegate().failing.store(true, SeqCst);
    let mut events = registry.fallback("thumbs-errors").unwrap().subscribe();
    assert_eq!(answer(thumbnails.errors("owl")), "cached owl");
    assert_eq!(
        thumbnails.delegate().calls.load(SeqCst),
        2,
        "both attempts first"
    );
    assert_eq!(
        events.try_recv().map(|event| event.kind),
        Some(FallbackEventKind::Used { rejection: None })
    );
}

#[test]
fn the_fallback_is_called_outside_every_policy_its_own_included() {
    let registry = Registry::new();
    let thumbnails = ResilientThumbnails::new(Store::default(), &registry).unwrap();
    // The fallback method's own bulkhead is full: called through the
    // wrapper it is refused...
    let _cached_held = registry
        .bulkhead("thumbs-cached")
        .unwrap()
        .bulkhead()
        .try_enter_owned()
        .unwrap();
    assert!(thumbnails.cached("x").is_err());
    // ...but as a fallback it is the delegate's method, called directly.
    let _held = registry
        .bulkhead("thumbs-listed")
        .unwrap()
        .bulkhead()
        .try_enter_owned()
        .unwrap();
    assert_eq!(answer(thumbnails.listed("x")), "cached x");
    // The breaker of `listed` recorded the rejected call once, and nothing
    // of the fallback.
    let breaker = registry.circuit_breaker("thumbs-listed").unwrap().metrics();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (1, 1));
}

#[test]
fn configuration_sets_what_the_fallback_answers() {
    let registry = Registry::builder()
        .config_toml("[fallback.instances.thumbs-listed]\non_error = true\non = []")
        .unwrap()
        .build();
    let thumbnails = ResilientThumbnails::new(Store::default(), &registry).unwrap();
    let held = registry
        .bulkhead("thumbs-listed")
        .unwrap()
        .bulkhead()
        .try_enter_owned()
        .unwrap();
    assert!(
        thumbnails.listed("cat").is_err(),
        "the instance answers no rejection"
    );
    drop(held);
    thumbnails.delegate().failing.store(true, SeqCst);
    assert_eq!(answer(thumbnails.listed("cat")), "cached cat", "but errors");
    let snapshot = registry.fallback("thumbs-listed").unwrap().snapshot();
    assert!(snapshot.on.is_empty() && snapshot.on_error);
}

#[resilient]
pub trait Ledger: Send {
    #[fallback(method = "last_known", on_error = true)]
    #[retry(max_attempts = 2, wait = "0")]
    async fn balance(&mut self, account: u32) -> Result<i64, ServiceError>;

    async fn last_known(&mut self, account: u32) -> Result<i64, ServiceError>;
}

#[derive(Default)]
pub struct Accounts {
    calls: u32,
    known: Vec<u32>,
}

impl Ledger for Accounts {
    async fn balance(&mut self, _: u32) -> Result<i64, ServiceError> {
        self.calls += 1;
        Err(ServiceError::Backend("ledger down".into()))
    }

    async fn last_known(&mut self, account: u32) -> Result<i64, ServiceError> {
        self.known.push(account);
        Ok(-1)
    }
}

#[test]
fn an_async_mut_self_method_lends_the_delegate_to_its_fallback_after_the_attempts() {
    let (_clock, registry) = manual();
    let mut ledger = ResilientLedger::new(Accounts::default(), &registry).unwrap();
    let mut events = registry.subscribe();
    {
        let mut balance = pin!(ledger.balance(7));
        assert!(matches!(poll(balance.as_mut()), Poll::Ready(Ok(-1))));
    }
    assert_eq!(ledger.delegate().calls, 2);
    assert_eq!(ledger.delegate().known, [7]);
    let used: Vec<_> = events
        .drain()
        .filter_map(|event| match event {
            Event::Fallback(event) => Some(event.kind),
            _ => None,
        })
        .collect();
    assert_eq!(used, [FallbackEventKind::Used { rejection: None }]);
}
