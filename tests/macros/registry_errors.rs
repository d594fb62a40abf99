//! The registry's coded errors as a generated wrapper meets them in `new`:
//! REG-004, REG-008, REG-009; and the precedence of configured values.

use std::time::Duration;

use bulkhead::{Registry, resilient};

use crate::support::ServiceError;

#[resilient]
trait Configured {
    #[bulkhead(config = "slow", max_wait = "2s")]
    fn slow(&self) -> Result<(), ServiceError>;

    #[bulkhead(config = "default")]
    fn plain(&self) -> Result<(), ServiceError>;
}

#[derive(Debug)]
struct Nothing;

impl Configured for Nothing {
    fn slow(&self) -> Result<(), ServiceError> {
        Ok(())
    }
    fn plain(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

const SLOW: &str = "macros::registry_errors::Configured#slow()";
const PLAIN: &str = "macros::registry_errors::Configured#plain()";

#[test]
fn an_unknown_config_is_reg_004_at_new() {
    let registry = Registry::new();
    let err = ResilientConfigured::new(Nothing, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-004");
    let message = err.to_string();
    assert!(message.starts_with("REG-004: "), "{message}");
    assert!(message.contains("\"slow\""), "{message}");
}

#[test]
fn named_configs_lie_under_attribute_values_and_instance_overrides_above() {
    let registry = Registry::builder()
        .bulkhead_config("slow", |b| {
            b.max_concurrent(3).max_wait(Duration::from_secs(9))
        })
        .bulkhead_config("default", |b| b.max_concurrent(7))
        .bulkhead_instance(PLAIN, |b| b.enabled(false))
        .build();
    let wrapper = ResilientConfigured::new(Nothing, &registry).unwrap();
    assert!(wrapper.slow().is_ok() && wrapper.plain().is_ok());
    let slow = registry.bulkhead(SLOW).unwrap().snapshot();
    assert_eq!(slow.max_concurrent, 3, "from config \"slow\"");
    assert_eq!(
        slow.max_wait,
        Duration::from_secs(2),
        "the attribute wins over the config"
    );
    let plain = registry.bulkhead(PLAIN).unwrap().snapshot();
    assert_eq!(plain.max_concurrent, 7, "from config \"default\"");
    assert!(!plain.enabled, "the instance override wins over everything");
}

#[resilient]
#[allow(dead_code)] // never wrapped: `new` fails
trait Pool {
    #[bulkhead(name = "pool", max_concurrent = 2)]
    fn read(&self, key: &str) -> Result<String, ServiceError>;

    #[bulkhead(name = "pool", max_concurrent = 3)]
    async fn write(&self, key: &str, value: String) -> Result<(), ServiceError>;
}

#[derive(Debug)]
struct Db;

impl Pool for Db {
    fn read(&self, key: &str) -> Result<String, ServiceError> {
        Ok(key.to_owned())
    }
    async fn write(&self, _key: &str, _value: String) -> Result<(), ServiceError> {
        Ok(())
    }
}

#[test]
fn one_name_with_two_configurations_is_reg_008_naming_both_methods() {
    let registry = Registry::new();
    let err = ResilientPool::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(
        message.contains("macros::registry_errors::Pool#read(&str)"),
        "{message}"
    );
    assert!(
        message.contains("macros::registry_errors::Pool#write(&str, String)"),
        "{message}"
    );
    assert!(message.contains("max_concurrent = 2"), "{message}");
    assert!(message.contains("max_concurrent = 3"), "{message}");
}

#[test]
fn a_failed_new_registers_nothing() {
    let registry = Registry::new();
    let err = ResilientPool::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    assert_eq!(registry.bulkhead("pool").unwrap_err().code(), "REG-009");
    assert!(
        registry.snapshot().bulkheads().is_empty(),
        "`read` resolved before `write` failed, but was not registered"
    );
    // The name is still free: `write`'s configuration can take it.
    let writer = ResilientPoolWriter::new(Db, &registry).unwrap();
    assert!(writer.write_all().is_ok());
    assert_eq!(registry.bulkhead("pool").unwrap().max_concurrent(), 3);
}

#[resilient]
trait PoolWriter {
    #[bulkhead(name = "pool", max_concurrent = 3)]
    fn write_all(&self) -> Result<(), ServiceError>;
}

impl PoolWriter for Db {
    fn write_all(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

#[resilient]
trait Cache {
    #[bulkhead(name = "db", max_concurrent = 2)]
    fn get(&self) -> Result<(), ServiceError>;
}

#[resilient]
trait Store {
    #[bulkhead(name = "db", max_concurrent = 2)]
    fn put(&self) -> Result<(), ServiceError>;

    #[bulkhead(name = "db-other", max_concurrent = 5)]
    fn list(&self) -> Result<(), ServiceError>;
}

#[resilient]
#[allow(dead_code)] // never wrapped: `new` fails
trait Audit {
    #[bulkhead(name = "db", max_concurrent = 4)]
    fn log(&self) -> Result<(), ServiceError>;
}

impl Cache for Db {
    fn get(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

impl Store for Db {
    fn put(&self) -> Result<(), ServiceError> {
        Ok(())
    }
    fn list(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

impl Audit for Db {
    fn log(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

#[test]
fn traits_sharing_a_name_share_its_slots_if_their_configurations_agree() {
    let registry = Registry::new();
    let cache = ResilientCache::new(Db, &registry).unwrap();
    let store = ResilientStore::new(Db, &registry).unwrap();
    let db = registry.bulkhead("db").unwrap();
    let slot = db.bulkhead().try_enter().unwrap();
    let other = db.bulkhead().try_enter().unwrap();
    assert!(matches!(cache.get(), Err(ServiceError::Rejected(_))));
    assert!(matches!(store.put(), Err(ServiceError::Rejected(_))));
    assert!(store.list().is_ok(), "another name, other slots");
    drop((slot, other));
    assert!(cache.get().is_ok());
}

#[test]
fn a_trait_disagreeing_with_an_existing_name_is_reg_008_at_new() {
    let registry = Registry::new();
    let _cache = ResilientCache::new(Db, &registry).unwrap();
    let err = ResilientAudit::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(
        message.contains("macros::registry_errors::Cache#get()"),
        "{message}"
    );
    assert!(
        message.contains("macros::registry_errors::Audit#log()"),
        "{message}"
    );
}

#[test]
fn a_bad_configured_value_is_reported_with_its_code_at_new() {
    let registry = Registry::builder()
        .bulkhead_config("slow", |b| b.max_concurrent(0))
        .build();
    let err = ResilientConfigured::new(Nothing, &registry).unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert!(
        err.to_string()
            .contains("bulkhead.configs.slow.max_concurrent"),
        "{err}"
    );
}
