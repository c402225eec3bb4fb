//! Spreading a sweep over a batch system: `run --shard I/N` runs every N-th point,
//! `merge` joins the shards' JSON reports back into one report in sweep order.
//!
//! Shard `I` of `N` holds the points whose index in sweep order ([`crate::runner::points`])
//! is `I` modulo `N` (0-based), so every shard gets a similar mix of small and large
//! points. Its report records `"shard": {"index": I, "count": N}`.

use crate::report::Report;
use crate::runner;

pub use crate::results::Shard;

/// Why shards cannot be merged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

/// Join shard reports (`(name, JSON text)`, the name for messages) into one report in
/// sweep order.
///
/// Every input must be a shard report (`--shard I/N --format json`) of the same
/// scenario (the `scenario` objects equal) and the same N; each index `0..N` must come
/// exactly once, and each shard must hold exactly its points.
pub fn merge(inputs: &[(String, String)]) -> Result<Report, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError("nothing to merge: give the shards' JSON reports".to_string()));
    }
    let mut parsed: Vec<(&str, serde_json::Value, Report)> = Vec::new();
    for (name, text) in inputs {
        crate::files::check_json(text)
            .map_err(|e| MergeError(format!("{name}: not JSON ({e}); give reports written by `run --format json`")))?;
        let raw: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| MergeError(format!("{name}: not JSON ({e}); give reports written by `run --format json`")))?;
        let scenario = raw.get("scenario").cloned().unwrap_or(serde_json::Value::Null);
        let report: Report = serde_json::from_value(raw).map_err(|e| {
            MergeError(format!(
                "{name}: not an allreduce-sim JSON report ({e}); give reports written by `run --format json`"
            ))
        })?;
        parsed.push((name, scenario, report));
    }

    let (first_name, first_scenario, first) = &parsed[0];
    let count = match first.shard {
        Some(s) => s.count,
        None => return Err(not_a_shard(first_name)),
    };
    // The `shard` fields come from files: check them before they size or index anything.
    for (name, _, report) in &parsed {
        let Some(shard) = report.shard else { return Err(not_a_shard(name)) };
        if shard.count == 0 || shard.index >= shard.count {
            return Err(MergeError(format!(
                "{name}: its \"shard\" says index {} of count {}, which no run writes \
                 (the count is at least 1 and the index below it); was it edited?",
                shard.index, shard.count
            )));
        }
        // Before counting what is missing: a shard of another count is no missing one.
        if shard.count != count {
            return Err(MergeError(format!(
                "{name} is shard {shard} but {first_name} is shard {}: the shard counts differ; merge the shards \
                 of one run",
                first.shard.map_or_else(String::new, |s| s.to_string())
            )));
        }
    }
    // More shards than inputs: some are missing. Say which without a table of `count`
    // slots (a count of 10^15 must not allocate).
    if count > inputs.len() {
        let given: std::collections::BTreeSet<usize> =
            parsed.iter().filter_map(|(_, _, r)| r.shard).filter(|s| s.count == count).map(|s| s.index).collect();
        let absent = count - given.len();
        let mut listed: Vec<String> =
            (0..count).filter(|i| !given.contains(i)).take(8).map(|i| format!("{i}/{count}")).collect();
        if absent > listed.len() {
            listed.push(format!("and {} more", absent - listed.len()));
        }
        return Err(MergeError(format!("shard(s) {} missing; give all {count} shards", listed.join(", "))));
    }
    let mut slots: Vec<Option<usize>> = vec![None; count];
    for (k, (name, scenario, report)) in parsed.iter().enumerate() {
        let Some(shard) = report.shard else { return Err(not_a_shard(name)) };
        if scenario != first_scenario {
            return Err(MergeError(format!(
                "{name} and {first_name} come from different scenarios (their `scenario` objects differ); \
                 merge only shards of one run"
            )));
        }
        if shard.count != count {
            return Err(MergeError(format!(
                "{name} is shard {shard} but {first_name} is shard {}: the shard counts differ",
                first.shard.map_or_else(String::new, |s| s.to_string())
            )));
        }
        if let Some(j) = slots[shard.index] {
            return Err(MergeError(format!("{name} and {} are both shard {shard}", parsed[j].0)));
        }
        slots[shard.index] = Some(k);
    }
    let missing: Vec<String> =
        slots.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| format!("{i}/{count}")).collect();
    if !missing.is_empty() {
        return Err(MergeError(format!("shard(s) {} missing; give all {count} shards", missing.join(", "))));
    }

    let scenario = first.scenario.clone();
    let points = runner::points(&scenario);
    // The label a run writes for each entry (with its parameters and protocol).
    let labels: Vec<String> = scenario.algorithms.iter().map(runner::row_label).collect();
    let mut results = Vec::with_capacity(points.len());
    // Each result's shard file and index there, to name one in a refusal after ranking.
    let mut from = Vec::with_capacity(points.len());
    let mut next = vec![0usize; count];
    for (i, pt) in points.iter().enumerate() {
        let s = i % count;
        let (name, _, report) = &parsed[slots[s].unwrap_or(0)];
        let Some(r) = report.results.get(next[s]) else {
            return Err(MergeError(format!(
                "{name} has {} result(s); shard {s}/{count} needs more",
                report.results.len()
            )));
        };
        // A barrier's point carries the sweep's first size but its result reports the
        // bytes it moved: none (crate::runner::run_point_observed).
        let spec = scenario.algorithms.get(pt.algo);
        let collective = spec.map_or(r.collective, |a| a.collective);
        let bytes = if collective.has_data() { pt.bytes } else { 0 };
        let label = labels.get(pt.algo).map_or(r.algorithm.as_str(), String::as_str);
        if r.ranks != pt.ranks || r.bytes != bytes || r.collective != collective || r.algorithm != label {
            return Err(MergeError(format!(
                "{name}: result {} is {} {:?} at P = {}, S = {} B where the sweep has {collective} {label:?} at \
                 P = {}, S = {bytes} B; was it edited or run with other flags?",
                next[s], r.collective, r.algorithm, r.ranks, r.bytes, pt.ranks
            )));
        }
        if let Some((field, t)) = negative_time(r) {
            return Err(MergeError(format!(
                "{name}: result {} has {field} {t:?}, and no time of a run is negative; was it edited?",
                next[s]
            )));
        }
        results.push(r.clone());
        from.push((name, next[s]));
        next[s] += 1;
    }
    for (s, &k) in slots.iter().enumerate() {
        let (name, _, report) = &parsed[k.unwrap_or(0)];
        if report.results.len() != next[s] {
            return Err(MergeError(format!(
                "{name} has {} result(s) but shard {s}/{count} of this sweep has {}",
                report.results.len(),
                next[s]
            )));
        }
    }
    // Each shard ranked its own points: rank them over the whole sweep.
    crate::select::rank(&mut results);
    // Times each finite but far apart (an edited `1e308` s beside a run's microseconds)
    // give a margin or a `vs_best` past the largest f64, which the reports would print as
    // `inf`: refused as a negative time is, naming the point's longest time.
    let infinite = |r: &crate::results::PointResult| {
        r.margin.is_some_and(|m| !m.is_finite())
            || r.selection.as_ref().is_some_and(|s| s.vs_best.is_some_and(|v| !v.is_finite()))
    };
    if let Some(bad) = results.iter().find(|r| infinite(r)) {
        let point = |r: &crate::results::PointResult| (r.collective, r.ranks, r.bytes);
        let (i, r) = results
            .iter()
            .enumerate()
            .filter(|(_, r)| point(r) == point(bad) && r.not_applicable.is_none())
            .max_by(|a, b| a.1.time_s.total_cmp(&b.1.time_s))
            .unwrap_or((0, bad));
        let (name, k) = from[i];
        return Err(MergeError(format!(
            "{name}: result {k} has time_s {:?}, so far from the other times of its point ({} at P = {}, S = {} B) \
             that their ratio is past the largest number; no run gives such times: was it edited?",
            r.time_s, r.collective, r.ranks, r.bytes
        )));
    }
    Ok(Report { scenario, results, shard: None, interrupted: false })
}

/// A time of `r` below zero, which no run writes (an `n/a` row's null reads as NaN and
/// passes), with its field's name.
fn negative_time(r: &crate::results::PointResult) -> Option<(&'static str, f64)> {
    let bounds = r.closed_form_bounds_s.unwrap_or_default();
    [
        ("time_s", Some(r.time_s)),
        ("launch_s", r.launch_s),
        ("closed_form_s", r.closed_form_s),
        ("lower_bound_s", Some(r.lower_bound_s)),
        ("closed_form_bounds_s", Some(bounds[0])),
        ("closed_form_bounds_s", Some(bounds[1])),
    ]
    .into_iter()
    .find_map(|(field, t)| t.filter(|&t| t < 0.0).map(|t| (field, t)))
}

fn not_a_shard(name: &str) -> MergeError {
    MergeError(format!(
        "{name} is not a shard report (no \"shard\" field); write shards with `run --shard I/N --format json`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n() {
        assert_eq!("1/3".parse::<Shard>(), Ok(Shard { index: 1, count: 3 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        assert!("3/3".parse::<Shard>().unwrap_err().contains("not below the count 3"));
        assert!("0/0".parse::<Shard>().unwrap_err().contains("at least 1"));
        assert!("x/2".parse::<Shard>().unwrap_err().contains("not a whole number"));
        assert!("2".parse::<Shard>().unwrap_err().contains("not I/N"));
        assert!(Shard { index: 1, count: 3 }.contains(4));
    }
}
