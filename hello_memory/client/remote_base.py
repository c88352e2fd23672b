"""What both remote memories hold: a transport, the default user, the service's identity, the ids of failed adds.

:class:`~hello_memory.client.remote.RemoteMemory` (``httpx.Client``) and
:class:`~hello_memory.client.remote_async.AsyncRemoteMemory` (``httpx.AsyncClient``) are this state
plus one line per operation: build its call (:mod:`hello_memory.client.calls`) and send it.

Example:
    >>> from hello_memory.client.remote import RemoteMemory
    >>> mm = RemoteMemory("http://127.0.0.1:9/", user_id="alice")   # nothing connects yet
    >>> mm.url, mm.user_id
    ('http://127.0.0.1:9', 'alice')
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import SecretStr

from hello_memory.client.transport import DEFAULT_RETRIES, DEFAULT_TIMEOUT, BaseTransport
from hello_memory.client.write_ids import PendingIds
from hello_memory.wire import Identity

H = TypeVar("H", bound=BaseTransport)


class RemoteBase(Generic[H]):
    """A client of one memory service (``hello-memory serve``).

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8765``.
        api_key: the key the service maps to a user; none for a loopback service without keys.
        user_id: the default user of every call; default the key's user (``default_user`` without keys).
        timeout: seconds per call, retries included.
        client: a pre-built httpx client of the memory's kind (tests, custom TLS).
        retries: further attempts of a request that failed on the way (see :mod:`hello_memory.client.transport`).

    Nothing connects until the first call.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | SecretStr | None = None,
        user_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        client: Any = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self._http = self._transport(url, api_key=api_key, timeout=timeout, client=client, retries=retries)
        self.url = self._http.url
        self._user_id = user_id
        self._identity: Identity | None = None
        self._pending = PendingIds()

    def _transport(self, url: str, **options: Any) -> H:
        """The transport of the memory's kind."""
        raise NotImplementedError

    def _user(self, user_id: str | None) -> str | None:
        """The user a call names: its own, else the default (``None``: the key's user, chosen by the service)."""
        return self._user_id if user_id is None else user_id
