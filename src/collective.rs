//! The collectives: what each one leaves on each rank, how nccl-tests counts its bus
//! bandwidth, and its name in scenarios and reports.
//!
//! An algorithm implements one collective ([`crate::algos::registry_of`]); the same id
//! (`ring`, `binomial_tree`) may exist for several. Every collective here is in place on
//! each rank's vector of n elements, S = n e bytes, cut into P blocks by
//! [`crate::sim::op::block`] where it scatters or gathers.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::sim::data::{self, Expectation, Expectations};
use crate::sim::op::block;

/// The collective a scenario (or one of its algorithm entries) runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    /// Every rank ends with the reduction of all ranks' vectors.
    #[default]
    Allreduce,
    /// Rank r ends with the reduction of block r of every rank's vector, in block r of its own.
    ReduceScatter,
    /// Rank r starts with its block r; every rank ends with every rank's block, each in place.
    Allgather,
    /// Every rank ends with the root's (rank 0's) vector.
    Broadcast,
    /// The root (rank 0) ends with the reduction of all ranks' vectors.
    Reduce,
    /// No data: no rank leaves before every rank has arrived.
    Barrier,
}

/// What a range of a rank's vector must hold when the collective ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The reduction of every rank's input there, within the rounding bound.
    Reduced,
    /// Rank `s`'s input there, bit for bit.
    InputOf(usize),
}

/// The root of the rooted collectives (broadcast, reduce).
pub const ROOT: usize = 0;

impl Collective {
    /// Every collective, in the order `list` and the docs show them.
    pub const ALL: [Collective; 6] = [
        Collective::Allreduce,
        Collective::ReduceScatter,
        Collective::Allgather,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Barrier,
    ];

    /// The name in scenarios, flags and reports (`reduce_scatter`).
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Allgather => "allgather",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::Barrier => "barrier",
        }
    }

    /// The collective named `name`.
    pub fn from_name(name: &str) -> Option<Collective> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Every name, comma-separated, for messages.
    pub fn names() -> String {
        Self::ALL.map(Collective::name).join(", ")
    }

    /// Whether it moves data at all (a barrier does not).
    pub fn has_data(self) -> bool {
        self != Collective::Barrier
    }

    /// Whether some rank ends with a reduction: an allgather and a broadcast only move
    /// inputs, so a scenario's `op` has nothing to do there (its `avg` must not scale them).
    pub fn reduces(self) -> bool {
        matches!(self, Collective::Allreduce | Collective::ReduceScatter | Collective::Reduce)
    }

    /// nccl-tests' bus-bandwidth factor (`busbw = algbw * factor`, algbw = S / time):
    /// the fraction of S that crosses the busiest link of an optimal algorithm, so that
    /// busbw compares with the link bandwidth whatever P is. `None` for a barrier.
    pub fn busbw_factor(self, ranks: usize) -> Option<f64> {
        let np = ranks as f64;
        match self {
            Collective::Allreduce => Some(2.0 * (np - 1.0) / np),
            Collective::ReduceScatter | Collective::Allgather => Some((np - 1.0) / np),
            Collective::Broadcast | Collective::Reduce => Some(1.0),
            Collective::Barrier => None,
        }
    }

    /// What rank `rank` of `ranks` must hold when the collective ends, as (element
    /// range, expectation) pairs over its vector of `n` elements; elements not listed
    /// may hold anything. Empty ranges are left out.
    pub fn expected(self, rank: usize, ranks: usize, n: usize) -> Vec<(Range<usize>, Expect)> {
        let range = |i: usize| {
            let b = block(n, ranks, i);
            b.offset..b.end()
        };
        let out = match self {
            Collective::Allreduce => vec![(0..n, Expect::Reduced)],
            Collective::ReduceScatter => vec![(range(rank), Expect::Reduced)],
            Collective::Allgather => (0..ranks).map(|s| (range(s), Expect::InputOf(s))).collect(),
            Collective::Broadcast => vec![(0..n, Expect::InputOf(ROOT))],
            Collective::Reduce if rank == ROOT => vec![(0..n, Expect::Reduced)],
            Collective::Reduce | Collective::Barrier => Vec::new(),
        };
        out.into_iter().filter(|(r, _)| !r.is_empty()).collect()
    }

    /// What every rank must end with, as the data check reads it: allgather and broadcast
    /// expect the same of every rank (one list, not P), reduce-scatter and reduce a range
    /// or none per rank.
    pub fn expectations(self, ranks: usize, n: usize) -> Expectations {
        let conv = |(range, e): (Range<usize>, Expect)| Expectation {
            range,
            expect: match e {
                Expect::Reduced => data::Expect::Reduced,
                Expect::InputOf(s) => data::Expect::Input(s),
            },
        };
        match self {
            Collective::Allreduce => Expectations::Allreduce,
            Collective::Allgather | Collective::Broadcast => {
                Expectations::Same(self.expected(0, ranks, n).into_iter().map(conv).collect())
            }
            _ => Expectations::PerRank(
                (0..ranks).map(|r| self.expected(r, ranks, n).into_iter().map(conv).collect()).collect(),
            ),
        }
    }
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
