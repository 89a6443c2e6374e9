#!/usr/bin/env python3
"""Instructions per request of whole mcring processes, under callgrind: the noise-free companion
of compare.py's CPU per request for bench/results/routes.md (the development machine has no
hardware counters for `perf stat`, and its CPU time per request moves by +-20% with the other
work on its 2 cores).

For each target (NAME=BINARY[:routes|:shared-routes|:disjoint-routes]), on the same three memcached: mcring under
`valgrind --tool=callgrind`, one memtier run to warm it (connections, buffers), counters zeroed
(`callgrind_control -z`), the measured memtier run (a fixed request count), a dump
(`callgrind_control -d`); instructions of the dump / requests memtier completed. Keys are
pre-filled through an uninstrumented mcring of each kind (single pool, routed), so every get
hits. The routed config is compare.py's --mcring2-routes (bench/README.md); disjoint-routes puts
each backend in one pool only (the default route to route0); shared-routes adds
its --mcring2-routes-shared (every route to the default route's pool). watch is the single pool
with allow_watch and a client attached to `watch proxyreqs` (read and discarded by a thread) for
both runs (bench/results/watch.md).

--detail-on NAME sends `stats detail on` to that target before its runs; --key-prefix sets
memtier's key prefix for every target (`memtier:` has the length of memtier's own `memtier-` and
puts every key under one `stats detail` prefix).

usage: instructions.py [--requests N] [--routes N] [--workloads mt-mix,mt-mget,mt-p16] [--out DIR] [--detail-on NAME] [--key-prefix P] NAME=BINARY[:routes|:shared-routes|:disjoint-routes|:watch] ...
"""

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import compare  # noqa: E402
import launch  # noqa: E402

ALL_WORKLOADS = {"mt-mix": [], "mt-mget": ["--multi-key-get=10"], "mt-p16": ["--pipeline=16"]}
WORKLOADS = {}  # --workloads picks from ALL_WORKLOADS


KEY_PREFIX = []  # --key-prefix: memtier's own ("memtier-") unless given


def memtier(t, port, extra, out=None):
    argv = [t["memtier"], "-s", launch.HOST, "-p", str(port), "-P", "memcache_text",
            "--key-maximum=%d" % compare.KEYS, "--data-size-range=32-100", "--hide-histogram"]
    argv += KEY_PREFIX
    argv += extra + (["--json-out-file=" + out] if out else [])
    rc = launch.run_bounded(argv, 600, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if rc != 0:
        sys.exit("instructions.py: memtier on port %d failed (%s)" % (port, rc))


def attach_watcher(port):
    """A client on `watch proxyreqs` whose lines a thread reads and drops; returns its socket."""
    s = socket.create_connection((launch.HOST, port), timeout=60)
    s.sendall(b"watch proxyreqs\r\n")
    if s.recv(4) != b"OK\r\n":
        sys.exit("instructions.py: watch refused on port %d" % port)
    s.settimeout(None)

    def drain():
        try:
            while s.recv(1 << 20):
                pass
        except OSError:
            pass
    threading.Thread(target=drain, daemon=True).start()
    return s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=200, help="per connection (50 connections)")
    p.add_argument("--routes", type=int, default=3)
    p.add_argument("--workloads", default="mt-mix,mt-mget",
                   help="comma-separated, of " + ",".join(ALL_WORKLOADS))
    p.add_argument("--out", help="keep the configs, logs, memtier JSON and callgrind dumps in DIR")
    p.add_argument("--detail-on", action="append", default=[], metavar="NAME",
                   help="send `stats detail on` to this target before measuring (repeatable)")
    p.add_argument("--key-prefix", help="memtier's key prefix for every target (e.g. memtier: "
                   "so that stats detail counts the keys under one prefix)")
    p.add_argument("targets", nargs="+",
                   metavar="NAME=BINARY[:routes|:shared-routes|:disjoint-routes|:watch]")
    a = p.parse_args()
    for w in a.workloads.split(","):
        if w not in ALL_WORKLOADS:
            sys.exit("instructions.py: unknown workload %s" % w)
        WORKLOADS[w] = ALL_WORKLOADS[w]
    if a.key_prefix:
        KEY_PREFIX.append("--key-prefix=" + a.key_prefix)
    targets = []
    for spec in a.targets:
        name, rest = spec.split("=", 1)
        binary, _, kind = rest.partition(":")
        targets.append((name, os.path.realpath(binary), kind))
    t = {"memtier": launch.find_tool("memtier_benchmark", compare.MEMTIER_FALLBACK),
         "memcached": launch.find_tool("memcached", "/usr/bin/memcached")}
    launch.harness.MEMCACHED_BIN = t["memcached"]
    work = tempfile.mkdtemp(prefix="mcring-instr.")
    L = launch.Launcher(work)
    try:
        c = compare.Comparison(argparse.Namespace(mcring_key=[]), t, work)
        c.backends = [L.memcached("memcached%d" % i, 512, ["-c", "4096"]) for i in (1, 2, 3)]
        servers = "  servers:\n" + "".join("    - %s:1\n" % b.addr for b in c.backends)
        single = (c.mcring_pool(servers, []), "")
        configs = {"": single, "routes": c.routed_pools(a.routes, []),
                   "shared-routes": c.routed_pools(a.routes, [], shared=True),
                   "disjoint-routes": c.routed_pools(a.routes, [], disjoint=True),
                   "watch": (c.mcring_pool(servers, ["allow_watch=true", "log_keys=plain"]), "")}
        # Pre-fill (uninstrumented, the newest binary given): both placements.
        fill_bin = targets[-1][1]
        fills = [("single", single), ("routed", configs["routes"])]
        if any(k == "disjoint-routes" for _, _, k in targets):
            fills.append(("disjoint", configs["disjoint-routes"]))
        for kind, (body, pools) in fills:
            m = L.mcring("fill-" + kind, fill_bin, body, [], pools)
            memtier(t, m.port, ["--ratio=1:0", "-n", "allkeys", "--key-pattern=P:P", "-c", "1",
                                "-t", "1"])
            m.stop()
        results = {}
        for name, binary, kind in targets:
            body, pools = configs[kind]
            conf = os.path.join(work, name + ".yml")
            cg = os.path.join(work, "callgrind.%s.out" % name)

            def command(port, body=body, pools=pools, conf=conf, cg=cg, binary=binary):
                with open(conf, "w") as f:
                    f.write("%spool:\n  listen: %s:%d\n%s" % (pools, launch.HOST, port, body))
                return ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg, binary,
                        "-c", conf, "-s", str(launch.free_port()), "-a", launch.HOST]
            m = L.start(name, command, timeout=120)
            if name in a.detail_on:
                with socket.create_connection((launch.HOST, m.port), timeout=30) as sock:
                    sock.sendall(b"stats detail on\r\n")
                    if sock.recv(64) != b"OK\r\n":
                        sys.exit("instructions.py: %s did not answer OK to stats detail on" % name)
            watcher = attach_watcher(m.port) if kind == "watch" else None
            for w, extra in WORKLOADS.items():
                load = ["--ratio=1:10", "--key-pattern=R:R", "-c", "50", "-t", "1"] + extra
                memtier(t, m.port, load + ["--requests=%d" % (a.requests // 4)])  # warm
                before = set(glob.glob(cg + "*"))
                subprocess.run(["callgrind_control", "-z", str(m.pid)], check=True,
                               stdout=subprocess.DEVNULL)
                out = os.path.join(work, "%s-%s.json" % (name, w))
                memtier(t, m.port, load + ["--requests=%d" % a.requests], out)
                subprocess.run(["callgrind_control", "-d", str(m.pid)], check=True,
                               stdout=subprocess.DEVNULL)
                dump = sorted(set(glob.glob(cg + "*")) - before, key=os.path.getmtime)[-1]
                ir = next(int(line.split()[1]) for line in open(dump)
                          if line.startswith(("summary:", "totals:")))
                reqs = json.load(open(out))["ALL STATS"]["Totals"]["Count"]
                results[(name, w)] = (ir, reqs)
                print("%-12s %-8s %14d Ir %8d requests %9.0f Ir/request" % (name, w, ir, reqs, ir / reqs),
                      flush=True)
            if watcher is not None:
                watcher.close()
            m.stop()
        print()
        print("| workload | " + " | ".join(n for n, _, _ in targets) + " |")
        print("|---|" + "---:|" * len(targets))
        for w in WORKLOADS:
            print("| %s Ir/request | " % w + " | ".join(
                "%.0f" % (results[(n, w)][0] / results[(n, w)][1]) for n, _, _ in targets) + " |")
    finally:
        L.stop()
        if a.out:
            shutil.copytree(work, a.out, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
