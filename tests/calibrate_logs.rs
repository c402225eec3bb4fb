//! The log readers of `calibrate` on every real nccl-tests log of validation/hardware/data
//! (their sources are in validation/hardware/README.md), and on broken ones made by hand.

use std::path::Path;

use allreduce_sim::calibrate::log::Bench;
use allreduce_sim::calibrate::{Options, nccl_tests, osu, read_log};
use allreduce_sim::collective::Collective;

fn data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/data").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (file, runs, P, nodes, GPUs per node, collectives, samples per run, first size, its time us, NCCL version).
#[allow(clippy::type_complexity)]
const EXPECT: &[(&str, usize, usize, usize, usize, &[Collective], usize, u64, f64, Option<&str>)] = &[
    ("abci_v100_p4.txt", 1, 4, 1, 4, &[Collective::Allreduce], 24, 4, 0.0, None),
    ("abci_v100_p8.txt", 1, 8, 2, 4, &[Collective::Allreduce], 24, 4, 17.98, None),
    ("abci_v100_p16.txt", 1, 16, 4, 4, &[Collective::Allreduce], 24, 4, 0.0, None),
    ("abci_v100_p32.txt", 1, 32, 8, 4, &[Collective::Allreduce], 24, 4, 0.0, None),
    ("abci_v100_p64.txt", 1, 64, 16, 4, &[Collective::Allreduce], 24, 4, 0.0, None),
    ("abci_v100_p128.txt", 1, 128, 32, 4, &[Collective::Allreduce], 24, 4, 63.27, None),
    ("gcp_a3mega_2n_p16.txt", 1, 16, 2, 8, &[Collective::Allreduce], 31, 8, 135.8, None),
    (
        "tg_h100_1n_p8_ring.txt",
        3,
        8,
        1,
        8,
        &[Collective::Allreduce, Collective::Allgather, Collective::ReduceScatter],
        0,
        8,
        37.33,
        Some("2.26.2"),
    ),
    (
        "tg_h100_1n_p8_nvls.txt",
        3,
        8,
        1,
        8,
        &[Collective::Allreduce, Collective::Allgather, Collective::ReduceScatter],
        0,
        8,
        0.0,
        Some("2.26.2"),
    ),
];

#[test]
fn every_real_log_with_a_header_reads() {
    for &(file, nruns, p, nodes, g, colls, nsamples, first, t_us, version) in EXPECT {
        let runs = nccl_tests::parse(&data(file), file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(runs.len(), nruns, "{file}");
        for (r, c) in runs.iter().zip(colls) {
            assert_eq!(r.collective, *c, "{file}");
            assert_eq!(r.bench, Bench::NcclTests);
            assert_eq!((r.ranks, r.nodes, r.gpus_per_node), (Some(p), Some(nodes), Some(g)), "{file}");
            assert!(!r.samples.is_empty());
            assert_eq!(r.dtype.as_deref(), Some("float"));
            assert_eq!(r.nccl_version.as_deref(), version, "{file}");
            // Sizes grow; times are positive; every in-place time is there; nothing wrong.
            assert!(r.samples.windows(2).all(|w| w[0].bytes < w[1].bytes), "{file}");
            assert!(r.samples.iter().all(|s| s.time_s > 0.0 && s.in_place_s.is_some()));
            assert!(r.samples.iter().all(|s| s.wrong.is_some_and(|w| w < 1e-5)), "{file}");
        }
        if nsamples > 0 {
            assert_eq!(runs[0].samples.len(), nsamples, "{file}");
        }
        assert_eq!(runs[0].samples[0].bytes, first, "{file}");
        if t_us > 0.0 {
            assert!((runs[0].samples[0].time_s - t_us * 1e-6).abs() < 1e-12, "{file}");
        }
    }
}

#[test]
fn the_h100_node_has_devices_and_drops_empty_rows() {
    let runs = nccl_tests::parse(&data("tg_h100_1n_p8_ring.txt"), "ring").unwrap();
    assert_eq!(runs[0].devices, ["NVIDIA H100 80GB HBM3"]);
    // all_gather prints rows of 0 bytes below P elements: they are not samples.
    assert!(runs[1].samples.iter().all(|s| s.bytes > 0));
    assert_eq!(runs[0].samples.last().unwrap().bytes, 8 << 30);
    // Line numbers point into the file.
    let text = data("tg_h100_1n_p8_ring.txt");
    let l = runs[2].samples[0].line;
    assert!(text.lines().nth(l - 1).unwrap().trim_start().starts_with(&runs[2].samples[0].bytes.to_string()));
}

/// AWS's logs are cut from a README: a rank prefix, no device list, no test name.
#[test]
fn headerless_logs_need_ranks_and_infer_the_collective() {
    for file in ["aws_p5_2n_p16.txt", "aws_p4de_2n_p16.txt"] {
        let runs = nccl_tests::parse(&data(file), file).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].collective, Collective::Allreduce, "{file}");
        assert_eq!(runs[0].ranks, None);
        assert!(runs[0].samples.len() >= 20);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/data");
    let e = read_log(&dir.join("aws_p5_2n_p16.txt"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("give --ranks"), "{e}");
    let opts = Options { ranks: Some(16), gpus_per_node: Some(8), ..Options::default() };
    let runs = read_log(&dir.join("aws_p5_2n_p16.txt"), &opts).unwrap();
    assert_eq!((runs[0].ranks, runs[0].nodes, runs[0].gpus_per_node), (Some(16), Some(2), Some(8)));
    let opts = Options { ranks: Some(16), gpus_per_node: Some(3), ..Options::default() };
    let e = read_log(&dir.join("aws_p5_2n_p16.txt"), &opts).unwrap_err();
    assert!(e.to_string().contains("not whole nodes"), "{e}");
}

#[test]
fn environment_and_version_lines_are_read() {
    let log = "host:1:1 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n\
               host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL128\n\
               mpirun -x NCCL_ALGO=Ring -np 2 ./build/reduce_scatter_perf -b 8\n\
               # nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor)\n\
               # Using devices\n\
               #  Rank  0 Group  0 Pid 1 on a device  0 [0x1] GPU\n\
               #  Rank  1 Group  0 Pid 2 on b device  0 [0x1] GPU\n\
               #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
                         64             8     float     sum      -1    10.00    0.00    0.00      0    11.00    0.00    0.00    N/A\n";
    let runs = nccl_tests::parse(log, "x.log").unwrap();
    let r = &runs[0];
    assert_eq!(r.collective, Collective::ReduceScatter);
    assert_eq!(r.nccl_version.as_deref(), Some("2.18.5"));
    assert_eq!(r.env.get("NCCL_ALGO").map(String::as_str), Some("Ring"));
    assert_eq!(r.env.get("NCCL_PROTO").map(String::as_str), Some("LL128"));
    assert_eq!((r.ranks, r.nodes, r.gpus_per_node), (Some(2), Some(2), Some(1)));
    assert_eq!(r.samples[0].in_place_s, Some(11e-6));
    assert_eq!(r.samples[0].wrong, Some(0.0));
}

/// Broken logs: one message naming the file and the line.
#[test]
fn malformed_logs_name_the_line() {
    let header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    let row = "        1024           256     float     sum      -1    12.00    0.00    0.00      0    12.00    0.00    0.00      0\n";
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{header}{row}        2048           512     float     sum      -1    12.00\n"),
            "bad.log:3: a data row of 6 fields; the header at line 1 has 13",
        ),
        (
            format!(
                "{header}        1024           256     float     sum      -1    abc    0.00    0.00      0    12.00    0.00    0.00      0\n"
            ),
            "bad.log:2: the out-of-place time 'abc' is not a number",
        ),
        (
            format!(
                "{header}        1024           256     quux     sum      -1    1.0    0.00    0.00      0    12.00    0.00    0.00      0\n"
            ),
            "bad.log:2: unknown element type 'quux'",
        ),
        (
            format!(
                "{header}        1022           256     float     sum      -1    1.0    0.00    0.00      0    12.00    0.00    0.00      0\n"
            ),
            "bad.log:2: 1022 bytes is not a whole number of float elements",
        ),
        (
            format!(
                "{header}        1024           256     float     sum      -1    0.0    0.00    0.00      0    12.00    0.00    0.00      0\n"
            ),
            "bad.log:2: the out-of-place time must be a positive number",
        ),
        (
            "        1024           256     float     sum      -1    1.0\n".to_string(),
            "bad.log:1: a data row of 6 fields and no column header",
        ),
        ("hello\nworld\n".to_string(), "bad.log: no nccl-tests data rows"),
        (header.to_string(), "bad.log:1: a column header but no data rows"),
        ("# size foo bar\n".to_string(), "bad.log:1: a column header without size"),
        (
            "# Using devices\n#  Rank  0 Pid 1 device 0 [0x1] GPU\n".to_string(),
            "bad.log:2: a device line without its host",
        ),
        (
            format!(
                "#  Rank  0 Pid 1 on a device 0 [0x1] GPU\n#  Rank  1 Pid 1 on a device 1 [0x1] GPU\n#  Rank  2 Pid 1 on b device 0 [0x1] GPU\n{header}{row}"
            ),
            "bad.log:1: the device list puts 2 rank(s) on a but 1 on b",
        ),
    ];
    for (text, want) in cases {
        let e = nccl_tests::parse(&text, "bad.log").unwrap_err().to_string();
        assert!(e.starts_with(want), "got: {e}\nwant: {want}");
    }
}

#[test]
fn osu_allreduce() {
    let log = "# OSU MPI Allreduce Latency Test v7.3\n# Datatype: MPI_FLOAT.\n# Size       Avg Latency(us)\n4                       1.85\n8                       1.83\n1048576               412.50\n";
    let runs = osu::parse(log, "osu.txt", Some(64)).unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r.bench, Bench::Osu);
    assert_eq!(r.collective, Collective::Allreduce);
    assert_eq!(r.ranks, Some(64));
    assert_eq!(r.samples.len(), 3);
    assert!((r.samples[2].time_s - 412.5e-6).abs() < 1e-15);
    assert!(osu::is_osu(log));
    let e = osu::parse(log, "osu.txt", None).unwrap_err().to_string();
    assert!(e.contains("give --ranks N"), "{e}");
    let full = "# OSU MPI Allreduce Latency Test v5.6\n# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n4                       1.85              1.50              2.10        1000\n";
    assert!((osu::parse(full, "o", Some(2)).unwrap()[0].samples[0].time_s - 1.85e-6).abs() < 1e-15);
    let bad = "# OSU MPI Allreduce Latency Test v7.3\n# Size       Avg Latency(us)\n4   x\n";
    let e = osu::parse(bad, "o.txt", Some(2)).unwrap_err().to_string();
    assert!(e.starts_with("o.txt:3: expected a positive average latency"), "{e}");
    let bcast = "# OSU MPI Broadcast Latency Test v7.3\n# Size       Avg Latency(us)\n4   1.0\n";
    let e = osu::parse(bcast, "o.txt", Some(2)).unwrap_err().to_string();
    assert!(e.contains("osu_allreduce only"), "{e}");
}
