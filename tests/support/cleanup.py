"""What the tests leave on the shared servers, dropped by prefix."""

from __future__ import annotations

from typing import Any

import redis
from pymongo import MongoClient
from redis.cluster import ClusterNode, RedisCluster

from chatmem_repositories.redis._options import cluster_seeds


def drop_redis_keys(url: str, prefix: str) -> None:
    """Delete the keys under ``prefix``: its cluster-tagged keys and any starting with it."""
    with redis.Redis.from_url(url) as client:
        for pattern in (f"{{{prefix}:*", f"{{{prefix}}}:*", f"{prefix}*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 500):
                client.delete(*keys[start : start + 500])


def drop_mongodb_collections(url: str, prefix: str) -> None:
    """Drop the collections whose names start with ``prefix`` in the URL's database."""
    client: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        database = client.get_default_database()
        for collection in database.list_collection_names():
            if collection.startswith(prefix):
                database.drop_collection(collection)
    finally:
        client.close()


def drop_redis_cluster_keys(url: str, prefix: str) -> None:
    """Delete every key under ``prefix`` on every primary of the cluster at ``url``."""
    seeds = [ClusterNode(host, port) for host, port in cluster_seeds(url)]
    with RedisCluster(startup_nodes=seeds) as client:
        for node in client.get_primaries():
            with redis.Redis(host=node.host, port=node.port) as raw:
                keys = list(raw.scan_iter(match=f"{{{prefix}:*", count=1000))
                with raw.pipeline(transaction=False) as pipeline:
                    for key in keys:  # one key per DEL: the keys span slots
                        pipeline.delete(key)
                    pipeline.execute()
