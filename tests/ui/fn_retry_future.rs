// `#[retry]` on a function returning a future made by its body: not
// supported yet (ATR-007, over the return type), write an `async fn`.
use std::future::Future;

use bulkhead::{Rejection, retry};

#[retry(max_attempts = 2)]
pub fn fetch(id: String) -> impl Future<Output = Result<usize, Rejection>> {
    async move { Ok(id.len()) }
}

fn main() {}
