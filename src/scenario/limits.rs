//! What a sweep must stay within for its figures to mean anything: byte counts that fit
//! 64 bits and times that are finite. Checked when the scenario is read and again after
//! the command line's `--ranks` and `--sizes`, so that no run ends in a wrapped byte count
//! or an `inf` time.
//!
//! Both bounds take the worst run the sweep could hold: `4 P^2` messages (P the largest
//! rank count; naive sends P (P - 1), the grids' fallbacks count up to 4 P (P - 1)) of
//! the largest size `S`.
//!
//! - **bytes**: `4 P^2 S` must be below 2^64, so that no rank's, link's or run's byte
//!   count can wrap;
//! - **time**: each of those messages crossing the slowest link and up to P hops of the
//!   largest latency (on a cluster with `inter.proxy`, the network's alpha with `128 P`
//!   proxy visits), then reduced at `cost_per_byte`, must add up to a finite number of
//!   seconds.

use super::Scenario;
use crate::topology::spec::TopologySpec;
use crate::topology::{Link, Proto, launch, step_latency};
use crate::units::{fmt_bandwidth, fmt_bytes, fmt_time};

/// How many messages of the largest size the bounds allow for on `ranks` ranks.
fn worst_messages(ranks: u64) -> u128 {
    // Saturating: at P = 2^63 the product is 2^128, which wrapped to 0 and let any size by.
    (4 * u128::from(ranks)).saturating_mul(u128::from(ranks))
}

/// The largest size, bytes, a sweep of up to `ranks` ranks may hold: `4 P^2 S` below
/// 2^64 ([`check_bytes`]).
pub fn largest_size(ranks: u64) -> u64 {
    let messages = worst_messages(ranks.max(1));
    u64::try_from(((1u128 << 64) - 1) / messages).unwrap_or(u64::MAX)
}

/// Refuse a sweep whose byte counts could wrap: the message says which size, on how
/// many ranks, and the largest size allowed there.
pub fn check_bytes(s: &Scenario) -> Result<(), String> {
    let p = s.ranks.iter().copied().max().unwrap_or(1) as u64;
    let size = s.sizes.iter().copied().max().unwrap_or(0);
    let messages = worst_messages(p);
    if messages.saturating_mul(u128::from(size)) < 1u128 << 64 {
        return Ok(());
    }
    let max = largest_size(p);
    Err(format!(
        "{size} bytes ({}) on {p} ranks could take byte counts past 2^64 (16 EiB): the largest size \
         times 4 P^2 must stay below 2^64; at P = {p} the sizes may be at most {max} bytes ({})",
        fmt_bytes(size),
        fmt_bytes(max)
    ))
}

/// Every link a message can be charged at: the topology's own, and on a cluster the
/// ones its list leaves out, a pair across CPU sockets (both alphas, the thinner
/// bandwidth), NVLS's switch operations (at `nvls_efficiency` of the bandwidth) and a
/// channel's copy unit (`channel_bandwidth`, and `inter.channel_bandwidth` across nodes).
fn machine_links(s: &Scenario) -> Vec<Link> {
    charged_links(s).into_iter().map(|(l, _)| l).collect()
}

/// [`machine_links`], each with whether it is a proxy link ([`proxy_links`]), whose
/// refusal names `inter.proxy`.
fn charged_links(s: &Scenario) -> Vec<(Link, bool)> {
    // The proxy's first: a refusal names it before a link it also makes infinite.
    let mut links: Vec<(Link, bool)> = proxy_links(s).into_iter().map(|l| (l, true)).collect();
    links.extend(own_links(s).into_iter().map(|l| (l, false)));
    links
}

/// [`machine_links`] but the proxy's.
fn own_links(s: &Scenario) -> Vec<Link> {
    let mut links = s.topology.links();
    if let TopologySpec::Cluster(c) = &s.topology {
        for p in Proto::ALL {
            let (alpha, bandwidth) = (c.intra.alpha_s.of(p), c.intra.bandwidth * c.efficiency.of(p));
            links.push(Link { alpha, bandwidth: bandwidth * c.intra.nvls_efficiency });
            if let Some(x) = &c.intra.socket_link {
                let across = (x.bandwidth * c.efficiency.of(p)).min(bandwidth);
                links.push(Link { alpha: alpha + x.alpha_s.of(p), bandwidth: across });
            }
            // A channel's copy unit passes every message of its stream at this rate,
            // whichever link the message crosses (docs/gpu-clusters.md, "Channel bandwidth").
            let channel = c.channel_bandwidth.of(p);
            if channel.is_finite() {
                links.push(Link { alpha: alpha.max(c.inter.alpha_s.of(p)), bandwidth: channel });
            }
            // And a message across nodes at the rate its channel hands it to the network.
            let across = c.inter.channel_bandwidth.of(p);
            if across.is_finite() {
                links.push(Link { alpha: c.inter.alpha_s.of(p), bandwidth: across });
            }
        }
    }
    links
}

/// Most network connections a sender can have, per peer: a send and a receive on each of
/// NCCL's 64 channels (`MAXCHANNELS`). A GPU's proxy wait is `inter.proxy` times its
/// connections across nodes, at most this many per other rank.
const CONNECTIONS_PER_PEER: f64 = 128.0;

/// On a cluster with `inter.proxy`, the network link as a sender with the most
/// connections across nodes sees it: `inter.alpha` plus `128 P` proxy visits (twice
/// that with Simple, whose messages also wait the receiver's proxy).
fn proxy_links(s: &Scenario) -> Vec<Link> {
    // One node has no network and no proxy to wait for.
    let TopologySpec::Cluster(c) = &s.topology else { return Vec::new() };
    if c.nodes < 2 {
        return Vec::new();
    }
    let p = s.ranks.iter().copied().max().unwrap_or(1) as f64;
    Proto::ALL
        .into_iter()
        .filter(|&proto| c.inter.proxy_s.of(proto) > 0.0)
        .map(|proto| Link {
            alpha: c.inter.alpha_s.of(proto)
                + if crate::sim::proxy::receiver_waits(proto) { 2.0 } else { 1.0 }
                    * CONNECTIONS_PER_PEER
                    * p
                    * c.inter.proxy_s.of(proto),
            bandwidth: c.inter.bandwidth * c.inter_efficiency().of(proto),
        })
        .collect()
}

/// What a run pays besides its messages, seconds: the largest `launch` with the step
/// latency of up to `2 P` steps (NCCL's ring pays `2 (P - P / G)`, its tree `2 (G - 1)`).
fn start_time(s: &Scenario) -> f64 {
    let p = s.ranks.iter().copied().max().unwrap_or(1) as f64;
    Proto::ALL
        .into_iter()
        .map(|proto| launch(&s.topology, proto) + 2.0 * p * step_latency(&s.topology, proto))
        .fold(0.0, f64::max)
}

/// The host's floor on a call at the largest rank count (`host:`), seconds.
fn host_floor(s: &Scenario) -> f64 {
    let p = s.ranks.iter().copied().max().unwrap_or(1);
    s.host.map_or(0.0, |h| h.floor(p))
}

/// The worst run's messages on the slowest link, seconds.
fn messages_time(s: &Scenario) -> f64 {
    let p = s.ranks.iter().copied().max().unwrap_or(1) as f64;
    let size = s.sizes.iter().copied().max().unwrap_or(0) as f64 + s.network.envelope as f64;
    let messages = worst_messages(p as u64) as f64;
    let one = |l: Link| p * l.alpha + size / l.bandwidth + size * s.cost_per_byte;
    machine_links(s).into_iter().map(|l| one(l) * messages).fold(0.0, f64::max)
}

/// The longest the sweep's worst run could take on this machine without noise, seconds
/// (infinite when [`check_times`] refuses the machine).
fn worst_time(s: &Scenario) -> f64 {
    (messages_time(s) + start_time(s)).max(host_floor(s))
}

/// A factor for people: `2`, `1.5`, `1e308`.
fn factor(x: f64) -> String {
    if !x.is_finite() {
        // A slow link of factor 5e-324 divides by it: past the largest number, said so.
        return format!("more than {:.3e}", f64::MAX);
    }
    if (1e-3..1e6).contains(&x) { format!("{}", (x * 1000.0).round() / 1000.0) } else { format!("{x:.3e}") }
}

/// How far past its scale a skew draw can reach: `-ln u` for the smallest `u` a 53-bit
/// draw gives is 36.7 (exponential); the folded normal's `sqrt(2 * 36.7)` is below it.
const LONGEST_DRAW: f64 = 37.0;

/// Refuse noise under which a run's time, or the statistics over the seeds (the mean, the
/// spread, the time lost per second of skew, which square and sum the times), would not
/// be finite: a skew, slowdown or detour so large that the worst run times itself
/// overflows.
pub fn check_noise(s: &Scenario) -> Result<(), String> {
    use crate::sim::noise::{SkewDist, SkewSpec};
    let Some(n) = &s.noise else { return check_repeat(s) };
    let level = n.levels.iter().copied().fold(1.0, f64::max);
    let skew = match &n.skew {
        None => 0.0,
        Some(SkewSpec::PerRank(v)) => v.iter().copied().fold(0.0, f64::max),
        Some(SkewSpec::Drawn { dist, scale_s, .. }) => match dist {
            SkewDist::Fixed | SkewDist::Uniform => *scale_s,
            SkewDist::Normal | SkewDist::Exponential => scale_s * LONGEST_DRAW,
        },
    } * level;
    let slow = n.slow_ranks.iter().map(|r| r.factor).fold(1.0, f64::max)
        / n.slow_links.iter().map(|l| l.factor).fold(1.0, f64::min);
    // A detour of d every i stretches the busy time by i / (i - d) at most, and delays
    // each thing a run waits for (a message's start, a reduction; two a message at most)
    // by d at most on top: a run shorter than the interval still meets a whole detour.
    let (stretch, delays) = n.os.as_ref().map_or((1.0, 0.0), |o| {
        let d = o.duration_s * level;
        let p = s.ranks.iter().copied().max().unwrap_or(1) as u64;
        let stretch = if d < o.interval_s { o.interval_s / (o.interval_s - d) } else { f64::INFINITY };
        (stretch, d * (2.0 * worst_messages(p) as f64 + 1.0))
    });
    let worst = worst_time(s) * slow * stretch + delays + skew;
    let seeds = f64::from(s.repeat.unwrap_or(1).max(1)) * (n.levels.len() + 1) as f64;
    // The statistics sum squares of times over the seeds.
    let limit = (f64::MAX / seeds).sqrt();
    if worst < limit {
        return Ok(());
    }
    // A skew of 1e308 s times the longest draw is past f64: said as past the largest
    // time, never as `inf`.
    let time = |t: f64| if t.is_finite() { fmt_time(t) } else { format!("more than {}", fmt_time(f64::MAX)) };
    Err(format!(
        "with this noise the sweep's worst run could take {} (skew {}, slowdown x{}, detours x{} and {} \
         of whole detours), and \
         the statistics over {} seed(s) square and sum such times: keep the worst run under {}: lower the \
         skew, the slowdowns, the detours' share of their interval or the noise levels",
        time(worst),
        time(skew),
        factor(slow),
        factor(stretch),
        time(delays),
        seeds,
        fmt_time(limit),
    ))
}

/// `repeat:` without noise: the statistics over the seeds sum (and square) the times of
/// the worst run, which must stay finite.
fn check_repeat(s: &Scenario) -> Result<(), String> {
    let Some(seeds) = s.repeat.filter(|&r| r > 1) else { return Ok(()) };
    let worst = worst_time(s);
    let limit = (f64::MAX / f64::from(seeds)).sqrt();
    if worst < limit {
        return Ok(());
    }
    Err(format!(
        "the sweep's worst run could take {}, and the statistics over repeat: {seeds} seeds square and sum \
         such times: keep the worst run under {}: lower the latencies, the launch or the sizes",
        fmt_time(worst),
        fmt_time(limit),
    ))
}

/// Refuse a host whose floor on a call (`host.issue` times the GPUs of a thread) is not a
/// finite number of seconds, or leaves the worst run's time not one.
pub fn check_host(s: &Scenario) -> Result<(), String> {
    let (Some(h), floor) = (s.host, host_floor(s)) else { return Ok(()) };
    if floor.is_finite() {
        return Ok(());
    }
    let p = s.ranks.iter().copied().max().unwrap_or(1);
    Err(format!(
        "issue {} x {} GPUs per thread (at P = {p}) is not a finite number of seconds: the floor on a call, \
         issue x min(gpus_per_thread, P), must stay under {}",
        fmt_time(h.issue_s),
        h.gpus_per_thread.min(p),
        fmt_time(f64::MAX),
    ))
}

/// Refuse a machine on which the sweep's messages would take a time that is not a finite
/// number: a bandwidth so small (or a latency or `cost_per_byte` so large) that `S / B`
/// overflows, or a `launch` and step latency that push the worst run's time past the
/// largest number.
pub fn check_times(s: &Scenario) -> Result<(), String> {
    let p = s.ranks.iter().copied().max().unwrap_or(1) as f64;
    let size = s.sizes.iter().copied().max().unwrap_or(0) as f64 + s.network.envelope as f64;
    let messages = worst_messages(p as u64) as f64;
    // One pass over every link: a proxy link's refusal names `inter.proxy` (they were
    // checked twice, the second time with the message of any link).
    for (link, by_proxy) in charged_links(s) {
        let one = p * link.alpha + size / link.bandwidth + size * s.cost_per_byte;
        if (one * messages).is_finite() {
            continue;
        }
        if by_proxy && let TopologySpec::Cluster(c) = &s.topology {
            let proxy = Proto::ALL.into_iter().map(|proto| c.inter.proxy_s.of(proto)).fold(0.0, f64::max);
            return Err(format!(
                "inter.proxy {} per connection, paid on a sender's connections across nodes (and with Simple \
                     on the receiver's; up to \
                     {CONNECTIONS_PER_PEER} per other rank, {} on {p} ranks), gives a message across nodes a \
                     time past {}: the sweep's worst run ({messages} messages of the largest size on {p} ranks) \
                     must take under {} s: lower inter.proxy",
                fmt_time(proxy),
                CONNECTIONS_PER_PEER * p,
                fmt_time(f64::MAX),
                fmt_time(f64::MAX).trim_end_matches(" s"),
            ));
        }
        return Err(format!(
            "a message of {} over a link of alpha={}, B={} (with C={}/B) takes {}: times on this \
                 machine would not be finite numbers; the sweep's worst run ({} messages of the largest \
                 size on {} ranks) must take under {} s: raise the bandwidth, or lower the latency, \
                 cost_per_byte or the sizes",
            fmt_bytes(size as u64),
            fmt_time(link.alpha),
            fmt_bandwidth(link.bandwidth),
            fmt_time(s.cost_per_byte),
            if one.is_finite() { fmt_time(one) } else { format!("longer than {}", fmt_time(f64::MAX)) },
            messages,
            p,
            fmt_time(f64::MAX).trim_end_matches(" s"),
        ));
    }
    let (start, links) = (start_time(s), messages_time(s));
    if !(links + start).is_finite() {
        return Err(format!(
            "the launch and step latency (up to {} per call, with 2 P = {} steps on {} ranks) and the worst \
             run's messages ({}) add up to more than {}: lower launch or step_latency",
            if start.is_finite() { fmt_time(start) } else { format!("more than {}", fmt_time(f64::MAX)) },
            2.0 * p,
            p,
            fmt_time(links),
            fmt_time(f64::MAX),
        ));
    }
    Ok(())
}
