//! `allreduce-sim tune`: run a sweep with every algorithm and the three selectors, and
//! write what a library reads to follow the simulation's winners: Open MPI's dynamic
//! rules file, the CSV of NCCL's example tuner plugin, or a table or JSON of the
//! winners. Each file has a reader here too ([`read_ompi_rules`], [`read_nccl_csv`]),
//! with the lookup the library does, so tests can check a file against its sweep.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{SELECTORS, is_selector, nccl, ompi};
use crate::collective::Collective;
use crate::report::{PointResult, Report};
use crate::scenario::{AlgoSpec, Scenario};
use crate::topology;
use crate::units::{fmt_bytes, fmt_time};

/// What `tune --emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Open MPI's dynamic rules file, classic text format.
    OmpiRules,
    /// The CSV of NCCL's example tuner plugin.
    NcclTuner,
    /// A table of winners and margins.
    Table,
    /// The same as JSON ([`Tuned`]).
    Json,
}

/// The scenario `tune` runs: per collective the scenario lists (in `list` order), its
/// algorithms there, every algorithm of the collective not listed (default parameters),
/// then the selectors that choose for it (`auto`, `ompi_fixed`, `nccl_model`).
pub fn tune_scenario(s: &Scenario) -> Scenario {
    let mut t = s.clone();
    let mut algorithms: Vec<AlgoSpec> = Vec::new();
    for c in Collective::ALL.into_iter().filter(|&c| s.algorithms.iter().any(|a| a.collective == c)) {
        let mut mine: Vec<AlgoSpec> =
            s.algorithms.iter().filter(|a| a.collective == c && !is_selector(&a.name)).cloned().collect();
        for id in super::candidates(c) {
            if !mine.iter().any(|a| a.name == id && a.params.is_empty()) {
                mine.push(AlgoSpec {
                    name: id.to_string(),
                    collective: c,
                    params: Vec::new(),
                    location: String::new(),
                    protocol: None,
                });
            }
        }
        for sel in SELECTORS.iter().filter(|sel| super::covers(sel.id, c)) {
            // Keep the scenario's parameters of a selector it lists (nccl_model's channels).
            let listed = s.algorithms.iter().filter(|a| a.name == sel.id);
            let spec = listed.clone().find(|a| a.collective == c).or(listed.clone().next());
            mine.push(AlgoSpec {
                collective: c,
                location: String::new(),
                ..spec.cloned().unwrap_or(AlgoSpec {
                    name: sel.id.to_string(),
                    collective: c,
                    params: Vec::new(),
                    location: String::new(),
                    protocol: None,
                })
            });
        }
        algorithms.extend(mine);
    }
    t.algorithms = algorithms;
    t
}

/// One point of a tuning sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedPoint {
    /// The collective (allreduce in files written before there were others).
    #[serde(default)]
    pub collective: Collective,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank.
    pub bytes: u64,
    /// The fastest algorithm (as `auto` picks).
    pub best_algorithm: Option<String>,
    /// Its time, seconds.
    pub best_time_s: Option<f64>,
    /// The second fastest.
    pub runner_up: Option<String>,
    /// The runner-up's time over the best's, less 1.
    pub margin: Option<f64>,
    /// Every algorithm that ran, with its time (seconds), in the sweep's order.
    pub times: Vec<(String, f64)>,
    /// Open MPI's fixed decision: its choice in words, our algorithm, its time and how
    /// far it is from the best.
    pub ompi_fixed: Option<Choice>,
    /// NCCL's model: its choice, our algorithm, its time and how far from the best.
    pub nccl_model: Option<Choice>,
    /// The rule written for Open MPI: (algorithm number, segment size), the fastest of
    /// the algorithms Open MPI has.
    pub ompi_rule: Option<(u8, u64)>,
    /// The rule written for NCCL: (algorithm, protocol), the fastest simulated of the
    /// algorithms NCCL's model weighs for the collective here ([`nccl::algorithms`]:
    /// allreduce ring or tree, reduce-scatter and allgather ring or PAT, broadcast and
    /// reduce ring), with the protocol NCCL's model ranks first for it.
    pub nccl_rule: Option<(String, String)>,
}

/// A selector's pick at one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The library's choice in its words.
    pub library_choice: String,
    /// Our algorithm that ran it.
    pub algorithm: String,
    /// Simulated time, seconds.
    pub time_s: f64,
    /// How much slower than the best (0.1: 10%); none where the best took 0 s and this
    /// did not (no ratio).
    #[serde(default)]
    pub vs_best: Option<f64>,
    /// NCCL's predicted time, seconds.
    pub predicted_s: Option<f64>,
}

/// A whole tuning sweep ([`Emit::Json`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tuned {
    /// The scenario's name.
    pub scenario: String,
    /// The Open MPI release of `ompi_fixed` and of the rules file's format.
    pub open_mpi: String,
    /// The NCCL release of `nccl_model`.
    pub nccl: String,
    /// NCCL's node count per rank count, as the model and the tuner file see it.
    pub nccl_nodes: BTreeMap<usize, usize>,
    /// Every point, collectives outermost (in `list` order), then ranks, then sizes.
    pub points: Vec<TunedPoint>,
}

/// Our algorithm label back to (id, segment) for the Open MPI mapping.
fn id_and_segment(label: &str) -> (&str, Option<u64>) {
    let (id, rest) = label.split_once('(').unwrap_or((label, ""));
    let seg = rest.trim_end_matches(')').split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == "segment").then(|| v.trim().parse().ok()).flatten()
    });
    (id, seg)
}

/// Summarise a report of [`tune_scenario`] point by point.
pub fn summarise(report: &Report) -> Tuned {
    let s = &report.scenario;
    let mut groups: BTreeMap<(Collective, usize, u64), Vec<&PointResult>> = BTreeMap::new();
    for r in &report.results {
        groups.entry((r.collective, r.ranks, r.bytes)).or_default().push(r);
    }
    let mut nccl_nodes = BTreeMap::new();
    let mut points = Vec::new();
    for ((collective, ranks, bytes), rows) in groups {
        let c = collective;
        let nccl_params = s.algorithms.iter().find(|a| a.name == "nccl_model" && a.collective == collective).cloned();
        let algos: Vec<&PointResult> =
            rows.iter().copied().filter(|r| !is_selector(&r.algorithm) && r.not_applicable.is_none()).collect();
        let times: Vec<(String, f64)> =
            algos.iter().filter(|r| r.time_s.is_finite()).map(|r| (r.algorithm.clone(), r.time_s)).collect();
        let choice = |id: &str| -> Option<Choice> {
            // A pick that did not run to the end (cut off by link faults) has no time to compare.
            let r = rows.iter().find(|r| r.algorithm == id && r.not_applicable.is_none() && r.time_s.is_finite())?;
            let sel = r.selection.as_ref()?;
            Some(Choice {
                library_choice: sel.library_choice.clone().unwrap_or_default(),
                algorithm: sel.selected.clone(),
                time_s: r.time_s,
                vs_best: sel.vs_best,
                predicted_s: sel.predicted_s,
            })
        };
        let ompi_ok: Vec<(&str, f64)> = algos
            .iter()
            .filter(|r| {
                let (id, seg) = id_and_segment(&r.algorithm);
                ompi::ompi_of_in(c, id, seg).is_some()
            })
            .map(|r| (r.algorithm.as_str(), r.time_s))
            .collect();
        let ompi_rule = super::top_two(c, ompi_ok).0.and_then(|(l, _)| {
            let (id, seg) = id_and_segment(l);
            ompi::ompi_of_in(c, id, seg)
        });
        let inputs = nccl_inputs(s, nccl_params.as_ref(), ranks);
        if let Some(x) = &inputs {
            nccl_nodes.insert(ranks, x.nodes);
        }
        let nccl_rule = inputs.as_ref().and_then(|x| nccl_rule(x, collective, bytes, &algos));
        let first = rows.first().copied();
        points.push(TunedPoint {
            collective,
            ranks,
            bytes,
            best_algorithm: first.and_then(|r| r.best_algorithm.clone()),
            best_time_s: first.and_then(|r| r.best_time_s),
            runner_up: first.and_then(|r| r.runner_up.clone()),
            margin: first.and_then(|r| r.margin),
            times,
            ompi_fixed: choice("ompi_fixed"),
            nccl_model: choice("nccl_model"),
            ompi_rule,
            nccl_rule,
        });
    }
    Tuned {
        scenario: s.name.clone(),
        open_mpi: ompi::VERSION.to_string(),
        nccl: nccl::VERSION.to_string(),
        nccl_nodes,
        points,
    }
}

fn nccl_inputs(s: &Scenario, spec: Option<&AlgoSpec>, ranks: usize) -> Option<nccl::Inputs> {
    let params = spec.map(|a| a.params.clone()).unwrap_or_default();
    let np = super::selector_params("nccl_model", &params).ok()?;
    let topo = topology::build(&s.topology, ranks).ok()?;
    let avg = s.data.op == crate::sim::data::ReduceOp::Avg;
    Some(
        nccl::Inputs { avg, ..nccl::Inputs::of(topo.as_ref(), np.channels, np.arch) }
            .with_tuning(np.tuning.unwrap_or_default())
            .searched(topo.as_ref()),
    )
}

/// The NCCL rule at a point of collective `c`: of the algorithms NCCL's model weighs
/// there (and would run: PAT only where it is enabled), the one whose textbook algorithm
/// of ours ([`nccl::Algo::textbook`]) simulated fastest among `algos` (the point's rows), with the protocol NCCL's model
/// ranks first for it. Broadcast and reduce have the ring only: the rule is NCCL's
/// own ring protocol.
fn nccl_rule(x: &nccl::Inputs, c: Collective, bytes: u64, algos: &[&PointResult]) -> Option<(String, String)> {
    let usable: Vec<(nccl::Algo, nccl::Proto)> =
        nccl::algorithms(c).iter().filter_map(|&a| nccl::best_protocol(x, c, a, bytes).map(|(p, _)| (a, p))).collect();
    let pick = if let [only] = usable[..] {
        Some(only)
    } else {
        let timed: Vec<(&str, f64)> = algos
            .iter()
            .filter(|r| usable.iter().any(|(a, _)| r.algorithm == a.textbook(c)))
            .map(|r| (r.algorithm.as_str(), r.time_s))
            .collect();
        let (best, _) = super::top_two(c, timed);
        best.and_then(|(l, _)| usable.iter().copied().find(|(a, _)| a.textbook(c) == l))
    };
    pick.map(|(a, p)| (a.name().to_string(), p.name().to_string()))
}

/// A size and the winner there.
type SizeRule<T> = (u64, T);

/// Open MPI's collective id of allreduce in a rules file (`COLLTYPE_T` of coll_base_functions.h;
/// [`ompi::collective_id`] for the others).
pub const OMPI_ALLREDUCE_ID: u64 = 2;

/// The rules for one communicator size: (message size from which it applies, algorithm,
/// fan in/out, segment size), message sizes increasing from 0.
pub type MsgRules = Vec<(u64, u8, u64, u64)>;

/// Open MPI's classic dynamic rules file for the sweep's winners among the algorithms
/// Open MPI has, one section per collective of the sweep (by Open MPI's collective id,
/// increasing). A rank count's rules hold from it up to the next rank count's (Open MPI
/// takes the last communicator size not above its own, else the first); a size's winner
/// holds from that size up to the next size (from 0 for the smallest). The sizes are
/// what Open MPI's dynamic decision compares ([`ompi::rules_bytes`]): S, and 0 for a
/// barrier. Neighbouring sizes, and then rank counts, with the same rules are merged.
pub fn ompi_rules(t: &Tuned) -> String {
    let tables = ompi_rule_tables(t);
    let mut out = String::new();
    let _ = writeln!(out, "# Open MPI coll/tuned dynamic rules (classic format, read by Open MPI {})", t.open_mpi);
    let _ = writeln!(out, "# written by allreduce-sim tune from the scenario '{}'", t.scenario.replace('\n', " "));
    out.push_str("# use: --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE\n");
    let _ = writeln!(out, "{} # number of collectives", tables.len());
    for (c, rules) in &tables {
        let _ = writeln!(out, "{} # collective id: {c}", ompi::collective_id(*c));
        let _ = writeln!(out, "{} # number of communicator sizes", rules.len());
        for (p, msgs) in rules {
            let _ = writeln!(out, "{p} # communicator size");
            let _ = writeln!(out, "{} # number of message sizes", msgs.len());
            for (size, alg, fan, seg) in msgs {
                let name = ompi::name_in(*c, *alg);
                let _ = writeln!(out, "{size} {alg} {fan} {seg} # from {}: {name}", fmt_bytes(*size));
            }
        }
    }
    out
}

/// The allreduce rules [`ompi_rules`] writes, merged: (communicator size, message rules).
pub fn ompi_rule_table(t: &Tuned) -> Vec<(usize, MsgRules)> {
    ompi_rule_tables(t).into_iter().find(|(c, _)| *c == Collective::Allreduce).map(|(_, r)| r).unwrap_or_default()
}

/// Every collective's rules [`ompi_rules`] writes, by Open MPI's collective id.
pub fn ompi_rule_tables(t: &Tuned) -> Vec<(Collective, Vec<(usize, MsgRules)>)> {
    type BySize = BTreeMap<usize, Vec<SizeRule<(u8, u64)>>>;
    let mut by_c: BTreeMap<u64, (Collective, BySize)> = BTreeMap::new();
    for pt in &t.points {
        if let Some(rule) = pt.ompi_rule {
            let (_, by_p) = by_c.entry(ompi::collective_id(pt.collective)).or_insert((pt.collective, BTreeMap::new()));
            by_p.entry(pt.ranks).or_default().push((ompi::rules_bytes(pt.collective, pt.bytes), rule));
        }
    }
    let mut tables = Vec::new();
    for (_, (c, by_p)) in by_c {
        let mut out: Vec<(usize, MsgRules)> = Vec::new();
        for (p, mut sizes) in by_p {
            sizes.sort_by_key(|(b, _)| *b);
            let mut msgs: MsgRules = Vec::new();
            for (i, (b, (alg, seg))) in sizes.into_iter().enumerate() {
                let from = if i == 0 { 0 } else { b };
                if msgs.last().is_none_or(|&(_, a, _, s)| (a, s) != (alg, seg)) {
                    msgs.push((from, alg, 0, seg));
                }
            }
            if out.last().is_none_or(|(_, m)| *m != msgs) {
                out.push((p, msgs));
            }
        }
        tables.push((c, out));
    }
    tables
}

/// A rules file as Open MPI 4.1.4 reads it (`ompi_coll_tuned_read_rules_config_file`):
/// whole numbers separated by white space, `#` to the end of the line a comment.
/// Returns, per collective id, its communicator sizes and message rules.
pub fn read_ompi_rules(text: &str) -> Result<BTreeMap<u64, Vec<(usize, MsgRules)>>, String> {
    let mut nums = text
        .lines()
        .flat_map(|l| l.split('#').next().unwrap_or("").split_whitespace())
        .map(|w| w.parse::<u64>().map_err(|_| format!("'{w}' is not a whole number")));
    let mut next = |what: &str| nums.next().unwrap_or_else(|| Err(format!("the file ends before {what}")));
    let mut out = BTreeMap::new();
    let colls = next("the number of collectives")?;
    for _ in 0..colls {
        let id = next("a collective id")?;
        let ncs = next("the number of communicator sizes")?;
        let mut coms = Vec::new();
        for _ in 0..ncs {
            let cs = next("a communicator size")? as usize;
            let nms = next("the number of message sizes")?;
            let mut msgs = Vec::new();
            for k in 0..nms {
                let ms = next("a message size")?;
                if k == 0 && ms != 0 {
                    return Err(format!("communicator size {cs}: the first message size must be 0, not {ms}"));
                }
                let alg = next("an algorithm")?;
                let fan = next("a fan in/out")?;
                let seg = next("a segment size")?;
                msgs.push((ms, u8::try_from(alg).map_err(|_| format!("algorithm {alg}"))?, fan, seg));
            }
            coms.push((cs, msgs));
        }
        out.insert(id, coms);
    }
    if let Some(extra) = nums.next() {
        return Err(format!("text after the last rule: {extra:?}"));
    }
    Ok(out)
}

/// What Open MPI takes from `rules` for `p` ranks and `bytes`: the last communicator
/// size not above `p` (else the first), in it the last message size not above `bytes`;
/// (algorithm, segment size).
pub fn ompi_lookup(rules: &[(usize, MsgRules)], p: usize, bytes: u64) -> Option<(u8, u64)> {
    let com = rules.iter().take_while(|(cs, _)| *cs <= p).last().or(rules.first())?;
    let msg = com.1.iter().take_while(|(ms, ..)| *ms <= bytes).last()?;
    Some((msg.1, msg.3))
}

/// The largest size NCCL's example tuner file names (its README's "covers all sizes").
pub const NCCL_MAX_BYTES: u64 = 4_294_967_295;

/// The CSV of NCCL's example tuner plugin (`plugins/tuner/example` of NCCL 2.30.7):
/// `collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks`, one
/// line per collective, rank count and size range, channels -1 (NCCL's own). A size's
/// winner ([`TunedPoint::nccl_rule`]) holds from that size to just below the next (from
/// 0 for the smallest, to the largest for the last); neighbouring ranges with the same
/// winner are merged. Sizes are NCCL's `nBytes`, our `bytes` (for reduce-scatter and
/// allgather the buffer of all P blocks). The barrier, which NCCL lacks, has no line.
pub fn nccl_csv(t: &Tuned) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# NCCL example tuner plugin configuration (NCCL {}), written by allreduce-sim tune", t.nccl);
    let _ = writeln!(out, "# from the scenario '{}'; use: NCCL_TUNER_CONFIG_FILE=FILE", t.scenario.replace('\n', " "));
    out.push_str("# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n");
    for row in nccl_rows(t) {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            row.collective,
            row.min_bytes,
            row.max_bytes,
            row.algorithm,
            row.protocol,
            row.channels,
            row.nodes,
            row.ranks
        );
    }
    out
}

/// A size and NCCL's (algorithm, protocol) from it.
type NcclSizeRule = SizeRule<(String, String)>;

/// One line of the NCCL tuner CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NcclRow {
    /// `allreduce`, `reducescatter`, `allgather`, `broadcast` or `reduce`.
    pub collective: String,
    /// Smallest size it applies to, bytes.
    pub min_bytes: u64,
    /// Largest size it applies to, bytes (inclusive).
    pub max_bytes: u64,
    /// `ring`, `tree` or `pat`.
    pub algorithm: String,
    /// `ll`, `ll128` or `simple`.
    pub protocol: String,
    /// Channels, -1 for NCCL's choice.
    pub channels: i64,
    /// nNodes to match, -1 for any.
    pub nodes: i64,
    /// nRanks to match, -1 for any.
    pub ranks: i64,
}

/// The rows [`nccl_csv`] writes.
pub fn nccl_rows(t: &Tuned) -> Vec<NcclRow> {
    let mut by_p: BTreeMap<(Collective, usize), Vec<NcclSizeRule>> = BTreeMap::new();
    for pt in &t.points {
        if let Some(rule) = &pt.nccl_rule {
            by_p.entry((pt.collective, pt.ranks)).or_default().push((pt.bytes, rule.clone()));
        }
    }
    let mut rows = Vec::new();
    for ((c, p), mut sizes) in by_p {
        let Some(collective) = nccl::collective_name(c) else { continue };
        sizes.sort_by_key(|(b, _)| *b);
        let nodes = t.nccl_nodes.get(&p).map_or(-1, |&n| n as i64);
        let last = sizes.len() - 1;
        let mut mine: Vec<NcclRow> = Vec::new();
        for (i, (b, (algo, proto))) in sizes.iter().enumerate() {
            let min = if i == 0 { 0 } else { *b };
            let max = if i == last { NCCL_MAX_BYTES.max(*b) } else { sizes[i + 1].0 - 1 };
            match mine.last_mut() {
                Some(r) if r.algorithm == *algo && r.protocol == *proto => r.max_bytes = max,
                _ => mine.push(NcclRow {
                    collective: collective.to_string(),
                    min_bytes: min,
                    max_bytes: max,
                    algorithm: algo.clone(),
                    protocol: proto.clone(),
                    channels: -1,
                    nodes,
                    ranks: p as i64,
                }),
            }
        }
        rows.extend(mine);
    }
    rows
}

/// The tuner CSV as the example plugin reads it: `#` lines and blank lines skipped,
/// 8 to 10 comma-separated fields.
pub fn read_nccl_csv(text: &str) -> Result<Vec<NcclRow>, String> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if !(8..=10).contains(&f.len()) {
            return Err(format!("line {}: {} fields, the plugin reads 8 to 10", n + 1, f.len()));
        }
        let num = |i: usize| f[i].parse::<i64>().map_err(|_| format!("line {}: '{}' is not a number", n + 1, f[i]));
        let bytes = |i: usize| f[i].parse::<u64>().map_err(|_| format!("line {}: '{}' is not a size", n + 1, f[i]));
        const COLLS: [&str; 5] = ["broadcast", "reduce", "allgather", "reducescatter", "allreduce"];
        const ALGOS: [&str; 7] = ["tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"];
        const PROTOS: [&str; 3] = ["ll", "ll128", "simple"];
        for (i, allowed) in [(0, &COLLS[..]), (3, &ALGOS[..]), (4, &PROTOS[..])] {
            if !allowed.contains(&f[i]) {
                return Err(format!("line {}: '{}' is not one of {}", n + 1, f[i], allowed.join(", ")));
            }
        }
        rows.push(NcclRow {
            collective: f[0].to_string(),
            min_bytes: bytes(1)?,
            max_bytes: bytes(2)?,
            algorithm: f[3].to_string(),
            protocol: f[4].to_string(),
            channels: num(5)?,
            nodes: num(6)?,
            ranks: num(7)?,
        });
    }
    Ok(rows)
}

/// The first row matching `collective` (NCCL's name: `allreduce`, `reducescatter`, ...)
/// of `bytes` on `nodes` nodes and `ranks` ranks, as the plugin searches
/// (`pluginGetCollInfo`).
pub fn nccl_lookup<'a>(
    rows: &'a [NcclRow],
    collective: &str,
    nodes: usize,
    ranks: usize,
    bytes: u64,
) -> Option<&'a NcclRow> {
    rows.iter().find(|r| {
        r.collective == collective
            && bytes >= r.min_bytes
            && bytes <= r.max_bytes
            && (r.nodes == -1 || r.nodes == nodes as i64)
            && (r.ranks == -1 || r.ranks == ranks as i64)
    })
}

/// A table of the winners, the runner-up and margin, and what Open MPI's fixed rules
/// and NCCL's model pick, point by point.
pub fn table(t: &Tuned) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: the fastest algorithm per point", t.scenario);
    let head = [
        "collective",
        "P",
        "S",
        "best",
        "time",
        "runner-up",
        "margin",
        "ompi_fixed",
        "vs best",
        "nccl_model",
        "vs best",
    ];
    let mut lines: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    let pct = crate::units::fmt_rel_diff;
    for pt in &t.points {
        let pick = |c: &Option<Choice>| match c {
            // No ratio: the fastest took 0 s and this pick did not.
            Some(c) => (c.algorithm.clone(), c.vs_best.map_or_else(|| "over 0 s".to_string(), pct)),
            None => ("-".to_string(), "-".to_string()),
        };
        let (om, ov) = pick(&pt.ompi_fixed);
        let (nm, nv) = pick(&pt.nccl_model);
        lines.push(vec![
            pt.collective.name().to_string(),
            pt.ranks.to_string(),
            fmt_bytes(pt.bytes),
            pt.best_algorithm.clone().unwrap_or_else(|| "-".into()),
            pt.best_time_s.map_or_else(|| "-".into(), fmt_time),
            pt.runner_up.clone().unwrap_or_else(|| "-".into()),
            pt.margin.map_or_else(|| "-".into(), pct),
            om,
            ov,
            nm,
            nv,
        ]);
    }
    let mut widths = vec![0; head.len()];
    for l in &lines {
        for (w, c) in widths.iter_mut().zip(l) {
            *w = (*w).max(c.chars().count());
        }
    }
    for l in &lines {
        let mut text = String::new();
        for (i, c) in l.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            // Numbers right, names left.
            if matches!(i, 1 | 2 | 4 | 6 | 8 | 10) {
                text.push_str(&" ".repeat(pad));
                text.push_str(c);
            } else {
                text.push_str(c);
                text.push_str(&" ".repeat(pad));
            }
            text.push_str("  ");
        }
        let _ = writeln!(out, "{}", text.trim_end());
    }
    let _ = writeln!(
        out,
        "margin: the runner-up's time over the best's; vs best: the pick's time over the best's (Open MPI {}, NCCL {})",
        t.open_mpi, t.nccl
    );
    out
}

/// Render `t` as `emit` asks.
pub fn render(t: &Tuned, emit: Emit) -> String {
    match emit {
        Emit::OmpiRules => ompi_rules(t),
        Emit::NcclTuner => nccl_csv(t),
        Emit::Table => table(t),
        Emit::Json => {
            serde_json::to_string_pretty(t).map(|s| crate::units::escape_json_unseen(s + "\n")).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(ranks: usize, bytes: u64, ompi: (u8, u64), nccl: (&str, &str)) -> TunedPoint {
        TunedPoint {
            collective: Collective::Allreduce,
            ranks,
            bytes,
            best_algorithm: None,
            best_time_s: None,
            runner_up: None,
            margin: None,
            times: Vec::new(),
            ompi_fixed: None,
            nccl_model: None,
            ompi_rule: Some(ompi),
            nccl_rule: Some((nccl.0.to_string(), nccl.1.to_string())),
        }
    }

    fn tuned(points: Vec<TunedPoint>) -> Tuned {
        Tuned {
            scenario: "t".into(),
            open_mpi: ompi::VERSION.into(),
            nccl: nccl::VERSION.into(),
            nccl_nodes: [(4, 4), (8, 8), (16, 16)].into_iter().collect(),
            points,
        }
    }

    #[test]
    fn rules_merge_and_read_back() {
        let t = tuned(vec![
            point(4, 1024, (3, 0), ("tree", "ll")),
            point(4, 65536, (3, 0), ("ring", "ll")),
            point(4, 1 << 20, (6, 0), ("ring", "simple")),
            point(8, 1024, (3, 0), ("tree", "ll")),
            point(8, 65536, (3, 0), ("ring", "ll")),
            point(8, 1 << 20, (6, 0), ("ring", "simple")),
            point(16, 1024, (3, 0), ("tree", "ll")),
            point(16, 65536, (5, 4096), ("tree", "ll")),
            point(16, 1 << 20, (6, 0), ("ring", "simple")),
        ]);
        let text = ompi_rules(&t);
        let rules = read_ompi_rules(&text).unwrap();
        let all = &rules[&OMPI_ALLREDUCE_ID];
        // P = 8 has P = 4's rules: merged into P = 4's.
        assert_eq!(all.len(), 2, "{text}");
        assert_eq!(all[0], (4, vec![(0, 3, 0, 0), (1 << 20, 6, 0, 0)]));
        for pt in &t.points {
            assert_eq!(ompi_lookup(all, pt.ranks, pt.bytes), pt.ompi_rule, "{text}");
        }
        let rows = read_nccl_csv(&nccl_csv(&t)).unwrap();
        assert_eq!(rows, nccl_rows(&t));
        for pt in &t.points {
            let r = nccl_lookup(&rows, "allreduce", pt.ranks, pt.ranks, pt.bytes).unwrap();
            assert_eq!(Some((r.algorithm.clone(), r.protocol.clone())), pt.nccl_rule);
        }
        // P = 16's 64 KiB and 1 KiB share tree/ll: one row from 0 to 1 MiB - 1.
        let p16: Vec<&NcclRow> = rows.iter().filter(|r| r.ranks == 16).collect();
        assert_eq!((p16[0].min_bytes, p16[0].max_bytes), (0, (1 << 20) - 1));
    }

    #[test]
    fn readers_refuse_bad_files() {
        assert!(read_ompi_rules("1 2 1 4 1 5 3 0 0").unwrap_err().contains("first message size"));
        assert!(read_ompi_rules("1 2 1 4").unwrap_err().contains("ends before"));
        assert!(read_nccl_csv("allreduce,0,10,ring,simple,-1,1").unwrap_err().contains("7 fields"));
        assert!(read_nccl_csv("allreduce,0,10,star,simple,-1,1,2").unwrap_err().contains("star"));
    }

    #[test]
    fn labels_give_their_segment() {
        assert_eq!(id_and_segment("ring_segmented(segment=4096)"), ("ring_segmented", Some(4096)));
        assert_eq!(id_and_segment("ring"), ("ring", None));
    }
}
