//! The LogGP model's terms for the closed forms (docs/loggp.md): read off LogGP's rules
//! (the sender's CPU `o`, then the ports for `g + (m-1) G`, the last byte `L + (m-1) G`
//! after the ports were taken, then the receiver's CPU `o`) and an algorithm's
//! schedule, never off the engine.

pub use crate::sim::network::loggp::LogGP;

/// The time of a run of symmetric exchange steps under LogGP, on ranks with `nics`
/// ports each: at every step every rank issues one send of `m` bytes, posts the receive
/// of as many from another rank, waits for it and adds `r` bytes of it (`r C`), and only
/// then issues the next step's send (ring, butterfly: `steps` yields `(m, r)` per step).
///
/// Every rank does the same at the same times, so one rank's line is the run: its send
/// of step j is issued at `T_j` (`T_0 = 0`), its overhead ends at `T_j + o`, and it takes
/// the port that is free first (each port free `g + (m-1) G` after the last message
/// that took it): `s_j = max(T_j + o, earliest free port)`. The message into the rank
/// took its ports at the same time, so its last byte lands at `s_j + L + (m-1) G`;
/// the CPU is idle then (its only other work, the send's overhead, ended by `s_j`), so
/// the receive's overhead and the addition follow at once:
/// `T_{j+1} = s_j + L + (m-1) G + o + r C`. The receive was posted at `T_j`, before
/// any send could start, so a rendezvous never waits and the eager threshold does not
/// matter. The time is the last `T`.
pub fn exchanges(l: &LogGP, c: f64, nics: u32, steps: impl IntoIterator<Item = (u64, u64)>) -> f64 {
    // Each step's send is ready after the step before: ready times that never decrease.
    let mut ports = super::PortPool::of_nics(nics);
    let mut t = 0.0;
    for (m, r) in steps {
        let start = ports.take(t + l.o, l.gap(m));
        t = start + l.wire(m) + l.o + r as f64 * c;
    }
    t
}

/// When each rank of a binomial broadcast tree has the message, the root at `start`:
/// a rank issues its sends to its children all at once when it has the message (the
/// children listed by `children`, in the order it sends), its CPU pays `o` for each in
/// turn, and each takes the port free first on its `nics` ports (all free when the rank
/// starts): the send to child i starts at `s_i = max(start + (i+1) o, earliest free
/// port)` and the child has the message `L + (m-1) G + o` later. Receives are posted
/// before any send (rendezvous never waits) and no port is still in a gap from before:
/// the caller's conditions. Returns every rank's time, by rank.
pub fn tree_bcast<I: Iterator<Item = usize>>(
    l: &LogGP,
    nics: u32,
    m: u64,
    np: usize,
    start: f64,
    children: impl Fn(usize) -> I,
) -> Vec<f64> {
    let mut got = vec![f64::NAN; np];
    if np == 0 {
        return got;
    }
    got[0] = start;
    let mut ports = super::PortPool::of_nics(nics);
    // Parents have lower ranks than their children in every tree it is used for.
    for q in 0..np {
        // All free when q has the message; its sends are ready one overhead apart.
        ports.reset(nics as usize);
        for (i, child) in children(q).enumerate() {
            let s = ports.take(got[q] + (i + 1) as f64 * l.o, l.gap(m));
            got[child] = s + l.wire(m) + l.o;
        }
    }
    got
}
