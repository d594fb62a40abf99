use bulkhead::{Rejection, bulkhead};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Renderer<T>(pub T);

// The key's type names the impl's type parameter, which the `static` the
// keyed bulkhead is kept in cannot: the compiler's E0401.
impl<T> Renderer<T> {
    #[bulkhead(per_key = 4, key = tenant)]
    pub fn render(&self, tenant: T) -> Result<(), Error> {
        let _ = tenant;
        Ok(())
    }
}

fn main() {}
