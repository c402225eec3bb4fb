//! The ideal model (`network.model: ideal`, docs/model.md): a message of `m` bytes
//! between `a` and `b` is delivered `alpha_ab + m / B_ab` after it takes its ports.
//! Nothing is shared but ports.
//!
//! How long it keeps them is `network.latency` ([`Latency`]): under `holds_ports` (the
//! default) until it is delivered; under `pipelined` only while its bytes leave,
//! `m / B_ab`, so that the next message through the same ports streams behind it while
//! the first one's latency runs out on the wire (as a LogGP `g = 0` with `G = 1/B`, or
//! NCCL keeping several chunks in flight per connection).

use serde::{Deserialize, Serialize};

use super::{NetworkModel, Sched, Start};
use crate::sim::engine::Observer;
use crate::sim::network::flow::FlowStats;

/// How long a message holds its ports under the ideal model (`network.latency`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Latency {
    /// For its whole `alpha + m / B`: one message per port pair at a time.
    #[default]
    HoldsPorts,
    /// For its bytes only, `m / B`; it is delivered `alpha` after its last byte left.
    Pipelined,
}

impl Latency {
    /// Its name in the scenario file.
    pub fn name(self) -> &'static str {
        match self {
            Latency::HoldsPorts => "holds_ports",
            Latency::Pipelined => "pipelined",
        }
    }
}

/// The ideal model, ports held to delivery: no state.
pub struct Ideal;

impl NetworkModel for Ideal {
    const END_AT_START: bool = true;
    const LAZY_SENDS: bool = true;

    #[inline]
    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        let end = s.now + s.link.time(s.wire as f64);
        q.deliver(end, s.id, 0);
        end
    }

    fn into_stats<O: Observer>(self, _obs: &mut O) -> Option<FlowStats> {
        None
    }
}

/// The ideal model with `latency: pipelined`: no state either.
pub struct Pipelined;

impl NetworkModel for Pipelined {
    const END_AT_START: bool = true;
    const HOLDS_PORTS: bool = false;
    const LAZY_SENDS: bool = true;

    /// The ports are free once the last byte left, `m / B` after they were taken; the
    /// message lands `alpha` later. Alone it costs `alpha + m / B`, as under
    /// `holds_ports`.
    #[inline]
    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        let sent = s.now + s.wire as f64 / s.link.bandwidth;
        let end = sent + s.link.alpha;
        q.deliver(end, s.id, 0);
        q.free_ports(sent, s.ports);
        end
    }

    fn into_stats<O: Observer>(self, _obs: &mut O) -> Option<FlowStats> {
        None
    }
}

/// The ideal model (`PIPELINED`: with `latency: pipelined`) on a machine whose channels
/// have a rate of their own (a cluster's `channel_bandwidth`, docs/gpu-clusters.md,
/// "Channel bandwidth"): each stream of a rank (one of NCCL's channels, one thread block)
/// passes its messages through its own copy unit of `rate` bytes per second, one after
/// another in the order they take their ports. A message's bytes leave no sooner than
/// its stream's unit has copied them, and no sooner than its link carries them; the ports
/// are held as without the rate (under `pipelined` for `m / B` only, so that other
/// streams' messages use the link meanwhile). Alone, a message costs
/// `alpha + max(m / B, m / rate)`. A message its stream issued at the same instant as the
/// one before, of the same size, to another peer, is that data sent to one more peer (a
/// tree's way down to its children): NCCL's threads store each line to every peer in the
/// same pass, so it leaves with the one before and costs the unit nothing more.
///
/// A message between nodes (a cluster's `inter.channel_bandwidth`) passes through the
/// same unit at `inter_rate` instead: the thread block writes the whole step into the
/// network proxy's buffer before the proxy hands it to the NIC.
pub struct Channels<const PIPELINED: bool> {
    rate: f64,
    /// The rate of a message whose two ranks are on different nodes.
    inter_rate: f64,
    /// GPUs per node (rank `r` is on node `r / gpus`); `usize::MAX` where the machine has
    /// no nodes, so that every pair is on one.
    gpus: usize,
    /// Per rank, per stream: its last message's issue time and bytes, and when its unit
    /// had copied it.
    last: Vec<Vec<Copied>>,
}

/// A stream's last message through its copy unit.
#[derive(Clone, Copy, Default)]
struct Copied {
    issued: f64,
    dst: u32,
    wire: u64,
    done: f64,
}

impl<const PIPELINED: bool> Channels<PIPELINED> {
    /// Streams of `rate` bytes per second, on one node.
    pub fn new(rate: f64) -> Self {
        Channels { rate, inter_rate: rate, gpus: usize::MAX, last: Vec::new() }
    }

    /// Streams of `rate` bytes per second inside a node of `gpus` ranks and
    /// `inter_rate` between nodes.
    pub fn with_nodes(rate: f64, inter_rate: f64, gpus: usize) -> Self {
        Channels { rate, inter_rate, gpus: gpus.max(1), last: Vec::new() }
    }

    /// When the unit of the sender's stream has copied message `s`.
    fn copied(&mut self, s: &Start) -> f64 {
        let (r, k) = (s.src as usize, s.stream as usize);
        if self.last.len() <= r {
            self.last.resize_with(r + 1, Vec::new);
        }
        let streams = &mut self.last[r];
        if streams.len() <= k {
            // Nothing copied yet: no issue time matches (times are never negative).
            streams.resize(k + 1, Copied { issued: -1.0, dst: u32::MAX, wire: 0, done: 0.0 });
        }
        let last = &mut streams[k];
        if last.issued == s.issued && last.wire == s.wire && last.dst != s.dst {
            return last.done;
        }
        let across = s.src as usize / self.gpus != s.dst as usize / self.gpus;
        let rate = if across { self.inter_rate } else { self.rate };
        let done = last.done.max(s.now) + s.wire as f64 / rate;
        *last = Copied { issued: s.issued, dst: s.dst, wire: s.wire, done };
        done
    }
}

impl<const PIPELINED: bool> NetworkModel for Channels<PIPELINED> {
    const END_AT_START: bool = true;
    const HOLDS_PORTS: bool = !PIPELINED;
    const LAZY_SENDS: bool = true;

    #[inline]
    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        let copied = self.copied(s);
        let end = if PIPELINED {
            let sent = s.now + s.wire as f64 / s.link.bandwidth;
            q.free_ports(sent, s.ports);
            sent.max(copied) + s.link.alpha
        } else {
            (s.now + s.link.time(s.wire as f64)).max(copied + s.link.alpha)
        };
        q.deliver(end, s.id, 0);
        end
    }

    fn into_stats<O: Observer>(self, _obs: &mut O) -> Option<FlowStats> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::queue::EventQueue;
    use crate::topology::Link;

    /// A message of 1 MB from rank 0's stream `stream` to `dst`, issued at `issued`, taking
    /// its ports at `now`, on a link of 2 us and 10 GB/s.
    fn msg(id: u32, stream: u16, dst: u32, issued: f64, now: f64) -> Start {
        let link = Link { alpha: 2e-6, bandwidth: 10e9 };
        Start { id, src: 0, dst, stream, issued, wire: 1_000_000, link, now, ports: (0, dst) }
    }

    #[test]
    fn a_stream_copies_its_messages_one_after_another_at_its_rate() {
        // 1 MB at 4 GB/s is 250 us of the stream's unit; the link alone takes 100 us.
        let mut q = EventQueue::default();
        let mut m = Channels::<true>::new(4e9);
        let mut at = |s: Start| m.start(&s, &mut Sched { events: &mut q });
        // First message: copied at 250 us, lands 2 us later.
        assert!((at(msg(0, 0, 1, 0.0, 0.0)) - 252e-6).abs() < 1e-15);
        // The same data to another peer, issued at the same instant: it leaves with the
        // first (NCCL's threads store each line to every peer in one pass).
        assert!((at(msg(1, 0, 2, 0.0, 10e-6)) - 252e-6).abs() < 1e-15);
        // To the same peer again (a second slice), or issued later: the unit takes it
        // after the first, 250 + 250 us, and then it lands.
        assert!((at(msg(2, 0, 1, 0.0, 20e-6)) - 502e-6).abs() < 1e-15);
        assert!((at(msg(3, 0, 2, 30e-6, 30e-6)) - 752e-6).abs() < 1e-15);
        // Another stream has its own unit: 40 us + 250 us + 2 us.
        assert!((at(msg(4, 1, 1, 40e-6, 40e-6)) - 292e-6).abs() < 1e-15);
        // Under holds_ports the link's own time counts from when the ports were taken.
        let mut q = EventQueue::default();
        let mut h = Channels::<false>::new(20e9);
        let end = h.start(&msg(0, 0, 1, 0.0, 0.0), &mut Sched { events: &mut q });
        assert!((end - 102e-6).abs() < 1e-15, "{end}");
    }
}
