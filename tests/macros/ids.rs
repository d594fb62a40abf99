//! B9: instance ids are `<module_path>::<Trait>#<method>(<param types>)`,
//! parameter types as in source with spaces removed except after commas.

use std::collections::HashMap;

use bulkhead::{Registry, resilient};

use crate::support::ServiceError;

#[resilient]
pub trait Shop {
    #[bulkhead]
    fn resize(&self, image_id: &str, width: u32) -> Result<(), ServiceError>;

    #[bulkhead]
    #[allow(clippy::needless_lifetimes)] // the id shows the lifetime as written
    fn complex<'a>(
        &self,
        buffer: &'a mut Vec<Option<u8>>,
        label: impl AsRef<str> + Send,
        pair: (u8, String),
        counts: HashMap<String, u32>,
    ) -> Result<(), ServiceError>;

    #[bulkhead]
    async fn nothing(&mut self) -> Result<(), ServiceError>;

    #[bulkhead(name = "named")]
    fn named(&self, id: u64) -> Result<(), ServiceError>;
}

pub mod nested {
    pub mod deeper {
        use crate::support::ServiceError;

        #[bulkhead::resilient]
        pub trait Deep {
            #[bulkhead]
            fn dive(&self, depth: [u8; 4]) -> Result<(), ServiceError>;
        }
    }
}

#[derive(Debug)]
struct Unit;

#[allow(clippy::needless_lifetimes)]
impl Shop for Unit {
    fn resize(&self, _: &str, _: u32) -> Result<(), ServiceError> {
        Ok(())
    }
    fn complex<'a>(
        &self,
        _: &'a mut Vec<Option<u8>>,
        _: impl AsRef<str> + Send,
        _: (u8, String),
        _: HashMap<String, u32>,
    ) -> Result<(), ServiceError> {
        Ok(())
    }
    async fn nothing(&mut self) -> Result<(), ServiceError> {
        Ok(())
    }
    fn named(&self, _: u64) -> Result<(), ServiceError> {
        Ok(())
    }
}

impl nested::deeper::Deep for Unit {
    fn dive(&self, _: [u8; 4]) -> Result<(), ServiceError> {
        Ok(())
    }
}

fn ids(registry: &Registry) -> Vec<String> {
    registry
        .snapshot()
        .bulkheads()
        .iter()
        .map(|b| b.instance.clone())
        .collect()
}

#[test]
fn b9_unnamed_methods_are_identified_by_module_trait_method_and_parameter_types() {
    let registry = Registry::new();
    let mut shop = ResilientShop::new(Unit, &registry).unwrap();
    assert_eq!(
        ids(&registry),
        [
            "macros::ids::Shop#complex(&'a mut Vec<Option<u8>>, impl AsRef<str>+Send, (u8, String), HashMap<String, u32>)",
            "macros::ids::Shop#nothing()",
            "macros::ids::Shop#resize(&str, u32)",
            "named",
        ]
    );
    shop.resize("a", 1).unwrap();
    shop.named(1).unwrap();
    shop.complex(&mut Vec::new(), "label", (1, String::new()), HashMap::new())
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(shop.nothing()).unwrap();
}

#[test]
fn b9_the_module_path_is_where_the_trait_is_declared() {
    let registry = Registry::new();
    let deep = nested::deeper::ResilientDeep::new(Unit, &registry).unwrap();
    nested::deeper::Deep::dive(&deep, [0; 4]).unwrap();
    assert_eq!(
        ids(&registry),
        ["macros::ids::nested::deeper::Deep#dive([u8;4])"]
    );
}

#[test]
fn b9_a_rejection_names_the_instance_id() {
    let registry = Registry::builder()
        .bulkhead_instance("macros::ids::Shop#resize(&str, u32)", |b| {
            b.max_concurrent(1)
        })
        .build();
    let shop = ResilientShop::new(Unit, &registry).unwrap();
    let handle = registry
        .bulkhead("macros::ids::Shop#resize(&str, u32)")
        .unwrap();
    let _slot = handle.bulkhead().try_enter().unwrap();
    match shop.resize("a", 1) {
        Err(ServiceError::Rejected(r)) => {
            assert_eq!(r.instance(), "macros::ids::Shop#resize(&str, u32)")
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}
