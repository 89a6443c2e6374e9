#!/usr/bin/env python3
"""Proxy comparison: the same workloads, from independent load generators, against memcached
directly, twemproxy (nutcracker) and mcring, on the same three memcached backends, interleaved
and repeated; prints a markdown table of medians and mcring's ratios to nutcracker and direct.
What it starts, the workloads and how to read the report: bench/README.md, "compare.py".

usage: bench/compare.py [--rounds N] [--duration S] [--quick] [--workloads LIST] [--ratio S:G]
                        [--cs-number N] [--build DIR] [--mcring PATH] [--bench PATH]
                        [--mcring-flags "ARGS"] [--mcring-threads N] [--mcring-key K=V]
                        [--mcring2-flags "ARGS"] [--mcring2-key K=V] [--mcring2 PATH]
                        [--mcring2-routes N] [--mcring2-routes-shared] [--no-direct]
                        [--pin-generator CPU] [--pin-servers CPUS] [--out DIR]
Environment: MCRING_BUILD, MCRING, MCRING_BENCH as --build, --mcring, --bench (options win).
Every process is started by bench/launch.py and stopped by PID at exit; every run is bounded
(by --duration, or for memcslap by its count, under a hard time limit).
"""

import argparse
import csv
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import launch

MCRING_BENCH_WORKLOADS = ("mix", "1", "2", "3", "4", "5", "6")
# memtier_benchmark (Redis Ltd.'s generator, built in ../shared/bin): the mix at pipeline 1,
# with 10-key multi-gets, and at pipeline 16 (issue 32's three), over keys it pre-fills itself.
MEMTIER_WORKLOADS = ("mt-mix", "mt-mget", "mt-p16")
WORKLOADS = MCRING_BENCH_WORKLOADS + ("cs-mix", "cs-gets", "bin-mix", "bin-gets", "ms-mix",
                                     "ms-mget", "ms-gets") + MEMTIER_WORKLOADS
MEMTIER_FALLBACK = os.path.join(launch.ROOT, "..", "shared", "bin", "memtier_benchmark")
# --mcring2-routes N: the key families of the generators, and the characters after each family's
# prefix that spread its keys over the routes (route i takes family + chars[i], for every family).
# memtier's keys are memtier-0 .. memtier-100000 (R:R, uniform): the first digit is 1-9, ~1/9 of
# the keys each. mcring-bench's are key:00000000 .. key:00099999: the 8th character is 0-9, 1/10
# each. memcslap's keys are random alphanumerics and mcring-bench's workload 5 uses big:: those
# all go to the default route.
ROUTE_FAMILIES = (("memtier-", "123456789"), ("key:000", "0123456789"))
MAX_ROUTES = 9
KEYS = 100000
BIG_KEYS = 20000
IDLE_CONNS = 2000
MS_CONNS = 50
MS_WINDOW = "2k"  # keys per memcaslap connection (a multiple of 1024): 50 x 2048 = 102400 at most
CS_GET_CONNS = 48
CS_SET_CONNS = 2

# The idle clients of workload 6, a process of their own: open N connections, one get on each,
# then "ready"; then every 100 ms a get on 10 random ones; exit after HOLD seconds at the latest.
IDLE_CLIENTS = r"""
import random, socket, sys, time
host, port, n, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
deadline = time.monotonic() + hold
socks = []
def ask(s, i):
    s.sendall(b"get idle:%08d\r\n" % i)
    buf = b""
    while not buf.endswith(b"END\r\n"):
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("idle_clients: connection closed")
        buf += chunk
for i in range(n):
    s = socket.create_connection((host, port), timeout=5)
    socks.append(s)
    ask(s, i)
    if time.monotonic() > deadline:
        raise SystemExit("idle_clients: out of time while connecting")
print("ready", len(socks), flush=True)
rng = random.Random(1)
while time.monotonic() < deadline:
    time.sleep(0.1)
    for i in rng.sample(range(n), 10):
        ask(socks[i], i)
"""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5,
                   help="rounds (default 5); the target order rotates by one each round")
    p.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 round of 3 s runs")
    p.add_argument("--workloads", default="mix,cs-mix,4,3",
                   help="comma-separated, run in that order each round: " + ",".join(WORKLOADS))
    p.add_argument("--ratio", default="1:10", help="set:get of mix, cs-mix, ms-mix, ms-mget")
    p.add_argument("--cs-number", type=int, help="memcslap --execute-number (1000 x --duration)")
    p.add_argument("--build", default=os.environ.get("MCRING_BUILD", "build"),
                   help="where mcring and mcring-bench are (built there if missing)")
    p.add_argument("--mcring", default=os.environ.get("MCRING"),
                   help="the mcring to measure (default BUILD/mcring)")
    p.add_argument("--bench", default=os.environ.get("MCRING_BENCH"),
                   help="the mcring-bench generator (default BUILD/mcring-bench)")
    p.add_argument("--mcring-flags", default="", help="extra mcring flags, word-split")
    p.add_argument("--mcring-threads", type=int, help='adds --threads N to --mcring-flags')
    p.add_argument("--mcring-key", action="append", default=[], metavar="K=V",
                   help="`K: V` in mcring's pool (repeatable), e.g. coalesce_gets=false")
    p.add_argument("--mcring2-flags", help="also run mcring2 (same pool) with these flags")
    p.add_argument("--mcring2-key", action="append", default=[], metavar="K=V",
                   help="`K: V` in mcring2's pool only (repeatable; implies mcring2)")
    p.add_argument("--mcring2", metavar="PATH",
                   help="mcring2's binary (default: the --mcring one; implies mcring2)")
    p.add_argument("--mcring2-routes", type=int, metavar="N",
                   help="mcring2's listener routes keys by prefix over N pools, plus a default "
                        "route (1..%d; implies mcring2; bench/README.md)" % MAX_ROUTES)
    p.add_argument("--mcring2-routes-shared", action="store_true",
                   help="with --mcring2-routes: every route goes to the default route's pool "
                        "(the prefix dispatch without the routes' own connections)")
    p.add_argument("--no-direct", action="store_true", help="do not measure memcached directly")
    p.add_argument("--pin-generator", type=int, metavar="CPU",
                   help="run the load generators on that CPU only (taskset)")
    p.add_argument("--pin-servers", metavar="CPUS",
                   help="run every server (backends, proxies, direct) on these CPUs only, e.g. "
                        "1 or 1-3 (every thread's affinity, set once they are up)")
    p.add_argument("--out", help="keep the raw results (outputs, runs.tsv, configs, logs) in DIR")
    a = p.parse_args()
    if a.quick:
        a.rounds, a.duration = 1, 3
    if not (1 <= a.rounds <= 50 and 1 <= a.duration <= 600):
        p.error("--rounds 1..50, --duration 1..600")
    m = re.fullmatch(r"(\d+):(\d+)", a.ratio)
    if not m or int(m.group(2)) < 1:
        p.error("--ratio wants SET:GET with GET >= 1, e.g. 1:10")
    a.set_w, a.get_w = int(m.group(1)), int(m.group(2))
    a.cs_number = a.cs_number or 1000 * a.duration
    if not 10 <= a.cs_number <= 1000000:
        p.error("--cs-number wants 10..1000000")
    # Each set thread's count, so that all sets : all gets = SET:GET (at least 1).
    a.cs_set_number = max(1, (CS_GET_CONNS * a.cs_number * a.set_w // a.get_w - a.cs_number)
                          // CS_SET_CONNS)
    a.workloads = a.workloads.split(",")
    for w in a.workloads:
        if w not in WORKLOADS:
            p.error("unknown workload '%s' (%s)" % (w, ", ".join(WORKLOADS)))
    for kv in a.mcring_key + a.mcring2_key:
        if not re.fullmatch(r"[a-z_]+=[A-Za-z0-9_.:-]+", kv):
            p.error("--mcring-key / --mcring2-key want KEY=VALUE, not '%s'" % kv)
    a.mcring_args = shlex.split(a.mcring_flags)
    if a.mcring_threads:
        a.mcring_args += ["--threads", str(a.mcring_threads)]
    if a.mcring2_routes is not None and not 1 <= a.mcring2_routes <= MAX_ROUTES:
        p.error("--mcring2-routes wants 1..%d" % MAX_ROUTES)
    if a.mcring2_routes_shared and a.mcring2_routes is None:
        p.error("--mcring2-routes-shared goes with --mcring2-routes N")
    a.with_mcring2 = (a.mcring2_flags is not None or bool(a.mcring2_key) or a.mcring2 is not None
                      or a.mcring2_routes is not None)
    a.mcring2_args = shlex.split(a.mcring2_flags or "")
    a.generator_prefix = ["taskset", "-c", str(a.pin_generator)] if a.pin_generator is not None else []
    a.server_cpus = parse_cpus(p, a.pin_servers) if a.pin_servers is not None else None
    return a


def parse_cpus(p, text):
    """A CPU list as taskset -c spells it (1, 0-1, 0,2): the set of CPU numbers."""
    cpus = set()
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if m is None:
            p.error("--pin-servers wants a CPU list like 1, 1-3 or 0,2, not '%s'" % text)
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        cpus.update(range(lo, hi + 1))
    allowed = os.sched_getaffinity(0)
    if not cpus <= allowed:
        p.error("--pin-servers: this machine has CPUs %s for us"
                % ",".join(str(c) for c in sorted(allowed)))
    return cpus


def pin_threads(pid, cpus):
    """Sets the affinity of every thread of pid (threads started later inherit it)."""
    for tid in launch.thread_ids(pid):
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            pass  # a thread that has just exited


def tools(a):
    """The programs, installing the bench packages (packaging/deps.sh bench) if one is missing."""
    def find():
        return {"nutcracker": launch.find_tool("nutcracker", "/usr/sbin/nutcracker"),
                "memcaslap": launch.find_tool("memcaslap"), "memcslap": launch.find_tool("memcslap"),
                "memcached": launch.find_tool("memcached", "/usr/bin/memcached"),
                "memtier": launch.find_tool("memtier_benchmark", MEMTIER_FALLBACK)}
    # memcslap and memcaslap only when a workload uses them.
    needed = {"nutcracker", "memcached"}
    needed |= {"memcslap"} if any(w.startswith(("cs-", "bin-")) for w in a.workloads) else set()
    needed |= {"memcaslap"} if any(w.startswith("ms-") for w in a.workloads) else set()
    t = find()
    if any(w in MEMTIER_WORKLOADS for w in a.workloads) and not t["memtier"]:
        sys.exit("compare.py: the mt-* workloads need memtier_benchmark (on $PATH or at %s); "
                 "it is not in Debian 12" % os.path.normpath(MEMTIER_FALLBACK))
    if not all(t[n] for n in needed):
        subprocess.run([os.path.join(launch.ROOT, "packaging", "deps.sh"), "bench"], check=True)
        t = find()
    for name in needed:
        if not t[name]:
            sys.exit("compare.py: %s missing (packaging/deps.sh bench)" % name)
    build = os.path.join(launch.ROOT, a.build) if not os.path.isabs(a.build) else a.build
    mcring = a.mcring or os.path.join(build, "mcring")
    bench = a.bench or os.path.join(build, "mcring-bench")
    if ((not a.mcring and not os.access(mcring, os.X_OK)) or
            (not a.bench and not os.access(bench, os.X_OK))):
        subprocess.run(["cmake", "-S", launch.ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "--target", "mcring", "mcring-bench", "-j2"],
                       check=True, stdout=subprocess.DEVNULL)
    for path in (mcring, bench):
        if not os.access(path, os.X_OK):
            sys.exit("compare.py: %s missing or not executable" % path)
    t["mcring"], t["bench"] = os.path.realpath(mcring), os.path.realpath(bench)
    t["mcring2"] = t["mcring"]
    if a.mcring2:
        if not os.access(a.mcring2, os.X_OK):
            sys.exit("compare.py: %s missing or not executable" % a.mcring2)
        t["mcring2"] = os.path.realpath(a.mcring2)
    return t


def workload_args(a, w):
    """mcring-bench load flags of a workload."""
    small = ["--keys", str(KEYS), "--value-size", "32-100"]
    return {
        "mix": ["--workload", "mix", "--ratio", a.ratio],
        "1": small + ["--connections", "1", "--pipeline", "1", "--ratio", "0:1"],
        "2": small + ["--connections", "50", "--pipeline", "1", "--ratio", "0:1"],
        "3": small + ["--connections", "50", "--pipeline", "16", "--ratio", "1:9"],
        "4": small + ["--connections", "50", "--pipeline", "1", "--ratio", "0:1", "--multiget", "10"],
        "5": ["--keys", str(BIG_KEYS), "--key-prefix", "big:", "--value-size", "16384",
              "--connections", "50", "--pipeline", "1", "--ratio", "1:9"],
        "6": small + ["--connections", "50", "--pipeline", "1", "--ratio", "0:1"],
    }[w]


def write_memcaslap_cfg(path, set_w, get_w):
    """memcaslap's -F config: key and value lengths, command proportions (0 set, 1 get)."""
    with open(path, "w") as f:
        f.write("key\n16 16 1\nvalue\n32 100 1\ncmd\n")
        f.write("0 %.6f\n1 %.6f\n" % (set_w / (set_w + get_w), get_w / (set_w + get_w)))


class Comparison:
    def __init__(self, a, t, work):
        self.a, self.t, self.work = a, t, work
        self.launcher = launch.Launcher(work)
        self.targets = {}  # name -> launch.Server
        self.backends = []
        self.idle = None
        self.rows = []

    # --- setup -----------------------------------------------------------------------------------
    def start(self):
        a, t, L = self.a, self.t, self.launcher
        launch.harness.MEMCACHED_BIN = t["memcached"]
        self.backends = [L.memcached("memcached%d" % i, 512, ["-c", "4096"]) for i in (1, 2, 3)]
        if not a.no_direct:
            self.targets["direct"] = L.memcached("direct", 1024, ["-c", "4096"])
        servers = "  servers:\n" + "".join("    - %s:1\n" % b.addr for b in self.backends)
        # nutcracker: the ring spelled out (its defaults anyway); mcring: listen and servers only.
        self.targets["nutcracker"] = L.nutcracker(
            "nutcracker", t["nutcracker"], "  hash: fnv1a_64\n  distribution: ketama\n" + servers)
        self.targets["mcring"] = L.mcring("mcring", t["mcring"], self.mcring_pool(servers, []),
                                          a.mcring_args)
        if a.with_mcring2 and a.mcring2_routes:
            front, pools = self.routed_pools(a.mcring2_routes, a.mcring2_key,
                                             a.mcring2_routes_shared)
            self.targets["mcring2"] = L.mcring("mcring2", t["mcring2"], front, a.mcring2_args, pools)
        elif a.with_mcring2:
            self.targets["mcring2"] = L.mcring(
                "mcring2", t["mcring2"], self.mcring_pool(servers, a.mcring2_key), a.mcring2_args)
        if a.server_cpus is not None:
            for server in self.backends + list(self.targets.values()):
                pin_threads(server.pid, a.server_cpus)
        write_memcaslap_cfg(os.path.join(self.work, "memcaslap.cfg"), a.set_w, a.get_w)
        write_memcaslap_cfg(os.path.join(self.work, "memcaslap-gets.cfg"), 0, 1)
        with open(os.path.join(self.work, "idle_clients.py"), "w") as f:
            f.write(IDLE_CLIENTS)

    def mcring_pool(self, servers, own_keys):
        body = servers
        # Workload 6 opens more clients than mcring's default cap (1024, memcached's -c);
        # nutcracker has none. A --mcring-key client_connections=N given wins.
        if not any(kv.startswith("client_connections=") for kv in self.a.mcring_key):
            body += "  client_connections: 0\n"
        for kv in self.a.mcring_key + own_keys:
            k, v = kv.split("=", 1)
            body += "  %s: %s\n" % (k, v)
        return body

    def routed_pools(self, n, own_keys, shared=False, disjoint=False):
        """--mcring2-routes N: the listening pool's body (routes, no servers) and the pools it
        routes to. Route i of each key family (ROUTE_FAMILIES) goes to pool route<i>, which holds
        backend i mod 3; the default route to pool rest, which holds the three as mcring's pool
        does (same ring). shared: every route goes to rest. disjoint: no pool rest, the default
        route goes to route0, so each backend is in one pool only (n = 3: the realistic layout,
        key families on pools of their own servers). Every pool gets the pool keys
        (client-side ones matter on the listener, server-side ones on the others; each is
        accepted, without effect, on the other kind)."""
        keys = self.mcring_pool("", own_keys)
        pools = ""
        for i in range(0 if shared else n):
            pools += "route%d:\n  servers:\n    - %s:1\n%s" % (i, self.backends[i % 3].addr, keys)
        if not disjoint:
            pools += "rest:\n  servers:\n%s%s" % (
                "".join("    - %s:1\n" % b.addr for b in self.backends), keys)
        routes = "  routes:\n"
        for family, chars in ROUTE_FAMILIES:
            routes += "".join('    - prefix: "%s%s"\n      pool: %s\n'
                              % (family, chars[i], "rest" if shared else "route%d" % i)
                              for i in range(n))
        routes += "    - default: %s\n" % ("route0" if disjoint else "rest")
        return routes + keys, pools

    def route_requests(self):
        """With --mcring2-routes: mcring2's `stats routes` requests by route (all were used?)."""
        if not self.a.mcring2_routes:
            return {}
        stats = launch.harness.proxy_stats(self.targets["mcring2"].port, b"routes")
        head, tail = "route:pool:", ":requests"  # route:<listener>:<route>:<field>
        return {k[len(head):-len(tail)]: v for k, v in stats.items()
                if k.startswith(head) and k.endswith(tail)}

    def order(self):
        return [n for n in ("direct", "nutcracker", "mcring", "mcring2") if n in self.targets]

    def start_idle_clients(self, target, seconds):
        """IDLE_CONNS connections to target (one get each), kept open for `seconds` in the
        background; returns once they are all open."""
        out = open(os.path.join(self.work, "idle.out"), "w+")
        err = open(os.path.join(self.work, "idle.err"), "w")
        self.idle_files = [out, err]
        self.idle = launch.harness.spawn(
            [sys.executable, os.path.join(self.work, "idle_clients.py"), launch.HOST,
             str(self.targets[target].port), str(IDLE_CONNS), str(seconds)], stdout=out, stderr=err)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.idle.poll() is None:
            out.seek(0)
            if "ready" in out.read():
                return
            time.sleep(0.1)
        sys.exit("compare.py: idle clients failed on %s: %s"
                 % (target, open(os.path.join(self.work, "idle.err")).read()))

    def stop_idle_clients(self):
        if self.idle:
            launch.harness.stop_process(self.idle)
            self.idle = None
            for f in self.idle_files:
                f.close()

    def measure_idle_memory(self):
        """Memory of idle connections (workload 6), on fresh processes (before traffic has grown
        their heaps, which would hide the growth): RSS with IDLE_CONNS open minus RSS before."""
        self.idle_mib = {}
        if "6" not in self.a.workloads:
            return
        for name in self.order():
            before = self.targets[name].rss_kb()
            self.start_idle_clients(name, 60)
            self.idle_mib[name] = (self.targets[name].rss_kb() - before) / 1024
            self.stop_idle_clients()

    def warm(self):
        """mcring-bench's keys, once, through mcring (the pool) and into direct. memcaslap and
        memcslap warm nothing: they only get keys they set themselves in the same run."""
        w = self.a.workloads
        sets = (["2"] if any(x in w for x in ("1", "2", "3", "4", "6", "mix")) else []) + \
               (["5"] if "5" in w else [])
        warmed = ("mcring", "direct") + (("mcring2",) if self.a.mcring2_routes else ())
        ports = [self.targets[n].port for n in warmed if n in self.targets]
        via = " and ".join(n for n in warmed if n in self.targets)
        if sets:
            launch.say("warming mcring-bench keys via %s" % via)
        for port in ports:
            for s in sets:
                rc = launch.run_bounded([self.t["bench"], "load", "--server", "%s:%d" % (launch.HOST, port),
                                         "--warm", "--requests", "1", "--quiet", "--json"] +
                                        workload_args(self.a, s), 300, stdout=subprocess.DEVNULL)
                if rc != 0:
                    sys.exit("compare.py: warming 127.0.0.1:%d failed (%s)" % (port, rc))
        if any(x in MEMTIER_WORKLOADS for x in w):
            launch.say("pre-filling memtier_benchmark's keys via %s" % via)
            for port in ports:
                rc = launch.run_bounded(
                    [self.t["memtier"], "-s", launch.HOST, "-p", str(port), "-P", "memcache_text",
                     "--ratio=1:0", "-n", "allkeys", "--key-pattern=P:P",
                     "--key-maximum=%d" % KEYS, "-c", "1", "-t", "1", "--data-size-range=32-100",
                     "--hide-histogram"], 300, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if rc != 0:
                    sys.exit("compare.py: memtier pre-fill of 127.0.0.1:%d failed (%s)" % (port, rc))

    # --- runs ------------------------------------------------------------------------------------
    def generator(self, w, server, out):
        """Runs workload w's generator against server to its end; returns its wall seconds."""
        a, t = self.a, self.t
        addr = server.addr
        pre = a.generator_prefix
        start = time.monotonic()
        files = []

        def output(path):
            files.append(open(path, "w"))
            return files[-1]
        try:
            if w in ("cs-mix", "bin-mix", "cs-gets", "bin-gets"):
                binary = ["--binary"] if w.startswith("bin-") else []
                conns = CS_GET_CONNS if w.endswith("mix") else 50
                cs = [t["memcslap"], "--servers=" + addr, "--tcp-nodelay"] + binary
                procs = [launch.harness.spawn(
                    pre + cs + ["--test=get", "--concurrency=%d" % conns,
                                "--execute-number=%d" % a.cs_number],
                    stdout=output(out + ".get"), stderr=output(out + ".get.err"))]
                if w.endswith("mix") and a.set_w > 0:
                    procs.append(launch.harness.spawn(
                        pre + cs + ["--test=set", "--concurrency=%d" % CS_SET_CONNS,
                                    "--execute-number=%d" % a.cs_set_number],
                        stdout=output(out + ".set"), stderr=output(out + ".set.err")))
                launch.wait_bounded(procs, start + 4 * a.duration + 60)
                output(out).write("wall_ns %d get_conns %d number %d set_conns %d set_number %d "
                                  "set_weight %d\n" % ((time.monotonic() - start) * 1e9, conns,
                                                        a.cs_number, CS_SET_CONNS, a.cs_set_number,
                                                        a.set_w))
            elif w in MEMTIER_WORKLOADS:
                argv = [t["memtier"], "-s", launch.HOST, "-p", str(server.port), "-P",
                        "memcache_text", "--ratio=%d:%d" % (a.set_w, a.get_w), "--key-pattern=R:R",
                        "--key-maximum=%d" % KEYS, "-c", "50", "-t", "1",
                        "--data-size-range=32-100", "--test-time=%d" % a.duration,
                        "--hide-histogram", "--json-out-file=" + out]
                argv += {"mt-mix": [], "mt-mget": ["--multi-key-get=10"],
                         "mt-p16": ["--pipeline=16"]}[w]
                launch.run_bounded(pre + argv, a.duration + 30, stdout=output(out + ".log"),
                                   stderr=output(out + ".err"))
            elif w.startswith("ms-"):
                cfg = os.path.join(self.work, "memcaslap-gets.cfg" if w == "ms-gets" else "memcaslap.cfg")
                argv = [t["memcaslap"], "-s", addr, "-F", cfg, "-T", "1", "-c", str(MS_CONNS),
                        "-w", MS_WINDOW, "-t", "%ds" % a.duration, "-S", "%ds" % a.duration]
                if w == "ms-mget":
                    argv += ["-d", "10"]
                launch.run_bounded(pre + argv, a.duration + 30, stdout=output(out),
                                   stderr=output(out + ".err"))
            else:
                launch.run_bounded(
                    pre + [t["bench"], "load", "--server", addr, "--duration", str(a.duration),
                           "--server-pid", str(server.pid), "--quiet", "--json"] + workload_args(a, w),
                    a.duration + 30, stdout=output(out), stderr=output(out + ".err"))
        finally:
            for f in files:
                f.close()
        return time.monotonic() - start

    def backend_cpu(self):
        return sum(b.cpu_seconds() for b in self.backends)

    def run_one(self, rnd, w, name):
        server = self.targets[name]
        if not server.alive():
            sys.exit("compare.py: %s (pid %d) died; log:\n%s" % (name, server.pid, server.log_tail()))
        out = os.path.join(self.work, "r%d-w%s-%s.out" % (rnd, w, name))
        rss_idle = ""
        if w == "6":
            rss_idle = server.rss_kb()
            self.start_idle_clients(name, self.a.duration + 60)
        c0, b0, g0 = server.cpu_seconds(), self.backend_cpu(), launch.children_cpu_seconds()
        self.generator(w, server, out)
        # The generator's CPU: what the children waited for since g0 used (only generators).
        gen = launch.children_cpu_seconds() - g0
        c1, b1 = server.cpu_seconds(), self.backend_cpu()
        rss = server.rss_kb()
        self.stop_idle_clients()
        self.rows.append({"round": rnd, "workload": w, "target": name, "cpu_s": c1 - c0,
                          "rss_kb": rss, "rss_idle_kb": rss_idle,
                          "loadavg": open("/proc/loadavg").read().split()[0], "out": out,
                          "backend_s": 0.0 if name == "direct" else b1 - b0, "gen_s": gen})

    def run(self):
        names = self.order()
        for rnd in range(1, self.a.rounds + 1):
            for w in self.a.workloads:
                for i in range(len(names)):
                    name = names[(i + rnd - 1) % len(names)]
                    if w.startswith("bin-") and name == "nutcracker":
                        continue  # it refuses the binary protocol
                    launch.say("round %d/%d workload %s: %s" % (rnd, self.a.rounds, w, name))
                    self.run_one(rnd, w, name)
        with open(os.path.join(self.work, "runs.tsv"), "w") as f:
            out = csv.DictWriter(f, fieldnames=list(self.rows[0]), delimiter="\t")
            out.writeheader()
            out.writerows(self.rows)


# --- report ----------------------------------------------------------------------------------------

def names_of(ratio):
    return {"mix": f"mix: 50 conns, set:get {ratio} (mcring-bench)",
            "1": "1 latency (1 conn, gets)", "2": "2 throughput (50 conns, gets)",
            "3": "3 pipelined (50 x 16, 90/10)", "4": "4 multiget (50 conns, 10 keys)",
            "5": "5 large (50 conns, 16 KiB, 90/10)", "6": "6 many clients (2000 idle + 50)",
            "cs-mix": f"cs-mix: 48 get + 2 set conns, {ratio} by count (memcslap)",
            "cs-gets": "cs-gets: 50 conns, gets (memcslap)",
            "bin-mix": "bin-mix: cs-mix in the binary protocol (memcslap --binary)",
            "bin-gets": "bin-gets: cs-gets in the binary protocol (memcslap --binary)",
            "ms-mix": f"ms-mix: 50 conns, set:get {ratio} (memcaslap)",
            "ms-mget": f"ms-mget: 50 conns, {ratio}, 10-key gets (memcaslap)",
            "ms-gets": "ms-gets: 50 conns, gets (memcaslap)",
            "mt-mix": f"mt-mix: 50 conns, set:get {ratio}, pipeline 1 (memtier)",
            "mt-mget": f"mt-mget: 50 conns, {ratio}, 10-key gets (memtier)",
            "mt-p16": f"mt-p16: 50 conns, {ratio}, pipeline 16 (memtier)"}


def log2_percentile(dist, q):
    """memaslap's Log2 Dist: dist[i] counts latencies in (2^(i-1), 2^i] us. The q-th percentile,
    interpolated geometrically inside its bucket (so within a factor of 2 of the truth)."""
    total = sum(dist.values())
    if total == 0:
        return None
    rank = q / 100 * total
    seen = 0
    for i in sorted(dist):
        n = dist[i]
        if n and seen + n >= rank:
            lo = 2 ** (i - 1) if i > 0 else 0.5
            return lo * 2 ** ((rank - seen) / n)
        seen += n
    return float(2 ** max(dist))


def err_count(path):
    try:
        return sum(1 for line in open(path, errors="replace") if line.strip())
    except OSError:
        return 0


def parse_memcaslap(path):
    """The numbers of one memcaslap run, in the shape of mcring-bench's JSON (what is known)."""
    text = open(path, errors="replace").read()
    m = re.search(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", text)
    if not m:
        return None
    run_s, ops = float(m.group(1)), int(m.group(2))
    r = {"replies": ops, "ops_per_sec": ops / run_s if run_s > 0 else 0, "errors": {"total": 0}}
    counts = dict(re.findall(r"^(cmd_get|cmd_set|get_misses): (\d+)", text, re.M))
    gets, misses = int(counts.get("cmd_get", 0)), int(counts.get("get_misses", 0))
    r["hit_ratio"] = 1 - misses / gets if gets else None
    r["gets"], r["sets"] = gets, int(counts.get("cmd_set", 0))
    # The final "Total Statistics (N events)" block (gets and sets together).
    block = re.search(r"^Total Statistics \((\d+) events\)\n(.*?)\n\n", text, re.M | re.S)
    lat = {}
    if block:
        body = block.group(2)
        avg = re.search(r"Avg:\s+(\d+)", body)
        dist = {}
        for start, counts_text in re.findall(r"^\s+(\d+):((?:\s+\d+)+)\s*$",
                                             body.split("Log2 Dist:")[-1], re.M):
            for k, n in enumerate(counts_text.split()):
                dist[int(start) + k] = int(n)
        lat = {"p50": log2_percentile(dist, 50), "p99": log2_percentile(dist, 99),
               "p999": log2_percentile(dist, 99.9), "avg": float(avg.group(1)) if avg else None}
    r["latency_us"] = lat
    # Lines memcaslap prints when something failed (a set not stored, a server error), and
    # anything on its stderr.
    r["errors"]["total"] = len(re.findall(r"didn't set success|[Ee]rror", text)) + err_count(path + ".err")
    return r


def parse_memcslap(path, workload):
    """A cs-* run: the get instance's (and the set instance's) reports, and the wall time."""
    meta = open(path).read().split()
    meta = dict(zip(meta[::2], map(int, meta[1::2])))
    n, gc = meta["number"], meta["get_conns"]
    gtext = open(path + ".get", errors="replace").read()
    load = re.search(r"Time to set\s+(\d+) keys:\s+([\d.]+) seconds", gtext)
    gets = re.search(r"Time to get\s+(\d+) keys by\s+(\d+) threads:\s+([\d.]+) seconds", gtext)
    if not (load and gets):
        return None
    loaded, retrieved, get_s = int(load.group(1)), int(gets.group(1)), float(gets.group(3))
    asked = gc * n
    errors = (n - loaded) + err_count(path + ".get.err")
    sets_done, sets_asked = loaded, n
    mix = workload in ("cs-mix", "bin-mix")
    if mix and meta.get("set_weight", 0) > 0:
        stext = open(path + ".set", errors="replace").read()
        sm = re.search(r"Time to set\s+(\d+) keys by\s+(\d+) threads:\s+([\d.]+) seconds", stext)
        if not sm:
            return None
        sets_done += int(sm.group(1))
        sets_asked += meta["set_conns"] * meta["set_number"]
        errors += meta["set_conns"] * meta["set_number"] - int(sm.group(1)) + err_count(path + ".set.err")
    requests = asked + sets_asked
    ops = requests / (meta["wall_ns"] / 1e9) if mix else (asked / get_s if get_s > 0 else 0)
    return {"replies": requests, "ops_per_sec": ops, "hit_ratio": retrieved / asked if asked else None,
            "errors": {"total": errors}, "latency_us": {}, "gets": asked, "sets": sets_done}


def parse_memtier(path):
    """A mt-* run: memtier_benchmark's JSON totals (latencies in ms there, µs here). A 10-key
    get is one op, as memtier counts it."""
    t = json.load(open(path))["ALL STATS"]
    tot, gets = t["Totals"], t["Gets"]
    pct = tot.get("Percentile Latencies", {})
    hits, misses = gets.get("Hits/sec", 0), gets.get("Misses/sec", 0)
    us = lambda ms: ms * 1000 if ms else None  # noqa: E731
    return {"replies": tot["Count"], "ops_per_sec": tot["Ops/sec"],
            "hit_ratio": hits / (hits + misses) if hits + misses else None,
            # Its stderr is its progress line: errors are the connection errors it counted.
            "errors": {"total": tot.get("Connection Errors", 0)},
            "latency_us": {"p50": us(pct.get("p50.00")), "p99": us(pct.get("p99.00")),
                           "p999": us(pct.get("p99.90")), "avg": us(tot.get("Average Latency"))},
            "gets": gets["Count"], "sets": t["Sets"]["Count"]}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=1):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b not in (None, 0) else "-"


def summarize(rows, idle_mib, duration):
    by = {}
    for r in rows:
        w = r["workload"]
        try:
            if w.startswith(("cs-", "bin-")):
                j = parse_memcslap(r["out"], w)
            elif w.startswith("ms-"):
                j = parse_memcaslap(r["out"])
            elif w in MEMTIER_WORKLOADS:
                j = parse_memtier(r["out"])
            else:
                j = json.load(open(r["out"]))
        except Exception:
            j = None
        by.setdefault((w, r["target"]), []).append((r, j))
    summary = {}
    for (w, t), lst in by.items():
        ok = [(r, j) for r, j in lst if j and j.get("replies", 0) > 0]
        s = {"runs": len(lst), "ok": len(ok)}
        s["ops"] = med([j["ops_per_sec"] for r, j in ok])
        s["by_round"] = {r["round"]: j["ops_per_sec"] for r, j in ok}
        for p in ("p50", "p99", "p999", "avg"):
            s[p] = med([j["latency_us"].get(p) for r, j in ok])
        s["cpu_us"] = med([r["cpu_s"] / j["replies"] * 1e6 for r, j in ok])
        s["cpu_by_round"] = {r["round"]: r["cpu_s"] / j["replies"] * 1e6 for r, j in ok}
        s["be_us"] = med([r["backend_s"] / j["replies"] * 1e6 for r, j in ok]) if t != "direct" else None
        # % of one core over the run; a cs-mix run lasts as long as its count takes.
        s["gen_pct"] = med([r["gen_s"] / (j["replies"] / j["ops_per_sec"]) * 100
                            if w in ("cs-mix", "bin-mix") else r["gen_s"] / duration * 100
                            for r, j in ok if j["ops_per_sec"]]) if w not in ("cs-gets", "bin-gets") else None
        # Every process of the run: the target, its backends and the generator. On a machine the
        # run saturates, ops/s follows the inverse of this, whatever share the target has of it.
        s["all_us"] = med([(r["cpu_s"] + r["backend_s"] + r["gen_s"]) / j["replies"] * 1e6
                           for r, j in ok]) if s["gen_pct"] is not None else None
        s["hit"] = med([j.get("hit_ratio") for r, j in ok])
        s["errors"] = sum(j["errors"]["total"] for r, j in ok) + (len(lst) - len(ok))
        if w == "6":
            s["rss"] = idle_mib.get(t)  # fresh process, see measure_idle_memory
            s["rss_abs"] = med([r["rss_kb"] / 1024 for r, j in ok])
        else:
            s["rss"] = med([r["rss_kb"] / 1024 for r, j in ok])
        summary[(w, t)] = s
    return summary


def report(summary, ratio_text):
    names = names_of(ratio_text)
    order = ["mix", "cs-mix", "bin-mix", "ms-mix", "mt-mix", "4", "ms-mget", "mt-mget", "3",
             "mt-p16", "2", "cs-gets", "bin-gets", "ms-gets", "1", "5", "6"]
    workloads = [w for w in order if any(k[0] == w for k in summary)]
    targets = [t for t in ["direct", "nutcracker", "mcring", "mcring2"] if any(k[1] == t for k in summary)]
    print("| workload | target | ops/s | p50 µs | p99 µs | p99.9 µs | avg µs | server CPU µs / req | "
          "backends CPU µs / req | generator CPU % core | all processes CPU µs / req | RSS MiB | "
          "hit ratio | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in workloads:
        for t in targets:
            s = summary.get((w, t))
            if not s:
                continue
            if w == "6" and s["rss"] is not None:
                rss = f"+{fmt(s['rss'])} fresh ({s['rss'] * 1024 / IDLE_CONNS:.2f} KiB/conn); {fmt(s['rss_abs'])} in all"
            else:
                rss = fmt(s["rss"])
            approx = "≈" if w.startswith("ms-") else ""
            lat = [approx + fmt(s[p]) if s[p] is not None else "-" for p in ("p50", "p99", "p999")]
            print(f"| {names[w]} | {t} | {fmt(s['ops'])} | {lat[0]} | {lat[1]} | {lat[2]} | {fmt(s['avg'])} | "
                  f"{fmt(s['cpu_us'], 2)} | {fmt(s['be_us'], 2)} | {fmt(s['gen_pct'], 0)} | "
                  f"{fmt(s['all_us'], 2)} | {rss} | "
                  f"{fmt(s['hit'], 3)} | {s['errors']} |")
    print()
    for m in [t for t in ("mcring", "mcring2") if t in targets]:
        label = "M" if m == "mcring" else "M2"
        print(f"{m} / nutcracker{' and / direct' if 'direct' in targets else ''} (ratios of the medians; "
              f"ops/s: higher is better for {m}, the rest: lower is)")
        print()
        head = ["ops/s {0}/N", "ops/s {0}/N per round", "p50 {0}/N", "p99 {0}/N", "avg {0}/N",
                "CPU/req {0}/N", "backends CPU {0}/N", "all CPU {0}/N", "RSS {0}/N"]
        if "direct" in targets:
            head += ["ops/s {0}/D", "p99 {0}/D", "CPU/req {0}/D"]
        print("| workload | " + " | ".join(h.format(label) for h in head) + " |")
        print("|---|" + "---:|" * len(head))
        for w in workloads:
            d, n, x = (summary.get((w, t), {}) for t in ("direct", "nutcracker", m))
            rounds = sorted(set(x.get("by_round", {})) & set(n.get("by_round", {})))
            per_round = " ".join(ratio(x["by_round"][k], n["by_round"][k]) for k in rounds) or "-"
            cells = [ratio(x.get("ops"), n.get("ops")), per_round, ratio(x.get("p50"), n.get("p50")),
                     ratio(x.get("p99"), n.get("p99")), ratio(x.get("avg"), n.get("avg")),
                     ratio(x.get("cpu_us"), n.get("cpu_us")), ratio(x.get("be_us"), n.get("be_us")),
                     ratio(x.get("all_us"), n.get("all_us")), ratio(x.get("rss"), n.get("rss"))]
            if "direct" in targets:
                cells += [ratio(x.get("ops"), d.get("ops")), ratio(x.get("p99"), d.get("p99")),
                          ratio(x.get("cpu_us"), d.get("cpu_us"))]
            print(f"| {names[w]} | " + " | ".join(cells) + " |")
        print()
    if "mcring2" in targets:
        print("mcring2 / mcring (ratios of the medians)")
        print()
        print("| workload | ops/s | ops/s per round | p99 | avg | CPU/req | CPU/req per round | "
              "backends CPU/req | all CPU/req |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for w in workloads:
            a, b = summary.get((w, "mcring"), {}), summary.get((w, "mcring2"), {})
            rounds = sorted(set(a.get("by_round", {})) & set(b.get("by_round", {})))
            per_round = " ".join(ratio(b["by_round"][k], a["by_round"][k]) for k in rounds) or "-"
            cpu_round = " ".join(ratio(b["cpu_by_round"][k], a["cpu_by_round"][k]) for k in rounds) or "-"
            print(f"| {names[w]} | {ratio(b.get('ops'), a.get('ops'))} | {per_round} | "
                  f"{ratio(b.get('p99'), a.get('p99'))} | {ratio(b.get('avg'), a.get('avg'))} | "
                  f"{ratio(b.get('cpu_us'), a.get('cpu_us'))} | {cpu_round} | "
                  f"{ratio(b.get('be_us'), a.get('be_us'))} | {ratio(b.get('all_us'), a.get('all_us'))} |")
        print()


def version(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    return ((r.stdout or r.stderr).splitlines() or ["?"])[0]


def main():
    a = parse_args()
    t = tools(a)
    launch.raise_fd_limit(20000)
    work = tempfile.mkdtemp(prefix="mcring-compare.")
    c = Comparison(a, t, work)
    try:
        c.start()
        c.measure_idle_memory()
        c.warm()
        load_start = " ".join(open("/proc/loadavg").read().split()[:3])
        started = time.monotonic()
        c.run()
        route_requests = c.route_requests()
        load_end = " ".join(open("/proc/loadavg").read().split()[:3])
        report(summarize(c.rows, c.idle_mib, a.duration), a.ratio)
        print(f"{a.rounds} rounds x {a.duration} s per run, order rotated each round; medians. "
              f"{os.cpu_count()} CPUs; load average {load_start} at start, {load_end} at end; "
              f"{time.monotonic() - started:.0f} s.")
        keys = "; pool keys " + " ".join(a.mcring_key) if a.mcring_key else ""
        binary = f" {t['mcring']}" if a.mcring else ""
        print(f"mcring: mcring{binary} {' '.join(a.mcring_args)} ({version([t['mcring'], '-V'])}){keys}")
        if a.with_mcring2:
            keys2 = "; pool keys " + " ".join(a.mcring_key + a.mcring2_key) if a.mcring_key + a.mcring2_key else ""
            binary2 = f" {t['mcring2']} ({version([t['mcring2'], '-V'])})" if a.mcring2 else ""
            routes2 = (f"; routes: {a.mcring2_routes} per key family ({', '.join(f for f, _ in ROUTE_FAMILIES)}) "
                       f"+ default{', all to one pool' if a.mcring2_routes_shared else ''} "
                       f"(bench/README.md)" if a.mcring2_routes else "")
            print(f"mcring2: mcring{binary2} {' '.join(a.mcring2_args)}{keys2}{routes2}")
            if route_requests:
                print("mcring2's requests by route over the whole run, warm-up included (stats "
                      "routes: a request counts once on each route its keys take): " + ", ".join("%s %s" % kv for kv in route_requests.items()))
        print(f"{version([t['nutcracker'], '-V'])}; {version([t['memcached'], '-V'])}; "
              f"{version([t['memcslap'], '-V']) if t['memcslap'] else 'no memcslap'} (memcslap, cs-*: N = {a.cs_number}, M = {a.cs_set_number}); "
              f"backends memcached -t 1{'; direct = a 4th memcached -t 1 holding all keys' if 'direct' in c.targets else ''}"
              f"{'; generators pinned to CPU %d' % a.pin_generator if a.pin_generator is not None else ''}"
              f"{'; servers pinned to CPUs %s' % a.pin_servers if a.pin_servers is not None else ''}.")
        print("server CPU = the proxy process (for direct: that memcached), utime+stime from "
              "/proc/PID/stat around the generator run, per request the generator completed "
              "(memcaslap: its Ops, a 10-key get counting as one; memcslap: every request of both "
              "instances, its get instance's load included); ≈ = memcaslap's latency percentiles, "
              "from its log2 histogram (buckets (2^(i-1), 2^i] µs), interpolated inside the "
              "bucket, so only within a factor of 2; its avg is exact. RSS after the run. "
              "All processes CPU = server + backends + generator CPU per request (direct: that "
              "memcached + generator); where the run keeps every CPU busy, ops/s M/N is about the "
              "inverse of all CPU M/N, so the target's own share bounds what it can gain.")
    finally:
        c.stop_idle_clients()
        c.launcher.stop()
        if a.out:
            shutil.copytree(work, a.out, dirs_exist_ok=True)
            launch.say("raw results in %s" % a.out)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
