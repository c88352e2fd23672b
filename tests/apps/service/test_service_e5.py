"""One smoke test with the real offline embedder (e5, the default): the service loads it once, before it
listens, and a Chinese query finds its memory through HTTP."""

from __future__ import annotations

from service_runner import start_service

from hello_memory.client.remote import RemoteMemory


def test_the_default_e5_service_answers_a_chinese_query(tmp_path):
    running = start_service(tmp_path / "data", embedder="e5", timeout=300)
    try:
        with RemoteMemory(running.url, user_id="zhangsan") as mm:
            assert "e5" in mm.identity().embedder
            fact = mm.add("我叫张三，是一名 Python 开发者", memory_type="semantic", importance=0.9)
            mm.add("The quarterly report is due on Friday", memory_type="episodic")
            hits = mm.search("张三是做什么工作的？", limit=2)
            assert hits[0].item.id == fact.id and hits[0].breakdown["dense"] > 0.5
            assert mm.stats().embedder == mm.identity().embedder
    finally:
        assert running.stop() == 0, running.output()
