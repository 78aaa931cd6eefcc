"""One observed run shared by the observe tests.

Suite ``obs``: two categories of equal weight (code: c1, c2; ops: o1), so the macro strict rate
(assay's) differs from the seeds' micro query. Agents: ``flaky`` (a command agent calling the
gateway through the real openai SDK; it passes the first two repetitions of each code task and
fails the third, never passes o1 and leaves a process behind there), ``oracle`` and ``nop``.
Every first model call gets an injected 429, which the SDK retries: those trials count as
fault trials. The run is watched live by Prometheus (through :class:`MetricsPlugin`) and, when
Phoenix is installed, exported live over OTLP.
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from assay.observe.metrics import MetricsPlugin
from assay.run import RunOptions, start_run
from assay.run.hooks import hookimpl
from tests.conftest import write_agent, write_suite, write_task
from tests.observe import servers

REPEAT = 3
SUITE = "obs"
CANARY = "CANARY-7f3a9c-OBSERVE"

FLAKY = """
import os, pathlib, subprocess, sys
from openai import OpenAI

task, state = sys.argv[1], pathlib.Path(sys.argv[2])
print("note for the record: CANARY-7f3a9c-OBSERVE")  # must never reach an export
client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=3)
reply = client.chat.completions.create(model="any", messages=[{"role": "user", "content": "go"}])
counter = state / task
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
if task.startswith("c") and n % 3 != 0:
    pathlib.Path("out.txt").write_text(reply.choices[0].message.content or "")
if task == "o1":
    subprocess.Popen(["sleep", "300"], start_new_session=True)
"""


def make_suite(root: Path) -> Path:
    s = write_suite(root, name=SUITE, categories=[{"id": "code", "weight": 1}, {"id": "ops", "weight": 1}])
    model = yaml.safe_dump({"turns": [{"text": "ok"}]})
    for tid, cat in (("c1", "code"), ("c2", "code"), ("o1", "ops")):
        write_task(s, tid, task={"category": cat, "model_script": "model.yaml", "budget": {"wall_time_s": 60},
                                 "predicates": [{"id": "out", "kind": "file_contains", "path": "out.txt", "text": "ok"}]},
                   files={"model.yaml": model}, solution="echo ok > out.txt\n")
    return s


def make_flaky(root: Path) -> Path:
    state = root / "state"
    state.mkdir(parents=True)
    script = root / "flaky.py"
    return write_agent(root / "flaky.yaml", "flaky", FLAKY, needs_gateway=True,
                       command=[sys.executable, str(script), "{task_id}", str(state)],
                       env={"OPENAI_BASE_URL": "{endpoint}/v1", "OPENAI_API_KEY": "{api_key}"},
                       mounts=[str(root), str(Path(sys.executable).resolve().parents[1])])


class WaitForFirstScrape:
    """Holds the first trial until Prometheus has scraped the zeroed series once (so increase()
    sees every trial). Runs after MetricsPlugin started its server (trylast)."""

    def __init__(self, prom: servers.Prometheus):
        self.prom = prom

    @hookimpl(trylast=True)
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        servers.wait_for(lambda: self.prom.query(f'count(agent_eval_trials_total{{job="live",suite="{SUITE}"}})'),
                         "first scrape of the live run")


@dataclass
class ObservedRun:
    run_dir: Path
    results: list[Any]
    prom: servers.Prometheus | None
    finished_at: float
    phoenix: str | None
    live_project: str
    metrics: MetricsPlugin
    textfile_dir: Path


def _run(tmp: Path, plugins: list[object]) -> Any:
    faults = tmp / "faults.yaml"
    faults.write_text(yaml.safe_dump([{"kind": "rate_limit", "on_call": 1, "retry_after_s": 0.05}]))
    return start_run(RunOptions(suite=make_suite(tmp / "suite"), agents=[str(make_flaky(tmp / "agent")), "oracle", "nop"],
                                repeat=REPEAT, out=tmp / "run", sandbox="host", model="scripted", faults_file=faults,
                                plugins=plugins))


def _installed(env: str, *names: str, extra: list[Path] | None = None) -> bool:
    return servers._binary(env, *names, extra=extra) is not None


@pytest.fixture(scope="session")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObservedRun]:
    """The run, watched by whichever real backends are installed (tests needing one skip without it)."""
    tmp = tmp_path_factory.mktemp("observed")
    live_port = servers.free_port()
    (tmp / "final").mkdir()
    metrics = MetricsPlugin(live_port, final_scrape_s=60, textfile=tmp / "final" / "assay.prom")
    plugins: list[object] = [metrics]
    project = "assay-live"
    with ExitStack() as stack:
        prom = phx_url = None
        textfile_dir = tmp / "textfile"
        textfile_dir.mkdir()
        if _installed("ASSAY_PROMETHEUS", "prometheus"):
            jobs = {"live": (f"127.0.0.1:{live_port}", "/metrics")}
            if _installed("ASSAY_NODE_EXPORTER", "prometheus-node-exporter", "node_exporter"):
                jobs["textfile"] = (stack.enter_context(servers.node_exporter(textfile_dir, tmp)), "/metrics")
            prom = stack.enter_context(servers.prometheus(tmp, jobs))
            plugins.insert(0, WaitForFirstScrape(prom))
        else:
            metrics.final_scrape_s = 0
        if _installed("ASSAY_PHOENIX", "phoenix", extra=[servers.ROOT / ".venv-phoenix" / "bin" / "phoenix"]):
            from assay.observe.otel import OtlpPlugin

            phx_url = stack.enter_context(servers.phoenix(tmp))
            plugins.append(OtlpPlugin(phx_url, resource={"openinference.project.name": project}))
        outcome = _run(tmp, plugins)
        if prom is not None:
            total = len(outcome.manifest.plan.trials)
            servers.wait_for(lambda: prom.by(f'sum(agent_eval_trials_total{{job="live",suite="{SUITE}"}})', "") == {"": total},
                             "prometheus holds the last live trial")
        yield ObservedRun(outcome.run_dir.path, outcome.results, prom, time.time(), phx_url, project, metrics,
                          textfile_dir)
