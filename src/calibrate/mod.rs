//! `calibrate`: from a cluster's own benchmark logs to a machine file that predicts it.
//!
//! The logs (nccl-tests [`nccl_tests`], OSU [`osu`]) give runs of a collective at one
//! rank count over a list of sizes. The machine file is any scenario; the parameters
//! are named numeric keys of it by dotted path (`topology.levels.1.bandwidth`,
//! `topology.inter.alpha`, `compute.cost_per_byte`). For every trial of the values the
//! file's YAML tree ([`yaml`]) is edited, shaped to each run (its ranks, nodes and GPUs
//! per node) and read by the normal scenario parser; every logged point is then
//! simulated through the library exactly as `run` simulates it, with what NCCL ran at
//! that point ([`what_ran`]), the points in parallel. The fit ([`fit`]) is relative
//! least squares in log space; its Jacobian gives every value's uncertainty and the
//! pairs the logs cannot tell apart, reported in words.

pub mod cli;
pub mod fit;
pub mod log;
pub mod nccl_tests;
pub mod osu;
pub mod plot;

pub mod yaml;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::collective::Collective;
use crate::runner::{self, Point};
use crate::scenario::{self, AlgoSpec, DataMode, ParamValue, ProtocolChoice, Scenario, units};
use crate::select::{nccl, ompi};
use crate::sim::engine::NoObserver;
use crate::topology;
pub use log::{Bench, LogError, Run, Sample, busbw_factor};
use yaml::{Yaml, edit_text};

/// What `calibrate` was asked to do, beyond the files.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The dotted paths to fit; `None`: every alpha, bandwidth and launch of the
    /// topology, and `compute.cost_per_byte` where the logs can tell it from bandwidth.
    pub fit: Option<Vec<String>>,
    /// P for logs that do not say it (OSU; nccl-tests output cut above its device list).
    pub ranks: Option<usize>,
    /// GPUs per node for logs that do not list their devices' hosts.
    pub gpus_per_node: Option<usize>,
    /// NCCL settings (`NCCL_ALGO=Ring`) for logs that do not print them.
    pub env: Vec<(String, String)>,
    /// The optimiser's budget: evaluations per parameter (plus one).
    pub patience: usize,
    /// Where NCCL's model makes its picks (algorithm, protocol, channels) for logs that
    /// do not force them: at the fitted values (the default) or at the machine file's.
    pub picks: Picks,
    /// The prior's width, a factor above 1 ([`bounds`]): each value the file gives is
    /// drawn toward it, log-normally. `None`: no prior (the bounds still hold).
    pub prior_width: Option<f64>,
}

/// The machine NCCL's tuning model is asked on, for the logs' points it picks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Picks {
    /// At the values of each round of the fit, picked again until no pick changes.
    #[default]
    Fitted,
    /// At the machine file's values, held through the fit and the hold-out: NCCL's model
    /// rates a machine by the links and NICs its topology detection finds (line rates,
    /// link types, from the system), not by the times it achieves, so where the file
    /// gives those nominal figures the picks stay NCCL's whatever the fit makes of them.
    File,
}

/// The default budget of [`Options::patience`].
pub const DEFAULT_PATIENCE: usize = 40;

/// A width for [`Options::prior_width`] to start from (`--prior-width 10`). The prior is
/// off unless asked for: with it on by default, fits of this repository's logs stalled
/// far from their optimum (docs/calibrate.md, "Bounds and the prior").
pub const DEFAULT_PRIOR_WIDTH: f64 = 10.0;

/// The NCCL settings `--env` supplies (and the only ones calibrate reads from a log):
/// what NCCL ran.
pub const ENV_READ: [&str; 2] = ["NCCL_ALGO", "NCCL_PROTO"];

/// Read one log (nccl-tests or OSU, told apart by their title lines), with `opts`
/// filling in what it does not say.
pub fn read_log(path: &Path, opts: &Options) -> Result<Vec<Run>, LogError> {
    let file = path.display().to_string();
    // A FIFO would block the read forever, a device never end.
    crate::files::check_input(path).map_err(|e| LogError::at(&file, 0, e))?;
    let text = std::fs::read(path).map_err(|e| LogError::at(&file, 0, format!("cannot read: {e}")))?;
    // A byte-order mark hid the first line (an OSU title) from the readers. A byte that
    // is not UTF-8 is a replacement character: logs hold terminal junk, and the rows that
    // matter are ASCII.
    let text = String::from_utf8_lossy(text.strip_prefix(&[0xef, 0xbb, 0xbf][..]).unwrap_or(&text));
    let mut runs =
        if osu::is_osu(&text) { osu::parse(&text, &file, opts.ranks)? } else { nccl_tests::parse(&text, &file)? };
    for r in &mut runs {
        if r.ranks.is_none() {
            r.ranks = opts.ranks;
        }
        if r.gpus_per_node.is_none() {
            r.gpus_per_node = opts.gpus_per_node;
            if let (Some(p), Some(g)) = (r.ranks, r.gpus_per_node) {
                if g == 0 || !p.is_multiple_of(g) {
                    return Err(LogError::at(&file, r.line, format!("{p} ranks are not whole nodes of {g} GPUs")));
                }
                r.nodes = Some(p / g);
            }
        }
        // An OSU log is Open MPI's run: no NCCL setting steered it, and recording one
        // would claim it did (calibrate warns that `--env` is not used for it).
        for (k, v) in &opts.env {
            if r.bench != Bench::Osu && !r.env.contains_key(k) {
                r.env.insert(k.clone(), v.clone());
                r.env_given.insert(k.clone());
            }
        }
        if r.ranks.is_none() {
            return Err(LogError::at(
                &file,
                r.line,
                "the log does not say how many ranks ran (no device list): give --ranks N",
            ));
        }
    }
    Ok(runs)
}

// ---------------------------------------------------------------------------------------
// Parameters

/// What a parameter measures, which decides how its value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Seconds (alpha, launch, cost per byte).
    Time,
    /// Bytes per second; `bits` when the file wrote it in bits per second.
    Bandwidth {
        /// Written as `Gbps` rather than `GB/s`.
        bits: bool,
    },
    /// A plain number.
    Number,
}

/// One parameter of the fit: a key of the machine file.
#[derive(Clone, Debug, Serialize)]
pub struct Param {
    /// Dotted path in the machine file.
    pub path: String,
    /// Its kind.
    pub kind: Kind,
    /// The value in the file (base units), or where the fit starts when the file has
    /// none or zero.
    pub start: f64,
    /// Whether the file gave the value (a nominal figure the bounds and prior refer to)
    /// rather than the fit guessing a start.
    pub from_file: bool,
    /// Whether the file has the key at all (with 0 where `from_file` is false): a value
    /// no log depends on is then kept as the file has it, or left out where it has none.
    #[serde(skip)]
    pub in_file: bool,
}

const TIME_KEYS: [&str; 9] =
    ["alpha", "launch", "cost_per_byte", "latency", "overhead", "gap", "step_latency", "issue", "proxy"];
const PROTOCOLS: [&str; 3] = ["simple", "ll", "ll128"];

/// The key a value is known by: the last segment, or the one above a protocol's name.
fn key_name(path: &str) -> &str {
    let segs: Vec<&str> = path.split('.').collect();
    match segs.as_slice() {
        [.., k, p] if PROTOCOLS.contains(p) => k,
        [.., k] => k,
        [] => "",
    }
}

impl Param {
    /// The parameter at `path` of `tree`; a missing key starts from a guess of its kind.
    pub fn of(tree: &Yaml, path: &str) -> Result<Param, String> {
        let key = key_name(path);
        let node = tree.get(path);
        let text = match node {
            Some(Yaml::Str(s)) => Some(s.clone()),
            Some(Yaml::UInt(u)) => Some(u.to_string()),
            Some(Yaml::Float(f)) => Some(format!("{f:?}")),
            Some(Yaml::Int(_)) => return Err(format!("{path} is negative; calibrate fits positive values")),
            Some(Yaml::Null) | None => None,
            Some(inner) => {
                // The example names a key the node has (`host.issue`), not one it may lack.
                let example = match inner {
                    Yaml::Map(m) => m.first().map_or_else(|| "simple".to_string(), |(k, _)| k.clone()),
                    _ => "0".to_string(),
                };
                return Err(format!(
                    "{path} is not a single value (a mapping or list); name one of its numbers, e.g. {path}.{example}"
                ));
            }
        };
        let bits_unit = |t: &str| t.trim_end().ends_with("bps");
        let kind = if TIME_KEYS.contains(&key) {
            Kind::Time
        } else if key == "bandwidth"
            || key == "bw"
            || text.as_deref().is_some_and(|t| bits_unit(t) || t.ends_with("/s"))
        {
            Kind::Bandwidth { bits: text.as_deref().is_some_and(bits_unit) }
        } else if text.as_deref().is_some_and(|t| t.parse::<f64>().is_err() && units::parse_time(t).is_ok()) {
            Kind::Time
        } else {
            Kind::Number
        };
        let value = match (&text, kind) {
            (None, _) => 0.0,
            (Some(t), Kind::Time) => units::parse_time(t).map_err(|e| format!("{path}: {e}"))?,
            (Some(t), Kind::Bandwidth { .. }) => units::parse_bandwidth(t).map_err(|e| format!("{path}: {e}"))?,
            (Some(t), Kind::Number) => t.parse::<f64>().map_err(|_| format!("{path}: '{t}' is not a number"))?,
        };
        // A whole number that is no efficiency is a count or an index (GPUs, channels, a
        // socket's GPU): fitting it wrote 4.0 into the file, refused there as "not 4.0".
        if matches!(node, Some(Yaml::UInt(_))) && kind == Kind::Number && !key.contains("efficiency") {
            return Err(format!(
                "{path} is a whole number (a count or a GPU's index), which calibrate does not fit; it fits \
                 times, bandwidths and efficiencies"
            ));
        }
        if node.is_none() && kind == Kind::Number {
            return Err(format!(
                "{path} is not in the machine file, and calibrate cannot tell its unit; write it in the file first"
            ));
        }
        // Log space needs a positive start: a zero or missing value starts from a
        // small one of its kind (the fit moves it by orders of magnitude if it must).
        let start = if value > 0.0 {
            value
        } else {
            match (kind, key) {
                (Kind::Time, "cost_per_byte") => 1e-12,
                (Kind::Time, _) => 1e-6,
                (Kind::Bandwidth { .. }, _) => 10e9,
                (Kind::Number, _) => 1.0,
            }
        };
        let in_file = !matches!(node, None | Some(Yaml::Null));
        Ok(Param { path: path.to_string(), kind, start, from_file: value > 0.0, in_file })
    }

    /// `value` as the machine file writes it: a unit that keeps the number between 1
    /// and 1000, six significant digits.
    pub fn text(&self, value: f64) -> Yaml {
        let sig = |v: f64| {
            let s = format!("{v:.6}");
            let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
            // Six significant digits: fewer decimals for larger mantissas.
            let digits = if v >= 100.0 {
                3
            } else if v >= 10.0 {
                4
            } else {
                5
            };
            let t = format!("{v:.digits$}");
            let t = if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_string() } else { t };
            if t.len() < s.len() { t } else { s }
        };
        let scaled = |v: f64, units: &[(&str, f64)]| {
            let (name, f) = units.iter().rev().find(|(_, f)| v >= *f).unwrap_or(&units[0]);
            format!("{}{name}", sig(v / f))
        };
        match self.kind {
            Kind::Time => {
                Yaml::Str(scaled(value, &[("ps", 1e-12), ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)]))
            }
            Kind::Bandwidth { bits: true } => Yaml::Str(scaled(
                value * 8.0,
                &[("bps", 1.0), ("Kbps", 1e3), ("Mbps", 1e6), ("Gbps", 1e9), ("Tbps", 1e12)],
            )),
            Kind::Bandwidth { bits: false } => {
                Yaml::Str(scaled(value, &[("B/s", 1.0), ("KB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12)]))
            }
            Kind::Number => Yaml::Float(value),
        }
    }
}

/// The default parameters of a machine: every alpha, bandwidth, launch, protocol
/// efficiency and network proxy (`inter.proxy`, where the file has it) under `topology`
/// (per protocol too), and C when `with_c`.
pub fn default_paths(tree: &Yaml, with_c: bool) -> Vec<String> {
    let mut out: Vec<String> = tree
        .leaves()
        .into_iter()
        .filter(|p| {
            p.starts_with("topology.")
                && matches!(key_name(p), "alpha" | "bandwidth" | "launch" | "efficiency" | "proxy")
        })
        .collect();
    if with_c {
        out.push("compute.cost_per_byte".to_string());
    }
    out
}

/// The prior's residual, as a relative error of a logged point, for a value
/// [`Options::prior_width`] times (or a fraction) of the file's: a value that far off
/// costs the fit as much as one point off by 10%.
pub const PRIOR_POINT: f64 = 0.1;

/// The lowest efficiency a protocol may be fitted to, as a fraction of its highest.
const EFFICIENCY_FLOOR: f64 = 0.01;

/// A parameter's limits (base units): the lowest and highest value the fit may give it,
/// and the reason for the highest, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// The lowest value.
    pub lo: f64,
    /// The highest value.
    pub hi: f64,
    /// Why no higher (`"LL's line share"`, `"1000000x the file's value"`).
    pub why: String,
}

/// The limits of `p`, by what it measures. An efficiency is a share of a link's rate: at
/// most 1, and for NCCL's LL and LL128 at most the data's share of their lines (8 bytes
/// of 16, 120 of 128). Everything else, bandwidths and latencies included, moves at most
/// [`fit::MAX_FACTOR`] either way from its start. Tighter limits on bandwidths (2x the
/// file's) and latencies (10x) were tried: a file's figure is often not the rate transfers
/// see (an H100 node written at 300 GB/s fits 470 to 730 GB/s), and the optimiser clamps a
/// value at its bound, which stalled fits far from their optimum (the one-node H100 fit's
/// LL launch held at 66 us where it finds 35 us, 58% off; docs/calibrate.md, "Bounds and
/// the prior").
pub fn bounds(p: &Param) -> Bounds {
    let wide = Bounds { lo: p.start / fit::MAX_FACTOR, hi: p.start * fit::MAX_FACTOR, why: String::new() };
    let key = key_name(&p.path);
    if key == "efficiency" {
        let (cap, why) = match p.path.rsplit('.').next() {
            Some("ll") => (0.5, "LL's data share of its lines, 8 bytes of 16"),
            Some("ll128") => (120.0 / 128.0, "LL128's data share of its lines, 120 bytes of 128"),
            _ => (1.0, "an efficiency is at most 1"),
        };
        return Bounds { lo: cap * EFFICIENCY_FLOOR, hi: cap, why: why.to_string() };
    }
    let whose = if p.from_file { "the file's value" } else { "its start" };
    Bounds { why: format!("{}x {whose}", fit::MAX_FACTOR), ..wide }
}

// ---------------------------------------------------------------------------------------
// What NCCL ran

/// The channels NCCL's model is asked about, and `nccl_ring` / `nccl_tree` run with on a
/// cluster (as `nccl_model`'s default): a log does not say how many NCCL opened, and the
/// fitted bandwidths absorb the difference.
const NCCL_CHANNELS: u32 = 2;

/// What ran at a logged point: our algorithm entry that simulates it, and how that was
/// decided, in words.
#[derive(Clone, Debug)]
pub struct Ran {
    /// The algorithm (with parameters) to simulate.
    pub spec: AlgoSpec,
    /// `NCCL_ALGO=Ring (log): ring/simple`, `nccl_model: tree/ll`, ...
    pub how: String,
}

/// NCCL's GPU generation for a device name of the log; `None` for a log that lists no
/// devices (a log pasted without its header).
fn arch_of(devices: &[String]) -> Option<nccl::Arch> {
    let d = devices.join(" ");
    Some(if devices.is_empty() {
        return None;
    } else if d.contains("V100") {
        nccl::Arch::Volta
    } else if d.contains("A100") || d.contains("A800") || d.contains("A10") || d.contains("L40") {
        nccl::Arch::Ampere
    } else if d.contains("B200") || d.contains("B100") || d.contains("GB200") {
        nccl::Arch::Blackwell
    } else {
        nccl::Arch::Hopper
    })
}

/// The names an `NCCL_ALGO` / `NCCL_PROTO` value allows among `all`: a list
/// (`Ring,Tree`), or everything but a list (`^NVLS`); case does not matter.
fn allowed<'a>(value: Option<&String>, all: &[&'a str]) -> Vec<&'a str> {
    let Some(v) = value else { return all.to_vec() };
    let v = v.to_ascii_lowercase();
    let (negate, list) = match v.strip_prefix('^') {
        Some(rest) => (true, rest.to_string()),
        None => (false, v),
    };
    let named: Vec<&str> = list.split(',').map(str::trim).collect();
    all.iter().copied().filter(|a| named.contains(a) != negate).collect()
}

/// What ran at `bytes` of `run` on `topo` (the run's machine): for nccl-tests, the
/// algorithm and protocol the log forces (`NCCL_ALGO`, `NCCL_PROTO`), else the pair
/// NCCL's tuning model picks among those allowed; for OSU, what Open MPI's fixed rules
/// pick.
///
/// This is the one place that maps NCCL's choice to our algorithms. On a GPU cluster
/// (a machine with nodes, `kind: cluster`) an allreduce runs as NCCL's own algorithms:
/// ring as `nccl_ring`, tree as `nccl_tree`, with the entry's `protocol` set to the
/// protocol decided (so per-protocol costs of the machine apply) and the channels NCCL's
/// model was asked about; a reduce-scatter or allgather likewise runs NCCL's ring as
/// `nccl_ring` and NVLS as `nvls`. On other machines, which have no protocols, ring runs as
/// `ring` and tree as `double_binary_tree`. PAT runs as `pat` on a cluster, else as `halving_doubling`;
/// broadcast and reduce as a pipelined `chain`.
pub fn what_ran(run: &Run, topo: &dyn topology::Topology, bytes: u64) -> Result<Ran, String> {
    what_ran_with(run, topo, bytes, None, None)
}

/// [`what_ran`] with the NCCL release the machine file's `nccl_model` entry names
/// (`version`), for a log that does not print its own: NCCL's model of that release
/// picks. The log's version, where it prints one, comes first; with neither, the latest
/// model we have. Likewise the GPU generation: the log's devices, else the entry's
/// `arch`, else Hopper.
pub fn what_ran_with(
    run: &Run,
    topo: &dyn topology::Topology,
    bytes: u64,
    machine_tuning: Option<nccl::Tuning>,
    machine_arch: Option<nccl::Arch>,
) -> Result<Ran, String> {
    let c = run.collective;
    let e = run.dtype.as_deref().map_or(4, dtype_bytes);
    if run.bench == Bench::Osu {
        let m = ompi::choose(c, topo.ranks(), bytes / e, e);
        let (id, params, how) = match &m.lacking {
            Some(why) => {
                ("ring", Vec::new(), format!("Open MPI {}: {} ({why}); simulated as ring", ompi::VERSION, m.steps))
            }
            None => (
                m.id,
                m.params.iter().map(|(k, v)| (k.clone(), ParamValue::Int(*v))).collect(),
                format!("Open MPI {}: {}", ompi::VERSION, m.steps),
            ),
        };
        return Ok(Ran {
            spec: AlgoSpec { name: id.to_string(), collective: c, params, location: String::new(), protocol: None },
            how,
        });
    }
    let algo_env = run.env.get("NCCL_ALGO");
    let proto_env = run.env.get("NCCL_PROTO");
    if let Some(v) = proto_env {
        // NCCL warns of a name it does not know and goes on; a fit would then rest on a
        // protocol the log's reader never meant, without a word.
        let list = v.strip_prefix('^').unwrap_or(v);
        if let Some(bad) = list
            .split(',')
            .map(str::trim)
            .find(|p| !["ll", "ll128", "simple"].contains(&p.to_ascii_lowercase().as_str()))
        {
            return Err(format!(
                "{}:{}: NCCL_PROTO={v} names the protocol '{bad}', which NCCL does not have; NCCL's are LL, LL128 and \
                 Simple (a list, or ^ and a list to leave out)",
                run.file, run.line
            ));
        }
    }
    // Any NCCL_PROTO replaces NCCL's default list, in which LL128 is on only over NVLink:
    // under it LL128 is on or off as named (NCCL's parseList writes 0 or 1 for each).
    // A log without its device list leaves the GPU to the machine file's `arch` (else
    // Hopper): taken for a Hopper, an A100 machine got NVLS Tree, which A100s lack.
    let arch = arch_of(&run.devices).or(machine_arch).unwrap_or(nccl::Arch::Hopper);
    let base = nccl::Inputs::of(topo, NCCL_CHANNELS, arch);
    let tuning = run.nccl_version.as_deref().and_then(nccl::Tuning::of_version).or(machine_tuning).unwrap_or_default();
    let base = base.with_tuning(tuning).searched(topo);
    // NVLS and NVLS Tree came within 2.30.7's tuning (2.17, 2.18): a log's older release has neither.
    let base = run.nccl_version.as_deref().map_or(base, |v| base.with_release(v));
    let x = nccl::Inputs { ll128: proto_env.is_some() || base.ll128, ..base };
    let algos: Vec<&str> = nccl::algorithms(c).iter().map(|a| a.env_name()).collect();
    let ok_algos = allowed(algo_env, &algos);
    let ok_protos = allowed(proto_env, &["ll", "ll128", "simple"]);
    let mut best: Option<(nccl::Algo, nccl::Proto, f64)> = None;
    for &a in nccl::algorithms(c) {
        if !ok_algos.contains(&a.env_name()) {
            continue;
        }
        for p in nccl::Proto::ALL {
            if !ok_protos.contains(&p.name()) {
                continue;
            }
            if let Some(t) = nccl::time(&x, c, a, p, bytes)
                && best.is_none_or(|(_, _, b)| t < b)
            {
                best = Some((a, p, t));
            }
        }
    }
    // NCCL's own algorithms order their rings and trees by node: only a cluster has them.
    let cluster = topo.node_shape().is_some();
    // Where each setting came from: the log, or --env for a log that printed none.
    let from = |k: &str| if run.env_given.contains(k) { "(--env)" } else { "(log)" };
    let forced = match (algo_env, proto_env) {
        (Some(a), Some(p)) if from("NCCL_ALGO") == from("NCCL_PROTO") => {
            format!("NCCL_ALGO={a} NCCL_PROTO={p} {}, ", from("NCCL_ALGO"))
        }
        (Some(a), Some(p)) => format!("NCCL_ALGO={a} {} NCCL_PROTO={p} {}, ", from("NCCL_ALGO"), from("NCCL_PROTO")),
        (Some(a), None) => format!("NCCL_ALGO={a} {}, ", from("NCCL_ALGO")),
        (None, Some(p)) => format!("NCCL_PROTO={p} {}, ", from("NCCL_PROTO")),
        (None, None) => String::new(),
    };
    let Some((algo, proto, _)) = best else {
        // NCCL ran something its model here has not (NVLS, CollNet): say so, run the ring.
        return Ok(Ran {
            spec: AlgoSpec {
                name: "ring".into(),
                collective: c,
                params: Vec::new(),
                location: String::new(),
                protocol: None,
            },
            how: format!(
                "{forced}not among the algorithms NCCL's model has for {} here ({}); simulated as ring",
                c.name(),
                algos.join(", ")
            ),
        });
    };
    let params = match c {
        Collective::Broadcast | Collective::Reduce => {
            let k = nccl::chain_segments(&x, proto, bytes, bytes / e.max(1));
            if k > 1 { vec![("segments".to_string(), ParamValue::Int(k))] } else { Vec::new() }
        }
        // NCCL's allreduce, and its ring of the halves, on the channels and chunk `run`'s
        // nccl_model gives them (nccl_tree's own chunk is a step; NCCL shrinks it).
        Collective::Allreduce | Collective::ReduceScatter | Collective::Allgather
            if cluster && (c == Collective::Allreduce || algo == nccl::Algo::Ring) =>
        {
            nccl::call_param_list(&x, c, algo, proto, bytes)
        }
        _ => Vec::new(),
    };
    let picked = match (forced.is_empty(), tuning) {
        (false, _) => String::new(),
        (true, nccl::Tuning::V2_30) => "nccl_model: ".to_string(),
        (true, t) => format!("nccl_model {}: ", t.release()),
    };
    let (name, protocol) = if cluster {
        let fixed = c == Collective::Allreduce
            || (c != Collective::Broadcast && c != Collective::Reduce && algo != nccl::Algo::Pat);
        (algo.ours(c), fixed.then_some(ProtocolChoice::Fixed(proto)))
    } else {
        (algo.textbook(c), None)
    };
    Ok(Ran {
        spec: AlgoSpec { name: name.to_string(), collective: c, params, location: String::new(), protocol },
        how: format!("{forced}{picked}{}/{}", algo.name(), proto.name()),
    })
}

/// The channels NCCL's ring runs with on one node of explicit NVLinks under the flow
/// model: one on each ring its search lays over distinct NVLinks (`nccl_ring` puts
/// channel k on ring `k mod R`, so fewer channels than rings would leave links idle that
/// NCCL uses), at least [`NCCL_CHANNELS`]. `None` elsewhere, and under the ideal model,
/// where a message holds a port rather than a share of its NVLinks, so that more channels
/// would only add ports.
fn nvlink_channels(topo: &dyn topology::Topology, flow: bool) -> Option<u32> {
    match (topo.nvlinks(), topo.node_shape()) {
        (Some(links), Some((1, g))) if flow && g > 2 => {
            let rings = crate::algos::nccl_ring::nvlink_rings(g, links).len() as u32;
            Some(rings.max(NCCL_CHANNELS))
        }
        _ => None,
    }
}

/// Bytes of an nccl-tests element type (4 when unknown).
fn dtype_bytes(t: &str) -> u64 {
    match t {
        "int8" | "uint8" | "char" => 1,
        "half" | "bfloat16" | "float16" | "bf16" => 2,
        "int64" | "uint64" | "double" | "float64" => 8,
        _ => 4,
    }
}

/// Our `data.dtype` for an nccl-tests element type.
fn dtype_name(t: &str) -> &'static str {
    match t {
        "int8" | "uint8" | "char" => "u8",
        "half" | "float16" => "f16",
        "bfloat16" | "bf16" => "bf16",
        "int64" | "uint64" => "i64",
        "double" | "float64" => "f64",
        "int32" | "uint32" | "int" => "i32",
        _ => "f32",
    }
}

// ---------------------------------------------------------------------------------------
// Runs as scenarios

/// The machine file read both ways: as a scenario (checked) and as a tree (to edit).
#[derive(Clone, Debug)]
pub struct Machine {
    /// The file name, for messages.
    pub file: String,
    /// Its tree.
    pub tree: Yaml,
    /// Its text, which `--output` edits in place where it can (keeping its comments).
    pub text: String,
    /// Its scenario.
    pub scenario: Scenario,
}

impl Machine {
    /// Read and check a machine file; the error is the scenario parser's message.
    pub fn load(path: &Path) -> Result<Machine, String> {
        let scenario = scenario::load_file(path).map_err(|e| e.to_string())?;
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: cannot read: {e}"))?;
        let tree = Yaml::parse(&text).map_err(|e| format!("{file}: {e}"))?;
        Ok(Machine { file, tree, text, scenario })
    }

    /// The topology's `kind`.
    pub fn kind(&self) -> &str {
        match self.tree.get("topology.kind") {
            Some(Yaml::Str(k)) => k,
            _ => "fully_connected",
        }
    }
}

/// Shape `tree` for `run`: its ranks, and where the machine has nodes, its nodes and
/// GPUs per node (`cluster`: `nodes`, `gpus_per_node`; a two-level `hierarchical`: the
/// inner level's size is the GPUs per node, the outer's the nodes).
pub fn shape(tree: &mut Yaml, kind: &str, run: &Run) -> Result<(), String> {
    let p = run.ranks.unwrap_or(1);
    let nodes_needed = || {
        run.nodes.zip(run.gpus_per_node).ok_or_else(|| {
            format!(
                "{}: the log does not say how its {p} ranks sit on nodes (no device list with hosts); give --gpus-per-node",
                run.file
            )
        })
    };
    match kind {
        "cluster" => {
            let (n, g) = nodes_needed()?;
            let node = match tree.get("topology.gpus_per_node") {
                Some(Yaml::UInt(u)) => *u as usize,
                _ => 0,
            };
            tree.set("topology.nodes", Yaml::UInt(n as u64))?;
            if n == 1 && g < node {
                // Part of one node: the run's GPUs are some of the machine's, which keeps
                // its node (an NVLink list names all of its GPUs). The cluster runs P
                // ranks on a node's first P GPUs, so the GPUs the log names (by PCI bus
                // or device number) are moved there.
                first_gpus(tree, node, &run.device_ids, &run.device_buses)?;
            } else {
                // A node of another size no longer fits the file's lists of its GPUs: the
                // scenario built from them would blame the file for a count it never
                // wrote, at a line of calibrate's edit.
                if g != node
                    && let Some(key) = ["links", "sockets", "pci_bus"]
                        .into_iter()
                        .find(|k| tree.get(&format!("topology.intra.{k}")).is_some())
                {
                    return Err(format!(
                        "{}:{}: this run has {n} node(s) of {g} GPUs, but the machine file's nodes have {node} GPUs, \
                         listed one by one in topology.intra.{key}; calibrate runs a log on part of one node or on whole \
                         nodes of the file: give a machine file of {g}-GPU nodes for this log",
                        crate::units::escape_controls(&run.file),
                        run.line
                    ));
                }
                tree.set("topology.gpus_per_node", Yaml::UInt(g as u64))?;
            }
        }
        "hierarchical" => {
            let levels = match tree.get("topology.levels") {
                Some(Yaml::Seq(v)) => v.len(),
                _ => 0,
            };
            match levels {
                1 => tree.set("topology.levels.0.size", Yaml::UInt(p as u64))?,
                2 => {
                    let (n, g) = nodes_needed()?;
                    tree.set("topology.levels.0.size", Yaml::UInt(g as u64))?;
                    tree.set("topology.levels.1.size", Yaml::UInt(n as u64))?;
                }
                _ => {
                    return Err(format!(
                        "calibrate shapes a hierarchical machine of one level (ranks) or two (GPUs in a node, nodes); \
                         this one has {levels}"
                    ));
                }
            }
        }
        _ => {}
    }
    // A machine that costs the host's issue runs each log with its own threads' GPUs.
    if let (Some(g), Some(Yaml::Map(_))) = (run.gpus_per_thread, tree.get("host")) {
        tree.set("host.gpus_per_thread", Yaml::UInt(g as u64))?;
    }
    tree.set("ranks", Yaml::UInt(p as u64))
}

/// Renumber the GPUs of a `node`-GPU machine (its NVLink list `topology.intra.links`,
/// its sockets `topology.intra.sockets`) so that the devices a log names become GPUs 0,
/// 1, ..., in rank order, the others following in their order. A log's devices are the
/// GPUs whose PCI buses (`topology.intra.pci_bus`) its device lines give, where the
/// machine lists the buses and every rank's is one of them; else its device numbers
/// (`ids`). Nothing changes where the log does not name distinct devices of the node (the
/// run then takes the node's first GPUs).
fn first_gpus(tree: &mut Yaml, node: usize, ids: &[usize], buses: &[String]) -> Result<(), String> {
    let machine_buses: Vec<Option<String>> = match tree.get("topology.intra.pci_bus") {
        Some(Yaml::Seq(v)) => v
            .iter()
            .map(|y| match y {
                Yaml::Str(s) => topology::pci_bus_key(s),
                Yaml::UInt(u) => topology::pci_bus_key(&u.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let by_bus: Option<Vec<usize>> = (!buses.is_empty() && !machine_buses.is_empty())
        .then(|| buses.iter().map(|b| machine_buses.iter().position(|m| m.as_ref() == Some(b))).collect())
        .flatten();
    let ids = by_bus.as_deref().unwrap_or(ids);
    let mut seen = vec![false; node];
    for &d in ids {
        if d >= node || seen[d] {
            return Ok(());
        }
        seen[d] = true;
    }
    let order: Vec<usize> = ids.iter().copied().chain((0..node).filter(|&d| !seen[d])).collect();
    let mut new = vec![0; node];
    for (to, &from) in order.iter().enumerate() {
        new[from] = to;
    }
    let gpu = |y: &Yaml| match y {
        Yaml::UInt(u) if (*u as usize) < node => Yaml::UInt(new[*u as usize] as u64),
        other => other.clone(),
    };
    if let Some(Yaml::Seq(links)) = tree.get("topology.intra.links") {
        let links: Vec<Yaml> = links
            .iter()
            .map(|l| match l {
                Yaml::Seq(v) if v.len() == 3 => Yaml::Seq(vec![gpu(&v[0]), gpu(&v[1]), v[2].clone()]),
                other => other.clone(),
            })
            .collect();
        tree.set("topology.intra.links", Yaml::Seq(links))?;
    }
    if let Some(Yaml::Seq(sockets)) = tree.get("topology.intra.sockets") {
        let sockets: Vec<Yaml> = sockets
            .iter()
            .map(|l| match l {
                Yaml::Seq(v) => Yaml::Seq(v.iter().map(gpu).collect()),
                other => other.clone(),
            })
            .collect();
        tree.set("topology.intra.sockets", Yaml::Seq(sockets))?;
    }
    if !machine_buses.is_empty()
        && let Some(Yaml::Seq(v)) = tree.get("topology.intra.pci_bus")
        && v.len() == node
    {
        let mut moved = v.clone();
        for (from, y) in v.iter().enumerate() {
            moved[new[from]] = y.clone();
        }
        tree.set("topology.intra.pci_bus", Yaml::Seq(moved))?;
    }
    Ok(())
}

/// The most rounds of fitting with NCCL's picks held, then picking again at the fitted
/// values ([`calibrate`]).
const PICK_ROUNDS: usize = 4;

/// A run ready to simulate: its tree (shaped, with its algorithms and sizes), and per
/// logged point the index of its algorithm and what ran.
#[derive(Clone, Debug)]
struct Job {
    tree: Yaml,
    ranks: usize,
    /// Per sample: (algorithm index, what ran).
    points: Vec<(usize, String)>,
    /// Per sample: the protocol its entry names (`None`: the entry names none, and runs
    /// Simple on a cluster), for the hints of values no point depends on.
    protocols: Vec<Option<topology::Proto>>,
    /// The nodes the run spans on a cluster (`None` on other machines).
    nodes: Option<usize>,
    /// The GPU-NIC path crosses a CPU (`nic_path` `phb` or `sys`).
    nic_through_cpu: bool,
}

fn job_for(m: &Machine, run: &Run) -> Result<Job, String> {
    // Checked here, against the log's own line: the scenario built below would blame the
    // `sizes:` of the machine file as edited, a line the user never wrote.
    let e = run.dtype.as_deref().map_or(4, dtype_bytes);
    let ty = dtype_name(run.dtype.as_deref().unwrap_or("float"));
    if let Some(bad) = run.samples.iter().find(|x| !x.bytes.is_multiple_of(e)) {
        return Err(format!(
            "{}:{}: a size of {} is not a whole number of {e}-byte {ty} elements, which the simulator moves; \
             sizes must be multiples of {e} bytes (remove the row)",
            crate::units::escape_controls(&run.file),
            bad.line,
            crate::units::count_bytes(bad.bytes)
        ));
    }
    // The same for the sizes' limit (`4 P^2 S` below 2^64, scenario::limits).
    let ranks = run.ranks.unwrap_or(1);
    let max = crate::scenario::limits::largest_size(ranks as u64);
    if let Some(bad) = run.samples.iter().find(|x| x.bytes > max) {
        return Err(format!(
            "{}:{}: a size of {} ({}) on {ranks} ranks could take byte counts past 2^64 (16 EiB): the size \
             times 4 P^2 must stay below 2^64; at P = {ranks} a size may be at most {max} bytes ({}) (remove \
             the row)",
            crate::units::escape_controls(&run.file),
            bad.line,
            crate::units::count_bytes(bad.bytes),
            crate::units::fmt_bytes(bad.bytes),
            crate::units::fmt_bytes(max)
        ));
    }
    let mut tree = m.tree.clone();
    shape(&mut tree, m.kind(), run)?;
    tree.set("collective", Yaml::Str(run.collective.name().to_string()))?;
    tree.set("data.mode", Yaml::Str("off".into()))?;
    tree.set("data.dtype", Yaml::Str(ty.into()))?;
    tree.set("check", Yaml::Map(vec![("closed_form".into(), Yaml::Bool(false))]))?;
    // Left out, and said so (`noise_warning`).
    for k in ["noise", "repeat"] {
        if let Yaml::Map(v) = &mut tree {
            v.retain(|(key, _)| key != k);
        }
    }
    // The machine as the run sees it (its shape), for NCCL's model.
    let first = parse_tree(&tree, &m.file, &[], &[])?;
    let topo = topology::build(&first.topology, ranks).map_err(|e| format!("{}: {e}", run.file))?;
    let mut specs: Vec<AlgoSpec> = Vec::new();
    let mut points = Vec::new();
    let mut protocols = Vec::new();
    let nvlink = nvlink_channels(topo.as_ref(), first.network.is_flow());
    let tuning = first
        .algorithms
        .iter()
        .filter(|a| a.name == "nccl_model")
        .find_map(|a| crate::selectors::selector_params(&a.name, &a.params).ok()?.tuning);
    let arch = first
        .algorithms
        .iter()
        .filter(|a| a.name == "nccl_model" && a.params.iter().any(|(k, _)| k == "arch"))
        .find_map(|a| Some(crate::selectors::selector_params(&a.name, &a.params).ok()?.arch));
    for s in &run.samples {
        let mut ran = what_ran_with(run, topo.as_ref(), s.bytes, tuning, arch)?;
        if let Some(c) = nvlink.filter(|_| ran.spec.name == "nccl_ring") {
            for (k, v) in &mut ran.spec.params {
                if k == "channels" {
                    *v = ParamValue::Int(c.into());
                }
            }
        }
        let k = match specs
            .iter()
            .position(|x| x.name == ran.spec.name && x.params == ran.spec.params && x.protocol == ran.spec.protocol)
        {
            Some(k) => k,
            None => {
                specs.push(ran.spec.clone());
                specs.len() - 1
            }
        };
        protocols.push(match ran.spec.protocol {
            Some(ProtocolChoice::Fixed(p)) => Some(p),
            _ => None,
        });
        points.push((k, ran.how));
    }
    let algos: Vec<Yaml> = specs
        .iter()
        .map(|s| {
            let mut m = vec![("name".to_string(), Yaml::Str(s.name.clone()))];
            for (k, v) in &s.params {
                m.push((
                    k.clone(),
                    match v {
                        ParamValue::Int(i) => Yaml::UInt(*i),
                        ParamValue::Float(f) => Yaml::Float(*f),
                        ParamValue::Str(t) => Yaml::Str(t.clone()),
                    },
                ));
            }
            // Protocol last, as in every algorithm label (`nccl_ring(channels=2, protocol=ll)`).
            if let Some(p) = s.protocol {
                m.push(("protocol".to_string(), Yaml::Str(p.name().to_string())));
            }
            Yaml::Map(m)
        })
        .collect();
    tree.set("algorithms", Yaml::Seq(algos))?;
    let mut sizes: Vec<u64> = run.samples.iter().map(|s| s.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    tree.set("sizes", Yaml::Seq(sizes.into_iter().map(Yaml::UInt).collect()))?;
    let nodes = topo.node_shape().map(|(n, _)| n);
    Ok(Job { tree, ranks, points, protocols, nodes, nic_through_cpu: topo.nic_through_cpu() })
}

/// The jobs of `runs` on `m` with `params` set to `values`: what NCCL's model picks (the
/// protocol, where the log does not force it) depends on the machine's bandwidths, so it
/// is picked again at the values of each round of the fit, as NCCL picks it on the
/// machine it runs.
fn jobs_at(m: &Machine, runs: &[Run], params: &[Param], values: &[f64]) -> Result<Vec<Job>, String> {
    let mut at = m.clone();
    for (p, v) in params.iter().zip(values) {
        at.tree.set(&p.path, p.text(*v))?;
    }
    runs.iter().map(|r| job_for(&at, r)).collect()
}

/// The scenario of `tree` with `params` set to `values`.
fn parse_tree(tree: &Yaml, file: &str, params: &[Param], values: &[f64]) -> Result<Scenario, String> {
    let mut t = tree.clone();
    for (p, v) in params.iter().zip(values) {
        t.set(&p.path, p.text(*v))?;
    }
    let mut s = scenario::parse_str(&t.to_text(&BTreeMap::new()), file).map_err(|e| e.to_string())?;
    s.data.mode = DataMode::Off;
    Ok(s)
}

/// Whole loops of `nccl_ring` simulated before the steady state is checked
/// ([`steady_period`]): the first loops fill the pipeline.
const STEADY_FROM: u64 = 2;
/// Loops whose times must step by the same amount before the rest are counted rather
/// than simulated: three equal steps.
const STEADY_CHECKS: u64 = 3;
/// How close (relative to the time) the steps must be: rounding only.
const STEADY_TOLERANCE: f64 = 1e-12;

/// The bytes of one whole loop of a point's algorithm when it is `nccl_ring` or
/// `nccl_tree` (the entries [`what_ran`] makes whose work grows with the size in
/// identical loops), with the chunk [`what_ran`] gives it or its protocol's: a ring's
/// channel gains P chunks per loop, a tree's channel one chunk (its part is the size over
/// the channels, cut into chunks that go up and down the same tree), so a size of `m`
/// loops more is the same program with `m` more identical loops. `None` otherwise.
fn steady_period(spec: &AlgoSpec, ranks: usize, elem: u64, topo: &crate::topology::spec::TopologySpec) -> Option<u64> {
    let tree = match spec.name.as_str() {
        "nccl_ring" => false,
        "nccl_tree" => true,
        "nvls_tree" => return nvls_tree_period(spec, ranks, elem, topo),
        _ => return None,
    };
    if ranks < 2 {
        return None;
    }
    let Some(ProtocolChoice::Fixed(proto)) = spec.protocol else { return None };
    let mut channels = if tree { 2 } else { 1 };
    let mut chunk = None;
    for (k, v) in &spec.params {
        match (k.as_str(), v) {
            ("channels", ParamValue::Int(c)) => channels = *c,
            ("chunk", ParamValue::Str(t)) => chunk = Some(crate::units::parse_size(t).ok().filter(|c| *c > 0)?),
            // The tree's shape across nodes: the same in every loop.
            ("pattern", _) if tree => {}
            // A ring order of its own, or anything else: not the schedule this argument is about.
            _ => return None,
        }
    }
    if tree {
        let chunk = chunk.unwrap_or(proto.chunk_bytes());
        return ((chunk / elem).max(1) * elem).checked_mul(channels);
    }
    let ring = crate::algos::nccl_ring::NcclRing {
        proto: Some(proto),
        channels: channels as usize,
        chunk,
        gpus_per_node: 0,
        collective: spec.collective,
    };
    let chunk = (ring.chunk_bytes(proto) / elem).max(1) * elem;
    chunk.checked_mul(ranks as u64)?.checked_mul(channels)
}

/// [`steady_period`] of `nvls_tree` as [`what_ran`] runs it, its channels and chunk given
/// (NCCL's for the point's whole size): a size `nvls_tree::loop_bytes` larger is the same
/// program with one more whole loop on every channel.
fn nvls_tree_period(
    spec: &AlgoSpec,
    ranks: usize,
    elem: u64,
    topo: &crate::topology::spec::TopologySpec,
) -> Option<u64> {
    let crate::topology::spec::TopologySpec::Cluster(c) = topo else { return None };
    let (mut channels, mut chunk) = (None, None);
    for (k, v) in &spec.params {
        match (k.as_str(), v) {
            ("channels", ParamValue::Int(n)) => channels = Some(*n as usize),
            ("chunk", v) => chunk = crate::units::size_value(v).ok(),
            _ => return None,
        }
    }
    let heads = crate::algos::nvls_tree::heads(c.gpus_per_node.min(ranks), c.nics_per_node);
    Some(crate::algos::nvls_tree::loop_bytes(channels?, chunk?, heads, elem))
}

/// How a logged point's time is obtained: simulated at its size, or, for a size of many
/// whole loops beyond a remainder, from the simulated times of a few loops
/// ([`steady_period`]).
enum Plan {
    /// The time of one simulation.
    Direct(usize),
    /// The simulations of `STEADY_FROM ..= STEADY_FROM + STEADY_CHECKS` loops (plus the
    /// remainder), and how many loops the point has beyond the last of them; for
    /// `nvls_tree`, the least time a whole loop can add ([`loop_floor`]), which the step
    /// must equal.
    Steady { sims: Vec<usize>, more: u64, direct: (usize, usize, u64), floor: Option<f64> },
}

/// The least time one more whole loop of period `period` bytes can add to a run of
/// algorithm `algo` on `ranks` ranks once its loops repeat: the algorithm's lower bound
/// ([`runner::lower_bound`]) of a run of exactly one whole loop on every channel. For
/// `nvls_tree` that bound is the busiest interface side's time over the run, and every
/// whole loop puts the same messages on every side, so a run of `k` whole loops more
/// keeps each side busy `k` times a loop's time more: a schedule whose loops repeat
/// with a step below this would, over enough loops, finish before its busiest side
/// could have carried them. `None` where the bound does not hold (docs/nccl.md).
fn loop_floor(s: &Scenario, algo: usize, ranks: usize, period: u64) -> Option<f64> {
    runner::lower_bound(s, &Point { algo, ranks, bytes: period })
}

/// Simulated times of every point of every job, in order, at one set of values.
///
/// A size of many loops of `nccl_ring` (up to 8 GiB in 2 MiB chunks: a quarter of a
/// million messages) is not simulated loop by loop. Its loops are identical, and once
/// the pipeline is full each adds the same time: the point is simulated at the same
/// remainder with 2, 3, 4 and 5 whole loops, and if those times step by the same amount
/// (to rounding), its time is the last of them plus that step for every loop more. If
/// they do not, the point is simulated whole. The simulations are shared by every size
/// of a log with the same remainder (every power of two above a loop).
fn simulate(m: &Machine, jobs: &[Job], runs: &[Run], params: &[Param], values: &[f64]) -> Result<Vec<f64>, String> {
    let scenarios: Vec<Scenario> =
        jobs.iter().map(|j| parse_tree(&j.tree, &m.file, params, values)).collect::<Result<_, _>>()?;
    // The simulations, each (job, sample it is for (messages), algorithm, bytes), once.
    let mut sims: Vec<(usize, usize, usize, u64)> = Vec::new();
    let mut index: BTreeMap<(usize, usize, u64), usize> = BTreeMap::new();
    let mut sim_of = |j: usize, i: usize, algo: usize, bytes: u64| {
        *index.entry((j, algo, bytes)).or_insert_with(|| {
            sims.push((j, i, algo, bytes));
            sims.len() - 1
        })
    };
    let mut plans = Vec::new();
    // NVLS Tree's [`loop_floor`] of each (job, algorithm, period), once.
    let mut floors: BTreeMap<(usize, usize, u64), Option<f64>> = BTreeMap::new();
    for (j, job) in jobs.iter().enumerate() {
        let e = scenarios[j].data.dtype.bytes() as u64;
        for (i, (algo, _)) in job.points.iter().enumerate() {
            let bytes = runs[j].samples[i].bytes;
            let period =
                scenarios[j].algorithms.get(*algo).and_then(|a| steady_period(a, job.ranks, e, &scenarios[j].topology));
            // NVLS Tree's pipeline fills over up to its window of loops, not 2.
            let from = if scenarios[j].algorithms[*algo].name == "nvls_tree" {
                crate::algos::nvls_tree::FILL_LOOPS
            } else {
                STEADY_FROM
            };
            let first = from + STEADY_CHECKS;
            // NVLS Tree's loops are counted only at its busiest side's pace, so only
            // where that pace is known (the ideal model); elsewhere it runs whole.
            let floor = match period {
                Some(l) if scenarios[j].algorithms[*algo].name == "nvls_tree" => {
                    Some(*floors.entry((j, *algo, l)).or_insert_with(|| loop_floor(&scenarios[j], *algo, job.ranks, l)))
                }
                _ => None,
            };
            plans.push(match (period, floor) {
                (_, Some(None)) => Plan::Direct(sim_of(j, i, *algo, bytes)),
                (Some(l), floor) if bytes.is_multiple_of(e) && bytes / l > first => {
                    let (loops, rest) = (bytes / l, bytes % l);
                    let sims = (from..=first).map(|k| sim_of(j, i, *algo, rest + k * l)).collect();
                    Plan::Steady { sims, more: loops - first, direct: (j, i, bytes), floor: floor.flatten() }
                }
                _ => Plan::Direct(sim_of(j, i, *algo, bytes)),
            });
        }
    }
    let run = |&(j, i, algo, bytes): &(usize, usize, usize, u64)| -> Result<f64, String> {
        let pt = Point { algo, ranks: jobs[j].ranks, bytes };
        let r = runner::run_point_observed(&scenarios[j], &pt, &mut NoObserver);
        match (&r.not_applicable, r.time_s) {
            (None, t) if t.is_finite() && t > 0.0 => Ok(t),
            (Some(why), _) => {
                Err(format!("{}:{}: {} cannot run here: {why}", runs[j].file, runs[j].samples[i].line, r.algorithm))
            }
            // One rank (or nothing to move) takes no time: there is nothing to fit to.
            (None, 0.0) => Err(format!(
                "{}:{}: {} takes no time on {} rank(s) at {bytes} bytes (nothing to move), so this row has nothing \
                 to fit; calibrate logs of 2 ranks or more",
                runs[j].file, runs[j].samples[i].line, r.algorithm, jobs[j].ranks
            )),
            _ => Err(format!(
                "{}:{}: {} did not run to the end: {}",
                runs[j].file,
                runs[j].samples[i].line,
                r.algorithm,
                r.failures.join("; ")
            )),
        }
    };
    // Every result first, then the first error in the log's order: rayon's collect into a
    // Result keeps whichever error a thread met first, another on every run.
    let times: Vec<f64> = sims.par_iter().map(run).collect::<Vec<_>>().into_iter().collect::<Result<_, _>>()?;
    // Points whose loops did not settle are simulated whole, in a second pass.
    let mut whole = Vec::new();
    let mut out: Vec<Option<f64>> = plans
        .iter()
        .map(|p| match p {
            Plan::Direct(k) => Some(times[*k]),
            Plan::Steady { sims, more, direct, floor } => {
                let t: Vec<f64> = sims.iter().map(|k| times[*k]).collect();
                let step = t[t.len() - 1] - t[t.len() - 2];
                let last = t[t.len() - 1];
                let same = |a: f64, b: f64| (a - b).abs() <= STEADY_TOLERANCE * last;
                // A step below the floor has provably not settled; one above it is paced
                // by something other than a resource, whose settling nothing here bounds.
                let settled = t.windows(2).all(|w| same(w[1] - w[0], step)) && floor.is_none_or(|b| same(step, b));
                if settled {
                    Some(last + *more as f64 * step)
                } else {
                    let (j, i, bytes) = *direct;
                    whole.push((j, i, jobs[j].points[i].0, bytes));
                    None
                }
            }
        })
        .collect();
    WHOLE.fetch_add(whole.len(), std::sync::atomic::Ordering::Relaxed);
    let rest: Vec<f64> = whole.par_iter().map(run).collect::<Vec<_>>().into_iter().collect::<Result<_, _>>()?;
    let mut rest = rest.into_iter();
    for t in &mut out {
        if t.is_none() {
            *t = rest.next();
        }
    }
    Ok(out.into_iter().map(|t| t.unwrap_or(f64::NAN)).collect())
}

/// Parameter vectors simulated (every logged point at one set of values) since the
/// process started, for `calibrate`'s progress line.
pub static EVALUATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Points of many loops simulated whole since the process started because their counted
/// loops did not hold (the steps differed, or NVLS Tree's step was not its busiest side's
/// time a loop): what the count saves is lost there, and the tests hold the count to
/// being used where it holds.
pub static WHOLE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct SimModel<'a> {
    machine: &'a Machine,
    /// What NCCL runs at each point, held for one round of the fit (see [`calibrate`]).
    jobs: &'a [Job],
    runs: &'a [Run],
    params: &'a [Param],
    measured: Vec<f64>,
    /// Residuals of every parameter vector simulated so far, by the bits of its values.
    /// The optimiser asks again for points it has seen: it puts back the last accepted
    /// values after a rejected step, the fit evaluates the final values once more for
    /// its statistics, and their Jacobian repeats the optimiser's last one where no step
    /// was accepted since. The simulation is deterministic, so a repeat is looked up.
    seen: std::sync::Mutex<BTreeMap<Vec<u64>, Vec<f64>>>,
    /// Parameter vectors simulated (not looked up).
    simulated: std::sync::atomic::AtomicUsize,
}

impl<'a> SimModel<'a> {
    fn new(machine: &'a Machine, jobs: &'a [Job], runs: &'a [Run], params: &'a [Param], measured: &[f64]) -> Self {
        SimModel {
            machine,
            jobs,
            runs,
            params,
            measured: measured.to_vec(),
            seen: Default::default(),
            simulated: Default::default(),
        }
    }

    /// Parameter vectors simulated so far.
    fn simulated(&self) -> usize {
        self.simulated.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl fit::Model for SimModel<'_> {
    fn eval(&self, thetas: &[Vec<f64>]) -> Vec<Result<Vec<f64>, String>> {
        let key = |t: &Vec<f64>| t.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        let known: Vec<Option<Vec<f64>>> = {
            let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            thetas.iter().map(|t| seen.get(&key(t)).cloned()).collect()
        };
        // Each trial's points in parallel; trials one after another keep the pool busy
        // and the results in order.
        let out: Vec<Result<Vec<f64>, String>> = thetas
            .par_iter()
            .zip(known)
            .map(|(t, known)| {
                if let Some(r) = known {
                    return Ok(r);
                }
                self.simulated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                EVALUATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let v: Vec<f64> = t.iter().map(|x| x.exp()).collect();
                let sim = simulate(self.machine, self.jobs, self.runs, self.params, &v)?;
                Ok(sim.iter().zip(&self.measured).map(|(s, m)| s / m - 1.0).collect())
            })
            .collect();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        for (t, r) in thetas.iter().zip(&out) {
            if let Ok(r) = r {
                seen.entry(key(t)).or_insert_with(|| r.clone());
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// The result

/// A fitted parameter.
#[derive(Clone, Debug, Serialize)]
pub struct Fitted {
    /// Dotted path.
    pub path: String,
    /// Time, bandwidth or number.
    pub kind: Kind,
    /// Where it started (base units).
    pub start: f64,
    /// The fitted value (base units).
    pub value: f64,
    /// As written in the output file.
    pub text: String,
    /// One standard deviation of the value's logarithm, about the relative uncertainty
    /// where small (`null`: the logs do not determine it, or only to more than
    /// [`UNDETERMINED`] times either way).
    pub rel_uncertainty: Option<f64>,
    /// Whether it moved freely (false: held, nothing in the logs depends on it).
    pub fitted: bool,
    /// The lowest value the fit may give it (base units; [`bounds`]).
    pub lower: f64,
    /// The highest.
    pub upper: f64,
    /// `"upper"` or `"lower"` where the fitted value sits at that bound.
    pub at_bound: Option<String>,
    /// The prior's share of what is known of the value, 0 to 1 (`null`: no prior on it).
    pub prior_share: Option<f64>,
}

/// One point of a log, measured and simulated.
#[derive(Clone, Debug, Serialize)]
pub struct PointOut {
    /// S, bytes (nccl-tests' size).
    pub bytes: u64,
    /// Measured time, seconds.
    pub measured_s: f64,
    /// Simulated time with the fitted machine, seconds.
    pub simulated_s: f64,
    /// `simulated / measured - 1`.
    pub rel_err: f64,
    /// nccl-tests' bus bandwidth of the measured time, bytes per second.
    #[serde(rename = "measured_busbw_Bps")]
    pub measured_busbw: f64,
    /// The same of the simulated time.
    #[serde(rename = "simulated_busbw_Bps")]
    pub simulated_busbw: f64,
    /// Our algorithm that simulated it.
    pub algorithm: String,
    /// What NCCL (or MPI) ran there, and how that was decided.
    pub ran: String,
    /// The log line.
    pub line: usize,
}

/// One log run's errors.
#[derive(Clone, Debug, Serialize)]
pub struct LogOut {
    /// Short name, unique among the logs of its set ([`Run::label`]).
    pub label: String,
    /// The file.
    pub file: String,
    /// `fit` or `hold-out`.
    pub set: String,
    /// The collective.
    pub collective: Collective,
    /// P.
    pub ranks: usize,
    /// Nodes, where known.
    pub nodes: Option<usize>,
    /// GPUs per node, where known.
    pub gpus_per_node: Option<usize>,
    /// The NCCL version the log printed.
    pub nccl_version: Option<String>,
    /// The NCCL settings the log showed.
    pub env: BTreeMap<String, String>,
    /// Mean of |relative error| over the points.
    pub mean_rel_err: f64,
    /// Largest |relative error|.
    pub max_rel_err: f64,
    /// Every point.
    pub points: Vec<PointOut>,
}

/// A pair of parameters the logs cannot tell apart.
#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    /// One parameter.
    pub a: String,
    /// The other.
    pub b: String,
    /// Their correlation in the fit.
    pub correlation: f64,
}

/// Everything `calibrate` found.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The machine file.
    pub machine: String,
    /// Every parameter.
    pub parameters: Vec<Fitted>,
    /// What the logs cannot tell, and what would tell it.
    pub warnings: Vec<String>,
    /// Pairs correlated beyond 0.95.
    pub degenerate_pairs: Vec<Pair>,
    /// Largest over smallest singular value of the Jacobian (log space, fitted columns).
    pub condition_number: f64,
    /// Residual standard deviation of the fit (relative).
    pub residual_rms: f64,
    /// Points fitted.
    pub points_fitted: usize,
    /// Model evaluations: the sets of values simulated (each simulates every point; a set
    /// seen before is looked up, not simulated or counted again).
    pub evaluations: usize,
    /// Why the optimiser stopped.
    pub termination: String,
    /// Every log run, fitted ones first.
    pub logs: Vec<LogOut>,
    /// The machine file with the fitted values (what `--output` writes).
    #[serde(skip)]
    pub fitted_yaml: String,
    /// The simulator's own run time, seconds.
    pub wall_time_s: f64,
}

/// The warning for a machine with `noise:` or `repeat:`, which the fit leaves out
/// (`job_for`): the logs give one time per size (nccl-tests' and OSU's averages over
/// their iterations), so the fit is of the noise-free machine to those means, and a noisy
/// model's mean over seeds would be a second, random, layer on them. The keys stay in the
/// file `--output` writes, as every key the fit does not touch does.
pub fn noise_warning(machine: &Machine) -> Option<String> {
    let keys: Vec<&str> = ["noise", "repeat"].into_iter().filter(|k| machine.tree.get(k).is_some()).collect();
    if keys.is_empty() {
        return None;
    }
    let (them, are) =
        if keys.len() == 1 { (format!("`{}:`", keys[0]), "is") } else { ("`noise:` and `repeat:`".to_string(), "are") };
    Some(format!(
        "the machine's {them} {are} left out of the fit: calibrate fits the noise-free machine to the logs' times, \
         which are already means over their iterations. The file --output writes keeps {them} as written, so `run` \
         of it adds that noise on top of the fitted times; remove {them} from it to predict the logs' means."
    ))
}

/// Calibrate `machine` on `fit_runs`, and check it on `hold_out`.
pub fn calibrate(machine: &Machine, fit_runs: &[Run], hold_out: &[Run], opts: &Options) -> Result<Calibration, String> {
    let started = Instant::now();
    if fit_runs.is_empty() {
        return Err("no log to fit".into());
    }
    let collectives: Vec<Collective> = fit_runs.iter().map(|r| r.collective).collect();
    let reduces =
        collectives.iter().any(|c| matches!(c, Collective::Allreduce | Collective::ReduceScatter | Collective::Reduce));
    let copies = collectives.iter().any(|c| matches!(c, Collective::Allgather | Collective::Broadcast));
    let c_told = reduces && copies;
    let mut warnings: Vec<String> = noise_warning(machine).into_iter().collect();
    // --env fills in what a log does not print; where the log prints another value, the
    // log's is what ran, and the flag is not used for it: say so rather than drop it.
    for r in fit_runs.iter().chain(hold_out) {
        // OSU's runs are Open MPI's, which no NCCL setting steers: `--env` was dropped
        // for them without a word.
        if r.bench == Bench::Osu && !opts.env.is_empty() {
            let given: Vec<String> = opts.env.iter().map(|(k, v)| format!("--env {k}={v}")).collect();
            warnings.push(format!(
                "{}:{}: an OSU log is a run of Open MPI, which NCCL settings do not steer; {} {} for nccl-tests \
                 logs that print no such setting, and not used for this one",
                r.file,
                r.line,
                and_list(&given.iter().map(String::as_str).collect::<Vec<_>>()),
                if given.len() == 1 { "is" } else { "are" }
            ));
            continue;
        }
        for (k, v) in &opts.env {
            if let Some(logged) = r.env.get(k)
                && !r.env_given.contains(k)
                && logged != v
            {
                // The line that prints the setting, not the run's first (a data row's
                // header): `a.txt:13: the log prints NCCL_ALGO=Ring` named a line without it.
                let line = r.env_lines.get(k).copied().unwrap_or(r.line);
                warnings.push(format!(
                    "{}:{line}: the log prints {k}={logged}, which is what ran; --env {k}={v} is for logs that print \
                     no {k}, and is not used for this one",
                    r.file
                ));
            }
        }
    }
    // A log's other NCCL settings (NCCL_MIN_NCHANNELS, NCCL_BUFFSIZE, ...) were kept in the
    // output's env without a word, as if they had been read.
    let mut told = std::collections::BTreeSet::new();
    for r in fit_runs.iter().chain(hold_out) {
        if let Some(w) = unmodelled_env(r)
            && told.insert(w.clone())
        {
            warnings.push(w);
        }
    }
    // Likewise --ranks and --gpus-per-node, which fill in what a log's device list does not
    // say: where the list says otherwise, it is what ran (`--ranks 2` beside a list of 8 ranks
    // was dropped without a word).
    for r in fit_runs.iter().chain(hold_out) {
        for (flag, given, logged) in
            [("--ranks", opts.ranks, r.ranks), ("--gpus-per-node", opts.gpus_per_node, r.gpus_per_node)]
        {
            if let (Some(v), Some(logged)) = (given, logged)
                && v != logged
            {
                let what = if flag == "--ranks" { "ranks" } else { "GPUs per node" };
                warnings.push(format!(
                    "{}:{}: the log's device list says {logged} {what}, which is what ran; {flag} {v} is for logs \
                     that do not say, and is not used for this one",
                    r.file, r.line
                ));
            }
        }
    }
    let paths = match &opts.fit {
        Some(p) => p.clone(),
        None => {
            if !c_told {
                warnings.push(
                    "compute.cost_per_byte (C) is kept at the file's value and not fitted: with only reducing \
                     collectives in the logs, B and C cannot be told apart (only 1/B + C/2 is seen). Logs of \
                     all_gather_perf (which reduces nothing) beside reduce_scatter_perf or all_reduce_perf on the \
                     same machine would separate them."
                        .to_string(),
                );
            }
            let mut paths = default_paths(&machine.tree, c_told);
            // NCCL's ring, all it runs on one or two nodes, gives a GPU one connection
            // across nodes: such logs see the proxy only added to the network alpha.
            let trees = fit_runs.iter().any(|r| r.nodes.is_some_and(|n| n >= 3));
            if !trees && paths.iter().any(|p| key_name(p) == "proxy") {
                paths.retain(|p| key_name(p) != "proxy");
                warnings.push(
                    "topology.inter.proxy is kept at the file's value and not fitted: on one and two nodes NCCL \
                     runs its ring, whose GPUs have one connection across nodes, so these logs see the proxy only \
                     added to inter.alpha. A log of 3 or more nodes (small sizes, where NCCL's tree runs) would \
                     separate them."
                        .to_string(),
                );
            }
            paths
        }
    };
    if paths.is_empty() {
        return Err(format!(
            "{}: nothing to fit: no alpha, bandwidth or launch under topology; name keys with --fit",
            machine.file
        ));
    }
    // An empty path (`--fit a,` or `a,,b`) or one with blanks around it names no key:
    // say so, not "' topology' is an unknown key" of a line the file does not have.
    if let Some(p) = paths.iter().find(|p| p.is_empty() || p.trim() != p.as_str() || p.split('.').any(str::is_empty)) {
        return Err(format!(
            "--fit: '{p}' is not a dotted path of the machine file: give keys joined by dots, such as \
             topology.intra.bandwidth, separated by commas without spaces or empty entries"
        ));
    }
    let params: Vec<Param> = paths
        .iter()
        .map(|p| Param::of(&machine.tree, p))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--fit: {e}"))?;
    // Every path must be one the scenario parser accepts.
    parse_tree(&machine.tree, &machine.file, &params, &params.iter().map(|p| p.start).collect::<Vec<_>>()).map_err(
        |e| {
            let added: Vec<&str> = paths.iter().filter(|p| machine.tree.get(p).is_none()).map(String::as_str).collect();
            let which = if added.is_empty() {
                String::new()
            } else {
                format!(
                    " (--fit added {}, which {} not in {})",
                    added.join(", "),
                    if added.len() == 1 { "is" } else { "are" },
                    machine.file
                )
            };
            format!("--fit: the machine with the fitted keys set is not a valid scenario{which}: {e}")
        },
    )?;

    // Every run must shape the machine before any trial.
    fit_runs.iter().chain(hold_out).try_for_each(|r| job_for(machine, r).map(drop))?;
    let measured: Vec<f64> = fit_runs.iter().flat_map(|r| r.samples.iter().map(|s| s.time_s)).collect();
    let bound: Vec<Bounds> = params.iter().map(bounds).collect();
    if let Some(w) = opts.prior_width
        && !(w > 1.0 && w.is_finite())
    {
        return Err(format!("--prior-width must be a factor above 1 (or off), not {w}"));
    }
    // The prior draws each value the file gives toward it (within its bounds).
    let limits = fit::Limits {
        lo: bound.iter().map(|b| b.lo.ln()).collect(),
        hi: bound.iter().map(|b| b.hi.ln()).collect(),
        prior: params
            .iter()
            .zip(&bound)
            .map(|(p, b)| match opts.prior_width {
                Some(w) if p.from_file => (p.start.clamp(b.lo, b.hi).ln(), PRIOR_POINT / w.ln()),
                _ => (0.0, 0.0),
            })
            .collect(),
    };
    let start: Vec<f64> = params.iter().zip(&bound).map(|(p, b)| p.start.clamp(b.lo, b.hi).ln()).collect();
    let starts: Vec<f64> = start.iter().map(|t| t.exp()).collect();
    let mut jobs = jobs_at(machine, fit_runs, &params, &starts)?;
    let model = SimModel::new(machine, &jobs, fit_runs, &params, &measured);
    // Parameters nothing depends on are held. A derivative at the start is not enough
    // to tell: a link that is not the bottleneck there moves nothing until the others
    // have moved, so each value is tried ten times larger and smaller instead.
    let mut trials = vec![start.clone()];
    for k in 0..params.len() {
        for f in [10f64.ln(), -(10f64.ln())] {
            let mut t = start.clone();
            t[k] = (t[k] + f).clamp(limits.lo[k], limits.hi[k]);
            trials.push(t);
        }
    }
    let probe: Vec<Vec<f64>> = fit::Model::eval(&model, &trials).into_iter().collect::<Result<_, _>>()?;
    let probe_evaluations = model.simulated();
    // The first round starts from these simulations (the same picks, the start among them).
    let mut carried = Some(model.seen.into_inner().unwrap_or_else(|e| e.into_inner()));
    let frozen: Vec<bool> =
        (0..params.len()).map(|k| probe[1 + 2 * k] == probe[0] && probe[2 + 2 * k] == probe[0]).collect();
    for (p, f) in params.iter().zip(&frozen) {
        if *f {
            // Held where the file has it: a 0 stays 0, not the start the fit guessed.
            let kept = match (p.from_file, p.in_file) {
                (true, _) => format!("is kept at {}", yaml_text(&p.text(p.start))),
                (false, true) => "is kept at the file's 0".to_string(),
                (false, false) => "is left out (the file does not have it)".to_string(),
            };
            warnings.push(format!(
                "{} {kept}: no logged point depends on it. {}",
                p.path,
                hint_unused(&p.path, machine, fit_runs, &jobs)
            ));
        }
    }
    // NCCL picks the protocol from the machine's bandwidths, so the picks move with the
    // values. Re-picking inside every trial makes the residuals jump where a point
    // switches protocol and the optimiser stalls there; instead each round fits with the
    // picks held, then picks again at the fitted values, until the picks hold.
    let mut theta = start.clone();
    let mut evaluations = 0;
    let mut rounds = 0;
    let outcome = loop {
        rounds += 1;
        let mut model = SimModel::new(machine, &jobs, fit_runs, &params, &measured);
        if let Some(seen) = carried.take() {
            model.seen = std::sync::Mutex::new(seen);
        }
        let out = fit::fit(&model, &theta, &frozen, opts.patience.max(1), &limits)?;
        evaluations += model.simulated();
        let v: Vec<f64> = out.theta.iter().map(|t| t.exp()).collect();
        let next = match opts.picks {
            Picks::Fitted => jobs_at(machine, fit_runs, &params, &v)?,
            Picks::File => jobs.clone(),
        };
        let held = next.iter().zip(&jobs).all(|(a, b)| a.points == b.points);
        jobs = next;
        theta.clone_from(&out.theta);
        if held || opts.picks == Picks::File {
            break out;
        }
        if rounds == PICK_ROUNDS {
            warnings.push(format!(
                "NCCL's picks (algorithm, protocol) still changed after {PICK_ROUNDS} rounds of fitting with the \
                 picks held; the values are those of the last round, and the errors below use the picks at them"
            ));
            break out;
        }
    };
    let outcome = fit::Outcome { evaluations, ..outcome };
    let active: Vec<bool> = frozen.iter().map(|f| !f).collect();
    let st = fit::stats(&outcome, &active);
    // A held value the file gives as 0 stays 0 (nothing depends on it: the start the fit
    // took for the logarithm is no measurement).
    let values: Vec<f64> = outcome
        .theta
        .iter()
        .zip(&params)
        .zip(&frozen)
        .map(|((t, p), f)| if *f && !p.from_file && p.in_file { 0.0 } else { t.exp() })
        .collect();
    if !outcome.converged {
        warnings.push(format!(
            "the optimiser stopped before converging ({}); the values below are its last",
            outcome.termination
        ));
    }

    // Pairs the data cannot tell apart.
    let mut pairs = Vec::new();
    for a in 0..params.len() {
        for b in a + 1..params.len() {
            let r = st.correlation[(a, b)];
            if active[a] && active[b] && r.is_finite() && r.abs() > 0.95 {
                pairs.push(Pair { a: params[a].path.clone(), b: params[b].path.clone(), correlation: r });
                warnings.push(pair_warning(&params[a].path, &params[b].path, r));
            }
        }
    }
    if st.condition > 1e6 {
        let mut w: Vec<(usize, f64)> = st.weakest.iter().copied().enumerate().filter(|(_, v)| v.abs() > 0.2).collect();
        w.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
        let what = match w.as_slice() {
            [(k, _)] => format!(
                "no simulated time depends on {} at its fitted value {}, so the logs do not determine it",
                params[*k].path,
                yaml_text(&params[*k].text(values[*k]))
            ),
            _ => {
                let combo: Vec<String> = w.iter().map(|(k, v)| format!("{:+.2} ln {}", v, params[*k].path)).collect();
                format!("the logs do not see the combination {} at all", combo.join(" "))
            }
        };
        warnings.push(format!(
            "the fit is degenerate (condition number {}): {what}; values along it are where the optimiser \
             stopped, not measurements",
            condition_text(st.condition, 1)
        ));
    }
    let prior_note = |k: usize| match opts.prior_width {
        Some(w) if limits.prior[k].1 > 0.0 => format!(
            "; the prior (--prior-width {w}) holds it near the file's {} ({} with it)",
            yaml_text(&params[k].text(limits.prior[k].0.exp())),
            either_way(st.sigma[k])
        ),
        _ => String::new(),
    };
    for (k, p) in params.iter().enumerate() {
        if active[k] && st.sigma_logs[k].is_infinite() {
            warnings.push(format!(
                "{} is not determined by these logs (its uncertainty is unbounded){}",
                p.path,
                prior_note(k)
            ));
        } else if active[k] && st.sigma_logs[k] > UNDETERMINED.ln() {
            warnings.push(format!(
                "{} is not determined by these logs ({} at one standard deviation){}",
                p.path,
                either_way(st.sigma_logs[k]),
                prior_note(k)
            ));
        } else if active[k] && st.sigma_logs[k] > 0.5 {
            warnings.push(format!(
                "{} is poorly determined by these logs ({} at one standard deviation){}",
                p.path,
                either_way(st.sigma_logs[k]),
                prior_note(k)
            ));
        } else if active[k] && st.prior_share[k] > 0.5 {
            warnings.push(format!(
                "{} is set more by the prior than by the logs ({:.0}% of what is known of it){}",
                p.path,
                100.0 * st.prior_share[k],
                prior_note(k)
            ));
        }
    }
    let at_bound: Vec<Option<&'static str>> = (0..params.len())
        .map(|k| match limits.at_bound(k, outcome.theta[k]) {
            _ if !active[k] => None,
            Some(true) => Some("upper"),
            Some(false) => Some("lower"),
            None => None,
        })
        .collect();
    for (k, p) in params.iter().enumerate() {
        if let Some(side) = at_bound[k] {
            let (v, why) = if side == "upper" {
                (bound[k].hi, bound[k].why.clone())
            } else {
                (bound[k].lo, format!("{}x below its start", fit::MAX_FACTOR))
            };
            warnings.push(format!(
                "{} sits at its {side} bound, {} ({why}): the logs push it further, so the model lacks something \
                 they show (or the file's value is off), and the values beside it make up for it",
                p.path,
                yaml_text(&p.text(v))
            ));
        }
    }

    let fitted: Vec<Fitted> = params
        .iter()
        .enumerate()
        .map(|(k, p)| Fitted {
            path: p.path.clone(),
            kind: p.kind,
            start: p.start,
            value: values[k],
            text: if active[k] || p.from_file || p.in_file {
                yaml_text(&p.text(values[k]))
            } else {
                "left out".to_string()
            },
            rel_uncertainty: (active[k] && st.sigma[k] <= UNDETERMINED.ln()).then(|| st.sigma[k]),
            fitted: active[k],
            lower: bound[k].lo,
            upper: bound[k].hi,
            at_bound: at_bound[k].map(str::to_string),
            prior_share: (active[k] && limits.prior[k].1 > 0.0).then(|| st.prior_share[k]),
        })
        .collect();

    // Errors per log, fitted and held out.
    let mut logs = Vec::new();
    let pick_at = if opts.picks == Picks::File { &starts } else { &values };
    let jobs = jobs_at(machine, fit_runs, &params, pick_at)?;
    let sim_fit = simulate(machine, &jobs, fit_runs, &params, &values)?;
    push_logs(&mut logs, fit_runs, &jobs, &sim_fit, "fit");
    if !hold_out.is_empty() {
        let hjobs = jobs_at(machine, hold_out, &params, pick_at)?;
        let sim = simulate(machine, &hjobs, hold_out, &params, &values)?;
        push_logs(&mut logs, hold_out, &hjobs, &sim, "hold-out");
    }
    let residual_rms = st.variance.sqrt();
    let fitted_yaml = fitted_file(machine, &params, &values, &fitted, &logs);
    Ok(Calibration {
        machine: machine.file.clone(),
        parameters: fitted,
        warnings,
        degenerate_pairs: pairs,
        condition_number: st.condition,
        residual_rms,
        points_fitted: outcome.residuals.len(),
        evaluations: outcome.evaluations + probe_evaluations,
        termination: outcome.termination,
        logs,
        fitted_yaml,
        wall_time_s: started.elapsed().as_secs_f64(),
    })
}

fn push_logs(out: &mut Vec<LogOut>, runs: &[Run], jobs: &[Job], sim: &[f64], set: &str) {
    let mut i = 0;
    for (r, j) in runs.iter().zip(jobs) {
        let p = r.ranks.unwrap_or(1);
        let f = busbw_factor(r.collective, p);
        let algos: Vec<String> = match j.tree.get("algorithms") {
            Some(Yaml::Seq(v)) => v
                .iter()
                .map(|a| match a {
                    Yaml::Map(m) => {
                        let name = m.iter().find(|(k, _)| k == "name").map(|(_, v)| yaml_text(v)).unwrap_or_default();
                        let ps: Vec<String> = m
                            .iter()
                            .filter(|(k, _)| k != "name")
                            .map(|(k, v)| format!("{k}={}", yaml_text(v)))
                            .collect();
                        if ps.is_empty() { name } else { format!("{name}({})", ps.join(", ")) }
                    }
                    other => yaml_text(other),
                })
                .collect(),
            _ => Vec::new(),
        };
        let points: Vec<PointOut> = r
            .samples
            .iter()
            .zip(&j.points)
            .map(|(s, (k, how))| {
                let t = sim[i];
                i += 1;
                PointOut {
                    bytes: s.bytes,
                    measured_s: s.time_s,
                    simulated_s: t,
                    rel_err: t / s.time_s - 1.0,
                    measured_busbw: s.bytes as f64 / s.time_s * f,
                    simulated_busbw: s.bytes as f64 / t * f,
                    algorithm: algos.get(*k).cloned().unwrap_or_default(),
                    ran: how.clone(),
                    line: s.line,
                }
            })
            .collect();
        let n = points.len().max(1) as f64;
        out.push(LogOut {
            label: r.label(runs),
            file: r.file.clone(),
            set: set.to_string(),
            collective: r.collective,
            ranks: p,
            nodes: r.nodes,
            gpus_per_node: r.gpus_per_node,
            nccl_version: r.nccl_version.clone(),
            env: r.env.clone(),
            mean_rel_err: points.iter().map(|q| q.rel_err.abs()).sum::<f64>() / n,
            max_rel_err: points.iter().map(|q| q.rel_err.abs()).fold(0.0, f64::max),
            points,
        });
    }
}

/// A scalar node as text (`1us`, `{ name: ring }` for a map).
fn yaml_text(y: &Yaml) -> String {
    match y {
        Yaml::Map(_) | Yaml::Seq(_) => y.to_text(&BTreeMap::new()).trim().to_string(),
        other => Yaml::Map(vec![("v".into(), other.clone())])
            .to_text(&BTreeMap::new())
            .trim_start_matches("v: ")
            .trim()
            .to_string(),
    }
}

/// A factor of uncertainty (one standard deviation, either way) beyond which a value is
/// reported as undetermined: it could be a thousandth of what is printed, or a thousand
/// times it, and the digits of the factor itself mean nothing (e^157 printed 68 of them).
pub const UNDETERMINED: f64 = 1000.0;

/// One standard deviation `sigma` of a log-value as a factor in words: `about x3.2 either
/// way`, or past [`UNDETERMINED`] `more than x1000 either way: undetermined`.
pub fn either_way(sigma: f64) -> String {
    if sigma.is_finite() && sigma <= UNDETERMINED.ln() {
        format!("about x{:.1} either way", sigma.exp())
    } else {
        format!("more than x{UNDETERMINED} either way: undetermined")
    }
}

/// A determined value's uncertainty, short: `+-1.23%` up to 50%, beyond which a
/// relative figure misleads (a value may be a third of what is printed, not -50%), `x3.2`
/// (the factor either way).
fn uncertainty(sigma: f64) -> String {
    if sigma <= 0.5 { format!("+-{:.2}%", 100.0 * sigma) } else { format!("x{:.1}", sigma.exp()) }
}

/// NCCL settings that only say where NCCL logs or which interface it opens, and change no
/// time: a log's are not warned about.
const ENV_INERT: [&str; 5] =
    ["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX"];

/// The warning for a log's own NCCL settings calibrate does not model (all but
/// [`ENV_READ`] and [`ENV_INERT`]): it simulates what the machine file describes, so a
/// setting that changed what NCCL ran (channels, buffer sizes, the path to the NIC) is
/// folded into the fitted values. `--env` refuses such names; a log's are kept in the
/// output's `env`, as the log printed them.
fn unmodelled_env(r: &Run) -> Option<String> {
    let others: Vec<(&String, &String, Option<usize>)> = r
        .env
        .iter()
        .filter(|(k, _)| {
            !r.env_given.contains(*k) && !ENV_READ.contains(&k.as_str()) && !ENV_INERT.contains(&k.as_str())
        })
        .map(|(k, v)| (k, v, r.env_lines.get(k).copied()))
        .collect();
    if others.is_empty() {
        return None;
    }
    let line = others.iter().filter_map(|o| o.2).min().unwrap_or(r.line);
    let named: Vec<String> = others
        .iter()
        .map(|(k, v, l)| match l {
            Some(l) if *l != line => format!("{k}={v} (line {l})"),
            _ => format!("{k}={v}"),
        })
        .collect();
    let nic = if r.env.contains_key("NCCL_NET_GDR_LEVEL") {
        "; the path from a GPU to its NIC is the machine file's topology.inter.nic_path (pix, pxb, phb or sys)"
    } else {
        ""
    };
    Some(
        crate::units::escape_controls(&format!(
            "{}:{line}: the log sets {}, which calibrate does not model: it reads {} only and simulates what the \
             machine file describes, so where a setting changed what NCCL ran (its channels, buffers or paths), \
             the fitted values absorb it{nic}",
            r.file,
            and_list(&named.iter().map(String::as_str).collect::<Vec<_>>()),
            ENV_READ.join(" and ")
        ))
        .into_owned(),
    )
}

/// Whether a machine key is the network's (across nodes): a key under a cluster's
/// `inter` or its fabric's `uplink`, or of a two-level hierarchy's outer level
/// (`levels.1`; calibrate shapes at most two). Read by whole components of the dotted
/// path: `hint_unused` and `pair_warning` each had a copy, one matching `inter` anywhere
/// in the text, the other `.inter.`.
fn network_key(path: &str) -> bool {
    let parts: Vec<&str> = path.split('.').collect();
    parts.iter().any(|p| *p == "inter" || *p == "uplink") || parts.windows(2).any(|w| w == ["levels", "1"])
}

/// What would exercise a value no logged point depends on, reasoned from what the points
/// ran (`jobs`, one per run of `runs`, at the start values): a value of the network with
/// no run across nodes wants a multi-node log; a protocol's value (`alpha.ll128`,
/// `launch.ll`, ...) wants a run of that protocol, and the hint says why none ran it (in
/// its scope: across nodes for the network's values): the `NCCL_PROTO` a log ran with,
/// Open MPI's algorithms (OSU), or NCCL's picks, and among those the `nic_path` that
/// turns LL128 off across nodes. It said "a run across nodes exercises it" beside a
/// two-node log whose points ran no LL128 across nodes.
fn hint_unused(path: &str, machine: &Machine, runs: &[Run], jobs: &[Job]) -> String {
    let network = network_key(path);
    let proto = path.rsplit('.').next().and_then(topology::Proto::from_name);
    let cluster = jobs.iter().any(|j| j.nodes.is_some());
    // The runs in the value's scope: across nodes for the network's values.
    let scope: Vec<(&Run, &Job)> =
        runs.iter().zip(jobs).filter(|(_, j)| !network || j.nodes.is_some_and(|n| n > 1)).collect();
    if network && (scope.is_empty() || !cluster) {
        return "A run across nodes (a multi-node log) exercises it.".to_string();
    }
    let Some(p) = proto.filter(|_| cluster) else {
        return if path.ends_with(".ll") || path.ends_with(".ll128") {
            "Small sizes (nccl-tests -b 8), where NCCL picks that protocol, exercise it.".to_string()
        } else {
            "Add a log whose runs use it.".to_string()
        };
    };
    let ran = |j: &Job| j.protocols.iter().map(|q| q.unwrap_or(topology::Proto::Simple)).collect::<Vec<_>>();
    let name = nccl_name(p);
    let across = if network { " across nodes" } else { "" };
    if scope.iter().any(|(_, j)| ran(j).contains(&p)) {
        return format!(
            "Logged points ran {name}{across}, but none changed when it moved tenfold up or down: other costs bound \
             them. Add a log whose runs use it."
        );
    }
    // Why none ran it: a log's NCCL_PROTO that leaves it out, Open MPI (OSU), or NCCL's picks.
    let nccl_runs = || scope.iter().filter(|(r, _)| r.bench == Bench::NcclTests);
    fn leaves_out(r: &Run, p: topology::Proto) -> Option<&String> {
        r.env.get("NCCL_PROTO").filter(|v| !allowed(Some(v), &PROTOCOLS).contains(&p.name()))
    }
    let forcing: std::collections::BTreeSet<String> = nccl_runs()
        .filter_map(|(r, _)| {
            let from = if r.env_given.contains("NCCL_PROTO") { "(--env)" } else { "(log)" };
            Some(format!("NCCL_PROTO={} {from}", leaves_out(r, p)?))
        })
        .collect();
    let mut why = Vec::new();
    if !forcing.is_empty() {
        why.push(format!("{} left it out", forcing.iter().map(String::as_str).collect::<Vec<_>>().join(", ")));
    }
    if scope.iter().any(|(r, _)| r.bench == Bench::Osu) {
        why.push("OSU's runs are Open MPI's, simulated as Simple".to_string());
    }
    let picking: Vec<&(&Run, &Job)> = nccl_runs().filter(|(r, _)| leaves_out(r, p).is_none()).collect();
    let picked: Vec<&str> = topology::Proto::ALL
        .into_iter()
        .filter(|q| picking.iter().any(|(_, j)| ran(j).contains(q)))
        .map(nccl_name)
        .collect();
    // NCCL keeps LL128 off across nodes where the GPU-NIC path crosses a CPU, unless an
    // NCCL_PROTO names it.
    let nic = (network
        && p == topology::Proto::Ll128
        && picking.iter().any(|(r, j)| j.nic_through_cpu && !r.env.contains_key("NCCL_PROTO")))
    .then(|| match &machine.scenario.topology {
        topology::spec::TopologySpec::Cluster(c) => {
            topology::NicPath::NAMES.iter().find(|(_, v)| *v == c.inter.nic_path).map_or("", |(n, _)| n)
        }
        _ => "",
    });
    if !picked.is_empty() {
        let because = match nic {
            Some(n) => format!(
                " (with topology.inter.nic_path: {n} the path to the NIC crosses a CPU, where NCCL leaves LL128 \
                 off across nodes)"
            ),
            None => String::new(),
        };
        why.push(format!("NCCL's picks ran {} at every logged size{across}{because}", and_list(&picked)));
    }
    let other = if nic.is_some() {
        ", or a log of a machine whose NICs are at pxb or closer,"
    } else if picked.is_empty() {
        ""
    } else {
        match p {
            topology::Proto::Ll => ", or one from small sizes (nccl-tests -b 8), where NCCL picks LL,",
            topology::Proto::Simple => ", or one of large sizes, where NCCL picks Simple,",
            topology::Proto::Ll128 => "",
        }
    };
    format!(
        "No logged point runs {name}{across}: {}. A log run with NCCL_PROTO={name}{other} exercises it.",
        why.join("; ")
    )
}

/// A protocol as `NCCL_PROTO` names it.
fn nccl_name(p: topology::Proto) -> &'static str {
    match p {
        topology::Proto::Ll => "LL",
        topology::Proto::Ll128 => "LL128",
        topology::Proto::Simple => "Simple",
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A pair the logs cannot tell apart, in words, with the measurement that separates them.
pub fn pair_warning(a: &str, b: &str, r: f64) -> String {
    let (ka, kb) = (key_name(a), key_name(b));
    let has = |k: &str| ka == k || kb == k;
    let proto = |p: &str| p.ends_with(".ll") || p.ends_with(".ll128") || p.ends_with(".simple");
    let advice = if has("proxy") && (has("alpha") || has("launch")) {
        "network proxy and latency: a GPU of NCCL's ring has one connection across nodes, so on rings alone \
         (one or two nodes) the proxy's time per connection adds to the network hop's alpha as one constant. \
         A run on 3 or more nodes, where NCCL's tree gives a GPU several connections across nodes (small \
         sizes of a 4-node log), separates them; without one, hold inter.proxy at a value of your own."
            .to_string()
    } else if has("bandwidth") && has("cost_per_byte") {
        "B and C: a ring allreduce sees only 1/B + C/2. Logs of all_gather_perf (no reduction) beside \
         reduce_scatter_perf on the same machine separate them."
            .to_string()
    } else if has("launch") && has("alpha") {
        "start-up and per-step latency: at one rank count every run takes the same number of steps, so the two \
         add up to one constant. A run at another rank count (another number of GPUs or nodes) separates them."
            .to_string()
    } else if proto(a) && proto(b) {
        "per-protocol latencies: they show only at small sizes, where each protocol is picked. Logs from 8 B \
         (nccl-tests -b 8 -e 8G -f 2), or runs forced with NCCL_PROTO=LL / LL128 / Simple, separate them."
            .to_string()
    } else if has("alpha") && has("bandwidth") {
        "latency and bandwidth: the logs lack either small sizes (latency alone) or large ones (bandwidth alone). \
         A log from 8 B to at least 1 GiB separates them."
            .to_string()
    } else if has("efficiency") || has("channel_bandwidth") {
        "a protocol's share of the bandwidth (or a channel's rate) and the bandwidth it scales: a log of that \
         protocol alone sees only their product. A run of another protocol over the same links (NCCL_PROTO=Simple) \
         separates them."
            .to_string()
    } else if a.contains("socket_link") || b.contains("socket_link") {
        "no logged run crosses one without the other: every logged message between CPUs also pays the pair's \
         own values. A run of GPUs under one CPU (a 2-GPU log on GPUs of one socket) beside one across them \
         separates them."
            .to_string()
    } else {
        // Which log would separate them depends on where each value sits: the advice of a
        // single-node log is true only of a pair across the node's edge.
        let intra = |p: &str| {
            let parts: Vec<&str> = p.split('.').collect();
            parts.contains(&"intra") || parts.windows(2).any(|w| w == ["levels", "0"])
        };
        let across = (network_key(a) && intra(b)) || (intra(a) && network_key(b));
        if across {
            "no logged run uses one without the other. A run that exercises only one of them (a single-node log for \
             the intra-node values, one GPU per node for the inter-node ones) separates them."
                .to_string()
        } else {
            "no logged run uses one without the other. A run that exercises only one of them separates them."
                .to_string()
        }
    };
    format!("{a} and {b} cannot be told apart by these logs (correlation {r:+.3}): {advice}")
}

/// The machine file with the fitted values, its own shape kept, with comments.
fn fitted_file(m: &Machine, params: &[Param], values: &[f64], fitted: &[Fitted], logs: &[LogOut]) -> String {
    let mut tree = m.tree.clone();
    let mut comments = BTreeMap::new();
    let mut edits = BTreeMap::new();
    for ((p, v), f) in params.iter().zip(values).zip(fitted) {
        // A held key the file does not have is not added; a held 0 is written back as the
        // file has it.
        if !f.fitted && !p.from_file {
            if p.in_file {
                comments.insert(p.path.clone(), "held: no log uses it".to_string());
            }
            continue;
        }
        // The path was checked against the tree before the fit.
        let _ = tree.set(&p.path, p.text(*v));
        edits.insert(p.path.clone(), p.text(*v));
        let u = match f.rel_uncertainty {
            Some(s) if f.fitted && !note(f).is_empty() => format!("fitted, {}, {}", uncertainty(s), note(f)),
            Some(s) if f.fitted => format!("fitted, {}", uncertainty(s)),
            _ if f.fitted => "fitted, undetermined".to_string(),
            _ => "held: no log uses it".to_string(),
        };
        comments.insert(p.path.clone(), u);
    }
    let mut head = format!("# Fitted by allreduce-sim calibrate from {} on these logs:\n", in_comment(&m.file));
    for l in logs {
        head.push_str(&format!(
            "#   {} ({}, P = {}): {} mean error {:.1}%, max {:.1}%\n",
            in_comment(&l.label),
            l.collective,
            l.ranks,
            l.set,
            100.0 * l.mean_rel_err,
            100.0 * l.max_rel_err
        ));
    }
    head.push_str(CHANGE_THE_SHAPE);
    // The file as written, with its own comments, where every value changed stands in it
    // once; otherwise (a key calibrate adds, an alias) the tree written afresh.
    // A byte-order mark belongs at the start of the file, which is now the head's: kept
    // before the body it would stand mid-file, where YAML reads it as part of a key.
    let text = m.text.strip_prefix('\u{feff}').unwrap_or(&m.text);
    let body = edit_text(without_head(text), &edits, &comments).unwrap_or_else(|| tree.to_text(&comments));
    head + &body
}

/// A file's name or a log's label as a YAML comment can hold it: escaped as on the
/// terminal, the line feed too. A name with a line break (`x\ry.txt`, one that YAML 1.1
/// readers break at, U+0085 or U+2028) ended the comment mid-name, and the rest of the
/// name was read as a key of the machine file.
fn in_comment(name: &str) -> String {
    crate::units::escape_controls(name).replace('\n', "\\n")
}

/// The last line of the head [`fitted_file`] writes.
const CHANGE_THE_SHAPE: &str =
    "# Change the shape (ranks, nodes, gpus_per_node, levels' sizes) and sizes to predict other runs.\n";

/// A machine file without the head an earlier `calibrate --output` wrote, so a calibrated
/// file calibrated again gets one head, not two.
fn without_head(text: &str) -> &str {
    if !text.starts_with("# Fitted by allreduce-sim calibrate from ") {
        return text;
    }
    // Found without its line end: a head kept in a file whose lines end in `\r\n` (an
    // editor's) is the same head, and was left under the new one.
    let last = CHANGE_THE_SHAPE.trim_end_matches('\n');
    match text.find(last) {
        Some(i) => {
            let rest = &text[i + last.len()..];
            rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix(['\n', '\r'])).unwrap_or(rest)
        }
        None => text,
    }
}

/// What constrains a fitted value besides the logs, in a few words: its bound, or the
/// prior where it gives a tenth or more of what is known of it.
fn note(p: &Fitted) -> String {
    match (&p.at_bound, p.prior_share) {
        (Some(side), _) => format!("at {side} bound"),
        (None, Some(s)) if s >= 0.1 => format!("prior {:.0}%", 100.0 * s),
        _ => String::new(),
    }
}

/// A condition number for people: `1.234e7` to `digits` decimals, or `unbounded` where
/// some combination of the values changes no simulated time at all (a singular fit,
/// whose ratio of extreme sensitivities is infinite: not a figure to print).
fn condition_text(c: f64, digits: usize) -> String {
    if c.is_finite() { format!("{c:.digits$e}") } else { "unbounded".to_string() }
}

/// The table `calibrate` prints.
pub fn table(c: &Calibration) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "calibrate {}: {} points fitted, {} evaluations, residual rms {:.2}%, condition number {} ({})\n\n",
        c.machine,
        c.points_fitted,
        c.evaluations,
        100.0 * c.residual_rms,
        condition_text(c.condition_number, 3),
        c.termination
    ));
    let w = c.parameters.iter().map(|p| p.path.len()).max().unwrap_or(9).max(9);
    out.push_str(&format!("{:<w$}  {:>14}  {:>14}  {:>12}  note\n", "parameter", "start", "fitted", "uncertainty"));
    for p in &c.parameters {
        let start = yaml_text(
            &Param { path: p.path.clone(), kind: p.kind, start: p.start, from_file: true, in_file: true }.text(p.start),
        );
        let u = match (p.fitted, p.rel_uncertainty) {
            (false, _) => "held".to_string(),
            (true, Some(s)) => uncertainty(s),
            (true, None) => "undetermined".to_string(),
        };
        out.push_str(format!("{:<w$}  {:>14}  {:>14}  {:>12}  {}", p.path, start, p.text, u, note(p)).trim_end());
        out.push('\n');
    }
    out.push('\n');
    let lw = c.logs.iter().map(|l| l.label.len()).max().unwrap_or(3).max(3);
    out.push_str(&format!(
        "{:<lw$}  {:<8}  {:<14}  {:>4}  {:>6}  {:>6}  {:>9}  {:>8}  ran\n",
        "log", "set", "collective", "P", "shape", "points", "mean err", "max err"
    ));
    for l in &c.logs {
        let shape = match (l.nodes, l.gpus_per_node) {
            (Some(n), Some(g)) => format!("{n}x{g}"),
            _ => "-".to_string(),
        };
        let mut ran: Vec<String> = Vec::new();
        for p in &l.points {
            let r = format!("{} [{}]", p.ran, p.algorithm);
            if !ran.contains(&r) {
                ran.push(r);
            }
        }
        out.push_str(&format!(
            "{:<lw$}  {:<8}  {:<14}  {:>4}  {:>6}  {:>6}  {:>8.1}%  {:>7.1}%  {}\n",
            l.label,
            l.set,
            l.collective.name(),
            l.ranks,
            shape,
            l.points.len(),
            100.0 * l.mean_rel_err,
            100.0 * l.max_rel_err,
            ran.join("; ")
        ));
    }
    for set in ["fit", "hold-out"] {
        let pts: Vec<f64> =
            c.logs.iter().filter(|l| l.set == set).flat_map(|l| l.points.iter().map(|p| p.rel_err.abs())).collect();
        if !pts.is_empty() {
            out.push_str(&format!(
                "{set}: mean error {:.1}%, max {:.1}% over {} points\n",
                100.0 * pts.iter().sum::<f64>() / pts.len() as f64,
                100.0 * pts.iter().copied().fold(0.0, f64::max),
                pts.len()
            ));
        }
    }
    if !c.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in &c.warnings {
            out.push_str(&format!("- {w}\n"));
        }
    }
    out
}
