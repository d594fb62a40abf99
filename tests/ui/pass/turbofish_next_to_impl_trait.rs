// A type parameter no argument mentions is passed on to the delegate with a
// turbofish, also next to `impl Trait` arguments.
use std::fmt::{Debug, Display};

use bulkhead::{Registry, Rejection, resilient};

#[resilient]
pub trait Show {
    #[bulkhead]
    fn show<T: Default + Debug>(&self, x: impl Display) -> Result<String, Rejection>;
}

struct Shower;

impl Show for Shower {
    fn show<T: Default + Debug>(&self, x: impl Display) -> Result<String, Rejection> {
        Ok(format!("{x} {:?}", T::default()))
    }
}

fn main() {
    let registry = Registry::new();
    let shower = ResilientShow::new(Shower, &registry).unwrap();
    assert_eq!(shower.show::<u8>(5).unwrap(), "5 0");
}
