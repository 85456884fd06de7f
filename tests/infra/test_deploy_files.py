"""The deploy files, rendered with the project's real settings and checked by real validators.

Kubernetes manifests go through ``kubernetes-validate`` (the API's own schemas, strict), the compose
file through ``compose-spec`` (the Compose specification), the Ray cluster file through Ray's own
cluster schema. Then every container's environment is resolved the way its runtime resolves it
(Secret keys, compose interpolation) and checked against what its service reads
(``infra.service_env``), and the service's config is loaded with exactly that environment through the
real loader: a variable missing from a file fails here, not at deploy time.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from compose_spec import PyCompose

from app.config import SluiceConfig, env_references, parse_config
from infra.service_env import needs
from sluice.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "infra" / "k8s" / "sluice.yaml"
COMPOSE = REPO / "infra" / "compose" / "docker-compose.yml"
CLUSTER = REPO / "infra" / "ray" / "cluster.yaml"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
DIST = PYPROJECT["project"]["name"]


def render(config_text: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> SluiceConfig:
    """Load a config through the real loader with exactly ``env`` for its ${VAR} references."""
    for name in env_references(yaml.safe_load(config_text)):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return parse_config(yaml.safe_load(config_text), base_dir=Path("/"))


def check_service_env(where: str, args: list[str], config_text: str, env: dict[str, str], mp: Any) -> None:
    wanted = needs(args, config_text)
    missing = wanted.required - set(env)
    assert not missing, f"{where}: sluice {' '.join(args)} needs {sorted(missing)}"
    unread = set(env) - wanted.reads
    assert not unread, f"{where}: passes {sorted(unread)}, which sluice {' '.join(args)} never reads"
    cfg = render(config_text, env, mp)
    for name in sorted(wanted.required):  # and without any one of them, the service would not start
        with pytest.raises(ConfigError, match=name):
            render(config_text, {k: v for k, v in env.items() if k != name}, mp)
    assert cfg.broker.profile == "kafka" and not cfg.broker.embedded


# ----------------------------------------------------------------------------- the distribution name


def test_the_distribution_name_is_the_one_every_install_uses() -> None:
    assert DIST == "sluice-rl"  # free on PyPI; "sluice" there is an unrelated ZFS snapshot tool
    assert "vllm" in PYPROJECT["project"]["optional-dependencies"]
    install_lines = [
        line
        for f in [*REPO.glob("infra/**/*"), REPO / "README.md"]
        if f.is_file() and f.suffix in {".yaml", ".yml", ".sh", ".md", ""}
        for line in f.read_text(errors="replace").splitlines()
        if "pip install" in line
    ]
    assert install_lines
    for line in install_lines:  # a bare PyPI "sluice" would install the other project
        assert not re.search(r"""pip install[^#]*?(?<![\w/.~-])["']?sluice(\[|["'\s]|$)""", line), line


# ----------------------------------------------------------------------------- Kubernetes


def _k8s_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(K8S.read_text()) if d]


def test_k8s_manifests_pass_the_kubernetes_api_schemas() -> None:
    version = kubernetes_validate.utils.latest_version()
    kinds = []
    for doc in _k8s_docs():
        kubernetes_validate.validate(doc, version, strict=True)
        kinds.append(doc["kind"])
    assert {"Secret", "ConfigMap", "Deployment", "StatefulSet", "Service", "Job"} <= set(kinds)
    broken = copy.deepcopy(next(d for d in _k8s_docs() if d["kind"] == "Deployment"))
    broken["spec"]["replica"] = 2  # the validator is strict: a typo is an error
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def test_k8s_every_container_gets_what_its_service_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _k8s_docs()
    secrets = {d["metadata"]["name"]: d["stringData"] for d in docs if d["kind"] == "Secret"}
    maps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    for values in secrets.values():  # placeholders only, never a real key
        assert all(v.startswith("REPLACE") for v in values.values()), values
    workloads = [d for d in docs if d["kind"] in {"Deployment", "StatefulSet", "Job"}]
    assert {w["metadata"]["name"] for w in workloads} == {
        "sluice-proxy",
        "sluice-stages",
        "sluice-sink",
        "sluice-topics",
    }
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
    for w in workloads:
        if w["kind"] == "StatefulSet":
            assert w["spec"]["serviceName"] in services
        pod = w["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in pod["containers"]:
            where = f"{w['metadata']['name']}/{c['name']}"
            assert not c.get("envFrom"), f"{where}: pass each variable by name"
            env: dict[str, str] = {}
            for e in c.get("env", []):
                if "value" in e:
                    env[e["name"]] = e["value"]
                else:
                    ref = e["valueFrom"]["secretKeyRef"]
                    assert ref["key"] in secrets[ref["name"]], (
                        f"{where}: no key {ref['key']} in {ref['name']}"
                    )
                    env[e["name"]] = secrets[ref["name"]][ref["key"]]
            # the config the service loads: SLUICE_CONFIG inside the ConfigMap mounted at its folder
            config_path = Path(env["SLUICE_CONFIG"])
            mount = next(m for m in c["volumeMounts"] if Path(m["mountPath"]) == config_path.parent)
            config_text = maps[volumes[mount["name"]]["configMap"]["name"]][config_path.name]
            check_service_env(where, c["args"], config_text, env, monkeypatch)
            if c["args"] == ["proxy"]:
                port = c["ports"][0]["containerPort"]
                assert render(config_text, env, monkeypatch).proxy.port == port
                assert c["readinessProbe"]["httpGet"]["port"] == port


# ----------------------------------------------------------------------------- compose

_COMPOSE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: Any, dotenv: dict[str, str]) -> Any:
    """Compose's variable interpolation: ${V}, ${V:-default}, ${V-default}, ${V:?error}, ${V?error}."""
    if isinstance(value, dict):
        return {k: interpolate(v, dotenv) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, dotenv) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        have = dotenv.get(name)
        unset = have is None or (op in {":-", ":?"} and have == "")
        if not unset:
            return have or ""
        if op in {":?", "?"}:
            raise ValueError(f"required variable {name} is missing a value: {arg}")
        return arg if op in {":-", "-"} else ""

    return _COMPOSE_VAR.sub(sub, value)


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


DOTENV = {"SLUICE_KEY_DEFAULT": "k1", "SLUICE_HASH_KEY": "h1", "SLUICE_ADMIN_KEY": "a1"}


def test_compose_file_follows_the_compose_specification() -> None:
    data = _compose()
    # compose-spec has no YAML merge keys; safe_load resolved them, as docker compose does
    project = PyCompose.from_json(json.dumps(data))
    assert {"kafka", "proxy", "stages", "sink", "policy", "trainer", "vllm"} <= set(project.service_names())
    broken = copy.deepcopy(data)
    broken["services"]["trainer"]["comand"] = ["train"]
    with pytest.raises(ValueError, match="comand"):
        PyCompose.from_json(json.dumps(broken))
    with pytest.raises(ValueError, match="SLUICE_ADMIN_KEY"):  # compose refuses a missing secret
        interpolate(data, {k: v for k, v in DOTENV.items() if k != "SLUICE_ADMIN_KEY"})


def test_compose_every_service_gets_what_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    data = interpolate(_compose(), DOTENV)
    services = data["services"]
    seen = set()
    for name, svc in services.items():
        if svc.get("image") != "sluice:latest":
            continue
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        config_text = (REPO / Path(env["SLUICE_CONFIG"]).relative_to("/app")).read_text()
        check_service_env(f"compose {name}", svc["command"], config_text, env, monkeypatch)
        seen.add(svc["command"][0])
    assert {"topics", "proxy", "stages", "sink", "serve-model", "train"} <= seen

    # the pieces find each other: the proxy's backends and the trainer's pushes name compose services
    proxy_env = {k: str(v) for k, v in services["proxy"]["environment"].items()}
    cfg = render((REPO / "infra/compose/sluice.compose.yaml").read_text(), proxy_env, monkeypatch)
    backends = {b.name: b.base_url for b in cfg.proxy.backends}
    assert backends["policy"] == f"http://policy:{cfg.trainer.serve.port}/v1"
    assert backends["vllm"] == "http://vllm:8000/v1" and "8000" in services["vllm"]["command"]
    assert cfg.trainer.enabled and cfg.trainer.resolved_mode == "live"
    assert cfg.trainer.policy_server_urls() == [f"http://policy:{cfg.trainer.serve.port}"]
    assert cfg.trainer.serve.host == "0.0.0.0" and cfg.proxy.host == "0.0.0.0"
    assert services["proxy"]["ports"] == [f"{cfg.proxy.port}:{cfg.proxy.port}"]
    assert "policy" in services["trainer"]["depends_on"]

    # vLLM runs only under the gpu profile, on the host's GPUs, with the key the proxy sends
    vllm = services["vllm"]
    assert vllm["profiles"] == ["gpu"]
    assert vllm["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "VLLM_API_KEY" in vllm["environment"] and "VLLM_API_KEY" in proxy_env
    assert {b.api_key_env for b in cfg.proxy.backends if b.name == "vllm"} == {"VLLM_API_KEY"}


# ----------------------------------------------------------------------------- Ray cluster


def test_ray_cluster_file_installs_this_checkout() -> None:
    from ray.autoscaler._private.commands import prepare_config
    from ray.autoscaler._private.util import validate_config

    raw = yaml.safe_load(CLUSTER.read_text())
    validate_config(prepare_config(copy.deepcopy(raw)))  # Ray's own cluster schema and defaults
    mounts = raw["file_mounts"]
    (remote, local), *_ = mounts.items()
    assert (REPO / local).resolve() == REPO  # `ray up` from the checkout root mounts the checkout
    installs = [c for c in raw["setup_commands"] if re.search(r"pip install (?!--upgrade pip)", c)]
    assert installs
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    remote_home = remote.replace("~", "$HOME")
    for command in installs:
        target = re.search(r'pip install "([^"]+)"', command).group(1)
        path, _, extra = target.partition("[")
        assert path == remote_home, f"installs {target!r}, not the mounted checkout {remote_home}"
        assert {e.strip() for e in extra.rstrip("]").split(",") if e} <= extras
    broken = dict(raw, setup_command=raw["setup_commands"])
    with pytest.raises(Exception, match="setup_command"):
        validate_config(prepare_config(copy.deepcopy(broken)))
