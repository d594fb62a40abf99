//! What a live key of a `KeyedBulkhead` costs in memory (issue 31): one
//! million live keys, `u64` and `String` (10 bytes), measured by a counting
//! global allocator; then every key evicted (a `ManualClock` moved past
//! `idle_evict` twice, `evict_idle` after each), back to the empty map's
//! size.
//!
//! `cargo run --release -p bulkhead-extras --example keyed_memory`
//! (`-- 100000` for another number of keys).
//!
//! What is counted, per key, "beyond the key itself":
//!
//! ```text
//! overhead = (heap(N keys live) - heap(no key live)) / N
//!            - size_of::<K>()              // the key's own bytes
//!            - the key's own heap bytes     // String: its buffer (10 B)
//! ```
//!
//! `heap` is the sum of the sizes the program asked the allocator for
//! (`Layout::size`), still allocated. The key's own bytes are counted where
//! the map keeps them (the key is moved into the map: its 8 or 24 bytes
//! sit in the key's node, its buffer is the one `to_owned` made), so what
//! remains is what the map adds: the slot word and limits beside the key,
//! the table's buckets and control bytes (with its spare capacity), and
//! anything else. The same sum with each allocation's usable size
//! (`malloc_usable_size`: the allocator's rounding up of each block) is
//! printed beside it, and, for glibc's malloc, the chunk header (8 bytes a
//! block) on top; the process's resident memory (`/proc/self/statm`) as a
//! cross-check (after the eviction also after glibc's `malloc_trim(0)`,
//! since glibc keeps freed small blocks for reuse). Allocations of 4 KiB and more are the tables' bucket
//! arrays (one per shard); smaller ones are the nodes (and the Strings'
//! buffers), which splits the overhead between table and nodes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use bulkhead_core::{BulkheadConfig, KeyedBulkhead, ManualClock, PolicyContext};

unsafe extern "C" {
    /// glibc's usable size of a block `malloc` returned.
    fn malloc_usable_size(ptr: *mut std::ffi::c_void) -> usize;
    /// glibc: gives the free memory at the top of the heap (and free
    /// pages within it) back to the system.
    fn malloc_trim(pad: usize) -> std::ffi::c_int;
}

/// Allocations of at least this size are the tables' bucket arrays.
const LARGE: usize = 4096;

/// The live heap, by requested and by usable size, small and large, and
/// the live blocks.
struct Counting;

static REQUESTED: AtomicIsize = AtomicIsize::new(0);
static USABLE: AtomicIsize = AtomicIsize::new(0);
static LARGE_REQUESTED: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn added(ptr: *mut u8, size: usize) {
    // SAFETY: `ptr` was just returned by the system allocator (malloc).
    let usable = unsafe { malloc_usable_size(ptr.cast()) };
    let now = REQUESTED.fetch_add(size as isize, Relaxed) + size as isize;
    USABLE.fetch_add(usable as isize, Relaxed);
    BLOCKS.fetch_add(1, Relaxed);
    if size >= LARGE {
        LARGE_REQUESTED.fetch_add(size as isize, Relaxed);
    }
    PEAK.fetch_max(now.max(0) as usize, Relaxed);
}

fn removed(ptr: *mut u8, size: usize) {
    // SAFETY: `ptr` is a live block of the system allocator, not yet freed.
    let usable = unsafe { malloc_usable_size(ptr.cast()) };
    REQUESTED.fetch_sub(size as isize, Relaxed);
    USABLE.fetch_sub(usable as isize, Relaxed);
    BLOCKS.fetch_sub(1, Relaxed);
    if size >= LARGE {
        LARGE_REQUESTED.fetch_sub(size as isize, Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only
// read the blocks' sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            added(ptr, layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            added(ptr, layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        removed(ptr, layout.size());
        // SAFETY: forwarded: `ptr` was allocated here with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        removed(ptr, layout.size());
        // SAFETY: forwarded: `ptr` was allocated here with `layout`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if new.is_null() {
            added(ptr, layout.size());
        } else {
            added(new, new_size);
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The heap now.
#[derive(Clone, Copy)]
struct Heap {
    requested: isize,
    usable: isize,
    large: isize,
    blocks: isize,
    resident: isize,
}

fn heap() -> Heap {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: isize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Heap {
        requested: REQUESTED.load(Relaxed),
        usable: USABLE.load(Relaxed),
        large: LARGE_REQUESTED.load(Relaxed),
        blocks: BLOCKS.load(Relaxed),
        resident: pages * 4096,
    }
}

/// One key type: how to write key `i` into a reusable buffer (no
/// allocation per lookup), its own heap bytes.
trait Key: std::hash::Hash + Eq + Send + Sync + 'static + Sized {
    const NAME: &'static str;
    type Buf: Default;
    fn enter(keyed: &KeyedBulkhead<Self>, buf: &mut Self::Buf, i: u64) -> bool;
    /// The heap bytes of one key (what `to_owned` of the borrowed form
    /// allocates).
    fn own_heap() -> usize;
}

impl Key for u64 {
    const NAME: &'static str = "u64";
    type Buf = ();
    fn enter(keyed: &KeyedBulkhead<u64>, _: &mut (), i: u64) -> bool {
        keyed.try_enter(&i).is_ok()
    }
    fn own_heap() -> usize {
        0
    }
}

impl Key for String {
    const NAME: &'static str = "String (10 B)";
    type Buf = String;
    fn enter(keyed: &KeyedBulkhead<String>, buf: &mut String, i: u64) -> bool {
        use std::fmt::Write;
        buf.clear();
        let _ = write!(buf, "k{i:09}");
        keyed.try_enter(buf.as_str()).is_ok()
    }
    fn own_heap() -> usize {
        10
    }
}

const IDLE_EVICT: Duration = Duration::from_secs(60);

/// The measurements of one key type.
fn measure<K: Key>(n: u64) {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(1000)
        .per_key(1)
        .max_keys(u32::try_from(2 * n).unwrap_or(u32::MAX))
        .idle_evict(IDLE_EVICT)
        .build()
        .expect("a valid keyed bulkhead");
    let keyed: KeyedBulkhead<K> = KeyedBulkhead::with_context(
        "memory",
        config,
        PolicyContext::new(Arc::new(clock.clone())),
    );
    let mut buf = K::Buf::default();
    // A first key and its eviction, so that anything made once (the
    // sweeper's list, a lock's state) is made before the empty map is
    // measured.
    assert!(K::enter(&keyed, &mut buf, u64::MAX));
    let _ = evict(&keyed, &clock);
    assert_eq!(keyed.keys(), 0);
    PEAK.store(0, Relaxed);
    let empty = heap();
    for i in 0..n {
        assert!(K::enter(&keyed, &mut buf, i), "key {i} refused");
    }
    let live = heap();
    let peak = PEAK.load(Relaxed) as isize;
    assert_eq!(keyed.keys() as u64, n);
    let took = evict(&keyed, &clock);
    SWEEPS.with(|sweeps| sweeps.borrow_mut().push((K::NAME, took)));
    let evicted = heap();
    // SAFETY: no precondition; it only returns free memory to the system.
    unsafe { malloc_trim(0) };
    let trimmed = heap();
    assert_eq!(keyed.keys(), 0, "keys left after two sweeps");
    // Back to the empty map: within a page of bookkeeping, not a byte per
    // key (a leak of nodes or of a table would be megabytes).
    assert!(
        evicted.requested - empty.requested < 4096,
        "{} bytes left after evicting every key",
        evicted.requested - empty.requested
    );

    let per = |bytes: isize| bytes as f64 / n as f64;
    let key_bytes = (std::mem::size_of::<K>() + K::own_heap()) as f64;
    let requested = per(live.requested - empty.requested);
    let usable = per(live.usable - empty.usable);
    let blocks = per(live.blocks - empty.blocks);
    let large = per(live.large - empty.large);
    let small = requested - large;
    println!(
        "| {} | {n} | {:.1} | **{:.1}** | {:.1} | {:.1} | {:.1} | {large:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {} B ({:+}) |",
        K::NAME,
        requested,
        requested - key_bytes,
        usable - key_bytes,
        usable + 8.0 * blocks - key_bytes,
        small - key_bytes,
        per(peak - empty.requested),
        blocks,
        per(live.resident - empty.resident),
        per(evicted.resident - empty.resident),
        per(trimmed.resident - empty.resident),
        evicted.requested,
        evicted.requested - empty.requested,
    );
}

/// Moves the clock past `idle_evict` twice, sweeping after each (a key is
/// evicted by the first sweep at least `idle_evict` after one that saw it
/// idle).
fn evict<K: Key>(keyed: &KeyedBulkhead<K>, clock: &ManualClock) -> [std::time::Duration; 2] {
    let mut took = [std::time::Duration::ZERO; 2];
    for took in &mut took {
        clock.advance(IDLE_EVICT);
        let started = std::time::Instant::now();
        keyed.evict_idle();
        *took = started.elapsed();
    }
    // The first sweep walks every key (none idle long enough yet), the
    // second frees them all; each holds one shard's write lock at a time.
    took
}

thread_local! {
    /// How long each key type's two sweeps took, printed after the table.
    static SWEEPS: std::cell::RefCell<Vec<(&'static str, [std::time::Duration; 2])>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    println!(
        "Per live key, bytes; beyond the key = heap asked for / N - size_of::<K>() - the key's own heap bytes; {} shards\n",
        std::thread::available_parallelism()
            .map_or(4, |p| p.get() * 4)
            .next_power_of_two()
            .clamp(4, 64)
    );
    println!(
        "| key | N | heap asked / key | beyond the key | beyond, usable sizes | beyond, usable + 8 B header | nodes' share (blocks < 4 KiB) | tables' share (blocks >= 4 KiB) | peak while growing / key | blocks / key | resident / key | resident after eviction / key | the same after `malloc_trim(0)` | heap after eviction (vs empty) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    measure::<u64>(n);
    measure::<String>(n);
    println!("\nSweeps of the {n} live keys (wall time, this machine):\n");
    SWEEPS.with(|sweeps| {
        for (name, [walk, free]) in sweeps.borrow().iter() {
            println!(
                "- {name}: a sweep that evicts none {walk:.1?}, one that evicts them all {free:.1?}"
            );
        }
    });
}
