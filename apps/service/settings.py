"""Settings of the memory service (env prefix ``HELLO_MEMORY_SERVICE_``), apart from the library's.

The library's :class:`~hello_memory.Settings` still chooses the data directory, stores and
embedder; this class holds what only a server needs: where to listen, the API keys, limits.

Example:
    >>> s = ServiceSettings(api_keys={"k-alice": "alice"})
    >>> s.port, s.max_body_bytes
    (8765, 16777216)
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from hello_memory.settings import ExplainedSettings

DEFAULT_PORT = 8765


class KeyGrant(BaseModel):
    """What one API key reaches."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, description="the key's user: it reaches only this user's memories")
    namespaces: list[str] | None = Field(
        default=None,
        description="knowledge bases the key reaches; default docs_<user id> alone (the app's)",
    )
    admin: bool = Field(default=False, description="may act for any user and namespace")


class ServiceSettings(ExplainedSettings):
    """Configuration of ``hello-memory serve``; every field can be set from the environment.

    API keys come from ``api_keys`` (``HELLO_MEMORY_SERVICE_API_KEYS``, JSON: ``{"<key>": "<user>"}``
    or ``{"<key>": {"user_id": ..., "namespaces": [...]}}``), ``admin_key`` and ``keys_file`` (see
    :mod:`apps.service.auth`). With none configured the service listens on loopback only.
    """

    model_config = SettingsConfigDict(env_prefix="HELLO_MEMORY_SERVICE_", extra="ignore", populate_by_name=True)

    host: str = Field(default="127.0.0.1", description="interface to bind; non-loopback needs API keys")
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, description="TCP port (0 = any free port)")
    api_keys: dict[str, str | KeyGrant] = Field(
        default_factory=dict, repr=False, description="API key → its user (or a KeyGrant)",
        json_schema_extra={"accepts": 'a JSON object {"<key>": "<user id>"} or '
                                      '{"<key>": {"user_id": "<user id>", "namespaces": ["<namespace>"]}}'},
    )
    admin_key: SecretStr | None = Field(default=None, description="key for cross-user operations")
    keys_file: Path | None = Field(default=None, description="JSON file of keys (see apps.service.auth)")
    allowed_roots: list[Path] = Field(
        default_factory=list, description="folders whose files clients may index by path (none by default)"
    )
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024, description="JSON request body limit")
    max_upload_bytes: int = Field(default=200 * 1024 * 1024, ge=1024, description="upload limit: documents, imports")
    request_timeout: float = Field(default=60.0, gt=0, description="seconds per memory request")
    document_timeout: float = Field(default=900.0, gt=0, description="seconds per document ingestion")
    transfer_timeout: float = Field(
        default=900.0, gt=0, description="seconds per import, graph reindex or export batch"
    )
    threads: int = Field(default=16, ge=1, le=256, description="worker threads running store operations")
    user_writes: int = Field(
        default=4, ge=1, le=256,
        description="writes (adds, updates, document ingestion) one user or knowledge base may have running "
        "at once; more are answered 429 with Retry-After (a retried add joins its write instead)",
    )
    busy_retry_after: int = Field(default=1, ge=1, le=3600, description="Retry-After seconds of a 429")
    drain_timeout: float = Field(
        default=60.0, ge=0,
        description="seconds shutdown waits for running operations; then the process exits regardless",
    )
    warm_up: bool = Field(default=True, description="load the embedder before accepting requests")
    write_service_file: bool = Field(default=True, description="advertise the service in <home>/SERVICE")
