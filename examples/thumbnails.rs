//! The manual's `ThumbnailService`: one `#[resilient]` trait with sync and
//! async methods, two of them sharing the `"thumbnails"` bulkhead, driven
//! past its limits while the registry's snapshots show what each bulkhead
//! is doing.
//!
//! Run it with `cargo run --example thumbnails`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use bulkhead::registry::RegistrySnapshot;
use bulkhead::{Registry, Rejection, resilient};

/// What a thumbnail call can fail with: a full bulkhead, or the backend.
#[derive(Debug)]
enum ThumbError {
    Busy(Rejection),
    Backend(String),
}

impl From<Rejection> for ThumbError {
    fn from(rejection: Rejection) -> Self {
        ThumbError::Busy(rejection)
    }
}

#[resilient]
trait ThumbnailService: Send + Sync {
    /// At most 4 renders at once; a fifth caller waits up to 250ms.
    #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
    fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, ThumbError>;

    /// Shares the 4 slots of `thumbnail`: same name, same configuration.
    #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
    fn preview(&self, image_id: &str, width: u32) -> Result<Vec<u8>, ThumbError>;

    /// Async callers queue (without blocking a thread) up to 1s for one of
    /// 2 slots, first come first served.
    #[bulkhead(name = "thumbnails-async", max_concurrent = 2, max_wait = "1s")]
    async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, ThumbError>;

    /// Not annotated: a plain call to the backend.
    fn name(&self) -> String;
}

/// A backend that takes its time, and counts the renders in progress so
/// that the example can show the bulkhead capping them.
#[derive(Debug, Default)]
struct SlowDisk {
    rendering: AtomicU32,
    most_at_once: AtomicU32,
}

impl SlowDisk {
    fn start(&self) {
        let now = self.rendering.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
    }

    fn finish(&self) {
        self.rendering.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ThumbnailService for SlowDisk {
    fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, ThumbError> {
        self.start();
        thread::sleep(Duration::from_millis(400));
        self.finish();
        if image_id.is_empty() {
            return Err(ThumbError::Backend("no image id".into()));
        }
        Ok(format!("thumbnail of {image_id}").into_bytes())
    }

    fn preview(&self, image_id: &str, width: u32) -> Result<Vec<u8>, ThumbError> {
        self.start();
        thread::sleep(Duration::from_millis(400));
        self.finish();
        Ok(format!("{width}px preview of {image_id}").into_bytes())
    }

    async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, ThumbError> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(format!("async thumbnail of {image_id}").into_bytes())
    }

    fn name(&self) -> String {
        "slow disk".into()
    }
}

fn print(title: &str, snapshot: &RegistrySnapshot) {
    println!("{title}");
    for b in snapshot.bulkheads() {
        println!(
            "  {:<18} running {}/{}  waiting {}  max_wait {:?}",
            b.instance, b.concurrent_calls, b.max_concurrent, b.waiting_calls, b.max_wait
        );
    }
}

fn outcome(result: &Result<Vec<u8>, ThumbError>) -> String {
    match result {
        Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Err(ThumbError::Busy(rejection)) => format!("rejected: {rejection}"),
        Err(ThumbError::Backend(error)) => format!("failed: {error}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    let service = ResilientThumbnailService::new(SlowDisk::default(), &registry)?;
    println!("wrapping the {}", service.name());
    print("bulkheads once wrapped:", &registry.snapshot());

    // Sync: 6 callers on the 4 shared slots. Renders take 400ms and callers
    // wait at most 250ms, so 2 of them are turned away.
    let results: Vec<_> = thread::scope(|s| {
        let callers: Vec<_> = (0..6)
            .map(|i| {
                let service = &service;
                s.spawn(move || {
                    let id = format!("img-{i}");
                    if i % 2 == 0 {
                        service.thumbnail(&id)
                    } else {
                        service.preview(&id, 64)
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(100));
        print("\nsix sync callers, 100ms in:", &registry.snapshot());
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for result in &results {
        println!("  {}", outcome(result));
    }
    println!(
        "  the disk never rendered more than {} at once",
        service.delegate().most_at_once.load(Ordering::SeqCst)
    );

    // Async: 5 callers on 2 slots. They queue instead of blocking threads,
    // and each gets a slot within its 1s max_wait.
    let service = Arc::new(service);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;
    runtime.block_on(async {
        let calls: Vec<_> = (0..5)
            .map(|i| {
                let service = Arc::clone(&service);
                tokio::spawn(async move { service.thumbnail_async(&format!("img-{i}")).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        print("\nfive async callers, 100ms in:", &registry.snapshot());
        for call in calls {
            println!("  {}", outcome(&call.await.expect("the task ran")));
        }
    });

    print("\nat rest:", &registry.snapshot());
    Ok(())
}
