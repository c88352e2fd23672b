"""API keys → principals (a user, its namespaces, admin or not) and the loopback-only open mode.

A key without ``namespaces`` reaches its user's default knowledge base alone,
:func:`default_namespace` (``docs_<user id>``).

Keys come from :class:`~apps.service.settings.ServiceSettings` (``api_keys``, ``admin_key``) and
from a JSON keys file, which may hold SHA-256 digests instead of the keys themselves::

    {"keys": [
        {"key": "k-alice", "user_id": "alice"},
        {"key_sha256": "9f86d0…", "user_id": "bob", "namespaces": ["docs_bob", "team_docs"]},
        {"key": "k-root", "user_id": "ops", "admin": true}
    ]}

Only digests are kept in memory. With no key configured at all the service is *open*: every
request acts as a local admin, and the service refuses to listen anywhere but loopback.

Example:
    >>> ring = KeyRing.from_grants({"k-alice": KeyGrant(user_id="alice")})
    >>> ring.authenticate("Bearer k-alice").user_id
    'alice'
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from apps.service.settings import KeyGrant, ServiceSettings
from hello_memory.errors import InvalidInputError, PermissionDeniedError
from hello_memory.validation import check_id
from rag.namespaces import default_namespace

OPEN_USER = "default_user"
KEY_HINT = "send it as 'Authorization: Bearer <key>' (CLI: --api-key or HELLO_MEMORY_API_KEY)"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as."""

    user_id: str
    admin: bool = False
    namespaces: frozenset[str] | None = None  # None: every namespace

    def user(self, requested: str | None) -> str:
        """The user a call acts for: the principal's own unless it names another (admin only)."""
        if requested is None:
            return self.user_id
        uid = check_id(requested, "user_id")
        if uid != self.user_id and not self.admin:
            raise PermissionDeniedError(
                f"this API key belongs to user {self.user_id!r} and cannot act for user {uid!r}; "
                "use that user's key or an admin key"
            )
        return uid

    def namespace(self, requested: str) -> str:
        """A namespace the principal may use, else ``PermissionDeniedError``."""
        ns = check_id(requested, "namespace")
        if self.namespaces is not None and ns not in self.namespaces and not self.admin:
            allowed = ", ".join(sorted(self.namespaces)) or "none"
            raise PermissionDeniedError(
                f"this API key cannot use knowledge base {ns!r} (it may use: {allowed})"
            )
        return ns

    def require_admin(self, what: str) -> None:
        """Refuse non-admin principals."""
        if not self.admin:
            raise PermissionDeniedError(f"{what} needs an admin key")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _principal(grant: KeyGrant) -> Principal:
    uid = check_id(grant.user_id, "user_id")
    if grant.admin:
        return Principal(uid, admin=True)
    spaces = grant.namespaces if grant.namespaces is not None else [default_namespace(uid)]
    return Principal(uid, namespaces=frozenset(check_id(n, "namespace") for n in spaces))


def read_keys_file(path: Path) -> dict[str, Principal]:
    """Digest → principal from a keys file (format in the module docstring)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = raw["keys"]
        if not isinstance(entries, list):
            raise TypeError("'keys' must be a list")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:  # RecursionError: nested too deep
        raise InvalidInputError(f"cannot read the keys file {str(path)!r}: {e}", field="keys_file") from e
    out: dict[str, Principal] = {}
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvalidInputError(f"keys file {str(path)!r}: entry {n} is not an object", field="keys_file")
        entry = dict(entry)
        key, digest = entry.pop("key", None), entry.pop("key_sha256", None)
        if not (isinstance(key, str) and len(key) >= 8) and not (isinstance(digest, str) and len(digest) == 64):
            raise InvalidInputError(
                f"keys file {str(path)!r}: entry {n} needs 'key' (8+ characters) or 'key_sha256' (64 hex digits)",
                field="keys_file",
            )
        try:
            principal = _principal(KeyGrant.model_validate(entry))
        except ValidationError as e:
            raise InvalidInputError(f"keys file {str(path)!r}: entry {n}: {e}", field="keys_file") from e
        out[digest.lower() if digest else _digest(key)] = principal
    return out


class KeyRing:
    """The configured keys, by SHA-256 digest."""

    def __init__(self, principals: Mapping[str, Principal]) -> None:
        self._by_digest = dict(principals)

    @classmethod
    def from_grants(cls, grants: Mapping[str, str | KeyGrant], admin_key: str | None = None) -> KeyRing:
        """A ring from ``{key: user id | grant}`` and an optional admin key."""
        principals: dict[str, Principal] = {}
        for key, grant in grants.items():
            if len(key) < 8:
                raise InvalidInputError("API keys must have at least 8 characters", field="api_keys")
            principals[_digest(key)] = _principal(grant if isinstance(grant, KeyGrant) else KeyGrant(user_id=grant))
        if admin_key:
            if len(admin_key) < 8:
                raise InvalidInputError("the admin key must have at least 8 characters", field="admin_key")
            principals[_digest(admin_key)] = Principal(OPEN_USER, admin=True)
        return cls(principals)

    @classmethod
    def from_settings(cls, settings: ServiceSettings) -> KeyRing:
        """Keys of ``api_keys``, ``admin_key`` and ``keys_file`` together."""
        admin = settings.admin_key.get_secret_value() if settings.admin_key else None
        ring = cls.from_grants(settings.api_keys, admin)
        if settings.keys_file is not None:
            ring._by_digest.update(read_keys_file(settings.keys_file))
        return ring

    @property
    def open(self) -> bool:
        """True without any key: every request is a local admin (loopback only)."""
        return not self._by_digest

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an ``Authorization`` header value (``Bearer <key>``)."""
        if self.open:
            return Principal(OPEN_USER, admin=True)
        if not authorization:
            raise PermissionDeniedError(f"this service needs an API key: {KEY_HINT}", status=401)
        scheme, _, key = authorization.partition(" ")
        principal = self._by_digest.get(_digest(key.strip())) if scheme.lower() == "bearer" else None
        if principal is None:
            raise PermissionDeniedError(f"the API key is not valid for this service; {KEY_HINT}", status=401)
        return principal


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, ring: KeyRing) -> None:
    """Refuse to listen beyond loopback without API keys."""
    if ring.open and not is_loopback(host):
        raise InvalidInputError(
            f"refusing to listen on {host!r} without API keys: anyone who can reach it would read and "
            "change every memory. Configure keys (--keys-file, HELLO_MEMORY_SERVICE_API_KEYS or "
            "HELLO_MEMORY_SERVICE_ADMIN_KEY) or bind to 127.0.0.1",
            field="host",
        )
