"""pylibmc in binary mode (libmemcached): one call of each kind, results as JSON on stdout.
Usage: binary_pylibmc.py PORT. Run against memcached and against mcring; the outputs must match."""
import json
import sys

import pylibmc

port = int(sys.argv[1])
mc = pylibmc.Client(["127.0.0.1:%d" % port], binary=True,
                    behaviors={"cas": True, "connect_timeout": 3000, "receive_timeout": 3000000,
                               "send_timeout": 3000000})
out = []


def rec(label, fn):
    try:
        v = fn()
    except pylibmc.Error as e:
        v = "error:" + type(e).__name__
    if isinstance(v, bytes):
        v = v.decode("latin-1")
    if isinstance(v, dict):
        v = {k: (x.decode("latin-1") if isinstance(x, bytes) else x) for k, x in sorted(v.items())}
    out.append([label, v])


big = "x" * 500000
rec("set", lambda: mc.set("a", "one"))
rec("get", lambda: mc.get("a"))
rec("get miss", lambda: mc.get("missing"))
rec("set int", lambda: mc.set("i", 42))
rec("get int", lambda: mc.get("i"))
rec("set many", lambda: sorted(mc.set_multi({"m%d" % i: "v%d" % i for i in range(20)})))
rec("get multi", lambda: mc.get_multi(["m%d" % i for i in range(25)]))
rec("add exists", lambda: mc.add("a", "x"))
rec("add new", lambda: mc.add("b", "two"))
rec("replace miss", lambda: mc.replace("nope", "x"))
rec("replace hit", lambda: mc.replace("b", "three"))
rec("append", lambda: mc.append("b", "+"))
rec("prepend", lambda: mc.prepend("b", "-"))
rec("get b", lambda: mc.get("b"))
rec("append miss", lambda: mc.append("nope", "+"))
v, cas = mc.gets("a")
rec("gets value", lambda: v)
rec("cas ok", lambda: mc.cas("a", "cas1", cas))
rec("cas conflict", lambda: mc.cas("a", "cas2", cas))
rec("get after cas", lambda: mc.get("a"))
rec("delete hit", lambda: mc.delete("a"))
rec("delete miss", lambda: mc.delete("a"))
rec("incr miss", lambda: mc.incr("n", 1))
rec("set counter", lambda: mc.set("n", "10"))
rec("incr", lambda: mc.incr("n", 5))
rec("decr", lambda: mc.decr("n", 3))
rec("decr below zero", lambda: mc.decr("n", 100))
rec("incr non-numeric", lambda: mc.incr("b", 1))
rec("touch hit", lambda: mc.touch("b", 100))
rec("touch miss", lambda: mc.touch("nope", 100))
rec("set big", lambda: mc.set("big", big))
rec("get big", lambda: mc.get("big") == big)
rec("set too big", lambda: mc.set("huge", "y" * (2 * 1024 * 1024)))
rec("delete multi", lambda: mc.delete_multi(["m1", "m2", "nope"]))
rec("get multi after", lambda: mc.get_multi(["m1", "m2", "m3"]))
rec("stats has pid", lambda: all("pid" in s for _, s in mc.get_stats()))
rec("flush", lambda: mc.flush_all())
rec("get after flush", lambda: mc.get("b"))
print(json.dumps(out, indent=0))
