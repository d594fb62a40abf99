//! The public side of a resource's pool: [`SharedPool`], and [`Pools`], the
//! pools of a registry's resources by name.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::pool::Pool;
use crate::intern::intern;
use crate::loom::{Mutex, lock};

/// A budget of slots shared by the bulkheads on one resource, each keeping
/// its `reserved` slots for itself and borrowing, up to its
/// `max_concurrent`, the slots nobody reserved.
///
/// At every instant the sum over its bulkheads of `max(calls in flight,
/// reserved)` stays within the budget: a bulkhead always gets its reserved
/// slots at once, and the unreserved ones go to whoever needs them. Callers
/// waiting for a slot to borrow are served in arrival order across the
/// bulkheads, each within its own `max_wait`.
///
/// A registry keeps one for each resource with a budget; build one by hand
/// for bulkheads outside a registry ([`Bulkhead::with_pool`](super::Bulkhead::with_pool)).
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Bulkhead, BulkheadConfig, PolicyContext, SharedPool};
///
/// let pool = SharedPool::new(7);
/// let on = |id, reserved| {
///     let config = BulkheadConfig::builder().max_concurrent(7).reserved(reserved).build()?;
///     Ok::<_, bulkhead_core::ConfigError>(Bulkhead::with_pool(id, config, PolicyContext::default(), &pool))
/// };
/// let (reports, payments) = (on("reports", 3)?, on("payments", 2)?);
///
/// // Reports take their 3 reserved slots and borrow the 2 nobody reserved...
/// let held: Vec<_> = (0..5).map(|_| reports.try_enter()).collect::<Result<_, _>>()?;
/// assert!(reports.try_enter().is_err());
/// assert_eq!((reports.borrowed(), pool.borrowed()), (2, 2));
/// // ...while payments' 2 stay theirs.
/// let (a, b) = (payments.try_enter()?, payments.try_enter()?);
/// assert!(payments.try_enter().is_err());
/// # drop((held, a, b));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SharedPool {
    pub(super) pool: Arc<Pool>,
}

impl SharedPool {
    /// A pool of `budget` slots, none reserved yet.
    pub fn new(budget: u32) -> Self {
        SharedPool {
            pool: Arc::new(Pool::new(budget)),
        }
    }

    /// The budget.
    pub fn budget(&self) -> u32 {
        self.pool.budget()
    }

    /// Changes the budget. Raising it lets waiters borrow at once;
    /// lowering it below what is borrowed lets those calls finish, and
    /// nobody borrows until they have. Reservations above the budget wait
    /// for room.
    pub fn set_budget(&self, budget: u32) {
        self.pool.set_budget(budget, None);
    }

    /// Slots borrowed now, beyond the reservations.
    pub fn borrowed(&self) -> u32 {
        self.pool.borrowed()
    }

    /// Slots of the budget nobody reserves now (borrowed or free).
    pub fn unreserved(&self) -> u32 {
        self.pool.unreserved()
    }
}

impl fmt::Debug for SharedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedPool")
            .field("budget", &self.budget())
            .field("unreserved", &self.unreserved())
            .field("borrowed", &self.borrowed())
            .finish()
    }
}

/// The pools of a set of resources, by name: a bulkhead built on a
/// [`PolicyContext`](crate::PolicyContext) that has them joins the pool
/// of the resource its configuration names.
#[derive(Debug, Default)]
pub struct Pools {
    pools: Mutex<HashMap<&'static str, SharedPool>>,
}

impl Pools {
    /// No pools yet.
    pub fn new() -> Self {
        Pools::default()
    }

    /// Sets the budget of resource `name`'s pool, creating it if needed.
    pub fn set_budget(&self, name: &str, budget: u32) {
        let pool = lock(&self.pools)
            .entry(intern(name))
            .or_insert_with(|| SharedPool::new(budget))
            .clone();
        pool.set_budget(budget);
    }

    /// The pool of resource `name`, if it has a budget.
    pub fn get(&self, name: &str) -> Option<SharedPool> {
        lock(&self.pools).get(name).cloned()
    }
}
