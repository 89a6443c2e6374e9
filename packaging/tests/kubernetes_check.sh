#!/usr/bin/env bash
# Checks packaging/kubernetes/*.yaml without a cluster: the manifests parse (python3-yaml), the
# ConfigMap's mcring.yml passes `mcring -t`, and the pieces agree with each other (the ConfigMap
# is mounted as a directory at /etc/mcring, not via subPath; probes hit /healthz on the admin
# port; the pool's listen port is the container port the Service targets; non-root; the admin
# token comes from a mounted Secret; the NetworkPolicy and the PodDisruptionBudget select the
# Deployment's pods, the policy admits only some clients to the admin port, the budget leaves
# replicas serving).
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
        # One of each kind is mcring's; memcached-service.yaml's Service is memcached's.
        if doc and (doc["kind"] not in docs or doc["metadata"]["name"] == "mcring"):
            docs[doc["kind"]] = doc
            print(f"ok: {os.path.basename(f)}: {doc['kind']} {doc['metadata']['name']}")
problems = []
def check(cond, msg):
    print(("ok: " if cond else "FAIL: ") + msg)
    if not cond:
        problems.append(msg)

for kind in ("ConfigMap", "Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget"):
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

# The admin port listens beyond loopback, so mcring needs its token: from a Secret volume.
check("--admin-token-file" in args, "args give --admin-token-file (required with -a 0.0.0.0)")
if "--admin-token-file" in args:
    token_path = args[args.index("--admin-token-file") + 1]
    secret_mounts = [m for m in c.get("volumeMounts", []) if "secret" in vols.get(m["name"], {})]
    holder = [m for m in secret_mounts if token_path.startswith(m["mountPath"].rstrip("/") + "/")]
    check(len(holder) == 1, f"the token file {token_path} is in a mounted Secret volume")
    if holder:
        sec = vols[holder[0]["name"]]["secret"]
        check("subPath" not in holder[0], "the Secret is mounted as a directory (rotation reaches the pod)")
        check(not sec.get("optional", False), "the Secret is not optional (no start without a token)")
        mode = sec.get("defaultMode", 0o644)
        check(mode & 0o007 == 0, f"the token is not readable by other users (mode {mode:o})")
        check(sc.get("fsGroup") is not None or mode & 0o004, "fsGroup lets mcring read the group-readable token")

labels = dep["spec"]["template"]["metadata"]["labels"]
np, pdb = docs["NetworkPolicy"], docs["PodDisruptionBudget"]
check(np["spec"]["podSelector"].get("matchLabels", {}).items() <= labels.items(), "NetworkPolicy selects the Deployment's pods")
check("Ingress" in np["spec"].get("policyTypes", []), "NetworkPolicy restricts ingress")
def rule_ports(rule):
    return {ports.get(p.get("port"), p.get("port")) for p in rule.get("ports", [])}
admin_rules = [r for r in np["spec"].get("ingress", []) if admin in rule_ports(r) or not r.get("ports")]
check(bool(admin_rules), "NetworkPolicy admits someone to the admin port (Prometheus)")
def selective(peer):  # a labelled set of pods, or of namespaces; never "every pod"
    return bool(peer.get("podSelector", {}).get("matchLabels") or peer.get("namespaceSelector"))
check(all(r.get("from") and all(selective(f) for f in r["from"]) for r in admin_rules),
      "the admin port is open only to selected pods/namespaces, not to all")
check(any(listen_ports & rule_ports(r) for r in np["spec"].get("ingress", [])), "NetworkPolicy admits clients to the pool port")
check(pdb["spec"]["selector"].get("matchLabels", {}).items() <= labels.items(), "PodDisruptionBudget selects the Deployment's pods")
replicas = dep["spec"].get("replicas", 1)
if "maxUnavailable" in pdb["spec"]:
    mu = pdb["spec"]["maxUnavailable"]
    check(isinstance(mu, int) and 1 <= mu < replicas, f"PodDisruptionBudget maxUnavailable {mu} of {replicas} replicas")
else:
    ma = pdb["spec"].get("minAvailable")
    check(isinstance(ma, int) and 1 <= ma < replicas, f"PodDisruptionBudget minAvailable {ma} of {replicas} replicas (drains still possible)")
sys.exit(1 if problems else 0)
EOF

out=$("$mcring" -t -c "$work/mcring.yml" 2>&1) || { echo "$out"; echo "FAIL: the ConfigMap's mcring.yml does not check"; exit 1; }
echo "ok: ConfigMap mcring.yml: $out"
echo "kubernetes_check: PASS"
