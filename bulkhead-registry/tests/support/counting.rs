//! A global allocator that passes every call to the system allocator and
//! counts, per thread, the allocations made and the bytes they asked for.
//! The same as the facade's `tests/support/counting.rs` (a test of this
//! crate cannot reach a file outside it once packaged); the binary that
//! includes it installs it as its global allocator.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Per thread: the tests of one binary run in parallel.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: a thread's allocations after its locals are gone are not
    // counted (nor measured).
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    let _ = BYTES.try_with(|n| n.set(n.get() + bytes));
}

// SAFETY: every call is passed on unchanged to the system allocator; it
// only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` allocated on this thread: (allocations, bytes), and its result
/// (dropped by the caller, after the measurement).
pub(crate) fn allocated_by<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    let (calls, bytes) = (ALLOCATIONS.with(Cell::get), BYTES.with(Cell::get));
    let result = f();
    let calls = ALLOCATIONS.with(Cell::get) - calls;
    let bytes = BYTES.with(Cell::get) - bytes;
    (calls, bytes, result)
}
