//! The shapes of trait `#[resilient]` wraps: generic traits and methods,
//! lifetimes, `&mut self` and `self`, associated types and consts, default
//! methods, associated functions, `impl Future + Send`, boxed futures,
//! `unsafe fn`, result aliases, and use as a trait object.

use std::fmt::Debug;
use std::future::Future;
use std::pin::{Pin, pin};
use std::str::FromStr;
use std::task::Poll;

use bulkhead::{Registry, resilient};

use crate::support::{ServiceError, poll};

type Res<T> = Result<T, ServiceError>;

#[resilient]
pub trait Repo<K: Clone + Debug, V>: Send
where
    V: Default,
{
    /// An associated type, delegated.
    type Cursor: Iterator<Item = K>;
    /// A generic associated type, delegated with its where clause.
    type View<'a>: AsRef<[K]>
    where
        Self: 'a;
    /// An associated const, delegated.
    const NAME: &'static str;

    #[bulkhead(max_concurrent = 1)]
    fn get(&self, key: &K) -> Result<V, ServiceError>;

    #[bulkhead(max_concurrent = 1)]
    fn insert(&mut self, key: K, value: V) -> Result<usize, ServiceError>;

    #[bulkhead(max_concurrent = 1)]
    async fn insert_async(&mut self, key: K) -> Result<usize, ServiceError>;

    #[bulkhead]
    fn parse<T: FromStr>(&self, text: &str) -> Result<T, ServiceError>;

    #[bulkhead]
    fn made<T: Default + Debug, const N: usize>(&self) -> Res<[T; N]>;

    #[bulkhead]
    fn first<'a>(&self, items: &'a [K]) -> Result<&'a K, ServiceError>;

    #[bulkhead]
    fn into_keys(self) -> Result<Vec<K>, ServiceError>
    where
        Self: Sized;

    fn cursor(&self) -> Self::Cursor;

    fn view(&self) -> Self::View<'_>;

    /// A default method: the wrapper calls the delegate's version.
    fn describe(&self) -> String {
        format!("a {} repo", Self::NAME)
    }

    /// An associated function, delegated.
    fn kind() -> &'static str;

    #[bulkhead]
    fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<usize, ServiceError>> + Send + '_>>;

    /// # Safety
    ///
    /// `pointer` must be valid for a read.
    #[bulkhead]
    unsafe fn read_raw(&self, pointer: *const u8) -> Result<u8, ServiceError>;

    #[bulkhead]
    fn r#type(&self) -> Result<&'static str, ServiceError>;
}

#[derive(Debug, Default)]
struct MemRepo {
    keys: Vec<String>,
}

impl Repo<String, u32> for MemRepo {
    type Cursor = std::vec::IntoIter<String>;
    type View<'a> = &'a [String];
    const NAME: &'static str = "memory";

    fn get(&self, key: &String) -> Result<u32, ServiceError> {
        Ok(u32::try_from(key.len()).unwrap_or(u32::MAX))
    }
    fn insert(&mut self, key: String, _value: u32) -> Result<usize, ServiceError> {
        self.keys.push(key);
        Ok(self.keys.len())
    }
    async fn insert_async(&mut self, key: String) -> Result<usize, ServiceError> {
        self.insert(key, 0)
    }
    fn parse<T: FromStr>(&self, text: &str) -> Result<T, ServiceError> {
        text.parse()
            .map_err(|_| ServiceError::Backend(format!("cannot parse {text:?}")))
    }
    fn made<T: Default + Debug, const N: usize>(&self) -> Res<[T; N]> {
        Ok(std::array::from_fn(|_| T::default()))
    }
    fn first<'a>(&self, items: &'a [String]) -> Result<&'a String, ServiceError> {
        items
            .first()
            .ok_or_else(|| ServiceError::Backend("empty".into()))
    }
    fn into_keys(self) -> Result<Vec<String>, ServiceError> {
        Ok(self.keys)
    }
    fn cursor(&self) -> Self::Cursor {
        self.keys.clone().into_iter()
    }
    fn view(&self) -> &[String] {
        &self.keys
    }
    fn kind() -> &'static str {
        "in memory"
    }
    fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<usize, ServiceError>> + Send + '_>> {
        Box::pin(async move { Ok(self.keys.len()) })
    }
    unsafe fn read_raw(&self, pointer: *const u8) -> Result<u8, ServiceError> {
        // SAFETY: the caller promises `pointer` is valid for a read.
        Ok(unsafe { *pointer })
    }
    fn r#type(&self) -> Result<&'static str, ServiceError> {
        Ok("repo")
    }
}

fn repo() -> (Registry, ResilientRepo<MemRepo>) {
    let registry = Registry::new();
    let repo = ResilientRepo::new(MemRepo::default(), &registry).unwrap();
    (registry, repo)
}

#[test]
fn generic_traits_and_methods_are_wrapped() {
    let (registry, repo) = repo();
    assert_eq!(repo.get(&"four".to_owned()).unwrap(), 4);
    assert_eq!(repo.parse::<u16>("42").unwrap(), 42);
    assert!(matches!(
        repo.parse::<u16>("x"),
        Err(ServiceError::Backend(_))
    ));
    assert_eq!(repo.made::<u8, 3>().unwrap(), [0, 0, 0]);
    let id = "macros::shapes::Repo#get(&K)";
    let handle = registry.bulkhead(id).unwrap();
    let _slot = handle.bulkhead().try_enter().unwrap();
    assert!(matches!(
        repo.get(&"x".to_owned()),
        Err(ServiceError::Rejected(_))
    ));
}

#[test]
fn mut_self_and_self_methods_are_wrapped() {
    let (registry, mut repo) = repo();
    assert_eq!(repo.insert("a".into(), 1).unwrap(), 1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(repo.insert_async("b".into())).unwrap(), 2);

    // A pending `&mut self` call holds its slot like any other.
    let handle = registry
        .bulkhead("macros::shapes::Repo#insert_async(K)")
        .unwrap();
    {
        let mut call = pin!(repo.insert_async("c".into()));
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(3))));
    }
    assert_eq!(handle.concurrent_calls(), 0);
    assert_eq!(repo.into_keys().unwrap(), ["a", "b", "c"]);
}

#[test]
fn lifetimes_associated_items_and_default_methods_pass_through() {
    let (_, mut repo) = repo();
    repo.insert("x".into(), 1).unwrap();
    let items = ["first".to_owned(), "second".to_owned()];
    assert_eq!(repo.first(&items).unwrap(), "first");
    assert_eq!(repo.cursor().collect::<Vec<_>>(), ["x"]);
    let view: &[String] = repo.view();
    assert_eq!(view, ["x"]);
    assert_eq!(
        <ResilientRepo<MemRepo> as Repo<String, u32>>::NAME,
        "memory"
    );
    assert_eq!(repo.describe(), "a memory repo");
    assert_eq!(
        <ResilientRepo<MemRepo> as Repo<String, u32>>::kind(),
        "in memory"
    );
    assert_eq!(repo.r#type().unwrap(), "repo");
    let byte = 7u8;
    // SAFETY: `&byte` is valid for a read.
    assert_eq!(unsafe { repo.read_raw(&byte) }.unwrap(), 7);
}

#[test]
fn boxed_futures_are_wrapped_and_stay_send() {
    let (registry, repo) = repo();
    let future = repo.boxed();
    assert_send(&future);
    let handle = registry.bulkhead("macros::shapes::Repo#boxed()").unwrap();
    let _slot = handle.bulkhead().try_enter().unwrap();
    let _others: Vec<_> = (1..25)
        .map(|_| handle.bulkhead().try_enter().unwrap())
        .collect();
    let mut future = future;
    assert!(matches!(
        poll(future.as_mut()),
        Poll::Ready(Err(ServiceError::Rejected(_)))
    ));
}

fn assert_send<T: Send>(_: &T) {}

/// A trait with no `Send` or `Sync` bound at all, whose delegate is not
/// `Sync`: the `+ Send` promise of the trait is kept by the wrapper.
#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 1)]
    fn fetch(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send;

    #[bulkhead(max_concurrent = 1)]
    async fn fetch_async(&self, key: String) -> Result<String, ServiceError>;

    /// A future that borrows nothing, so that it can be spawned.
    #[bulkhead(max_concurrent = 1)]
    fn fetch_static(
        &self,
        key: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send + 'static;

    #[bulkhead(max_concurrent = 1)]
    fn fetch_boxed(
        &self,
        key: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, ServiceError>> + Send>>;
}

#[derive(Debug, Default)]
struct NotSync(std::cell::Cell<u32>);

impl Fetch for NotSync {
    fn fetch(&self, key: String) -> impl Future<Output = Result<String, ServiceError>> + Send {
        self.0.set(self.0.get() + 1);
        async move { Ok(key) }
    }
    async fn fetch_async(&self, key: String) -> Result<String, ServiceError> {
        Ok(key)
    }
    fn fetch_static(
        &self,
        key: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send + 'static {
        self.0.set(self.0.get() + 1);
        async move { Ok(key) }
    }
    fn fetch_boxed(
        &self,
        key: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, ServiceError>> + Send>> {
        Box::pin(async move { Ok(key) })
    }
}

#[test]
fn a_static_future_borrows_nothing_from_the_wrapper_and_can_be_spawned() {
    let registry = Registry::new();
    let fetch = ResilientFetch::new(NotSync::default(), &registry).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let spawned = runtime.spawn(fetch.fetch_static("s".into()));
    let boxed = runtime.spawn(fetch.fetch_boxed("b".into()));
    drop(fetch);
    assert_eq!(runtime.block_on(spawned).unwrap().unwrap(), "s");
    assert_eq!(runtime.block_on(boxed).unwrap().unwrap(), "b");

    // A detached future still takes its slot in the shared bulkhead.
    let fetch = ResilientFetch::new(NotSync::default(), &registry).unwrap();
    let handle = registry
        .bulkhead("macros::shapes::Fetch#fetch_static(String)")
        .unwrap();
    let mut pending = Box::pin(fetch.fetch_static("x".into()));
    let _slot = handle.bulkhead().try_enter().unwrap();
    assert!(matches!(
        poll(pending.as_mut()),
        Poll::Ready(Err(ServiceError::Rejected(_)))
    ));
}

#[test]
fn a_wrapper_over_a_send_future_is_send() {
    let registry = Registry::new();
    let fetch = ResilientFetch::new(NotSync::default(), &registry).unwrap();
    let future = fetch.fetch("k".into());
    assert_send(&future);
    // Polled to completion on another thread than the one that made it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let output = std::thread::scope(|s| s.spawn(|| runtime.block_on(future)).join().unwrap());
    assert_eq!(output.unwrap(), "k");
    assert_eq!(fetch.delegate().0.get(), 1);
    let future = fetch.fetch_async("a".into());
    assert_eq!(runtime.block_on(future).unwrap(), "a");
}

#[test]
fn an_async_fn_wrapper_is_send_when_the_delegates_future_is() {
    let (_, registry) = crate::support::manual();
    let service = crate::support::service(&registry);
    let future = crate::support::Service::call_async(&service, crate::support::AsyncHold::none());
    assert_send(&future);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(future).unwrap(), 1);
}

/// Traits with only sync methods can be used as trait objects, wrapper
/// included.
#[resilient]
pub trait Greeter: Send + Sync {
    #[bulkhead(max_concurrent = 1)]
    fn greet(&self, name: &str) -> Result<String, ServiceError>;
}

#[derive(Debug)]
struct Hello;

impl Greeter for Hello {
    fn greet(&self, name: &str) -> Result<String, ServiceError> {
        Ok(format!("hello {name}"))
    }
}

#[test]
fn a_wrapper_can_be_a_trait_object() {
    let registry = Registry::new();
    let greeters: Vec<Box<dyn Greeter>> = vec![
        Box::new(Hello),
        Box::new(ResilientGreeter::new(Hello, &registry).unwrap()),
    ];
    for greeter in &greeters {
        assert_eq!(greeter.greet("you").unwrap(), "hello you");
    }
}
