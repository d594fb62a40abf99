//! Methods under `#[cfg]` (or a `#[cfg_attr]` holding one): everything the
//! wrapper generates for them exists exactly when they do.

use bulkhead::{Registry, resilient};

use crate::support::ServiceError;

#[resilient]
pub trait Conditional {
    /// Compiled out: it must not declare the shared name with another
    /// configuration.
    #[cfg(any())]
    #[bulkhead(name = "conditional-shared", max_concurrent = 9)]
    fn gone(&self) -> Result<u8, ServiceError>;

    #[bulkhead(name = "conditional-shared", max_concurrent = 1)]
    fn here(&self) -> Result<u8, ServiceError>;

    /// Two versions, one per platform: one field, one bulkhead.
    #[cfg(unix)]
    #[bulkhead(max_concurrent = 2)]
    fn platform(&self) -> Result<u8, ServiceError>;

    #[cfg(not(unix))]
    #[bulkhead(max_concurrent = 3)]
    fn platform(&self) -> Result<u8, ServiceError>;

    #[cfg_attr(all(), cfg(any()))]
    #[bulkhead(max_concurrent = 4)]
    fn gone_too(&self) -> Result<u8, ServiceError>;
}

#[derive(Debug, Clone)]
struct Here;

impl Conditional for Here {
    fn here(&self) -> Result<u8, ServiceError> {
        Ok(1)
    }
    fn platform(&self) -> Result<u8, ServiceError> {
        Ok(2)
    }
}

#[test]
fn a_compiled_out_method_has_no_bulkhead_field_or_debug_entry() {
    let registry = Registry::new();
    let wrapper = ResilientConditional::new(Here, &registry).expect("no REG-008 from `gone`");
    assert_eq!(wrapper.here().unwrap(), 1);
    assert_eq!(wrapper.platform().unwrap(), 2);
    let mut ids: Vec<(String, u32)> = registry
        .snapshot()
        .bulkheads()
        .iter()
        .map(|b| (b.instance.clone(), b.max_concurrent))
        .collect();
    ids.sort();
    let platform = if cfg!(unix) { 2 } else { 3 };
    assert_eq!(
        ids,
        [
            ("conditional-shared".to_owned(), 1),
            (
                "macros::conditional::Conditional#platform()".to_owned(),
                platform
            ),
        ]
    );
    let debug = format!("{:?}", wrapper.clone());
    assert!(
        debug.contains("here") && debug.contains("platform"),
        "{debug}"
    );
    assert!(!debug.contains("gone"), "{debug}");
}
