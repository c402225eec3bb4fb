#!/usr/bin/env python3
"""Turn the L40S table (nccl-tests all_reduce_perf on one PCIe node, P = 2 and 4, one run
per NCCL_ALGO / NCCL_PROTO setting) into nccl-tests-style logs that `calibrate` reads, one
per (P, setting), with the forced setting written as NCCL prints it in its environment
dump. Usage: convert_l40s.py TABLE.csv OUTDIR"""
import csv, os, sys

src, out = sys.argv[1], sys.argv[2]
# The table's config column and the NCCL setting that run was made with.
ENV = {"ring": "NCCL_ALGO=Ring", "tree": "NCCL_ALGO=Tree", "proto_LL": "NCCL_PROTO=LL",
       "proto_LL128": "NCCL_PROTO=LL128", "proto_Simple": "NCCL_PROTO=Simple"}
# Each run's GPUs by PCI bus, from the device lines of the source logs (the table does
# not carry them; every config at one P ran on the same GPUs): the P = 2 runs used the
# first and third of the four GPUs, so `calibrate` puts those ranks on the machine's GPUs
# of those buses (machines/l40s_pcie.yaml, `intra.pci_bus`).
BUSES = {2: ["0000:4a:00", "0000:ca:00"], 4: ["0000:4a:00", "0000:61:00", "0000:ca:00", "0000:e1:00"]}
# How each run was driven, from the same source logs: one process, one thread driving
# all P GPUs (`nThread 1 nGpus P`), 20 timed iterations back to back; `calibrate` reads
# nGpus as the GPUs per host thread (the machine's `host.gpus_per_thread`).
THREADS = "# nThread 1 nGpus {p} minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
groups = {}
for r in csv.DictReader(open(src)):
    groups.setdefault((int(r["P"]), r["config"]), []).append(r)
for (p, config), rs in sorted(groups.items()):
    name = f"l40s_p{p}_{config.replace('proto_', '').lower()}"
    with open(os.path.join(out, f"{name}.txt"), "w") as f:
        f.write(f"# Converted from {os.path.basename(src)} (source: {rs[0]['source']})\n")
        f.write(f"# nccl-tests all_reduce_perf, NCCL {rs[0]['nccl']}\n")
        f.write("# Collective test starting: all_reduce_perf\n" + THREADS.format(p=p))
        f.write(f"# {ENV[config]}\n# Using devices\n")
        for r in range(p):
            f.write(f"#  Rank {r:2d} Group  0 Pid 1 on {rs[0]['host']} device {r} [{BUSES[p][r]}] NVIDIA L40S\n")
        f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                "     time   algbw   busbw #wrong\n")
        for r in sorted(rs, key=lambda r: int(r["bytes"])):
            b = int(r["bytes"])
            oop, ip = float(r["oop_time_us"]), float(r["ip_time_us"])
            f.write(f"{b:>12} {b // 4:>12}  float  sum  -1  {oop:.2f}  {b / oop / 1e3:.2f}  {r['oop_busbw']}  0"
                    f"  {ip:.2f}  {b / ip / 1e3:.2f}  {r['ip_busbw']}  0\n")
