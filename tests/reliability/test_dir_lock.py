"""The data directory's lock cannot be removed from under its holder (issue 17 §2).

The lock used to be an ``flock`` on the ``LOCK`` file: deleting the file let a second process lock a
new one and open the same stores. It is now held on the directory itself (which cannot be unlinked
while it holds the stores); ``LOCK`` only describes the holder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.errors import StoreLockedError
from hello_memory.stores.open import lock_holder
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline

_HOLDER = """
import sys
from hello_memory import MemoryManager, Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
mm = MemoryManager(Settings(home=sys.argv[1]), user_id="holder", embedder=DeterministicFakeEmbedder(8))
mm.add("held by the first process", memory_type="working")
print("ready", flush=True)
sys.stdin.readline()
mm.close()
"""


@pytest.fixture
def holder(tmp_path: Path):
    home = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_HOLDER), str(home)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
    try:
        yield home, proc
    finally:
        proc.kill()
        proc.wait(60)


def test_deleting_the_lock_file_does_not_let_a_second_process_in(holder) -> None:
    home, proc = holder
    assert lock_holder(home) == f"pid {proc.pid}"
    os.unlink(home / "LOCK")
    emb = DeterministicFakeEmbedder(8)
    with pytest.raises(StoreLockedError, match="in use by another process"):
        MemoryManager(Settings(home=home), user_id="second", embedder=emb)
    with pytest.raises(StoreLockedError, match="in use by another process"):
        RAGPipeline(Settings(home=home), namespace="kb", embedder=emb, llm=None)
    assert lock_holder(home) is not None  # still held, though its description is gone


def test_a_second_process_is_refused_after_the_lock_file_was_replaced(holder) -> None:
    home, _ = holder
    os.unlink(home / "LOCK")
    (home / "LOCK").write_text("")  # a new, unlocked LOCK file
    code = ("import sys\nfrom hello_memory import MemoryManager, Settings\n"
            "from hello_memory.errors import StoreLockedError\n"
            "from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder\n"
            "try:\n    MemoryManager(Settings(home=sys.argv[1]), embedder=DeterministicFakeEmbedder(8))\n"
            "except StoreLockedError as e:\n    print('LOCKED', e); sys.exit(3)\nprint('OPENED')\n")
    done = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and "LOCKED" in done.stdout, (done.stdout, done.stderr)


def test_lock_holder_names_the_holder_and_none_when_free(tmp_path: Path) -> None:
    home = tmp_path / "data"
    assert lock_holder(home) is None  # no directory yet: nobody holds it
    with MemoryManager(Settings(home=home), embedder=DeterministicFakeEmbedder(8)):
        assert lock_holder(home) == f"pid {os.getpid()}"  # this process holds it
    assert lock_holder(home) is None
    with MemoryManager(Settings(home=home), embedder=DeterministicFakeEmbedder(8)) as mm:
        mm.add("the lock is re-acquired after a clean close", memory_type="episodic")


def test_the_lock_is_released_when_the_holder_is_killed(holder) -> None:
    home, proc = holder
    proc.kill()
    proc.wait(60)
    assert lock_holder(home) is None
    with MemoryManager(Settings(home=home), user_id="holder", embedder=DeterministicFakeEmbedder(8)) as mm:
        assert mm.stats().total >= 0
