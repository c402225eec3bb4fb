//! `--format table`: the report for a person.
//!
//! A title with the machine, then one aligned table per (ranks, bytes) point in the
//! order the sweep ran them, the fastest algorithm of each marked `*`, then every failed
//! check and a one-line verdict.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::{Exporter, PointResult, Report};
use crate::collective::Collective;
use crate::scenario::{DataMode, Scenario, TopologySpec};
use crate::units::{fmt_bandwidth, fmt_bytes, fmt_time};

/// Aligned text tables, humanised units, no colours.
#[derive(Clone, Copy, Debug, Default)]
pub struct Table;

impl Exporter for Table {
    fn render(&self, report: &Report) -> String {
        let mut out = String::new();
        title(&mut out, &report.scenario);
        // A scenario of several collectives names the collective in each group's heading.
        let mixed = report.results.iter().any(|r| r.collective != report.scenario.collective);

        for ((collective, ranks, bytes), rows) in groups(&report.results) {
            out.push('\n');
            let elems = bytes / report.scenario.data.dtype.bytes() as u64;
            let of = if mixed { format!("{collective}, ") } else { String::new() };
            let _ = writeln!(
                out,
                "{of}P = {ranks}, S = {} ({elems} x {})",
                fmt_bytes(bytes),
                serde_name(&report.scenario.data.dtype),
            );
            group_table(&mut out, &rows);
            selections(&mut out, &rows);
            critical_paths(&mut out, &rows);
            busiest_links(&mut out, &rows);
            spreads(&mut out, &rows);
        }

        let failed: Vec<&PointResult> = report.results.iter().filter(|r| !r.passed()).collect();
        let failures = failure_lines(report);
        if !failures.is_empty() {
            out.push_str("\nfailures:\n");
            out.push_str(&failures);
        }

        let noted: Vec<&PointResult> = report.results.iter().filter(|r| !r.notes.is_empty()).collect();
        if !noted.is_empty() {
            out.push_str("\nnotes:\n");
            for r in &noted {
                for n in &r.notes {
                    let _ = writeln!(out, "  {} {}: {n}", r.algorithm, point(r));
                }
            }
        }

        out.push('\n');
        if report.interrupted {
            out.push_str("interrupted (Ctrl-C): only the points that finished are reported\n");
        }
        let n = report.results.len();
        let points = if n == 1 { "point" } else { "points" };
        if n > 0 && report.results.iter().all(|r| r.not_applicable.is_some()) {
            let _ = writeln!(out, "{n} {points}, none could run (each is n/a, with its reason above)");
        } else if failed.is_empty() {
            let _ = writeln!(out, "{n} {points}, all checks held");
        } else {
            let _ = writeln!(out, "{n} {points}, {} failed", failed.len());
        }
        // Names and reasons come from the scenario: no escape sequence reaches the terminal.
        // The text itself where nothing is escaped: a copy of a large table doubled its peak.
        let escaped = match crate::units::escape_controls(&out) {
            std::borrow::Cow::Owned(s) => Some(s),
            std::borrow::Cow::Borrowed(_) => None,
        };
        escaped.unwrap_or(out)
    }
}

/// Efficiencies up to `1 + EFFICIENCY_SLACK` are rounding (an algorithm that meets the
/// bound exactly, e.g. butterfly on 2 ranks with C = 0); above it, a finding, marked `!`
/// (the runner also records it as a failure, listed under the tables).
const EFFICIENCY_SLACK: f64 = 1e-9;

/// Under a group's table, one line per selector row: what it chose and how far that
/// is from the fastest (`auto: ring; runner-up halving_doubling +3.1%`, `ompi_fixed:
/// Open MPI 4.1.4 runs 6 rabenseifner as halving_doubling, +12.0% vs ring`).
fn selections(out: &mut String, rows: &[&PointResult]) {
    let pct = crate::units::fmt_rel_diff;
    for r in rows {
        let Some(sel) = &r.selection else { continue };
        let best = r.best_algorithm.as_deref().unwrap_or("-");
        // How far the pick is from the fastest. A fastest of 0 s gives no ratio: its time
        // is named instead, as a pick 0% off it would read as the fastest.
        let off = || match (sel.vs_best, r.best_time_s) {
            (Some(v), _) => format!("{} vs the best ({best})", pct(v)),
            (None, Some(t)) => format!("against {} for the best ({best})", fmt_time(t)),
            (None, None) => format!("vs the best ({best})"),
        };
        let line = match (&sel.library, &sel.library_choice) {
            (Some(lib), Some(choice)) if r.time_s.is_nan() => {
                format!("{lib} picks {choice}; {} did not run to the end (see the failures)", sel.selected)
            }
            (Some(lib), Some(choice)) => {
                let predicted = sel.predicted_s.map_or_else(String::new, |p| format!(", predicts {}", fmt_time(p)));
                format!("{lib} picks {choice}{predicted}; {} simulates {}, {}", sel.selected, fmt_time(r.time_s), off())
            }
            // `auto` picks the fastest of its candidates, but `nccl_model`'s pick (an NCCL
            // variant no candidate list holds) may beat them all: then the point's best and
            // runner-up are not `auto`'s, and the runner-up may be its own pick.
            _ if r.best_algorithm.as_deref().is_some_and(|b| b != sel.selected) && !r.time_s.is_nan() => {
                format!("{} of {} algorithms, {}", sel.selected, sel.candidates, off())
            }
            _ => {
                let second = match (&r.runner_up, r.margin) {
                    (Some(u), Some(m)) => format!("; runner-up {u} {}", pct(m)),
                    (Some(u), None) => format!("; runner-up {u}"),
                    _ => String::new(),
                };
                format!("{} of {} algorithms{second}", sel.selected, sel.candidates)
            }
        };
        let _ = writeln!(out, "   {}: {line}", r.algorithm);
    }
}

/// Under a group's table, one line per point that has a critical path (and, beside it,
/// the most bytes one link carried): `ring: critical path 6 messages, 3 reductions, 99%
/// transfer; busiest link 6 KiB`.
fn critical_paths(out: &mut String, rows: &[&PointResult]) {
    for r in rows {
        if let Some(cp) = &r.critical_path {
            // Under the flow model the physical links have their own line.
            let link = match (r.link_bytes_max, &r.network_links) {
                (Some(b), None) => format!("; busiest link {}", fmt_bytes(b)),
                _ => String::new(),
            };
            let _ = writeln!(out, "   {}: critical path {}{link}", r.algorithm, cp.summary());
        }
    }
}

/// Under the flow model, one line per point: whether sharing slowed it, how many links it
/// used, and its five busiest physical links with their bytes and mean utilisation over
/// the run (`ring: no message slowed by sharing, 72 of 256 links used; busiest r0->r1
/// 1.97 MiB 40%, ...`).
fn busiest_links(out: &mut String, rows: &[&PointResult]) {
    for r in rows {
        let Some(links) = &r.network_links else { continue };
        let busiest: Vec<String> = links
            .busiest
            .iter()
            .map(|l| format!("{} {} {:.0}%", l.name, fmt_bytes(l.bytes), 100.0 * l.mean_utilisation))
            .collect();
        let shared = match r.links_shared {
            Some(true) => "shared links slowed it",
            _ => "no message slowed by sharing",
        };
        // A machine of one host has no link, and a point that sends nothing uses none:
        // no "busiest" with nothing after it.
        let _ = if links.machine_links == 0 {
            writeln!(out, "   {}: the machine has no link (one rank sends nothing)", r.algorithm)
        } else if busiest.is_empty() {
            writeln!(out, "   {}: {shared}, 0 of {} links used", r.algorithm, links.machine_links)
        } else {
            writeln!(
                out,
                "   {}: {shared}, {} of {} links used; busiest {}",
                r.algorithm,
                links.used,
                links.machine_links,
                busiest.join(", ")
            )
        };
    }
}

/// With `repeat:` or `noise:`, one line per point: the spread over the seeds and what
/// the noise cost (`ring: 16 seeds, mean 1.21 ms, p50 1.2 ms, p90 1.25 ms, p99 1.3 ms,
/// max 1.3 ms; x1.04 the noise-free 1.16 ms; 0.98 s lost per s of skew`).
fn spreads(out: &mut String, rows: &[&PointResult]) {
    for r in rows {
        let mut parts = Vec::new();
        if let (Some(times), Some(mean), Some(p50), Some(p90), Some(p99), Some(max)) =
            (&r.times_s, r.time_mean_s, r.time_p50_s, r.time_p90_s, r.time_p99_s, r.time_max_s)
        {
            parts.push(format!(
                "{} seeds, mean {}, p50 {}, p90 {}, p99 {}, max {}",
                times.len(),
                fmt_time(mean),
                fmt_time(p50),
                fmt_time(p90),
                fmt_time(p99),
                fmt_time(max)
            ));
        }
        if let (Some(slowdown), Some(free)) = (r.slowdown, r.noise_free_time_s) {
            // A noise-free time of 3e-287 ps under a skew of 1 us is a slowdown of 10^299:
            // in scientific notation past a million, never 300 digits.
            let x = if slowdown.abs() < 1e6 { format!("{slowdown:.3}") } else { format!("{slowdown:.3e}") };
            parts.push(format!("x{x} the noise-free {}", fmt_time(free)));
        }
        if let Some(k) = r.skew_sensitivity {
            let k = if k.abs() < 1e6 { format!("{k:.3}") } else { format!("{k:.3e}") };
            parts.push(format!("{k} s lost per s of skew"));
        }
        if !parts.is_empty() {
            let _ = writeln!(out, "   {}: {}", r.algorithm, parts.join("; "));
        }
    }
}

/// `P = 8, S = 1 MiB`, for failure lines.
/// Each failed check of the report, one line each (`  ring (P = 4, S = 4 KiB): ...`);
/// empty where every check held.
pub fn failure_lines(report: &Report) -> String {
    let mut out = String::new();
    for r in report.results.iter().filter(|r| !r.passed()) {
        for f in &r.failures {
            let _ = writeln!(out, "  {} {}: {f}", r.algorithm, point(r));
        }
    }
    out
}

fn point(r: &PointResult) -> String {
    format!("(P = {}, S = {})", r.ranks, fmt_bytes(r.bytes))
}

/// The scenario's name, then the machine and the data on one line.
fn title(out: &mut String, s: &Scenario) {
    let _ = writeln!(out, "{}", s.name);
    let checked = match s.data.mode {
        DataMode::Full => "every element checked",
        DataMode::Auto => "every element checked where data.memory_budget allows, else a sample",
        DataMode::Sample => "a sample of elements checked (up to 3072 per vector)",
        DataMode::Off => "",
    };
    let data = match s.data.mode {
        DataMode::Auto | DataMode::Full | DataMode::Sample => format!(
            "{} {}, {} data (seed {}), {checked}",
            serde_name(&s.data.dtype),
            serde_name(&s.data.op),
            serde_name(&s.data.init),
            s.seed,
        ),
        DataMode::Off => format!("{} {}, data off (timing only)", serde_name(&s.data.dtype), serde_name(&s.data.op),),
    };
    let _ = writeln!(
        out,
        "{} on {}, C={}/B, {}; {data}",
        collectives(s),
        describe_topology(&s.topology),
        fmt_time(s.cost_per_byte),
        describe_network(&s.network),
    );
}

/// The scenario's collective, or every collective its entries run (`allreduce,
/// broadcast`), in the order of [`Collective::ALL`].
fn collectives(s: &Scenario) -> String {
    let run: Vec<&str> = Collective::ALL
        .into_iter()
        .filter(|c| *c == s.collective || s.algorithms.iter().any(|a| a.collective == *c))
        .filter(|c| s.algorithms.iter().any(|a| a.collective == *c))
        .map(Collective::name)
        .collect();
    if run.is_empty() { s.collective.name().to_string() } else { run.join(", ") }
}

/// `ideal network`, `flow network (weighted sharing, 16 B envelope)`, or `LogGP network
/// (o=1 us, g=2 us, L=3 us, G=80 ps/B, eager up to 64 KiB)`.
fn describe_network(n: &crate::scenario::NetworkSpec) -> String {
    use crate::scenario::NetworkModel;
    use crate::sim::flow::Sharing;
    let envelope = (n.envelope > 0).then(|| format!("{} envelope", fmt_bytes(n.envelope)));
    match n.model {
        NetworkModel::Ideal => match envelope {
            None => "ideal network".to_string(),
            Some(e) => format!("ideal network ({e})"),
        },
        NetworkModel::Pipelined => {
            let parts: Vec<String> = std::iter::once("pipelined latency".to_string()).chain(envelope).collect();
            format!("ideal network ({})", parts.join(", "))
        }
        NetworkModel::Flow(sharing) => {
            let sharing = match sharing {
                Sharing::Weighted => "weighted sharing",
                Sharing::MaxMin => "max-min sharing",
            };
            let parts: Vec<String> = std::iter::once(sharing.to_string()).chain(envelope).collect();
            format!("flow network ({})", parts.join(", "))
        }
        NetworkModel::LogGP(l) => {
            let params = format!(
                "o={}, g={}, L={}, G={}/B, eager up to {}",
                fmt_time(l.o),
                fmt_time(l.g),
                fmt_time(l.latency),
                fmt_time(l.per_byte),
                fmt_bytes(l.eager_threshold)
            );
            let parts: Vec<String> = std::iter::once(params).chain(envelope).collect();
            format!("LogGP network ({})", parts.join(", "))
        }
    }
}

/// `fully connected, alpha=1 us, B=12.5 GB/s, 1 NIC`; the other kinds alike, with
/// their shape (`torus2d 8x8`, a hierarchy's levels innermost first).
pub(crate) fn describe_topology(t: &TopologySpec) -> String {
    let nics = |n: u32| format!("{n} NIC{}", if n == 1 { "" } else { "s" });
    let link = |l: &crate::topology::Link| format!("alpha={}, B={}", fmt_time(l.alpha), fmt_bandwidth(l.bandwidth));
    let shape = |dims: &Option<[usize; 2]>| match dims {
        Some([r, c]) => format!("{r}x{c}"),
        None => "(squarest rows x cols for each P)".to_string(),
    };
    match t {
        TopologySpec::FullyConnected { link: l, nics: n } => format!("fully connected, {}, {}", link(l), nics(*n)),
        TopologySpec::Hierarchical { levels, nics: n } => {
            let sizes: Vec<String> = levels.iter().map(|l| l.size.to_string()).collect();
            let each: Vec<String> = levels
                .iter()
                .map(|l| {
                    let leader = l.nics.map_or(String::new(), |k| format!(", leaders {}", nics(k)));
                    format!("{} {}{leader}", l.name, link(&l.link))
                })
                .collect();
            format!("hierarchical {} ({}), {}", sizes.join("x"), each.join("; "), nics(*n))
        }
        TopologySpec::Torus2d { dims, link: l, nics: n } => {
            format!("torus2d {}, per hop {}, {}", shape(dims), link(l), nics(*n))
        }
        TopologySpec::Mesh2d { dims, link: l, nics: n } => {
            format!("mesh2d {}, per hop {}, {}", shape(dims), link(l), nics(*n))
        }
        TopologySpec::Ring { link: l, nics: n } => format!("ring, per hop {}, {}", link(l), nics(*n)),
        TopologySpec::Custom { nodes, links, nics: n } => {
            let plural = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
            format!(
                "custom graph of {} and {}, routed by fewest hops, {}",
                plural(nodes.len(), "node", "nodes"),
                plural(links.len(), "link", "links"),
                nics(*n)
            )
        }
        TopologySpec::Graph { nodes, links, placement, nics: n } => {
            let hosts = nodes.iter().filter(|v| v.kind == crate::scenario::NodeKind::Host).count();
            let count = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
            let placed = match placement {
                crate::topology::Placement::Order(o) => ranks_in(*o, "switches"),
                crate::topology::Placement::Hosts(h) => format!("ranks on {} listed", count(h.len(), "host", "hosts")),
            };
            format!(
                "graph of {} ({}, {}) and {}, routed by fewest hops, {placed}, {}",
                count(nodes.len(), "node", "nodes"),
                count(hosts, "host", "hosts"),
                count(nodes.len() - hosts, "switch", "switches"),
                count(links.len(), "link", "links"),
                nics(*n)
            )
        }
        TopologySpec::FatTree { hosts_per_leaf, leaves, spines, link: l, uplink, placement, nics: n } => {
            let ratio = crate::topology::oversubscription(*hosts_per_leaf, *spines, l.bandwidth, uplink.bandwidth);
            format!(
                "fat tree {leaves} x {hosts_per_leaf} hosts, {spines} spine{}, uplinks {} (host links {}, \
                 uplinks {}), {}, {}",
                if *spines == 1 { "" } else { "s" },
                crate::topology::oversubscription_text(ratio),
                link(l),
                link(uplink),
                ranks_in(*placement, "leaves"),
                nics(*n)
            )
        }
        TopologySpec::Cluster(c) => {
            let per = |v: &crate::topology::PerProto| {
                if v.ll == v.simple && v.ll128 == v.simple {
                    fmt_time(v.simple)
                } else {
                    format!("{} (ll {}, ll128 {})", fmt_time(v.simple), fmt_time(v.ll), fmt_time(v.ll128))
                }
            };
            let fabric = match crate::topology::Cluster::new(c, c.nodes * c.gpus_per_node) {
                Ok(all) if c.nodes > 1 => {
                    let d = crate::topology::Topology::describe(&all);
                    d.split_once("per node, ").map_or(String::new(), |(_, f)| format!("; {f}"))
                }
                _ => String::new(),
            };
            let inter = if c.nodes > 1 {
                format!(
                    "; {} per node, alpha={}, B={}{fabric}",
                    nics(c.nics_per_node as u32),
                    per(&c.inter.alpha_s),
                    fmt_bandwidth(c.inter.bandwidth)
                )
            } else {
                String::new()
            };
            format!(
                "cluster {} node{} x {} GPUs, {} alpha={}, B={}{}{inter}; launch {}",
                c.nodes,
                if c.nodes == 1 { "" } else { "s" },
                c.gpus_per_node,
                c.intra.kind.name(),
                per(&c.intra.alpha_s),
                fmt_bandwidth(c.intra.bandwidth),
                if c.intra.kind == crate::topology::IntraKind::Nvlink { " per link" } else { "" },
                per(&c.launch_s)
            )
        }
    }
}

/// `ranks in host order`, or `ranks strided over leaves` (what the hosts are grouped by).
fn ranks_in(order: crate::topology::RankOrder, groups: &str) -> String {
    match order {
        crate::topology::RankOrder::HostOrder => "ranks in host order".to_string(),
        crate::topology::RankOrder::Strided => format!("ranks strided over {groups}"),
    }
}

/// A unit enum's name as it is written in the scenario file (`f32`, `sum`, `random`).
fn serde_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

/// A group of results: one collective at one (ranks, bytes).
type GroupKey = (Collective, usize, u64);

/// Results grouped by (collective, ranks, bytes), groups and rows in the order they
/// first appear: the fastest is marked among algorithms of one collective only.
fn groups(results: &[PointResult]) -> Vec<(GroupKey, Vec<&PointResult>)> {
    let mut index: HashMap<GroupKey, usize> = HashMap::new();
    let mut groups: Vec<(GroupKey, Vec<&PointResult>)> = Vec::new();
    for r in results {
        let key = (r.collective, r.ranks, r.bytes);
        let i = *index.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(r);
    }
    groups
}

/// Alignment of a column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
    Center,
}

/// The columns: header and alignment. The first, unnamed, holds the fastest mark.
/// Under the flow model [`VS_IDEAL`] follows `time`.
const COLUMNS: [(&str, Align); 13] = [
    ("", Align::Left),
    ("algorithm", Align::Left),
    ("time", Align::Right),
    ("closed form", Align::Right),
    ("rel err", Align::Right),
    ("efficiency", Align::Right),
    ("busbw", Align::Right),
    ("msgs", Align::Right),
    ("sent max", Align::Right),
    ("buffer", Align::Right),
    ("max err", Align::Right),
    ("verified", Align::Center),
    ("bitwise", Align::Center),
];

/// Under the flow model: how much longer than the ideal model on the same routes.
const VS_IDEAL: (&str, Align) = ("vs ideal", Align::Right);

/// One line of a table: full cells, or the mark and algorithm then free text
/// (`n/a: why`) that does not take part in the alignment.
enum Line {
    Cells(Vec<String>),
    Span(Vec<String>, String),
}

fn group_table(out: &mut String, rows: &[&PointResult]) {
    let fastest = rows
        .iter()
        .filter(|r| r.not_applicable.is_none() && r.time_s.is_finite())
        .map(|r| r.time_s)
        .fold(f64::INFINITY, f64::min);

    let mut columns: Vec<(&str, Align)> = COLUMNS.to_vec();
    let flow = rows.iter().any(|r| r.ideal_time_s.is_some());
    if flow {
        columns.insert(3, VS_IDEAL);
    }
    let mut lines = vec![Line::Cells(columns.iter().map(|(h, _)| h.to_string()).collect())];
    for r in rows {
        // Times within a relative 1e-9 are a tie (summation order, not the algorithm): all are marked.
        let mark = if r.not_applicable.is_none() && r.time_s <= fastest * (1.0 + 1e-9) { "*" } else { "" };
        let head = vec![mark.to_string(), r.algorithm.clone()];
        if let Some(why) = &r.not_applicable {
            lines.push(Line::Span(head, format!("n/a: {why}")));
            continue;
        }
        let mut cells = head;
        // A run that did not finish (simulation failed) has no time.
        cells.push(if r.time_s.is_nan() { dash() } else { fmt_time(r.time_s) });
        if flow {
            cells.push(r.ideal_time_s.map_or_else(dash, |ideal| vs_ideal(r.time_s, ideal)));
        }
        let closed = match (r.closed_form_s, r.links_shared) {
            (Some(c), _) => fmt_time(c),
            (None, Some(true)) if r.no_closed_form.is_some() => "shared".to_string(),
            _ => dash(),
        };
        cells.extend([
            closed,
            rel_err(r),
            r.efficiency.map_or_else(dash, efficiency),
            r.busbw_bps.map_or_else(dash, fmt_bandwidth),
            r.messages.to_string(),
            fmt_bytes(r.bytes_sent_max),
            fmt_bytes(r.peak_buffer_bytes),
            r.max_abs_error.map_or_else(dash, sci),
            match r.verified {
                Some(true) => "✓",
                Some(false) => "✗",
                None => "-",
            }
            .to_string(),
            match r.ranks_bitwise_equal {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
            .to_string(),
        ]);
        lines.push(Line::Cells(cells));
    }

    let mut widths = vec![0usize; columns.len()];
    for line in &lines {
        let cells = match line {
            Line::Cells(c) | Line::Span(c, _) => c,
        };
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }

    for line in &lines {
        let mut text = String::new();
        match line {
            Line::Cells(cells) => {
                for (i, c) in cells.iter().enumerate() {
                    if i > 0 {
                        text.push_str("  ");
                    }
                    pad(&mut text, c, widths[i], columns[i].1);
                }
            }
            Line::Span(cells, rest) => {
                for (i, c) in cells.iter().enumerate() {
                    pad(&mut text, c, widths[i], columns[i].1);
                    text.push_str("  ");
                }
                text.push_str(rest);
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    }
}

/// `s` padded to `width` characters (not bytes: `✓` is one column, three bytes).
fn pad(out: &mut String, s: &str, width: usize, align: Align) {
    let gap = width.saturating_sub(s.chars().count());
    let (before, after) = match align {
        Align::Left => (0, gap),
        Align::Right => (gap, 0),
        Align::Center => (gap / 2, gap - gap / 2),
    };
    out.extend(std::iter::repeat_n(' ', before));
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', after));
}

/// `+80.2%` slower than the ideal model, `=` when equal, `-0.1%` when faster.
fn vs_ideal(time: f64, ideal: f64) -> String {
    if ideal <= 0.0 || time == ideal {
        return "=".to_string();
    }
    let d = 100.0 * (time / ideal - 1.0);
    if d.abs() >= 1e6 {
        return format!("x{:.3e}", time / ideal);
    }
    if d.abs() < 0.05 { format!("{d:+.3}%") } else { format!("{d:+.1}%") }
}

fn dash() -> String {
    "-".to_string()
}

/// `|time / closed - 1|`, with `!` when above its tolerance.
fn rel_err(r: &PointResult) -> String {
    match r.closed_form_rel_err {
        None => dash(),
        Some(e) => {
            let over = r.closed_form_tolerance.is_some_and(|tol| e > tol || e.is_nan());
            format!("{}{}", sci(e), if over { " !" } else { "" })
        }
    }
}

/// `87.3%`; above 1, a finding: `!` after it.
fn efficiency(e: f64) -> String {
    let over = e > 1.0 + EFFICIENCY_SLACK;
    format!("{}%{}", sig3(e * 100.0), if over { " !" } else { "" })
}

/// Two significant digits in scientific notation (`2.2e-16`), or `0`.
fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else if x.is_finite() {
        format!("{x:.1e}")
    } else {
        format!("{x}")
    }
}

/// Three significant digits for a percentage `v >= 1` (fewer decimals as it grows),
/// zeros trimmed.
fn sig3(v: f64) -> String {
    let decimals = if v >= 99.95 {
        0
    } else if v >= 9.995 {
        1
    } else {
        2
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn error_and_efficiency_formats() {
        assert_eq!(sci(2.220446049250313e-16), "2.2e-16");
        assert_eq!(sci(0.0), "0");
        assert_eq!(efficiency(0.8734), "87.3%");
        assert_eq!(efficiency(1.2), "120% !");
        assert_eq!(efficiency(1.0 + 1e-15), "100%");
    }

    #[test]
    fn title_describes_the_machine_and_data() {
        let text = Table.render(&fixtures::report());
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("ring vs butterfly"));
        let machine = lines.next().unwrap();
        assert!(machine.contains("fully connected, alpha=1 us, B=12.5 GB/s, 1 NIC"), "{machine}");
        assert!(machine.contains("C=50 ps/B"), "{machine}");
        assert!(machine.contains("f32 sum"), "{machine}");
        assert!(machine.contains("random data (seed 42)"), "{machine}");
    }

    #[test]
    fn groups_in_order_with_fastest_marked() {
        let text = Table.render(&fixtures::report());
        let small = text.find("P = 4, S = 4 KiB (1024 x f32)").unwrap();
        let large = text.find("P = 4, S = 1 MiB (262144 x f32)").unwrap();
        assert!(small < large, "{text}");
        // 4 KiB: butterfly is fastest; 1 MiB: ring is.
        let lines: Vec<&str> = text.lines().collect();
        let starred: Vec<&str> =
            lines.iter().filter(|l| l.starts_with('*')).map(|l| l[1..].split_whitespace().next().unwrap()).collect();
        assert_eq!(starred, ["butterfly", "ring"], "{text}");
    }

    #[test]
    fn not_applicable_rows_show_the_reason() {
        let text = Table.render(&fixtures::report());
        let line = text.lines().find(|l| l.contains("mesh_2d")).unwrap();
        assert!(line.ends_with("  n/a: needs 2 NICs per rank, the topology has 1"), "{line}");
    }

    #[test]
    fn columns_align_by_characters() {
        let text = Table.render(&fixtures::report());
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("P = 4, S = 4 KiB"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter(|l| !l.contains("n/a:"))
            .collect();
        assert_eq!(table.len(), 3, "{text}");
        assert!(table[0].contains("verified"));
        assert!(table[1].contains('✓'));
        // Headers line up with the values beneath them (right-aligned: same end column).
        let end_of = |l: &str, needle: &str| {
            let byte = l.find(needle).unwrap() + needle.len();
            l[..byte].chars().count()
        };
        assert_eq!(end_of(table[0], "time"), end_of(table[1], "6.6 us"));
        assert_eq!(end_of(table[0], "time"), end_of(table[2], "2.9 us"));
        assert_eq!(end_of(table[0], "msgs"), end_of(table[1], "  24"));
        assert_eq!(end_of(table[0], "msgs"), end_of(table[2], "  24"));
        // After the three-byte ✓, characters still line up.
        assert_eq!(end_of(table[1], "yes"), end_of(table[2], "yes"));
        assert!(end_of(table[1], "yes") <= end_of(table[0], "bitwise"));
        let v_header = table[0].chars().position(|c| c == 'v').unwrap();
        let check = table[1].chars().position(|c| c == '✓').unwrap();
        assert!(check > v_header && check < v_header + "verified".len());
    }

    #[test]
    fn verdict_when_all_checks_held() {
        let text = Table.render(&fixtures::report());
        assert!(text.ends_with("\n5 points, all checks held\n"), "{text}");
        assert!(!text.contains("failures:"));
    }

    #[test]
    fn failures_are_listed_and_counted() {
        let mut report = fixtures::report();
        report.results[0].failures = vec!["closed form missed: 7.1 us vs 6.6 us".to_string()];
        report.results[0].closed_form_rel_err = Some(0.07);
        report.results[4].failures = vec!["rank 2 element 9 off by 1e-3".to_string(), "ranks differ".to_string()];
        report.results[4].verified = Some(false);
        report.results[4].ranks_bitwise_equal = Some(false);
        let text = Table.render(&report);
        assert!(
            text.contains("\nfailures:\n  ring (P = 4, S = 4 KiB): closed form missed: 7.1 us vs 6.6 us\n"),
            "{text}"
        );
        assert!(text.contains("  butterfly (P = 4, S = 1 MiB): ranks differ\n"));
        assert!(text.contains("7.0e-2 !"), "{text}");
        assert!(text.contains('✗'));
        assert!(text.ends_with("\n5 points, 2 failed\n"), "{text}");
    }

    #[test]
    fn efficiency_above_one_is_a_finding() {
        let mut report = fixtures::report();
        report.results[1].efficiency = Some(1.25);
        let text = Table.render(&report);
        assert!(text.contains("125% !"), "{text}");
    }

    #[test]
    fn data_off_shows_dashes() {
        let mut report = fixtures::report();
        report.scenario.data.mode = DataMode::Off;
        for r in &mut report.results {
            r.max_abs_error = None;
            r.error_bound = None;
            r.verified = None;
            r.ranks_bitwise_equal = None;
        }
        let text = Table.render(&report);
        assert!(text.contains("data off (timing only)"), "{text}");
        assert!(!text.contains('✓'));
    }

    #[test]
    fn empty_report() {
        let mut report = fixtures::report();
        report.results.clear();
        let text = Table.render(&report);
        assert!(text.ends_with("\n0 points, all checks held\n"), "{text}");
    }

    #[test]
    fn single_point_is_singular() {
        let mut report = fixtures::report();
        report.results.truncate(1);
        assert!(Table.render(&report).ends_with("\n1 point, all checks held\n"));
    }
}
