//! The registry and its configuration: ids, shared instances, handles and
//! snapshots (`registry`), configuration from TOML, files and environment
//! variables (`config`, and property tests of its parser in
//! `fuzz_config`), resource budgets (`resources`), shared pools (`pools`),
//! sizing from live traffic (`sizing`), sets of policies declared at once
//! (`policy_specs`), chaos policies configured and reloaded live
//! (`chaos`), keyed bulkheads (`keyed`), and the files a new policy
//! touches (`policy_files`).
//!
//! No fleet kind is linked into this binary: the fleet keys of
//! `[resources.<name>]` are unknown keys here (`fleet_seam` links one).

mod chaos;
mod config;
mod fuzz_config;
mod keyed;
mod policy_files;
mod policy_specs;
mod pools;
mod priorities;
mod registry;
mod resources;
mod sizing;
