#!/usr/bin/env python3
"""Per-request kernel-side counts of mcring, nutcracker and direct memcached under memtier: the
profile behind bench/results/perf-profile.md (issue #32).

Starts compare.py's setup (three memcached -t 1 backends, nutcracker and mcring on them with the
default config, a 4th memcached as direct), pre-fills memtier's keys through mcring and into
direct, then for each workload and target runs memtier (50 connections, 1 thread, as compare.py's
mt-* workloads) with `perf stat -p PID` attached to the target for the run. It prints, per
request (memtier's Count): task-clock µs, context switches, CPU migrations, system calls (all,
and per call: epoll_wait, epoll_ctl, read, readv, recvfrom, write, writev, sendmsg, sendto),
packets sent (net:net_dev_xmit: every packet the target's system calls put on loopback, pure
ACKs included) and wake-ups done in the target's context (sched:sched_waking: mostly the peer a
write wakes, whose receive processing runs in the writer's system call on loopback). Beside
perf's task-clock it prints the run time of the target and of the three backends
(/proc/PID/stat's utime+stime, as compare.py counts; they add up to schedstat's run time) and the backends' task-clock, then
memtier's CPU and the whole machine's busy time (/proc/stat) over the run: on a virtual machine
the two clocks can charge the same work to different processes (section 7 of
results/perf-profile.md), and the run times add up to the machine's busy time. The machine
has no hardware counters (cycles, instructions): user-space instructions come from
results/routes/instructions.py (callgrind).

--record also runs `perf record -g` (cpu-clock samples, 2 kHz) on --record-target (mcring) for one
more run and prints the user/kernel split, the inclusive and the exclusive top symbols; --strace
runs `strace -c -f` on each target for one more run (slow: the traced process is ~3x slower; the
mix, not the rate, is what counts). --wakeups records the scheduler's wake-ups and switches of
the whole machine (`perf record -a -e sched:sched_waking,sched:sched_switch`) for one more run per
target and prints who wakes whom, and who sleeps or is preempted, per request (target, backends,
memtier, other): on loopback the writer pays for waking the reader (section 8 of
results/perf-profile.md).

usage: perf_profile.py [--mcring PATH] [--mcring-flags "..."] [--duration S] [--rounds N]
                       [--workloads mt-mix,mt-mget,mt-p16] [--targets mcring,nutcracker,direct]
                       [--record [--record-target NAME]] [--strace] [--wakeups] [--out DIR]
"""

import argparse
import collections
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import launch  # noqa: E402

SYSCALLS = ("epoll_wait", "epoll_pwait", "epoll_ctl", "read", "readv", "recvfrom", "write",
            "writev", "sendmsg", "sendto")
EVENTS = (["task-clock", "context-switches", "cpu-migrations", "raw_syscalls:sys_enter",
           "net:net_dev_xmit", "sched:sched_waking"] +
          ["syscalls:sys_enter_%s" % s for s in SYSCALLS])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mcring", default=os.path.join(launch.ROOT, "build", "mcring"))
    p.add_argument("--mcring-flags", default="", help="extra mcring flags, word-split")
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--workloads", default="mt-mix")
    p.add_argument("--targets", default="mcring,nutcracker,direct")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--record", action="store_true")
    p.add_argument("--record-target", default="mcring", help="the target --record profiles")
    p.add_argument("--strace", action="store_true")
    p.add_argument("--wakeups", action="store_true")
    p.add_argument("--out")
    return p.parse_args()


def memtier_argv(t, port, w, duration, out):
    argv = [t["memtier"], "-s", launch.HOST, "-p", str(port), "-P", "memcache_text",
            "--ratio=1:10", "--key-pattern=R:R", "--key-maximum=%d" % compare.KEYS, "-c", "50",
            "-t", "1", "--data-size-range=32-100", "--test-time=%d" % duration,
            "--hide-histogram", "--json-out-file=" + out]
    return argv + {"mt-mix": [], "mt-mget": ["--multi-key-get=10"],
                   "mt-p16": ["--pipeline=16"]}[w]


def with_attached(tool_argvs, argv, work_out):
    """Runs argv (memtier) while the tools (each attached to pids) run; stops them with SIGINT."""
    tools = [subprocess.Popen(t, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for t in tool_argvs]
    time.sleep(0.3)
    gen0, busy0 = launch.children_cpu_seconds(), machine_busy_seconds()
    with open(work_out + ".err", "w") as err:
        rc = launch.run_bounded(argv, 120, stdout=subprocess.DEVNULL, stderr=err)
    gen, busy = launch.children_cpu_seconds() - gen0, machine_busy_seconds() - busy0
    for tool in tools:
        tool.send_signal(signal.SIGINT)
    for tool in tools:
        try:
            tool.wait(30)
        except subprocess.TimeoutExpired:
            tool.kill()
            tool.wait()
    if rc != 0:
        # memtier stops reading a connection whose reply it cannot parse, such as the
        # SERVER_ERROR a proxy answers when a backend was stalled past `timeout` (a machine too
        # loaded), and then waits for it to the bound.
        sys.exit("perf_profile.py: memtier failed (%s), see %s.err ('response parsing failed': "
                 "look for backend timeouts in the proxy's log)" % (rc, work_out))
    return gen, busy


def machine_busy_seconds():
    """CPU time of the whole machine not idle (/proc/stat: user, nice, system, irq, softirq)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / launch.CLK_TCK


def perf_stat(pids, path, events=EVENTS):
    return ["perf", "stat", "-x", ";", "-o", path, "-e", ",".join(events), "-p",
            ",".join(str(p) for p in pids)]


def run_seconds(pids):
    """utime + stime of pids: what compare.py counts (they add up to the scheduler's run time)."""
    return sum(launch.cpu_seconds(p) for p in pids)


def read_stat(path):
    got = {}
    for line in open(path):
        f = line.strip().split(";")
        if len(f) < 3 or line.startswith("#"):
            continue
        try:
            got[f[2]] = float(f[0])
        except ValueError:
            pass
    return got


def wakeups(data, roles, req):
    """Who wakes whom, and who sleeps or is preempted, per request, from a perf record of
    sched:sched_waking and sched:sched_switch. roles: thread id -> role; memtier by its name."""
    def role(tid, comm):
        if tid in roles:
            return roles[tid]
        return "memtier" if comm.startswith("memtier") else "other"
    wakes, switches = collections.Counter(), collections.Counter()
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,event,trace"],
                            capture_output=True, text=True).stdout
    for line in script.splitlines():
        m = re.match(r"\s*(.*?)\s+(\d+)\s+sched:(sched_waking|sched_switch):(.*)", line)
        if m is None:
            continue
        me = role(int(m.group(2)), m.group(1))
        f = dict(kv.split("=", 1) for kv in m.group(4).split() if "=" in kv)
        if m.group(3) == "sched_waking":
            wakes[(me, role(int(f.get("pid", -1)), f.get("comm", "")))] += 1
        elif f.get("prev_state", "?").startswith(("S", "D")):
            switches[(me, "sleeps")] += 1
        elif f.get("prev_state", "?").startswith("R"):
            switches[(me, "preempted")] += 1

    def table(head, counts):
        return [head, "|---|---|---:|"] + ["| %s | %s | %.3f |" % (k[0], k[1], n / req)
                                           for k, n in counts.most_common() if n / req >= 0.001]
    lines = (table("| waker | wakee | wake-ups/req |", wakes) + [""] +
             table("| task | switched out | per req |", switches))
    return "\n".join(lines)


def main():
    a = parse_args()
    work = a.out or tempfile.mkdtemp(prefix="mcring-perf-")
    os.makedirs(work, exist_ok=True)
    t = {"memtier": launch.find_tool("memtier_benchmark", compare.MEMTIER_FALLBACK),
         "nutcracker": launch.find_tool("nutcracker", "/usr/sbin/nutcracker"),
         "memcached": launch.find_tool("memcached", "/usr/bin/memcached")}
    L = launch.Launcher(work)
    launch.harness.MEMCACHED_BIN = t["memcached"]
    try:
        backends = [L.memcached("memcached%d" % i, 512, ["-c", "4096"]) for i in (1, 2, 3)]
        servers = "  servers:\n" + "".join("    - %s:1\n" % b.addr for b in backends)
        targets = {}
        names = a.targets.split(",")
        if "direct" in names:
            targets["direct"] = L.memcached("direct", 1024, ["-c", "4096"])
        if "nutcracker" in names:
            targets["nutcracker"] = L.nutcracker(
                "nutcracker", t["nutcracker"],
                "  hash: fnv1a_64\n  distribution: ketama\n" + servers)
        if "mcring" in names:
            targets["mcring"] = L.mcring("mcring", a.mcring,
                                         servers + "  client_connections: 0\n",
                                         shlex.split(a.mcring_flags))
        for n in ("mcring", "direct"):
            if n in targets:
                launch.run_bounded(
                    [t["memtier"], "-s", launch.HOST, "-p", str(targets[n].port), "-P",
                     "memcache_text", "--ratio=1:0", "-n", "allkeys", "--key-pattern=P:P",
                     "--key-maximum=%d" % compare.KEYS, "-c", "1", "-t", "1",
                     "--data-size-range=32-100", "--hide-histogram"], 300,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if "mcring" in targets:
            pid = targets["mcring"].pid
            threads = launch.thread_ids(pid)
            comms = [open("/proc/%d/task/%d/comm" % (pid, x)).read().strip() for x in threads]
            print("mcring threads: %d (%s)" % (len(threads), ", ".join(comms)))
        print("| workload | target | ops/s | p99 µs | CPU µs/req | run time µs/req | "
              "backends CPU µs/req | backends run time µs/req | memtier µs/req | machine busy µs/req | "
              "ctx sw/req | migr/req | "
              "syscalls/req | packets/req | wake-ups/req | " +
              " | ".join(s for s in SYSCALLS) + " |")
        print("|---|---|" + "---:|" * (14 + len(SYSCALLS)))
        back_pids = [b.pid for b in backends]
        for rnd in range(a.rounds):
            for w in a.workloads.split(","):
                for n in names:
                    srv = targets[n]
                    out = os.path.join(work, "%s-%s-%d.json" % (w, n, rnd))
                    stat = os.path.join(work, "%s-%s-%d.stat" % (w, n, rnd))
                    bstat = stat + ".backends"
                    back = n != "direct"  # direct's backends take no part
                    tools = [perf_stat([srv.pid], stat)]
                    if back:
                        tools.append(perf_stat(back_pids, bstat, ["task-clock"]))
                    run0, brun0 = run_seconds([srv.pid]), run_seconds(back_pids)
                    gen, busy = with_attached(tools, memtier_argv(t, srv.port, w, a.duration, out),
                                              out)
                    run1, brun1 = run_seconds([srv.pid]), run_seconds(back_pids)
                    j = compare.parse_memtier(out)
                    s = read_stat(stat)
                    req = j["replies"]
                    per = lambda k: s.get(k, 0) / req  # noqa: E731
                    print("| %s | %s | %.0f | %.0f | %.2f | %.2f | %s | %s | %.2f | %.2f | %.3f | "
                          "%.4f | %.2f | %.2f | %.2f | %s |"
                          % (w, n, j["ops_per_sec"], j["latency_us"]["p99"] or 0,
                             s.get("task-clock", 0) * 1000 / req, (run1 - run0) * 1e6 / req,
                             "%.2f" % (read_stat(bstat).get("task-clock", 0) * 1000 / req)
                             if back else "-",
                             "%.2f" % ((brun1 - brun0) * 1e6 / req) if back else "-",
                             gen * 1e6 / req, busy * 1e6 / req, per("context-switches"),
                             per("cpu-migrations"), per("raw_syscalls:sys_enter"),
                             per("net:net_dev_xmit"), per("sched:sched_waking"),
                             " | ".join("%.2f" % per("syscalls:sys_enter_%s" % c)
                                        for c in SYSCALLS)), flush=True)
        if a.record and a.record_target in targets:
            rec = targets[a.record_target]
            w = a.workloads.split(",")[0]
            data = os.path.join(work, "perf-%s.data" % a.record_target)
            out = os.path.join(work, "record-%s.json" % w)
            with_attached([["perf", "record", "-g", "-e", "cpu-clock", "-F", "2000", "-o", data,
                            "-p", str(rec.pid)]],
                          memtier_argv(t, rec.port, w, a.duration, out), out)
            for sort, extra in (("dso", []), ("sym", ["--children", "--percent-limit", "3"]),
                                ("dso,sym", ["--no-children", "--percent-limit", "0.7"])):
                rep = subprocess.run(["perf", "report", "-i", data, "--sort", sort, "--stdio",
                                      "-g", "none"] + extra, capture_output=True, text=True).stdout
                print("\n%s, perf report --sort %s %s:\n```\n" % (a.record_target, sort,
                                                                  " ".join(extra)) +
                      "\n".join(l for l in rep.splitlines() if l and not l.startswith("#")) +
                      "\n```")
        if a.wakeups:
            for n in names:
                w = a.workloads.split(",")[0]
                out = os.path.join(work, "wakeups-%s-%s.json" % (w, n))
                data = os.path.join(work, "wakeups-%s.data" % n)
                roles = {tid: "backends" for b in back_pids for tid in launch.thread_ids(b)}
                roles.update({tid: n for tid in launch.thread_ids(targets[n].pid)})
                with_attached([["perf", "record", "-a", "-e", "sched:sched_waking,sched:sched_switch",
                                "-o", data]], memtier_argv(t, targets[n].port, w, a.duration, out),
                              out)
                req = compare.parse_memtier(out)["replies"]
                print("\n%s, %s: wake-ups and switches of the whole machine (%d requests):\n\n%s"
                      % (n, w, req, wakeups(data, roles, req)))
        if a.strace:
            for n in names:
                w = a.workloads.split(",")[0]
                out = os.path.join(work, "strace-%s-%s.json" % (w, n))
                trace = os.path.join(work, "strace-%s.txt" % n)
                with_attached([["strace", "-c", "-f", "-o", trace, "-p", str(targets[n].pid)]],
                              memtier_argv(t, targets[n].port, w, a.duration, out), out)
                req = compare.parse_memtier(out)["replies"]
                print("\n%s (strace -c -f, %d requests; calls/request):" % (n, req))
                for line in open(trace):
                    f = line.split()
                    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
                        calls = int(f[3])
                        print("  %-14s %.3f" % (f[-1], calls / req))
    finally:
        L.stop()
    print("raw files: %s" % work, file=sys.stderr)


if __name__ == "__main__":
    main()
