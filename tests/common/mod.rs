//! Helpers shared by the test files that drive the engine with hand-written programs.

use allreduce_sim::algos::{Algorithm, Machine, Problem};
use allreduce_sim::sim::{Op, Program, Rank};
use allreduce_sim::topology::Topology;

/// An algorithm given as a fixed list of ops per rank.
#[derive(Debug)]
pub struct Script(pub Vec<Vec<Op>>);

impl Algorithm for Script {
    fn id(&self) -> &'static str {
        "script"
    }
    fn program(&self, rank: Rank, _p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![Box::new(self.0[rank as usize].clone().into_iter())]
    }
    fn closed_form(&self, _p: &Problem, _m: &Machine) -> Option<(f64, f64)> {
        None
    }
    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        1
    }
}
