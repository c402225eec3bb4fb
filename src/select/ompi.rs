//! Open MPI's fixed decision for allreduce, as the `tuned` collective component of
//! Open MPI 4.1.4 (the version Debian 12's `openmpi-bin` installs) makes it, and what
//! each of its choices is among our algorithms.
//!
//! The thresholds below are facts read from Open MPI's
//! `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c` (function
//! `ompi_coll_tuned_allreduce_intra_dec_fixed`, tag v4.1.4); the code is ours. Open MPI
//! decides from the communicator size P and the message size `dsize * count`, which
//! for allreduce is S, the bytes each rank holds. Its algorithm functions
//! (`ompi/mca/coll/base/coll_base_allreduce.c`) then fall back to others for small
//! counts; [`runs`] follows those fallbacks, so the algorithm we simulate is the one
//! Open MPI would execute, not only the one it named.

use crate::algos;

/// The Open MPI release whose thresholds these are.
pub const VERSION: &str = "4.1.4";

/// Open MPI's allreduce algorithms, by their number in `coll_tuned_allreduce_algorithm`
/// (the number a dynamic rules file gives) and name.
pub const ALGORITHMS: [(u8, &str); 6] = [
    (1, "basic_linear"),
    (2, "nonoverlapping"),
    (3, "recursive_doubling"),
    (4, "ring"),
    (5, "segmented_ring"),
    (6, "rabenseifner"),
];

/// Open MPI's name of allreduce algorithm `alg` (`"?"` for a number it does not have).
pub fn name(alg: u8) -> &'static str {
    ALGORITHMS.iter().find(|(a, _)| *a == alg).map_or("?", |(_, n)| n)
}

/// The algorithm Open MPI 4.1.4's fixed decision names for an allreduce of `bytes`
/// bytes per rank on `p` ranks; `commutative` is whether the operation is (sum, max,
/// min and prod all are; Open MPI has a separate table for the others). The segment
/// size it passes is always 0.
pub fn allreduce_fixed(p: usize, bytes: u64, commutative: bool) -> u8 {
    let s = bytes;
    if !commutative {
        return match p {
            ..4 => {
                if s < 131_072 {
                    3
                } else {
                    1
                }
            }
            4..8 => 3,
            8..16 => {
                if s < 1_048_576 {
                    3
                } else {
                    2
                }
            }
            16..128 => 3,
            128..256 => {
                if s < 131_072 {
                    2
                } else if s < 524_288 {
                    3
                } else {
                    2
                }
            }
            256..512 => {
                if s < 4096 {
                    2
                } else if s < 524_288 {
                    3
                } else {
                    2
                }
            }
            _ => {
                if s < 2048 {
                    2
                } else {
                    3
                }
            }
        };
    }
    // The thresholds as Open MPI lists them: (below this size, this algorithm), the last
    // entry of each row applying to every larger size.
    let row: &[(u64, u8)] = match p {
        ..4 => &[(8, 4), (4096, 3), (8192, 4), (16_384, 3), (65_536, 4), (262_144, 5), (u64::MAX, 6)],
        4..8 => &[(16, 4), (8192, 3), (u64::MAX, 6)],
        8..16 => &[(8192, 3), (u64::MAX, 6)],
        16..32 => &[(64, 5), (4096, 3), (u64::MAX, 6)],
        32..64 => &[(128, 5), (u64::MAX, 6)],
        64..128 => &[(262_144, 3), (u64::MAX, 6)],
        128..256 => &[(131_072, 2), (262_144, 3), (u64::MAX, 6)],
        256..512 => &[(4096, 2), (u64::MAX, 6)],
        512..2048 => &[(2048, 2), (16_384, 3), (u64::MAX, 6)],
        2048..4096 => &[(2048, 2), (4096, 5), (16_384, 3), (u64::MAX, 6)],
        _ => &[(2048, 2), (16_384, 5), (32_768, 3), (u64::MAX, 6)],
    };
    row.iter().find(|(below, _)| s < *below).map_or(6, |(_, alg)| *alg)
}

/// What Open MPI runs when its decision names `alg` with segment size `segsize` bytes
/// for `count` elements of `elem_bytes` bytes on `p` ranks, and how we run it: our
/// algorithm id and parameters, and the steps in words (`"5 segmented_ring (segsize 0:
/// one segment) -> 4 ring"`).
///
/// The fallbacks are Open MPI's (`coll_base_allreduce.c`, 4.1.4): the ring with fewer
/// elements than ranks runs recursive doubling; the segmented ring computes a segment
/// count from `segsize` (`COLL_BASE_COMPUTED_SEGCOUNT`: the whole vector when `segsize`
/// is 0 or below one element) and runs the plain ring when the vector holds fewer than
/// P segments; Rabenseifner with fewer elements than the largest power of two not above
/// P, or a non-commutative operation, runs basic linear. Nonoverlapping is a reduce to
/// rank 0 followed by a broadcast, each by Open MPI's own reduce and broadcast
/// decisions, which pick trees and pipelines; ours is `binomial_tree`, the binomial
/// reduce and binomial broadcast, unsegmented.
pub fn runs(alg: u8, segsize: u64, count: u64, elem_bytes: u64, p: usize) -> Mapped {
    let p64 = p as u64;
    let mut steps = vec![format!("{alg} {}", name(alg))];
    let mut alg = alg;
    let mut segment = None;
    if alg == 6 && count < algos::pow2_floor(p.max(1)) as u64 {
        steps.push("fewer elements than the power of two of its ranks".into());
        alg = 1;
    }
    if alg == 5 {
        let segcount = computed_segcount(segsize, elem_bytes, count);
        if p > 1 && count < p64 * segcount {
            steps.push(format!("segsize {segsize}: fewer than P segments"));
            alg = 4;
        } else {
            segment = Some(segcount * elem_bytes);
        }
    }
    if alg == 4 && p > 1 && count < p64 {
        steps.push("fewer elements than ranks".into());
        alg = 3;
    }
    if steps.len() > 1 {
        steps.push(format!("{alg} {}", name(alg)));
    }
    let (id, params) = match alg {
        1 => ("star", Vec::new()),
        2 => ("binomial_tree", Vec::new()),
        3 => ("butterfly", Vec::new()),
        4 => ("ring", Vec::new()),
        5 => ("ring_segmented", vec![("segment".to_string(), segment.unwrap_or(0))]),
        _ => ("halving_doubling", Vec::new()),
    };
    Mapped { ompi: alg, id, params, steps: steps.join(" -> ") }
}

/// Open MPI's `COLL_BASE_COMPUTED_SEGCOUNT`: elements per segment for a segment size
/// of `segsize` bytes, rounded to the nearest element, or `count` when `segsize` is
/// below one element or not below the whole vector.
pub fn computed_segcount(segsize: u64, elem_bytes: u64, count: u64) -> u64 {
    if segsize >= elem_bytes && segsize < elem_bytes * count {
        let mut segcount = segsize / elem_bytes;
        if segsize - segcount * elem_bytes > elem_bytes / 2 {
            segcount += 1;
        }
        segcount
    } else {
        count
    }
}

/// One of Open MPI's algorithms as we run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// Open MPI's number of the algorithm it finally runs (after its fallbacks).
    pub ompi: u8,
    /// Our algorithm id.
    pub id: &'static str,
    /// Our parameters (name, bytes): `ring_segmented`'s `segment`.
    pub params: Vec<(String, u64)>,
    /// Open MPI's choice and fallbacks, in words.
    pub steps: String,
}

/// The Open MPI algorithm (number, segment size in bytes) that one of our algorithms
/// is, for a rules file: the inverse of [`runs`] where there is one. `None` for ours
/// that Open MPI does not have.
pub fn ompi_of(id: &str, segment: Option<u64>) -> Option<(u8, u64)> {
    Some(match id {
        "star" => (1, 0),
        "binomial_tree" => (2, 0),
        "butterfly" => (3, 0),
        "ring" => (4, 0),
        "ring_segmented" => (5, segment.unwrap_or(0)),
        "halving_doubling" => (6, 0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spot checks against coll_tuned_decision_fixed.c of 4.1.4, one per row kind.
    #[test]
    fn fixed_thresholds() {
        // communicator_size < 4: < 8 ring, < 4096 recursive doubling, ... >= 262144 rabenseifner
        assert_eq!(allreduce_fixed(2, 4, true), 4);
        assert_eq!(allreduce_fixed(2, 8, true), 3);
        assert_eq!(allreduce_fixed(3, 100_000, true), 5);
        assert_eq!(allreduce_fixed(3, 262_144, true), 6);
        // 16 <= P < 32: < 64 segmented ring, < 4096 recursive doubling, else rabenseifner
        assert_eq!(allreduce_fixed(16, 63, true), 5);
        assert_eq!(allreduce_fixed(16, 4095, true), 3);
        assert_eq!(allreduce_fixed(31, 4096, true), 6);
        // 128 <= P < 256: < 128 KiB nonoverlapping
        assert_eq!(allreduce_fixed(128, 131_071, true), 2);
        assert_eq!(allreduce_fixed(255, 131_072, true), 3);
        assert_eq!(allreduce_fixed(200, 262_144, true), 6);
        // P >= 4096
        assert_eq!(allreduce_fixed(4096, 8192, true), 5);
        assert_eq!(allreduce_fixed(8192, 20_000, true), 3);
        // non-commutative
        assert_eq!(allreduce_fixed(2, 131_072, false), 1);
        assert_eq!(allreduce_fixed(8, 1_048_576, false), 2);
        assert_eq!(allreduce_fixed(600, 2048, false), 3);
    }

    #[test]
    fn fallbacks_follow_open_mpi() {
        // Segmented ring with segsize 0 is one segment: fewer than P segments, the ring.
        let m = runs(5, 0, 16, 4, 16);
        assert_eq!((m.ompi, m.id), (4, "ring"));
        assert_eq!(m.steps, "5 segmented_ring -> segsize 0: fewer than P segments -> 4 ring");
        // ... and the ring with fewer elements than ranks, recursive doubling.
        assert_eq!(runs(5, 0, 15, 4, 16).id, "butterfly");
        // A real segment: 1000 bytes of f32 round to 250 elements.
        let m = runs(5, 1000, 4000, 4, 4);
        assert_eq!((m.id, m.params.clone()), ("ring_segmented", vec![("segment".to_string(), 1000)]));
        assert_eq!(computed_segcount(1002, 4, 4000), 250);
        assert_eq!(computed_segcount(1003, 4, 4000), 251);
        // Rabenseifner below the power of two: basic linear.
        assert_eq!(runs(6, 0, 7, 4, 12).id, "star");
        assert_eq!(runs(6, 0, 8, 4, 12).id, "halving_doubling");
        assert_eq!(runs(2, 0, 8, 4, 12).id, "binomial_tree");
    }

    #[test]
    fn inverse_mapping() {
        for (alg, _) in ALGORITHMS {
            let m = runs(alg, 4096, 1 << 20, 4, 8);
            let seg = m.params.first().map(|(_, v)| *v);
            assert_eq!(ompi_of(m.id, seg).map(|(a, _)| a), Some(alg));
        }
        assert_eq!(ompi_of("double_binary_tree", None), None);
    }
}
