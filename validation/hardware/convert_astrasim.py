#!/usr/bin/env python3
"""Turn the ASTRA-sim validation points (measured NCCL ring allreduce, digitized from
ASTRA-sim's published plots) into nccl-tests-style logs that `calibrate` reads, one per
(system, P), with NCCL_ALGO=Ring. ASTRA-sim's own predictions stay in the CSV (table.py reads them)."""
import csv, os, sys

src, out = sys.argv[1], sys.argv[2]
rows = [r for r in csv.DictReader(open(src)) if r["usable"] == "1" and r["hw_us"]]
groups = {}
for r in rows:
    groups.setdefault((r["system"], int(r["P"])), []).append(r)
for (system, p), rs in sorted(groups.items()):
    name = {"hgx_h100": "astrasim_hgx_h100", "gpu": "astrasim_hpe_v100"}[system]
    with open(os.path.join(out, f"{name}_p{p}.txt"), "w") as f:
        f.write(f"# Converted from {os.path.basename(src)} (source: {rs[0]['source'].rsplit(':', 1)[0]})\n")
        f.write("# Collective test starting: all_reduce_perf\n# NCCL_ALGO=Ring\n# Using devices\n")
        for r in range(p):
            f.write(f"#  Rank {r:2d} Group  0 Pid 1 on node0 device {r} [0x0] {system}\n")
        f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
        for r in sorted(rs, key=lambda r: int(r["bytes"])):
            b = int(r["bytes"])
            t = float(r["hw_us"])
            f.write(f"{b:>12} {b // 4:>12}  float  sum  -1  {t:.1f}  0  0  N/A  N/A  0  0  N/A\n")
