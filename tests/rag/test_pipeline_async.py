"""``AsyncRAGPipeline``: ``RAGPipeline``'s calls awaited, in worker threads, with the same results and errors."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from hello_memory import Settings
from hello_memory.embedders.hashing import HashingTfidfEmbedder
from hello_memory.errors import InvalidInputError, NotFoundError
from rag import AsyncRAGPipeline, RAGPipeline

DOC_EN = (Path(__file__).resolve().parents[1] / "data" / "guide_en.md").read_text(encoding="utf-8")


def test_the_same_calls_give_the_same_results_as_the_pipeline(rag_settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(DOC_EN, encoding="utf-8")

    def through(pipeline: RAGPipeline) -> list[object]:
        pipeline.add_document(tmp_path / "guide.md", document_id="file")
        pipeline.add_text(DOC_EN, document_id="guide")
        hits = pipeline.search("password reset email", limit=3).hits
        answer = pipeline.ask("How do I reset my password?")
        return [[(h.document_id, h.text) for h in hits], answer.answer, answer.mode, pipeline.stats().chunks,
                [d.document_id for d in pipeline.list_documents()]]

    async def through_async(kb: AsyncRAGPipeline) -> list[object]:
        await kb.add_document(tmp_path / "guide.md", document_id="file")
        await kb.add_text(DOC_EN, document_id="guide")
        hits = (await kb.search("password reset email", limit=3)).hits
        answer = await kb.ask("How do I reset my password?")
        return [[(h.document_id, h.text) for h in hits], answer.answer, answer.mode, (await kb.stats()).chunks,
                [d.document_id for d in await kb.list_documents()]]

    with RAGPipeline(rag_settings, namespace="sync", embedder=HashingTfidfEmbedder(dimension=512)) as pipeline:
        expected = through(pipeline)

    async def run() -> list[object]:
        embedder = HashingTfidfEmbedder(dimension=512)
        async with AsyncRAGPipeline(rag_settings, namespace="async", embedder=embedder) as kb:
            assert kb.namespace == "async"
            return await through_async(kb)

    assert asyncio.run(run()) == expected


def test_calls_run_in_worker_threads_and_errors_are_the_pipelines(rag_settings: Settings) -> None:
    loop_thread: list[int] = []
    progress_threads: set[int] = set()

    async def run() -> None:
        loop_thread.append(threading.get_ident())
        kb = AsyncRAGPipeline(rag_settings, namespace="kb", embedder=HashingTfidfEmbedder(dimension=512))
        await kb.add_text(DOC_EN, document_id="guide", progress=lambda done, total: progress_threads.add(
            threading.get_ident()))
        with pytest.raises(NotFoundError):
            await kb.delete_document("missing")
        with pytest.raises(InvalidInputError):
            await kb.search("")
        assert await kb.clear() > 0 and (await kb.stats()).documents == 0
        await kb.aclose()
        with pytest.raises(InvalidInputError, match="closed"):
            await kb.stats()

    asyncio.run(run())
    assert progress_threads and loop_thread[0] not in progress_threads


def test_wrap_is_a_view_of_an_open_pipeline(rag_settings: Settings) -> None:
    pipeline = RAGPipeline(rag_settings, namespace="kb", embedder=HashingTfidfEmbedder(dimension=512))
    kb = AsyncRAGPipeline.wrap(pipeline)
    assert kb.namespace == "kb"
    assert asyncio.run(kb.add_text("# Tea\nGreen tea at noon.", document_id="tea")).chunks == 1
    kb.close()
    with pytest.raises(InvalidInputError, match="closed"):
        pipeline.stats()
