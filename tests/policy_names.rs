//! Every policy has what generated code names for it: the code the
//! attribute macros generate for each policy, written out from the
//! policies' tables (`PolicyKind::ALL` and each one's keys) into
//! `tests/policy_names/generated.rs`, which this test compiles.
//!
//! The generated file declares every policy twice, with every key an
//! attribute takes: written out as the macros write a set of policies
//! (`__private_0_1_0::<Config>::builder()`, one setting per key, and
//! `PolicySpecs::new(..).<policy>(..)`), and through the attributes
//! themselves, one method per policy on a `#[resilient]` trait, so that
//! the macros' own output for every policy and key is compiled too. A
//! policy, a config type, a builder's setter, a value's type or a
//! registry method that generated code names and that is missing fails
//! the build of this test.
//!
//! At run time both declarations, and a third whose keys configuration
//! sets to the same values, must give every instance the same values;
//! every key an attribute sets to its documented default must give the
//! config's default back through its getter, over a named configuration
//! `default` that sets each such key to another value (so that a setting
//! the generated code drops is seen: where nothing else sets them, every
//! key has another value than the attribute's).
//!
//! The file must be what the tables generate now; to rewrite it:
//! `POLICY_NAMES=overwrite cargo test --test policy_names`. If it no
//! longer compiles (a key or a setter renamed), leave it out to rewrite
//! it: `RUSTFLAGS="--cfg policy_names_stale" POLICY_NAMES=overwrite cargo
//! test --test policy_names`.

// Left out with `--cfg policy_names_stale`, to rewrite a file that no
// longer compiles.
#[cfg(not(policy_names_stale))]
#[path = "policy_names/generated.rs"]
mod generated;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use bulkhead::Registry;
use bulkhead_core::keys::{CONFIG, Float, Key, NAME, PolicyKind, ValueKind};
use bulkhead_core::{ChaosLatency, HedgeDelay, Rejection, RejectionKind};

/// The support module generated code names.
const PRIVATE: &str = "::bulkhead::__private_0_1_0";

/// The resource a bulkhead's `resource` names (and the other one, which
/// the named configuration `default` gives).
const RESOURCES: [&str; 2] = ["policy_names", "policy_names_other"];

/// The error of the trait's methods, which its predicates judge.
#[cfg(not(policy_names_stale))]
#[derive(Debug)]
pub(crate) struct Error;

#[cfg(not(policy_names_stale))]
impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

/// The predicate every `retry_if` and `record_if` names.
#[cfg(not(policy_names_stale))]
pub(crate) fn is_failure(_: &Error) -> bool {
    true
}

/// The method every fallback's `method` names.
const ANSWER: &str = "answer";

// ---------------------------------------------------------------------
// The value each key is written with.

/// The keys an attribute of `kind` takes, in the order of its table, as
/// the macros read them.
fn attribute_keys(kind: PolicyKind) -> impl Iterator<Item = &'static Key> {
    kind.all_keys().filter(|key| key.origin().in_attribute())
}

/// The value `key` is written with in `kind`'s attribute, as an attribute
/// writes it: its default, or, for a key without one, a value of its kind.
fn written(kind: PolicyKind, key: &Key) -> String {
    if *key == NAME {
        return format!("\"attribute.{kind}\"");
    }
    if !key.default().is_empty() {
        return key.default().to_owned();
    }
    match key.kind() {
        ValueKind::Name => format!("\"{}\"", RESOURCES[0]),
        ValueKind::Limit { .. } => "1".to_owned(),
        ValueKind::Count { min, .. } => min.max(1).to_string(),
        ValueKind::Number { range, float } => number(range.example(), float),
        ValueKind::Duration { .. } => "\"1s\"".to_owned(),
        ValueKind::Bool => "true".to_owned(),
        ValueKind::Choice { choices, .. } => format!("\"{}\"", choices[0]),
        ValueKind::RejectionKinds => "[]".to_owned(),
        ValueKind::Predicate => "is_failure".to_owned(),
        ValueKind::Method => format!("\"{ANSWER}\""),
        ValueKind::Delay => "\"50ms\"".to_owned(),
        ValueKind::Latency => "\"100ms..200ms\"".to_owned(),
        ValueKind::Seed => "1".to_owned(),
        ValueKind::Priority => "\"critical\"".to_owned(),
        ValueKind::ShedAt => "\"sheddable=0.25\"".to_owned(),
    }
}

/// Another value than `written` for `key`, valid alone and with the
/// others (a bulkhead's limits stay in order): what the named
/// configuration `default` sets.
fn other(key: &Key, written: &str) -> String {
    match key.kind() {
        ValueKind::Name => format!("\"{}\"", RESOURCES[1]),
        ValueKind::Limit { max } | ValueKind::Count { max, .. } => {
            let n: u32 = written.parse().unwrap();
            if n < max { n + 1 } else { n - 1 }.to_string()
        }
        ValueKind::Number { range, float } => {
            let x: f64 = written.parse().unwrap();
            let candidates = [range.example(), x + 1.0, x / 2.0];
            let other = candidates
                .into_iter()
                .find(|c| *c != x && range.contains(*c))
                .unwrap();
            number(other, float)
        }
        ValueKind::Duration { .. } => {
            let duration = duration(key, written) + Duration::from_secs(1);
            format!("\"{}ms\"", duration.as_millis())
        }
        ValueKind::Delay => match delay(key, written) {
            HedgeDelay::Fixed(duration) => {
                format!("\"{}ms\"", (duration + Duration::from_secs(1)).as_millis())
            }
            HedgeDelay::Percentile { .. } => "\"1s\"".to_owned(),
        },
        ValueKind::Latency => {
            let latency = latency(key, written);
            if latency.is_fixed() {
                let max = latency.max() + Duration::from_secs(1);
                format!("\"{}ms..{}ms\"", latency.min().as_millis(), max.as_millis())
            } else {
                "\"1s\"".to_owned()
            }
        }
        ValueKind::Seed => (written.parse::<u64>().unwrap().wrapping_add(1)).to_string(),
        ValueKind::Priority if written == "\"critical\"" => "\"high\"".to_owned(),
        ValueKind::Priority => "\"critical\"".to_owned(),
        ValueKind::ShedAt if written == "\"sheddable=0.25\"" => "\"normal=0.75\"".to_owned(),
        ValueKind::ShedAt => "\"sheddable=0.25\"".to_owned(),
        ValueKind::Bool => (written != "true").to_string(),
        ValueKind::Choice { choices, .. } => {
            let at = choices.iter().position(|c| written == format!("\"{c}\""));
            format!("\"{}\"", choices[(at.unwrap() + 1) % choices.len()])
        }
        ValueKind::RejectionKinds if rejection_kinds(key, written).is_empty() => {
            format!("[{}]", RejectionKind::ALL[0].name())
        }
        ValueKind::RejectionKinds => "[]".to_owned(),
        ValueKind::Predicate | ValueKind::Method => unreachable!("not in configuration"),
    }
}

/// A number as an attribute writes it: an `f32` (a percentage) as its
/// shortest form, an `f64` with a decimal point.
fn number(x: f64, float: Float) -> String {
    match float {
        Float::F32 => format!("{}", x as f32),
        Float::F64 => format!("{x:?}"),
    }
}

/// The text of a string literal.
fn unquoted(written: &str) -> &str {
    written.trim_matches('"')
}

fn duration(key: &Key, written: &str) -> Duration {
    bulkhead_core::parse_duration(key.name(), unquoted(written)).unwrap()
}

fn delay(key: &Key, written: &str) -> HedgeDelay {
    HedgeDelay::parse(key.name(), unquoted(written)).unwrap()
}

fn latency(key: &Key, written: &str) -> ChaosLatency {
    ChaosLatency::parse(key.name(), unquoted(written)).unwrap()
}

fn rejection_kinds(key: &Key, written: &str) -> Vec<RejectionKind> {
    written
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| RejectionKind::parse(key.name(), name).unwrap())
        .collect()
}

/// `.key(argument)` on the config builder, for `key` written as
/// `written`, as the macros' `values/mod.rs` (`Read::setting`) writes it;
/// `None` for a predicate or a method, which the builder does not take.
fn setting(key: &Key, written: &str) -> Option<String> {
    let argument = match key.kind() {
        ValueKind::Predicate | ValueKind::Method => return None,
        ValueKind::Name => written.to_owned(),
        ValueKind::Limit { .. } | ValueKind::Count { .. } => {
            format!("{}u32", written.parse::<u32>().unwrap())
        }
        ValueKind::Number {
            float: Float::F32, ..
        } => format!("{}f32", written.parse::<f32>().unwrap()),
        ValueKind::Number {
            float: Float::F64, ..
        } => format!("{}f64", written.parse::<f64>().unwrap()),
        ValueKind::Duration { .. } => duration_new(duration(key, written)),
        ValueKind::Delay => match delay(key, written) {
            HedgeDelay::Fixed(duration) => duration_new(duration),
            HedgeDelay::Percentile { tenths } => {
                format!("{PRIVATE}::HedgeDelay::Percentile {{ tenths: {tenths}u16 }}")
            }
        },
        ValueKind::Latency => {
            let latency = latency(key, written);
            if latency.is_fixed() {
                duration_new(latency.min())
            } else {
                format!(
                    "{PRIVATE}::ChaosLatency::range({}, {})",
                    duration_new(latency.min()),
                    duration_new(latency.max())
                )
            }
        }
        ValueKind::Seed => format!("{}u64", written.parse::<u64>().unwrap()),
        ValueKind::Priority => {
            let class = bulkhead_core::Priority::parse(key.name(), unquoted(written)).unwrap();
            format!("{PRIVATE}::Priority::{}", variant(class.name()))
        }
        ValueKind::ShedAt => {
            let shed_at = bulkhead_core::ShedAt::parse(key.name(), unquoted(written)).unwrap();
            format!("{PRIVATE}::ShedAt::from_bits({}u64)", shed_at.to_bits())
        }
        ValueKind::Bool => written.to_owned(),
        ValueKind::Choice { ty, .. } => {
            format!("{PRIVATE}::{ty}::{}", variant(unquoted(written)))
        }
        ValueKind::RejectionKinds => {
            let kinds: Vec<String> = rejection_kinds(key, written)
                .into_iter()
                .map(|kind| format!("{PRIVATE}::RejectionKind::{}", kind.name()))
                .collect();
            format!("[{}]", kinds.join(", "))
        }
    };
    Some(format!(".{}({argument})", key.name()))
}

/// `Duration::new(secs, nanos)`, suffixed as the macros write it.
fn duration_new(duration: Duration) -> String {
    format!(
        "{PRIVATE}::Duration::new({}u64, {}u32)",
        duration.as_secs(),
        duration.subsec_nanos()
    )
}

/// A choice's variant: `count` is `Count`, `gradient2` `Gradient2`.
fn variant(choice: &str) -> String {
    choice
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// The keys whose values configuration sets (every one the config
/// builder has a field and a getter for).
fn configured_keys(kind: PolicyKind) -> impl Iterator<Item = &'static Key> {
    kind.keys()
        .iter()
        .filter(|key| key.origin().in_configuration())
}

// ---------------------------------------------------------------------
// The generated file.

/// The whole generated file.
fn generate() -> String {
    let mut out = String::new();
    out.push_str(
        "//! Generated by `tests/policy_names.rs` from the policies' tables; do not\n\
         //! edit. Rewrite it with\n\
         //! `POLICY_NAMES=overwrite cargo test --test policy_names`, with\n\
         //! `RUSTFLAGS=\"--cfg policy_names_stale\"` if it no longer compiles.\n\n\
         use super::{Error, is_failure};\n\n",
    );
    declarations(&mut out);
    attributes(&mut out);
    checks(&mut out);
    out
}

/// `declare_written`: every policy written out as the macros declare a
/// set, each key set; `declare_bare`: every policy without keys.
fn declarations(out: &mut String) {
    for (function, prefix, doc) in [
        (
            "declare_written",
            "written",
            "Every policy declared as the attribute macros declare a set of\n\
             /// policies, each key an attribute takes set to what `policy_names.rs`\n\
             /// writes.",
        ),
        (
            "declare_bare",
            "configured",
            "Every policy declared with no key set: configuration sets them.",
        ),
    ] {
        writeln!(
            out,
            "/// {doc}\n\
             pub(crate) fn {function}(registry: &{PRIVATE}::Registry) \
             -> {PRIVATE}::Result<(), {PRIVATE}::RegistryError> {{\n\
             let mut declarations = registry.declare();"
        )
        .unwrap();
        for kind in PolicyKind::ALL {
            let settings: String = match prefix {
                "written" => attribute_keys(kind)
                    .filter(|key| **key != NAME)
                    .filter_map(|key| setting(key, &written(kind, key)))
                    .collect(),
                _ => String::new(),
            };
            writeln!(
                out,
                "let _{kind} = declarations.policies(\
                 &{PRIVATE}::PolicySpecs::new(\"{prefix}.{kind}()\").{kind}(\
                 {PRIVATE}::Some(\"{prefix}.{kind}\"), \
                 {PRIVATE}::{config}::builder(){settings}))?;",
                config = kind.config_type(),
            )
            .unwrap();
        }
        out.push_str("declarations.commit();\n");
        writeln!(out, "{PRIVATE}::Ok(())\n}}\n").unwrap();
    }
}

/// The `#[resilient]` trait: one method per policy with its attribute,
/// every key it takes written; and a type implementing it.
fn attributes(out: &mut String) {
    out.push_str(
        "/// Every policy's attribute, each key it takes written as\n\
         /// `policy_names.rs` writes it: the macros' own output.\n\
         #[::bulkhead::resilient]\n\
         pub(crate) trait PolicyNames: Send + Sync {\n",
    );
    for kind in PolicyKind::ALL {
        let keys: Vec<String> = attribute_keys(kind)
            .map(|key| format!("{} = {}", key.name(), written(kind, key)))
            .collect();
        writeln!(
            out,
            "#[{kind}({})]\nasync fn {kind}(&self) -> Result<(), Error>;\n",
            keys.join(", ")
        )
        .unwrap();
    }
    writeln!(
        out,
        "/// What a fallback's `method` names.\n\
         async fn {ANSWER}(&self) -> Result<(), Error>;\n}}\n\n\
         /// Answers every call.\n\
         #[derive(Debug)]\n\
         pub(crate) struct Answers;\n\n\
         impl PolicyNames for Answers {{"
    )
    .unwrap();
    for method in PolicyKind::ALL
        .map(PolicyKind::name)
        .into_iter()
        .chain([ANSWER])
    {
        writeln!(
            out,
            "async fn {method}(&self) -> Result<(), Error> {{ Ok(()) }}"
        )
        .unwrap();
    }
    out.push_str("}\n\n");
    out.push_str(
        "/// Calls every method of the wrapper once.\n\
         pub(crate) async fn call_each(wrapper: &ResilientPolicyNames<Answers>) -> Result<(), Error> {\n",
    );
    for method in PolicyKind::ALL
        .map(PolicyKind::name)
        .into_iter()
        .chain([ANSWER])
    {
        writeln!(out, "wrapper.{method}().await?;").unwrap();
    }
    out.push_str("Ok(())\n}\n\n");
}

/// `values`: every instance's values, through the registry's method named
/// after its policy; `check_defaults`: every key an attribute sets to its
/// default gives the config's default back through its getter.
fn checks(out: &mut String) {
    writeln!(
        out,
        "/// The values of instance `<prefix>.<policy>` of every policy, by policy.\n\
         pub(crate) fn values(registry: &::bulkhead::Registry, prefix: &str) \
         -> Vec<(&'static str, Vec<(&'static str, String)>)> {{\nvec!["
    )
    .unwrap();
    for kind in PolicyKind::ALL {
        writeln!(
            out,
            "(\"{kind}\", registry.{kind}(&format!(\"{{prefix}}.{kind}\")).unwrap().config().values()),"
        )
        .unwrap();
    }
    out.push_str("]\n}\n\n");
    out.push_str(
        "/// Checks that instance `<prefix>.<policy>` of every policy has, for\n\
         /// every key set to its default, the default config's value.\n\
         pub(crate) fn check_defaults(registry: &::bulkhead::Registry, prefix: &str) {\n",
    );
    for kind in PolicyKind::ALL {
        writeln!(
            out,
            "let config = registry.{kind}(&format!(\"{{prefix}}.{kind}\")).unwrap().config();\n\
             let default = {PRIVATE}::{}::default();",
            kind.config_type()
        )
        .unwrap();
        for key in configured_keys(kind).filter(|key| !key.default().is_empty()) {
            let name = key.name();
            writeln!(
                out,
                "assert_eq!(config.{name}(), default.{name}(), \"{{prefix}}.{kind}: {name}\");"
            )
            .unwrap();
        }
    }
    out.push_str("}\n");
}

// ---------------------------------------------------------------------
// The configuration the runtime checks lay under and over the
// declarations.

/// A value as TOML writes it: rejection kinds in strings.
fn toml_value(key: &Key, written: &str) -> String {
    match key.kind() {
        ValueKind::RejectionKinds => {
            let kinds: Vec<String> = rejection_kinds(key, written)
                .into_iter()
                .map(|kind| format!("\"{}\"", kind.name()))
                .collect();
            format!("[{}]", kinds.join(", "))
        }
        _ => written.to_owned(),
    }
}

/// For every policy: the named configuration `default`, every key with a
/// default set to another value than the attribute's (those without one
/// are written with another value than none, the built-in one), and
/// instance `configured.<policy>`,
/// every key set to the attribute's (if `instances`).
fn configuration(instances: bool) -> String {
    let mut toml = String::new();
    for kind in PolicyKind::ALL {
        writeln!(toml, "[{kind}.configs.default]").unwrap();
        for key in configured_keys(kind).filter(|key| !key.default().is_empty()) {
            let written = written(kind, key);
            let value = toml_value(key, &other(key, &written));
            writeln!(toml, "{} = {value}", key.name()).unwrap();
        }
        if !instances {
            continue;
        }
        writeln!(toml, "\n[{kind}.instances.\"configured.{kind}\"]").unwrap();
        for key in configured_keys(kind) {
            let value = toml_value(key, &written(kind, key));
            writeln!(toml, "{} = {value}", key.name()).unwrap();
        }
        toml.push('\n');
    }
    toml
}

// ---------------------------------------------------------------------
// The tests.

/// `text` without what formatting changes: whitespace, and the commas
/// rustfmt adds before a closing bracket.
fn normalised(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    for (from, to) in [(",)", ")"), (",]", "]"), (",}", "}")] {
        out = out.replace(from, to);
    }
    out
}

#[test]
fn the_generated_code_is_what_the_policies_tables_generate() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/policy_names/generated.rs");
    let expected = generate();
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    if normalised(&written) == normalised(&expected) {
        return;
    }
    if std::env::var("POLICY_NAMES").is_ok_and(|v| v == "overwrite") {
        std::fs::write(&path, &expected).unwrap();
        let formatted = std::process::Command::new("rustfmt")
            .args(["--edition", "2024"])
            .arg(&path)
            .status()
            .is_ok_and(|status| status.success());
        assert!(
            formatted,
            "{} is rewritten but not formatted: run `cargo fmt --all`",
            path.display()
        );
        return;
    }
    panic!(
        "{} is not what the policies' tables generate now: rewrite it with \
         `POLICY_NAMES=overwrite cargo test --test policy_names` (with \
         `RUSTFLAGS=\"--cfg policy_names_stale\"` if it no longer compiles). \
         It should be:\n{expected}",
        path.display()
    );
}

#[cfg(not(policy_names_stale))]
#[test]
fn generated_code_gives_every_key_its_value() {
    let toml = configuration(true);
    let registry = Registry::builder()
        .config_toml(&toml)
        .unwrap_or_else(|error| panic!("{error}\n{toml}"))
        .build();
    for resource in RESOURCES {
        registry.resource(resource, 100).unwrap();
    }
    generated::declare_written(&registry).unwrap();
    generated::declare_bare(&registry).unwrap();
    let wrapper = generated::ResilientPolicyNames::new(generated::Answers, &registry).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(generated::call_each(&wrapper))
        .unwrap();

    let written = generated::values(&registry, "written");
    let names: Vec<&str> = written.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(names, PolicyKind::ALL.map(PolicyKind::name));
    for (kind, values) in &written {
        let kind = PolicyKind::from_name(kind).unwrap();
        let keys: Vec<&str> = values.iter().map(|(key, _)| *key).collect();
        let expected: Vec<&str> = configured_keys(kind).map(Key::name).collect();
        assert_eq!(keys, expected, "{kind}: the keys of its config's values");
    }
    assert_eq!(
        generated::values(&registry, "attribute"),
        written,
        "the attributes give what the code written out gives"
    );
    assert_eq!(
        generated::values(&registry, "configured"),
        written,
        "configuration gives what the attributes give"
    );
    for prefix in ["written", "attribute"] {
        generated::check_defaults(&registry, prefix);
    }
    // Not one key left to the named configuration `default`: where only it
    // sets them, every key has another value.
    let under = Registry::builder()
        .config_toml(&configuration(false))
        .unwrap()
        .build();
    for resource in RESOURCES {
        under.resource(resource, 100).unwrap();
    }
    generated::declare_bare(&under).unwrap();
    for ((kind, set), (_, named)) in written.iter().zip(generated::values(&under, "configured")) {
        for ((key, value), (_, other)) in set.iter().zip(named) {
            assert_ne!(
                *value, other,
                "{kind}.{key}: the named configuration `default` must set another value"
            );
        }
    }
}

#[test]
fn the_generator_writes_every_key_an_attribute_sets() {
    // `config` is set on every builder, like every key of a policy's own
    // table but a predicate or a method.
    for kind in PolicyKind::ALL {
        for key in attribute_keys(kind).filter(|key| **key != NAME) {
            let setting = setting(key, &written(kind, key));
            let expected =
                *key == CONFIG || !matches!(key.kind(), ValueKind::Predicate | ValueKind::Method);
            assert_eq!(setting.is_some(), expected, "{kind}.{}", key.name());
        }
    }
}
