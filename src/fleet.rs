//! Fleet-wide budgets (feature `redis`): a resource's budget shared by
//! every process that names it on one Redis, through
//! [`Registry::fleet_resource`](crate::Registry::fleet_resource) or
//! `[resources.<name>] fleet = "redis://..."` in configuration. The
//! [guide](crate::guide::fleet) tells how it works and what it needs.
//!
//! ```no_run
//! use bulkhead::fleet::{FleetConfig, OnUnreachable};
//! use bulkhead::Registry;
//!
//! let registry = Registry::new();
//! registry.fleet_resource(
//!     "db",
//!     100,
//!     FleetConfig::redis("redis://10.0.0.5:6379/0")?.on_unreachable(OnUnreachable::Closed),
//! )?;
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```

pub use bulkhead_core::{FleetShareChanged, FleetShareReason};
pub use bulkhead_fleet::{FleetConfig, FleetSnapshot, FleetState, OnUnreachable};
