//! "Did you mean": the edit distance every suggestion in the toolkit uses (keys, lint ids,
//! levels, kernel names), and the few close names a message lists.

/// The candidate closest to `given` by edit distance, when close enough to be a typo.
///
/// Shared by every "did you mean" in the toolkit (keys, lint ids, levels, kernel names). Ties
/// go to the candidate listed first.
pub fn did_you_mean<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    closest_names(given, candidates, 1).into_iter().next()
}

/// At most `limit` candidates close enough to `given` to be a typo of it, closest first (ties in
/// the order given). What a "did you mean" lists, so a list of 600 names is never printed whole.
pub fn closest_names<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<&'a str> {
    let allowed_distance = (given.chars().count() / 3).max(2);
    let mut close: Vec<(usize, usize, &'a str)> = candidates
        .into_iter()
        .enumerate()
        .map(|(order, candidate)| (edit_distance(given, candidate), order, candidate))
        .filter(|(distance, _, _)| *distance <= allowed_distance)
        .collect();
    close.sort_unstable();
    close.dedup_by_key(|(_, _, candidate)| *candidate);
    close
        .into_iter()
        .take(limit)
        .map(|(_, _, candidate)| candidate)
        .collect()
}

/// Edit distance in characters: insertions, deletions, substitutions and transpositions of two
/// neighbours each count 1 (optimal string alignment), so `f23` is one edit from `f32`.
pub(crate) fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    // Three rows: two back (for transpositions), one back, current.
    let mut before_previous = vec![0; width];
    let mut previous: Vec<usize> = (0..width).collect();
    for left_index in 1..=left.len() {
        let mut current = vec![left_index; width];
        for right_index in 1..width {
            let same = left[left_index - 1] == right[right_index - 1];
            let mut best = (previous[right_index - 1] + usize::from(!same))
                .min(previous[right_index] + 1)
                .min(current[right_index - 1] + 1);
            if left_index > 1
                && right_index > 1
                && left[left_index - 1] == right[right_index - 2]
                && left[left_index - 2] == right[right_index - 1]
            {
                best = best.min(before_previous[right_index - 2] + 1);
            }
            current[right_index] = best;
        }
        before_previous = std::mem::replace(&mut previous, current);
    }
    previous[right.len()]
}
