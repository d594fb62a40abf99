//! The fleet seam without Redis: a fleet kind of this test's own, linked
//! into this binary like `bulkhead-fleet`'s, gets its configuration keys
//! from TOML and hears of every bulkhead that joins, moves off or is
//! dropped from its resources; the registry checks specs, refuses a second
//! fleet for a resource (REG-015), keeps what it could not return
//! (REG-016), and shows the backend's snapshots.

use std::any::Any;
use std::cell::Cell;
use std::sync::{Arc, Mutex, PoisonError};

use bulkhead_core::{Bulkhead, BulkheadConfig, PolicyContext};
use bulkhead_registry::fleet::{
    Declared, FleetBackend, FleetKind, FleetSnapshot, FleetSpec, FleetState, LinkedKind,
    ResourceKeys, SettingValue,
};
use bulkhead_registry::{Registry, RegistryError};

/// A fleet on an imaginary store: the store's name, which `Debug` shows
/// without the part after a `:` (its "password").
#[derive(Clone, PartialEq)]
struct Memo(String);

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self.0.split(':').next().unwrap_or_default();
        write!(f, "Memo({shown})")
    }
}

struct MemoKind;

static MEMO: MemoKind = MemoKind;

inventory::submit! { LinkedKind(&MEMO) }

/// Every backend this kind made, to look at what the registry told it.
static BACKENDS: Mutex<Vec<Arc<MemoBackend>>> = Mutex::new(Vec::new());

thread_local! {
    /// Makes `start` fail on this thread (REG-016), as the system
    /// refusing a thread would.
    static REFUSE: Cell<bool> = const { Cell::new(false) };
}

impl FleetSpec for Memo {
    fn kind(&self) -> &'static dyn FleetKind {
        &MEMO
    }

    fn check(&self, resource: &str) -> Result<(), RegistryError> {
        if self.0.is_empty() {
            return Err(RegistryError::FleetConfig {
                resource: resource.to_owned(),
                message: "an empty store".to_owned(),
            });
        }
        Ok(())
    }

    fn same(&self, other: &dyn FleetSpec) -> bool {
        other.as_any().downcast_ref::<Memo>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl FleetKind for MemoKind {
    fn name(&self) -> &'static str {
        "memo"
    }

    fn keys(&self) -> &'static [&'static str] {
        &["memo_store"]
    }

    fn check_key(
        &self,
        resource: &str,
        _key: &str,
        value: SettingValue<'_>,
    ) -> Result<(), RegistryError> {
        match value.text() {
            Some(_) => Ok(()),
            None => Err(RegistryError::FleetConfig {
                resource: resource.to_owned(),
                message: format!("{} must be text", value.full_key()),
            }),
        }
    }

    fn shown(&self, _key: &str, value: SettingValue<'_>) -> Option<String> {
        value.text().map(|t| format!("{:?}", Memo(t.to_owned())))
    }

    fn spec(
        &self,
        _resource: &str,
        keys: &ResourceKeys<'_>,
    ) -> Result<Option<Arc<dyn FleetSpec>>, RegistryError> {
        Ok(keys
            .get("memo_store")
            .and_then(|v| v.text())
            .map(|store| Arc::new(Memo(store.to_owned())) as Arc<dyn FleetSpec>))
    }

    fn backend(&'static self, _context: &PolicyContext) -> Arc<dyn FleetBackend> {
        let backend = Arc::new(MemoBackend::default());
        BACKENDS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&backend));
        backend
    }
}

/// Records what the registry tells it; its resources' members are the
/// bulkheads last declared on them.
#[derive(Debug, Default)]
struct MemoBackend {
    calls: Mutex<Vec<String>>,
    resources: Mutex<Vec<(String, Memo, Vec<String>)>>,
}

impl MemoBackend {
    fn log(&self, call: String) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }

    fn members(&self, declared: &[Declared]) {
        for (name, _, members) in self.resources.lock().unwrap().iter_mut() {
            *members = declared
                .iter()
                .filter(|d| d.resource.as_deref() == Some(name.as_str()))
                .map(|d| d.bulkhead.instance().to_owned())
                .collect();
            members.sort();
        }
    }
}

impl FleetBackend for MemoBackend {
    fn start(&self) -> Result<(), RegistryError> {
        if REFUSE.get() {
            return Err(RegistryError::FleetStart {
                message: "refused".to_owned(),
            });
        }
        Ok(())
    }

    fn spec(&self, resource: &str) -> Option<Arc<dyn FleetSpec>> {
        let resources = self.resources.lock().unwrap();
        let (_, memo, _) = resources.iter().find(|(name, ..)| name == resource)?;
        Some(Arc::new(memo.clone()))
    }

    fn join(
        &self,
        resource: &str,
        budget: u32,
        spec: Arc<dyn FleetSpec>,
        unstarted: Option<&RegistryError>,
        declared: &[Declared],
    ) {
        let memo = spec.as_any().downcast_ref::<Memo>().unwrap().clone();
        let unstarted = unstarted.map(RegistryError::code);
        self.log(format!("join {resource} {budget} {unstarted:?}"));
        self.resources
            .lock()
            .unwrap()
            .push((resource.to_owned(), memo, Vec::new()));
        self.members(declared);
    }

    fn refresh(&self, declared: &[Declared]) {
        self.log("refresh".to_owned());
        self.members(declared);
    }

    fn adopt(&self, resource: &str, bulkhead: &Bulkhead) {
        self.log(format!("adopt {resource} {}", bulkhead.instance()));
        for (name, _, members) in self.resources.lock().unwrap().iter_mut() {
            if name == resource {
                members.push(bulkhead.instance().to_owned());
                members.sort();
            }
        }
    }

    fn discard(&self, bulkheads: &[Bulkhead]) {
        let ids: Vec<&str> = bulkheads.iter().map(Bulkhead::instance).collect();
        self.log(format!("discard {ids:?}"));
        for (_, _, members) in self.resources.lock().unwrap().iter_mut() {
            members.retain(|id| !ids.contains(&id.as_str()));
        }
    }

    fn set_budget(&self, resource: &str, budget: u32) {
        if self.spec(resource).is_some() {
            self.log(format!("budget {resource} {budget}"));
        }
    }

    fn leave(&self) {
        self.log("leave".to_owned());
    }

    fn snapshots(&self) -> Vec<FleetSnapshot> {
        self.resources
            .lock()
            .unwrap()
            .iter()
            .map(|(name, _, members)| {
                let mut snapshot = FleetSnapshot::new(name, FleetState::Joined);
                snapshot.bulkheads = members.clone();
                snapshot
            })
            .collect()
    }
}

/// The backend of `registry`: the one whose snapshots it shows.
fn backend_of(registry: &Registry) -> Arc<MemoBackend> {
    let resources: Vec<String> = registry
        .snapshot()
        .fleets()
        .iter()
        .map(|f| f.resource.clone())
        .collect();
    BACKENDS
        .lock()
        .unwrap()
        .iter()
        .find(|b| {
            let mine: Vec<String> = b.snapshots().into_iter().map(|s| s.resource).collect();
            !mine.is_empty() && mine == resources
        })
        .cloned()
        .expect("a backend with this registry's resources")
}

fn calls(backend: &MemoBackend) -> Vec<String> {
    std::mem::take(&mut *backend.calls.lock().unwrap())
}

fn on(registry: &Registry, id: &str, resource: &str) -> Bulkhead {
    registry
        .bulkhead_policy(
            id,
            "test",
            &BulkheadConfig::builder()
                .max_concurrent(2)
                .resource(resource),
        )
        .unwrap()
}

#[test]
fn a_fleet_in_code_hears_of_every_bulkhead_that_joins_or_is_dropped() {
    let registry = Registry::new();
    registry.resource("seam-db", 6).unwrap();
    let early = on(&registry, "early", "seam-db");
    registry
        .fleet_resource("seam-db", 6, Memo("store:secret".into()))
        .unwrap();
    let backend = backend_of(&registry);
    assert_eq!(calls(&backend), ["join seam-db 6 None"]);
    assert_eq!(registry.snapshot().fleets()[0].bulkheads, ["early"]);

    let _late = on(&registry, "late", "seam-db");
    {
        let mut batch = registry.declare();
        let spec = BulkheadConfig::builder()
            .max_concurrent(2)
            .resource("seam-db");
        batch.bulkhead("ghost", "test", &spec).unwrap();
    }
    assert_eq!(
        calls(&backend),
        [
            "adopt seam-db late",
            "adopt seam-db ghost",
            "discard [\"ghost\"]"
        ]
    );
    assert_eq!(registry.snapshot().fleets()[0].bulkheads, ["early", "late"]);

    // The same fleet again changes the budget only; another is REG-015,
    // shown by its `Debug`, without the secret.
    registry
        .fleet_resource("seam-db", 8, Memo("store:secret".into()))
        .unwrap();
    assert_eq!(calls(&backend), ["budget seam-db 8"]);
    let other = registry
        .fleet_resource("seam-db", 8, Memo("elsewhere:secret".into()))
        .unwrap_err();
    assert_eq!(other.code(), "REG-015");
    assert!(other.to_string().contains("Memo(elsewhere)"), "{other}");
    assert!(!other.to_string().contains("secret"), "{other}");
    let empty = registry
        .fleet_resource("seam-cache", 8, Memo(String::new()))
        .unwrap_err();
    assert_eq!(empty.code(), "REG-014");

    registry.leave_fleets();
    assert_eq!(calls(&backend), ["leave"]);
    assert_eq!(early.max_concurrent(), 2, "the registry never caps limits");
}

#[test]
fn a_fleet_in_configuration_is_found_by_its_keys_and_hears_of_reloads() {
    let toml = |resource: &str| {
        format!(
            "[resources.seam-toml]\nbudget = 4\nmemo_store = \"toml:secret\"\n\n\
             [resources.elsewhere]\nbudget = 4\n\n\
             [bulkhead.instances.moving]\nmax_concurrent = 2\nresource = \"{resource}\"\n"
        )
    };
    let registry = Registry::builder()
        .config_toml(&toml("seam-toml"))
        .unwrap()
        .try_build()
        .unwrap();
    let backend = backend_of(&registry);
    assert_eq!(calls(&backend), ["join seam-toml 4 None"]);
    let _moving = registry
        .bulkhead_policy("moving", "test", &BulkheadConfig::builder())
        .unwrap();
    assert_eq!(calls(&backend), ["adopt seam-toml moving"]);
    assert_eq!(registry.snapshot().fleets()[0].bulkheads, ["moving"]);

    registry.reload_toml(&toml("elsewhere")).unwrap();
    assert!(calls(&backend).contains(&"refresh".to_owned()));
    assert!(registry.snapshot().fleets()[0].bulkheads.is_empty());

    // The kind's keys are known (a misspelt one is suggested), and its
    // values checked as the source is given.
    let misspelt = Registry::builder()
        .config_toml("[resources.x]\nbudget = 1\nmemo_stor = \"a\"\n")
        .unwrap_err();
    assert_eq!(misspelt.code(), "CFG-001");
    assert!(misspelt.to_string().contains("memo_store"), "{misspelt}");
    let number = Registry::builder()
        .config_toml("[resources.x]\nbudget = 1\nmemo_store = 3\n")
        .unwrap_err();
    assert_eq!(number.code(), "REG-014");
}

#[test]
fn a_fleet_that_cannot_start_is_reg_016_in_code_and_kept_by_build() {
    REFUSE.set(true);
    let toml = "[resources.seam-refused]\nbudget = 3\nmemo_store = \"refused\"\n";
    let registry = Registry::builder().config_toml(toml).unwrap().build();
    let refused = Registry::builder()
        .config_toml(toml)
        .unwrap()
        .try_build()
        .unwrap_err();
    let in_code = Registry::new()
        .fleet_resource("seam-refused", 3, Memo("refused".into()))
        .unwrap_err();
    REFUSE.set(false);
    assert_eq!(refused.code(), "REG-016");
    assert_eq!(in_code.code(), "REG-016");
    let kept: Vec<&str> = registry
        .fleet_errors()
        .iter()
        .map(RegistryError::code)
        .collect();
    assert_eq!(kept, ["REG-016"]);
    // Declared all the same, told that it did not start.
    let backend = backend_of(&registry);
    assert_eq!(calls(&backend), ["join seam-refused 3 Some(\"REG-016\")"]);
    assert_eq!(registry.resource_usage("seam-refused"), Some((3, 0)));
}
