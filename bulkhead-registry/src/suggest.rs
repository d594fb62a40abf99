//! Did-you-mean hints for names that name nothing: a policy, a section, a
//! key. Which name was meant is `bulkhead_core`'s
//! [`did_you_mean`](bulkhead_core::keys::did_you_mean), as for the
//! attributes' messages.

use bulkhead_core::keys::did_you_mean;

/// `; did you mean "x"?` for the known name closest to `given`, or the list
/// of known names when none is close.
pub(crate) fn suggest(given: &str, known: &[&str]) -> String {
    match did_you_mean(given, known.iter().copied()) {
        Some(closest) => format!("; did you mean {closest:?}?"),
        None => format!("; expected one of {}", known.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_name_the_closest_key_or_list_them_all() {
        let keys = ["max_concurrent", "max_wait", "enabled"];
        assert_eq!(
            suggest("max_concurent", &keys),
            "; did you mean \"max_concurrent\"?"
        );
        assert_eq!(
            suggest("colour", &keys),
            "; expected one of max_concurrent, max_wait, enabled"
        );
    }
}
