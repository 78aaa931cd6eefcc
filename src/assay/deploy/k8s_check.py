"""What ``assay k8s render`` checks before it prints anything: the values Kubernetes itself would
refuse (a port out of range, a CIDR that is not one, a name that is not a DNS-1123 label, a
quantity it cannot parse), each named with its option and the fix."""

from __future__ import annotations

import ipaddress
import re

#: RFC 1123 label: what Kubernetes requires of a namespace and of most object names
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: a Kubernetes resource quantity: a decimal number with an optional binary/decimal suffix or exponent
_QUANTITY = re.compile(r"[+]?(\d+(?:\.\d*)?|\.\d+)(?:Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?")


def dns1123_label(option: str, value: str) -> str | None:
    if len(value) <= 63 and _DNS1123_LABEL.match(value):
        return None
    return (f"{option} {value!r}: not a DNS-1123 label (use at most 63 characters of a-z, 0-9 and '-', "
            "starting and ending with a letter or digit)")


def port(option: str, value: int) -> str | None:
    return None if 1 <= value <= 65535 else f"{option} {value}: not a TCP port (use a number from 1 to 65535)"


def cidr(option: str, value: str) -> str | None:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        return f"{option} {value!r}: not a CIDR ({e}) (use e.g. 203.0.113.0/24 or 0.0.0.0/0)"
    return None


def quantity(option: str, value: str, *, memory: bool) -> str | None:
    m = _QUANTITY.fullmatch(value)
    if m and float(m.group(1)) > 0:
        return None
    example = "8Gi or 512Mi" if memory else "2 or 500m"
    return f"{option} {value!r}: not a Kubernetes quantity (use a positive amount such as {example})"
