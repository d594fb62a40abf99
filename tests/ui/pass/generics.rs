// Generic traits, generic methods (also with const parameters and
// parameters only the return type names) and associated types.
use std::str::FromStr;

use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub enum Error {
    Rejected(Rejection),
    Parse,
}

impl From<Rejection> for Error {
    fn from(r: Rejection) -> Self {
        Error::Rejected(r)
    }
}

#[resilient]
pub trait Store<K, V: Clone>
where
    K: Eq + std::hash::Hash,
{
    type Keys: Iterator<Item = K>;
    const CAPACITY: usize;

    #[bulkhead(max_concurrent = 2)]
    fn get(&self, key: &K) -> Result<Option<V>, Error>;

    #[bulkhead]
    fn parse<T: FromStr>(&self, text: &str) -> Result<T, Error>;

    #[bulkhead]
    fn zeros<T: Default + Copy, const N: usize>(&self) -> Result<[T; N], Error>;

    fn keys(&self) -> Self::Keys;
}

struct Memory(std::collections::HashMap<String, u32>);

impl Store<String, u32> for Memory {
    type Keys = std::vec::IntoIter<String>;
    const CAPACITY: usize = 8;

    fn get(&self, key: &String) -> Result<Option<u32>, Error> {
        Ok(self.0.get(key).copied())
    }
    fn parse<T: FromStr>(&self, text: &str) -> Result<T, Error> {
        text.parse().map_err(|_| Error::Parse)
    }
    fn zeros<T: Default + Copy, const N: usize>(&self) -> Result<[T; N], Error> {
        Ok([T::default(); N])
    }
    fn keys(&self) -> Self::Keys {
        self.0.keys().cloned().collect::<Vec<_>>().into_iter()
    }
}

/// A trait whose own parameter is called `D`, with an annotated default
/// method: the wrapper picks another name for its delegate's type.
#[resilient]
pub trait Convert<D: Copy> {
    #[bulkhead]
    fn convert(&self, value: D) -> Result<D, Error> {
        Ok(value)
    }
}

struct Identity;

impl Convert<u8> for Identity {}

fn main() {
    let registry = Registry::new();
    let convert = ResilientConvert::new(Identity, &registry).unwrap();
    let _: u8 = convert.convert(1).unwrap();

    let registry = Registry::new();
    let store = ResilientStore::new(Memory(Default::default()), &registry).unwrap();
    let _: Option<u32> = store.get(&"k".to_owned()).unwrap();
    let _: u8 = store.parse("1").unwrap();
    let _: [u8; 4] = store.zeros::<u8, 4>().unwrap();
    let _ = store.keys();
    let _ = <ResilientStore<Memory> as Store<String, u32>>::CAPACITY;
}
