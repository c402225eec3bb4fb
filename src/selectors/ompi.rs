//! Open MPI's fixed decisions for allreduce and the other collectives we have, as the
//! `tuned` collective component of Open MPI 4.1.4 (the version Debian 12's
//! `openmpi-bin` installs) makes them, and what each of its choices is among our
//! algorithms.
//!
//! The other collectives ([`fixed`], [`runs_in`]) follow the functions
//! `ompi_coll_tuned_{allgather,reduce_scatter,bcast,reduce,barrier}_intra_dec_fixed`
//! of the same file and their algorithms in `ompi/mca/coll/base/`. Where Open MPI runs an
//! algorithm we do not have, [`Mapped::lacking`] says which and why, and the selector
//! reports the point as not applicable rather than run something else.
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
use crate::collective::Collective;

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
    Mapped { lacking: None, ompi: alg, id, params, steps: steps.join(" -> ") }
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
    /// Set where we have no algorithm for what Open MPI runs: what it is and why it is
    /// missing (`id` is then Open MPI's name, not one of ours).
    pub lacking: Option<String>,
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

/// A row of a fixed decision: (below this many bytes, this algorithm), the last entry
/// applying to every larger size.
type Row = &'static [(u64, u8)];

const MAX: u64 = u64::MAX;

/// The algorithm of `row` for `bytes`.
fn pick(row: Row, bytes: u64) -> u8 {
    row.iter().find(|(below, _)| bytes < *below).map_or(row[row.len() - 1].1, |(_, alg)| *alg)
}

/// The row of the first communicator-size bound above `p` (the last row for every larger
/// P): Open MPI's `if (communicator_size < 4) ... else if (< 8) ...` chains.
fn row_of(p: usize, rows: &[(usize, Row)]) -> Row {
    rows.iter().find(|(below, _)| p < *below).map_or(rows[rows.len() - 1].1, |(_, r)| r)
}

/// Open MPI's algorithms of collective `c`, by their number in
/// `coll_tuned_<collective>_algorithm` (the number a rules file gives) and name.
pub fn algorithms(c: Collective) -> &'static [(u8, &'static str)] {
    match c {
        Collective::Allreduce => &ALGORITHMS,
        Collective::Allgather => {
            &[(1, "linear"), (2, "bruck"), (3, "recursive_doubling"), (4, "ring"), (5, "neighbor"), (6, "two_proc")]
        }
        Collective::ReduceScatter => &[(1, "non-overlapping"), (2, "recursive_halving"), (3, "ring"), (4, "butterfly")],
        Collective::Broadcast => &[
            (1, "basic_linear"),
            (2, "chain"),
            (3, "pipeline"),
            (4, "split_binary_tree"),
            (5, "binary_tree"),
            (6, "binomial"),
            (7, "knomial"),
            (8, "scatter_allgather"),
            (9, "scatter_allgather_ring"),
        ],
        Collective::Reduce => &[
            (1, "linear"),
            (2, "chain"),
            (3, "pipeline"),
            (4, "binary"),
            (5, "binomial"),
            (6, "in-order_binary"),
            (7, "rabenseifner"),
        ],
        Collective::Barrier => {
            &[(1, "linear"), (2, "double_ring"), (3, "recursive_doubling"), (4, "bruck"), (5, "two_proc"), (6, "tree")]
        }
    }
}

/// Open MPI's name of algorithm `alg` of collective `c` (`"?"` for a number it does not have).
pub fn name_in(c: Collective, alg: u8) -> &'static str {
    algorithms(c).iter().find(|(a, _)| *a == alg).map_or("?", |(_, n)| n)
}

/// Open MPI's collective id in a rules file (`COLLTYPE_T` of `coll_base_functions.h`).
pub fn collective_id(c: Collective) -> u64 {
    match c {
        Collective::Allgather => 0,
        Collective::Allreduce => 2,
        Collective::Barrier => 6,
        Collective::Broadcast => 7,
        Collective::Reduce => 11,
        Collective::ReduceScatter => 12,
    }
}

/// The size Open MPI's fixed decision of collective `c` reads, for n elements of
/// `elem_bytes` on `p` ranks: the bytes each rank contributes to an allgather
/// (`dsize * scount`, our block of rank 0, `ceil(n/P) e`), the whole vector for the
/// others (`dsize * count`; for reduce-scatter the sum of `rcounts`), 0 for a barrier.
/// (Its dynamic rules read the whole vector for an allgather too: [`rules_bytes`].)
pub fn decision_bytes(c: Collective, p: usize, n: u64, elem_bytes: u64) -> u64 {
    match c {
        Collective::Allgather => n.div_ceil(p.max(1) as u64) * elem_bytes,
        Collective::Barrier => 0,
        _ => n * elem_bytes,
    }
}

/// The size a dynamic rules file's message sizes are compared with
/// (`coll_tuned_decision_dynamic.c`): the whole vector, S, for every collective here
/// (for an allgather `dsize * comsize * scount`), 0 for a barrier.
pub fn rules_bytes(c: Collective, bytes: u64) -> u64 {
    if c == Collective::Barrier { 0 } else { bytes }
}

/// The algorithm Open MPI 4.1.4's fixed decision names for collective `c` on `p` ranks
/// with the decision size `bytes` ([`decision_bytes`]); `commutative` is whether the
/// operation is (the reduce-scatter and reduce have separate rules for the others).
pub fn fixed(c: Collective, p: usize, bytes: u64, commutative: bool) -> u8 {
    match c {
        Collective::Allreduce => allreduce_fixed(p, bytes, commutative),
        Collective::Allgather => {
            if p == 2 {
                return 6;
            }
            pick(
                row_of(
                    p,
                    &[
                        (32, &[(MAX, 3)]),
                        (64, &[(1024, 3), (65_536, 5), (MAX, 4)]),
                        (128, &[(512, 3), (65_536, 5), (MAX, 4)]),
                        (256, &[(512, 3), (131_072, 5), (524_288, 4), (1_048_576, 5), (MAX, 4)]),
                        (512, &[(32, 3), (128, 2), (1024, 3), (131_072, 5), (524_288, 4), (1_048_576, 5), (MAX, 4)]),
                        (1024, &[(64, 3), (256, 2), (2048, 3), (MAX, 5)]),
                        (2048, &[(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (MAX, 5)]),
                        (4096, &[(32, 2), (128, 3), (512, 2), (4096, 3), (MAX, 5)]),
                        (usize::MAX, &[(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (MAX, 5)]),
                    ],
                ),
                bytes,
            )
        }
        Collective::ReduceScatter => {
            if !commutative {
                return 1;
            }
            pick(
                row_of(
                    p,
                    &[
                        (4, &[(65_536, 3), (131_072, 4), (MAX, 3)]),
                        (8, &[(8, 1), (262_144, 2), (MAX, 3)]),
                        (32, &[(262_144, 2), (MAX, 3)]),
                        (64, &[(64, 1), (2048, 2), (524_288, 4), (MAX, 3)]),
                        (128, &[(256, 1), (512, 2), (2048, 4), (4096, 2), (MAX, 4)]),
                        (256, &[(256, 1), (512, 2), (MAX, 4)]),
                        (512, &[(256, 1), (1024, 2), (MAX, 4)]),
                        (1024, &[(512, 1), (2048, 2), (8192, 4), (16_384, 2), (MAX, 4)]),
                        (2048, &[(512, 1), (4096, 2), (16_384, 4), (32_768, 2), (MAX, 4)]),
                        (4096, &[(512, 1), (4096, 2), (MAX, 4)]),
                        (usize::MAX, &[(1024, 1), (8192, 2), (MAX, 4)]),
                    ],
                ),
                bytes,
            )
        }
        Collective::Broadcast => pick(
            row_of(
                p,
                &[
                    (
                        4,
                        &[
                            (32, 3),
                            (256, 5),
                            (512, 3),
                            (1024, 7),
                            (32_768, 1),
                            (131_072, 5),
                            (262_144, 2),
                            (524_288, 1),
                            (1_048_576, 6),
                            (MAX, 5),
                        ],
                    ),
                    (8, &[(64, 5), (128, 6), (2048, 5), (8192, 6), (1_048_576, 1), (MAX, 2)]),
                    (16, &[(8, 7), (64, 5), (4096, 7), (16_384, 5), (32_768, 6), (MAX, 1)]),
                    (32, &[(4096, 7), (1_048_576, 6), (MAX, 8)]),
                    (64, &[(2048, 6), (MAX, 7)]),
                    (128, &[(MAX, 7)]),
                    (256, &[(2, 6), (16_384, 5), (32_768, 1), (65_536, 5), (MAX, 7)]),
                    (1024, &[(16_384, 7), (32_768, 4), (MAX, 7)]),
                    (2048, &[(524_288, 7), (MAX, 8)]),
                    (4096, &[(262_144, 7), (MAX, 8)]),
                    (usize::MAX, &[(8192, 7), (16_384, 5), (262_144, 7), (MAX, 8)]),
                ],
            ),
            bytes,
        ),
        Collective::Reduce if !commutative => pick(
            row_of(
                p,
                &[
                    (4, &[(8, 6), (MAX, 1)]),
                    (8, &[(MAX, 1)]),
                    (16, &[(1024, 6), (8192, 1), (16_384, 6), (262_144, 1), (MAX, 6)]),
                    (128, &[(MAX, 6)]),
                    (256, &[(512, 6), (1024, 1), (MAX, 6)]),
                    (usize::MAX, &[(MAX, 6)]),
                ],
            ),
            bytes,
        ),
        Collective::Reduce => pick(
            row_of(
                p,
                &[
                    (4, &[(8, 7), (16, 4), (32, 3), (262_144, 1), (524_288, 3), (1_048_576, 2), (MAX, 3)]),
                    (8, &[(4096, 4), (65_536, 2), (262_144, 5), (524_288, 1), (1_048_576, 5), (MAX, 1)]),
                    (16, &[(8192, 4), (MAX, 5)]),
                    (32, &[(4096, 4), (MAX, 5)]),
                    (256, &[(MAX, 5)]),
                    (512, &[(8192, 5), (16_384, 6), (MAX, 5)]),
                    (2048, &[(MAX, 5)]),
                    (4096, &[(512, 5), (1024, 6), (8192, 5), (16_384, 6), (MAX, 5)]),
                    (usize::MAX, &[(16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16_384, 6), (MAX, 5)]),
                ],
            ),
            bytes,
        ),
        Collective::Barrier => match p {
            ..4 => 3,
            4..8 => 1,
            8..64 => 3,
            64..256 => 4,
            256..512 => 6,
            512..1024 => 4,
            1024..4096 => 6,
            _ => 4,
        },
    }
}

/// What Open MPI's fixed decision runs for collective `c` on `p` ranks and n elements
/// of `elem_bytes` (every operation of ours being commutative), and how we run it.
pub fn choose(c: Collective, p: usize, n: u64, elem_bytes: u64) -> Mapped {
    let alg = fixed(c, p, decision_bytes(c, p, n, elem_bytes), true);
    runs_in(c, alg, n, elem_bytes, p)
}

/// What Open MPI runs when its decision names algorithm `alg` of collective `c` for
/// `count` elements of `elem_bytes` on `p` ranks, with the fixed decision's fan-in/out
/// and segment size of 0, and which of our algorithms that is ([`runs`] for allreduce).
///
/// The fallbacks and parameters are Open MPI's (`ompi/mca/coll/base/`, 4.1.4):
/// - allgather: recursive doubling on P not a power of two runs Bruck's; neighbour
///   exchange on odd P runs the ring; two_proc (P = 2) is one exchange, our ring of two;
/// - reduce-scatter: recursive halving and the butterfly are ours for any P (both fold P
///   not a power of two first; recursive halving on a power of two sends the messages of
///   `halving_doubling`);
/// - broadcast and reduce: segment size 0 is one segment, and fan-out 0 a single chain
///   (`ompi_coll_base_topo_build_chain` forces 1), so chain and pipeline are both our
///   `chain`; the split binary tree with fewer than 2 elements runs the chain;
///   scatter-allgather (either) with fewer elements than ranks runs the basic linear
///   broadcast; the reduce's Rabenseifner (`redscat_gather`) with fewer elements than the
///   power of two of its ranks runs the linear reduce.
pub fn runs_in(c: Collective, alg: u8, count: u64, elem_bytes: u64, p: usize) -> Mapped {
    if c == Collective::Allreduce {
        return runs(alg, 0, count, elem_bytes, p);
    }
    let name = |a: u8| name_in(c, a);
    let mut steps = vec![format!("{alg} {}", name(alg))];
    let mut alg = alg;
    let pow2 = p.is_power_of_two();
    let fall = |to: u8, why: &str, steps: &mut Vec<String>| {
        steps.push(why.to_string());
        to
    };
    use Collective::*;
    match (c, alg) {
        (Allgather, 3) if !pow2 => alg = fall(2, "P not a power of two", &mut steps),
        (Allgather, 5) if p % 2 == 1 => alg = fall(4, "odd P", &mut steps),
        (Broadcast, 4) if count < 2 => alg = fall(2, "fewer than 2 elements", &mut steps),
        (Broadcast, 8 | 9) if count < p as u64 => alg = fall(1, "fewer elements than ranks", &mut steps),
        (Reduce, 7) if p < 2 || count < crate::algos::pow2_floor(p.max(1)) as u64 => {
            alg = fall(1, "fewer elements than the power of two of its ranks", &mut steps)
        }
        _ => {}
    }
    if steps.len() > 1 {
        steps.push(format!("{alg} {}", name(alg)));
    }
    let ours: Result<&'static str, &'static str> = match (c, alg) {
        (Allgather, 1) => {
            Err("the linear allgather is a gather to rank 0 and a broadcast of the whole; we have no gather")
        }
        (Allgather, 2) => {
            Err("Bruck's allgather sends runs of blocks that wrap around the end of the vector, which one of our \
             messages (one contiguous region) cannot carry")
        }
        (Allgather, 3) => Ok("halving_doubling"),
        (Allgather, 4 | 6) => Ok("ring"),
        (Allgather, 5) => Ok("neighbor_exchange"),
        (ReduceScatter, 1) => Err("non-overlapping is a reduce to rank 0 and a scatterv; we have no scatter"),
        (ReduceScatter, 2) => Ok("recursive_halving"),
        (ReduceScatter, 4) => Ok("butterfly"),
        (ReduceScatter, 3) => Ok("ring"),
        (Broadcast, 1) => Ok("one_to_all"),
        (Broadcast, 2 | 3) => Ok("chain"),
        (Broadcast, 6) => Ok("binomial_tree"),
        (Broadcast, 4) => Err("we have no split binary tree"),
        (Broadcast, 5) => Ok("binary_tree"),
        (Broadcast, 7) => Ok("knomial"),
        (Broadcast, 8) => Ok("scatter_allgather"),
        (Broadcast, _) => Err("we have no scatter followed by a ring allgather"),
        (Reduce, 1) => Ok("all_to_one"),
        (Reduce, 2 | 3) => Ok("chain"),
        (Reduce, 5) => Ok("binomial_tree"),
        (Reduce, 4) => Ok("binary_tree"),
        (Reduce, 6) => Ok("in_order_binary_tree"),
        (Reduce, _) => Err("we have no reduce by reduce-scatter and gather"),
        (Barrier, 1) => Ok("all_to_one"),
        (Barrier, 3) => Ok("recursive_doubling"),
        (Barrier, 4) => Ok("bruck"),
        (Barrier, 5) if p == 2 => Ok("recursive_doubling"),
        (Barrier, 2) => Err("we have no double-ring barrier"),
        (Barrier, 5) => Err("two_proc runs on 2 ranks only"),
        (Barrier, _) => Err("we have no tree barrier"),
        _ => Err("Open MPI has no such algorithm"),
    };
    let (id, lacking) = match ours {
        Ok(id) => (id, None),
        Err(why) => (name(alg), Some(why.to_string())),
    };
    Mapped { lacking, ompi: alg, id, params: Vec::new(), steps: steps.join(" -> ") }
}

/// The Open MPI algorithm (number, segment size) that our algorithm `id` of collective
/// `c` is, for a rules file; `None` for ours that Open MPI does not have. Our chains are
/// written as Open MPI's pipeline (one chain) with segment size 0, one segment.
pub fn ompi_of_in(c: Collective, id: &str, segment: Option<u64>) -> Option<(u8, u64)> {
    use Collective::*;
    Some(match (c, id) {
        (Allreduce, _) => return ompi_of(id, segment),
        (Allgather, "halving_doubling") => (3, 0),
        (Allgather, "ring") => (4, 0),
        (Allgather, "neighbor_exchange") => (5, 0),
        (ReduceScatter, "halving_doubling" | "recursive_halving") => (2, 0),
        (ReduceScatter, "ring") => (3, 0),
        (ReduceScatter, "butterfly") => (4, 0),
        (Broadcast, "one_to_all") => (1, 0),
        (Broadcast, "chain") => (3, 0),
        (Broadcast, "binary_tree") => (5, 0),
        (Broadcast, "binomial_tree") => (6, 0),
        (Broadcast, "knomial") => (7, 0),
        (Broadcast, "scatter_allgather") => (8, 0),
        (Reduce, "all_to_one") => (1, 0),
        (Reduce, "chain") => (3, 0),
        (Reduce, "binary_tree") => (4, 0),
        (Reduce, "binomial_tree") => (5, 0),
        (Reduce, "in_order_binary_tree") => (6, 0),
        (Barrier, "all_to_one") => (1, 0),
        (Barrier, "recursive_doubling") => (3, 0),
        (Barrier, "bruck") => (4, 0),
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

    /// Spot checks of the other collectives' decisions against coll_tuned_decision_fixed.c
    /// of 4.1.4, and of the fallbacks of ompi/mca/coll/base.
    #[test]
    fn other_collectives() {
        use Collective::*;
        // allgather: P = 2 two_proc; P < 32 recursive doubling; 32..64 by the block size
        assert_eq!(fixed(Allgather, 2, 1 << 20, true), 6);
        assert_eq!(fixed(Allgather, 31, 1 << 20, true), 3);
        assert_eq!(fixed(Allgather, 32, 1023, true), 3);
        assert_eq!(fixed(Allgather, 63, 1024, true), 5);
        assert_eq!(fixed(Allgather, 64, 65_536, true), 4);
        assert_eq!(fixed(Allgather, 300, 64, true), 2);
        assert_eq!(fixed(Allgather, 5000, 1, true), 3);
        // ... and the block it decides on: 1 MiB of f32 on 32 ranks is 32 KiB a rank.
        assert_eq!(decision_bytes(Allgather, 32, 1 << 18, 4), 32_768);
        assert_eq!(decision_bytes(Allgather, 3, 10, 4), 16);
        // reduce_scatter
        assert_eq!(fixed(ReduceScatter, 2, 65_536, true), 4);
        assert_eq!(fixed(ReduceScatter, 4, 7, true), 1);
        assert_eq!(fixed(ReduceScatter, 16, 262_143, true), 2);
        assert_eq!(fixed(ReduceScatter, 16, 262_144, true), 3);
        assert_eq!(fixed(ReduceScatter, 32, 2048, true), 4);
        assert_eq!(fixed(ReduceScatter, 100, 3000, true), 2);
        assert_eq!(fixed(ReduceScatter, 8, 3000, false), 1);
        // bcast
        assert_eq!(fixed(Broadcast, 3, 400, true), 3);
        assert_eq!(fixed(Broadcast, 3, 600, true), 7);
        assert_eq!(fixed(Broadcast, 4, 1 << 20, true), 2);
        assert_eq!(fixed(Broadcast, 8, 4095, true), 7);
        assert_eq!(fixed(Broadcast, 16, 1 << 20, true), 8);
        assert_eq!(fixed(Broadcast, 32, 2047, true), 6);
        assert_eq!(fixed(Broadcast, 200, 20_000, true), 1);
        assert_eq!(fixed(Broadcast, 5000, 10_000, true), 5);
        // reduce
        assert_eq!(fixed(Reduce, 2, 7, true), 7);
        assert_eq!(fixed(Reduce, 4, 4095, true), 4);
        assert_eq!(fixed(Reduce, 4, 70_000, true), 5);
        assert_eq!(fixed(Reduce, 4, 1 << 20, true), 1);
        assert_eq!(fixed(Reduce, 16, 4096, true), 5);
        assert_eq!(fixed(Reduce, 300, 10_000, true), 6);
        assert_eq!(fixed(Reduce, 10, 2000, false), 1);
        // barrier
        let barrier: Vec<u8> =
            [2, 4, 8, 63, 64, 256, 512, 1024, 4096].iter().map(|&p| fixed(Barrier, p, 0, true)).collect();
        assert_eq!(barrier, [3, 1, 3, 3, 4, 6, 4, 6, 4]);
        // Fallbacks.
        let m = runs_in(Allgather, 3, 600, 4, 6);
        assert_eq!((m.ompi, m.id, m.lacking.is_some()), (2, "bruck", true));
        assert_eq!(m.steps, "3 recursive_doubling -> P not a power of two -> 2 bruck");
        assert_eq!(runs_in(Allgather, 3, 600, 4, 8).id, "halving_doubling");
        assert_eq!(runs_in(Allgather, 5, 600, 4, 7).id, "ring");
        assert_eq!(runs_in(Allgather, 5, 600, 4, 8).id, "neighbor_exchange");
        assert_eq!(runs_in(Allgather, 6, 600, 4, 2).id, "ring");
        assert_eq!(runs_in(ReduceScatter, 4, 600, 4, 8).id, "butterfly");
        assert_eq!(runs_in(ReduceScatter, 4, 600, 4, 12).id, "butterfly");
        assert_eq!(runs_in(ReduceScatter, 2, 600, 4, 12).id, "recursive_halving");
        assert_eq!(runs_in(Broadcast, 8, 5, 4, 16).id, "one_to_all");
        assert_eq!(runs_in(Broadcast, 8, 16, 4, 16).id, "scatter_allgather");
        assert_eq!(runs_in(Broadcast, 8, 20, 4, 20).id, "scatter_allgather");
        assert!(runs_in(Broadcast, 9, 16, 4, 16).lacking.is_some());
        assert_eq!(runs_in(Broadcast, 4, 1, 4, 16).id, "chain");
        assert_eq!(runs_in(Broadcast, 3, 1 << 20, 4, 16).id, "chain");
        assert_eq!(runs_in(Reduce, 7, 3, 4, 6).id, "all_to_one");
        assert_eq!(runs_in(Barrier, 1, 0, 4, 6).id, "all_to_one");
        // Every algorithm we map to exists, and maps back to its number.
        for c in Collective::ALL {
            for &(alg, _) in algorithms(c) {
                for p in [2, 6, 8] {
                    let m = runs_in(c, alg, 1 << 12, 4, p);
                    if m.lacking.is_none() {
                        assert!(algos::find_in(c, m.id).is_some(), "{c} {alg} P={p}: {}", m.id);
                        assert!(ompi_of_in(c, m.id, None).is_some(), "{c} {}", m.id);
                    }
                }
            }
        }
    }

    /// Where ompi_fixed is n/a on 4 to 64 ranks and 1 KiB to 64 MiB, as the docs say.
    #[test]
    fn lacking_where_documented() {
        use Collective::*;
        for c in Collective::ALL {
            for p in 4..=64usize {
                for s in (10..=26).map(|k| 1u64 << k) {
                    let pow2 = p.is_power_of_two();
                    let want = match c {
                        Allgather => !pow2 && (p < 32 || s.div_ceil(p as u64) < 1024),
                        _ => false,
                    };
                    assert_eq!(choose(c, p, s / 4, 4).lacking.is_some(), want, "{c} P={p} S={s}");
                }
            }
        }
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
