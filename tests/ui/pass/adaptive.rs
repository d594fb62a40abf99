// Adaptive bulkheads on every shape of method and on functions with a
// body: the keys, the outcome each call reports, the limit in force.
#![allow(async_fn_in_trait)]
use std::future::Future;

use bulkhead::{Registry, Rejection, bulkhead, resilient};

#[derive(Debug)]
pub enum Error {
    Rejected(Rejection),
    Backend,
}

impl From<Rejection> for Error {
    fn from(r: Rejection) -> Self {
        Error::Rejected(r)
    }
}

#[resilient]
pub trait Search: Send + Sync {
    #[bulkhead(name = "search", max_concurrent = 200, adaptive = "gradient2", min_concurrent = 2, initial_concurrent = 10)]
    fn search(&self, query: &str) -> Result<usize, Error>;

    #[bulkhead(max_concurrent = 50, adaptive = "vegas")]
    async fn search_async(&self, query: &str) -> Result<usize, Error>;

    #[bulkhead(max_concurrent = 50, adaptive = "aimd")]
    fn search_future(&self, query: &str) -> impl Future<Output = Result<usize, Error>> + Send;

    #[bulkhead(adaptive = "gradient2")]
    #[timeout(duration = "1s")]
    fn both(&self, query: &str) -> Result<usize, Error>;
}

struct Engine;

impl Search for Engine {
    fn search(&self, query: &str) -> Result<usize, Error> {
        if query.is_empty() { Err(Error::Backend) } else { Ok(query.len()) }
    }

    async fn search_async(&self, query: &str) -> Result<usize, Error> {
        Ok(query.len())
    }

    fn search_future(&self, query: &str) -> impl Future<Output = Result<usize, Error>> + Send {
        let n = query.len();
        async move { Ok(n) }
    }

    fn both(&self, query: &str) -> Result<usize, Error> {
        Ok(query.len())
    }
}

#[bulkhead(max_concurrent = 8, adaptive = "aimd", initial_concurrent = 4)]
fn index(doc: &str) -> Result<usize, Error> {
    if doc.is_empty() {
        return Err(Error::Backend);
    }
    let words = doc.split(' ').count();
    Ok(words)
}

#[bulkhead(max_concurrent = 8, adaptive = "vegas")]
async fn index_async(doc: String) -> Result<usize, Error> {
    Ok(doc.len())
}

fn main() {
    let registry = Registry::new();
    let search = ResilientSearch::new(Engine, &registry).unwrap();
    assert_eq!(search.search("a b").unwrap(), 3);
    assert!(search.search("").is_err());
    assert_eq!(search.both("ab").unwrap(), 2);
    let snapshot = registry.bulkhead("search").unwrap().snapshot();
    assert_eq!(snapshot.max_concurrent, 10);
    assert_eq!(snapshot.adaptive.unwrap().ceiling, 200);
    assert_eq!(index("a b c").unwrap(), 3);
    assert!(index("").is_err());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        assert_eq!(search.search_async("abc").await.unwrap(), 3);
        assert_eq!(search.search_future("abcd").await.unwrap(), 4);
        assert_eq!(index_async("xy".to_owned()).await.unwrap(), 2);
    });
}
