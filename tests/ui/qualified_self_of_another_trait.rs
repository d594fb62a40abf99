// `<Self as ThisTrait>::Item` is fine, but `Self` qualified as another
// trait is the wrapper's, not the delegate's: ATR-007 over the whole path.
use bulkhead::{Rejection, resilient};

pub trait Named {
    type Name;
}

impl<T: ?Sized> Named for T {
    type Name = String;
}

#[resilient]
pub trait Fetch {
    type Item;

    #[bulkhead(max_concurrent = 1)]
    fn fetch(&self) -> Result<<Self as Fetch>::Item, Rejection>;

    fn name(&self) -> <Self as Named>::Name;
}

fn main() {}
