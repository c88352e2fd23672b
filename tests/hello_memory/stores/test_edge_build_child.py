"""The background index build's child process dies with the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hello_memory.stores.vectors.edge_build import DIE_WITH_PARENT

PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1] + "import time; time.sleep(120)"],
                         env={**os.environ, "HELLO_MEMORY_BUILD_PARENT": str(os.getpid())})
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited; nobody in this test reaps it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_build_child_dies_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, DIE_WITH_PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    for _ in range(300):  # the kernel signals the child at once; this only waits for it to go
        if not _alive(child):
            break
        time.sleep(0.1)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, "the build child outlived its parent"


def test_a_child_whose_parent_is_already_gone_exits() -> None:
    env = {**os.environ, "HELLO_MEMORY_BUILD_PARENT": "1" if os.getppid() != 1 else "2"}
    done = subprocess.run([sys.executable, "-c", DIE_WITH_PARENT + "print('ran')"], env=env,
                          capture_output=True, text=True, timeout=60)
    if sys.platform.startswith("linux"):
        assert done.returncode == 1 and "ran" not in done.stdout
