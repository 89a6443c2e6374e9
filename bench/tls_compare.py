#!/usr/bin/env python3
"""What TLS costs: the same workloads against memcached -Z directly (TLS), mcring plaintext ->
plaintext memcached, and mcring TLS -> TLS memcached, interleaved in one run; prints a markdown
table of medians (throughput, latency, CPU per reply of the process under test and of memcached).

usage: bench/tls_compare.py [--rounds N] [--duration S] [--workloads LIST] [--build DIR] [--out DIR]

Setup: ONE memcached 1.6 (-t 1, -m 256) started with -Z, listening on a TLS port and on a
plaintext one (`-l notls:ADDR`), so all three targets read the same memcached: direct = its TLS
port; mcring plaintext = `listen` -> its plaintext port; mcring TLS = `listen_tls` -> `server_tls`
to its TLS port (certificate made here by `openssl req`, verified by name). mcring runs with its
defaults. The keys are warmed once. The load generator is mcring-bench load (--tls for the TLS
targets: TLS 1.3, the server's certificate not verified, one handshake per connection at the start
of each run). Processes: bench/launch.py.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

import launch


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds (default 3), order rotated")
    p.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    p.add_argument("--workloads", default="mix,pipelined", help="mcring-bench load workloads")
    p.add_argument("--build", default="build", help="where mcring and mcring-bench are")
    p.add_argument("--out", help="keep the raw results (runs.tsv, configs, logs) in DIR")
    a = p.parse_args()
    if not (1 <= a.rounds <= 50 and 1 <= a.duration <= 600):
        p.error("--rounds 1..50, --duration 1..600")
    return a


def main():
    a = parse_args()
    build = a.build if os.path.isabs(a.build) else os.path.join(launch.ROOT, a.build)
    mcring, bench = os.path.join(build, "mcring"), os.path.join(build, "mcring-bench")
    memcached = launch.find_tool("memcached", "/usr/bin/memcached")
    for path in (mcring, bench, memcached):
        if not path or not os.access(path, os.X_OK):
            raise SystemExit("tls_compare.py: build mcring and mcring-bench in %s first (and "
                             "install memcached)" % build)
    work = tempfile.mkdtemp(prefix="mcring-tls-bench.")
    L = launch.Launcher(work)
    try:
        cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, stderr=subprocess.DEVNULL)
        tls_port = launch.free_port()
        # The launcher's port is the plaintext one (it is up when that accepts).
        mc = L.start("memcached", lambda port: [
            memcached, "-u", "nobody", "-t", "1", "-m", "256", "-U", "0", "-Z",
            "-o", "ssl_chain_cert=%s,ssl_key=%s" % (cert, key),
            "-l", "%s:%d" % (launch.HOST, tls_port), "-l", "notls:%s:%d" % (launch.HOST, port)])
        plain = L.mcring("mcring-plain", mcring, "  servers:\n    - %s:1\n" % mc.addr)
        tls = L.mcring("mcring-tls", mcring, (
            "  listen_tls: true\n  tls_cert: %s\n  tls_key: %s\n  server_tls: true\n"
            "  server_tls_ca: %s\n  server_tls_name: localhost\n  servers:\n    - %s:%d:1\n"
            % (cert, key, cert, launch.HOST, tls_port)))
        subprocess.run([bench, "load", "--server", mc.addr, "--warm", "--requests", "1", "--quiet",
                        "--json"], check=True, stdout=subprocess.DEVNULL, timeout=300)

        targets = [("direct-tls", "%s:%d" % (launch.HOST, tls_port), True, mc),
                   ("mcring-plain", plain.addr, False, plain), ("mcring-tls", tls.addr, True, tls)]
        rows = {}
        with open(os.path.join(work, "runs.tsv"), "w") as tsv:
            for r in range(a.rounds):
                for w in a.workloads.split(","):
                    for i in range(len(targets)):
                        name, addr, use_tls, server = targets[(i + r) % len(targets)]
                        before = mc.cpu_seconds()
                        out = subprocess.run(
                            [bench, "load", "--server", addr] + (["--tls"] if use_tls else []) +
                            ["--workload", w, "--duration", str(a.duration), "--server-pid",
                             str(server.pid), "--quiet", "--json"],
                            check=True, capture_output=True, text=True, timeout=a.duration + 60).stdout
                        mc_s = mc.cpu_seconds() - before
                        tsv.write("%s\t%s\t%.2f\t%s" % (w, name, mc_s, out))
                        d = json.loads(out)
                        rows.setdefault((w, name), []).append((d, mc_s * 1e6 / max(d["replies"], 1)))
                        launch.say("round %d %s %s done" % (r + 1, w, name))
    finally:
        L.stop()
        if a.out:
            shutil.copytree(work, a.out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pem"))
        shutil.rmtree(work, ignore_errors=True)

    print("| workload | target | ops/s | p50 µs | p99 µs | errors | CPU µs/reply: process under "
          "test | memcached | proxy + memcached |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (w, name), runs in rows.items():
        def med(f):
            return statistics.median(f(d, m) for d, m in runs)
        server = med(lambda d, m: d["server_cpu_us_per_reply"])
        mc_us = med(lambda d, m: m)
        total = server + mc_us if name.startswith("mcring") else server
        kinds = {}
        for d, _ in runs:
            for k, v in d["errors"].items():
                if k != "total" and v:
                    kinds[k] = kinds.get(k, 0) + v
        errors = "%d" % sum(kinds.values())
        if kinds:
            errors += " (" + ", ".join("%s %d" % kv for kv in sorted(kinds.items())) + ")"
        print("| %s | %s | %.0f | %.0f | %.0f | %s | %.1f | %.1f | %.1f |" % (
            w, name, med(lambda d, m: d["ops_per_sec"]), med(lambda d, m: d["latency_us"]["p50"]),
            med(lambda d, m: d["latency_us"]["p99"]), errors, server, mc_us, total))


if __name__ == "__main__":
    main()
