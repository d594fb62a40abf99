//! B11 through generated code: a call with a free slot and a rejected call
//! allocate nothing, sync or async, wrapper or function. Allocations are
//! counted per thread by the binary's global allocator (see `main.rs`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::pin::pin;
use std::task::Poll;

use bulkhead::bulkhead;

use crate::support::{AsyncHold, Hold, Service, ServiceError, id, manual, poll, service};

/// The system allocator, counting the allocations of each thread.
pub struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// How many allocations `f` made on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    let output = f();
    let after = ALLOCATIONS.with(Cell::get);
    drop(output);
    after - before
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
