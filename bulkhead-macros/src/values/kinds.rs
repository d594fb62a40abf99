//! How each kind of value is read from an attribute's expression: names,
//! limits, numbers in a range, durations, delays, booleans, choices, paths
//! of predicates and methods, rejection kinds.

use super::*;

/// The variant a choice names: the choice in CamelCase (`count` is
/// `Count`).
pub(super) fn variant(choice: &str) -> String {
    choice
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars))
                .into_iter()
                .flatten()
        })
        .collect()
}

/// `name`, `config`, `resource`: a non-empty string literal.
pub(super) fn name(key: &str, expr: &Expr) -> Result<String, String> {
    match literal(expr) {
        Some(Lit::Str(s)) if !s.value().trim().is_empty() => Ok(s.value()),
        Some(Lit::Str(_)) => Err(format!("{}: {key} must not be empty", codes::MALFORMED)),
        _ => Err(format!(
            "{}: {key} must be a string literal such as \"thumbnails\", got {}",
            codes::MALFORMED,
            as_written(expr)
        )),
    }
}

/// `max_concurrent`: an integer from 1 to `max` (ATR-003).
pub(super) fn limit(key: &str, max: u32, expr: &Expr) -> Result<u32, String> {
    let code = codes::LIMIT;
    let max = u64::from(max);
    let out_of_range = |got: &dyn std::fmt::Display| {
        format!("{code}: {key} must be between 1 and {max}, got {got}")
    };
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if !int.suffix().is_empty() => Err(format!(
            "{code}: {key} is written without a type suffix, as in {key} = {}, got {int}",
            int.base10_digits(),
            int = int.token()
        )),
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => match int.base10_parse::<u64>() {
            Ok(value) if (1..=max).contains(&value) => {
                u32::try_from(value).map_err(|_| out_of_range(&value))
            }
            Ok(value) => Err(out_of_range(&value)),
            Err(_) => Err(out_of_range(&int.base10_digits())),
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) if matches!(literal(inner), Some(Lit::Int(_))) => {
            Err(out_of_range(&format_args!("-{}", as_written(inner))))
        }
        _ => Err(format!(
            "{code}: {key} must be an integer between 1 and {max}, got {}",
            as_written(expr)
        )),
    }
}

/// A number as written: its value, or why it cannot be one.
pub(super) enum Number {
    /// An unsuffixed integer or float literal, possibly negated.
    Literal(String),
    /// A literal with a type suffix, such as `4u8` or `2.0f64`.
    Suffixed(String),
    /// Anything else.
    Other,
}

/// Reads `expr` as a number literal, with its sign.
pub(super) fn number(expr: &Expr) -> Number {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if int.suffix().is_empty() => Number::Literal(int.base10_digits().to_owned()),
        Expr::Lit(ExprLit {
            lit: Lit::Float(float),
            ..
        }) if float.suffix().is_empty() => Number::Literal(float.base10_digits().to_owned()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(_) | Lit::Float(_),
            ..
        }) => Number::Suffixed(as_written(expr)),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => match number(ungroup(inner)) {
            Number::Literal(digits) => Number::Literal(format!("-{digits}")),
            other => other,
        },
        _ => Number::Other,
    }
}

/// The error of a string, byte string or character literal written with a
/// suffix (`"1s"ms`), which the compiler accepts in an attribute and which
/// means nothing to a key: said with the key's code.
pub(super) fn suffixed_text(key: &Key, expr: &Expr) -> Option<String> {
    let suffix = match literal(expr)? {
        Lit::Str(s) => s.suffix().to_owned(),
        Lit::ByteStr(s) => s.suffix().to_owned(),
        Lit::CStr(s) => s.suffix().to_owned(),
        Lit::Char(c) => c.suffix().to_owned(),
        Lit::Byte(b) => b.suffix().to_owned(),
        _ => return None,
    };
    (!suffix.is_empty()).then(|| {
        format!(
            "{}: {} is written without a suffix after its literal, as in {}, got {}",
            key.code(),
            key.name(),
            example(key),
            expr.to_token_stream()
        )
    })
}

/// `Err` saying that `key` is written without a type suffix.
pub(super) fn suffixed(key: &Key, written: &str) -> String {
    format!(
        "{}: {} is written without a type suffix, as in {}, got {written}",
        codes::NUMBER,
        key.name(),
        example(key)
    )
}

/// A count: an integer from `min` to `max` (ATR-008).
pub(super) fn count(key: &Key, min: u32, max: u32, expr: &Expr) -> Result<u32, String> {
    let (code, name) = (codes::NUMBER, key.name());
    let out_of_range =
        |got: &str| format!("{code}: {name} must be between {min} and {max}, got {got}");
    match number(expr) {
        Number::Literal(digits) if digits.contains(['.', 'e', 'E']) => Err(format!(
            "{code}: {name} must be a whole number between {min} and {max}, got {digits}"
        )),
        Number::Literal(digits) => match digits.parse::<u64>() {
            Ok(value) if (u64::from(min)..=u64::from(max)).contains(&value) => {
                u32::try_from(value).map_err(|_| out_of_range(&digits))
            }
            _ => Err(out_of_range(&digits)),
        },
        Number::Suffixed(written) => Err(suffixed(key, &written)),
        Number::Other => Err(format!(
            "{code}: {name} must be an integer between {min} and {max}, got {}",
            as_written(expr)
        )),
    }
}

/// A number in `range`, as the builder will store it (`float`), or the
/// coded error naming the range (ATR-008).
pub(super) fn number_in(key: &Key, range: Range, float: Float, expr: &Expr) -> Result<f64, String> {
    let (code, name, words) = (codes::NUMBER, key.name(), range.words());
    let out_of_range = |got: &str| format!("{code}: {name} must be {words}, got {got}");
    match number(expr) {
        Number::Literal(digits) => {
            let value = match float {
                Float::F32 => digits.parse::<f32>().map(f64::from),
                Float::F64 => digits.parse::<f64>(),
            };
            match value {
                Ok(value) if range.contains(value) => Ok(value),
                _ => Err(out_of_range(&digits)),
            }
        }
        Number::Suffixed(written) => Err(suffixed(key, &written)),
        Number::Other => {
            // `words` reads "a finite number of at least 1" or "more than
            // 0 and at most 100".
            let number = if words.starts_with("a ") {
                words
            } else {
                format!("a number {words}")
            };
            Err(format!(
                "{code}: {name} must be {number}, got {}",
                as_written(expr)
            ))
        }
    }
}

/// A duration string (humantime syntax, or `"0"`), ATR-001 otherwise.
pub(super) fn duration(key: &str, expr: &Expr) -> Result<Duration, String> {
    match literal(expr) {
        Some(Lit::Str(s)) => parse_duration(key, &s.value()),
        _ => Err(format!(
            "{}: {key} must be a duration string such as \"250ms\", got {}",
            codes::DURATION,
            as_written(expr)
        )),
    }
}

/// Parses a duration with the registry's own parser,
/// `bulkhead_keys::parse_duration`: humantime syntax, or a bare `0`.
pub(super) fn parse_duration(key: &str, text: &str) -> Result<Duration, String> {
    bulkhead_keys::parse_duration(key, text).map_err(|error| match error {
        ConfigError::InvalidDuration { reason, .. } => {
            // Keep humantime's diagnosis, not its list of every unit.
            let reason = reason.split(", supported units").next().unwrap_or_default();
            format!(
                "{}: invalid duration {text:?}: expected a number followed by a unit such as 250ms ({reason})",
                codes::DURATION
            )
        }
        // Longer than `Duration::MAX`: ATR-001 saying so, and the key.
        other => other.to_string(),
    })
}

/// A hedge's `delay`: a duration string, or a percentile such as `"p90"`
/// (ATR-001).
pub(super) fn delay(key: &str, expr: &Expr) -> Result<HedgeDelay, String> {
    match literal(expr) {
        Some(Lit::Str(s)) if s.value().trim_start().starts_with(['p', 'P']) => {
            HedgeDelay::parse(key, &s.value()).map_err(|error| error.to_string())
        }
        Some(Lit::Str(_)) => duration(key, expr).map(HedgeDelay::Fixed),
        _ => Err(format!(
            "{}: {key} must be a duration string such as \"50ms\", or a percentile such as \"p90\", got {}",
            codes::DURATION,
            as_written(expr)
        )),
    }
}

/// A chaos policy's latency: a duration string, or a range of them such as
/// `"100ms..500ms"` (ATR-001).
pub(super) fn latency(key: &str, expr: &Expr) -> Result<ChaosLatency, String> {
    match literal(expr) {
        Some(Lit::Str(s)) if s.value().contains("..") => {
            ChaosLatency::parse(key, &s.value()).map_err(|error| error.to_string())
        }
        Some(Lit::Str(_)) => duration(key, expr).map(ChaosLatency::fixed),
        _ => Err(format!(
            "{}: {key} must be a duration string such as \"200ms\", or a range such as \"100ms..500ms\", got {}",
            codes::DURATION,
            as_written(expr)
        )),
    }
}

/// A priority class, in a string: `"critical"` (ATR-017, with the class
/// meant if one is close).
pub(super) fn priority(key: &str, expr: &Expr) -> Result<Priority, String> {
    match literal(expr) {
        Some(Lit::Str(s)) => Priority::parse(key, &s.value()).map_err(|error| error.to_string()),
        _ => Err(format!(
            "{}: {key} must be a priority class in a string, such as \"critical\", got {}",
            codes::PRIORITY,
            as_written(expr)
        )),
    }
}

/// A bulkhead's `shed_at`, in a string: `"sheddable=0.5, normal=0.8"`
/// (ATR-017, ATR-018 if its fractions decrease with the class).
pub(super) fn shed_at(key: &str, expr: &Expr) -> Result<ShedAt, String> {
    match literal(expr) {
        Some(Lit::Str(s)) => ShedAt::parse(key, &s.value()).map_err(|error| error.to_string()),
        _ => Err(format!(
            "{}: {key} must be fractions of the limit per class in a string, such as \"sheddable=0.5, normal=0.8\", got {}",
            codes::PRIORITY,
            as_written(expr)
        )),
    }
}

/// A seed: an integer from 0 to 2^64 - 1 (ATR-008).
pub(super) fn seed(key: &Key, expr: &Expr) -> Result<u64, String> {
    let (code, name) = (codes::NUMBER, key.name());
    match number(expr) {
        Number::Literal(digits) => digits.parse::<u64>().map_err(|_| {
            format!("{code}: {name} must be a whole number between 0 and 18446744073709551615, got {digits}")
        }),
        Number::Suffixed(written) => Err(suffixed(key, &written)),
        Number::Other => Err(format!(
            "{code}: {name} must be an integer between 0 and 18446744073709551615, got {}",
            as_written(expr)
        )),
    }
}

/// `true` or `false`, or the same in a string (ATR-006).
pub(super) fn boolean(key: &str, expr: &Expr) -> Result<bool, String> {
    match literal(expr) {
        Some(Lit::Bool(b)) => Ok(b.value),
        Some(Lit::Str(s)) if s.value() == "true" => Ok(true),
        Some(Lit::Str(s)) if s.value() == "false" => Ok(false),
        _ => Err(format!(
            "{}: {key} must be true or false, got {}",
            codes::BOOL,
            as_written(expr)
        )),
    }
}

/// Exactly one of `choices`, in a string (ATR-010).
pub(super) fn choice(
    key: &str,
    choices: &'static [&'static str],
    expr: &Expr,
) -> Result<&'static str, String> {
    let written = match literal(expr) {
        Some(Lit::Str(s)) => Some(s.value()),
        _ => None,
    };
    if let Some(choice) = written.and_then(|written| choices.iter().find(|c| **c == written)) {
        return Ok(choice);
    }
    let quoted: Vec<String> = choices.iter().map(|choice| format!("{choice:?}")).collect();
    let expected = match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    };
    Err(format!(
        "{}: {key} must be {expected}, got {}",
        codes::CHOICE,
        as_written(expr)
    ))
}

/// `retry_if`, `record_if`: the path of a function `fn(&E) -> bool`, written
/// as a path or as a string holding one (ATR-011).
pub(super) fn predicate(key: &Key, expr: &Expr) -> Result<ExprPath, String> {
    let refused = || {
        format!(
            "{}: {} must name a function `fn(&E) -> bool` by its path, as in {}, got {}",
            codes::PREDICATE,
            key.name(),
            example(key),
            as_written(expr)
        )
    };
    match expr {
        Expr::Path(path) => Ok(path.clone()),
        // Every token of the parsed path has the string's span.
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse().map_err(|_| refused()),
        _ => Err(refused()),
    }
}

/// `method = "cached_thumbnail"`: the name of a method, in a string
/// (ATR-013), spanned on the string.
pub(super) fn method(key: &Key, expr: &Expr) -> Result<Ident, String> {
    match literal(expr) {
        Some(Lit::Str(s)) => match syn::parse_str::<Ident>(&s.value()) {
            Ok(name) => Ok(Ident::new(&name.to_string(), s.span())),
            Err(_) => Err(format!(
                "{}: {} names a method of the trait by its name alone, as in {}, got {}",
                codes::FALLBACK,
                key.name(),
                example(key),
                as_written(expr)
            )),
        },
        _ => Err(format!(
            "{}: {} names a method of the trait in a string, as in {}, got {}",
            codes::FALLBACK,
            key.name(),
            example(key),
            as_written(expr)
        )),
    }
}

/// `abort_on = [BulkheadFull, Timeout]`, `ignore_on = [..]`: rejection
/// kinds (`bulkhead-keys`' `RejectionKind`, by its `name`), written as
/// identifiers (or strings), in brackets unless there is one. Every unknown
/// kind is reported, each on its own token.
pub(super) fn rejection_kinds(key: &str, expr: &Expr) -> darling::Result<Vec<RejectionKind>> {
    let elements: Vec<&Expr> = match expr {
        Expr::Array(array) => array.elems.iter().map(ungroup).collect(),
        other => vec![other],
    };
    let mut kinds = Vec::new();
    let mut errors = Vec::new();
    for element in elements {
        match rejection_kind(key, element) {
            Ok(kind) if kinds.contains(&kind) => errors.push(
                darling::Error::custom(format!(
                    "{}: {key} lists `{}` twice",
                    codes::REJECTION_KIND,
                    kind.name()
                ))
                .with_span(element),
            ),
            Ok(kind) => kinds.push(kind),
            Err(message) => errors.push(darling::Error::custom(message).with_span(element)),
        }
    }
    if errors.is_empty() {
        Ok(kinds)
    } else {
        Err(darling::Error::multiple(errors))
    }
}

/// One kind of a list.
pub(super) fn rejection_kind(key: &str, expr: &Expr) -> Result<RejectionKind, String> {
    let code = codes::REJECTION_KIND;
    let written = match expr {
        Expr::Path(path) if path.qself.is_none() => kind_path(&path.path),
        _ => match literal(expr) {
            Some(Lit::Str(s)) if s.suffix().is_empty() => Some(s.value()),
            _ => None,
        },
    };
    let Some(written) = written else {
        return Err(format!(
            "{code}: {key} lists rejection kinds, as in {key} = [BulkheadFull, Timeout], got {}",
            as_written(expr)
        ));
    };
    // A string as configuration reads it: `"Timeout"` or
    // `"RejectionKind::Timeout"`.
    if let Ok(kind) = RejectionKind::parse(key, &written) {
        return Ok(kind);
    }
    let names = RejectionKind::ALL.map(RejectionKind::name);
    let hint = did_you_mean(&written, names)
        .map(|kind| format!("did you mean `{kind}`? "))
        .unwrap_or_default();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    Err(format!(
        "{code}: {key} lists `{written}`, which is not a rejection kind; {hint}expected {expected}"
    ))
}

/// The kind a path names: `Timeout`, or `RejectionKind::Timeout` (with any
/// path before `RejectionKind`, such as `bulkhead::RejectionKind::Timeout`);
/// `None` for any other path (`Foo::Timeout`, `Timeout::<u8>`), which is
/// no rejection kind.
pub(super) fn kind_path(path: &syn::Path) -> Option<String> {
    if path
        .segments
        .iter()
        .any(|segment| !segment.arguments.is_none())
    {
        return None;
    }
    let mut segments = path.segments.iter().rev();
    let last = segments.next()?;
    match segments.next() {
        None if path.leading_colon.is_none() => Some(last.ident.to_string()),
        Some(parent) if parent.ident == "RejectionKind" => Some(last.ident.to_string()),
        _ => None,
    }
}
