//! Did-you-mean hints for names that name nothing: a policy, a section, a
//! key.

/// `; did you mean "x"?` for the known name closest to `given`, or the list
/// of known names when none is close.
pub(crate) fn suggest(given: &str, known: &[&str]) -> String {
    let closest = known
        .iter()
        .map(|k| (distance(given, k), *k))
        .min_by_key(|(d, _)| *d);
    match closest {
        Some((d, k)) if d <= 2.max(given.len() / 3) => format!("; did you mean {k:?}?"),
        _ => format!("; expected one of {}", known.join(", ")),
    }
}

/// Levenshtein distance, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
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
