//! The registry's other types: [`RegistrySnapshot`], every instance at one
//! moment (`registry.snapshot()`); [`Declarations`], a batch of
//! declarations committed together (`registry.declare()`); [`PolicySpecs`],
//! what is given in code for the set of policies of one call;
//! [`Conflict`], the two sides of a REG-008; and [`Handle`], what each
//! policy's handle is (`BulkheadHandle` is `Handle<Bulkhead>`), with
//! [`Policy`], what a handle shows of its policy. For keyed bulkheads
//! (`registry.keyed_bulkhead::<K>(id)`): [`BulkheadKey`], what a key type
//! needs; [`KeyedBulkheadBuilder`], one declared with values in code; and
//! [`KeyedBulkheadSnapshot`] with its [`TopKey`]s, in the registry's
//! snapshot.
//!
//! [`Registry`](crate::Registry), its builder and its error are at the
//! crate's root.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::registry::RegistrySnapshot;
//!
//! let registry = Registry::new();
//! Pipeline::builder(&registry, "renderer").bulkhead(|b| b.max_concurrent(10)).build()?;
//!
//! let snapshot: RegistrySnapshot = registry.snapshot();
//! assert_eq!(snapshot.bulkheads()[0].instance, "renderer");
//! assert_eq!(snapshot.bulkheads()[0].max_concurrent, 10);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```

pub use bulkhead_registry::{
    BulkheadKey, Conflict, Declarations, Handle, KeyedBulkheadBuilder, KeyedBulkheadSnapshot,
    Policy, PolicySpecs, RegistrySnapshot, TopKey,
};
