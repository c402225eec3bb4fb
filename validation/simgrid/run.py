#!/usr/bin/env python3
"""Runs the SimGrid/SMPI side of the validation and writes results/simgrid.csv. Python 3 stdlib only.

  ./install.sh          # once: SimGrid 3.32 from Debian's packages
  python3 run.py        # build allreduce.c with smpicc, run every point (about a minute)
  python3 run.py --only ring/8to1   # points whose name contains a string

Points (every time is SimGrid's simulated time, in seconds):
  ALGO/OVERSUB/PLACEMENT/SIZE  32 ranks on the two-tier tree, MPI_Allreduce in place with
                               --cfg=smpi/allreduce:{lr,rdb,rab_rdb}, S bytes per rank; and star,
                               allreduce.c's own star (every rank -> rank 0, sum, rank 0 -> every rank)
  p2p/X->c/SIZE                machine p2p: a and b send S bytes each to c at once; arrival of one message
  star/p2p/SIZE                machine p2p, 3 ranks (c, a, b): the star allreduce of allreduce.c
  p2p0/X->c/SIZE               as p2p/X->c on machine p2p0: b's and c's links have latency 0
  star/p2p_ca/SIZE             machine p2p, 2 ranks (c, a): one message a -> c, then one c -> a
  star/p2p_cb/SIZE             the same with b
  ALGO/trunk/SIZE              machine trunk, 4 ranks: every ring neighbour pair crosses one trunk link,
                               two flows of different route latency at a time in each direction
  ALGO/ring8/SIZE              allreduce-sim's `kind: ring` of 8 hosts: routes of 1 to 4 hops share links
  ALGO/torus4x4/SIZE           allreduce-sim's `kind: torus2d` 4 x 4, dimension-order routes
  p2p_G/rK->r0/SIZE            G = ring8, torus4x4: every rank sends S bytes to r0 at once; arrival of each message
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_platform as plat  # noqa: E402

BUILD = os.path.join(HERE, "build")
RESULTS = os.path.join(HERE, "results")

# allreduce-sim's algorithm id -> SMPI's allreduce algorithm.
ALGORITHMS = {"ring": "lr", "butterfly": "rdb", "halving_doubling": "rab_rdb"}
# Run with allreduce.c's own star (as allreduce-sim's `star`) rather than an SMPI algorithm. On the tree
# the root's link is shared by flows of two route latencies (same leaf, other leaf): CM02's weighting.
OWN = ["star"]
OVERSUB = {"1to1": 8, "8to1": 1}  # name -> uplink bandwidth / host link bandwidth
PLACEMENTS = ["host_order", "strided"]
SIZES = {"64KiB": 64 << 10, "1MiB": 1 << 20, "16MiB": 16 << 20}
P2P_SIZES = {"64KiB": 64 << 10, "1MiB": 1 << 20}
RING_P = 8  # hosts of the ring machine
TORUS = (4, 4)  # rows, cols of the torus machine

# The SimGrid configuration: a pure fluid network model with nothing else added. See README.md.
SIMGRID_CFG = [
    # Network: CM02 (Casanova & Marchal 2002), max-min sharing weighted by route latency (weight-S = 0),
    # no latency or bandwidth correction factors.
    "network/model:CM02",
    "network/latency-factor:1",
    "network/bandwidth-factor:1",
    "network/weight-S:0",
    # No reverse (ACK) traffic: a flow uses only the directed links of its route.
    "network/crosstraffic:0",
    # No TCP window bound (rate <= gamma / (2 * route latency)).
    "network/TCP-gamma:1e30",
    # SMPI: no computation time (the program's own code, including the reductions, costs nothing).
    "smpi/simulate-computation:no",
    "smpi/host-speed:1000Gf",
    # Every send is eager: detached (the sender does not wait) and, through the receiver's permanent
    # "small" mailbox, started at once whether or not the receive is posted. Both are compared with
    # "size < threshold", so INT_MAX covers every size here.
    "smpi/send-is-detached-thresh:2147483647",
    "smpi/async-small-thresh:2147483647",
    # No software overheads: per-message send, isend, recv costs, and the 10 ns MPI_Wtime() injects.
    "smpi/os:0:0:0:0:0",
    "smpi/ois:0:0:0:0:0",
    "smpi/or:0:0:0:0:0",
    "smpi/wtime:0",
]


def build():
    os.makedirs(BUILD, exist_ok=True)
    exe = os.path.join(BUILD, "allreduce")
    src = os.path.join(HERE, "allreduce.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run(["smpicc", "-O2", "-Wall", "-o", exe, src], check=True)
    return exe


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def platforms():
    files = {}
    for name, factor in OVERSUB.items():
        files[name] = write(os.path.join(BUILD, "fat_tree_%s.xml" % name), plat.fat_tree(factor).xml(
            "two-tier tree, %d leaves x %d hosts, 1 spine; uplinks %gx the host link (%s)" %
            (plat.LEAVES, plat.HOSTS_PER_LEAF, factor, name)))
    for p in PLACEMENTS:
        files[p] = write(os.path.join(BUILD, "hosts_%s.txt" % p), "\n".join(plat.placement(p)) + "\n")
    m = plat.p2p()
    files["p2p"] = write(os.path.join(BUILD, "p2p.xml"), m.xml("p2p machine"))
    files["p2p_hosts"] = write(os.path.join(BUILD, "hosts_p2p.txt"), "\n".join(m.hosts) + "\n")
    files["p2p0"] = write(os.path.join(BUILD, "p2p0.xml"), plat.p2p(0.0).xml("p2p0 machine: b and c links of latency 0"))
    for name, mach in GRIDS.items():
        files[name] = write(os.path.join(BUILD, name + ".xml"), mach.xml(name))
        files[name + "_hosts"] = write(os.path.join(BUILD, "hosts_%s.txt" % name), "\n".join(mach.hosts) + "\n")
    t = plat.trunk()
    files["trunk"] = write(os.path.join(BUILD, "trunk.xml"), t.xml("trunk machine"))
    files["trunk_hosts"] = write(os.path.join(BUILD, "hosts_trunk.txt"), "\n".join(t.hosts) + "\n")
    for pair in ("ca", "cb"):
        files["p2p_" + pair] = write(os.path.join(BUILD, "hosts_p2p_%s.txt" % pair), "\n".join(pair) + "\n")
    return files


def smpirun(exe, platform_file, hostfile, np, args, extra_cfg=()):
    cmd = (["smpirun", "-np", str(np), "-platform", platform_file, "-hostfile", hostfile]
           + ["--cfg=" + c for c in SIMGRID_CFG + list(extra_cfg)]
           + ["--log=root.thres:warning", exe] + [str(a) for a in args])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit("smpirun failed: %s" % " ".join(cmd))
    return cmd, proc.stdout


def parse_total(out):
    m = re.search(r"^time_s=(\S+) ok=(\d)$", out, re.M)
    if not m:
        raise SystemExit("no time_s line in:\n" + out)
    return float(m.group(1)), int(m.group(2))


# Machines of allreduce-sim's own grid kinds, ranks in host order.
GRIDS = {"ring8": plat.ring_topology(RING_P), "torus4x4": plat.torus(*TORUS)}
P2P_HOSTS = dict([("p2p", plat.p2p().hosts), ("p2p0", plat.p2p().hosts)] + [(k, m.hosts) for k, m in GRIDS.items()])


def p2p_point(machine, src, dst, label):
    """Name of the point 'the message src -> dst arrives' of a p2p run (every rank sends to rank 0)."""
    return ((machine if machine.startswith("p2p") else "p2p_" + machine) + "/%s->%s/%s") % (src, dst, label)


def points():
    """(point, algorithm, smpi algorithm, machine, placement, ranks, bytes, mode)."""
    out = []
    for algo in list(ALGORITHMS) + OWN:
        smpi = ALGORITHMS.get(algo, "")
        for ov in OVERSUB:
            for pl in PLACEMENTS:
                for label, size in SIZES.items():
                    out.append(("%s/%s/%s/%s" % (algo, ov, pl, label), algo, smpi, ov, pl, 32, size,
                                "allreduce" if smpi else algo))
    for label, size in P2P_SIZES.items():
        out.append(("p2p/*->c/%s" % label, "p2p", "", "p2p", "c,a,b", 3, size, "p2p"))
        out.append(("star/p2p/%s" % label, "star", "", "p2p", "c,a,b", 3, size, "star"))
        out.append(("p2p0/*->c/%s" % label, "p2p", "", "p2p0", "c,a,b", 3, size, "p2p"))
        for pair in ("ca", "cb"):
            out.append(("star/p2p_%s/%s" % (pair, label), "star", "", "p2p", ",".join(pair), 2, size, "star"))
    for algo in list(ALGORITHMS) + OWN:
        smpi = ALGORITHMS.get(algo, "")
        for label, size in P2P_SIZES.items():
            out.append(("%s/trunk/%s" % (algo, label), algo, smpi, "trunk", "r0,r1,r2,r3", 4, size,
                        "allreduce" if smpi else algo))
            for g, mach in GRIDS.items():
                np = len(mach.hosts)
                out.append(("%s/%s/%s" % (algo, g, label), algo, smpi, g, "r0..r%d" % (np - 1), np, size,
                            "allreduce" if smpi else algo))
    for g, mach in GRIDS.items():
        for label, size in P2P_SIZES.items():
            np = len(mach.hosts)
            out.append(("p2p_%s/*->r0/%s" % (g, label), "p2p", "", g, "r0..r%d" % (np - 1), np, size, "p2p"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run only the points whose name contains this")
    ap.add_argument("--out", default=os.path.join(RESULTS, "simgrid.csv"))
    ap.add_argument("--cfg", action="append", default=[],
                    help="extra SimGrid option (KEY:VALUE, overrides the defaults), e.g. network/weight-S:1e15")
    a = ap.parse_args()
    exe = build()
    files = platforms()
    os.makedirs(RESULTS, exist_ok=True)
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libsimgrid-dev"],
                             capture_output=True, text=True).stdout.strip() or "?"
    rows, commands = [], []
    start = time.time()
    for point, algo, smpi, machine, pl, np, size, mode in points():
        if a.only not in point:
            continue
        count = size // 4
        if machine == "p2p":
            pf, hf = files["p2p"], files["p2p_hosts" if np == 3 else "p2p_" + pl.replace(",", "")]
        elif machine == "p2p0":
            pf, hf = files["p2p0"], files["p2p_hosts"]
        elif machine == "trunk" or machine in GRIDS:
            pf, hf = files[machine], files[machine + "_hosts"]
        else:
            pf, hf = files[machine], files[pl]
        extra = (["smpi/allreduce:" + smpi] if smpi else []) + a.cfg
        t = time.time()
        cmd, out = smpirun(exe, pf, hf, np, [mode, count], extra)
        commands.append(" ".join(os.path.relpath(c, HERE) if c.startswith(HERE) else c for c in cmd))
        total, ok = parse_total(out)
        if mode == "p2p":
            hosts = P2P_HOSTS[machine]
            for m in re.finditer(r"^flow src=(\d+) dst=0 time_s=(\S+)$", out, re.M):
                name = p2p_point(machine, hosts[int(m.group(1))], hosts[0], point.rsplit("/", 1)[1])
                rows.append([name, "p2p", "", machine, pl, np, size, float(m.group(2)), ok])
        else:
            rows.append([point, algo, smpi, machine, pl, np, size, total, ok])
        print("%-40s %.9e s  ok=%d  (%.1f s wall)" % (rows[-1][0], rows[-1][7], ok, time.time() - t), flush=True)
        if not ok:
            raise SystemExit("%s: the result did not check" % point)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", "algorithm", "smpi_algorithm", "machine", "placement", "ranks", "bytes", "time_s", "ok"])
        for r in rows:
            w.writerow(r[:7] + [repr(r[7])] + r[8:])
    write(os.path.splitext(a.out)[0] + "_commands.txt",
          "# SimGrid %s (Debian libsimgrid-dev); run from validation/simgrid/\n" % version + "\n".join(commands) + "\n")
    print("%d points in %.0f s -> %s" % (len(rows), time.time() - start, os.path.relpath(a.out, os.getcwd())))


if __name__ == "__main__":
    main()
