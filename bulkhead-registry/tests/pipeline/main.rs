//! Pipelines: the fixed order of the policies and what follows from it
//! (`composition`), hedging (`hedging`) and the retry budget
//! (`retry_budget`), each on a `ManualClock` where it can be.

mod composition;
mod hedging;
mod keyed;
mod retry_budget;
#[path = "../support/mod.rs"]
mod support;
