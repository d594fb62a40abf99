// `<Self as ThisTrait<..>>::Assoc` names the delegate's associated type in
// the wrapper, as `Self::Assoc` does.
use bulkhead::{Registry, Rejection, resilient};

#[resilient]
pub trait Store<K> {
    type Value;

    #[bulkhead(max_concurrent = 1)]
    fn get(&self, key: K) -> Result<<Self as Store<K>>::Value, Rejection>;

    fn first(&self) -> Option<<Self as Store<K>>::Value>;
}

struct Numbers;

impl Store<u8> for Numbers {
    type Value = u64;

    fn get(&self, key: u8) -> Result<u64, Rejection> {
        Ok(u64::from(key))
    }
    fn first(&self) -> Option<u64> {
        Some(0)
    }
}

fn main() {
    let registry = Registry::new();
    let store = ResilientStore::new(Numbers, &registry).unwrap();
    assert_eq!(store.get(3).unwrap(), 3);
    assert_eq!(store.first(), Some(0));
}
