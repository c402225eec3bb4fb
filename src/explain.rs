//! `allreduce-sim explain ALGO --ranks N`: an algorithm's schedule as a text table, who
//! sends which elements to whom at each step and whether the receiver reduces or copies,
//! then its closed form with the numbers filled in beside the simulated time.
//!
//! Nothing here describes an algorithm by hand. The rows come from the algorithm's own
//! programs: every rank's [`Op`] stream is read for the regions of its sends and
//! receives, and the program is run on the engine (timing only) with a [`Recorder`] for
//! when each message held its ports. Messages are paired with their send and receive
//! ops the way the engine pairs them: per (source, destination, tag), first in, first
//! out. A *step* is a set of messages that start at the same instant.
//!
//! The machine is fully connected: `--alpha` (default 1us), `--bandwidth` (default
//! 100Gbps), `--nics` (default 1), `--cost-per-byte` (C, default 0.05ns), f32 elements,
//! `--size` bytes per rank (default 1KiB); or, with `--scenario FILE`, that scenario's
//! topology and C (for the algorithms that need a grid or a hierarchy).

use std::fmt::Write as _;

use crate::algos::{self, Machine, Params, Problem};
use crate::collective::Collective;
use crate::cost_model;
use crate::scenario::{ParamValue, TopologySpec};
use crate::sim::op::{Action, Op, Rank, Region, VEC};
use crate::sim::simulate;
use crate::timeline::{MAX_INTERVALS, Recorder};
use crate::topology::{self, FullyConnected, Link, Topology};
use crate::units::{fmt_bandwidth, fmt_bytes, fmt_time, fmt_time_fine};

/// The most ranks `explain` prints a schedule for.
pub const MAX_RANKS: usize = 256;

/// Bytes per element (f32).
const ELEM_BYTES: usize = 4;

/// What to explain, on which machine.
#[derive(Clone, Debug)]
pub struct Request {
    /// The collective the algorithm implements (`--collective`, default allreduce).
    pub collective: Collective,
    /// Algorithm id.
    pub algorithm: String,
    /// Its parameters (`segments=4`).
    pub params: Vec<(String, ParamValue)>,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank (a multiple of 4: f32 elements).
    pub bytes: u64,
    /// Ports per rank.
    pub nics: u32,
    /// Seconds per message.
    pub alpha: f64,
    /// Bytes per second.
    pub bandwidth: f64,
    /// C, seconds per byte reduced.
    pub cost_per_byte: f64,
    /// A scenario's topology instead of the fully connected one that `nics`, `alpha`
    /// and `bandwidth` describe.
    pub topology: Option<TopologySpec>,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            collective: Collective::Allreduce,
            algorithm: "ring".to_string(),
            params: Vec::new(),
            ranks: 4,
            bytes: 1024,
            nics: 1,
            alpha: 1e-6,
            bandwidth: 12.5e9,
            cost_per_byte: 0.05e-9,
            topology: None,
        }
    }
}

/// One message of the schedule.
#[derive(Clone, Debug)]
struct Row {
    src: Rank,
    dst: Rank,
    tag: u32,
    bytes: u64,
    start: f64,
    end: f64,
    sent: Option<Region>,
    into: Option<(Region, Action)>,
}

/// `[64, 128)` for the rank's vector, `buf1[0, 64)` for a scratch buffer.
fn region(r: &Region) -> String {
    let range = format!("[{}, {})", r.offset, r.end());
    if r.buf == VEC { range } else { format!("buf{}{range}", r.buf) }
}

/// The schedule of `req` as text, or what is wrong with the request.
pub fn explain(req: &Request) -> Result<String, String> {
    let c = req.collective;
    // `--param protocol=ll` moves the messages as a scenario entry's `protocol: ll` does,
    // on any algorithm: the links cost that protocol's alpha and bandwidth, and the
    // start-up is its launch. NCCL's algorithms also take their chunk from it (their own
    // parameter); the others take none and are built without it.
    let mut params = req.params.clone();
    let mut proto = topology::Proto::Simple;
    if let Some(i) = params.iter().position(|(k, _)| k == "protocol") {
        let name = params[i].1.to_string();
        proto = topology::Proto::from_name(&name)
            .ok_or_else(|| format!("'protocol' must be one of simple, ll, ll128, not '{name}'"))?;
        if !algos::find_in(c, &req.algorithm).is_some_and(|info| info.params.contains(&"protocol")) {
            params.remove(i);
        }
    }
    let algo = algos::build_for(c, &req.algorithm, Params::new(params.clone())).map_err(|e| e.message)?;
    let info = algos::find_in(c, &req.algorithm).ok_or_else(|| format!("no {c} algorithm '{}'", req.algorithm))?;
    if req.ranks == 0 || req.ranks > MAX_RANKS {
        return Err(format!(
            "--ranks must be between 1 and {MAX_RANKS} (explain prints every message), not {}",
            req.ranks
        ));
    }
    if !req.bytes.is_multiple_of(ELEM_BYTES as u64) {
        return Err(format!(
            "--size must be a whole number of f32 elements (a multiple of 4 bytes), not {}",
            req.bytes
        ));
    }
    if req.nics == 0 {
        return Err("--nics must be at least 1".to_string());
    }
    let positive = |v: f64, flag: &str, can_be_zero: bool| {
        let ok = v.is_finite() && if can_be_zero { v >= 0.0 } else { v > 0.0 };
        if ok {
            Ok(())
        } else {
            Err(format!("{flag} must be a finite number {}, not {v}", if can_be_zero { ">= 0" } else { "> 0" }))
        }
    };
    positive(req.alpha, "--alpha", true)?;
    positive(req.bandwidth, "--bandwidth", false)?;
    positive(req.cost_per_byte, "--cost-per-byte", true)?;
    // As `run` refuses (scenario::limits): every message of the schedule, and the sum of
    // them all, must take a finite time, or the table fills with `inf`.
    let links = match &req.topology {
        Some(spec) => spec.links(),
        None => vec![Link { alpha: req.alpha, bandwidth: req.bandwidth }],
    };
    let (p_f, s_f) = (req.ranks as f64, req.bytes as f64);
    for l in links {
        let one = p_f * l.alpha + s_f / l.bandwidth + s_f * req.cost_per_byte;
        if !(one * 4.0 * p_f * p_f).is_finite() {
            return Err(format!(
                "a message of {} over a link of alpha={}, B={} (with C={}/B) would make times that are \
                 not finite numbers: raise the bandwidth, or lower the latency, cost_per_byte or --size",
                crate::units::fmt_bytes(req.bytes),
                crate::units::fmt_time(l.alpha),
                crate::units::fmt_bandwidth(l.bandwidth),
                crate::units::fmt_time(req.cost_per_byte),
            ));
        }
    }

    // A barrier moves nothing, whatever --size says.
    let elems = if c.has_data() { (req.bytes / ELEM_BYTES as u64) as usize } else { 0 };
    let p = Problem { ranks: req.ranks, elems, elem_bytes: ELEM_BYTES };
    let topo: Box<dyn Topology> = match &req.topology {
        Some(spec) => topology::build_for_run(spec, req.ranks, proto, false)
            .map_err(|why| format!("the scenario's topology does not fit {} ranks: {why}", req.ranks))?,
        None => {
            let flat = FullyConnected {
                ranks: req.ranks,
                link: Link { alpha: req.alpha, bandwidth: req.bandwidth },
                nics: req.nics,
            };
            if proto == topology::Proto::Simple {
                Box::new(flat)
            } else {
                Box::new(topology::ProtoView::new(Box::new(flat), proto))
            }
        }
    };
    let topo = topo.as_ref();
    let machine = Machine { topo, cost_per_byte: req.cost_per_byte };
    algo.applicable(&p, &machine).map_err(|why| format!("{} cannot run here: {why}", algo.label()))?;
    // Every message is filed and recorded before anything is printed: count them first,
    // so a point past the recording is refused at once and not after gigabytes of maps.
    // The algorithm's closed count or the one read off its schedule (what `validate`
    // prints) costs nothing; a walk of the programs is linear in the messages (41 s for
    // 534,773,760), so it stops once past the limit.
    let spec = crate::scenario::AlgoSpec {
        name: req.algorithm.clone(),
        collective: c,
        params,
        location: String::new(),
        protocol: None,
    };
    let counted = algo.messages(&p, topo).or_else(|| crate::estimate::schedule_messages(&spec, &p, topo));
    let (messages, whole) = match counted {
        Some(m) => (m, true),
        None => algos::walk_messages_past(algo.as_ref(), &p, topo, MAX_INTERVALS as u64),
    };
    if messages > MAX_INTERVALS as u64 {
        return Err(too_many(algo.label(), messages, whole));
    }
    check_memory(&algo.label(), messages)?;

    // The programs' regions, each keyed by (src, dst, tag), in issue order: sorted by key
    // below (stably), the k-th send of a key is the k-th message of it the engine ran.
    let mut sends: Vec<((Rank, Rank, u32), Region)> = Vec::new();
    let mut recvs: Vec<((Rank, Rank, u32), Region, Action)> = Vec::new();
    let mut local: Vec<(Rank, Region, Region)> = Vec::new();
    for r in 0..req.ranks as Rank {
        for stream in algo.program(r, p, topo) {
            for op in stream {
                match op {
                    Op::Send { to, tag, src } => sends.push(((r, to, tag), src)),
                    Op::Recv { from, tag, dst, action } => recvs.push(((from, r, tag), dst, action)),
                    Op::Reduce { src_buf, src_offset, dst } => {
                        local.push((r, Region { buf: src_buf, offset: src_offset, len: dst.len }, dst))
                    }
                    Op::Wait(_) | Op::WaitAll | Op::WaitSends(_) => {}
                }
            }
        }
    }

    let steps = algo.start_steps(&p, topo);
    let mut rec = Recorder::new(req.ranks);
    let (stats, _) = simulate(algo.as_ref(), topo, p, req.cost_per_byte, None, &mut rec)
        .map_err(|e| format!("{} does not run on {} ranks: {e}", algo.label(), req.ranks))?;
    // The recording holds reductions too: a schedule of fewer messages than the limit
    // may still pass it.
    let timeline = rec.finish().ok_or_else(|| {
        format!(
            "{} sends {messages} messages and makes {} reductions here, more than explain records \
             ({MAX_INTERVALS} messages and reductions): give fewer --ranks, or fewer pieces (a larger --param \
             chunk, fewer --param segments or channels)",
            algo.label(),
            stats.reductions
        )
    })?;
    // As `run` does: a cluster's start-up shifts the whole run (the protocol's, the one
    // explain builds the machine with).
    let launch = req.topology.as_ref().map_or(0.0, |spec| {
        topology::launch(spec, proto) + if steps > 0 { steps as f64 * topology::step_latency(spec, proto) } else { 0.0 }
    });

    // Pair the engine's messages with the ops, as the engine pairs them: per (source,
    // destination, tag), first in, first out. Flat vectors sorted by key, not a queue per
    // key in a map: a schedule of a tag per message (ring_chunked) made a map node and a
    // queue of each message.
    let msgs = &timeline.messages;
    sends.sort_by_key(|s| s.0);
    recvs.sort_by_key(|r| r.0);
    let mut order: Vec<u32> = (0..msgs.len() as u32).collect();
    order.sort_by_key(|&i| {
        let m = &msgs[i as usize];
        (m.src, m.dst, m.tag)
    });
    let mut sent: Vec<Option<Region>> = vec![None; msgs.len()];
    let mut into: Vec<Option<(Region, Action)>> = vec![None; msgs.len()];
    let (mut si, mut ri) = (0, 0);
    for &i in &order {
        let m = &msgs[i as usize];
        let key = (m.src, m.dst, m.tag);
        while sends.get(si).is_some_and(|s| s.0 < key) {
            si += 1;
        }
        if let Some(s) = sends.get(si).filter(|s| s.0 == key) {
            sent[i as usize] = Some(s.1);
            si += 1;
        }
        while recvs.get(ri).is_some_and(|r| r.0 < key) {
            ri += 1;
        }
        if let Some(r) = recvs.get(ri).filter(|r| r.0 == key) {
            into[i as usize] = Some((r.1, r.2));
            ri += 1;
        }
    }
    drop((sends, recvs, order));
    let row = |i: usize| {
        let m = &msgs[i];
        Row {
            src: m.src,
            dst: m.dst,
            tag: m.tag,
            bytes: m.bytes,
            start: m.start + launch,
            end: m.end + launch,
            sent: sent[i],
            into: into[i],
        }
    };
    let rows = Rows { len: msgs.len(), row: &row };

    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", algo.label(), info.summary);
    let machine_text = match &req.topology {
        Some(_) => topo.describe(),
        None => format!(
            "fully connected, alpha = {}, B = {}, {} NIC{} per rank",
            fmt_time(req.alpha),
            fmt_bandwidth(req.bandwidth),
            req.nics,
            if req.nics == 1 { "" } else { "s" },
        ),
    };
    let _ = writeln!(
        out,
        "P = {} ranks, S = {} per rank ({} x f32); {machine_text}; C = {}/B",
        req.ranks,
        fmt_bytes(req.bytes),
        p.elems,
        fmt_time(req.cost_per_byte),
    );
    if launch > 0.0 {
        let _ = writeln!(
            out,
            "launch {} ({}'s) before every rank's first operation: in every time below",
            fmt_time(launch),
            match proto {
                topology::Proto::Simple => "Simple",
                topology::Proto::Ll => "LL",
                topology::Proto::Ll128 => "LL128",
            }
        );
    }
    if req.algorithm == algos::nccl_ring::INFO.id {
        out.push_str(&algos::nccl_ring::describe(c, &req.params, &p, topo));
    }
    if c == Collective::Allreduce && req.algorithm == "nccl_tree" {
        out.push_str(&algos::nccl_tree_describe(&req.params, &p, topo));
    }
    out.push('\n');
    if rows.len == 0 {
        // Say why: one rank, nothing to move, or messages only to and from a switch.
        let why = if req.ranks == 1 {
            "a single rank has nothing to exchange".to_string()
        } else if stats.messages == 0 {
            format!("a vector of {} has nothing to move", fmt_bytes(req.bytes))
        } else {
            format!(
                "the {} messages are the GPUs' loads and stores through the switch, which this table does not list",
                stats.messages
            )
        };
        let _ = writeln!(out, "no messages between ranks to list ({why})");
    } else {
        schedule_table(&mut out, &rows);
    }

    if !local.is_empty() {
        out.push_str("\nlocal reductions (dst = dst + src), in program order:\n");
        for (r, src, dst) in &local {
            let _ = writeln!(
                out,
                "  rank {r}: {} += {} ({})",
                region(dst),
                region(src),
                fmt_bytes((dst.len * ELEM_BYTES) as u64)
            );
        }
    }

    let steps = rows.count_steps();
    out.push('\n');
    let _ = writeln!(
        out,
        "{} message{}{}, {} reduction{}; the most any rank sent: {}",
        stats.messages,
        if stats.messages == 1 { "" } else { "s" },
        // Steps are counted from the table's messages; where it lists none of them, no count.
        if rows.len == 0 && stats.messages > 0 {
            String::new()
        } else {
            format!(" in {steps} step{}", if steps == 1 { "" } else { "s" })
        },
        stats.reductions,
        if stats.reductions == 1 { "" } else { "s" },
        fmt_bytes(stats.bytes_sent.iter().copied().max().unwrap_or(0)),
    );

    // The closed form, with the numbers filled in.
    out.push('\n');
    let _ = writeln!(out, "closed form:  {}", info.closed_form);
    // The flat symbols, from the machine's one link class if it has one.
    let (link, nics) = topo.uniform().unwrap_or_else(|| topo.best_link());
    let sym = Symbols { ranks: req.ranks, elems: p.elems, bytes: req.bytes, link, c: req.cost_per_byte };
    // A machine of one host has no link: its "best" is no time and no limit (0 s, an
    // infinite B), which is no figure to print or put in a formula.
    let linked = link.bandwidth.is_finite();
    let link_text = if linked {
        format!("alpha = {:e} s, B = {:e} B/s", link.alpha, link.bandwidth)
    } else {
        "alpha and B: none (the machine has no link; one rank sends nothing)".to_string()
    };
    let _ = writeln!(
        out,
        "where         P = {}, n = {}, e = {ELEM_BYTES} B, S = {} B, {link_text}, C = {:e} s/B, k = {nics} NIC{}{}",
        req.ranks,
        p.elems,
        req.bytes,
        req.cost_per_byte,
        if nics == 1 { "" } else { "s" },
        if topo.uniform().is_some() || !linked { "" } else { " (alpha and B: the smallest and largest of any link)" },
    );
    // Only a flat machine has one alpha and one B to put in a flat formula.
    let filled = fill_in(info.closed_form, &sym);
    if linked && topo.uniform().is_some() && filled != info.closed_form {
        let _ = writeln!(out, "filled in:    {filled}");
    }
    // As `run` claims none there: the forms do not count a channel's own rate, so the
    // simulation would be "outside" a form that does not describe it.
    let channel_rate = topo.channel_rated();
    let closed = algo.closed_form(&p, &machine).map(|(t, tol)| (t + launch, tol)).filter(|_| !channel_rate);
    match closed {
        Some((t, _)) => {
            let _ = writeln!(out, "            = {} ({t:e} s)", fmt_time(t));
        }
        None if channel_rate => {
            let _ = writeln!(out, "            = none: {}", crate::runner::CHANNEL_RATE_NO_FORM);
        }
        None => {
            let _ = writeln!(out, "            = none for this problem and machine");
        }
    }
    let time = stats.time + launch;
    let _ = write!(out, "simulated:    {} ({time:e} s)", fmt_time(time));
    if let Some((t, tol)) = closed {
        let err = if t == 0.0 { if time == 0.0 { 0.0 } else { f64::INFINITY } } else { (time / t - 1.0).abs() };
        let _ = write!(
            out,
            ", relative error {err:.1e} ({} tolerance {tol:e})",
            if err <= tol { "within" } else { "OUTSIDE" }
        );
    }
    out.push('\n');
    let lb = cost_model::lower_bound_of(c, &p, topo, req.cost_per_byte);
    let _ = write!(out, "lower bound:  {} (docs/report.md, 'The checks')", fmt_time(lb));
    if time > 0.0 {
        let _ = write!(out, ", efficiency {:.1}%", lb / time * 100.0);
    }
    out.push('\n');
    Ok(out)
}

/// The refusal of a point whose schedule is larger than `explain` records: how many
/// messages it sends (`whole`: the count, else where a walk stopped past the limit), the
/// most a recording holds, and the flags that make it smaller.
fn too_many(label: String, messages: u64, whole: bool) -> String {
    format!(
        "{label} sends {}{messages} messages here, more than explain records ({MAX_INTERVALS} messages and \
         reductions): give fewer --ranks, or fewer pieces (a larger --param chunk, fewer --param segments \
         or channels)",
        if whole { "" } else { "more than " },
    )
}

/// Bytes `explain` holds per message of the schedule, at its peak: the engine's record
/// of it, the send and receive ops paired with it, and its line of the table (about 100
/// characters), which the text may hold three times over while it grows (the old buffer
/// and the new one of twice its size). Resident size over messages measured 270 to 320 B
/// on schedules of 130,000 to 522,000 messages (`ring_chunked`, `double_binary_tree`,
/// `pat`, `direct`, `nccl_ring`, `ring_segmented` at 256 ranks), with a margin, before the
/// text's growth was counted: `explain naive --ranks 256 --size 1MiB` passed the check
/// and died under a `ulimit -v` of 40 to 60 MB growing its 6 MB text to 12 MB.
pub const BYTES_PER_MESSAGE: u64 = 600;

/// Refuse a schedule of `messages` messages whose recording and table would not fit:
/// more than the machine's available memory, or more than this process may reserve
/// (`ulimit -v`), where it would otherwise die of a failed allocation midway.
fn check_memory(label: &str, messages: u64) -> Result<(), String> {
    let need = messages.saturating_mul(BYTES_PER_MESSAGE);
    let refuse = |limit: String| {
        Err(format!(
            "{label} sends {messages} messages here, whose table and recording need about {} of memory, \
             {limit}: give fewer --ranks, or fewer pieces (a larger --param chunk, fewer --param segments \
             or channels)",
            fmt_bytes(need)
        ))
    };
    if let Some(avail) = crate::estimate::available_memory().filter(|&a| a < need) {
        return refuse(format!("more than the {} available (MemAvailable)", fmt_bytes(avail)));
    }
    if !crate::process::reservable(need.saturating_add(crate::estimate::RUN_SLACK_BYTES)) {
        return refuse(crate::process::CANNOT_RESERVE.to_string());
    }
    Ok(())
}

/// The table's rows, made one at a time from the recording and the paired ops (a
/// vector of them cost another ~100 B a message).
struct Rows<'a> {
    len: usize,
    row: &'a dyn Fn(usize) -> Row,
}

impl Rows<'_> {
    /// Distinct start times among the rows (in start order).
    fn count_steps(&self) -> usize {
        let mut n = 0;
        let mut last = None;
        for i in 0..self.len {
            let start = (self.row)(i).start;
            if last != Some(start) {
                n += 1;
                last = Some(start);
            }
        }
        n
    }
}

/// Columns of the schedule table.
const COLUMNS: usize = 10;

/// Row `r`'s cells, `first` if it opens step `step`.
fn cells(r: &Row, first: bool, step: usize) -> [String; COLUMNS] {
    let (into, action) = match &r.into {
        Some((reg, Action::Reduce)) => (region(reg), "reduce"),
        Some((reg, Action::Copy)) => (region(reg), "copy"),
        None => ("?".to_string(), "?"),
    };
    [
        if first { step.to_string() } else { String::new() },
        r.src.to_string(),
        format!("-> {}", r.dst),
        r.tag.to_string(),
        r.sent.as_ref().map_or_else(|| "?".to_string(), region),
        into,
        fmt_bytes(r.bytes),
        action.to_string(),
        // Six digits: two steps' instants may differ past the third (a reduction of
        // 0.2 ns after a 1 us message), and three would print them alike.
        if first { fmt_time_fine(r.start) } else { String::new() },
        fmt_time_fine(r.end),
    ]
}

/// The table: one line per message, the step number on the first message of each step.
/// Two passes over the rows, the widths and then the lines, each row's cells made and
/// dropped in turn: a table of every row's cells held ten strings a message.
fn schedule_table(out: &mut String, rows: &Rows) {
    let header = ["step", "from", "to", "tag", "elements sent", "received into", "bytes", "action", "start", "end"]
        .map(str::to_string);
    // Each row's cells with its step, in order.
    let each = |f: &mut dyn FnMut(&[String; COLUMNS])| {
        f(&header);
        let mut step = 0;
        let mut last = None;
        for i in 0..rows.len {
            let r = (rows.row)(i);
            let first = last != Some(r.start);
            if first {
                step += 1;
                last = Some(r.start);
            }
            f(&cells(&r, first, step));
        }
    };
    let mut widths = [0usize; COLUMNS];
    each(&mut |l| {
        for (w, c) in widths.iter_mut().zip(l) {
            *w = (*w).max(c.chars().count());
        }
    });
    // The whole table at once, not grown by doubling (a copy of it at each step).
    out.reserve((rows.len + 1) * (widths.iter().sum::<usize>() + 2 * (COLUMNS - 1) + 1));
    // Numbers right-aligned, words left-aligned.
    let right = [true, true, false, true, false, false, true, false, true, true];
    let mut text = String::new();
    each(&mut |l| {
        text.clear();
        for (i, c) in l.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = widths[i] - c.chars().count();
            if right[i] {
                text.extend(std::iter::repeat_n(' ', pad));
                text.push_str(c);
            } else {
                text.push_str(c);
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    });
}

/// The values [`fill_in`] puts in a formula.
struct Symbols {
    ranks: usize,
    elems: usize,
    bytes: u64,
    link: Link,
    c: f64,
}

/// `formula` with the machine's symbols replaced by their values in base units:
/// `P`, `n`, `e`, `S`, `alpha`, `B`, `C` (whole words only; derived symbols such as
/// `c`, `T`, `R` are left as the formula defines them).
fn fill_in(formula: &str, s: &Symbols) -> String {
    let value = |tok: &str| -> Option<String> {
        Some(match tok {
            "P" => s.ranks.to_string(),
            "n" => s.elems.to_string(),
            "e" => ELEM_BYTES.to_string(),
            "S" => s.bytes.to_string(),
            "alpha" => format!("{:e}", s.link.alpha),
            "B" => format!("{:e}", s.link.bandwidth),
            "C" => format!("{:e}", s.c),
            _ => return None,
        })
    };
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '\'';
    // A symbol that a condition is about stays a symbol: "for P a power of two" is the
    // case's name, and "for 6 a power of two" would be false (the `where` line has P).
    const CONDITIONS: [&str; 5] = [" a ", " dividing ", " divides ", " is ", " not "];
    let mut out = String::with_capacity(formula.len() + 32);
    let mut word = String::new();
    let ends = formula.char_indices().map(|(i, _)| i).chain(std::iter::once(formula.len()));
    for (c, at) in formula.chars().chain(std::iter::once('\0')).zip(ends) {
        if is_word(c) {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            // "other n" names the remaining cases, not a value ("other 1" would not).
            let condition = CONDITIONS.iter().any(|w| formula[at..].starts_with(w)) || out.ends_with("other ");
            let filled = if condition { None } else { value(&word) };
            out.push_str(&filled.unwrap_or_else(|| word.clone()));
            word.clear();
        }
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_in_whole_words() {
        let link = Link { alpha: 1e-6, bandwidth: 12.5e9 };
        let s = Symbols { ranks: 4, elems: 256, bytes: 1024, link, c: 0.05e-9 };
        assert_eq!(
            fill_in("2(P-1)(alpha + c/B) + (P-1) c C,  c = ceil(n/P) e; log2(P') Pa", &s),
            "2(4-1)(1e-6 + c/1.25e10) + (4-1) c 5e-11,  c = ceil(256/4) 4; log2(P') Pa"
        );
        // The symbol a condition is about is left as it is.
        assert_eq!(
            fill_in("log2(P) T for P a power of two, 2P dividing n; P m divides n", &s),
            "log2(4) T for P a power of two, 2P dividing 256; 4 m divides 256"
        );
        assert_eq!(fill_in("n P; other n: a recurrence", &s), "256 4; other n: a recurrence");
    }

    #[test]
    fn ring_on_four_ranks() {
        let text = explain(&Request::default()).unwrap();
        // 2(P-1) = 6 steps of 4 messages; first step: rank 0 sends chunk 0 to rank 1.
        assert!(text.contains("24 messages in 6 steps"), "{text}");
        assert!(text.contains("(within tolerance 1e-9)"), "{text}");
        let first = text.lines().find(|l| l.trim_start().starts_with("1 ")).unwrap();
        assert!(first.contains("0  -> 1") && first.contains("[0, 64)") && first.contains("reduce"), "{first}");
    }

    /// Steps are instants: two that differ by a 0.2 ns reduction after a 1 us message
    /// print apart (three digits showed both as `1 us`, two steps at one printed instant).
    #[test]
    fn steps_print_their_instants_apart() {
        let text = explain(&Request { ranks: 2, bytes: 4, ..Request::default() }).unwrap();
        // A step's first line is `step from -> to ... start unit end unit`; the others
        // have no step number and no start.
        let starts: Vec<String> = text
            .lines()
            .skip_while(|l| !l.starts_with("step"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|w| w.get(2) == Some(&"->"))
            .map(|w| format!("{} {}", w[w.len() - 4], w[w.len() - 3]))
            .collect();
        assert!(starts.len() >= 3, "{text}");
        let mut unique = starts.clone();
        unique.dedup();
        assert_eq!(unique.len(), starts.len(), "{text}");
    }

    #[test]
    fn bad_requests() {
        let bad = |f: fn(&mut Request)| {
            let mut r = Request::default();
            f(&mut r);
            explain(&r).unwrap_err()
        };
        assert!(bad(|r| r.algorithm = "nope".into()).contains("allowed: "));
        assert!(bad(|r| r.ranks = 0).contains("between 1 and 256"));
        assert!(bad(|r| r.bytes = 6).contains("multiple of 4"));
    }
}
