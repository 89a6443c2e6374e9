"""Routing vectors recorded with real twemproxy, end to end: 5 memcached named after the vector
addresses behind mcring; every key set through mcring must land on the backend the vector names.
Also `mcring route` against the same vectors."""

import os
import re
import shutil
import unittest

from harness import (DIRECT, HOST, Conn, IntegrationCase, Memcached, Mcring, ROOT, make_tmpdir,
                     remove_tmpdir, run_mcring, server_line, set_many_raw)

VECTORS = ["twemproxy_ketama_fnv1a64_5.tsv", "twemproxy_ketama_md5_5.tsv",
           "twemproxy_modula_fnv1a64_5.tsv"]
SHARED = "/work/shared/vectors"


def vector_path(name, tmpdir):
    """tests/vectors/NAME, or a copy of the shared one in tmpdir while it is not there yet."""
    p = os.path.join(ROOT, "tests", "vectors", name)
    if os.path.exists(p):
        return p
    src = os.path.join(SHARED, name)
    if not os.path.exists(src):
        raise unittest.SkipTest("vector %s not found in tests/vectors or %s" % (name, SHARED))
    dst = os.path.join(tmpdir, name)
    shutil.copyfile(src, dst)
    return dst


class Vector:
    def __init__(self, path):
        self.path = path
        self.rows = []  # (key bytes, "host:port")
        self.servers = []  # "host:port:weight" in YAML order
        self.hash = self.distribution = None
        header_seen = False
        with open(path, "rb") as f:
            for raw in f:
                line = raw.rstrip(b"\n")
                if line.startswith(b"# "):
                    text = line[2:].decode()
                    m = re.search(r"distribution: (\w+); hash: (\w+)", text)
                    if m:
                        self.distribution, self.hash = m.group(1), m.group(2)
                    m = re.search(r"servers \(.*?\): (.*)$", text)
                    if m:
                        self.servers = [s.strip() for s in m.group(1).split("|")]
                    continue
                if not header_seen:
                    assert line == b"key\tserver", "bad header %r in %s" % (line, path)
                    header_seen = True
                    continue
                if not line:
                    continue
                key, server = line.split(b"\t")
                self.rows.append((key, server.decode()))
        assert header_seen and self.rows and self.servers and self.hash, "cannot parse %s" % path
        self.addresses = [":".join(s.split(":")[:2]) for s in self.servers]
        self.weights = [int(s.split(":")[2]) for s in self.servers]


class VectorFilesTest(IntegrationCase):
    """Runs in every mode: the vector files parse and are what the e2e test expects."""

    def test_vectors_parse(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        for name in VECTORS:
            v = Vector(vector_path(name, tmp))
            self.assertEqual(len(v.rows), 2041, name)
            self.assertEqual(len(v.servers), 5, name)
            self.assertEqual(set(s for _, s in v.rows), set(v.addresses), name)
            self.assertEqual(len({k for k, _ in v.rows}), len(v.rows), "duplicate keys in " + name)
            self.assertTrue(all(len(k) <= 250 and b" " not in k for k, _ in v.rows))


@unittest.skipIf(DIRECT, "proxy-specific (MCRING_TARGET=direct)")
class VectorsE2ETest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backends = []
        self.addCleanup(lambda: [b.stop() for b in self.backends])
        self.backends = [Memcached() for _ in range(5)]

    def run_vector(self, name):
        v = Vector(vector_path(name, self.tmp))
        for bk in self.backends:
            bk.flush()
        # Server i is named after the address the vector was recorded with: in twemproxy a name
        # replaces host:port in the ketama point strings, so the recorded ring is reproduced.
        servers = [server_line(bk.addr, w, addr)
                   for bk, addr, w in zip(self.backends, v.addresses, v.weights)]
        proxy = Mcring(servers, make_tmpdir(), hash=v.hash, distribution=v.distribution)
        self.addCleanup(remove_tmpdir, proxy.tmpdir)
        try:
            with proxy_conn(proxy) as c:
                set_many_raw(c, [(k, b"x") for k, _ in v.rows], batch=500, timeout=30)
        except AssertionError:
            raise AssertionError("setting keys through mcring failed; log:\n" + proxy.log_tail())
        finally:
            proxy.stop()
        by_port = {bk.port: addr for bk, addr in zip(self.backends, v.addresses)}
        found = {}
        for bk in self.backends:
            for k in bk.get_many([k for k, _ in v.rows]):
                found.setdefault(k, []).append(by_port[bk.port])
        wrong = [(k, s, found.get(k)) for k, s in v.rows if found.get(k) != [s]]
        self.assertEqual(len(wrong), 0, "%s: %d of %d keys on the wrong backend, first: %r"
                         % (name, len(wrong), len(v.rows), wrong[:5]))
        return v, proxy

    def test_ketama_fnv1a64(self):
        self.run_vector("twemproxy_ketama_fnv1a64_5.tsv")

    def test_ketama_md5(self):
        self.run_vector("twemproxy_ketama_md5_5.tsv")

    def test_modula_fnv1a64(self):
        self.run_vector("twemproxy_modula_fnv1a64_5.tsv")


def proxy_conn(proxy):
    return Conn(HOST, proxy.port, timeout=30)


@unittest.skipIf(DIRECT, "proxy-specific (MCRING_TARGET=direct)")
class RouteCommandTest(IntegrationCase):
    """`mcring route -c FILE` with the vector addresses themselves (nothing needs to listen)."""

    def route_config(self, v, tmp, pool="alpha"):
        path = os.path.join(tmp, "route.yml")
        with open(path, "w") as f:
            f.write("%s:\n  listen: 127.0.0.1:22122\n  hash: %s\n  distribution: %s\n"
                    "  timeout: 1000\n  servers:\n" % (pool, v.hash, v.distribution))
            for s in v.servers:
                f.write("    - %s\n" % s)
        return path

    def check_route(self, name):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        v = Vector(vector_path(name, tmp))
        cfg = self.route_config(v, tmp)
        p = run_mcring(["route", "-c", cfg], input_bytes=b"".join(k + b"\n" for k, _ in v.rows))
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace")[-2000:])
        lines = p.stdout.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        self.assertEqual(len(lines), len(v.rows), "route printed %d lines for %d keys"
                         % (len(lines), len(v.rows)))
        wrong = [(line, k, s) for line, (k, s) in zip(lines, v.rows) if line != k + b"\t" + s.encode()]
        self.assertEqual(len(wrong), 0, "%s: %d rows differ, first (got, key, expected): %r"
                         % (name, len(wrong), wrong[:5]))
        # Keys as arguments, and --pool, answer the same.
        some = v.rows[:5] + v.rows[-5:]
        p2 = run_mcring(["route", "-c", cfg, "--pool", "alpha"] + [k.decode() for k, _ in some])
        self.assertEqual(p2.returncode, 0, p2.stderr.decode(errors="replace")[-2000:])
        self.assertEqual(p2.stdout, b"".join(k + b"\t" + s.encode() + b"\n" for k, s in some))

    def test_route_ketama_fnv1a64(self):
        self.check_route("twemproxy_ketama_fnv1a64_5.tsv")

    def test_route_ketama_md5(self):
        self.check_route("twemproxy_ketama_md5_5.tsv")

    def test_route_modula_fnv1a64(self):
        self.check_route("twemproxy_modula_fnv1a64_5.tsv")

    def test_config_check(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        v = Vector(vector_path(VECTORS[0], tmp))
        good = self.route_config(v, tmp)
        self.assertEqual(run_mcring(["-t", "-c", good]).returncode, 0)
        bad = os.path.join(tmp, "bad.yml")
        with open(bad, "w") as f:
            f.write("alpha:\n  listen: 127.0.0.1:22122\n  distribution: nosuch\n  servers:\n"
                    "    - not-an-address\n")
        self.assertEqual(run_mcring(["-t", "-c", bad]).returncode, 1)


if __name__ == "__main__":
    unittest.main()
