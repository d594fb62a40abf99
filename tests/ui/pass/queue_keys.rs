// The queue disciplines through the attributes: `lifo` and `codel` with
// their times, sync and async, and a function with a body.
#![allow(async_fn_in_trait)]

use bulkhead::{QueueDiscipline, Registry, Rejection, bulkhead, resilient};

#[resilient]
pub trait Search {
    #[bulkhead(name = "newest", max_concurrent = 2, max_wait = "1s", queue = "lifo")]
    fn search(&self, query: &str) -> Result<usize, Rejection>;

    #[bulkhead(
        name = "controlled",
        max_concurrent = 2,
        max_wait = "1s",
        queue = "codel",
        queue_target = "10ms",
        queue_interval = "200ms"
    )]
    async fn suggest(&self, query: &str) -> Result<usize, Rejection>;
}

struct Index;

impl Search for Index {
    fn search(&self, query: &str) -> Result<usize, Rejection> {
        Ok(query.len())
    }

    async fn suggest(&self, query: &str) -> Result<usize, Rejection> {
        Ok(query.len())
    }
}

#[bulkhead(max_concurrent = 1, max_wait = "50ms", queue = "fifo")]
fn helper(x: u64) -> Result<u64, Rejection> {
    Ok(x)
}

fn main() {
    let registry = Registry::new();
    let search = ResilientSearch::new(Index, &registry).unwrap();
    assert_eq!(search.search("abc").unwrap(), 3);
    let _ = search.suggest("ab");
    let _ = helper(3);
    let config = registry.bulkhead("controlled").unwrap().config();
    assert_eq!(config.queue(), QueueDiscipline::Codel);
    assert_eq!(config.queue_interval(), std::time::Duration::from_millis(200));
    let config = registry.bulkhead("newest").unwrap().config();
    assert_eq!(config.queue(), QueueDiscipline::Lifo);
}
