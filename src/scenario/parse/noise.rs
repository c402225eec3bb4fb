//! `noise:` and `repeat:` as written, and their validation (docs/variability.md).

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use super::{Scalar, Src, choice, time, whole};
use crate::scenario::{NetworkSpec, ScenarioError};
use crate::sim::noise::{
    FaultPool, FaultSpec, NoiseSpec, OsPattern, OsSpec, RandomFaults, SkewDist, SkewSpec, SlowLink, SlowRank,
};

/// The most seeds `repeat:` may ask for per point.
pub const MAX_REPEAT: u64 = 100_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNoise {
    skew: Option<Spanned<RawSkew>>,
    os: Option<Spanned<RawOs>>,
    slow_ranks: Option<Spanned<Vec<Spanned<RawSlowRank>>>>,
    slow_links: Option<Spanned<Vec<Spanned<RawSlowLink>>>>,
    faults: Option<Spanned<Vec<Spanned<RawFault>>>>,
    levels: Option<Spanned<Vec<Spanned<Scalar>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    a: Option<Spanned<Scalar>>,
    b: Option<Spanned<Scalar>>,
    at: Option<Spanned<Scalar>>,
    random: Option<Spanned<Scalar>>,
    between: Option<Spanned<Vec<Spanned<Scalar>>>>,
    among: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkew {
    dist: Option<Spanned<String>>,
    scale: Option<Spanned<Scalar>>,
    fraction: Option<Spanned<Scalar>>,
    per_rank: Option<Spanned<Vec<Spanned<Scalar>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOs {
    interval: Option<Spanned<Scalar>>,
    duration: Option<Spanned<Scalar>>,
    pattern: Option<Spanned<String>>,
    phase: Option<Spanned<Scalar>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlowRank {
    rank: Option<Spanned<Scalar>>,
    factor: Option<Spanned<Scalar>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlowLink {
    a: Option<Spanned<Scalar>>,
    b: Option<Spanned<Scalar>>,
    factor: Option<Spanned<Scalar>>,
}

/// A plain number (`2`, `0.5`, `'1.5'`).
fn number(src: &Src, v: &Spanned<Scalar>, key: &str) -> Result<f64, ScenarioError> {
    let x = match &v.value {
        Scalar::UInt(n) => Some(*n as f64),
        Scalar::Int(n) => Some(*n as f64),
        Scalar::Float(x) => Some(*x),
        Scalar::Str(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    x.filter(|x| x.is_finite())
        .ok_or_else(|| src.err(&v.referenced, format!("{key}: expected a number, found {}", src.shown(v))))
}

/// A required key of an entry at `at`.
fn required<'v, T>(src: &Src, v: &'v Option<T>, at: &Location, key: &str, what: &str) -> Result<&'v T, ScenarioError> {
    v.as_ref().ok_or_else(|| src.err(at, format!("missing key '{key}'; {what}")))
}

/// `repeat:`: seeds per point, `1..=MAX_REPEAT`.
pub(super) fn repeat(src: &Src, v: &Spanned<Scalar>) -> Result<u32, ScenarioError> {
    whole(&v.value, 1, MAX_REPEAT).map(|n| n as u32).ok_or_else(|| {
        src.err(&v.referenced, format!("repeat: must be a whole number from 1 to {MAX_REPEAT}, not {}", src.shown(v)))
    })
}

/// `noise:` under network `net`.
pub(super) fn noise(src: &Src, raw: Spanned<RawNoise>, net: &NetworkSpec) -> Result<NoiseSpec, ScenarioError> {
    let r = raw.value;
    let mut spec = NoiseSpec {
        skew: r.skew.map(|s| skew(src, s)).transpose()?,
        os: r.os.map(|o| os(src, o)).transpose()?,
        slow_ranks: r.slow_ranks.map_or(Ok(Vec::new()), |l| slow_ranks(src, l))?,
        slow_links: r.slow_links.map_or(Ok(Vec::new()), |l| slow_links(src, l, net))?,
        faults: Vec::new(),
        random_faults: Vec::new(),
        levels: Vec::new(),
    };
    if let Some(list) = r.faults {
        (spec.faults, spec.random_faults) = faults(src, list, net)?;
    }
    if let Some(list) = r.levels {
        spec.levels = levels(src, list, &spec)?;
    }
    Ok(spec)
}

/// The most levels `noise.levels` may list.
pub const MAX_LEVELS: usize = 64;

/// `noise.levels`: numbers above 0, no repeats, at most [`MAX_LEVELS`]; at each the OS
/// detours must still end before the next.
fn levels(src: &Src, raw: Spanned<Vec<Spanned<Scalar>>>, spec: &NoiseSpec) -> Result<Vec<f64>, ScenarioError> {
    if raw.value.is_empty() || raw.value.len() > MAX_LEVELS {
        return Err(src.err(
            &raw.referenced,
            format!("noise.levels: list 1 to {MAX_LEVELS} noise levels (multipliers such as [0.5, 1, 2])"),
        ));
    }
    let mut out: Vec<f64> = Vec::new();
    for v in &raw.value {
        let x = number(src, v, "noise.levels")?;
        if x <= 0.0 {
            return Err(src.err(
                &v.referenced,
                format!("noise.levels: a level multiplies the noise; give one above 0, not {}", num(x)),
            ));
        }
        if out.contains(&x) {
            return Err(src.err(&v.referenced, format!("noise.levels: {} is listed twice", num(x))));
        }
        if let Some(o) = &spec.os
            && o.duration_s * x >= o.interval_s
        {
            return Err(src.err(
                &v.referenced,
                format!(
                    "noise.levels: at {} an OS detour ({:e} s) would not end before the next (interval {:e} s)",
                    num(x),
                    o.duration_s * x,
                    o.interval_s
                ),
            ));
        }
        out.push(x);
    }
    Ok(out)
}

/// The most links one `random` fault entry may fail.
pub const MAX_RANDOM_FAULTS: u64 = 1 << 20;

/// `noise.faults`: `{ a: NODE, b: NODE, at: TIME }` entries and `{ random: K, between:
/// [T0, T1], among: all | fabric }` entries (or `at: TIME` for one time), flow model
/// only (the ideal model has pairs of ranks, not physical links that could fail and be
/// routed around).
fn faults(
    src: &Src,
    raw: Spanned<Vec<Spanned<RawFault>>>,
    net: &NetworkSpec,
) -> Result<(Vec<FaultSpec>, Vec<RandomFaults>), ScenarioError> {
    if !net.is_flow() {
        return Err(src.err(
            &raw.referenced,
            "noise.faults: link faults need network.model: flow (the ideal model has no physical links to fail \
             or to route around); set network: { model: flow }, or leave faults out",
        ));
    }
    let what = "a fault is { a: NODE, b: NODE, at: TIME }, with a and b the names the report gives links (h0, \
                leaf0, r3), or { random: K, between: [TIME, TIME], among: all | fabric } for K links drawn by the seed";
    let (mut out, mut drawn) = (Vec::new(), Vec::new());
    for e in raw.value {
        if let Some(k) = &e.value.random {
            drawn.push(random_fault(src, &e, k, what)?);
            continue;
        }
        for (key, given) in [("between", e.value.between.is_some()), ("among", e.value.among.is_some())] {
            if given {
                return Err(src.err(
                    &e.referenced,
                    format!("noise.faults.{key}: goes with random: K (links drawn by the seed); {what}"),
                ));
            }
        }
        let mut ends = Vec::new();
        for (key, v) in [("a", &e.value.a), ("b", &e.value.b)] {
            let v = required(src, v, &e.referenced, key, what)?;
            let text = match &v.value {
                Scalar::Str(s) if !s.trim().is_empty() => s.trim().to_string(),
                other => {
                    return Err(src.err(&v.referenced, format!("noise.faults.{key}: {what}; found {}", other.shown())));
                }
            };
            ends.push(text);
        }
        if ends[0] == ends[1] {
            return Err(src.err(&e.referenced, "noise.faults: a and b are the same; a link joins two ends"));
        }
        let at = time(src, required(src, &e.value.at, &e.referenced, "at", what)?, "noise.faults.at")?;
        let b = ends.pop().unwrap_or_default();
        let a = ends.pop().unwrap_or_default();
        out.push(FaultSpec { a, b, at_s: at });
    }
    Ok((out, drawn))
}

/// A `noise.faults` entry with `random: K`.
fn random_fault(
    src: &Src,
    e: &Spanned<RawFault>,
    k: &Spanned<Scalar>,
    what: &str,
) -> Result<RandomFaults, ScenarioError> {
    for (key, given) in [("a", e.value.a.is_some()), ("b", e.value.b.is_some())] {
        if given {
            return Err(src.err(
                &e.referenced,
                format!("noise.faults.{key}: a random fault draws its links; leave a and b out, or random"),
            ));
        }
    }
    let count = whole(&k.value, 0, MAX_RANDOM_FAULTS).ok_or_else(|| {
        src.err(
            &k.referenced,
            format!(
                "noise.faults.random: how many links fail, a whole number from 0 to {MAX_RANDOM_FAULTS}, not {}",
                src.shown(k)
            ),
        )
    })? as usize;
    let (from, to) = match (&e.value.between, &e.value.at) {
        (Some(_), Some(at)) => {
            return Err(src
                .err(&at.referenced, "noise.faults: give a random fault at: TIME or between: [TIME, TIME], not both"));
        }
        (None, Some(at)) => {
            let t = time(src, at, "noise.faults.at")?;
            (t, t)
        }
        (None, None) => (0.0, 0.0),
        (Some(list), None) => {
            if list.value.len() != 2 {
                return Err(src.err(
                    &list.referenced,
                    format!("noise.faults.between: two times [FROM, TO], the window the failures fall in; {what}"),
                ));
            }
            let from = time(src, &list.value[0], "noise.faults.between")?;
            let to = time(src, &list.value[1], "noise.faults.between")?;
            if to < from {
                return Err(src.err(
                    &list.value[1].referenced,
                    format!("noise.faults.between: the window ends ({to:e} s) before it starts ({from:e} s)"),
                ));
            }
            (from, to)
        }
    };
    let pools = [("all", FaultPool::All), ("fabric", FaultPool::Fabric)];
    let among = choice(src, e.value.among.as_ref(), "noise.faults.among", &pools, &[])?;
    Ok(RandomFaults { count, from_s: from, to_s: to, among })
}

fn skew(src: &Src, raw: Spanned<RawSkew>) -> Result<SkewSpec, ScenarioError> {
    let (at, s) = (raw.referenced, raw.value);
    if let Some(list) = s.per_rank {
        for (k, other) in [("dist", s.dist.is_some()), ("scale", s.scale.is_some()), ("fraction", s.fraction.is_some())]
        {
            if other {
                return Err(src.err(
                    &list.referenced,
                    format!("noise.skew: per_rank gives every delay; leave {k} out, or per_rank"),
                ));
            }
        }
        let delays = list.value.iter().map(|v| time(src, v, "noise.skew.per_rank")).collect::<Result<Vec<_>, _>>()?;
        return Ok(SkewSpec::PerRank(delays));
    }
    let dists = [
        ("exponential", SkewDist::Exponential),
        ("uniform", SkewDist::Uniform),
        ("normal", SkewDist::Normal),
        ("fixed", SkewDist::Fixed),
    ];
    let dist = choice(src, s.dist.as_ref(), "noise.skew.dist", &dists, &[])?;
    let what = "noise.skew needs scale: TIME (with dist), or per_rank: [TIME, ...]";
    let scale = time(src, required(src, &s.scale, &at, "scale", what)?, "noise.skew.scale")?;
    let fraction = match &s.fraction {
        None => 1.0,
        Some(v) => {
            let f = number(src, v, "noise.skew.fraction")?;
            if !(0.0..=1.0).contains(&f) {
                return Err(src.err(
                    &v.referenced,
                    format!("noise.skew.fraction: the share of ranks that are late, from 0 to 1, not {}", num(f)),
                ));
            }
            f
        }
    };
    Ok(SkewSpec::Drawn { dist, scale_s: scale, fraction })
}

fn os(src: &Src, raw: Spanned<RawOs>) -> Result<OsSpec, ScenarioError> {
    let (at, o) = (raw.referenced, raw.value);
    let what = "noise.os needs interval: TIME and duration: TIME";
    let interval_at = required(src, &o.interval, &at, "interval", what)?;
    let interval = time(src, interval_at, "noise.os.interval")?;
    let duration_at = required(src, &o.duration, &at, "duration", what)?;
    let duration = time(src, duration_at, "noise.os.duration")?;
    if interval <= 0.0 {
        return Err(src.err(&interval_at.referenced, "noise.os.interval: must be above 0"));
    }
    if duration >= interval {
        return Err(src.err(
            &duration_at.referenced,
            format!("noise.os.duration: {duration:e} s is not below the interval {interval:e} s; a detour must end before the next"),
        ));
    }
    let patterns = [("periodic", OsPattern::Periodic), ("random", OsPattern::Random)];
    let pattern = choice(src, o.pattern.as_ref(), "noise.os.pattern", &patterns, &[])?;
    let phase = match &o.phase {
        None => None,
        Some(v) if pattern == OsPattern::Random => {
            return Err(src.err(&v.referenced, "noise.os.phase: applies only to pattern: periodic"));
        }
        Some(v) => {
            let p = time(src, v, "noise.os.phase")?;
            if p >= interval {
                return Err(src.err(&v.referenced, "noise.os.phase: must be below the interval"));
            }
            Some(p)
        }
    };
    Ok(OsSpec { interval_s: interval, duration_s: duration, pattern, phase_s: phase })
}

fn slow_ranks(src: &Src, raw: Spanned<Vec<Spanned<RawSlowRank>>>) -> Result<Vec<SlowRank>, ScenarioError> {
    let mut out: Vec<SlowRank> = Vec::new();
    for e in raw.value {
        let what = "a slow rank is { rank: N, factor: X } with X at least 1";
        let rank_at = required(src, &e.value.rank, &e.referenced, "rank", what)?;
        let rank = whole(&rank_at.value, 0, u32::MAX as u64 - 1).ok_or_else(|| {
            src.err(
                &rank_at.referenced,
                format!(
                    "noise.slow_ranks.rank: a rank number from 0 to {} (ranks are numbered in 32 bits), not {}",
                    u32::MAX - 1,
                    src.shown(rank_at)
                ),
            )
        })? as usize;
        if out.iter().any(|s| s.rank == rank) {
            return Err(src.err(&rank_at.referenced, format!("noise.slow_ranks: rank {rank} is listed twice")));
        }
        let factor_at = required(src, &e.value.factor, &e.referenced, "factor", what)?;
        let factor = number(src, factor_at, "noise.slow_ranks.factor")?;
        if factor < 1.0 {
            return Err(src.err(
                &factor_at.referenced,
                format!("noise.slow_ranks.factor: {} would make the rank faster; give 1 or more", num(factor)),
            ));
        }
        out.push(SlowRank { rank, factor });
    }
    Ok(out)
}

fn slow_links(
    src: &Src,
    raw: Spanned<Vec<Spanned<RawSlowLink>>>,
    net: &NetworkSpec,
) -> Result<Vec<SlowLink>, ScenarioError> {
    let mut out = Vec::new();
    if net.loggp().is_some() && !raw.value.is_empty() {
        return Err(src.err(
            &raw.referenced,
            "noise.slow_links: the LogGP model has no links to slow (L and G are the same for every pair); \
             allowed under network.model ideal and flow",
        ));
    }
    let flow = net.is_flow();
    let what = if flow {
        "under the flow model a slow link is { a: NODE, b: NODE, factor: X } by the names the report gives links (h0, leaf0, r3)"
    } else {
        "under the ideal model a slow link is a pair of ranks { a: N, b: M, factor: X }, rank numbers from 0 to \
         4294967294"
    };
    for e in raw.value {
        let mut ends = Vec::new();
        for (key, v) in [("a", &e.value.a), ("b", &e.value.b)] {
            let v = required(src, v, &e.referenced, key, what)?;
            let text = match &v.value {
                Scalar::Str(s) if flow && !s.trim().is_empty() => s.trim().to_string(),
                // A rank number, as slow_ranks takes (2^64 - 1 was taken, and ignored).
                Scalar::UInt(n) if !flow && *n < u64::from(u32::MAX) => n.to_string(),
                // As the number it is, so that `1` and `"01"` are one rank below.
                Scalar::Str(s)
                    if !flow
                        && let Ok(n) = s.trim().parse::<u32>()
                        && n < u32::MAX =>
                {
                    n.to_string()
                }
                other => {
                    return Err(
                        src.err(&v.referenced, format!("noise.slow_links.{key}: {what}; found {}", other.shown()))
                    );
                }
            };
            ends.push(text);
        }
        if ends[0] == ends[1] {
            return Err(src.err(&e.referenced, "noise.slow_links: a and b are the same; a link joins two ends"));
        }
        let factor_at = required(src, &e.value.factor, &e.referenced, "factor", what)?;
        let factor = number(src, factor_at, "noise.slow_links.factor")?;
        if !(factor > 0.0 && factor <= 1.0) {
            return Err(src.err(
                &factor_at.referenced,
                format!(
                    "noise.slow_links.factor: the share of the bandwidth left, above 0 and at most 1, not {}",
                    num(factor)
                ),
            ));
        }
        let b = ends.pop().unwrap_or_default();
        let a = ends.pop().unwrap_or_default();
        // A pair given twice (either way round) had both factors applied, without a word.
        if out.iter().any(|l: &SlowLink| (l.a == a && l.b == b) || (l.a == b && l.b == a)) {
            return Err(src.err(
                &e.referenced,
                format!(
                    "noise.slow_links: the link {}-{} is listed twice (a slow link slows both directions); give \
                     each pair once, with one factor",
                    crate::scenario::units::escape_controls(&a),
                    crate::scenario::units::escape_controls(&b)
                ),
            ));
        }
        out.push(SlowLink { a, b, factor });
    }
    Ok(out)
}

/// A number in a message: as written for everyday values (`3`, `0.5`), in scientific
/// notation far from 1 (`1e308`, not 309 digits).
fn num(x: f64) -> String {
    if x != 0.0 && !(1e-5..1e16).contains(&x.abs()) { format!("{x:?}") } else { format!("{x}") }
}
