#!/usr/bin/env bash
# Checks packaging/kubernetes/*.yaml without a cluster: the manifests parse (python3-yaml), the
# ConfigMap's mcring.yml passes `mcring -t`, and the pieces agree with each other (the ConfigMap
# is mounted as a directory at /etc/mcring, not via subPath; probes hit /healthz on the admin
# port; the pool's listen port is the container port the Service targets; non-root).
# Skips (prints "SKIP: reason", exits 0) without python3 and its yaml module.
#
#   packaging/tests/kubernetes_check.sh MCRING_BINARY
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=$here/../kubernetes
mcring=${1:?usage: kubernetes_check.sh MCRING_BINARY}

py=""
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import yaml' 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with the yaml module (Debian: python3-yaml)"; exit 0; }

work=$(mktemp -d /tmp/mcring-k8s-check.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$py" - "$dir" "$work" <<'EOF'
import glob, os, re, sys, yaml

d, work = sys.argv[1], sys.argv[2]
docs = {}
for f in sorted(glob.glob(os.path.join(d, "*.yaml"))):
    for doc in yaml.safe_load_all(open(f)):
        if doc:
            docs[doc["kind"]] = doc
            print(f"ok: {os.path.basename(f)}: {doc['kind']} {doc['metadata']['name']}")
problems = []
def check(cond, msg):
    print(("ok: " if cond else "FAIL: ") + msg)
    if not cond:
        problems.append(msg)

for kind in ("ConfigMap", "Deployment", "Service"):
    check(kind in docs, f"a {kind} is defined")
if problems:
    sys.exit(1)
cm, dep, svc = docs["ConfigMap"], docs["Deployment"], docs["Service"]
conf = cm["data"].get("mcring.yml")
check(conf is not None, "ConfigMap has key mcring.yml")
open(os.path.join(work, "mcring.yml"), "w").write(conf or "")

spec = dep["spec"]["template"]["spec"]
c = spec["containers"][0]
check(dep["spec"].get("replicas", 1) >= 2, f"replicas: {dep['spec'].get('replicas')}")
vols = {v["name"]: v for v in spec.get("volumes", [])}
mounts = [m for m in c.get("volumeMounts", []) if vols.get(m["name"], {}).get("configMap", {}).get("name") == cm["metadata"]["name"]]
check(len(mounts) == 1, "the ConfigMap is mounted once")
if mounts:
    check(mounts[0]["mountPath"] == "/etc/mcring", f"mounted at {mounts[0]['mountPath']}")
    check("subPath" not in mounts[0], "mounted as a directory (no subPath: updates reach the pod)")
args = c.get("args", [])
check("-c" in args and args[args.index("-c") + 1] == "/etc/mcring/mcring.yml", f"args -c /etc/mcring/mcring.yml: {args}")
check("-a" in args and args[args.index("-a") + 1] == "0.0.0.0", "admin endpoint listens beyond loopback (-a 0.0.0.0), so the kubelet can probe it")
ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
admin = int(args[args.index("-s") + 1]) if "-s" in args else 22222
check(ports.get("admin") == admin, f"container port 'admin' is the admin port {admin}")
for probe in ("readinessProbe", "livenessProbe"):
    g = c.get(probe, {}).get("httpGet", {})
    port = ports.get(g.get("port"), g.get("port"))
    check(g.get("path") == "/healthz" and port == admin, f"{probe}: GET /healthz on {port}")
check(c.get("lifecycle", {}).get("preStop") is not None, "preStop hook (endpoints drain before SIGTERM)")
sc = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
check(sc.get("runAsNonRoot") is True, "runAsNonRoot")
check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation: false")
check(spec.get("terminationGracePeriodSeconds", 30) >= 15, f"terminationGracePeriodSeconds: {spec.get('terminationGracePeriodSeconds')}")
check(c.get("resources", {}).get("requests") is not None, "resource requests")

pools = yaml.safe_load(conf or "{}") or {}
listen_ports = {int(str(p.get("listen", "")).rsplit(":", 1)[-1]) for p in pools.values() if re.search(r":\d+$", str(p.get("listen", "")))}
container_ports = set(ports.values())
check(listen_ports and listen_ports <= container_ports, f"pool listen ports {sorted(listen_ports)} are container ports {sorted(container_ports)}")
check(all(str(p.get("listen", "")).startswith(("0.0.0.0:", "[::]:")) for p in pools.values()), "pools listen on all interfaces of the pod")
check(svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(), "Service selects the Deployment's pods")
for sp in svc["spec"]["ports"]:
    tp = sp.get("targetPort", sp["port"])
    check(ports.get(tp, tp) in listen_ports, f"Service port {sp['port']} -> {tp} reaches a pool")
sys.exit(1 if problems else 0)
EOF

out=$("$mcring" -t -c "$work/mcring.yml" 2>&1) || { echo "$out"; echo "FAIL: the ConfigMap's mcring.yml does not check"; exit 1; }
echo "ok: ConfigMap mcring.yml: $out"
echo "kubernetes_check: PASS"
