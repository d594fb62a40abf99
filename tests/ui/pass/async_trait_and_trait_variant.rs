// `#[resilient]` with `#[async_trait]` in either order (every policy, `&self`
// and `&mut self`, a default method, a generic method, `?Send`) and with
// `#[trait_variant::make]` in either order; the wrappers of the
// `dyn`-compatible traits are held as `Arc<dyn Trait>` / `Box<dyn Trait>`.
use std::sync::Arc;

use async_trait::async_trait;
use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
#[async_trait]
pub trait Repository: Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    #[timeout(duration = "1s")]
    #[circuit_breaker]
    #[rate_limiter]
    async fn find(&self, id: &str) -> Result<String, Error>;

    #[retry(max_attempts = 2, wait = "0")]
    async fn save(&mut self, id: &str, body: Vec<u8>) -> Result<(), Error>;

    #[hedge(delay = "10ms")]
    #[fallback(method = "cached")]
    async fn fresh(&self, id: &str) -> Result<String, Error>;

    async fn cached(&self, id: &str) -> Result<String, Error>;

    #[bulkhead]
    async fn ping(&self) -> Result<(), Error> {
        Ok(())
    }

    #[retry]
    fn sync_find(&self, id: &str) -> Result<String, Error>;
}

#[async_trait]
#[resilient]
pub trait Catalog: Send + Sync {
    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(max_concurrent = 2)]
    async fn item(&self, id: &str, options: Option<&str>) -> Result<String, Error>;

    #[bulkhead]
    async fn each<T: Send + Clone + 'static>(&self, item: T) -> Result<T, Error>;
}

#[async_trait(?Send)]
#[resilient]
pub trait Local {
    #[retry(max_attempts = 2, wait = "0")]
    async fn get(&self, id: &str) -> Result<String, Error>;
}

#[trait_variant::make(Service: Send)]
#[resilient]
pub trait LocalService: Sync {
    #[retry(max_attempts = 2, wait = "0")]
    async fn call(&self, id: &str) -> Result<String, Error>;
}

#[resilient]
#[trait_variant::make(Shop: Send)]
pub trait LocalShop: Sync {
    #[bulkhead]
    async fn buy(&self, id: &str) -> Result<String, Error>;
}

struct Memory;

#[async_trait]
impl Repository for Memory {
    async fn find(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
    async fn save(&mut self, _id: &str, _body: Vec<u8>) -> Result<(), Error> {
        Ok(())
    }
    async fn fresh(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
    async fn cached(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
    fn sync_find(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
}

#[async_trait]
impl Catalog for Memory {
    async fn item(&self, id: &str, _options: Option<&str>) -> Result<String, Error> {
        Ok(id.to_owned())
    }
    async fn each<T: Send + Clone + 'static>(&self, item: T) -> Result<T, Error> {
        Ok(item)
    }
}

#[async_trait(?Send)]
impl Local for Memory {
    async fn get(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
}

impl Service for Memory {
    async fn call(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
}

impl Shop for Memory {
    async fn buy(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
}

fn spawnable<S: Service + 'static>(service: S) -> impl std::future::Future<Output = ()> + Send {
    async move {
        let _ = service.call("x").await;
    }
}

fn main() -> Result<(), bulkhead::RegistryError> {
    let registry = Registry::new();
    let repository: Arc<dyn Repository> = Arc::new(ResilientRepository::new(Memory, &registry)?);
    let _: Box<dyn Repository> = Box::new(ResilientRepository::new(Memory, &registry)?);
    let _future = repository.find("1");
    let _: Arc<dyn Local> = Arc::new(ResilientLocal::new(Memory, &registry)?);
    let _ = ResilientCatalog::new(Memory, &registry)?;
    // The `Send` variant of each trait_variant trait has its wrapper.
    let _ = spawnable(ResilientService::new(Memory, &registry)?);
    let _ = ResilientShop::new(Memory, &registry)?;
    Ok(())
}
