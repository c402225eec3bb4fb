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
//!   largest latency, then reduced at `cost_per_byte`, must add up to a finite number of
//!   seconds.

use super::Scenario;
use crate::units::{fmt_bandwidth, fmt_bytes, fmt_time};

/// How many messages of the largest size the bounds allow for on `ranks` ranks.
fn worst_messages(ranks: u64) -> u128 {
    4 * u128::from(ranks) * u128::from(ranks)
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
    let max = (((1u128 << 64) - 1) / messages) as u64;
    Err(format!(
        "{size} bytes ({}) on {p} ranks could take byte counts past 2^64 (16 EiB): the largest size \
         times 4 P^2 must stay below 2^64; at P = {p} the sizes may be at most {max} bytes ({})",
        fmt_bytes(size),
        fmt_bytes(max)
    ))
}

/// Refuse a machine on which the sweep's messages would take a time that is not a finite
/// number: a bandwidth so small (or a latency or `cost_per_byte` so large) that `S / B`
/// overflows.
pub fn check_times(s: &Scenario) -> Result<(), String> {
    let p = s.ranks.iter().copied().max().unwrap_or(1) as f64;
    let size = s.sizes.iter().copied().max().unwrap_or(0) as f64 + s.network.envelope as f64;
    let messages = worst_messages(p as u64) as f64;
    for link in s.topology.links() {
        let one = p * link.alpha + size / link.bandwidth + size * s.cost_per_byte;
        if !(one * messages).is_finite() {
            return Err(format!(
                "a message of {} over a link of alpha={}, B={} (with C={}/B) takes {}: times on this \
                 machine would not be finite numbers; the sweep's worst run ({} messages of the largest \
                 size on {} ranks) must take under {} s: raise the bandwidth, or lower the latency, \
                 cost_per_byte or the sizes",
                fmt_bytes(size as u64),
                fmt_time(link.alpha),
                fmt_bandwidth(link.bandwidth),
                fmt_time(s.cost_per_byte),
                fmt_time(one),
                messages,
                p,
                fmt_time(f64::MAX).trim_end_matches(" s"),
            ));
        }
    }
    Ok(())
}
