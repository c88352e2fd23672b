"""Tests of a service (a server, Docker, a browser) skip only when it is missing, and never in CI.

One helper for every such skip: :func:`service_unavailable`, which fails instead under
``HELLO_MEMORY_REQUIRE_SERVICES=1`` (a CI run with services). Probe a server with
:func:`http_unreachable` (plain HTTP), never through the adapter under test.

Example:
    >>> http_unreachable("http://127.0.0.1:9/") is not None  # nothing listens on the discard port
    True
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from typing import NoReturn

import pytest

REQUIRE_SERVICES = "HELLO_MEMORY_REQUIRE_SERVICES"


def service_unavailable(reason: str) -> NoReturn:
    """Skip a test whose service is missing (a server, Docker, a browser); under
    ``HELLO_MEMORY_REQUIRE_SERVICES=1`` (CI with services) fail instead. Every such skip goes here.

    Only a missing service may skip: an error from the code under test (a ``StoreError`` from an
    adapter talking to a reachable server) must fail, so probe with :func:`http_unreachable`, not
    through the adapter.
    """
    if os.environ.get(REQUIRE_SERVICES) == "1":
        pytest.fail(f"{reason} ({REQUIRE_SERVICES}=1, so this is a failure)", pytrace=False)
    pytest.skip(reason)


def http_unreachable(url: str, timeout: float = 2.0) -> str | None:
    """Why nothing answers HTTP at ``url`` (``None`` when something does, whatever the status)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return None
    except urllib.error.HTTPError:  # an HTTP answer: the server is there
        return None
    except (OSError, ValueError) as e:  # refused, timed out, DNS, not a URL
        return f"{type(e).__name__}: {e}"
