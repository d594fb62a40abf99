// `key` on methods with a body, in impl blocks (a generic one too): one
// keyed bulkhead per `Self` type, alone or under other policies; compiles
// without a warning.
#![deny(warnings)]
use bulkhead::{Rejection, bulkhead, retry, timeout};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Renderer;

impl Renderer {
    #[bulkhead(per_key = 4, key = tenant)]
    pub fn render(&self, tenant: &str) -> Result<usize, Error> {
        Ok(tenant.len())
    }

    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(per_key = 4, key = tenant)]
    pub fn retried(&mut self, tenant: u64) -> Result<u64, Error> {
        Ok(tenant)
    }

    #[timeout(duration = "1s")]
    #[bulkhead(per_key = 4, key = tenant)]
    pub async fn timed(&self, tenant: String) -> Result<String, Error> {
        Ok(tenant)
    }
}

pub struct Generic<T>(pub T);

impl<T: Clone + Send + Sync> Generic<T> {
    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(per_key = 4, key = tenant)]
    pub fn get(&self, tenant: &str) -> Result<T, Error> {
        let _ = tenant;
        Ok(self.0.clone())
    }
}

fn main() {
    assert_eq!(Renderer.render("ab").unwrap(), 2);
    assert_eq!(Renderer.retried(3).unwrap(), 3);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(Renderer.timed("x".to_owned())).unwrap(), "x");
    assert_eq!(Generic(1u8).get("a").unwrap(), 1);
    assert_eq!(Generic("s").get("a").unwrap(), "s");
}
