//! The policy attributes found on one method or function ([`Annotations`]):
//! each read as it is found, a second of one kind refused (ATR-002), and
//! the policies they say gathered into a [`PolicySet`].

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::Ident;

use crate::attr::Written;
use crate::codes::{self, Errors};
use crate::policies::{PolicyAttribute, PolicyKind, PolicySet};

/// The policy attributes found on one method or function.
#[derive(Debug, Default)]
pub(crate) struct Annotations {
    /// Each attribute, with its tokens (for errors spanned over all of
    /// it), in the order found.
    pub(crate) written: Vec<(PolicyKind, TokenStream)>,
    /// What those that were read say.
    policies: PolicySet,
    /// Whether one of them could not be read (its errors are reported).
    failed: bool,
    /// `crate = "..."`, given on one of them.
    krate: Option<syn::Path>,
}

impl Annotations {
    /// Adds the attribute `kind` (`tokens`, for spans) as `written`. A
    /// second attribute of a kind on `owner` is ATR-002.
    pub(crate) fn add(
        &mut self,
        kind: PolicyKind,
        tokens: &dyn ToTokens,
        written: Written<'_>,
        owner: &Ident,
        errors: &mut Errors,
    ) {
        if self.written.iter().any(|(written, _)| *written == kind) {
            errors.spanned(
                tokens.to_token_stream(),
                format!(
                    "{}: #[{}] is given twice on `{owner}`; merge the keys into one attribute",
                    codes::MALFORMED,
                    kind.attribute()
                ),
            );
            return;
        }
        self.written.push((kind, tokens.to_token_stream()));
        match kind.read(written) {
            Ok(policy) => {
                if let Some(path) = policy.keys.krate() {
                    if self.krate.is_some() {
                        errors.push(syn::Error::new(
                            path.span,
                            format!(
                                "{}: `crate` is given twice on `{owner}`; give it on one attribute",
                                codes::MALFORMED
                            ),
                        ));
                    }
                    self.krate = Some(path.value.clone());
                }
                self.policies.insert(policy);
            }
            Err(error) => {
                errors.push(error);
                self.failed = true;
            }
        }
    }

    /// The policies the attributes that could be read say.
    pub(crate) fn policies(&self) -> &PolicySet {
        &self.policies
    }

    /// `crate = "..."`, if one of the attributes gives it.
    pub(crate) fn krate(&self) -> Option<&syn::Path> {
        self.krate.as_ref()
    }

    /// Whether every attribute could be read: an item with an attribute in
    /// error is not wrapped with half its policies.
    pub(crate) fn complete(&self) -> bool {
        !self.failed
    }

    /// Whether any policy attribute was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// The first attribute written whose policy may call the method again
    /// ([`PolicyKind::calls_again`]), with its tokens.
    pub(crate) fn calling_again(&self) -> Option<(PolicyKind, &TokenStream)> {
        self.written
            .iter()
            .find(|(kind, _)| kind.calls_again())
            .map(|(kind, tokens)| (*kind, tokens))
    }

    /// The tokens of the attribute of `kind`, if it was written: an error
    /// about the attribute covers all of it.
    pub(crate) fn tokens_of(&self, kind: PolicyKind) -> Option<&TokenStream> {
        self.written
            .iter()
            .find(|(written, _)| *written == kind)
            .map(|(_, tokens)| tokens)
    }

    /// What the type checker's messages about the method's result name
    /// (ATR-004): its attribute, or its policies if it has several.
    pub(crate) fn named(&self) -> Named {
        Named::of(self.written.iter().map(|(kind, _)| *kind))
    }

    /// What the type checker's messages about calling the method again
    /// name (ATR-007, ATR-012): its attribute that may call it again, or
    /// its policies if several may; `None` if none may.
    pub(crate) fn named_calling_again(&self) -> Option<Named> {
        self.calling_again()?;
        Some(Named::of(
            self.written
                .iter()
                .map(|(kind, _)| *kind)
                .filter(|kind| kind.calls_again()),
        ))
    }

    /// The attributes written, for messages: `#[retry]`, or `#[retry] and
    /// #[bulkhead]`, or `#[a], #[b] and #[c]`.
    pub(crate) fn names(&self) -> String {
        let names: Vec<String> = self
            .written
            .iter()
            .map(|(kind, _)| format!("#[{}]", kind.attribute()))
            .collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }

    /// `singular` for one attribute, `plural` for several.
    pub(crate) fn verb(&self, singular: &'static str, plural: &'static str) -> &'static str {
        if self.written.len() > 1 {
            plural
        } else {
            singular
        }
    }
}

/// What a message of the type checker about a method or function names:
/// one of its attributes, or its policies when several attributes are
/// concerned. The facade has a check of each (`rejecter_retry`,
/// `rejecter_policies`, ..), whose message names it; generated code calls
/// the one of [`Named::item`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Named {
    /// One attribute.
    Attribute(PolicyKind),
    /// Several.
    Policies,
}

impl Named {
    /// The one of `kinds`, or [`Named::Policies`] if there are several.
    fn of(mut kinds: impl Iterator<Item = PolicyKind>) -> Named {
        match (kinds.next(), kinds.next()) {
            (Some(kind), None) => Named::Attribute(kind),
            _ => Named::Policies,
        }
    }

    /// The facade's item `prefix` for it: `rejecter_` gives
    /// `rejecter_retry`, or `rejecter_policies` for several attributes.
    pub(crate) fn item(self, prefix: &str, span: Span) -> Ident {
        let named = match self {
            Named::Attribute(kind) => kind.attribute().as_str(),
            Named::Policies => "policies",
        };
        Ident::new(&format!("{prefix}{named}"), span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::{Attribute, parse_quote};

    fn annotations(attrs: Vec<Attribute>) -> (Annotations, Vec<String>) {
        let owner: Ident = parse_quote!(call);
        let mut errors = Errors::default();
        let mut found = Annotations::default();
        let krate = crate::krate::Krate::new(Some(&parse_quote!(::bulkhead)));
        for attr in &attrs {
            let kind = PolicyKind::of(&attr.meta, &krate).unwrap();
            found.add(kind, attr, Written::Attribute(attr), &owner, &mut errors);
        }
        let errors = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (found, errors)
    }

    #[test]
    fn every_attribute_is_read_and_a_repeated_one_is_atr_002() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(max_attempts = 2)]),
            parse_quote!(#[bulkhead]),
            parse_quote!(#[timeout(duration = "1s")]),
            parse_quote!(#[retry]),
        ]);
        assert_eq!(
            errors,
            ["ATR-002: #[retry] is given twice on `call`; merge the keys into one attribute"]
        );
        assert_eq!(found.names(), "#[retry], #[bulkhead] and #[timeout]");
        assert!(found.complete());
        let policies = found.policies();
        let kinds: Vec<PolicyKind> = policies.iter().map(|policy| policy.kind).collect();
        assert_eq!(
            kinds,
            [PolicyKind::Retry, PolicyKind::Timeout, PolicyKind::Bulkhead],
            "in the order of the composition"
        );
        let retry = policies.iter().next().unwrap();
        assert_eq!(retry.keys.settings().to_string(), ". max_attempts (2u32)");
        assert!(policies.bulkhead_alone().is_none());
        assert_eq!(
            found.calling_again().map(|(kind, _)| kind),
            Some(PolicyKind::Retry)
        );
    }

    #[test]
    fn the_type_checkers_messages_name_the_one_attribute_concerned_or_the_policies() {
        let named = |attrs: Vec<Attribute>| {
            let (found, errors) = annotations(attrs);
            assert_eq!(errors, Vec::<String>::new());
            (found.named(), found.named_calling_again())
        };
        assert_eq!(
            named(vec![parse_quote!(#[fallback(method = "c")])]),
            (
                Named::Attribute(PolicyKind::Fallback),
                Some(Named::Attribute(PolicyKind::Fallback))
            )
        );
        assert_eq!(
            named(vec![parse_quote!(#[bulkhead]), parse_quote!(#[hedge])]),
            (Named::Policies, Some(Named::Attribute(PolicyKind::Hedge)))
        );
        assert_eq!(
            named(vec![
                parse_quote!(#[retry]),
                parse_quote!(#[fallback(method = "c")])
            ]),
            (Named::Policies, Some(Named::Policies))
        );
        assert_eq!(
            named(vec![parse_quote!(#[timeout(duration = "1s")])]),
            (Named::Attribute(PolicyKind::Timeout), None)
        );
        let span = Span::call_site();
        assert_eq!(
            Named::Attribute(PolicyKind::CircuitBreaker).item("rejecter_", span),
            "rejecter_circuit_breaker"
        );
        assert_eq!(Named::Policies.item("held_by_", span), "held_by_policies");
    }

    #[test]
    fn one_attribute_in_error_leaves_the_item_unwrapped_and_every_error_is_reported() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(max_attempts = 0, jiter = 0.5)]),
            parse_quote!(#[circuit_breaker(sliding_window = "counted", ignore_on = [Busy])]),
            parse_quote!(#[rate_limiter(refresh_period = "0s")]),
        ]);
        assert!(!found.complete());
        assert_eq!(errors.len(), 5, "{errors:#?}");
        assert!(
            errors[0].starts_with("ATR-008: max_attempts"),
            "{}",
            errors[0]
        );
        assert_eq!(
            errors[1],
            "ATR-002: unknown key `jiter` in #[retry]; did you mean `jitter`?"
        );
        assert!(
            errors[2].starts_with("ATR-010: sliding_window"),
            "{}",
            errors[2]
        );
        assert!(
            errors[3].starts_with("ATR-009: ignore_on lists `Busy`"),
            "{}",
            errors[3]
        );
        assert!(errors[4].starts_with("ATR-008: refresh_period must be longer than zero"));
    }

    #[test]
    fn zero_waits_and_caps_and_a_jitter_of_one_are_atr_008() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(max_wait_interval = "0ms", jitter = 1)]),
            parse_quote!(#[rate_limiter(refresh_period = "0")]),
            parse_quote!(#[circuit_breaker(wait_in_open = "0", slow_call_threshold = "0s")]),
        ]);
        assert!(!found.complete());
        assert_eq!(
            errors,
            [
                "ATR-008: max_wait_interval must be longer than zero, got \"0ms\"",
                "ATR-008: jitter must be at least 0 and less than 1, got 1",
                "ATR-008: refresh_period must be longer than zero, got \"0\"",
                "ATR-008: wait_in_open must be longer than zero, got \"0\"",
                "ATR-008: slow_call_threshold must be longer than zero, got \"0s\"",
            ]
        );
    }
}
