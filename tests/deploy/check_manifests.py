"""Checks deploy/ without a cluster or the network: every YAML parses, and the
facts the pieces must agree on hold (docs/deployment.md "Many boxes").

  python3 tests/deploy/check_manifests.py SOURCE_ROOT

Exit 0 when all hold; otherwise each broken fact on its own line, exit 1."""
import json
import pathlib
import re
import sys

import yaml

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
deploy = root / "deploy"
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


def docs(path):
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except yaml.YAMLError as e:
        problems.append(f"{path}: not valid YAML: {e}")
        return []


def by_kind(documents, kind):
    return [d for d in documents if d.get("kind") == kind]


def server_config(configmap, where):
    try:
        return json.loads(configmap["data"]["server.json"])
    except (KeyError, json.JSONDecodeError) as e:
        problems.append(f"{where}: ConfigMap server.json is not JSON: {e}")
        return {}


def check_container(c, where, annotations):
    args = c.get("args", [])
    check("--shard-from-hostname" in args, f"{where}: args lack --shard-from-hostname")
    check(any(a.startswith("--listen=0.0.0.0:8080") for a in args), f"{where}: not on 0.0.0.0:8080")
    ports = [p["containerPort"] for p in c.get("ports", [])]
    check(ports == [8080], f"{where}: containerPort {ports}, expected [8080]")
    for probe, path in (("startupProbe", "/startupz"), ("livenessProbe", "/livez"),
                        ("readinessProbe", "/readyz")):
        got = c.get(probe, {}).get("httpGet", {}).get("path")
        check(got == path, f"{where}: {probe} path {got}, expected {path}")
    start = c.get("startupProbe", {})
    budget = start.get("periodSeconds", 10) * start.get("failureThreshold", 3)
    check(budget >= 120, f"{where}: startupProbe allows {budget} s for model loading, want >= 120")
    check(annotations.get("prometheus.io/scrape") == "true", f"{where}: no prometheus.io/scrape")
    check(annotations.get("prometheus.io/port") == "8080", f"{where}: prometheus.io/port != 8080")
    mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
    check({"/etc/torchinfer", "/models"} <= mounts, f"{where}: config and models not mounted")


def check_kubernetes():
    k8s = deploy / "kubernetes"
    kust = yaml.safe_load((k8s / "kustomization.yaml").read_text())
    all_docs = []
    for r in kust["resources"]:
        check((k8s / r).is_file(), f"kustomization names {r}, which is missing")
        all_docs += docs(k8s / r)
    [sts] = by_kind(all_docs, "StatefulSet") or [None]
    [svc] = by_kind(all_docs, "Service") or [None]
    [cm] = by_kind(all_docs, "ConfigMap") or [None]
    if not (check(sts, "no StatefulSet") and check(svc, "no Service") and check(cm, "no ConfigMap")):
        return
    config = server_config(cm, "kubernetes")
    check(sts["spec"]["replicas"] == config.get("shards"),
          f"StatefulSet replicas {sts['spec']['replicas']} != ConfigMap shards {config.get('shards')}")
    check(svc["spec"].get("clusterIP") == "None", "Service is not headless (clusterIP: None)")
    check(sts["spec"]["serviceName"] == svc["metadata"]["name"], "serviceName is not the Service")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()),
          "Service selector does not match the pods")
    check(sts["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "StatefulSet selector does not match its template")
    pod = sts["spec"]["template"]
    [c] = pod["spec"]["containers"]
    check_container(c, "StatefulSet", pod["metadata"].get("annotations", {}))
    res = c.get("resources", {})
    check(res.get("requests", {}).get("cpu") == res.get("limits", {}).get("cpu"),
          "CPU requests != limits: the pod is not Guaranteed (no exclusive cores)")
    check(pod["spec"].get("securityContext", {}).get("runAsNonRoot") is True, "pod may run as root")
    ids = [s["id"] for s in config.get("streams", [])]
    check(len(ids) == len(set(ids)) and ids, "ConfigMap stream ids empty or not unique")
    check(cm["metadata"]["name"] == pod["spec"]["volumes"][0]["configMap"]["name"],
          "the config volume does not name the ConfigMap")


def check_podman():
    d = docs(deploy / "kubernetes" / "podman" / "fleet-2.yaml")
    pods, [cm] = by_kind(d, "Pod"), by_kind(d, "ConfigMap") or [None]
    config = server_config(cm, "podman") if cm else {}
    check(len(pods) == 2 == config.get("shards"), "podman variant: not 2 pods for 2 shards")
    check(len(config.get("streams", [])) == 8, "podman variant: not 8 cameras")
    for k, p in enumerate(pods):
        name = f"torchinfer-{k}"
        check(p["metadata"]["name"] == name and p["spec"].get("hostname") == name,
              f"podman pod {k}: name/hostname is not {name} (the ordinal is the shard)")
        [c] = p["spec"]["containers"]
        check_container(c, f"podman pod {k}", p["metadata"].get("annotations", {}))
        check(c["ports"][0].get("hostPort") == 18080 + k, f"podman pod {k}: hostPort != {18080 + k}")


def check_container_file():
    text = (deploy / "container" / "Containerfile").read_text()
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    check(len(froms) == 2, f"Containerfile: {len(froms)} stages, expected build + runtime")
    check(re.search(r"^ARG BASE=.*debian:bookworm$", text, re.M), "Containerfile: base is not Debian 12")
    runtime = text.split("\nFROM ")[-1]
    check("-dev" not in runtime, "Containerfile: the runtime stage installs -dev packages")
    check("meson setup" in text.split("\nFROM ")[1], "Containerfile: the build stage does not use meson")
    user = re.findall(r"^USER (\S+)", runtime, re.M)
    check(user and user[-1] not in ("root", "0"), "Containerfile: runs as root")
    check(re.search(r"^HEALTHCHECK .*\n?.*?/livez", runtime, re.M), "Containerfile: no HEALTHCHECK on /livez")


def check_prometheus_and_grafana():
    rules = yaml.safe_load((deploy / "prometheus" / "rules.yml").read_text())
    alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
    tests = (deploy / "prometheus" / "rules_test.yml").read_text()
    for a in alerts:  # each alert is tested firing
        check(re.search(rf"alertname: {a}\n\s+exp_alerts:\n\s+- exp_labels", tests),
              f"rules_test.yml never expects {a} to fire")
    dash = json.loads((deploy / "grafana" / "fleet.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= 8, "the dashboard has fewer than 8 queries")
    check(any("by (shard)" in e for e in exprs), "the dashboard has no per-shard panel")
    check(any("stream" in e for e in exprs), "the dashboard has no per-camera panel")


check_kubernetes()
check_podman()
check_container_file()
check_prometheus_and_grafana()
for p in problems:
    print(p)
print(f"check_manifests: {len(problems)} problems")
sys.exit(1 if problems else 0)
