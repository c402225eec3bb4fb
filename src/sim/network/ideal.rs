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
/// `alpha + max(m / B, m / rate)`.
pub struct Channels<const PIPELINED: bool> {
    rate: f64,
    /// Per rank, per stream: when its unit has copied its last message.
    free: Vec<Vec<f64>>,
}

impl<const PIPELINED: bool> Channels<PIPELINED> {
    /// Streams of `rate` bytes per second.
    pub fn new(rate: f64) -> Self {
        Channels { rate, free: Vec::new() }
    }

    /// When the unit of `src`'s `stream` has copied a message of `wire` bytes that took
    /// its ports at `now`.
    fn copied(&mut self, src: u32, stream: u16, wire: u64, now: f64) -> f64 {
        let (r, s) = (src as usize, stream as usize);
        if self.free.len() <= r {
            self.free.resize_with(r + 1, Vec::new);
        }
        let streams = &mut self.free[r];
        if streams.len() <= s {
            streams.resize(s + 1, 0.0);
        }
        let done = streams[s].max(now) + wire as f64 / self.rate;
        streams[s] = done;
        done
    }
}

impl<const PIPELINED: bool> NetworkModel for Channels<PIPELINED> {
    const END_AT_START: bool = true;
    const HOLDS_PORTS: bool = !PIPELINED;
    const LAZY_SENDS: bool = true;

    #[inline]
    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        let copied = self.copied(s.src, s.stream, s.wire, s.now);
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
