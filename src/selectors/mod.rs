//! The selectors' catalogue and the libraries' decision rules they follow: which ids are
//! selectors, what each covers and takes, Open MPI's fixed decision ([`ompi`]) and NCCL's
//! tuning model ([`nccl`]).
//!
//! Deciding is separate from running: this module reads only the collectives, the
//! topology and the algorithm registry, so the scenario parser can check a selector
//! entry and a protocol `auto` without the runner. `crate::select` runs what a selector
//! picks and fills its rows in.

pub mod nccl;
pub mod ompi;

use crate::algos::{self, ParamError, Params};
use crate::collective::Collective;
use crate::units::ParamValue;

/// What `list` shows of a selector.
pub struct SelectorInfo {
    /// Its id in `algorithms:`.
    pub id: &'static str,
    /// What it picks.
    pub summary: &'static str,
    /// Where its rules come from.
    pub source: &'static str,
    /// The collectives it chooses for.
    pub covers: &'static str,
    /// Its parameters: `name=default: meaning`.
    pub params: &'static [&'static str],
}

/// Every selector, in the order `list` shows them.
pub const SELECTORS: [SelectorInfo; 3] = [
    SelectorInfo {
        id: "auto",
        summary: "simulates every algorithm of the collective at each point and shows the fastest, its runner-up and \
                  the margin",
        source: "ours",
        covers: "every collective",
        params: &[],
    },
    SelectorInfo {
        id: "ompi_fixed",
        summary: "the algorithm Open MPI's fixed decision runs for this P and S (with its fallbacks), and how far it \
                  is from auto's",
        source: "Open MPI 4.1.4, ompi/mca/coll/tuned/coll_tuned_decision_fixed.c and the algorithms of \
                 ompi/mca/coll/base/",
        covers: "every collective (n/a, with the reason, where Open MPI runs an algorithm we lack)",
        params: &[],
    },
    SelectorInfo {
        id: "nccl_model",
        summary: "the (algorithm, protocol) of least time in NCCL's tuning model; allreduce ring -> nccl_ring, tree \
                  -> nccl_tree, with that protocol and the channels, NVLS -> nvls, NVLS Tree -> nvls_tree; reduce_scatter and allgather ring -> ring, pat -> pat; broadcast \
                  and reduce ring -> chain in NCCL's chunks; NCCL's predicted time beside our simulation",
        source: "NCCL 2.30.7, src/graph/tuning.cc and src/enqueue.cc",
        covers: "allreduce, reduce_scatter, allgather, broadcast, reduce (NCCL has no barrier)",
        params: &[
            "channels=2: NCCL channels; the bus bandwidth is the link's, shared by them (sets the per-channel caps); \
             the allreduce runs with as many (with version 2.8.4: twice as many, fewer for a small call, as 2.8.4 \
             opens them; with 2.8.4 on a cluster the channels and bus bandwidth of its graph search replace it)",
            "arch=hopper: GPU generation whose constants apply: volta, ampere, hopper, blackwell",
            "nvls=1: 0 (or false) leaves NVLS and NVLS Tree out, as NCCL_NVLS_ENABLE=0 does (NVLS is weighed on one node of \
             an NVSwitch cluster, Hopper or later, and runs as nvls; NVLS Tree on more than one, with two NICs or \
             more per node, and runs as nvls_tree)",
            "version=2.30.7: the NCCL release whose tuning model picks, in quotes (\"2.8.4\"): before 2.10 NCCL \
             2.8.4's constants and formulas (no NVLS or PAT), else 2.30.7's",
        ],
    },
];

/// Whether `id` is a selector rather than an algorithm.
pub fn is_selector(id: &str) -> bool {
    SELECTORS.iter().any(|s| s.id == id)
}

/// Whether selector `id` chooses for collective `c`.
pub fn covers(id: &str, c: Collective) -> bool {
    match id {
        "auto" | "ompi_fixed" => true,
        "nccl_model" => !nccl::algorithms(c).is_empty(),
        _ => c == Collective::Allreduce,
    }
}

/// Check an `algorithms:` entry of collective `c`: a selector's parameters, or build the
/// algorithm once. The scenario parser and `--algorithms` call this instead of
/// [`algos::build_for`]. An algorithm's label (its row's name in reports) is returned,
/// so that two entries which build the same algorithm (`segment: 1KiB` and `segment:
/// 1024`) are told to be one; a selector gives `None`.
pub fn check(c: Collective, id: &str, params: &[(String, ParamValue)]) -> Result<Option<String>, ParamError> {
    if is_selector(id) {
        if !covers(id, c) {
            let covered: Vec<&str> = Collective::ALL.iter().filter(|&&o| covers(id, o)).map(|o| o.name()).collect();
            let why = if id == "nccl_model" { " (NCCL has no barrier collective)" } else { "" };
            return Err(ParamError::new(
                None,
                format!("selector '{id}' chooses for {} only, not for {c}{why}", covered.join(", ")),
            ));
        }
        selector_params(id, params).map(|_| None)
    } else {
        algos::build_for(c, id, Params::new(params.to_vec())).map(|a| Some(a.label()))
    }
}

/// `nccl_model`'s parameters (defaults for the other selectors, which take none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct NcclParams {
    pub(crate) channels: u32,
    pub(crate) arch: nccl::Arch,
    /// NVLS may be weighed (`nvls=0` leaves it out).
    pub(crate) nvls: bool,
    /// The NCCL release whose model is evaluated (`version`), where given.
    pub(crate) tuning: Option<nccl::Tuning>,
}

impl NcclParams {
    /// Whether two entries with these parameters run alike: a release is its model's
    /// tuning (`2.8.4` and `2.9.6` evaluate one model, and the report names that one).
    pub(crate) fn same_run(&self, other: &NcclParams) -> bool {
        NcclParams { tuning: Some(self.tuning.unwrap_or_default()), ..*self }
            == NcclParams { tuning: Some(other.tuning.unwrap_or_default()), ..*other }
    }

    /// `NCCL 2.8.4's model`: the release whose model these parameters evaluate.
    pub(crate) fn model_release(&self) -> String {
        format!("NCCL {}'s model", self.tuning.unwrap_or_default().release())
    }
}

pub(crate) fn selector_params(id: &str, params: &[(String, ParamValue)]) -> Result<NcclParams, ParamError> {
    let mut p = Params::new(params.to_vec());
    let mut out = NcclParams { channels: 2, arch: nccl::Arch::Hopper, nvls: true, tuning: None };
    if id == "nccl_model" {
        let channels = p.count("channels", 2)?;
        out.channels = u32::try_from(channels)
            .ok()
            .filter(|&c| c <= 64)
            .ok_or_else(|| ParamError::new(Some("channels"), format!("'channels' must be 1 to 64, not {channels}")))?;
        let names: Vec<&'static str> = nccl::Arch::NAMES.iter().map(|(n, _)| *n).collect();
        let mut ordered = vec!["hopper"];
        ordered.extend(names.iter().filter(|n| **n != "hopper"));
        let arch = p.choice("arch", &ordered)?;
        out.arch = nccl::Arch::NAMES.iter().find(|(n, _)| *n == arch).map_or(nccl::Arch::Hopper, |(_, a)| *a);
        out.nvls = match p.take_value("nvls") {
            // As every count, 0 and 1 may be written as strings of digits; true and false
            // as a YAML boolean (YAML 1.1's yes, no, on and off reach us as written).
            None | Some(ParamValue::Int(1)) => true,
            Some(ParamValue::Str(s)) if matches!(s.trim(), "1" | "true") => true,
            Some(ParamValue::Int(0)) => false,
            Some(ParamValue::Str(s)) if matches!(s.trim(), "0" | "false") => false,
            Some(v) => {
                return Err(ParamError::new(
                    Some("nvls"),
                    format!("'nvls' must be true or false (or 1 or 0, as NCCL_NVLS_ENABLE), not '{v}'"),
                ));
            }
        };
        out.tuning = match p.take_value("version") {
            None => None,
            Some(ParamValue::Str(v)) => Some(nccl::Tuning::of_release(&v).ok_or_else(|| {
                ParamError::new(
                    Some("version"),
                    format!(
                        "'version' must be an NCCL release as NCCL prints it, MAJOR.MINOR.PATCH from 1.0.0 without \
                         leading zeros or spaces, optionally with a build (\"2.19.3-1\") or CUDA \
                         (\"2.19.3+cuda12.2\") suffix, such as \"2.8.4\", not '{v}'"
                    ),
                )
            })?),
            // A YAML number loses the minor version's digits (2.10 reads as 2.1).
            Some(v) => {
                return Err(ParamError::new(
                    Some("version"),
                    format!("'version' must be an NCCL release in quotes, such as \"2.8.4\" or \"2.10\", not {v}"),
                ));
            }
        };
    }
    let info = SELECTORS.iter().find(|s| s.id == id);
    let left: Vec<(String, ParamValue)> = params
        .iter()
        .filter(|(k, _)| !info.is_some_and(|i| i.params.iter().any(|d| d.split(['=', ':']).next() == Some(k))))
        .cloned()
        .collect();
    if let Some((key, _)) = left.first() {
        let allowed = match info {
            Some(i) if !i.params.is_empty() => {
                let names: Vec<_> = i.params.iter().map(|d| d.split(['=', ':']).next().unwrap_or(d)).collect();
                format!("allowed: {}", names.join(", "))
            }
            _ => "it takes none".to_string(),
        };
        return Err(ParamError::new(Some(key), format!("unknown parameter '{key}' for selector '{id}'; {allowed}")));
    }
    Ok(out)
}
