//! Generated code uses absolute paths only: a module that defines its own
//! `core`, `std` and `bulkhead`, and shadows the prelude's names, still gets
//! working wrappers and functions. Its bindings cannot be mistaken for the
//! user's unit structs and consts either (a pattern `permit` would match a
//! unit struct `permit` instead of binding a variable).
#![allow(dead_code, non_camel_case_types, non_upper_case_globals, clippy::all)]

mod core {}
mod std {}
mod bulkhead {}

struct Result;
struct Ok;
struct Err;
struct Option;
struct Some;
struct None;
struct Box;
struct String;
struct Duration;
struct Future;
struct Clone;
struct Debug;
struct Send;
struct Sync;
fn drop() {}

// Names a hand-written wrapper would use for its variables.
struct permit;
struct _permit;
struct call;
struct output;
struct rejected;
struct reject;
struct input;
struct delegate;
struct registry;
struct f;
struct debug;
struct wrapper;
struct arg0;
const arg1: u8 = 0;
const arg2: u8 = 0;
const POLICY: u8 = 0;
struct policies;
struct flatten;
struct classifier;
struct once;
struct lend;
struct lent;
struct retry_if;
struct record_if;
struct Policies;
struct Classifier;
struct Arc;
fn again() {}
fn attempt() {}
fn call_async() {}
fn concat() {}
fn module_path() {}
struct key;
struct ToOwned;
struct KeyedBulkhead;
struct KeyedFn;
fn enter_keyed() {}
fn keyed_bulkhead() {}
struct KeyedPolicies;
struct KeyedClassify;
fn call_keyed() {}
fn call_keyed_async() {}
fn call_keyed_hedged() {}
struct KeyedMethod;

type Res<T> = ::std::result::Result<T, Error>;

#[derive(::std::fmt::Debug)]
struct Error(::bulkhead::Rejection);

impl ::std::convert::From<::bulkhead::Rejection> for Error {
    fn from(rejection: ::bulkhead::Rejection) -> Self {
        Error(rejection)
    }
}

#[::bulkhead::resilient]
trait Shadowed: ::std::marker::Send + ::std::marker::Sync {
    #[bulkhead(
        name = "shadowed",
        max_concurrent = 1,
        max_wait = "10ms",
        enabled = true
    )]
    fn sync_call(&self, value: u32) -> Res<u32>;

    #[bulkhead(
        name = "shadowed",
        max_concurrent = 1,
        max_wait = "10ms",
        enabled = true
    )]
    async fn async_call(&mut self, value: u32) -> Res<u32>;

    #[bulkhead(max_concurrent = 2)]
    fn future_call(
        &self,
    ) -> impl ::std::future::Future<Output = ::std::result::Result<u8, Error>> + ::std::marker::Send;

    #[bulkhead(max_concurrent = 2)]
    fn boxed_call(
        &self,
    ) -> ::std::pin::Pin<
        ::std::boxed::Box<
            dyn ::std::future::Future<Output = ::std::result::Result<u8, Error>>
                + ::std::marker::Send
                + '_,
        >,
    >;

    #[bulkhead(max_concurrent = 2)]
    fn future_with_arguments(
        &self,
        value: u32,
        label: &str,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send;

    #[::bulkhead::retry(name = "shadowed-retry", max_attempts = 2, wait = "0", retry_if = transient, abort_on = [BulkheadFull])]
    #[circuit_breaker(record_if = transient, ignore_on = [Timeout], sliding_window = "time")]
    #[timeout(duration = "1s")]
    #[rate_limiter(limit_for_period = 10)]
    #[bulkhead(max_concurrent = 2)]
    fn composed(&self, value: u32, label: &str) -> Res<u32>;

    #[retry(max_attempts = 2, wait = "0", retry_if = transient)]
    #[timeout(duration = "1s")]
    async fn composed_async(&mut self, value: u32) -> Res<u32>;

    #[timeout(duration = "1s")]
    fn composed_future(
        &self,
        value: u32,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send;

    #[timeout(duration = "1s")]
    fn composed_once(self, value: u32) -> Res<u32>
    where
        Self: ::std::marker::Sized;

    #[bulkhead(name = "shadowed-keyed", per_key = 1, key = tenant)]
    fn keyed_call(&self, tenant: &str, value: u32) -> Res<u32>;

    #[bulkhead(per_key = 1, key = tenant)]
    async fn keyed_async(&mut self, tenant: u32, value: u32) -> Res<u32>;

    #[bulkhead(per_key = 1, key = tenant)]
    fn keyed_future(
        &self,
        tenant: u64,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send;

    #[retry(max_attempts = 2, wait = "0", retry_if = transient)]
    #[bulkhead(name = "shadowed-keyed-retried", per_key = 1, key = tenant)]
    fn keyed_retried(&self, tenant: &str, value: u32) -> Res<u32>;

    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(per_key = 1, key = tenant)]
    async fn keyed_retried_async(&mut self, tenant: u32, value: u32) -> Res<u32>;

    #[timeout(duration = "1s")]
    #[bulkhead(per_key = 1, key = tenant)]
    fn keyed_timed_future(
        &self,
        tenant: u64,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send;

    fn plain(&self) -> u32;
}

fn transient(_: &Error) -> bool {
    true
}

#[derive(::std::fmt::Debug, ::std::clone::Clone)]
struct Backend;

impl Shadowed for Backend {
    fn sync_call(&self, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value)
    }
    async fn async_call(&mut self, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + 1)
    }
    fn future_call(
        &self,
    ) -> impl ::std::future::Future<Output = ::std::result::Result<u8, Error>> + ::std::marker::Send
    {
        async { ::std::result::Result::Ok(2) }
    }
    fn boxed_call(
        &self,
    ) -> ::std::pin::Pin<
        ::std::boxed::Box<
            dyn ::std::future::Future<Output = ::std::result::Result<u8, Error>>
                + ::std::marker::Send
                + '_,
        >,
    > {
        ::std::boxed::Box::pin(async { ::std::result::Result::Ok(3) })
    }
    fn future_with_arguments(
        &self,
        value: u32,
        label: &str,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send {
        let length = label.len() as u32;
        async move { ::std::result::Result::Ok(value + length) }
    }
    fn composed(&self, value: u32, label: &str) -> Res<u32> {
        ::std::result::Result::Ok(value + label.len() as u32)
    }
    async fn composed_async(&mut self, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + 10)
    }
    fn composed_future(
        &self,
        value: u32,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send {
        async move { ::std::result::Result::Ok(value + 20) }
    }
    fn composed_once(self, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + 30)
    }
    fn keyed_call(&self, tenant: &str, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + tenant.len() as u32)
    }
    async fn keyed_async(&mut self, tenant: u32, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + tenant)
    }
    fn keyed_future(
        &self,
        tenant: u64,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send {
        async move { ::std::result::Result::Ok(tenant as u32) }
    }
    fn keyed_retried(&self, tenant: &str, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + tenant.len() as u32)
    }
    async fn keyed_retried_async(&mut self, tenant: u32, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + tenant)
    }
    fn keyed_timed_future(
        &self,
        tenant: u64,
    ) -> impl ::std::future::Future<Output = Res<u32>> + ::std::marker::Send {
        async move { ::std::result::Result::Ok(tenant as u32) }
    }
    fn plain(&self) -> u32 {
        7
    }
}

#[::bulkhead::bulkhead(per_key = 1, key = tenant)]
fn keyed_function(tenant: &str) -> Res<u32> {
    ::std::result::Result::Ok(tenant.len() as u32)
}

#[::bulkhead::bulkhead(per_key = 1, key = tenant)]
async fn keyed_async_function(tenant: u8) -> Res<u32> {
    ::std::result::Result::Ok(u32::from(tenant))
}

#[::bulkhead::retry(max_attempts = 2, wait = "0", retry_if = transient)]
#[::bulkhead::bulkhead(per_key = 1, key = tenant)]
fn keyed_retried_function(tenant: &str, value: u32) -> Res<u32> {
    ::std::result::Result::Ok(tenant.len() as u32 + value)
}

#[::bulkhead::timeout(duration = "1s")]
#[::bulkhead::bulkhead(per_key = 1, key = tenant)]
async fn keyed_timed_function(tenant: u64, value: u32) -> Res<u32> {
    ::std::result::Result::Ok(tenant as u32 + value)
}

#[::bulkhead::bulkhead(max_concurrent = 1)]
fn free_function(value: u32) -> Res<u32> {
    ::std::result::Result::Ok(value * 2)
}

#[::bulkhead::bulkhead(max_concurrent = 1)]
async fn free_async_function(value: u32) -> Res<u32> {
    ::std::result::Result::Ok(value * 3)
}

#[::bulkhead::bulkhead(max_concurrent = 1)]
fn free_future_function() -> impl ::std::future::Future<Output = Res<u32>> {
    async { ::std::result::Result::Ok(4) }
}

impl Backend {
    #[::bulkhead::bulkhead(max_concurrent = 1)]
    fn method(&self) -> Res<u32> {
        ::std::result::Result::Ok(5)
    }

    #[::bulkhead::retry(max_attempts = 2, wait = "0", retry_if = transient)]
    #[::bulkhead::timeout(duration = "1s")]
    fn retried_method(&self, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + 6)
    }

    #[::bulkhead::bulkhead(per_key = 1, key = tenant)]
    fn keyed_method(&self, tenant: &str) -> Res<u32> {
        ::std::result::Result::Ok(tenant.len() as u32)
    }

    #[::bulkhead::retry(max_attempts = 2, wait = "0")]
    #[::bulkhead::bulkhead(per_key = 1, key = tenant)]
    async fn keyed_retried_method(&self, tenant: u32) -> Res<u32> {
        ::std::result::Result::Ok(tenant + 1)
    }

    #[::bulkhead::circuit_breaker(record_if = transient)]
    async fn async_method(&self, value: u32) -> Res<u32> {
        ::std::result::Result::Ok(value + 7)
    }
}

#[::bulkhead::retry(max_attempts = 2, wait = "0")]
#[::bulkhead::rate_limiter(limit_for_period = 100)]
fn retried_function(value: u32, label: &str) -> Res<u32> {
    ::std::result::Result::Ok(value + label.len() as u32)
}

#[::bulkhead::timeout(duration = "1s")]
fn timed_future_function() -> impl ::std::future::Future<Output = Res<u32>> {
    async { ::std::result::Result::Ok(8) }
}

#[test]
fn generated_code_ignores_the_users_core_std_and_prelude_names() {
    let the_registry = ::bulkhead::Registry::new();
    let mut shadowed = ResilientShadowed::new(Backend, &the_registry).unwrap();
    let clone = ::std::clone::Clone::clone(&shadowed);
    assert_eq!(shadowed.sync_call(1).unwrap(), 1);
    assert_eq!(clone.plain(), 7);
    let runtime = ::tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(shadowed.async_call(1)).unwrap(), 2);
    assert_eq!(runtime.block_on(shadowed.future_call()).unwrap(), 2);
    assert_eq!(runtime.block_on(shadowed.boxed_call()).unwrap(), 3);
    assert_eq!(
        runtime
            .block_on(shadowed.future_with_arguments(1, "ab"))
            .unwrap(),
        3
    );
    assert_eq!(free_function(2).unwrap(), 4);
    assert_eq!(runtime.block_on(free_async_function(2)).unwrap(), 6);
    assert_eq!(runtime.block_on(free_future_function()).unwrap(), 4);
    assert_eq!(Backend.method().unwrap(), 5);
    assert_eq!(shadowed.composed(1, "ab").unwrap(), 3);
    assert_eq!(runtime.block_on(shadowed.composed_async(1)).unwrap(), 11);
    assert_eq!(runtime.block_on(shadowed.composed_future(1)).unwrap(), 21);
    assert_eq!(Backend.retried_method(1).unwrap(), 7);
    assert_eq!(runtime.block_on(Backend.async_method(1)).unwrap(), 8);
    assert_eq!(retried_function(1, "abc").unwrap(), 4);
    assert_eq!(runtime.block_on(timed_future_function()).unwrap(), 8);
    assert!(the_registry.retry("shadowed-retry").is_ok());
    assert!(::std::format!("{shadowed:?}").starts_with("ResilientShadowed"));
    assert_eq!(
        the_registry.bulkhead("shadowed").unwrap().max_concurrent(),
        1
    );
    assert_eq!(shadowed.keyed_call("ab", 1).unwrap(), 3);
    assert_eq!(runtime.block_on(shadowed.keyed_async(2, 1)).unwrap(), 3);
    assert_eq!(runtime.block_on(shadowed.keyed_future(4)).unwrap(), 4);
    assert_eq!(keyed_function("abc").unwrap(), 3);
    assert_eq!(runtime.block_on(keyed_async_function(5)).unwrap(), 5);
    assert_eq!(shadowed.keyed_retried("ab", 1).unwrap(), 3);
    assert_eq!(
        runtime
            .block_on(shadowed.keyed_retried_async(2, 1))
            .unwrap(),
        3
    );
    assert_eq!(runtime.block_on(shadowed.keyed_timed_future(4)).unwrap(), 4);
    assert_eq!(keyed_retried_function("ab", 1).unwrap(), 3);
    assert_eq!(runtime.block_on(keyed_timed_function(2, 1)).unwrap(), 3);
    assert_eq!(Backend.keyed_method("abc").unwrap(), 3);
    assert_eq!(
        runtime.block_on(Backend.keyed_retried_method(1)).unwrap(),
        2
    );
    assert_eq!(shadowed.composed_once(1).unwrap(), 31);
}
