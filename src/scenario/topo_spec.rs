//! The parts of a [`TopologySpec`] that are lists: hierarchy levels, custom nodes and
//! links; and what a topology says about the rank count.

use serde::{Deserialize, Serialize};

use super::{TopologySpec, de_link, ser_link};
use crate::topology::Link;

/// One level of a hierarchical topology (`levels:` entry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelSpec {
    /// The level's name (`nvlink`, `leaf`), or `level I` when none is given.
    pub name: String,
    /// Groups of the level below (ranks, for the innermost) in one group of this level.
    pub size: usize,
    /// Latency and bandwidth between ranks whose innermost common group is at this level.
    #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
    pub link: Link,
    /// Ports of the first rank of each group of this level, if given.
    pub nics: Option<u32>,
}

/// One node of a custom topology (`nodes:` entry): a rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// The name links refer to it by.
    pub name: String,
    /// Its ports, if not the topology's `nics`.
    pub nics: Option<u32>,
}

/// One undirected link of a custom topology (`links:` entry), by node index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdgeSpec {
    /// One end (index into `nodes`).
    pub from: usize,
    /// The other end.
    pub to: usize,
    /// Latency and bandwidth of this hop.
    #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
    pub link: Link,
}

impl TopologySpec {
    /// The rank count the topology fixes, if it fixes one: the product of a hierarchy's
    /// sizes, a grid's `rows * cols`, a custom graph's node count. `None` where the
    /// scenario's `ranks` decides (fully connected, ring, a grid without `dims`).
    pub fn implied_ranks(&self) -> Option<usize> {
        match self {
            TopologySpec::Hierarchical { levels, .. } => {
                levels.iter().try_fold(1usize, |acc, l| acc.checked_mul(l.size))
            }
            TopologySpec::Torus2d { dims: Some([r, c]), .. } | TopologySpec::Mesh2d { dims: Some([r, c]), .. } => {
                r.checked_mul(*c)
            }
            TopologySpec::Custom { nodes, .. } => Some(nodes.len()),
            _ => None,
        }
    }

    /// How the implied rank count comes about, for messages (`8 x 4 x 2 = 64`).
    pub fn implied_ranks_why(&self) -> Option<String> {
        let n = self.implied_ranks()?;
        Some(match self {
            TopologySpec::Hierarchical { levels, .. } => {
                let sizes: Vec<String> = levels.iter().map(|l| l.size.to_string()).collect();
                format!("its levels make {} = {n} ranks", sizes.join(" x "))
            }
            TopologySpec::Torus2d { dims: Some([r, c]), .. } | TopologySpec::Mesh2d { dims: Some([r, c]), .. } => {
                format!("its dims make {r} x {c} = {n} ranks")
            }
            _ => format!("it lists {n} nodes"),
        })
    }
}
