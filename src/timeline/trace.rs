//! `run --trace FILE.json`: a [`Timeline`] in the Chrome trace event format, which
//! Perfetto (<https://ui.perfetto.dev>) and `chrome://tracing` open.
//!
//! Layout: one process per rank (`pid` = rank, named `rank N`), and in it one thread
//! (track) per port direction and one for the compute unit, in this order:
//! `send port 0..k`, `recv port 0..k`, `compute` (`k` = the rank's NICs). A message is
//! two complete events (`"ph": "X"`), one on the sender's send-port track and one on the
//! receiver's recv-port track, both spanning the time it held the ports, named with the
//! peer, tag and size (all three also in `args`), and a flow arrow (`"ph": "s"` on the
//! send slice, `"ph": "f"` on the receive slice, same `id`) between them. A reduction is
//! one complete event on the compute track. Under the flow model a last process,
//! `network`, holds a counter track per busy physical link (the [`MAX_LINK_TRACKS`] that
//! carried the most bytes): the share of its bandwidth in use, stepping at every change.
//! Times are in microseconds, as the format
//! wants; the file says `displayTimeUnit: ns` so the viewers show nanoseconds.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::Timeline;
use crate::units::fmt_bytes;

/// Seconds to the format's microseconds.
fn us(seconds: f64) -> f64 {
    seconds * 1e6
}

/// Track ids of one rank: send ports, then receive ports, then the compute unit.
#[derive(Clone, Copy, Debug)]
struct Tracks {
    ports: u32,
}

impl Tracks {
    fn send(self, port: u32) -> u32 {
        1 + port
    }
    fn recv(self, port: u32) -> u32 {
        1 + self.ports + port
    }
    fn compute(self) -> u32 {
        1 + 2 * self.ports
    }
}

/// The most port tracks a rank's trace shows that no message used.
const IDLE_TRACKS: u32 = 8;

/// Write `t` as a Chrome trace to `out`; `meta` (an object: algorithm, ranks, bytes, ...)
/// goes into the file's `otherData`.
pub fn write_trace(t: &Timeline, meta: Value, out: &mut dyn Write) -> io::Result<()> {
    // Tracks per rank: its ports, or more if the recording used more (it cannot); of a
    // rank with more than IDLE_TRACKS ports, only the tracks that carry something
    // (`nics` may be 4294967295).
    let mut ports: Vec<u32> = (0..t.ranks).map(|r| t.nics.get(r).copied().unwrap_or(1).clamp(1, IDLE_TRACKS)).collect();
    for m in &t.messages {
        ports[m.src as usize] = ports[m.src as usize].max(m.out_port + 1);
        ports[m.dst as usize] = ports[m.dst as usize].max(m.in_port + 1);
    }
    let tracks: Vec<Tracks> = ports.iter().map(|&ports| Tracks { ports }).collect();

    let mut first = true;
    let mut emit = |out: &mut dyn Write, ev: Value| -> io::Result<()> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        serde_json::to_writer(&mut *out, &ev).map_err(io::Error::other)
    };

    out.write_all(b"{\"displayTimeUnit\": \"ns\", \"otherData\": ")?;
    serde_json::to_writer(&mut *out, &meta).map_err(io::Error::other)?;
    out.write_all(b", \"traceEvents\": [")?;

    for (r, tr) in tracks.iter().enumerate() {
        emit(
            out,
            json!({"name": "process_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": format!("rank {r}")}}),
        )?;
        emit(out, json!({"name": "process_sort_index", "ph": "M", "pid": r, "tid": 0, "args": {"sort_index": r}}))?;
        let mut thread = |out: &mut dyn Write, tid: u32, name: String| -> io::Result<()> {
            emit(out, json!({"name": "thread_name", "ph": "M", "pid": r, "tid": tid, "args": {"name": name}}))?;
            emit(
                out,
                json!({"name": "thread_sort_index", "ph": "M", "pid": r, "tid": tid, "args": {"sort_index": tid}}),
            )
        };
        for p in 0..tr.ports {
            thread(out, tr.send(p), format!("send port {p}"))?;
        }
        for p in 0..tr.ports {
            thread(out, tr.recv(p), format!("recv port {p}"))?;
        }
        thread(out, tr.compute(), "compute".to_string())?;
    }

    for (id, m) in t.messages.iter().enumerate() {
        let (ts, dur) = (us(m.start), us(m.end - m.start));
        let mid = us(m.start + (m.end - m.start) / 2.0);
        let size = fmt_bytes(m.bytes);
        let send_tid = tracks[m.src as usize].send(m.out_port);
        let recv_tid = tracks[m.dst as usize].recv(m.in_port);
        emit(
            out,
            json!({
                "name": format!("send to {} tag {} ({size})", m.dst, m.tag),
                "cat": "send", "ph": "X", "ts": ts, "dur": dur, "pid": m.src, "tid": send_tid,
                "args": {"peer": m.dst, "tag": m.tag, "bytes": m.bytes,
                         "issued_us": us(m.issued), "waited_for_ports_us": us(m.start - m.issued)},
            }),
        )?;
        emit(
            out,
            json!({
                "name": format!("recv from {} tag {} ({size})", m.src, m.tag),
                "cat": "recv", "ph": "X", "ts": ts, "dur": dur, "pid": m.dst, "tid": recv_tid,
                "args": {"peer": m.src, "tag": m.tag, "bytes": m.bytes},
            }),
        )?;
        // Both ends at the slices' midpoint, so each binds to its own slice even when
        // another slice on the track ends or starts exactly at this one's edges.
        emit(
            out,
            json!({"name": "message", "cat": "message", "ph": "s", "id": id, "ts": mid, "pid": m.src, "tid": send_tid}),
        )?;
        emit(
            out,
            json!({"name": "message", "cat": "message", "ph": "f", "bp": "e", "id": id, "ts": mid,
                   "pid": m.dst, "tid": recv_tid}),
        )?;
    }

    for c in &t.computes {
        let tid = tracks[c.rank as usize].compute();
        emit(
            out,
            json!({
                "name": format!("reduce {}", fmt_bytes(c.bytes)),
                "cat": "compute", "ph": "X", "ts": us(c.start), "dur": us(c.end - c.start),
                "pid": c.rank, "tid": tid, "args": {"bytes": c.bytes},
            }),
        )?;
    }

    // Under the flow model, a process `network` after the ranks, with a counter track per
    // busy link: the share of its bandwidth in use over time.
    if let Some(links) = &t.links {
        let pid = t.ranks;
        emit(out, json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "network"}}))?;
        emit(out, json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}}))?;
        let mut shown = crate::sim::flow::busiest(&links.links, MAX_LINK_TRACKS);
        shown.retain(|&i| links.links[i].bytes > 0);
        for &(i, time, load) in &links.loads {
            if shown.contains(&(i as usize)) {
                let name = format!("link {}", links.links[i as usize].name);
                emit(
                    out,
                    json!({"name": name, "cat": "link", "ph": "C", "ts": us(time), "pid": pid,
                           "args": {"utilisation": load}}),
                )?;
            }
        }
    }
    out.write_all(b"\n]}\n")
}

/// The trace shows the load of this many links at most: the busiest by bytes.
pub const MAX_LINK_TRACKS: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{ComputeRecord, MessageRecord};

    #[test]
    fn parses_with_paired_flows() {
        let t = Timeline {
            ranks: 2,
            nics: vec![1, 1],
            messages: vec![MessageRecord {
                src: 0,
                dst: 1,
                tag: 3,
                bytes: 1024,
                issued: 0.0,
                start: 0.0,
                end: 2e-6,
                out_port: 0,
                in_port: 0,
                seq: 0,
            }],
            computes: vec![ComputeRecord { rank: 1, bytes: 1024, start: 2e-6, end: 3e-6, seq: 1 }],
            links: None,
        };
        let mut buf = Vec::new();
        write_trace(&t, json!({"algorithm": "x"}), &mut buf).unwrap();
        let v: Value = serde_json::from_slice(&buf).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let x: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 3);
        assert_eq!(x[0]["name"], "send to 1 tag 3 (1 KiB)");
        assert_eq!(x[0]["dur"].as_f64(), Some(2.0));
        assert_eq!(x[2]["tid"], 3);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "s").count(), 1);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "f").count(), 1);
        assert_eq!(v["otherData"]["algorithm"], "x");
    }
}
