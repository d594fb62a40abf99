//! Keyed bulkheads from the attribute: `#[bulkhead(per_key = .., key =
//! tenant)]` on sync and async methods of a `#[resilient]` trait, keyed by
//! `&str`, `String` and `u64` arguments, and on free functions with a
//! body.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Poll;
use std::thread;

use bulkhead::{Registry, bulkhead, resilient};

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
