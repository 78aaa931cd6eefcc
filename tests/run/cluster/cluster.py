"""A real local Ray cluster for tests and bench/scale.py: a head and N worker nodes, each its own
``ray start --block`` process (own process group, own working folder, own Ray temp folder).

Worker nodes can be started in a private mount namespace where given folders (the runs folder)
are read-only, so a worker that wrote into the run directory would fail loudly. Only the
process groups started here are ever signalled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.ports import free_port, free_ports

RAY = Path(sys.executable).with_name("ray")
READY_S = 120.0
HEAD_TRIES = 3
PORT_FLAGS = ("--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--metrics-export-port",
              "--runtime-env-agent-port")


class HeadExited(RuntimeError):
    """The head's ``ray start`` process ended before its GCS port listened."""


def can_make_read_only() -> bool:
    """Root with unshare: worker nodes can get a read-only view of the runs folder."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


@dataclass
class LocalRayCluster:
    root: Path
    read_only: tuple[Path, ...] = ()  # folders the worker nodes see read-only
    port: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ports: set[int] = field(default_factory=set)  # every port given to a node of this cluster
    killed: set[str] = field(default_factory=set)  # nodes a test killed on purpose
    # Ray's own temp folders, kept short: its unix socket paths must fit in 107 bytes
    short: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp")))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, name: str, args: list[str], *, ro: bool) -> None:
        home = self.root / name
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        picked = self.pick_ports(len(PORT_FLAGS))  # never a default port others use, never one twice
        ports = [a for flag, port in zip(PORT_FLAGS, picked) for a in (flag, str(port))]
        cmd = [str(RAY), "start", *args, *ports, "--temp-dir", str(self.short / name), "--disable-usage-stats", "--block"]
        if ro and self.read_only:
            binds = " && ".join(f"mount --bind {p} {p} && mount -o remount,bind,ro {p} {p}" for p in self.read_only)
            cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{binds} && exec "$@"', "sh", *cmd]
        env = {**os.environ, "TMPDIR": str(home / "tmp"), "RAY_USAGE_STATS_ENABLED": "0"}
        with open(home / "node.log", "wb") as log:
            self.procs[name] = subprocess.Popen(cmd, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)

    def pick_ports(self, count: int) -> list[int]:
        """``count`` free ports distinct from each other and from every port this cluster gave out."""
        picked = free_ports(count, taken={self.port, *self.ports})
        self.ports.update(picked)
        return picked

    def start_head(self) -> None:
        self._start("head", ["--head", "--port", str(self.port), "--node-ip-address", "127.0.0.1", "--num-cpus", "0",
                             "--include-dashboard=false", "--ray-client-server-port", str(self.pick_ports(1)[0]),
                             "--min-worker-port", "0", "--max-worker-port", "0"], ro=False)

    def _add_node(self, prefix: str, resource: str, slots: int) -> str:
        """Start one more node advertising ``slots`` of ``resource`` and a resource named after it
        (tests find its id by that)."""
        name = f"{prefix}{sum(1 for n in self.procs if n.startswith(prefix)) + 1}"
        self._start(name, ["--address", self.address, "--node-ip-address", "127.0.0.1", "--num-cpus", str(slots),
                           "--resources", json.dumps({resource: slots, f"assay_test_{name}": 1}),
                           "--min-worker-port", "0", "--max-worker-port", "0"], ro=True)
        return name

    def add_worker(self, slots: int = 2) -> str:
        """Start one more sandbox worker node (``w1``, ``w2``...)."""
        return self._add_node("w", "assay_sandbox", slots)

    def add_verifier(self, slots: int = 2) -> str:
        """Start a verifier node (``v1``...): it advertises ``assay_verifier`` and no sandbox slots."""
        return self._add_node("v", "assay_verifier", slots)

    def alive_nodes(self) -> list[dict[str, object]]:
        """The cluster's live nodes, asked from a separate driver process (this one stays clean)."""
        code = ("import json, ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
                "print('NODES ' + json.dumps([{'id': n['NodeID'], 'resources': n['Resources']} for n in ray.nodes() if n['Alive']]))"
                % self.address)
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                                 cwd=self.root, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
        except subprocess.TimeoutExpired:
            return []
        if out.returncode != 0:
            return []
        lines = [line for line in out.stdout.splitlines() if line.startswith("NODES ")]  # Ray may print too
        return json.loads(lines[-1].removeprefix("NODES ")) if lines else []

    def wait_nodes(self, count: int) -> list[dict[str, object]]:
        """Poll (bounded) until ``count`` nodes are alive; a node that died meanwhile fails at once.
        A node this cluster killed is not counted: Ray may still list it alive for a while, and
        counting it let a test go on before the node it had just added had joined."""
        end = time.monotonic() + READY_S
        gone = {f"assay_test_{name}" for name in self.killed}
        while time.monotonic() < end:
            dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None and n not in self.killed}
            if dead:
                logs = "\n".join(f"--- {n}/node.log ends:\n{self.log_tail(n)}" for n in dead)
                raise RuntimeError(f"ray node(s) exited while starting: {dead}\n{logs}")
            nodes = [n for n in self.alive_nodes() if not gone & set(n["resources"])]  # type: ignore[arg-type]
            if len(nodes) >= count:
                return nodes
        raise RuntimeError(f"the local Ray cluster did not reach {count} nodes in {READY_S:.0f} s")

    def log_tail(self, name: str, size: int = 3000) -> str:
        """The end of node ``name``'s log: what a failure message shows, since CI keeps no files."""
        try:
            return (self.root / name / "node.log").read_bytes()[-size:].decode(errors="replace")
        except OSError as e:
            return f"(no log: {e})"

    def wait_head(self) -> None:
        """Poll (bounded) until the head's GCS port accepts connections."""
        end = time.monotonic() + READY_S
        while time.monotonic() < end:
            if self.procs["head"].poll() is not None:
                raise HeadExited(f"the ray head exited ({self.procs['head'].returncode}); "
                                 f"{self.root}/head/node.log ends:\n{self.log_tail('head')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the ray head did not listen on {self.port} in {READY_S:.0f} s")

    def start_head_and_wait(self) -> None:
        """Start the head and wait until it listens, starting it again on a fresh port if it exited."""
        for tries_left in reversed(range(HEAD_TRIES)):
            self.start_head()
            try:
                self.wait_head()
                break
            except HeadExited as exited:
                # a port picked free can be taken before Ray binds it (CI saw one head exit in a
                # whole suite); a fresh port and temp folder, a bounded number of times
                if not tries_left:
                    raise
                print(f"starting the head again: {exited}", file=sys.stderr)
                head = self.procs.pop("head")
                try:
                    os.killpg(head.pid, signal.SIGKILL)  # what the head's own group left behind
                except ProcessLookupError:
                    pass
                head.wait(timeout=30)
                shutil.rmtree(self.short / "head", ignore_errors=True)
                self.port = free_ports(1, taken=self.ports)[0]

    def start(self, workers: int, slots: int = 2) -> "LocalRayCluster":
        self.start_head_and_wait()
        for _ in range(workers):
            self.add_worker(slots)
        self.wait_nodes(1 + workers)
        return self

    def node_id(self, name: str) -> str:
        return next(str(n["id"]) for n in self.alive_nodes() if f"assay_test_{name}" in n["resources"])  # type: ignore[operator]

    def processes(self, name: str, title: str) -> list[int]:
        """Pids under node ``name``'s own process (the one started here) whose command line
        starts with ``title`` (Ray names an actor's process ``ray::CLASS``). Only the outermost: a
        child the actor has forked but not yet exec'd (a sandbox being started) still carries the
        actor's title, and is not another actor."""
        parent: dict[int, int] = {}
        cmd: dict[int, bytes] = {}
        for p in Path("/proc").glob("[0-9]*"):
            try:
                parent[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd[int(p.name)] = (p / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
        root = self.procs[name].pid

        def under(pid: int) -> bool:
            while pid > 1:
                if pid == root:
                    return True
                pid = parent.get(pid, 0)
            return False
        titled = {pid for pid, c in cmd.items() if c.startswith(title.encode()) and under(pid)}
        return sorted(pid for pid in titled if parent.get(pid) not in titled)

    def kill(self, name: str) -> None:
        """SIGKILL one node: its `ray start` process group (raylet and the services it started)."""
        proc = self.procs[name]
        self.killed.add(name)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        """Every node's process group killed at once: nothing of a test cluster is kept. On SIGTERM
        `ray start --block` shuts down gracefully and exits only after about 30 s (measured: the
        workers at 30.9 s, the head at 32.8 s), which every module's teardown waited for; a node's
        raylet, GCS, dashboard and workers are all in its group, and none is left after the kill
        (nor anything in /dev/shm)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait(timeout=30)
        shutil.rmtree(self.short, ignore_errors=True)
