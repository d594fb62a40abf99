//! [`policy_config!`]: a policy's config and builder, generated from its
//! rows of keys (`bulkhead-keys`' `table/<policy>.rs`, read by
//! `bulkhead_keys::__rows!`), so that adding a key is its row and the code
//! that uses its value.

/// Generates a policy's resolved config and its builder from the policy's
/// rows: each key's field, default, getter and setter, then `set_key`,
/// `over`, `build`, `build_on`, `build_keyed`, `Display` and `values`.
/// Called by the policy's rows:
///
/// ```text
/// bulkhead_keys::__timeout_keys!(crate::config::policy_config! {
///     kind: Timeout;
///     /// The resolved configuration ...
///     #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
///     pub struct TimeoutConfig;
///     /// Explicit values for a timeout ...
///     #[derive(Debug, Clone, Default, PartialEq, Eq)]
///     #[must_use]
///     pub struct TimeoutConfigBuilder;
///     extra {}                    // fields that are not keys: `name: Type = default;`
///     errors: "ATR-008 if `duration` is zero.";
///     // checked_by: check_limits; (a check between keys, once built)
/// });
/// ```
///
/// What spans several keys (a bulkhead's limits in order) and getters that
/// compute (`@getter(own)`) are written by hand beside it.
macro_rules! policy_config {
    (
        {
            kind: $kind:ident;
            $(#[$config_meta:meta])*
            pub struct $config:ident;
            $(#[$builder_meta:meta])*
            pub struct $builder:ident;
            extra {
                $($(#[doc = $extra_doc:literal])* $extra:ident: $extra_ty:ty = $extra_value:expr;)*
            }
            errors: $errors:literal;
            $(checked_by: $check:ident;)?
        }
        keys $keys:tt
        fields [$({
            [$($doc:literal),*] set [$($set:tt)*] getter [$($getter:ident)?] shown [$($when:ident)*]
            $name:ident: $ty:ty = $value:expr; $value_kind:ident
        })*]
    ) => {
        $(#[$config_meta])*
        pub struct $config {
            $($name: $ty,)*
            $($extra: $extra_ty,)*
        }

        impl $config {
            /// A builder starting from no explicit values.
            pub fn builder() -> $builder {
                $builder::default()
            }

            $($crate::config::getter!([$($getter)?] [$($doc),*] $name: $ty);)*

            $(
                $(#[doc = $extra_doc])*
                pub fn $extra(&self) -> $extra_ty {
                    self.$extra
                }
            )*

            /// Every key that configuration sets (the policy's
            /// [key table](crate::keys::PolicyKind::keys) without the
            /// attribute's own, such as predicates), in the table's order,
            /// with its value here as configuration writes it (`none` for a
            /// key left without one): what a registry's reload compares key
            /// by key.
            pub fn values(&self) -> Vec<(&'static str, String)> {
                vec![$((stringify!($name), $crate::config::written(&self.$name)),)*]
            }
        }

        impl Default for $config {
            fn default() -> Self {
                $config {
                    $($name: $value,)*
                    $($extra: $extra_value,)*
                }
            }
        }

        impl ::std::fmt::Display for $config {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let mut entries = $crate::config::Entries::new(f);
                $($crate::config::entry!(entries, self, [$($when)*], $name);)*
                Ok(())
            }
        }

        $(#[$builder_meta])*
        pub struct $builder {
            config: Option<String>,
            $($name: Option<$crate::config::stored!([$($set)*] $ty)>,)*
            $($extra: Option<$extra_ty>,)*
        }

        impl $builder {
            /// Starts from the named configuration instead of `default`.
            pub fn config(mut self, name: impl Into<String>) -> Self {
                self.config = Some(name.into());
                self
            }

            $($crate::config::setter!([$($set)*] [$($doc),*] $value_kind $name: $ty);)*

            $(
                $(#[doc = $extra_doc])*
                pub fn $extra(mut self, $extra: $extra_ty) -> Self {
                    self.$extra = Some($extra);
                    self
                }
            )*

            /// Sets the key named `key` (one of the policy's
            /// [`keys`](crate::keys::PolicyKind::keys) that configuration
            /// sets, not those only an attribute takes) to `value`, as
            /// configuration from outside the code does. The value is
            /// checked when the configuration is built, as for the other
            /// setters.
            ///
            /// # Errors
            ///
            /// CFG-001 if the builder has no such key, or `value` is not of
            /// the kind it takes; ATR-010 for a choice that is not one.
            pub fn set_key(
                mut self,
                key: &str,
                value: $crate::keys::KeyValue,
            ) -> Result<Self, $crate::ConfigError> {
                match key {
                    $(stringify!($name) => {
                        self.$name = Some($crate::config::Read::read(key, value)?);
                    })*
                    _ => return Err($crate::config::no_such_key(key, &value)),
                }
                Ok(self)
            }

            /// The named base configuration, if one was chosen.
            pub fn config_name(&self) -> Option<&str> {
                self.config.as_deref()
            }

            /// The values set here, and those of `lower` that are not: two
            /// layers written for one instance (say TOML's overrides and the
            /// environment's), this one above.
            pub fn over(&self, lower: &$builder) -> $builder {
                $builder {
                    config: self.config.clone().or_else(|| lower.config.clone()),
                    $($name: self.$name.as_ref().or(lower.$name.as_ref()).cloned(),)*
                    $($extra: self.$extra.or(lower.$extra),)*
                }
            }

            /// Resolves the values set here over the built-in defaults.
            ///
            /// # Errors
            ///
            #[doc = $errors]
            pub fn build(&self) -> Result<$config, $crate::ConfigError> {
                self.build_on(&$config::default())
            }

            /// Resolves the values set here over `base`.
            ///
            /// # Errors
            ///
            #[doc = $errors]
            pub fn build_on(&self, base: &$config) -> Result<$config, $crate::ConfigError> {
                let config = self.build_keyed(base, "")?;
                $(config.$check("")?;)?
                Ok(config)
            }

            /// Like [`build_on`](Self::build_on), naming a bad value's key as
            /// `key_prefix` followed by the key, e.g.
            /// `<policy>.configs.slow.<key>`.
            $(
                #[doc = concat!(
                    "Each value is checked on its own only: a layer of configuration may set \
                     one that another layer makes fit. Check them against each other with [`",
                    stringify!($config), "::", stringify!($check), "`] once every layer is laid."
                )]
            )?
            ///
            /// # Errors
            ///
            #[doc = $errors]
            pub fn build_keyed(
                &self,
                base: &$config,
                key_prefix: &str,
            ) -> Result<$config, $crate::ConfigError> {
                let keyed = |e: $crate::ConfigError| e.prefixed(key_prefix);
                Ok($config {
                    $($name: match &self.$name {
                        Some(value) => $crate::config::checked!([$($set)*] value, $kind, $name)
                            .map_err(keyed)?,
                        None => base.$name,
                    },)*
                    $($extra: self.$extra.unwrap_or(base.$extra),)*
                })
            }
        }
    };
}

/// A key's getter, unless the config computes it (`@getter(own)`).
macro_rules! getter {
    ([own] $docs:tt $name:ident: $ty:ty) => {};
    ([] [$($doc:literal),*] $name:ident: $ty:ty) => {
        $(#[doc = $doc])*
        pub fn $name(&self) -> $ty {
            self.$name
        }
    };
}

/// A key's setter on the builder, by its `@set`.
macro_rules! setter {
    ([] [$($doc:literal),*] RejectionKinds $name:ident: $ty:ty) => {
        $(#[doc = $doc])*
        pub fn $name(mut self, $name: impl IntoIterator<Item = $crate::RejectionKind>) -> Self {
            self.$name = Some($name.into_iter().collect());
            self
        }
    };
    ([into some $inner:ty] [$($doc:literal),*] $kind:ident $name:ident: $ty:ty) => {
        $(#[doc = $doc])*
        pub fn $name(mut self, $name: impl Into<$inner>) -> Self {
            self.$name = Some($name.into());
            self
        }
    };
    ([some $inner:ty] [$($doc:literal),*] $kind:ident $name:ident: $ty:ty) => {
        $(#[doc = $doc])*
        pub fn $name(mut self, $name: $inner) -> Self {
            self.$name = Some($name);
            self
        }
    };
    ([into] [$($doc:literal),*] $kind:ident $name:ident: $ty:ty) => {
        $(#[doc = $doc])*
        pub fn $name(mut self, $name: impl Into<$ty>) -> Self {
            self.$name = Some($name.into());
            self
        }
    };
    ([] [$($doc:literal),*] $kind:ident $name:ident: $ty:ty) => {
        $(#[doc = $doc])*
        pub fn $name(mut self, $name: $ty) -> Self {
            self.$name = Some($name);
            self
        }
    };
}

/// What the builder holds for a key, by its `@set`: the field's type, or
/// what the setter takes for a field that is `Some` once set.
macro_rules! stored {
    ([into some $inner:ty] $ty:ty) => {
        $inner
    };
    ([some $inner:ty] $ty:ty) => {
        $inner
    };
    ([$($set:tt)*] $ty:ty) => {
        $ty
    };
}

/// A value the builder holds, checked against its row as the config's
/// field, by the key's `@set`.
macro_rules! checked {
    ([$(into)? some $inner:ty] $value:ident, $kind:ident, $name:ident) => {
        $crate::config::checked!([] $value, $kind, $name).map(Some)
    };
    ([$($set:tt)*] $value:ident, $kind:ident, $name:ident) => {
        $crate::config::Check::check($value, {
            const KEY: &$crate::keys::Key =
                $crate::config::key_of($crate::keys::PolicyKind::$kind, stringify!($name));
            KEY
        })
    };
}

/// One `key = value` of a config's `Display`: always, or when one of the
/// keys of its `@shown_if` differs from its default.
macro_rules! entry {
    ($entries:ident, $self:ident, [], $name:ident) => {
        $entries.entry(stringify!($name), &$self.$name())?;
    };
    ($entries:ident, $self:ident, [$($when:ident)+], $name:ident) => {
        if $($self.$when != Self::default().$when)||+ {
            $entries.entry(stringify!($name), &$self.$name())?;
        }
    };
}

pub(crate) use {checked, entry, getter, policy_config, setter, stored};
