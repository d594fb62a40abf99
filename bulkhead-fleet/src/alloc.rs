//! The allocation of a budget among claimants, max-min fair on demand, then
//! the spare evenly up to each one's ceiling: the same steps as the Lua
//! function in `lua/allocate.lua`, which shares the fleet's budget among
//! processes. Here it shares one process's slots among its bulkheads.

/// One claimant: its id (ties are broken by it), what it would use now,
/// and the most it could use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claim<'a> {
    pub(crate) id: &'a str,
    pub(crate) demand: u32,
    pub(crate) ceiling: u32,
}

/// The targets of `claims` (in the order given) for `budget`:
///
/// 1. water-filling on demand: the smallest demands are met first, and no
///    claimant gets more than an equal part of what is left;
/// 2. slots left over by rounding go one each, in id order, to claimants
///    still below their demand;
/// 3. what is left goes evenly to the claimants below their ceiling, the
///    remainder one each in id order, until it is gone or all are at their
///    ceiling.
///
/// Targets sum to at most `budget`, and to `budget` when the ceilings allow
/// it; each is at most its ceiling. Demands above a ceiling count as the
/// ceiling.
pub(crate) fn allocate(budget: u32, claims: &[Claim<'_>]) -> Vec<u32> {
    let n = claims.len();
    let demand = |i: usize| claims[i].demand.min(claims[i].ceiling);
    let mut targets = vec![0u32; n];
    let mut by_demand: Vec<usize> = (0..n).collect();
    by_demand.sort_by(|&a, &b| (demand(a), claims[a].id).cmp(&(demand(b), claims[b].id)));
    let mut by_id: Vec<usize> = (0..n).collect();
    by_id.sort_by(|&a, &b| claims[a].id.cmp(claims[b].id));
    let mut remaining = budget;
    for (k, &i) in by_demand.iter().enumerate() {
        let left = u32::try_from(n - k).unwrap_or(u32::MAX);
        targets[i] = demand(i).min(remaining / left);
        remaining -= targets[i];
    }
    for &i in &by_id {
        if remaining > 0 && targets[i] < demand(i) {
            targets[i] += 1;
            remaining -= 1;
        }
    }
    while remaining > 0 {
        let open: Vec<usize> = by_id
            .iter()
            .copied()
            .filter(|&i| targets[i] < claims[i].ceiling)
            .collect();
        if open.is_empty() {
            break;
        }
        let count = u32::try_from(open.len()).unwrap_or(u32::MAX);
        let (each, extra) = (remaining / count, remaining % count);
        for (k, &i) in open.iter().enumerate() {
            let bonus = u32::from(u32::try_from(k).unwrap_or(u32::MAX) < extra);
            let give = (claims[i].ceiling - targets[i]).min(each + bonus);
            targets[i] += give;
            remaining -= give;
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Claim, allocate};

    fn claims(demands: &[(u32, u32)]) -> Vec<(String, u32, u32)> {
        demands
            .iter()
            .enumerate()
            .map(|(i, &(d, c))| (format!("p{i}"), d, c))
            .collect()
    }

    fn run(budget: u32, demands: &[(u32, u32)]) -> Vec<u32> {
        let owned = claims(demands);
        let claims: Vec<Claim<'_>> = owned
            .iter()
            .map(|(id, demand, ceiling)| Claim {
                id,
                demand: *demand,
                ceiling: *ceiling,
            })
            .collect();
        allocate(budget, &claims)
    }

    #[test]
    fn the_notes_examples_are_max_min_fair() {
        assert_eq!(run(10, &[(2, 99), (4, 99), (6, 99), (8, 99)]), [2, 2, 3, 3]);
        assert_eq!(run(10, &[(2, 99), (4, 99), (6, 99)]), [2, 4, 4]);
        assert_eq!(run(10, &[(2, 99), (4, 99), (6, 99), (1, 99)]), [2, 3, 4, 1]);
    }

    #[test]
    fn the_spare_goes_evenly_up_to_each_ceiling() {
        assert_eq!(run(10, &[(1, 99), (1, 99)]), [5, 5]);
        assert_eq!(run(10, &[(1, 2), (1, 99)]), [2, 8]);
        assert_eq!(run(10, &[(1, 2), (1, 3)]), [2, 3]);
        assert_eq!(run(0, &[(5, 9), (5, 9)]), [0, 0]);
    }

    proptest! {
        #[test]
        fn targets_fit_the_budget_and_the_ceilings(
            budget in 0u32..200,
            demands in proptest::collection::vec((0u32..60, 0u32..60), 0..12),
        ) {
            let targets = run(budget, &demands);
            let sum: u32 = targets.iter().sum();
            let ceilings: u32 = demands.iter().map(|&(_, c)| c).sum();
            prop_assert_eq!(sum, budget.min(ceilings));
            for (t, &(_, c)) in targets.iter().zip(&demands) {
                prop_assert!(*t <= c);
            }
        }

        #[test]
        fn a_claimant_below_its_demand_gets_at_least_every_other_target_or_its_own_demand(
            budget in 0u32..200,
            demands in proptest::collection::vec((0u32..60, 0u32..60), 1..12),
        ) {
            // Max-min fairness: nobody short of its demand gets less than
            // someone else, except by one slot of rounding.
            let targets = run(budget, &demands);
            for (i, (&t, &(d, c))) in targets.iter().zip(&demands).enumerate() {
                if t < d.min(c) {
                    for (j, &other) in targets.iter().enumerate() {
                        prop_assert!(other <= t + 1, "{i}: {t} < demand, but {j} has {other}");
                    }
                }
            }
        }
    }
}
