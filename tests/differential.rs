//! The engine against a reference engine: random programs on random machines, the same
//! messages and reductions at the same times, in the same order.
//!
//! The reference below is the machine model of docs/model.md written the plain way:
//! every waiting message is looked at whenever ports are handed out, every list is a
//! `Vec` searched from the front, events sit in a `BinaryHeap`. It has none of the
//! tuned engine's tricks (dirty interfaces, per-pair quotas, nearly-sorted candidates,
//! slabs and intrusive lists, the window of outstanding handles, the bucketed queue), so
//! where the two agree on thousands of random runs those tricks changed nothing.
//!
//! What both must agree on: every message's start and delivery and every reduction's
//! start and end, in the order the engine announces them, and the run's statistics.
//! The programs are single-stream and deadlock-free by construction (below).

mod common;
use common::Script;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use allreduce_sim::algos::Problem;
use allreduce_sim::sim::data::DataPlane;
use allreduce_sim::sim::engine::{MessageInfo, Observer, SimStats};
use allreduce_sim::sim::{Action, Network, Op, Rank, Region, simulate_on};
use allreduce_sim::topology::{Link, Topology};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// What an engine announces, in order.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    /// `(src, dst, tag, bytes, issued, start, end)`.
    Message(Rank, Rank, u32, u64, f64, f64, f64),
    /// `(rank, bytes, start, end)`.
    Compute(Rank, u64, f64, f64),
}

#[derive(Default)]
struct Log(Vec<Seen>);

impl Observer for Log {
    fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
        self.0.push(Seen::Message(m.src, m.dst, m.tag, m.bytes, m.issued, start, end));
    }
    fn compute(&mut self, rank: Rank, bytes: u64, start: f64, end: f64) {
        self.0.push(Seen::Compute(rank, bytes, start, end));
    }
}

/// A machine drawn at random: a link per ordered pair, a few interfaces with a few ports
/// each, and for each ordered pair the interfaces its messages leave and enter by.
#[derive(Debug)]
struct Machine {
    ranks: usize,
    links: Vec<Link>,
    ports: Vec<u32>,
    routes: Vec<(usize, usize)>,
}

impl Topology for Machine {
    fn ranks(&self) -> usize {
        self.ranks
    }
    fn link(&self, a: usize, b: usize) -> Link {
        self.links[a * self.ranks + b]
    }
    fn nics(&self, _rank: usize) -> u32 {
        1
    }
    fn best_link(&self) -> (Link, u32) {
        (self.links[1], 1)
    }
    fn interfaces(&self) -> usize {
        self.ports.len()
    }
    fn interface_ports(&self, i: usize) -> u32 {
        self.ports[i]
    }
    fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
        self.routes[a * self.ranks + b]
    }
    fn describe(&self) -> String {
        "a random machine".into()
    }
}

fn pick(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// Times in whole and half seconds, so that ties (and so the tie rules) are common.
fn machine(rng: &mut ChaCha8Rng) -> Machine {
    let ranks = 2 + pick(rng, 7);
    let links = (0..ranks * ranks)
        .map(|_| Link { alpha: pick(rng, 3) as f64 * 0.5, bandwidth: [1.0, 2.0, 4.0][pick(rng, 3)] })
        .collect();
    // Either one interface per rank (the default machine), or a few shared at random.
    let shared = rng.next_u32().is_multiple_of(2);
    let count = if shared { 1 + pick(rng, ranks + 2) } else { ranks };
    let ports = (0..count).map(|_| 1 + pick(rng, 3) as u32).collect();
    let routes = (0..ranks * ranks)
        .map(|i| if shared { (pick(rng, count), pick(rng, count)) } else { (i / ranks, i % ranks) })
        .collect();
    Machine { ranks, links, ports, routes }
}

/// Random single-stream programs that cannot deadlock: a global list of messages, each
/// rank's ops in that list's order (the send at the sender, the receive at the receiver,
/// both non-blocking), with local reductions and waits mixed in. A wait is only ever for
/// a handle of an earlier entry of the list (or a reduction), and by induction over the
/// list every send is reached and every receive completes. Up to `most` messages; after
/// each, each of its two ranks does something else (a reduction or a wait) with
/// probability 5 in `calm`.
fn programs(rng: &mut ChaCha8Rng, ranks: usize, most: usize, calm: u32) -> Vec<Vec<Op>> {
    let mut ops: Vec<Vec<Op>> = vec![Vec::new(); ranks];
    let mut handles = vec![0u32; ranks];
    for _ in 0..pick(rng, most) {
        let a = pick(rng, ranks);
        let b = (a + 1 + pick(rng, ranks - 1)) % ranks;
        let tag = pick(rng, 3) as u32;
        let len = [0, 1, 2, 3, 5, 8][pick(rng, 6)];
        let action = if rng.next_u32().is_multiple_of(2) { Action::Copy } else { Action::Reduce };
        ops[a].push(Op::send(b as Rank, tag, Region::vec(0, len)));
        ops[b].push(Op::Recv { from: a as Rank, tag, dst: Region::vec(0, len), action });
        handles[b] += 1;
        for r in [a, b] {
            match rng.next_u32() % calm {
                0 => {
                    ops[r].push(Op::reduce(Region::vec(0, 2), Region::vec(2, 2)));
                    handles[r] += 1;
                }
                1 | 2 if handles[r] > 0 => ops[r].push(Op::Wait(pick(rng, handles[r] as usize) as u32)),
                3 => ops[r].push(Op::WaitAll),
                4 => ops[r].push(Op::WaitSends(pick(rng, 3) as u32)),
                _ => {}
            }
        }
    }
    for o in &mut ops {
        o.push(Op::WaitAll);
    }
    ops
}

/// A message in the reference: issued, maybe bound to a receive, maybe started.
struct RefMsg {
    src: usize,
    dst: usize,
    tag: u32,
    len: usize,
    issued: f64,
    seq: u32,
    ifs: (usize, usize),
    /// The receive bound to it: (handle, action).
    recv: Option<(u32, Action)>,
    started: bool,
    delivered: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum RefEv {
    Delivered(usize),
    ComputeDone(usize),
}

/// A compute job: the message reduced on receipt, or a local reduction's handle and
/// length.
#[derive(Clone, Copy)]
enum RefJob {
    Msg(usize),
    Local(u32, usize),
}

struct RankRef {
    ops: Vec<Op>,
    pc: usize,
    /// Handles issued and their completion.
    done: Vec<bool>,
    /// What it waits for before its next op.
    blocked: Option<Op>,
    sends_in_flight: u32,
    send_seq: u32,
    /// Receives posted with no message yet: (from, tag, len, handle, action).
    posted: Vec<(usize, u32, usize, u32, Action)>,
    /// Messages to it with no receive yet, in issue order.
    unbound: Vec<usize>,
    jobs: std::collections::VecDeque<RefJob>,
    finish: f64,
}

/// The reference engine (see the module docs). Returns what it announced and its
/// statistics.
struct Reference<'m> {
    topo: &'m Machine,
    cost: f64,
    elem: usize,
    now: f64,
    ranks: Vec<RankRef>,
    msgs: Vec<RefMsg>,
    free_out: Vec<u32>,
    free_in: Vec<u32>,
    events: BinaryHeap<Reverse<(u64, u64, RefEv)>>,
    pushed: u64,
    log: Vec<Seen>,
    stats: SimStats,
}

impl Reference<'_> {
    fn push(&mut self, time: f64, ev: RefEv) {
        // Non-negative times order as their bits; ties by insertion.
        self.events.push(Reverse((time.to_bits(), self.pushed, ev)));
        self.pushed += 1;
    }

    fn touch(&mut self, r: usize) {
        self.ranks[r].finish = self.ranks[r].finish.max(self.now);
    }

    fn runnable(&self, r: usize) -> bool {
        let st = &self.ranks[r];
        match st.blocked {
            None => true,
            Some(Op::Wait(h)) => st.done[h as usize],
            Some(Op::WaitAll) => st.done.iter().all(|&d| d),
            Some(Op::WaitSends(n)) => st.sends_in_flight <= n,
            Some(_) => unreachable!(),
        }
    }

    /// Run rank `r`'s ops until it blocks or ends.
    fn advance(&mut self, r: usize) {
        loop {
            if !self.runnable(r) {
                return;
            }
            self.ranks[r].blocked = None;
            let Some(&op) = self.ranks[r].ops.get(self.ranks[r].pc) else {
                if self.ranks[r].pc == self.ranks[r].ops.len() {
                    self.ranks[r].pc += 1;
                    self.touch(r);
                }
                return;
            };
            self.ranks[r].pc += 1;
            match op {
                Op::Send { to, tag, src } => self.send(r, to as usize, tag, src.len),
                Op::Recv { from, tag, dst, action } => self.recv(r, from as usize, tag, dst.len, action),
                Op::Reduce { dst, .. } => {
                    let h = self.ranks[r].done.len() as u32;
                    self.ranks[r].done.push(false);
                    self.enqueue(r, RefJob::Local(h, dst.len));
                }
                wait => self.ranks[r].blocked = Some(wait),
            }
        }
    }

    fn send(&mut self, r: usize, to: usize, tag: u32, len: usize) {
        let seq = self.ranks[r].send_seq;
        self.ranks[r].send_seq += 1;
        self.ranks[r].sends_in_flight += 1;
        let id = self.msgs.len();
        let bytes = (len * self.elem) as u64;
        self.stats.messages += 1;
        self.stats.bytes_sent[r] += bytes;
        self.stats.bytes_received[to] += bytes;
        let posted = self.ranks[to].posted.iter().position(|p| p.0 == r && p.1 == tag);
        let recv = posted.map(|i| {
            let (_, _, want, h, action) = self.ranks[to].posted.remove(i);
            assert_eq!(want, len, "the generator keeps lengths equal");
            (h, action)
        });
        if recv.is_none() {
            self.ranks[to].unbound.push(id);
        }
        let ifs = self.topo.route_interfaces(r, to);
        let m =
            RefMsg { src: r, dst: to, tag, len, issued: self.now, seq, ifs, recv, started: false, delivered: false };
        self.msgs.push(m);
    }

    fn recv(&mut self, r: usize, from: usize, tag: u32, len: usize, action: Action) {
        let h = self.ranks[r].done.len() as u32;
        self.ranks[r].done.push(false);
        let found = self.ranks[r].unbound.iter().position(|&id| self.msgs[id].src == from && self.msgs[id].tag == tag);
        match found {
            Some(i) => {
                let id = self.ranks[r].unbound.remove(i);
                self.msgs[id].recv = Some((h, action));
                if self.msgs[id].delivered {
                    self.consume(id);
                }
            }
            None => self.ranks[r].posted.push((from, tag, len, h, action)),
        }
    }

    /// A delivered message meets its receive: copied at once, or reduced in turn.
    fn consume(&mut self, id: usize) {
        let (h, action) = self.msgs[id].recv.unwrap();
        let dst = self.msgs[id].dst;
        match action {
            Action::Copy => self.complete(dst, h),
            Action::Reduce => self.enqueue(dst, RefJob::Msg(id)),
        }
    }

    fn complete(&mut self, r: usize, h: u32) {
        self.ranks[r].done[h as usize] = true;
        self.touch(r);
        self.advance(r);
    }

    fn enqueue(&mut self, r: usize, job: RefJob) {
        self.ranks[r].jobs.push_back(job);
        if self.ranks[r].jobs.len() == 1 {
            self.start_compute(r);
        }
    }

    fn start_compute(&mut self, r: usize) {
        let Some(&job) = self.ranks[r].jobs.front() else { return };
        let len = match job {
            RefJob::Msg(id) => self.msgs[id].len,
            RefJob::Local(_, len) => len,
        };
        let bytes = (len * self.elem) as u64;
        let end = self.now + bytes as f64 * self.cost;
        self.log.push(Seen::Compute(r as Rank, bytes, self.now, end));
        self.push(end, RefEv::ComputeDone(r));
    }

    /// Hand out ports: every waiting message, in the order (issue time, sender, sender's
    /// sequence), starts if both its interfaces have a port free.
    fn match_ports(&mut self) {
        let mut waiting: Vec<usize> = (0..self.msgs.len()).filter(|&i| !self.msgs[i].started).collect();
        waiting.sort_by(|&a, &b| {
            let (x, y) = (&self.msgs[a], &self.msgs[b]);
            x.issued.total_cmp(&y.issued).then(x.src.cmp(&y.src)).then(x.seq.cmp(&y.seq))
        });
        for id in waiting {
            let (o, i) = self.msgs[id].ifs;
            if self.free_out[o] == 0 || self.free_in[i] == 0 {
                continue;
            }
            self.free_out[o] -= 1;
            self.free_in[i] -= 1;
            let m = &mut self.msgs[id];
            m.started = true;
            let bytes = (m.len * self.elem) as u64;
            let end = self.now + self.topo.link(m.src, m.dst).time(bytes as f64);
            self.log.push(Seen::Message(m.src as Rank, m.dst as Rank, m.tag, bytes, m.issued, self.now, end));
            self.push(end, RefEv::Delivered(id));
        }
    }

    fn run(mut self) -> (Vec<Seen>, SimStats) {
        for r in 0..self.ranks.len() {
            self.advance(r);
        }
        self.match_ports();
        while let Some(Reverse((bits, _, ev))) = self.events.pop() {
            self.now = f64::from_bits(bits);
            self.stats.events += 1;
            match ev {
                RefEv::Delivered(id) => {
                    let (src, dst, (o, i)) = (self.msgs[id].src, self.msgs[id].dst, self.msgs[id].ifs);
                    self.msgs[id].delivered = true;
                    self.free_out[o] += 1;
                    self.free_in[i] += 1;
                    self.touch(src);
                    self.touch(dst);
                    if self.msgs[id].recv.is_some() {
                        self.consume(id);
                    }
                    self.ranks[src].sends_in_flight -= 1;
                    if matches!(self.ranks[src].blocked, Some(Op::WaitSends(_))) {
                        self.advance(src);
                    }
                }
                RefEv::ComputeDone(r) => {
                    self.stats.reductions += 1;
                    let h = match self.ranks[r].jobs.pop_front().unwrap() {
                        RefJob::Msg(id) => self.msgs[id].recv.unwrap().0,
                        RefJob::Local(h, _) => h,
                    };
                    self.start_compute(r);
                    self.complete(r, h);
                }
            }
            if self.events.peek().is_none_or(|Reverse((next, _, _))| *next != bits) {
                self.match_ports();
            }
        }
        for (r, st) in self.ranks.iter().enumerate() {
            assert!(st.pc > st.ops.len(), "the reference left rank {r} unfinished");
        }
        self.stats.time = self.now;
        self.stats.rank_finish = self.ranks.iter().map(|st| st.finish).collect();
        (self.log, self.stats)
    }
}

fn reference(topo: &Machine, ops: &[Vec<Op>], cost: f64, elem: usize) -> (Vec<Seen>, SimStats) {
    let p = topo.ranks;
    let ranks = ops
        .iter()
        .map(|o| RankRef {
            ops: o.clone(),
            pc: 0,
            done: Vec::new(),
            blocked: None,
            sends_in_flight: 0,
            send_seq: 0,
            posted: Vec::new(),
            unbound: Vec::new(),
            jobs: Default::default(),
            finish: 0.0,
        })
        .collect();
    let r = Reference {
        topo,
        cost,
        elem,
        now: 0.0,
        ranks,
        msgs: Vec::new(),
        free_out: topo.ports.clone(),
        free_in: topo.ports.clone(),
        events: BinaryHeap::new(),
        pushed: 0,
        log: Vec::new(),
        stats: SimStats { bytes_sent: vec![0; p], bytes_received: vec![0; p], ..SimStats::default() },
    };
    r.run()
}

/// Runs `ops` on the engine and on the reference and requires the same log and statistics.
fn check_against_reference(topo: &Machine, ops: &[Vec<Op>], cost: f64, what: &dyn Fn() -> String) -> SimStats {
    let (want_log, want) = reference(topo, ops, cost, 4);
    let p = Problem { ranks: topo.ranks, elems: 8, elem_bytes: 4 };
    let mut log = Log::default();
    let none = None::<fn(&[usize]) -> DataPlane>;
    let got = simulate_on(&Script(ops.to_vec()), topo, p, cost, Network::IDEAL, none, &mut log).unwrap().0;
    assert_eq!(log.0, want_log, "{}", what());
    assert_eq!(
        (got.time, got.messages, got.events, got.reductions),
        (want.time, want.messages, want.events, want.reductions),
        "{}",
        what()
    );
    assert_eq!(
        (&got.rank_finish, &got.bytes_sent, &got.bytes_received),
        (&want.rank_finish, &want.bytes_sent, &want.bytes_received),
        "{}",
        what()
    );
    want
}

#[test]
fn the_engine_matches_the_reference_on_random_programs() {
    let mut rng = ChaCha8Rng::seed_from_u64(24);
    let mut messages = 0;
    for case in 0..1500 {
        let topo = machine(&mut rng);
        let ops = programs(&mut rng, topo.ranks, 60, 10);
        let cost = [0.0, 0.25, 1.0][pick(&mut rng, 3)];
        let want = check_against_reference(&topo, &ops, cost, &|| format!("case {case}: {topo:?}\n{ops:?}"));
        messages += want.messages;
    }
    // The cases are not empty: about 30 messages each.
    assert!(messages > 20_000, "{messages}");
}

/// Many messages outstanding at once (a few ranks, hundreds of messages, few waits), so
/// that a rank's matching list grows past the point where the engine indexes it by source
/// and tag, and shrinks back: the same run as the reference's plain lists.
#[test]
fn the_engine_matches_the_reference_with_many_messages_outstanding() {
    let mut rng = ChaCha8Rng::seed_from_u64(25);
    let mut long = 0;
    for case in 0..150 {
        let mut topo = machine(&mut rng);
        topo.ranks = topo.ranks.min(4);
        let ranks = topo.ranks;
        topo.links =
            (0..ranks * ranks).map(|_| Link { alpha: 0.5, bandwidth: [1.0, 2.0][pick(&mut rng, 2)] }).collect();
        topo.routes =
            (0..ranks * ranks).map(|i| (i / ranks % topo.ports.len(), i % ranks % topo.ports.len())).collect();
        let ops = programs(&mut rng, ranks, 400, 200);
        // A rank with more than 16 receives posted before its first wait has a long list.
        let posted_early = |o: &Vec<Op>| {
            o.iter()
                .take_while(|op| !matches!(op, Op::Wait(_) | Op::WaitAll))
                .filter(|op| matches!(op, Op::Recv { .. }))
                .count()
        };
        long += usize::from(ops.iter().any(|o| posted_early(o) > 16));
        let cost = [0.0, 0.25][pick(&mut rng, 2)];
        check_against_reference(&topo, &ops, cost, &|| format!("case {case}: {topo:?}\n{ops:?}"));
    }
    assert!(long > 50, "only {long} cases had a long matching list");
}

/// Exchange steps among enough ranks that every rank is indexed: each rank sends to
/// `r + 1, r + 2, ...` and receives from `r - 1, r - 2, ...`, as `direct` and `naive` do,
/// on one interface per rank, so that sends behind busy ports are deferred (and kept as
/// runs) and receives posted before their messages are kept as records. Some sends break
/// a run (another tag or length), some ranks post their receives before their sends, and
/// a rank talks to only some of its peers in some steps.
fn exchanges(rng: &mut ChaCha8Rng, ranks: usize) -> Vec<Vec<Op>> {
    let mut ops: Vec<Vec<Op>> = vec![Vec::new(); ranks];
    for step in 0..1 + pick(rng, 2) {
        // Rank q sends to q + 1 ..= q + reach[q], each message (tag, len).
        let reach: Vec<usize> =
            (0..ranks).map(|_| if pick(rng, 3) == 0 { 1 + pick(rng, ranks - 1) } else { ranks - 1 }).collect();
        let base = 4 * step as u32;
        let msg: Vec<Vec<(u32, usize)>> = (0..ranks)
            .map(|_| {
                (0..ranks - 1)
                    .map(|_| match pick(rng, 12) {
                        0 => (base + 1, 3),
                        1 => (base, 5),
                        _ => (base, 3),
                    })
                    .collect()
            })
            .collect();
        for (r, o) in ops.iter_mut().enumerate() {
            let sends: Vec<Op> = (1..=reach[r])
                .map(|k| {
                    let (tag, len) = msg[r][k - 1];
                    Op::send(((r + k) % ranks) as Rank, tag, Region::vec(0, len))
                })
                .collect();
            let recvs: Vec<Op> = (1..ranks)
                .filter_map(|k| {
                    let q = (r + ranks - k) % ranks;
                    (k <= reach[q]).then(|| {
                        let (tag, len) = msg[q][k - 1];
                        let action = if pick(rng, 2) == 0 { Action::Copy } else { Action::Reduce };
                        Op::Recv { from: q as Rank, tag, dst: Region::vec(0, len), action }
                    })
                })
                .collect();
            if pick(rng, 3) == 0 {
                o.extend(recvs.into_iter().chain(sends));
            } else {
                o.extend(sends.into_iter().chain(recvs));
            }
            o.push(Op::WaitAll);
        }
    }
    ops
}

#[test]
fn the_engine_matches_the_reference_on_exchange_steps() {
    let mut rng = ChaCha8Rng::seed_from_u64(26);
    for case in 0..12 {
        let ranks = 18 + pick(&mut rng, 10);
        let alpha = pick(&mut rng, 2) as f64 * 0.5;
        let links = (0..ranks * ranks).map(|_| Link { alpha, bandwidth: [1.0, 2.0][pick(&mut rng, 2)] }).collect();
        let ports = (0..ranks).map(|_| 1 + pick(&mut rng, 2) as u32).collect();
        let routes = (0..ranks * ranks).map(|i| (i / ranks, i % ranks)).collect();
        let topo = Machine { ranks, links, ports, routes };
        let ops = exchanges(&mut rng, ranks);
        let cost = [0.0, 0.25][pick(&mut rng, 2)];
        check_against_reference(&topo, &ops, cost, &|| format!("case {case}: P = {ranks}"));
    }
}
