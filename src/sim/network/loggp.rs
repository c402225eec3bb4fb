//! The LogGP model (`network.model: loggp`, docs/loggp.md), after LogGOPSim (Hoefler,
//! Schneider & Lumsdaine 2010): a message of `m` bytes costs its sender's CPU `o`, takes
//! its ports for the gap `g + (m-1) G`, has its last byte at the receiver `L + (m-1) G`
//! after it took them, and then costs its receiver's CPU `o`. A message of more than
//! `S` bytes (the eager threshold) waits until its receiver has posted the matching
//! receive before it may take ports (rendezvous).
//!
//! Where the CPU is the rank's one compute unit, in line with its reductions, the
//! engine runs the overheads ([`NetworkModel::HOST`]); this file owns the rest: when
//! the last byte lands and when the ports are free again. Nothing depends on the
//! topology's links: the topology says only which ports a message takes.

use serde::{Deserialize, Serialize};

use super::{NetworkModel, Sched, Start};
use crate::sim::engine::Observer;
use crate::sim::network::flow::FlowStats;

/// LogGOPSim's default eager threshold `S`, in bytes.
pub const DEFAULT_EAGER_THRESHOLD: u64 = 65535;

/// LogGP's parameters (`network: {model: loggp, o, g, L, G, eager_threshold}`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogGP {
    /// `o`: seconds of a rank's CPU per message, at the sender and at the receiver.
    pub o: f64,
    /// `g`: seconds a port stays taken per message (the least gap between two messages
    /// through one port).
    pub g: f64,
    /// `L`: seconds from a message taking its ports to its first byte at the receiver.
    #[serde(rename = "L")]
    pub latency: f64,
    /// `G`: seconds per byte after the first.
    #[serde(rename = "G")]
    pub per_byte: f64,
    /// `S`: messages of more bytes than this wait for their receive (rendezvous).
    pub eager_threshold: u64,
}

impl LogGP {
    /// `(m-1) G`: the time the bytes after the first take (none for an empty message).
    pub fn stream(&self, m: u64) -> f64 {
        m.saturating_sub(1) as f64 * self.per_byte
    }

    /// `L + (m-1) G`: from taking the ports to the last byte at the receiver.
    pub fn wire(&self, m: u64) -> f64 {
        self.latency + self.stream(m)
    }

    /// `g + (m-1) G`: how long a message keeps its ports.
    pub fn gap(&self, m: u64) -> f64 {
        self.g + self.stream(m)
    }

    /// Whether a message of `m` bytes goes by rendezvous (`m > S`).
    pub fn rendezvous(&self, m: u64) -> bool {
        m > self.eager_threshold
    }
}

/// The LogGP model of one run: its parameters, and no state (every message's times
/// follow from when it takes its ports).
pub struct LogGPNet {
    params: LogGP,
}

impl LogGPNet {
    /// The model with these parameters.
    pub fn new(params: LogGP) -> LogGPNet {
        LogGPNet { params }
    }
}

impl NetworkModel for LogGPNet {
    const END_AT_START: bool = true;
    const HOLDS_PORTS: bool = false;
    const HOST: bool = true;

    /// The last byte lands `L + (m-1) G` after the ports are taken; the ports are free
    /// again after the gap `g + (m-1) G`, which may be before or after that.
    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        let end = s.now + self.params.wire(s.wire);
        q.deliver(end, s.id, 0);
        q.free_ports(s.now + self.params.gap(s.wire), s.ports);
        end
    }

    fn send_overhead(&self, _wire: u64) -> f64 {
        self.params.o
    }

    fn recv_overhead(&self, _wire: u64) -> f64 {
        self.params.o
    }

    fn rendezvous(&self, wire: u64) -> bool {
        self.params.rendezvous(wire)
    }

    fn into_stats<O: Observer>(self, _obs: &mut O) -> Option<FlowStats> {
        None
    }
}
