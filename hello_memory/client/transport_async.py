"""The transport of the async clients: :class:`~hello_memory.client.transport.Transport` on ``httpx.AsyncClient``.

Same requests (:class:`~hello_memory.client.attempts.Request`), retries
(:class:`~hello_memory.client.transport.Schedule`: what is retried, Retry-After of a 429, the
call's timeout), replies and errors as the sync transport (:class:`~hello_memory.client.transport.BaseTransport`):
only the sending awaits, and a wait between attempts is an ``asyncio.sleep`` that lets the event
loop run meanwhile.

Example:
    >>> import asyncio
    >>> async def me() -> bytes:
    ...     http = AsyncTransport("http://127.0.0.1:8765")
    ...     try:
    ...         return (await http.send(Request("GET", "/v1/me"))).content
    ...     finally:
    ...         await http.aclose()
    >>> asyncio.run(me())                                         # doctest: +SKIP
    b'{"user_id":"default_user",...}'
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from hello_memory.client import replies
from hello_memory.client.attempts import Outcome, Request
from hello_memory.client.encoding import TextLines
from hello_memory.client.transport import BaseTransport


class AsyncTransport(BaseTransport):
    """Requests to one memory service, over a keep-alive ``httpx.AsyncClient``.

    Arguments as :class:`~hello_memory.client.transport.BaseTransport` (``client``: an ``httpx.AsyncClient``).
    The client is created here (nothing connects before the first request) and used from the
    event loop that sends the first request; :meth:`aclose` releases its connections.
    """

    def _new_client(self) -> Any:
        return self._httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=self.timeout)

    async def send(self, request: Request) -> replies.Reply:
        """Send ``request``, retried as the sync transport's; the successful (2xx) reply.

        Raises:
            HelloMemoryError: as :meth:`Transport.send <hello_memory.client.transport.Transport.send>`.
        """
        return (await self._outcome(request, stream=False)).reply

    async def stream(self, request: Request) -> AsyncIterator[str]:
        """Send ``request`` and yield the lines of its response as they arrive (empty lines skipped).

        Nothing is sent before the first ``anext()``; errors as
        :meth:`Transport.stream <hello_memory.client.transport.Transport.stream>`.
        """
        response = (await self._outcome(request, stream=True)).response
        try:
            lines = TextLines(self.url, response.status_code)
            async for chunk in self._chunks(request, response):
                for line in lines.feed(chunk):
                    yield line
            for line in lines.end():
                yield line
        finally:
            await response.aclose()

    async def _outcome(self, request: Request, *, stream: bool) -> Outcome:
        schedule = self._schedule(request)
        while True:
            outcome = await self._attempt(request, schedule.timeout(stream), stream)
            if outcome.error is None:
                return outcome
            await asyncio.sleep(schedule.delay(outcome))

    async def _attempt(self, request: Request, timeout: float, stream: bool) -> Outcome:
        built = self._client.build_request(request.method, request.path, timeout=timeout, **request.arguments())
        try:
            response = await self._client.send(built, stream=True)
        except self._httpx.HTTPError as e:
            return self._failed(request, e)
        if stream and response.is_success:
            return self._answered(request, response, stream)
        try:
            await response.aread()
        except self._httpx.HTTPError as e:
            return self._failed(request, e, response.status_code)
        finally:
            await response.aclose()
        return self._answered(request, response, stream)

    async def _chunks(self, request: Request, response: Any) -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        except self._httpx.HTTPError as e:
            raise self._broke_off(request, e, response.status_code) from e

    async def aclose(self) -> None:
        """Close the connection pool; idempotent."""
        self.closed = True
        await self._client.aclose()
