"""The Redis repository, on plain Redis 7 (one server, a Sentinel service or a Redis Cluster)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, TypeVar

from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import NoScriptError

from chatmem.backend import (
    ConversationPage,
    Position,
    StoredMessage,
    async_sleep,
    check_limit,
    conversation_page,
    epoch_micros,
    matches_history_filters,
    normalize_ttl,
    redact_url,
    scrub,
)
from chatmem.conversation_ids import owner_of, validate_conversation_id
from chatmem.exceptions import (
    ConfigurationError,
    RepositoryOutcomeUnknownError,
    VersionConflictError,
)
from chatmem.messages import Message, MessageType, decode_message
from chatmem.repository import ConversationSummary
from chatmem_repositories.redis import _scripts
from chatmem_repositories.redis._codec import (
    append_args,
    as_int,
    as_text,
    decode_summary,
    position_arg,
    server_product,
    stored_from_pairs,
)
from chatmem_repositories.redis._drivers import (
    DEFAULT_MAX_CONNECTIONS,
    AsyncBlockingConnectionPool,
    AsyncRedis,
    AsyncRedisCluster,
    AsyncRetry,
    AsyncScript,
    AsyncSentinel,
    AsyncSentinelConnectionPool,
    async_cluster_node,
    async_discover,
    async_sentinel_master,
)
from chatmem_repositories.redis._errors import (
    BACKEND,
    DRIVER_ERRORS,
    RETRYABLE,
    closed_while_in_use,
    map_driver_error,
    mapped_driver_errors,
    never_sent,
)
from chatmem_repositories.redis._options import (
    cluster_seeds,
    is_cluster_url,
    is_sentinel_url,
    parse_url,
    sentinel_settings,
)
from chatmem_repositories.redis._schema import KeyLayout, escape_key_part, expiry_member

__all__ = ["AsyncRedisChatMemoryRepository"]

T = TypeVar("T")

# Index into the twelve conversation keys.
_TYPE_KEY = {"system": 7, "user": 8, "assistant": 9, "tool": 10, "event": 11}
_KEY_CACHE_SIZE = 1024  # conversations whose key names are kept (~1.7 kB each)


def _stored(reply: list[Any], messages: Sequence[Message]) -> list[StoredMessage]:
    # An APPEND reply is [batch index (from 1), position, ...] for the messages stored.
    return [
        StoredMessage(as_int(reply[i + 1]), messages[as_int(reply[i]) - 1])
        for i in range(0, len(reply), 2)
    ]


def _checked_out(
    reply: list[Any],
    conversation_id: str,
    messages: Sequence[Message],
    expected_version: int,
    retried: bool,
) -> list[StoredMessage]:
    # An APPEND_CHECKED reply: as APPEND's, or [0, version, position or nil per message] when
    # the version did not match. A retry finds the version moved by its own earlier attempt
    # if that attempt was stored but its reply was lost: every id is then stored after the
    # expected version, which is the success it was.
    if not reply or as_int(reply[0]) != 0:
        return _stored(reply, messages)
    positions = reply[2:]
    if retried and all(p is not None and as_int(p) > expected_version for p in positions):
        stored: dict[str, StoredMessage] = {}
        for message, position in zip(messages, positions, strict=True):
            stored.setdefault(message.id, StoredMessage(as_int(position), message))
        return list(stored.values())
    raise VersionConflictError(conversation_id, expected_version, as_int(reply[1]))


def _server_of(client: AsyncRedis | AsyncRedisCluster) -> str:
    if isinstance(client, AsyncRedisCluster):
        return "cluster " + ",".join(client.nodes_manager.startup_nodes)
    pool = client.connection_pool
    if isinstance(pool, AsyncSentinelConnectionPool):
        return f"sentinel service {pool.service_name}"
    kwargs = pool.connection_kwargs
    if "path" in kwargs:
        return str(kwargs["path"])
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


class AsyncRedisChatMemoryRepository:
    """Stores conversations in plain Redis 7 (no modules), through redis-py.

    Every call on a conversation is one Lua script or one command, so each is atomic and one
    round trip. On Redis Cluster (a ``RedisCluster`` client, or a ``redis+cluster://`` URL)
    every script stays in one slot; listing and purging read every index bucket (one
    pipeline). A Redis Sentinel service (``redis+sentinel://`` URL, or a client from redis-py's
    ``Sentinel.master_for``) is followed through failovers by redis-py's Sentinel pool. See
    ``docs/backends/redis.md`` for the key layout. Keeps summaries
    (:class:`~chatmem.repository.AsyncSummaryStore`) in the conversation's meta hash, so a
    summary expires and is deleted with its conversation (``save_all`` drops it too).

    Example:
        ```python
        repository = AsyncRedisChatMemoryRepository.from_url("redis://localhost:6379/0?ttl=3600")
        async with repository:
            await repository.append("007", [UserMessage("My name is James Bond")])
            recent = await repository.find_recent("007", limit=20)
        ```

    Args:
        client: A redis-py client (``redis.asyncio.Redis`` for the async repository,
            ``redis.Redis`` for the sync one), or their Redis Cluster clients
            (``redis.asyncio.cluster.RedisCluster``, ``redis.cluster.RedisCluster``). It is
            not closed by :meth:`aclose`.
        key_prefix: Prefix of every key.
        ttl: Expire a conversation this long after its last append; ``None``: never. The
            server's clock decides (Redis key expiry and ``TIME`` in the scripts), so the
            repository takes no client clock.
        history_scan_budget: Most messages one history round trip examines.
        retries: Attempts after a connection failure or timeout, on top of the first. Leave
            0 for a client that retries by itself.
        cluster_buckets: With a Redis Cluster client, how many hash-tag groups the
            conversation index is split into; every client of one ``key_prefix`` must use the
            same number. Ignored on a single server.
        wait_replicas: After each write, wait (Redis ``WAIT``, sent with the write in one
            round trip) until this many replicas have it; if fewer do within
            ``wait_timeout_ms``, raise
            :class:`~chatmem.exceptions.RepositoryOutcomeUnknownError`: the write is on the
            master but a failover may lose it. 0 (default): do not wait. Not on a cluster.
        wait_timeout_ms: How long ``wait_replicas`` waits, in milliseconds.
    """

    db_system: ClassVar[str] = "redis"
    """The OpenTelemetry ``db.system.name`` of this store."""

    def __init__(
        self,
        client: AsyncRedis | AsyncRedisCluster,
        *,
        key_prefix: str = "chatmem",
        ttl: timedelta | float | None = None,
        history_scan_budget: int = 5000,
        retries: int = 0,
        cluster_buckets: int = 64,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
    ) -> None:
        self._client = client
        self._owns_client = False
        self._sentinel: AsyncSentinel | None = None  # the sentinels' clients, closed with ours
        clustered = isinstance(client, AsyncRedisCluster)
        if wait_replicas and clustered:
            raise ConfigurationError("wait_replicas is not supported on Redis Cluster")
        if wait_timeout_ms <= 0:
            raise ConfigurationError("wait_timeout_ms must be positive (WAIT 0 never returns)")
        self._wait_replicas = check_limit(wait_replicas)
        self._wait_timeout_ms = int(wait_timeout_ms)
        self._discovered = not clustered
        self._keys = KeyLayout(key_prefix, cluster_buckets if clustered else 0)
        self._ttl = normalize_ttl(ttl)
        self._ttl_ms = 0 if self._ttl is None else max(1, int(self._ttl.total_seconds() * 1000))
        self._budget = check_limit(history_scan_budget) or 1
        self._server = _server_of(client)
        self._scripts: dict[str, AsyncScript] = {
            name: client.register_script(getattr(_scripts, name)) for name in _scripts.__all__
        }
        # Key names of recent conversations: (its twelve keys, the fifteen an append
        # touches, the escaped owner). Building them costs more than a dict lookup.
        self._key_cache: dict[str, tuple[list[str], list[str], str]] = {}
        # A client made by from_url leaves retries to _call, which knows whether a failed
        # attempt may have reached the server. A handed-in client may retry by itself, so
        # even its "cannot connect" may follow an attempt that was sent.
        self._retries = check_limit(retries)
        self._backoff = ExponentialBackoff(cap=0.5, base=0.05)
        retry = getattr(client, "get_retry", lambda: getattr(client, "retry", None))()
        self._client_retries = bool(retry is not None and retry.get_retries())

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncRedisChatMemoryRepository:
        """Create a repository that owns a new client for a Redis URL.

        ``redis://`` and ``rediss://`` (TLS) name one server; ``redis+cluster://h1:p1,h2:p2``
        and ``rediss+cluster://...`` name seed nodes of a Redis Cluster (redis-py's
        ``RedisCluster`` finds the others); ``redis+sentinel://s1:p1,s2:p2/service[/db]`` and
        ``rediss+sentinel://...`` (TLS to sentinels and servers) name the sentinels of a
        service, whose master redis-py's ``Sentinel.master_for`` finds and follows through
        failovers.

        A query parameter is one of chatmem's options
        (:class:`~chatmem_repositories.redis.RedisOptions`) or one of the redis-py parameters
        in :data:`~chatmem_repositories.redis.DRIVER_PARAMETERS` (``max_connections``,
        ``client_name``, ``ssl_ca_certs``...), which redis-py reads from the URL; anything
        else is an error naming it. Other redis-py arguments go in ``driver_options``.

        Args:
            url: Such as ``redis://user:secret@host:6379/0?key_prefix=app&ttl=3600`` or
                ``redis+cluster://10.0.0.1:6379,10.0.0.2:6379?ttl=3600`` or
                ``redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster/0?ttl=3600``.
            **options: chatmem's options, declared driver parameters, and
                ``driver_options={...}``; they win over the URL's query.

        Raises:
            ConfigurationError: For an unknown option (naming it, with a suggestion), a bad
                value, a malformed port or IPv6 address, several hosts in a single-server
                URL, a database other than 0 on a cluster, or a Sentinel URL without its
                service name.
        """
        parsed = parse_url(url, options)
        kwargs = {**parsed.options.client_kwargs(), **parsed.driver_options}
        client: AsyncRedis | AsyncRedisCluster
        sentinel = None
        try:
            if is_sentinel_url(url):
                found = sentinel_settings(parsed)
                sentinel, client = async_sentinel_master(
                    found.sentinels,
                    found.service_name,
                    # No retries of a sentinel query: the next sentinel is asked instead.
                    {**found.sentinel_kwargs, "retry": AsyncRetry(NoBackoff(), 0)},
                    retry=AsyncRetry(NoBackoff(), 0),
                    **{**found.server_kwargs, **kwargs},
                )
            elif is_cluster_url(url):
                # The first seed is in parsed.url; the others are startup nodes too.
                seeds = [async_cluster_node(host, port) for host, port in cluster_seeds(url)[1:]]
                client = AsyncRedisCluster.from_url(
                    parsed.url, startup_nodes=seeds, retry=AsyncRetry(NoBackoff(), 0), **kwargs
                )
            else:
                # redis-py's default pool raises "Too many connections" once max_connections
                # are checked out; a blocking pool makes further callers wait for one, so a
                # burst of concurrent turns queues instead of failing.
                pool = AsyncBlockingConnectionPool.from_url(
                    parsed.url,
                    retry=AsyncRetry(NoBackoff(), 0),
                    **{"max_connections": DEFAULT_MAX_CONNECTIONS, **kwargs},
                )
                client = AsyncRedis.from_pool(pool)
        except ValueError as exc:  # redis-py's reading of a driver parameter's value
            raise ConfigurationError(
                f"invalid Redis URL {redact_url(url)!r}: {scrub(str(exc), url)}"
            ) from None
        except DRIVER_ERRORS as exc:
            # redis-py's sync RedisCluster connects when it is built (the other clients on
            # their first call): no node answering is chatmem's error, as on any later call.
            raise map_driver_error(exc, redact_url(url), "connecting") from exc
        repository = cls(
            client,
            key_prefix=parsed.options.key_prefix,
            ttl=parsed.options.ttl,
            history_scan_budget=parsed.options.history_scan_budget,
            retries=parsed.options.retries,
            cluster_buckets=parsed.options.cluster_buckets,
            wait_replicas=parsed.options.wait_replicas,
            wait_timeout_ms=parsed.options.wait_timeout_ms,
        )
        repository._owns_client = True
        repository._sentinel = sentinel
        # Retries are left to _call, which knows whether a failed attempt was sent.
        repository._client_retries = False
        repository._server = redact_url(parsed.url.partition("?")[0] if sentinel else parsed.url)
        return repository

    async def server_version(self) -> str:
        """Return the server's product and version, such as ``"Redis 7.0.15"``.

        Raises:
            RepositoryError: If the server cannot be reached (mapped like every call).
        """
        info = await self._call("reading the server version", lambda: self._client.info("server"))
        return server_product(info)

    @property
    def db_collection_name(self) -> str:
        """The key prefix, for telemetry's ``db.collection.name`` (Redis has no collections)."""
        return self._keys.prefix

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._server!r}, key_prefix={self._keys.prefix!r})"

    # -- plumbing ---------------------------------------------------------------------------

    async def _call(
        self, action: str, call: Callable[[], Awaitable[T]], *, write: bool = False
    ) -> T:
        # Retries a connection failure or timeout (every call is safe to repeat). A write
        # that failed after its command may have been sent is reported as such even if a
        # later attempt fails before sending anything.
        failures = 0
        maybe_applied = False
        while True:
            try:
                if not self._discovered:
                    await async_discover(self._client)
                    self._discovered = True
                return await call()
            except (*RETRYABLE, AttributeError, TypeError) as exc:
                failure = exc if isinstance(exc, RETRYABLE) else closed_while_in_use(exc)
                if failure is None:
                    raise  # not a lost connection: a bug, not the server's doing
                sent = self._client_retries or not never_sent(failure)
                maybe_applied = maybe_applied or (write and sent)
                failures += 1
                if failures > self._retries:
                    raise map_driver_error(
                        failure, self._server, action, unknown=maybe_applied
                    ) from exc
            except DRIVER_ERRORS as exc:
                raise map_driver_error(exc, self._server, action) from exc
            await async_sleep(self._backoff.compute(failures))

    async def _run(
        self, action: str, script: str, keys: list[str], args: list[Any], *, write: bool = False
    ) -> Any:
        return await self._call(
            action, lambda: self._evalsha(script, keys, args, write=write), write=write
        )

    async def _evalsha(
        self, name: str, keys: list[str], args: list[Any], *, write: bool = False
    ) -> Any:
        # EVALSHA straight from the client (redis-py's Script object adds a layer per call).
        # A server that lacks the script (restarted, failed over, SCRIPT FLUSH) answers
        # NOSCRIPT; EVAL then runs it and caches it there.
        if write and self._wait_replicas:
            return await self._evalsha_waited(name, keys, args)
        try:
            return await self._client.evalsha(self._scripts[name].sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self._client.eval(getattr(_scripts, name), len(keys), *keys, *args)

    async def _evalsha_waited(self, name: str, keys: list[str], args: list[Any]) -> Any:
        # The script and WAIT in one pipeline: one connection, as WAIT counts the replicas
        # that have this connection's writes, and one round trip.
        script = self._scripts[name]
        reply: Any = None
        acknowledged: Any = None
        for command, body in (("EVALSHA", script.sha), ("EVAL", script.script)):
            pipeline = self._client.pipeline(transaction=False)
            pipeline.execute_command(command, body, len(keys), *keys, *args)
            pipeline.execute_command("WAIT", self._wait_replicas, self._wait_timeout_ms)
            reply, acknowledged = await pipeline.execute(raise_on_error=False)
            if not isinstance(reply, NoScriptError):
                break
        for answer in (reply, acknowledged):
            if isinstance(answer, Exception):
                raise answer
        self._check_replicas(acknowledged)
        return reply

    def _check_replicas(self, acknowledged: Any) -> None:
        if as_int(acknowledged) < self._wait_replicas:
            raise RepositoryOutcomeUnknownError(
                f"redis at {self._server}: the write is on the master, but only "
                f"{as_int(acknowledged)} of the {self._wait_replicas} replicas asked for "
                f"(wait_replicas) had it within {self._wait_timeout_ms} ms; a failover now "
                "may lose it: send it again to be sure",
                backend=BACKEND,
            )

    def _names(self, conversation_id: str) -> tuple[list[str], list[str], str]:
        # (conversation keys, append keys, escaped owner) of a validated conversation id.
        names = self._key_cache.get(conversation_id)
        if names is None:
            owner = owner_of(conversation_id)
            keys = self._keys.conversation(conversation_id)
            names = (
                keys,
                [*keys, *self._keys.index_keys(conversation_id, owner)],
                "" if owner is None else escape_key_part(owner),
            )
            if len(self._key_cache) >= _KEY_CACHE_SIZE:
                self._key_cache.clear()
            self._key_cache[conversation_id] = names
        return names

    def _conversation_keys(self, conversation_id: str) -> list[str]:
        return self._names(validate_conversation_id(conversation_id))[0]

    def _append_keys(self, conversation_id: str) -> list[str]:
        return self._names(conversation_id)[1]

    def _append_args(self, conversation_id: str, messages: Sequence[Message]) -> list[Any]:
        owner_part = self._names(conversation_id)[2]
        return [self._ttl_ms, conversation_id, owner_part, len(messages), *append_args(messages)]

    async def _index(
        self, mode: str, owner: str | None, cursor: str | None, limit: int
    ) -> list[Any]:
        # One INDEX script per bucket: on a single server the one index, on a cluster every
        # bucket, sent as one pipeline (redis-py groups it by node and follows redirections).
        calls = []
        for bucket in self._keys.all_buckets():
            conversations = self._keys.conversations_in(bucket)
            index = conversations if owner is None else self._keys.owner_in(owner, bucket)
            keys = [index, conversations, self._keys.expiry_in(bucket)]
            args = [
                self._keys.owner_prefix_in(bucket),
                mode,
                "" if cursor is None else "1",
                cursor or "",
                limit,
            ]
            calls.append((keys, args))
        purge = mode == "purge"
        action = "purging expired conversations" if purge else "listing conversations"
        if len(calls) == 1:
            return [await self._run(action, "INDEX", *calls[0], write=purge)]
        return await self._call(action, lambda: self._fan_out(_scripts.INDEX, calls), write=purge)

    async def _fan_out(self, script: str, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
        # EVAL, not EVALSHA: a node promoted by a failover has an empty script cache, and a
        # cluster pipeline cannot load scripts. The server caches the compiled script anyway.
        pipeline = self._client.pipeline()
        for keys, args in calls:
            pipeline.execute_command("EVAL", script, len(keys), *keys, *args)
        return list(await pipeline.execute())

    @staticmethod
    def _merged(replies: list[Any], limit: int | None) -> list[str]:
        # Every bucket answered in id order (Redis compares bytes); merge them the same way.
        ids = sorted({as_text(member).encode() for reply in replies for member in reply})
        return [member.decode() for member in (ids if limit is None else ids[: limit + 1])]

    # -- Spring AI's four methods -----------------------------------------------------------

    async def find_conversation_ids(self) -> list[str]:
        """Return the ids of all live conversations, in id order."""
        return self._merged(await self._index("all", None, None, 0), None)

    async def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        """Return a conversation's whole history in order, or ``[]``."""
        keys = self._conversation_keys(conversation_id)
        bodies = await self._call("reading a conversation", lambda: self._client.hgetall(keys[1]))
        ordered = sorted(bodies.items(), key=lambda item: as_int(item[0]))
        return [decode_message(body, conversation_id=conversation_id) for _, body in ordered]

    async def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Replace a conversation's messages atomically; positions are never reused."""
        validate_conversation_id(conversation_id)
        if not messages:
            await self.delete_by_conversation_id(conversation_id)
            return
        keys = self._append_keys(conversation_id)
        await self._run(
            "replacing messages",
            "REPLACE",
            keys,
            self._append_args(conversation_id, messages),
            write=True,
        )

    async def delete_by_conversation_id(self, conversation_id: str) -> None:
        """Delete a conversation and its index entries; unknown ids are ignored."""
        validate_conversation_id(conversation_id)
        member = expiry_member(conversation_id, owner_of(conversation_id))
        keys = self._append_keys(conversation_id)
        await self._run(
            "deleting a conversation", "DELETE", keys, [conversation_id, member], write=True
        )

    # -- log capabilities -------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
    ) -> list[StoredMessage]:
        """Append messages in one atomic script; ids already stored are skipped.

        With ``expected_version``, another script compares it with the position counter
        first and stores nothing unless they are equal: still one round trip.

        Raises:
            VersionConflictError: ``expected_version`` is given and is not the conversation's.
        """
        validate_conversation_id(conversation_id)
        if expected_version is not None:
            return await self._append_checked(conversation_id, messages, int(expected_version))
        if not messages:
            return []
        reply = await self._run(
            "appending",
            "APPEND",
            self._append_keys(conversation_id),
            self._append_args(conversation_id, messages),
            write=True,
        )
        return _stored(reply, messages)

    async def _append_checked(
        self, conversation_id: str, messages: Sequence[Message], expected_version: int
    ) -> list[StoredMessage]:
        if not messages:
            actual = await self.find_version(conversation_id)
            if actual != expected_version:
                raise VersionConflictError(conversation_id, expected_version, actual)
            return []
        keys = self._append_keys(conversation_id)
        args = [*self._append_args(conversation_id, messages), expected_version]
        attempts = 0

        async def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return await self._evalsha("APPEND_CHECKED", keys, args, write=True)

        reply = await self._call("appending", attempt, write=True)
        # A client that retries by itself may have sent the script twice as well.
        retried = attempts > 1 or self._client_retries
        return _checked_out(reply, conversation_id, messages, expected_version, retried)

    async def find_version(self, conversation_id: str) -> int:
        """Return the conversation's version, its position counter: 0 if it holds nothing.

        The counter is ``seq`` in the meta hash (one ``HGET``); it goes with the
        conversation when it is deleted or expires.
        """
        meta = self._conversation_keys(conversation_id)[0]
        seq = await self._call("reading the version", lambda: self._client.hget(meta, "seq"))
        return 0 if seq is None else as_int(seq)

    async def append_many(
        self, batches: Iterable[tuple[str, Sequence[Message]]]
    ) -> list[list[StoredMessage]]:
        """Append to several conversations in one round trip: a bulk load's write.

        Each ``(conversation_id, messages)`` pair is appended as :meth:`append` would (one
        atomic script; ids already stored are skipped, so a repeated call stores nothing
        twice), and all of them go to the server as one pipeline. Pairs for one conversation
        are applied in the order given. The pairs are not one transaction: if the call
        fails, some conversations may have been appended; calling it again completes them.

        Args:
            batches: ``(conversation_id, messages)`` pairs.

        Returns:
            For each pair, in order, the messages newly stored with their positions.

        Raises:
            ConfigurationError: If a conversation id is invalid; nothing is written then.
            RepositoryError: If the server cannot be reached or refuses (mapped like every
                call).
        """
        pairs = [(validate_conversation_id(cid), list(messages)) for cid, messages in batches]
        calls = [
            (self._append_keys(cid), self._append_args(cid, messages))
            for cid, messages in pairs
            if messages
        ]
        if not calls:
            return [[] for _ in pairs]
        replies = iter(
            await self._call("appending", lambda: self._pipelined("APPEND", calls), write=True)
        )
        return [_stored(next(replies), messages) if messages else [] for _, messages in pairs]

    async def _pipelined(self, name: str, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
        # EVALSHA of every call in one pipeline. A node that lacks the script (a fresh server,
        # a replica promoted by a failover) answers NOSCRIPT to those calls; they are sent
        # again as EVAL, which caches it. Every script here is safe to repeat.
        script = self._scripts[name]
        pipeline = self._client.pipeline(transaction=False)
        for keys, args in calls:
            pipeline.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        if self._wait_replicas:  # one WAIT after all of them, on the same connection
            pipeline.execute_command("WAIT", self._wait_replicas, self._wait_timeout_ms)
        replies = list(await pipeline.execute(raise_on_error=False))
        acknowledged = replies.pop() if self._wait_replicas else None
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if missing:
            pipeline = self._client.pipeline(transaction=False)
            for i in missing:
                keys, args = calls[i]
                pipeline.execute_command("EVAL", script.script, len(keys), *keys, *args)
            if self._wait_replicas:  # the EVALs may be on another connection: WAIT there too
                pipeline.execute_command("WAIT", self._wait_replicas, self._wait_timeout_ms)
            answers = list(await pipeline.execute(raise_on_error=False))
            if self._wait_replicas:
                again = answers.pop()
                both = [acknowledged, again]
                failed = [a for a in both if isinstance(a, Exception)]
                acknowledged = failed[0] if failed else min(as_int(a) for a in both)
            for i, reply in zip(missing, answers, strict=True):
                replies[i] = reply
        for reply in [*replies, acknowledged]:
            if isinstance(reply, Exception):
                raise reply
        if self._wait_replicas:
            self._check_replicas(acknowledged)
        return replies

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        """Return the newest ``limit`` user, assistant and tool messages, oldest first.

        One round trip; system messages and events are left out.
        """
        keys = self._conversation_keys(conversation_id)
        check_limit(limit)
        if limit == 0:
            return []
        bound = "" if before is None else position_arg(before)
        reply = await self._run(
            "reading recent messages", "RECENT", [keys[4], keys[1]], [bound, limit]
        )
        return stored_from_pairs(reply, conversation_id)[::-1]

    async def find_window(
        self, conversation_id: str, limit: int
    ) -> tuple[StoredMessage | None, list[StoredMessage]]:
        """Return the system message and the newest ``limit`` chat messages.

        One script, so one round trip: the same answer as ``find_system_message`` plus
        ``find_recent(limit)``, which cost two. The window is oldest first.
        """
        keys = self._conversation_keys(conversation_id)
        check_limit(limit)
        reply = await self._run(
            "reading the memory window", "WINDOW", [keys[7], keys[4], keys[1]], [limit]
        )
        system = stored_from_pairs(reply[:2], conversation_id)
        window = stored_from_pairs(reply[2:], conversation_id)
        return (system[0] if system else None), window[::-1]

    async def count_messages(self, conversation_id: str) -> int:
        """Return how many messages the conversation holds (0 if none or expired; ``HLEN``)."""
        keys = self._conversation_keys(conversation_id)
        return int(await self._call("counting messages", lambda: self._client.hlen(keys[1])))

    async def find_system_message(self, conversation_id: str) -> StoredMessage | None:
        """Return the latest system message, or ``None`` (one round trip)."""
        return await self.find_latest(conversation_id, MessageType.SYSTEM)

    async def find_latest(
        self, conversation_id: str, message_type: MessageType
    ) -> StoredMessage | None:
        """Return the newest message of one type, or ``None`` (one round trip)."""
        keys = self._conversation_keys(conversation_id)
        type_key = keys[_TYPE_KEY[MessageType(message_type).value]]
        reply = await self._run("reading the latest message", "LATEST", [type_key, keys[1]], [])
        found = stored_from_pairs(reply, conversation_id)
        return found[0] if found else None

    async def list_conversations(
        self, *, owner: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> ConversationPage:
        """Return a page of live conversation ids in id order, optionally of one owner."""
        check_limit(limit)
        replies = await self._index("page", owner, cursor, limit)
        return conversation_page(self._merged(replies, limit), limit)

    async def find_history(
        self,
        conversation_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Collection[MessageType] | None = None,
        text: str | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[StoredMessage]:
        """Return a page of history matching every given filter, oldest first.

        A time range alone is read from the time index; types alone from the per-type
        indexes. Text, or several filters, are checked by a Lua scan in position order that
        examines at most ``history_scan_budget`` messages per round trip.
        """
        keys = self._conversation_keys(conversation_id)
        check_limit(limit)
        kinds = None if types is None else sorted({MessageType(t).value for t in types})
        if limit == 0 or kinds == []:
            return []
        cursor = "" if after is None else position_arg(after)
        found: list[StoredMessage] = []
        while len(found) < limit:
            args = [
                cursor,
                "" if since is None else str(epoch_micros(since)),
                "" if until is None else str(epoch_micros(until)),
                " ".join(kinds or []),
                "0" if text is None else "1",
                "" if text is None else text.casefold(),
                limit - len(found),
                self._budget,
            ]
            reply = await self._run("querying history", "HISTORY", keys, args)
            page = stored_from_pairs(reply[1:], conversation_id)
            # The scripts compare microseconds as doubles; the exact check is done here.
            found += [
                s for s in page if matches_history_filters(s.message, since, until, types, text)
            ]
            resume = as_text(reply[0])
            if not resume:
                break
            cursor = resume
        return found[:limit]

    async def delete_before(self, conversation_id: str, position: Position) -> int:
        """Delete user, assistant and tool messages positioned before ``position`` (one script).

        System messages and events are kept.
        """
        keys = self._conversation_keys(conversation_id)
        bounds = ["-inf", "(" + position_arg(position)]
        deleted = await self._run("deleting old messages", "DELETE_CHAT", keys, bounds, write=True)
        return as_int(deleted)

    async def delete_between(
        self, conversation_id: str, after: Position | None, through: Position
    ) -> int:
        """Delete user, assistant and tool messages positioned in ``(after, through]``.

        One script; system messages and events are kept, ids stay remembered.
        """
        keys = self._conversation_keys(conversation_id)
        low = "-inf" if after is None else "(" + position_arg(after)
        bounds = [low, position_arg(through)]
        deleted = await self._run("deleting messages", "DELETE_CHAT", keys, bounds, write=True)
        return as_int(deleted)

    async def purge_expired(self) -> int:
        """Drop index entries of expired conversations; Redis has already dropped their keys.

        Returns:
            How many expired conversations were removed from the indexes.
        """
        return sum(as_int(reply) for reply in await self._index("purge", None, None, 0))

    # -- summaries ------------------------------------------------------------------------------

    async def find_summary(self, conversation_id: str) -> ConversationSummary | None:
        """Return the conversation's summary (fields of its meta hash), or ``None``."""
        meta = self._conversation_keys(conversation_id)[0]
        reply = await self._call(
            "reading a summary",
            lambda: self._client.hmget(meta, ["summary", "summary_covers", "summary_version"]),
        )
        return decode_summary(reply)

    async def save_summary(
        self, conversation_id: str, text: str, covers: Position, *, expected_version: int
    ) -> bool:
        """Write the summary if the stored version is ``expected_version`` (one script)."""
        meta = self._conversation_keys(conversation_id)[0]
        won = await self._run(
            "writing a summary",
            "SAVE_SUMMARY",
            [meta],
            [expected_version, text, position_arg(covers)],
            write=True,
        )
        return bool(as_int(won))

    async def aclose(self) -> None:
        """Close the client if this repository created it (``from_url``)."""
        if self._owns_client:
            with mapped_driver_errors(self._server, "closing"):
                try:
                    await self._client.aclose()
                finally:
                    # The sentinels' clients are not the master client's: close them too.
                    for sentinel in self._sentinel.sentinels if self._sentinel else []:
                        await sentinel.aclose()

    async def __aenter__(self) -> AsyncRedisChatMemoryRepository:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
