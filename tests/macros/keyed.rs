//! Keyed bulkheads from the attribute: `#[bulkhead(per_key = .., key =
//! tenant)]` on sync and async methods of a `#[resilient]` trait, keyed by
//! `&str`, `String` and `u64` arguments, and on free functions with a
//! body.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Poll;
use std::thread;

use bulkhead::{Registry, bulkhead, resilient, retry, timeout};

use crate::support::{AsyncHold, Hold, ServiceError, assert_full, manual, poll, wait_until};

#[resilient]
pub trait Tenants: Send + Sync {
    #[bulkhead(name = "tenants-str", max_concurrent = 3, per_key = 1, key = tenant)]
    fn by_str(&self, tenant: &str, hold: Hold) -> Result<String, ServiceError>;

    #[bulkhead(name = "tenants-string", max_concurrent = 3, per_key = 1, key = tenant)]
    fn by_string(&self, hold: Hold, tenant: String) -> Result<String, ServiceError>;

    #[bulkhead(name = "tenants-u64", max_concurrent = 3, per_key = 1, key = tenant)]
    async fn by_id(&self, tenant: u64, hold: AsyncHold) -> Result<u64, ServiceError>;

    #[bulkhead(name = "tenants-async-str", max_concurrent = 3, per_key = 1, key = tenant)]
    async fn by_str_async(&self, tenant: &str, hold: AsyncHold) -> Result<String, ServiceError>;

    /// A `Send` future: the call is made in it if what it holds is `Send`.
    #[bulkhead(name = "tenants-send", max_concurrent = 3, per_key = 1, key = tenant)]
    fn by_id_send(
        &self,
        tenant: u64,
        hold: AsyncHold,
    ) -> impl Future<Output = Result<u64, ServiceError>> + Send;

    /// A boxed `'static` future: made at once, with a handle of its own on
    /// the bulkhead.
    #[bulkhead(name = "tenants-boxed", max_concurrent = 3, per_key = 1, key = tenant)]
    fn by_id_boxed(
        &self,
        tenant: u64,
        hold: AsyncHold,
    ) -> Pin<Box<dyn Future<Output = Result<u64, ServiceError>> + Send>>;
}

/// Counts the calls that reached it.
#[derive(Default)]
struct Backend {
    runs: AtomicU32,
}

impl Backend {
    fn run(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
    }
}

fn runs(tenants: &ResilientTenants<Backend>) -> u32 {
    tenants.delegate().runs.load(Ordering::SeqCst)
}

fn tenants(registry: &Registry) -> ResilientTenants<Backend> {
    ResilientTenants::new(Backend::default(), registry).expect("the keyed bulkheads resolve")
}

impl Tenants for Backend {
    fn by_str(&self, tenant: &str, hold: Hold) -> Result<String, ServiceError> {
        self.run();
        hold.wait();
        Ok(tenant.to_owned())
    }

    fn by_string(&self, hold: Hold, tenant: String) -> Result<String, ServiceError> {
        self.run();
        hold.wait();
        Ok(tenant)
    }

    async fn by_id(&self, tenant: u64, hold: AsyncHold) -> Result<u64, ServiceError> {
        self.run();
        hold.wait().await;
        Ok(tenant)
    }

    async fn by_str_async(&self, tenant: &str, hold: AsyncHold) -> Result<String, ServiceError> {
        self.run();
        hold.wait().await;
        Ok(tenant.to_owned())
    }

    fn by_id_send(
        &self,
        tenant: u64,
        hold: AsyncHold,
    ) -> impl Future<Output = Result<u64, ServiceError>> + Send {
        self.run();
        async move {
            hold.wait().await;
            Ok(tenant)
        }
    }

    fn by_id_boxed(
        &self,
        tenant: u64,
        hold: AsyncHold,
    ) -> Pin<Box<dyn Future<Output = Result<u64, ServiceError>> + Send>> {
        Box::pin(async move {
            hold.wait().await;
            Ok(tenant)
        })
    }
}

#[test]
fn a_tenant_at_its_per_key_is_refused_while_another_passes_with_a_str_key() {
    let (_, registry) = manual();
    let tenants = tenants(&registry);
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let running = s.spawn(|| tenants.by_str("acme", hold));
        wait_until("acme's call runs", || runs(&tenants) == 1);
        assert_full(tenants.by_str("acme", Hold::none()), "tenants-str");
        assert_eq!(runs(&tenants), 1, "a refused call does not run");
        assert_eq!(tenants.by_str("globex", Hold::none()).unwrap(), "globex");
        release.release();
        assert_eq!(running.join().unwrap().unwrap(), "acme");
    });
    assert_eq!(
        tenants.by_str("acme", Hold::none()).unwrap(),
        "acme",
        "the slot was given back"
    );
}

#[test]
fn a_string_key_is_entered_by_reference_and_moved_into_the_call() {
    let (_, registry) = manual();
    let tenants = tenants(&registry);
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let running = s.spawn(|| tenants.by_string(hold, "acme".to_owned()));
        wait_until("acme's call runs", || runs(&tenants) == 1);
        assert_full(
            tenants.by_string(Hold::none(), "acme".to_owned()),
            "tenants-string",
        );
        assert_eq!(
            tenants
                .by_string(Hold::none(), "globex".to_owned())
                .unwrap(),
            "globex"
        );
        release.release();
        assert_eq!(running.join().unwrap().unwrap(), "acme");
    });
}

#[test]
fn an_async_u64_key_holds_its_slot_until_the_future_completes() {
    let (_, registry) = manual();
    let tenants = tenants(&registry);
    let (hold, release) = AsyncHold::until_released();
    let mut first = pin!(tenants.by_id(7, hold));
    assert!(poll(first.as_mut()).is_pending());
    let mut again = pin!(tenants.by_id(7, AsyncHold::none()));
    match poll(again.as_mut()) {
        Poll::Ready(result) => assert_full(result, "tenants-u64"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = pin!(tenants.by_id(8, AsyncHold::none()));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(8))));
    assert_eq!(runs(&tenants), 2, "the refused call did not run");
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(7))));
    let mut after = pin!(tenants.by_id(7, AsyncHold::none()));
    assert!(matches!(poll(after.as_mut()), Poll::Ready(Ok(7))));
}

#[test]
fn an_async_str_key_is_refused_at_its_per_key() {
    let (_, registry) = manual();
    let tenants = tenants(&registry);
    let (hold, release) = AsyncHold::until_released();
    let tenant = String::from("acme");
    let mut first = pin!(tenants.by_str_async(&tenant, hold));
    assert!(poll(first.as_mut()).is_pending());
    let mut again = pin!(tenants.by_str_async("acme", AsyncHold::none()));
    match poll(again.as_mut()) {
        Poll::Ready(result) => assert_full(result, "tenants-async-str"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = pin!(tenants.by_str_async("globex", AsyncHold::none()));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(ref t)) if t == "globex"));
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme"));
}

#[test]
fn the_global_limit_binds_all_tenants_together() {
    let (_, registry) = manual();
    let tenants = tenants(&registry);
    let (a, release_a) = AsyncHold::until_released();
    let (b, release_b) = AsyncHold::until_released();
    let (c, release_c) = AsyncHold::until_released();
    let mut a = pin!(tenants.by_id(1, a));
    let mut b = pin!(tenants.by_id(2, b));
    let mut c = pin!(tenants.by_id(3, c));
    for call in [a.as_mut(), b.as_mut(), c.as_mut()] {
        assert!(poll(call).is_pending());
    }
    let mut fourth = pin!(tenants.by_id(4, AsyncHold::none()));
    match poll(fourth.as_mut()) {
        Poll::Ready(result) => assert_full(result, "tenants-u64"),
        Poll::Pending => panic!("max_concurrent = 3 calls hold a slot"),
    }
    for release in [release_a, release_b, release_c] {
        release.send(()).unwrap();
    }
    for call in [a.as_mut(), b.as_mut(), c.as_mut()] {
        assert!(poll(call).is_ready());
    }
}

#[test]
fn the_registry_configuration_of_the_id_is_laid_over_the_attribute() {
    let registry = Registry::builder()
        .config_toml(
            r#"
            [bulkhead.instances.tenants-str]
            per_key = 2
            "#,
        )
        .unwrap()
        .build();
    let tenants = tenants(&registry);
    let (first, release_first) = Hold::until_released();
    let (second, release_second) = Hold::until_released();
    thread::scope(|s| {
        let a = s.spawn(|| tenants.by_str("acme", first));
        let b = s.spawn(|| tenants.by_str("acme", second));
        wait_until("both calls of acme run", || runs(&tenants) == 2);
        assert_full(tenants.by_str("acme", Hold::none()), "tenants-str");
        release_first.release();
        release_second.release();
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    assert!(
        registry.bulkhead("tenants-str").is_err(),
        "resolving the configuration registers no plain bulkhead"
    );
}

/// A free function's keyed bulkhead: made on its first call from
/// `Registry::global()`, kept in the function.
#[bulkhead(name = "keyed-fn-sync", max_concurrent = 4, per_key = 1, key = tenant)]
fn render(tenant: &str, hold: Hold, runs: &AtomicU32) -> Result<String, ServiceError> {
    runs.fetch_add(1, Ordering::SeqCst);
    hold.wait();
    Ok(format!("{tenant}!"))
}

#[bulkhead(name = "keyed-fn-async", max_concurrent = 4, per_key = 1, key = tenant)]
async fn render_async(tenant: u64, hold: AsyncHold) -> Result<u64, ServiceError> {
    hold.wait().await;
    Ok(tenant)
}

#[bulkhead(name = "keyed-fn-future", max_concurrent = 4, per_key = 1, key = tenant)]
fn render_future(
    tenant: String,
    hold: AsyncHold,
) -> impl std::future::Future<Output = Result<String, ServiceError>> + Send {
    async move {
        hold.wait().await;
        Ok(tenant)
    }
}

#[test]
fn a_free_function_refuses_a_tenant_at_its_per_key_and_lets_another_pass() {
    let runs = AtomicU32::new(0);
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let running = s.spawn(|| render("acme", hold, &runs));
        wait_until("acme's call runs", || runs.load(Ordering::SeqCst) == 1);
        assert_full(render("acme", Hold::none(), &runs), "keyed-fn-sync");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "a refused call does not run"
        );
        assert_eq!(render("globex", Hold::none(), &runs).unwrap(), "globex!");
        release.release();
        assert_eq!(running.join().unwrap().unwrap(), "acme!");
    });
    assert_eq!(render("acme", Hold::none(), &runs).unwrap(), "acme!");
}

#[test]
fn an_async_function_holds_its_key_until_its_future_completes() {
    let (hold, release) = AsyncHold::until_released();
    let mut first = pin!(render_async(1, hold));
    assert!(poll(first.as_mut()).is_pending());
    let mut again = pin!(render_async(1, AsyncHold::none()));
    match poll(again.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-fn-async"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = pin!(render_async(2, AsyncHold::none()));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(2))));
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(1))));
}

#[test]
fn a_function_returning_a_future_enters_its_key_in_the_future() {
    let (hold, release) = AsyncHold::until_released();
    let mut first = pin!(render_future("acme".to_owned(), hold));
    assert!(poll(first.as_mut()).is_pending());
    let mut again = pin!(render_future("acme".to_owned(), AsyncHold::none()));
    match poll(again.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-fn-future"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = pin!(render_future("globex".to_owned(), AsyncHold::none()));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(ref t)) if t == "globex"));
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme"));
}

#[test]
fn futures_declared_send_or_boxed_enter_their_key_in_the_future() {
    let (_, registry) = manual();
    let tenants = tenants(&registry);
    let (hold, release) = AsyncHold::until_released();
    let mut first = pin!(tenants.by_id_send(7, hold));
    assert_eq!(runs(&tenants), 0, "nothing runs before the first poll");
    assert!(poll(first.as_mut()).is_pending());
    assert_eq!(runs(&tenants), 1);
    let mut again = pin!(tenants.by_id_send(7, AsyncHold::none()));
    match poll(again.as_mut()) {
        Poll::Ready(result) => assert_full(result, "tenants-send"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    assert_eq!(runs(&tenants), 1, "a refused call does not run");
    let mut other = pin!(tenants.by_id_send(8, AsyncHold::none()));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(8))));
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(7))));

    let (hold, release) = AsyncHold::until_released();
    let mut boxed = tenants.by_id_boxed(7, hold);
    assert!(poll(boxed.as_mut()).is_pending());
    let mut again = tenants.by_id_boxed(7, AsyncHold::none());
    match poll(again.as_mut()) {
        Poll::Ready(result) => assert_full(result, "tenants-boxed"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = tenants.by_id_boxed(8, AsyncHold::none());
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(8))));
    release.send(()).unwrap();
    assert!(matches!(poll(boxed.as_mut()), Poll::Ready(Ok(7))));
}

#[test]
fn a_waiting_call_of_a_full_key_gets_the_slot_its_key_gives_back() {
    let (_, registry) = manual();
    let tenants = ResilientWaiting::new(WaitingBackend, &registry).unwrap();
    let (hold, release) = AsyncHold::until_released();
    let mut first = pin!(tenants.call(7, hold));
    assert!(poll(first.as_mut()).is_pending());
    let mut waiting = pin!(tenants.call(7, AsyncHold::none()));
    assert!(
        poll(waiting.as_mut()).is_pending(),
        "it waits for its key's slot"
    );
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(7))));
    assert!(matches!(poll(waiting.as_mut()), Poll::Ready(Ok(7))));
}

#[resilient]
pub trait Waiting: Send + Sync {
    #[bulkhead(max_concurrent = 3, per_key = 1, max_wait = "1h", key = tenant)]
    async fn call(&self, tenant: u64, hold: AsyncHold) -> Result<u64, ServiceError>;
}

struct WaitingBackend;

impl Waiting for WaitingBackend {
    async fn call(&self, tenant: u64, hold: AsyncHold) -> Result<u64, ServiceError> {
        hold.wait().await;
        Ok(tenant)
    }
}

/// A keyed bulkhead under a method's other policies: entered innermost by
/// each attempt, its refusal seen by them as a full bulkhead's.
#[resilient]
pub trait KeyedComposed: Send + Sync {
    #[retry(max_attempts = 3, wait = "0")]
    #[bulkhead(name = "keyed-retried", max_concurrent = 4, per_key = 1, key = tenant)]
    fn retried(&self, tenant: &str) -> Result<String, ServiceError>;

    #[retry(max_attempts = 3, wait = "0", abort_on = [BulkheadFull])]
    #[bulkhead(name = "keyed-aborted", max_concurrent = 4, per_key = 1, key = tenant)]
    fn aborted(&self, tenant: &str) -> Result<String, ServiceError>;

    #[retry(max_attempts = 3, wait = "0")]
    #[bulkhead(name = "keyed-retried-async", max_concurrent = 4, per_key = 1, key = tenant)]
    async fn retried_async(&self, tenant: String) -> Result<String, ServiceError>;

    #[circuit_breaker(
        name = "keyed-recorded",
        minimum_calls = 2,
        sliding_window_size = 2,
        failure_rate_threshold = 50
    )]
    #[bulkhead(name = "keyed-recorded", per_key = 1, key = tenant)]
    fn recorded(&self, tenant: u64) -> Result<u64, ServiceError>;

    #[circuit_breaker(
        name = "keyed-ignored",
        minimum_calls = 2,
        sliding_window_size = 2,
        failure_rate_threshold = 50,
        ignore_on = [BulkheadFull]
    )]
    #[bulkhead(name = "keyed-ignored", per_key = 1, key = tenant)]
    fn ignored(&self, tenant: u64) -> Result<u64, ServiceError>;

    #[timeout(duration = "1s")]
    #[bulkhead(name = "keyed-timed", per_key = 1, max_wait = "1h", key = tenant)]
    async fn timed(&self, tenant: u64) -> Result<u64, ServiceError>;

    /// Without a policy that calls it again: the arguments move into the
    /// one attempt, the key is kept apart (a clone of the `String`).
    #[timeout(duration = "1s")]
    #[bulkhead(name = "keyed-timed-send", per_key = 1, key = tenant)]
    fn timed_send(
        &self,
        tenant: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send;

    #[fallback(method = "cached", on = [BulkheadFull])]
    #[bulkhead(name = "keyed-fallback", per_key = 1, key = tenant)]
    fn with_fallback(&self, tenant: &str) -> Result<String, ServiceError>;

    #[fallback(method = "cached_async", on = [BulkheadFull])]
    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(name = "keyed-fallback-async", per_key = 1, key = tenant)]
    async fn with_fallback_async(&self, tenant: &str) -> Result<String, ServiceError>;

    #[hedge(delay = "1s", max_hedged = 1)]
    #[bulkhead(name = "keyed-hedged", per_key = 2, key = tenant)]
    async fn hedged(&self, tenant: u64) -> Result<u64, ServiceError>;

    fn cached(&self, tenant: &str) -> Result<String, ServiceError>;

    async fn cached_async(&self, tenant: &str) -> Result<String, ServiceError>;
}

/// Counts the calls that reached it, and reads, from inside each, how many
/// slots its key holds in the method's keyed bulkhead.
#[derive(Default)]
struct Inner {
    calls: std::sync::atomic::AtomicUsize,
    /// The keyed bulkheads by id, set once the wrapper made them.
    keyed: std::sync::OnceLock<Vec<(&'static str, bulkhead::KeyedBulkhead<String>)>>,
    /// The in-flight count of the key seen from inside each call.
    seen: std::sync::Mutex<Vec<u32>>,
    /// Errors the next calls fail with.
    failing: AtomicU32,
}

impl Inner {
    fn call(&self, id: &str, tenant: &str) -> Result<String, ServiceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some((_, keyed)) = self
            .keyed
            .get()
            .into_iter()
            .flatten()
            .find(|(i, _)| *i == id)
        {
            self.seen.lock().unwrap().push(keyed.in_flight(tenant));
        }
        if self
            .failing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(ServiceError::Backend("flaky".to_owned()));
        }
        Ok(tenant.to_owned())
    }
}

impl KeyedComposed for Inner {
    fn retried(&self, tenant: &str) -> Result<String, ServiceError> {
        self.call("keyed-retried", tenant)
    }
    fn aborted(&self, tenant: &str) -> Result<String, ServiceError> {
        self.call("keyed-aborted", tenant)
    }
    async fn retried_async(&self, tenant: String) -> Result<String, ServiceError> {
        self.call("keyed-retried-async", &tenant)
    }
    fn recorded(&self, tenant: u64) -> Result<u64, ServiceError> {
        self.call("keyed-recorded", "").map(|_| tenant)
    }
    fn ignored(&self, tenant: u64) -> Result<u64, ServiceError> {
        self.call("keyed-ignored", "").map(|_| tenant)
    }
    async fn timed(&self, tenant: u64) -> Result<u64, ServiceError> {
        self.call("keyed-timed", "").map(|_| tenant)
    }
    fn timed_send(
        &self,
        tenant: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send {
        let result = self.call("keyed-timed-send", &tenant);
        async move { result }
    }
    fn with_fallback(&self, tenant: &str) -> Result<String, ServiceError> {
        self.call("keyed-fallback", tenant)
    }
    async fn with_fallback_async(&self, tenant: &str) -> Result<String, ServiceError> {
        self.call("keyed-fallback-async", tenant)
    }
    async fn hedged(&self, tenant: u64) -> Result<u64, ServiceError> {
        self.call("keyed-hedged", "").map(|_| tenant)
    }
    fn cached(&self, tenant: &str) -> Result<String, ServiceError> {
        Ok(format!("{tenant} (cached)"))
    }
    async fn cached_async(&self, tenant: &str) -> Result<String, ServiceError> {
        Ok(format!("{tenant} (cached)"))
    }
}

fn composed(registry: &Registry) -> ResilientKeyedComposed<Inner> {
    let wrapper =
        ResilientKeyedComposed::new(Inner::default(), registry).expect("the policies resolve");
    let ids = [
        "keyed-retried",
        "keyed-aborted",
        "keyed-retried-async",
        "keyed-fallback",
    ];
    let keyed = ids
        .iter()
        .map(|id| (*id, registry.keyed_bulkhead::<String>(id).unwrap()))
        .collect();
    wrapper.delegate().keyed.set(keyed).ok().unwrap();
    wrapper
}

/// The id of the retry of the method whose keyed bulkhead is `id`.
fn id_of(id: &str) -> String {
    let method = match id {
        "keyed-retried" => "retried(&str)",
        _ => "aborted(&str)",
    };
    format!("macros::keyed::KeyedComposed#{method}")
}

fn calls(wrapper: &ResilientKeyedComposed<Inner>) -> usize {
    wrapper.delegate().calls.load(Ordering::SeqCst)
}

fn seen(wrapper: &ResilientKeyedComposed<Inner>) -> Vec<u32> {
    std::mem::take(&mut *wrapper.delegate().seen.lock().unwrap())
}

/// The `Retrying` events of the retry `id` published since `events`
/// subscribed.
fn retries(events: &mut bulkhead::events::EventStream, id: &str) -> usize {
    use bulkhead::events::{Event, RetryEvent, RetryEventKind};
    let mut retried = 0;
    while let Some(event) = events.try_recv() {
        if let Event::Retry(RetryEvent {
            instance,
            kind: RetryEventKind::Retrying { .. },
            ..
        }) = event
            && instance == id
        {
            retried += 1;
        }
    }
    retried
}

#[test]
fn a_retry_retries_a_key_refusal_unless_abort_on_lists_it() {
    let (_, registry) = manual();
    let wrapper = composed(&registry);
    for (id, retried) in [("keyed-retried", 2), ("keyed-aborted", 0)] {
        let keyed = registry.keyed_bulkhead::<String>(id).unwrap();
        let mut events = registry.subscribe();
        let held = keyed.try_enter("acme").unwrap();
        let call = |tenant| match id {
            "keyed-retried" => wrapper.retried(tenant),
            _ => wrapper.aborted(tenant),
        };
        assert_full(call("acme"), id);
        assert_eq!(retries(&mut events, &id_of(id)), retried, "{id}");
        assert_eq!(calls(&wrapper), 0, "a refused attempt does not run");
        assert_eq!(call("globex").unwrap(), "globex", "another key passes");
        drop(held);
        assert_eq!(call("acme").unwrap(), "acme");
        assert_eq!(seen(&wrapper), [1, 1], "each call held its key's slot");
        assert_eq!(keyed.in_flight("acme"), 0, "and gave it back");
        wrapper.delegate().calls.store(0, Ordering::SeqCst);
    }
}

#[test]
fn each_attempt_takes_its_own_slot_of_the_key() {
    let (_, registry) = manual();
    let wrapper = composed(&registry);
    wrapper.delegate().failing.store(2, Ordering::SeqCst);
    assert_eq!(wrapper.retried("acme").unwrap(), "acme");
    assert_eq!(calls(&wrapper), 3, "the call's own errors are retried");
    assert_eq!(seen(&wrapper), [1, 1, 1], "one slot per attempt, never two");

    wrapper.delegate().failing.store(1, Ordering::SeqCst);
    let mut call = pin!(wrapper.retried_async("acme".to_owned()));
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme"));
    assert_eq!(seen(&wrapper), [1, 1]);
    let keyed = registry
        .keyed_bulkhead::<String>("keyed-retried-async")
        .unwrap();
    let held = keyed.try_enter("acme").unwrap();
    let mut refused = pin!(wrapper.retried_async("acme".to_owned()));
    match poll(refused.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-retried-async"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    drop(held);
    assert_eq!(keyed.in_flight("acme"), 0);
}

#[test]
fn a_breaker_records_key_refusals_unless_ignore_on_lists_them() {
    let (_, registry) = manual();
    let wrapper = composed(&registry);
    for (id, state) in [
        (
            "keyed-recorded",
            bulkhead::circuit_breaker::CircuitState::Open,
        ),
        (
            "keyed-ignored",
            bulkhead::circuit_breaker::CircuitState::Closed,
        ),
    ] {
        let keyed = registry.keyed_bulkhead::<u64>(id).unwrap();
        let held = keyed.try_enter(&7).unwrap();
        for _ in 0..2 {
            let refused = match id {
                "keyed-recorded" => wrapper.recorded(7),
                _ => wrapper.ignored(7),
            };
            assert_full(refused, id);
        }
        drop(held);
        assert_eq!(registry.circuit_breaker(id).unwrap().state(), state, "{id}");
    }
    assert_eq!(calls(&wrapper), 0);
    assert_eq!(wrapper.ignored(7).unwrap(), 7);
}

#[test]
fn a_timeout_cuts_a_call_waiting_for_its_key() {
    let (clock, registry) = manual();
    let wrapper = composed(&registry);
    let keyed = registry.keyed_bulkhead::<u64>("keyed-timed").unwrap();
    let held = keyed.try_enter(&7).unwrap();
    let mut waiting = pin!(wrapper.timed(7));
    assert!(poll(waiting.as_mut()).is_pending());
    assert_eq!(keyed.waiting_calls(), 1);
    let mut other = pin!(wrapper.timed(8));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(8))));
    clock.advance(std::time::Duration::from_secs(1));
    match poll(waiting.as_mut()) {
        Poll::Ready(Err(ServiceError::Rejected(rejection))) => {
            assert_eq!(rejection.kind(), bulkhead::RejectionKind::Timeout);
        }
        other => panic!("the timeout ends the wait, got {other:?}"),
    }
    assert_eq!(
        keyed.waiting_calls(),
        0,
        "the dropped waiter left the queue"
    );
    assert_eq!(calls(&wrapper), 1, "only the other key's call ran");
    drop(held);
    assert_eq!(keyed.in_flight(&7), 0);
}

#[test]
fn a_future_declared_send_keeps_its_key_apart_from_the_arguments() {
    let (_, registry) = manual();
    let wrapper = composed(&registry);
    let keyed = registry
        .keyed_bulkhead::<String>("keyed-timed-send")
        .unwrap();
    let held = keyed.try_enter("acme").unwrap();
    let mut refused = pin!(wrapper.timed_send("acme".to_owned()));
    match poll(refused.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-timed-send"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = pin!(wrapper.timed_send("globex".to_owned()));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(ref t)) if t == "globex"));
    drop(held);
}

#[test]
fn a_fallback_answers_a_key_refusal() {
    let (_, registry) = manual();
    let wrapper = composed(&registry);
    let keyed = registry.keyed_bulkhead::<String>("keyed-fallback").unwrap();
    let held = keyed.try_enter("acme").unwrap();
    assert_eq!(wrapper.with_fallback("acme").unwrap(), "acme (cached)");
    assert_eq!(wrapper.with_fallback("globex").unwrap(), "globex");
    assert_eq!(seen(&wrapper), [1]);
    drop(held);

    let keyed = registry
        .keyed_bulkhead::<String>("keyed-fallback-async")
        .unwrap();
    let held = keyed.try_enter("acme").unwrap();
    let mut answered = pin!(wrapper.with_fallback_async("acme"));
    assert!(matches!(poll(answered.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme (cached)"));
    drop(held);
    let mut call = pin!(wrapper.with_fallback_async("acme"));
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme"));
}

#[test]
fn a_hedged_call_enters_its_key_for_each_attempt() {
    let (_, registry) = manual();
    let wrapper = composed(&registry);
    let keyed = registry.keyed_bulkhead::<u64>("keyed-hedged").unwrap();
    let mut call = pin!(wrapper.hedged(7));
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(7))));
    let (a, b) = (keyed.try_enter(&7).unwrap(), keyed.try_enter(&7).unwrap());
    let mut refused = pin!(wrapper.hedged(7));
    match poll(refused.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-hedged"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    drop((a, b));
    assert_eq!(keyed.in_flight(&7), 0);
}

/// A free function's keyed bulkhead under its other policies: its own
/// `static`, from `Registry::global()`, entered by each attempt.
#[retry(name = "keyed-fn-retried", max_attempts = 3, wait = "0")]
#[bulkhead(name = "keyed-fn-retried", max_concurrent = 4, per_key = 1, key = tenant)]
fn retried_render(tenant: &str, seen: &std::sync::Mutex<Vec<u32>>) -> Result<String, ServiceError> {
    let keyed = Registry::global()
        .keyed_bulkhead::<String>("keyed-fn-retried")
        .unwrap();
    seen.lock().unwrap().push(keyed.in_flight(tenant));
    Ok(format!("{tenant}!"))
}

#[timeout(duration = "1h")]
#[bulkhead(name = "keyed-fn-timed", per_key = 1, key = tenant)]
async fn timed_render(
    tenant: String,
    seen: &std::sync::Mutex<Vec<u32>>,
) -> Result<String, ServiceError> {
    let keyed = Registry::global()
        .keyed_bulkhead::<String>("keyed-fn-timed")
        .unwrap();
    seen.lock().unwrap().push(keyed.in_flight(&tenant));
    Ok(tenant)
}

#[timeout(duration = "1h")]
#[bulkhead(name = "keyed-fn-timed-future", per_key = 1, key = tenant)]
fn timed_future(tenant: u64) -> impl Future<Output = Result<u64, ServiceError>> + Send {
    async move { Ok(tenant) }
}

#[test]
fn a_free_function_retries_a_key_refusal_and_holds_the_slot_in_each_attempt() {
    let seen = std::sync::Mutex::new(Vec::new());
    assert_eq!(retried_render("acme", &seen).unwrap(), "acme!");
    assert_eq!(
        *seen.lock().unwrap(),
        [1],
        "the body ran holding its key's slot"
    );
    let keyed = Registry::global()
        .keyed_bulkhead::<String>("keyed-fn-retried")
        .unwrap();
    let mut events = Registry::global().subscribe();
    let held = keyed.try_enter("acme").unwrap();
    assert_full(retried_render("acme", &seen), "keyed-fn-retried");
    assert_eq!(
        retries(&mut events, "keyed-fn-retried"),
        2,
        "the refusals were retried"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "a refused attempt does not run"
    );
    assert_eq!(retried_render("globex", &seen).unwrap(), "globex!");
    drop(held);
    assert_eq!(keyed.in_flight("acme"), 0);
}

#[test]
fn a_free_async_function_keeps_its_key_apart_from_the_arguments() {
    let seen = std::sync::Mutex::new(Vec::new());
    let mut first = pin!(timed_render("acme".to_owned(), &seen));
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme"));
    assert_eq!(*seen.lock().unwrap(), [1]);
    let keyed = Registry::global()
        .keyed_bulkhead::<String>("keyed-fn-timed")
        .unwrap();
    let held = keyed.try_enter("acme").unwrap();
    let mut refused = pin!(timed_render("acme".to_owned(), &seen));
    match poll(refused.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-fn-timed"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    drop(held);

    let mut first = pin!(timed_future(7));
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(7))));
    let keyed = Registry::global()
        .keyed_bulkhead::<u64>("keyed-fn-timed-future")
        .unwrap();
    let held = keyed.try_enter(&7).unwrap();
    let mut refused = pin!(timed_future(7));
    match poll(refused.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-fn-timed-future"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let mut other = pin!(timed_future(8));
    assert!(matches!(poll(other.as_mut()), Poll::Ready(Ok(8))));
    drop(held);
}

/// Methods with a body: one keyed bulkhead per `Self` type, from
/// `Registry::global()`, alone or under other policies.
struct PerType<T>(std::marker::PhantomData<T>);

impl<T> PerType<T> {
    fn new() -> Self {
        PerType(std::marker::PhantomData)
    }

    /// The id of `method`'s keyed bulkhead for this type.
    fn id(method: &str) -> String {
        format!("{}::{method}", std::any::type_name::<Self>())
    }

    #[bulkhead(per_key = 1, key = tenant)]
    fn alone(&self, tenant: u64, seen: &std::sync::Mutex<Vec<u32>>) -> Result<u64, ServiceError> {
        let keyed = Registry::global()
            .keyed_bulkhead::<u64>(&Self::id("alone(u64, &std::sync::Mutex<Vec<u32>>)"))
            .unwrap();
        seen.lock().unwrap().push(keyed.in_flight(&tenant));
        Ok(tenant)
    }

    #[retry(max_attempts = 3, wait = "0")]
    #[bulkhead(name = "keyed-method-retried", per_key = 1, key = tenant)]
    async fn retried(&self, tenant: &str) -> Result<String, ServiceError> {
        Ok(tenant.to_owned())
    }
}

#[test]
fn a_method_with_a_body_has_a_keyed_bulkhead_per_self_type() {
    let seen = std::sync::Mutex::new(Vec::new());
    let (a, b) = (PerType::<u8>::new(), PerType::<u16>::new());
    assert_eq!(a.alone(7, &seen).unwrap(), 7);
    assert_eq!(b.alone(7, &seen).unwrap(), 7);
    assert_eq!(
        *seen.lock().unwrap(),
        [1, 1],
        "each call held its key's slot"
    );
    let id = PerType::<u8>::id("alone(u64, &std::sync::Mutex<Vec<u32>>)");
    let keyed = Registry::global().keyed_bulkhead::<u64>(&id).unwrap();
    let held = keyed.try_enter(&7).unwrap();
    assert_full(a.alone(7, &seen), &id);
    assert_eq!(b.alone(7, &seen).unwrap(), 7, "another type's bulkhead");
    assert_eq!(a.alone(8, &seen).unwrap(), 8, "another key");
    drop(held);
    assert_eq!(a.alone(7, &seen).unwrap(), 7);
}

#[test]
fn a_method_with_a_body_composes_its_keyed_bulkhead() {
    let a = PerType::<u32>::new();
    let mut first = pin!(a.retried("acme"));
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(ref t)) if t == "acme"));
    let keyed = Registry::global()
        .keyed_bulkhead::<String>("keyed-method-retried")
        .unwrap();
    let held = keyed.try_enter("acme").unwrap();
    let mut events = Registry::global().subscribe();
    let mut refused = pin!(a.retried("acme"));
    match poll(refused.as_mut()) {
        Poll::Ready(result) => assert_full(result, "keyed-method-retried"),
        Poll::Pending => panic!("a full key refuses at once without max_wait"),
    }
    let retry = format!("{}::retried(&str)", std::any::type_name::<PerType<u32>>());
    assert_eq!(retries(&mut events, &retry), 2);
    drop(held);
}

/// An error that says when to try again.
#[derive(Debug)]
pub enum Busy {
    Wait(std::time::Duration),
    Rejected(bulkhead::Rejection),
}

impl From<bulkhead::Rejection> for Busy {
    fn from(rejection: bulkhead::Rejection) -> Self {
        Busy::Rejected(rejection)
    }
}

impl bulkhead::retry::Pushback for Busy {
    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Busy::Wait(wait) => Some(*wait),
            Busy::Rejected(_) => None,
        }
    }
}

#[resilient]
pub trait Throttled: Send + Sync {
    #[retry(max_attempts = 3, wait = "0", max_wait_interval = "1s")]
    #[bulkhead(name = "keyed-pushback", per_key = 1, key = tenant)]
    fn call(&self, tenant: u64, wait: std::time::Duration) -> Result<(), Busy>;
}

#[derive(Default)]
struct Throttler(std::sync::atomic::AtomicUsize);

impl Throttled for Throttler {
    fn call(&self, _tenant: u64, wait: std::time::Duration) -> Result<(), Busy> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Busy::Wait(wait))
    }
}

#[test]
fn the_retry_reads_the_errors_pushback_through_a_keyed_call() {
    let (_, registry) = manual();
    let throttled = ResilientThrottled::new(Throttler::default(), &registry).unwrap();
    let attempts = || throttled.delegate().0.swap(0, Ordering::SeqCst);
    assert!(matches!(
        throttled.call(1, std::time::Duration::from_secs(60)),
        Err(Busy::Wait(_))
    ));
    assert_eq!(
        attempts(),
        1,
        "a minute is past max_wait_interval: given up"
    );
    assert!(throttled.call(1, std::time::Duration::ZERO).is_err());
    assert_eq!(attempts(), 3, "no wait asked beyond it: retried");
    let keyed = registry.keyed_bulkhead::<u64>("keyed-pushback").unwrap();
    let held = keyed.try_enter(&1).unwrap();
    match throttled.call(1, std::time::Duration::ZERO) {
        Err(Busy::Rejected(rejection)) => {
            assert_eq!(rejection.kind(), bulkhead::RejectionKind::BulkheadFull);
        }
        other => panic!("the key's refusal, got {other:?}"),
    }
    assert_eq!(attempts(), 0);
    drop(held);
}

/// A key's refusal reaches the other policies as the call's own error: the
/// histograms still label it `bulkhead_full`, not `error`.
#[test]
fn a_keyed_methods_refusal_by_its_key_is_labelled_bulkhead_full_in_the_histograms() {
    let (_, registry) = manual();
    registry.telemetry().record();
    let throttled = ResilientThrottled::new(Throttler::default(), &registry).unwrap();
    let keyed = registry.keyed_bulkhead::<u64>("keyed-pushback").unwrap();
    let held = keyed.try_enter(&1).unwrap();
    assert!(matches!(
        throttled.call(1, std::time::Duration::ZERO),
        Err(Busy::Rejected(_))
    ));
    drop(held);
    let calls: Vec<_> = registry
        .telemetry()
        .histograms()
        .iter()
        .filter(|h| h.kind().name() != "slot_wait")
        .map(|h| {
            (
                h.kind().name(),
                h.outcome().to_owned(),
                h.histogram().count(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_duration", "bulkhead_full".to_owned(), 1),
            ("attempt_duration", "bulkhead_full".to_owned(), 3),
        ]
    );
}
