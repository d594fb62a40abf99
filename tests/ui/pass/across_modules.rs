// A trait declared in one module, implemented in another and wrapped in a
// third, with only the error type imported at the declaration site.
#![allow(async_fn_in_trait)]
mod api {
    use bulkhead::Rejection;

    #[derive(Debug)]
    pub struct Error(pub Option<Rejection>);

    impl From<Rejection> for Error {
        fn from(r: Rejection) -> Self {
            Error(Some(r))
        }
    }

    #[bulkhead::resilient]
    pub trait Thumbnails: Send + Sync {
        #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
        fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, Error>;

        #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
        async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, Error>;

        fn name(&self) -> String;
    }
}

mod backend {
    pub struct Disk;

    impl crate::api::Thumbnails for Disk {
        fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, crate::api::Error> {
            Ok(image_id.as_bytes().to_vec())
        }
        async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, crate::api::Error> {
            self.thumbnail(image_id)
        }
        fn name(&self) -> String {
            "disk".into()
        }
    }
}

mod app {
    use crate::api::{ResilientThumbnails, Thumbnails};

    pub fn run() -> Result<(), bulkhead::RegistryError> {
        let registry = bulkhead::Registry::new();
        let service = ResilientThumbnails::new(crate::backend::Disk, &registry)?;
        let _ = service.thumbnail("a");
        let _ = service.name();
        let as_object: &dyn Fn(&str) -> Result<Vec<u8>, crate::api::Error> =
            &|id| service.thumbnail(id);
        let _ = as_object("b");
        Ok(())
    }
}

fn main() {
    app::run().unwrap();
}
