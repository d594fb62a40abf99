use bulkhead::Rejection;

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Renderer;

impl Renderer {
    #[bulkhead::bulkhead(per_key = 4, key = tenant)]
    pub fn render(&self, tenant: &str) -> Result<(), Error> {
        let _ = tenant;
        Ok(())
    }
}

fn main() {}
