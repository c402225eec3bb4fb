//! The ideal model (`network.model: ideal`, docs/model.md): a message of `m` bytes
//! between `a` and `b` is delivered `alpha_ab + m / B_ab` after it takes its ports, and
//! holds them until then. Nothing is shared but ports.

use super::{NetworkModel, Sched, Start};
use crate::sim::engine::Observer;
use crate::sim::network::flow::FlowStats;

/// The ideal model: no state.
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
