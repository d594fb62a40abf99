//! `#[bulkhead]` on functions with a body: free functions and methods in
//! impl blocks, sync and async, resolved once from `Registry::global()`.
//! Every function here has its own id, since the global registry is shared
//! by all tests of this binary.

use std::fmt::Display;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::thread;

use bulkhead::{Registry, bulkhead, function_policy_errors};

use crate::support::{AsyncHold, Hold, ServiceError, assert_full, poll, wait_until};

#[bulkhead(max_concurrent = 1)]
fn render(hold: Hold) -> Result<u32, ServiceError> {
    hold.wait();
    Ok(1)
}

#[test]
fn a_free_function_runs_under_its_bulkhead_from_the_global_registry() {
    const ID: &str = "macros::functions::render(Hold)";
    assert_eq!(render(Hold::none()).unwrap(), 1);
    let handle = Registry::global().bulkhead(ID).unwrap();
    assert_eq!(handle.max_concurrent(), 1);
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        s.spawn(|| render(hold).unwrap());
        wait_until("the call holds the slot", || handle.concurrent_calls() == 1);
        assert_full(render(Hold::none()), ID);
        release.release();
    });
    assert_eq!(handle.concurrent_calls(), 0);
}

#[bulkhead(max_concurrent = 1)]
async fn render_async(hold: AsyncHold) -> Result<u32, ServiceError> {
    hold.wait().await;
    Ok(2)
}

#[test]
fn an_async_function_holds_its_slot_until_its_future_completes() {
    const ID: &str = "macros::functions::render_async(AsyncHold)";
    let (hold, release) = AsyncHold::until_released();
    let mut first = pin!(render_async(hold));
    assert!(poll(first.as_mut()).is_pending());
    let handle = Registry::global().bulkhead(ID).unwrap();
    assert_eq!(handle.concurrent_calls(), 1);
    let mut second = pin!(render_async(AsyncHold::none()));
    match poll(second.as_mut()) {
        Poll::Ready(result) => assert_full(result, ID),
        Poll::Pending => panic!("max_wait is zero"),
    }
    release.send(()).unwrap();
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(2))));
    assert_eq!(handle.concurrent_calls(), 0);
}

#[bulkhead(max_concurrent = 1)]
fn fetch(key: String) -> impl Future<Output = Result<String, ServiceError>> + Send {
    async move { Ok(key) }
}

#[test]
fn a_function_returning_a_future_takes_its_slot_when_the_future_runs() {
    const ID: &str = "macros::functions::fetch(String)";
    let mut call = pin!(fetch("k".into()));
    let handle = Registry::global().bulkhead(ID).unwrap();
    let slot = handle.bulkhead().try_enter().unwrap();
    match poll(call.as_mut()) {
        Poll::Ready(result) => assert_full(result, ID),
        Poll::Pending => panic!("max_wait is zero"),
    }
    drop(slot);
    let mut call = pin!(fetch("k".into()));
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(k)) if k == "k"));
}

#[derive(Debug)]
struct Renderer<T>(T);

impl<T: Display> Renderer<T> {
    #[bulkhead(max_concurrent = 1)]
    fn draw(&self, hold: Hold) -> Result<String, ServiceError> {
        hold.wait();
        Ok(self.0.to_string())
    }

    #[bulkhead(max_concurrent = 3)]
    async fn draw_async(&mut self) -> Result<String, ServiceError> {
        Ok(self.0.to_string())
    }

    #[bulkhead(max_concurrent = 1)]
    fn explode(&self) -> Result<(), ServiceError> {
        panic!("{} exploded", self.0)
    }
}

#[test]
fn a_method_in_an_impl_block_is_named_after_its_self_type_as_type_name_writes_it() {
    const ID: &str = "macros::functions::Renderer<i32>::draw(Hold)";
    let renderer = Renderer(7);
    assert_eq!(renderer.draw(Hold::none()).unwrap(), "7");
    let handle = Registry::global().bulkhead(ID).unwrap();
    let (hold, release) = Hold::until_released();
    let same_type = Renderer(8);
    thread::scope(|s| {
        s.spawn(|| renderer.draw(hold).unwrap());
        wait_until("the call holds the slot", || handle.concurrent_calls() == 1);
        assert_full(same_type.draw(Hold::none()), ID);
        release.release();
    });
    let mut renderer = renderer;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(renderer.draw_async()).unwrap(), "7");
    assert_eq!(
        Registry::global()
            .bulkhead("macros::functions::Renderer<i32>::draw_async()")
            .unwrap()
            .max_concurrent(),
        3
    );
}

#[test]
fn each_instantiation_of_a_generic_impl_has_its_own_bulkhead() {
    let (hold, release) = Hold::until_released();
    let numbers = Renderer(1u64);
    let words = Renderer("words");
    thread::scope(|s| {
        s.spawn(|| numbers.draw(hold).unwrap());
        let handle = || {
            Registry::global()
                .bulkhead("macros::functions::Renderer<u64>::draw(Hold)")
                .ok()
        };
        wait_until("the call holds the slot", || {
            handle().is_some_and(|h| h.concurrent_calls() == 1)
        });
        assert_full(
            Renderer(2u64).draw(Hold::none()),
            "macros::functions::Renderer<u64>::draw(Hold)",
        );
        // Another `Self`: another bulkhead, with a free slot.
        assert_eq!(words.draw(Hold::none()).unwrap(), "words");
        release.release();
    });
    let words = Registry::global()
        .bulkhead("macros::functions::Renderer<&str>::draw(Hold)")
        .unwrap();
    assert_eq!(words.max_concurrent(), 1);
}

#[test]
fn a_function_that_panics_gives_its_slot_back() {
    let renderer = Renderer('b');
    for _ in 0..2 {
        let unwound = std::panic::catch_unwind(|| renderer.explode());
        assert!(unwound.is_err());
    }
    let handle = Registry::global()
        .bulkhead("macros::functions::Renderer<char>::explode()")
        .unwrap();
    assert_eq!(handle.concurrent_calls(), 0);
}

/// A trait whose default method has a bulkhead: one `static` in its body,
/// serving every implementor.
trait Greet {
    #[bulkhead(max_concurrent = 1)]
    fn greet(&self, hold: Hold) -> Result<&'static str, ServiceError> {
        hold.wait();
        Ok("hello")
    }
}

#[derive(Debug)]
struct English;
impl Greet for English {}

#[derive(Debug)]
struct French;
impl Greet for French {}

#[test]
fn a_default_method_has_one_bulkhead_per_implementor_whichever_runs_first() {
    const FRENCH: &str = "macros::functions::French::greet(Hold)";
    const ENGLISH: &str = "macros::functions::English::greet(Hold)";
    // French runs first here; its bulkhead is not English's.
    French.greet(Hold::none()).unwrap();
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        s.spawn(|| English.greet(hold).unwrap());
        let english = || Registry::global().bulkhead(ENGLISH).ok();
        wait_until("the call holds the slot", || {
            english().is_some_and(|h| h.concurrent_calls() == 1)
        });
        assert_full(English.greet(Hold::none()), ENGLISH);
        assert!(
            French.greet(Hold::none()).is_ok(),
            "French has its own slot"
        );
        release.release();
    });
    let french = Registry::global().bulkhead(FRENCH).unwrap();
    let _slot = french.bulkhead().try_enter().unwrap();
    assert_full(French.greet(Hold::none()), FRENCH);
    assert!(English.greet(Hold::none()).is_ok());
}

mod left_side {
    #[derive(Debug)]
    pub struct X;
}

mod right_side {
    #[derive(Debug)]
    pub struct Y;
}

impl Greet for (left_side::X, right_side::Y) {
    #[bulkhead(max_concurrent = 2)]
    fn greet(&self, _: Hold) -> Result<&'static str, ServiceError> {
        Ok("a pair")
    }
}

#[test]
fn a_tuple_self_type_is_written_whole() {
    let pair = (left_side::X, right_side::Y);
    assert_eq!(pair.greet(Hold::none()).unwrap(), "a pair");
    let id = "(macros::functions::left_side::X, macros::functions::right_side::Y)::greet(Hold)";
    assert_eq!(Registry::global().bulkhead(id).unwrap().max_concurrent(), 2);
}

#[bulkhead(max_concurrent = 1)]
fn with_inner_attributes(unused: u8) -> Result<u8, ServiceError> {
    #![allow(unused_variables)]
    #![deny(unused_braces)]
    let x = 1;
    Ok(2)
}

// On one line, as `unused_braces` looks at one-line blocks only.
#[rustfmt::skip]
#[bulkhead(max_concurrent = 1)]
#[deny(unused_braces)]
fn one_line_body(x: u8) -> Result<u8, ServiceError> { Ok(x) }

#[rustfmt::skip]
#[bulkhead(max_concurrent = 1)]
#[deny(unused_braces)]
async fn one_line_async_body(x: u8) -> Result<u8, ServiceError> { Ok(x) }

#[test]
fn inner_attributes_and_one_line_bodies_compile_cleanly() {
    assert_eq!(with_inner_attributes(0).unwrap(), 2);
    assert_eq!(one_line_body(3).unwrap(), 3);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(one_line_async_body(4)).unwrap(), 4);
}

#[bulkhead(name = "functions-shared", max_concurrent = 1)]
fn left() -> Result<(), ServiceError> {
    Ok(())
}

#[bulkhead(name = "functions-shared", max_concurrent = 1)]
fn right() -> Result<(), ServiceError> {
    Ok(())
}

#[test]
fn functions_sharing_a_name_share_one_bulkhead() {
    left().unwrap();
    right().unwrap();
    let handle = Registry::global().bulkhead("functions-shared").unwrap();
    let _slot = handle.bulkhead().try_enter().unwrap();
    assert_full(left(), "functions-shared");
    assert_full(right(), "functions-shared");
}

#[bulkhead(config = "functions-missing-config")]
fn unconfigured() -> Result<u8, ServiceError> {
    Ok(3)
}

#[test]
fn an_unresolvable_function_still_runs_and_its_error_is_kept() {
    const ID: &str = "macros::functions::unconfigured()";
    assert_eq!(unconfigured().unwrap(), 3, "runs under a fallback bulkhead");
    let errors = function_policy_errors();
    let error = errors
        .iter()
        .find(|e| e.to_string().contains(ID))
        .expect("the REG-004 is kept");
    assert_eq!(error.code(), "REG-004");
    assert_eq!(
        Registry::global().bulkhead(ID).unwrap_err().code(),
        "REG-009",
        "the fallback bulkhead is not registered"
    );
}

#[bulkhead(name = "functions-conflict", max_concurrent = 1)]
fn first_declared() -> Result<(), ServiceError> {
    Ok(())
}

#[bulkhead(name = "functions-conflict", max_concurrent = 2)]
fn second_declared() -> Result<(), ServiceError> {
    Ok(())
}

#[test]
fn a_function_conflicting_with_a_shared_name_runs_on_its_own_and_reports_reg_008() {
    first_declared().unwrap();
    second_declared().unwrap();
    let errors = function_policy_errors();
    let error = errors
        .iter()
        .find(|e| {
            e.to_string()
                .contains("macros::functions::second_declared()")
        })
        .expect("the REG-008 is kept");
    assert_eq!(error.code(), "REG-008");
    assert!(
        error
            .to_string()
            .contains("macros::functions::first_declared()")
    );
    let handle = Registry::global().bulkhead("functions-conflict").unwrap();
    assert_eq!(
        handle.max_concurrent(),
        1,
        "the first declaration owns the name"
    );
    let _slot = handle.bulkhead().try_enter().unwrap();
    assert_full(first_declared(), "functions-conflict");
    assert!(
        second_declared().is_ok(),
        "its own fallback bulkhead is free"
    );
}
