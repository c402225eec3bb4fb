//! NCCL's transport protocols (LL, LL128, Simple): what each costs on a link.
//!
//! A protocol changes what one message costs, not who sends what: with protocol `p` a
//! message of `m` bytes on a pair whose class has latency `alpha_p` and bandwidth `B`
//! costs `alpha_p + m / (B * p.efficiency())` (docs/gpu-clusters.md). The chunk sizes are
//! what NCCL's kernels move per pipeline step with each protocol.

/// NCCL's protocols, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Low latency: 8-byte stores with a flag, half the bandwidth.
    Ll,
    /// Low latency over 128-byte lines.
    Ll128,
    /// Plain copies with a flag per chunk.
    Simple,
}

impl Proto {
    /// The fraction of a link's bandwidth that carries data with this protocol: 1 for
    /// Simple, 1/2 for LL (a flag beside every 4-byte word), 120/128 for LL128 (a flag
    /// word in every 128-byte line).
    pub fn efficiency(self) -> f64 {
        match self {
            Proto::Simple => 1.0,
            Proto::Ll => 0.5,
            Proto::Ll128 => 120.0 / 128.0,
        }
    }
    /// The protocol named `name` (`simple`, `ll`, `ll128`), if any.
    pub fn from_name(name: &str) -> Option<Proto> {
        Proto::ALL.into_iter().find(|p| p.name() == name)
    }
    /// Every protocol, in NCCL's order.
    pub const ALL: [Proto; 3] = [Proto::Ll, Proto::Ll128, Proto::Simple];
    /// NCCL's name (as in its tuner plugin's CSV).
    pub fn name(self) -> &'static str {
        match self {
            Proto::Ll => "ll",
            Proto::Ll128 => "ll128",
            Proto::Simple => "simple",
        }
    }
    /// Position in NCCL's order (LL 0, LL128 1, Simple 2): the column of its tables.
    pub fn index(self) -> usize {
        self as usize
    }
    /// Bytes of data one ring step of a channel carries with this protocol, as NCCL's
    /// `calcCollChunking` sizes a broadcast's or reduce's chunk (one step per chunk,
    /// `BROADCAST_CHUNKSTEPS` = `REDUCE_CHUNKSTEPS` = 1): the protocol's default buffer
    /// over `NCCL_STEPS` = 8; LL keeps half of it for flags, LL128 15 of every 16 words.
    pub fn chunk_bytes(self) -> u64 {
        match self {
            // 8 lines x 512 threads x 8 steps x 16 B / 8 steps / 2.
            Proto::Ll => 32_768,
            // 120 words x 640 threads x 8 steps x 8 B / 8 steps, 15/16 of it data.
            Proto::Ll128 => 614_400 / 16 * 15,
            // 4 MiB / 8 steps.
            Proto::Simple => 524_288,
        }
    }
}
