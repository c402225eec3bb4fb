#!/usr/bin/env python3
"""SimGrid platform XML (and hostfiles) for the validation machines. Python 3 stdlib only.

A machine is a tree of hosts and switches joined by full-duplex links. Every link becomes one
SimGrid link with sharing_policy="SPLITDUPLEX", which SimGrid splits into two independent links
`<id>_UP` and `<id>_DOWN` of the full bandwidth each. A link is declared as (a, b): going a -> b is
its UP direction, b -> a its DOWN direction. Every route between two hosts is the unique tree path,
written out explicitly (routing="Full", symmetrical="NO") with each hop's direction, so SimGrid
routes exactly as allreduce-sim does: host -> its leaf -> (other leaf: spine -> other leaf) -> host.
Switches cost nothing: a route's latency is the sum of its links' latencies and its bandwidth
constraint is every link it crosses; switches are declared as <router>s only for readability.

  python3 gen_platform.py fat_tree --uplink-factor 8 -o fat_tree_1to1.xml
  python3 gen_platform.py hostfile --placement strided -o hosts_strided.txt
  python3 gen_platform.py p2p -o p2p.xml
  python3 gen_platform.py trunk -o trunk.xml
"""
import argparse
import collections
import sys

# The two-tier tree of the validation: 4 leaves of 8 hosts, 1 spine.
HOSTS_PER_LEAF = 8
LEAVES = 4
SPINES = 1
LINK_BW = 12.5e9  # bytes/s: 100 Gb/s
LINK_LAT = 0.5e-6  # s
# uplink bandwidth = factor * LINK_BW; oversubscription = HOSTS_PER_LEAF * LINK_BW / (SPINES * uplink)
UPLINK_FACTORS = {"1to1": 8, "4to1": 2, "8to1": 1}

# The point-to-point machine: hosts a, b, c on one switch s; a's link is slow to cross (10x latency).
P2P_LONG_LAT = 5e-6


class Machine:
    def __init__(self):
        self.hosts = []  # names, in rank order of "host order" placement
        self.switches = []
        self.links = []  # (id, a, b, latency_s, bandwidth_Bps)
        self.route = None  # optional (src, dst) -> [(link id, 'UP'|'DOWN')], for graphs with cycles

    def host(self, name):
        self.hosts.append(name)

    def switch(self, name):
        self.switches.append(name)

    def link(self, lid, a, b, lat, bw):
        self.links.append((lid, a, b, lat, bw))

    def path(self, src, dst):
        """Path from src to dst as [(link id, 'UP'|'DOWN')]: self.route's, else the unique tree path."""
        if self.route is not None:
            return self.route(src, dst)
        adj = collections.defaultdict(list)
        for lid, a, b, _, _ in self.links:
            adj[a].append((b, lid, "UP"))
            adj[b].append((a, lid, "DOWN"))
        prev = {src: None}
        queue = collections.deque([src])
        while queue:
            node = queue.popleft()
            for nxt, lid, d in adj[node]:
                if nxt not in prev:
                    prev[nxt] = (node, lid, d)
                    queue.append(nxt)
        hops = []
        node = dst
        while prev[node] is not None:
            node, lid, d = prev[node][0], prev[node][1], prev[node][2]
            hops.append((lid, d))
        return hops[::-1]

    def route_latency(self, src, dst):
        lat = {lid: l for lid, _, _, l, _ in self.links}
        return sum(lat[lid] for lid, _ in self.path(src, dst))

    def xml(self, comment=""):
        out = ["<?xml version='1.0'?>",
               '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
               '<platform version="4.1">']
        if comment:
            out.append("<!-- %s -->" % comment)
        out.append('  <zone id="machine" routing="Full">')
        for h in self.hosts:
            # Computation is not simulated (smpi/simulate-computation:no); the speed is only a formality.
            out.append('    <host id="%s" speed="1000Gf"/>' % h)
        for s in self.switches:
            out.append('    <router id="%s"/>' % s)
        for lid, a, b, lat, bw in self.links:
            out.append('    <link id="%s" bandwidth="%rBps" latency="%rs" sharing_policy="SPLITDUPLEX"/>'
                       '  <!-- %s - %s: UP is %s -> %s -->' % (lid, float(bw), float(lat), a, b, a, b))
        for src in self.hosts:
            for dst in self.hosts:
                if src == dst:
                    continue
                out.append('    <route src="%s" dst="%s" symmetrical="NO">' % (src, dst))
                for lid, d in self.path(src, dst):
                    out.append('      <link_ctn id="%s" direction="%s"/>' % (lid, d))
                out.append("    </route>")
        out.append("  </zone>")
        out.append("</platform>")
        return "\n".join(out) + "\n"


def fat_tree(uplink_factor, hosts_per_leaf=HOSTS_PER_LEAF, leaves=LEAVES):
    """Two-tier tree: host h under leaf h // hosts_per_leaf, every leaf under the one spine."""
    m = Machine()
    m.switch("spine")
    for leaf in range(leaves):
        m.switch("leaf%d" % leaf)
        m.link("up%d" % leaf, "leaf%d" % leaf, "spine", LINK_LAT, uplink_factor * LINK_BW)
    for h in range(hosts_per_leaf * leaves):
        m.host("h%d" % h)
        m.link("hl%d" % h, "h%d" % h, "leaf%d" % (h // hosts_per_leaf), LINK_LAT, LINK_BW)
    return m


def placement(kind, hosts_per_leaf=HOSTS_PER_LEAF, leaves=LEAVES):
    """Host name of each rank. host_order: rank r on host r (leaf r / 8). strided: rank r on leaf
    r % leaves, slot r / leaves of that leaf, so consecutive ranks are on different leaves."""
    p = hosts_per_leaf * leaves
    if kind == "host_order":
        return ["h%d" % r for r in range(p)]
    if kind == "strided":
        return ["h%d" % ((r % leaves) * hosts_per_leaf + r // leaves) for r in range(p)]
    raise ValueError(kind)


def p2p(short_lat=LINK_LAT):
    """Hosts c, a, b on one switch s (ranks 0, 1, 2 in that order). a -> c and b -> c both cross the
    directed link s -> c (c's link, DOWN); a's route is 5.5 us long, b's 1 us. With short_lat = 0
    (machine p2p0) b's route has latency 0 and a's 5 us."""
    m = Machine()
    m.switch("s")
    for h in ("c", "a", "b"):
        m.host(h)
    m.link("lc", "c", "s", short_lat, LINK_BW)
    m.link("la", "a", "s", P2P_LONG_LAT, LINK_BW)
    m.link("lb", "b", "s", short_lat, LINK_BW)
    return m


def trunk():
    """Two switches s1, s2 joined by one trunk link; r0, r2 on s2 and r1, r3 on s1 (ranks 0..3 in
    that order), r3's link slow to cross (P2P_LONG_LAT). Every message between neighbours of a
    4-rank ring crosses the trunk, two at a time in each direction, one of the two to or from r3:
    flows of different route latency share the trunk at every step."""
    m = Machine()
    m.switch("s1")
    m.switch("s2")
    m.link("trunk", "s1", "s2", LINK_LAT, LINK_BW)
    for h, sw, lat in (("r0", "s2", LINK_LAT), ("r1", "s1", LINK_LAT), ("r2", "s2", LINK_LAT),
                       ("r3", "s1", P2P_LONG_LAT)):
        m.host(h)
        m.link("l" + h, h, sw, lat, LINK_BW)
    return m


def ring_topology(p):
    """allreduce-sim's `kind: ring`: hosts r0..r(p-1), link l<i> joins r<i> (UP: towards r<i+1>) and
    r<i+1 mod p>. Routes go the shorter way round, the increasing way when both are equally long."""
    m = Machine()
    for i in range(p):
        m.host("r%d" % i)
    for i in range(p):
        m.link("l%d" % i, "r%d" % i, "r%d" % ((i + 1) % p), LINK_LAT, LINK_BW)

    def route(src, dst):
        s, d = int(src[1:]), int(dst[1:])
        up = (d - s) % p
        if up <= p - up:
            return [("l%d" % ((s + k) % p), "UP") for k in range(up)]
        return [("l%d" % ((s - 1 - k) % p), "DOWN") for k in range(p - up)]
    m.route = route
    return m


def torus(rows, cols):
    """allreduce-sim's `kind: torus2d`, row-major: host r<i> at row i // cols, column i % cols. Link
    h<i> joins r<i> to its east neighbour (UP: eastwards), v<i> to its south neighbour (UP:
    southwards), wrapping round. Routes: dimension order, along the row to the destination's column,
    then along the column; each the shorter way round, the increasing way on a tie."""
    m = Machine()
    n = rows * cols
    for i in range(n):
        m.host("r%d" % i)

    def at(row, col):
        return (row % rows) * cols + col % cols

    for i in range(n):
        row, col = divmod(i, cols)
        m.link("h%d" % i, "r%d" % i, "r%d" % at(row, col + 1), LINK_LAT, LINK_BW)
        m.link("v%d" % i, "r%d" % i, "r%d" % at(row + 1, col), LINK_LAT, LINK_BW)

    def steps(x, y, size):
        up = (y - x) % size
        return (up, True) if up <= size - up else (size - up, False)

    def route(src, dst):
        (r0, c0), (r1, c1) = divmod(int(src[1:]), cols), divmod(int(dst[1:]), cols)
        hops = []
        k, east = steps(c0, c1, cols)
        c = c0
        for _ in range(k):
            hops.append(("h%d" % at(r0, c), "UP") if east else ("h%d" % at(r0, c - 1), "DOWN"))
            c += 1 if east else -1
        k, south = steps(r0, r1, rows)
        r = r0
        for _ in range(k):
            hops.append(("v%d" % at(r, c1), "UP") if south else ("v%d" % at(r - 1, c1), "DOWN"))
            r += 1 if south else -1
        return hops
    m.route = route
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["fat_tree", "hostfile", "p2p", "trunk"])
    ap.add_argument("--uplink-factor", type=float, default=8, help="uplink bandwidth / host link bandwidth")
    ap.add_argument("--placement", default="host_order", choices=["host_order", "strided"])
    ap.add_argument("-o", "--out", default="-")
    a = ap.parse_args()
    if a.what == "fat_tree":
        text = fat_tree(a.uplink_factor).xml(
            "two-tier tree, %d leaves x %d hosts, 1 spine; uplinks %gx the host link" %
            (LEAVES, HOSTS_PER_LEAF, a.uplink_factor))
    elif a.what == "p2p":
        text = p2p().xml("p2p: c, a, b on switch s; a's link latency %g s" % P2P_LONG_LAT)
    elif a.what == "trunk":
        text = trunk().xml("trunk: s1 - s2; r0, r2 on s2, r1, r3 on s1; r3's link latency %g s" % P2P_LONG_LAT)
    else:
        text = "\n".join(placement(a.placement)) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
