"""Checks of the values `sl.distribution` is given, before JAX sees them.

A malformed coordinator address reaches JAX's RPC layer, which fails with "Failed to start RPC
server" or crashes the process; a float mesh dimension would be truncated by `int()`. Each check
names the variable or argument and the value, and says what was expected.
"""

from __future__ import annotations

import ipaddress
import operator
import re
from typing import Any

_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
_ADDRESS_FORM = "host:port, e.g. '10.0.0.1:1234', 'node-0.cluster:1234' or '[::1]:1234'"


def integer(value: Any, what: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` as an int: a Python or NumPy integer (not a bool, a float or a string), within
    [minimum, maximum] where given; else a ValueError naming `what`."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got the bool {value!r}.")
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(
            f"{what} must be an integer, got {value!r} ({type(value).__name__})."
        ) from None
    _in_range(number, what, minimum, maximum)
    return number


def env_integer(
    name: str, text: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    """The integer an environment variable spells ("3", not "3.0" or "two"), within range."""
    try:
        number = int(text.strip(), 10)
    except ValueError:
        raise ValueError(f"The environment variable {name}={text!r} must be an integer.") from None
    _in_range(number, f"The environment variable {name}={text!r}", minimum, maximum)
    return number


def _in_range(number: int, what: str, minimum: int | None, maximum: int | None) -> None:
    if minimum is not None and maximum is not None:
        expected = f"an integer in {minimum}..{maximum}"
    elif minimum is not None:
        expected = f"an integer of at least {minimum}"
    else:
        expected = f"an integer of at most {maximum}"
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(f"{what} must be {expected}, got {number}.")


def coordinator_address(value: Any, what: str) -> str:
    """`value` if it is a plausible "host:port" (a host name, an IPv4 address or a bracketed
    IPv6 address; a port in 1..65535); else a ValueError naming `what` and the value.

    >>> coordinator_address("10.0.0.1:1234", "address")
    '10.0.0.1:1234'
    """
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string {_ADDRESS_FORM}; got {value!r}.")
    host, sep, port = value.rpartition(":")
    if not sep:
        problem = "it has no ':port'"
    elif not host:
        problem = "the host is empty"
    elif not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
        problem = f"the port {port!r} is not an integer in 1..65535"
    else:
        problem = _host_problem(host)
    if problem:
        raise ValueError(
            f"{what}={value!r} is not a coordinator address: {problem}; expected {_ADDRESS_FORM}."
        )
    return value


def _host_problem(host: str) -> str | None:
    """Why `host` is not a host name, an IPv4 address or a bracketed IPv6 address (None: it is)."""
    if host.startswith("["):
        try:
            if not host.endswith("]"):
                raise ValueError
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"the host {host!r} is not an IPv6 address in brackets"
        return None
    if ":" in host:
        return f"the host {host!r} looks like an IPv6 address: write it in brackets, [{host}]"
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if all(label.isdigit() for label in labels):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return f"the host {host!r} is not an IPv4 address"
        return None
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        return (
            f"the host {host!r} is not a host name (letters, digits, '-' and '_' in "
            "dot-separated labels)"
        )
    return None
