//! Small helpers over syn's and proc-macro2's types that every stage of the
//! pipeline uses: looking through the invisible groups `macro_rules!` wraps
//! around fragments, the spans an error covers, and the bindings generated
//! code makes.

use proc_macro2::{Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, ExprLit, Ident, Lit, Pat, PatIdent, Type};

/// Looks through the invisible groups `macro_rules!` wraps around fragments.
pub(crate) fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungroup(&group.expr),
        _ => expr,
    }
}

/// The literal `expr` is, if it is one.
pub(crate) fn literal(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        _ => None,
    }
}

/// The source text of an expression, for error messages.
pub(crate) fn as_written(expr: &Expr) -> String {
    match literal(expr) {
        Some(Lit::Str(s)) => format!("{:?}", s.value()),
        _ => expr.to_token_stream().to_string(),
    }
}

/// Looks through parentheses and invisible groups around a type.
pub(crate) fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => strip(&group.elem),
        Type::Paren(paren) => strip(&paren.elem),
        _ => ty,
    }
}

/// Whether `ty` is `Self`.
pub(crate) fn is_self(ty: &Type) -> bool {
    matches!(strip(ty), Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

/// The spans of the first and last tokens of `tokens` (the call site if
/// there are none).
pub(crate) fn span_range(tokens: TokenStream) -> (Span, Span) {
    let mut tokens = tokens.into_iter();
    let first = tokens.next().map_or_else(Span::call_site, |t| t.span());
    let last = tokens.last().map_or(first, |t| t.span());
    (first, last)
}

/// [`span_range`], mixed-site: an expression of generated code made of a
/// token at each end covers all of `tokens` in the type checker's errors,
/// while its names stay the generated code's own.
pub(crate) fn mixed_ends(tokens: TokenStream) -> (Span, Span) {
    let (first, last) = span_range(tokens);
    (
        Span::mixed_site().located_at(first),
        Span::mixed_site().located_at(last),
    )
}

/// A binding of the generated code: `__bulkhead_<name>` (`__bulkhead` for
/// an empty name), mixed-site, so that it can neither clash with the user's
/// variables nor be read as a unit struct or const of theirs.
pub(crate) fn local(name: &str) -> Ident {
    let name = if name.is_empty() {
        "__bulkhead".to_owned()
    } else {
        format!("__bulkhead_{name}")
    };
    Ident::new(&name, Span::mixed_site())
}

/// The pattern that binds a parameter to `ident`, whatever pattern the user
/// wrote.
pub(crate) fn binding(ident: Ident) -> Pat {
    Pat::Ident(PatIdent {
        attrs: Vec::new(),
        by_ref: None,
        mutability: None,
        ident,
        subpat: None,
    })
}

pub(crate) fn is_punct(token: Option<&TokenTree>, c: char) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

/// Whether `token` is `c` joined to the next one, as the first `:` of `::`.
pub(crate) fn is_joint(token: Option<&TokenTree>, c: char) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == c && p.spacing() == Spacing::Joint)
}

/// The index of the `>` that closes an angle bracket opened before `from`,
/// skipping nested `<..>` and the `>` of `->`.
pub(crate) fn closing_angle(tokens: &[TokenTree], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(from) {
        let TokenTree::Punct(punct) = token else {
            continue;
        };
        match punct.as_char() {
            '<' => depth += 1,
            '>' => {
                let arrow = matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '-' && p.spacing() == Spacing::Joint);
                if arrow {
                    continue;
                }
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn locals_are_prefixed_and_mixed_site() {
        assert_eq!(local("permit"), "__bulkhead_permit");
        assert_eq!(local(""), "__bulkhead");
    }

    #[test]
    fn expressions_as_written_quote_strings_and_print_the_rest() {
        assert_eq!(as_written(&parse_quote!("25Oms")), "\"25Oms\"");
        assert_eq!(as_written(&parse_quote!(-1)), "- 1");
    }

    #[test]
    fn self_is_found_through_parentheses() {
        assert!(is_self(&parse_quote!((Self))));
        assert!(!is_self(&parse_quote!(Self::Item)));
    }
}
