//! How a policy's table of keys is written: one row per key, read twice.
//! This crate reads each row's [`Key`](crate::Key) (its name, the kind of
//! its value, its default as an attribute writes it, what it means);
//! `bulkhead-core` generates the policy's config and its builder from the
//! same rows (the field, the default, the getter, the builder's setter,
//! `set_key`, the keyed build, `Display` and `values`).
//!
//! Each `table/<policy>.rs` holds a macro, `__<policy>_keys!`, whose one
//! argument is the macro to call with the rows (a path and a `!`, then one
//! group of tokens that is passed on first), as in
//! `__retry_keys!(crate::config::policy_config! { .. })`. It hands its rows to
//! [`__rows!`](crate::__rows), which reads them and calls that macro with
//! them read: `keys [..]`, every row's key in the table's order, then
//! `fields [..]`, the rows of the config's fields.
//!
//! A row of a key that configuration sets (and the builder, and the
//! attribute):
//!
//! ```text
//! /// What the value means, the docs of the config's getter and the
//! /// builder's setter (read by bulkhead-core, where they are items).
//! @set(some u32)                     // options, in this order, each optional
//! @getter(own)
//! @shown_if(adaptive)
//! name: Type = default_expression
//!     => Kind { .. }, "default as an attribute writes it", "what it means";
//! ```
//!
//! - `name` is the key, the config's field and the name of its getter and
//!   setter; `Type` the field's type, `default_expression` its built-in
//!   value; `Kind` a [`ValueKind`](crate::ValueKind) variant with its
//!   fields, by which the builder checks the value (its range, its code).
//!   The docs, `Type` and `default_expression` are read only where the
//!   config is generated, in `bulkhead-core`: `Self::DEFAULT_..` names the
//!   config's constants, `Adaptive` its type there.
//! - `@set(into)`: the setter takes `impl Into<Type>`. `@set(some T)`: the
//!   field is an `Option`, the builder holds a `T` (what the setter takes)
//!   and the field becomes `Some` of it, checked; `@set(into some T)`: the
//!   same, the setter taking an `impl Into<T>`. Otherwise the setter takes
//!   a `Type`, or any rejection kinds for a `RejectionKinds` key.
//! - `@getter(own)`: the config writes its getter itself (it computes the
//!   value).
//! - `@shown_if(a | b)`: `Display` shows the key only when one of the keys
//!   `a`, `b` differs from its default; otherwise always.
//!
//! A key only an attribute takes (a predicate, a method) has no field:
//! `name => Kind, "", "what it means";`.

/// Reads a policy's rows, as `table/<policy>.rs` writes them, and calls the
/// macro it is given with them: see the [module](self).
#[doc(hidden)]
#[macro_export]
macro_rules! __rows {
    (($($callback:ident)::+ ! $pass:tt) $($rows:tt)*) => {
        $crate::__rows!(@read ($($callback)::+) $pass [] [] $($rows)*);
    };
    (@read ($($callback:ident)::+) $pass:tt [$($keys:tt)*] [$($fields:tt)*]) => {
        $($callback)::+! { $pass keys [$($keys)*] fields [$($fields)*] }
    };
    // A key only attributes take.
    (@read $callback:tt $pass:tt [$($keys:tt)*] [$($fields:tt)*]
        $name:ident => $kind:ident $({ $($arg:tt)* })?, $default:literal, $summary:literal;
        $($rest:tt)*
    ) => {
        $crate::__rows!(@read $callback $pass
            [$($keys)* ($name, $kind { $($($arg)*)? }, $default, $summary, Attribute)]
            [$($fields)*]
            $($rest)*);
    };
    // A key of the config.
    (@read $callback:tt $pass:tt [$($keys:tt)*] [$($fields:tt)*]
        $(#[doc = $doc:literal])*
        $(@set($($set:tt)*))?
        $(@getter($getter:ident))?
        $(@shown_if($($when:ident)|+))?
        $name:ident : $ty:ty = $value:expr
            => $kind:ident $({ $($arg:tt)* })?, $default:literal, $summary:literal;
        $($rest:tt)*
    ) => {
        $crate::__rows!(@read $callback $pass
            [$($keys)* ($name, $kind { $($($arg)*)? }, $default, $summary, Both)]
            [$($fields)* {
                [$($doc),*] set [$($($set)*)?] getter [$($getter)?] shown [$($($when)*)?]
                $name: $ty = $value; $kind
            }]
            $($rest)*);
    };
}

/// The [`Key`](crate::Key)s of rows read by [`__rows!`]: `$table`, in the
/// rows' order.
macro_rules! key_table {
    ({ $vis:vis const $table:ident }
        keys [$(($name:ident, $kind:ident { $($arg:tt)* }, $default:literal, $summary:literal, $origin:ident))*]
        fields $fields:tt
    ) => {
        $vis const $table: &[$crate::Key] = &[$(
            $crate::Key::new(
                stringify!($name),
                $crate::ValueKind::$kind { $($arg)* },
                $default,
                $summary,
            )
            .only_in($crate::Origin::$origin)
        ),*];
    };
}
pub(crate) use key_table;
