"""The seccomp profile the sandbox worker pods name (``profiles/assay-bwrap.json``), shipped here.

bubblewrap builds each sandbox from user namespaces inside an unprivileged pod, so it needs the
calls a runtime's default profile refuses without CAP_SYS_ADMIN: ``unshare``, ``clone`` with
namespace flags, ``setns``, ``mount``, ``umount2``, ``pivot_root``. This profile allows by default
and refuses the calls no sandboxed agent or verifier needs, which reach the kernel's most
exposed surfaces (module loading, kexec, BPF, perf, keyrings, userfaultfd, open-by-handle,
clock and swap control, reboot). It is looser than ``RuntimeDefault`` where bubblewrap must be,
and bubblewrap then applies its own filter inside each sandbox.

Install it on every node that runs sandbox workers, where the kubelet reads Localhost profiles:
``assay k8s seccomp-profile > /var/lib/kubelet/seccomp/profiles/assay-bwrap.json``.
"""

from __future__ import annotations

import json
from typing import Any

#: the path the pods name, relative to the kubelet's seccomp directory
PROFILE_PATH = "profiles/assay-bwrap.json"
#: calls refused with EPERM (errnoRet 1)
DENIED: tuple[str, ...] = (
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
    "finit_module", "get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp",
    "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "move_pages", "nfsservctl",
    "open_by_handle_at", "perf_event_open", "process_vm_readv", "process_vm_writev", "query_module",
    "quotactl", "reboot", "request_key", "set_mempolicy", "settimeofday", "stime", "swapoff", "swapon",
    "sysfs", "_sysctl", "uselib", "userfaultfd", "ustat", "vm86", "vm86old",
)
#: what bubblewrap needs, and why the runtime's default profile cannot be used
NEEDED_BY_BWRAP: tuple[str, ...] = ("clone", "clone3", "unshare", "setns", "mount", "umount2", "pivot_root",
                                     "sethostname", "prctl")


def profile() -> dict[str, Any]:
    """The profile as the kubelet reads it (OCI seccomp JSON)."""
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
        "syscalls": [{"names": sorted(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
    }


def profile_json() -> str:
    return json.dumps(profile(), indent=2, sort_keys=True) + "\n"
