"""Document endpoints: ``RAGPipeline``'s methods per namespace (knowledge base) the API key may use.

Documents arrive as uploads (multipart; the service converts them in a private temporary folder)
or as a path on the service's machine under its allowed roots (``--allow-root``); file names and
paths that try to leave those places are refused before anything is read.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Response, UploadFile
from pydantic import TypeAdapter

from apps.service.core import ServiceCore
from apps.service.deps import Who, core_of
from apps.service.models import AddServerDocument, AddText, Ask, SearchDocuments
from apps.service.routes_memory import json_response
from apps.service.routing import ServiceRoute, loads
from hello_memory.errors import ConversionError, InvalidInputError
from hello_memory.wire import Count
from rag.models import Answer, DocumentInfo, IngestReport, RAGStats, SearchResult

router = APIRouter(prefix="/v1/namespaces/{namespace}", tags=["documents"], route_class=ServiceRoute)
Core = Annotated[ServiceCore, Depends(core_of)]
_DOCS = TypeAdapter(list[DocumentInfo])
MAX_NAME_CHARS = 255


async def _rag(core: ServiceCore, namespace: str, method: str, *args: Any, timeout: float | None = None,
               write: bool = False, **kwargs: Any) -> Any:
    """``core.rag(namespace).<method>(*args, **kwargs)`` in a worker thread (``write``: in a slot of the
    knowledge base, 429 over ``user_writes``)."""

    def call() -> Any:
        return getattr(core.rag(namespace), method)(*args, **kwargs)

    return await core.run(call, timeout=timeout, writer=writer(namespace) if write else None)


def writer(namespace: str) -> str:
    """The owner of an ingestion's slot (:class:`~apps.service.admission.WriteSlots`)."""
    return f"knowledge base {namespace!r}"


def upload_name(filename: str | None) -> str:
    """The upload's file name if it is a plain name (no folder, no ``..``), else ``InvalidInputError``."""
    name = filename or ""
    if (not name.strip() or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name
            or len(name) > MAX_NAME_CHARS):
        raise InvalidInputError(
            f"upload file name {name!r} must be a plain file name (no folders, no '..', at most "
            f"{MAX_NAME_CHARS} characters); send the path as source_path",
            field="file",
        )
    return name


def _json_object(text: str | None, field: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = loads(text, field)
    except ValueError as e:
        if isinstance(e, InvalidInputError):
            raise
        raise InvalidInputError(f"{field} must be a JSON object: {e}", field=field) from e
    if not isinstance(value, dict):
        raise InvalidInputError(f"{field} must be a JSON object, got {type(value).__name__}", field=field)
    return value


@router.post("/documents", response_model=IngestReport, summary="add_document (upload)")
async def upload_document(
    namespace: str,
    core: Core,
    who: Who,
    file: Annotated[UploadFile, File(description="the document; its extension chooses the converter")],
    document_id: Annotated[str | None, Form()] = None,
    chunk_tokens: Annotated[int | None, Form()] = None,
    overlap_tokens: Annotated[int | None, Form()] = None,
    metadata: Annotated[str | None, Form(description="a JSON object")] = None,
    source_path: Annotated[str | None, Form(description="the path recorded (the client's); default the name")] = None,
) -> Response:
    ns = who.namespace(namespace)
    name = upload_name(file.filename)
    meta = _json_object(metadata, "metadata")
    source = source_path if source_path is not None else name

    def ingest() -> IngestReport:
        with tempfile.TemporaryDirectory(prefix="hm-upload-") as tmp:
            path = Path(tmp) / name
            with path.open("wb") as out:
                shutil.copyfileobj(file.file, out)
            try:
                return core.rag(ns).add_document(path, document_id=document_id, chunk_tokens=chunk_tokens,
                                                 overlap_tokens=overlap_tokens, metadata=meta, source_path=source)
            except ConversionError as e:  # name the client's file, never the temporary copy
                raise ConversionError(source, e.reason, extra=e.extra) from None

    return json_response(await core.run(ingest, timeout=core.service.document_timeout, writer=writer(ns)))


@router.post("/documents/path", response_model=IngestReport, summary="add_document (a file of the service)")
async def add_server_document(namespace: str, body: AddServerDocument, core: Core, who: Who) -> Response:
    ns = who.namespace(namespace)

    def ingest() -> IngestReport:  # the path is resolved here too: a file-system call, in the worker thread
        return core.rag(ns).add_document(core.resolve_root_path(body.path), document_id=body.document_id,
                                         chunk_tokens=body.chunk_tokens, overlap_tokens=body.overlap_tokens,
                                         metadata=body.metadata)

    return json_response(await core.run(ingest, timeout=core.service.document_timeout, writer=writer(ns)))


@router.post("/texts", response_model=IngestReport, summary="add_text")
async def add_text(namespace: str, body: AddText, core: Core, who: Who) -> Response:
    ns = who.namespace(namespace)
    args = body.model_dump(exclude={"text"})
    return json_response(await _rag(core, ns, "add_text", body.text, timeout=core.service.document_timeout,
                                    write=True, **args))


@router.get("/documents", response_model=list[DocumentInfo], summary="list_documents")
async def list_documents(namespace: str, core: Core, who: Who) -> Response:
    return json_response(await _rag(core, who.namespace(namespace), "list_documents"), _DOCS)


@router.delete("/documents/{document_id:path}", response_model=Count, summary="delete_document")
async def delete_document(namespace: str, document_id: str, core: Core, who: Who) -> Response:
    ns = who.namespace(namespace)
    return json_response(Count(count=await _rag(core, ns, "delete_document", document_id)))


@router.delete("/documents", response_model=Count, summary="clear")
async def clear(namespace: str, core: Core, who: Who) -> Response:
    return json_response(Count(count=await _rag(core, who.namespace(namespace), "clear")))


@router.get("/stats", response_model=RAGStats, summary="stats")
async def stats(namespace: str, core: Core, who: Who) -> Response:
    return json_response(await _rag(core, who.namespace(namespace), "stats"))


@router.post("/search", response_model=SearchResult, summary="search")
async def search(namespace: str, body: SearchDocuments, core: Core, who: Who) -> Response:
    args = body.model_dump(exclude={"query"})
    return json_response(await _rag(core, who.namespace(namespace), "search", body.query, **args))


@router.post("/ask", response_model=Answer, summary="ask")
async def ask(namespace: str, body: Ask, core: Core, who: Who) -> Response:
    args = body.model_dump(exclude={"question"})
    return json_response(await _rag(core, who.namespace(namespace), "ask", body.question, **args))
