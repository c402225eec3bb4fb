//! A small hand-built [`Report`] for the exporters' unit tests.

use super::{PointResult, Report};
use crate::scenario::{
    AlgoSpec, CheckSpec, Collective, DataMode, DataSpec, Dtype, NetworkSpec, Scenario, TopologySpec,
};
use crate::sim::data::{Init, ReduceOp};
use crate::topology::Link;

/// Ring, 4 ranks, alpha = 1 us, B = 12.5 GB/s, C = 0.05 ns/B, one NIC.
pub(crate) fn scenario() -> Scenario {
    Scenario {
        name: "ring vs butterfly".to_string(),
        seed: 42,
        ranks: vec![4],
        topology: TopologySpec::FullyConnected { link: Link { alpha: 1e-6, bandwidth: 12.5e9 }, nics: 1 },
        cost_per_byte: 0.05e-9,
        network: NetworkSpec::default(),
        data: DataSpec {
            dtype: Dtype::F32,
            op: ReduceOp::Sum,
            init: Init::Random,
            mode: DataMode::Full,
            memory_budget: crate::scenario::DEFAULT_MEMORY_BUDGET,
            budget_location: String::new(),
        },
        collective: Collective::Allreduce,
        algorithms: vec![
            AlgoSpec {
                name: "ring".to_string(),
                collective: Collective::Allreduce,
                params: Vec::new(),
                location: String::new(),
                protocol: None,
            },
            AlgoSpec {
                name: "butterfly".to_string(),
                collective: Collective::Allreduce,
                params: Vec::new(),
                location: String::new(),
                protocol: None,
            },
        ],
        sizes: vec![4096, 1 << 20],
        check: CheckSpec { closed_form: true, bitwise: false },
        noise: None,
        host: None,
        repeat: None,
        topology_location: String::new(),
    }
}

/// A point that ran and passed every check.
pub(crate) fn point(algorithm: &str, bytes: u64, time_s: f64) -> PointResult {
    let ranks = 4;
    let lower_bound_s = 2e-6 + 1.5 * bytes as f64 / 12.5e9;
    let algbw = bytes as f64 / time_s;
    PointResult {
        algorithm: algorithm.to_string(),
        ranks,
        bytes,
        not_applicable: None,
        time_s,
        closed_form_s: Some(time_s),
        closed_form_rel_err: Some(0.0),
        closed_form_tolerance: Some(1e-9),
        lower_bound_s,
        efficiency: Some(lower_bound_s / time_s),
        algbw_bps: Some(algbw),
        busbw_bps: Some(algbw * 1.5),
        messages: 24,
        bytes_sent_max: bytes * 3 / 2,
        peak_buffer_bytes: bytes / 4,
        max_abs_error: Some(1.1920928955078125e-7),
        error_bound: Some(4.76837158203125e-7),
        verified: Some(true),
        ranks_bitwise_equal: Some(true),
        events: 96,
        wall_time_s: 0.000123,
        failures: Vec::new(),
        ..PointResult::default()
    }
}

/// A point whose algorithm could not run.
pub(crate) fn not_applicable(algorithm: &str, bytes: u64, why: &str) -> PointResult {
    PointResult {
        algorithm: algorithm.to_string(),
        ranks: 4,
        bytes,
        not_applicable: Some(why.to_string()),
        time_s: 0.0,
        closed_form_s: None,
        closed_form_rel_err: None,
        closed_form_tolerance: None,
        lower_bound_s: 0.0,
        efficiency: None,
        algbw_bps: None,
        busbw_bps: None,
        messages: 0,
        bytes_sent_max: 0,
        peak_buffer_bytes: 0,
        max_abs_error: None,
        error_bound: None,
        verified: None,
        ranks_bitwise_equal: None,
        events: 0,
        wall_time_s: 0.0,
        failures: Vec::new(),
        ..PointResult::default()
    }
}

/// Two sizes, two algorithms, one not-applicable point.
pub(crate) fn report() -> Report {
    Report {
        interrupted: false,
        scenario: scenario(),
        results: vec![
            point("ring", 4096, 6.6e-6),
            point("butterfly", 4096, 2.9e-6),
            not_applicable("mesh_2d", 4096, "needs 2 NICs per rank, the topology has 1"),
            point("ring", 1 << 20, 1.3e-4),
            point("butterfly", 1 << 20, 2.6e-4),
        ],
        shard: None,
    }
}
