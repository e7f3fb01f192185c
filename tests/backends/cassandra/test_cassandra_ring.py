"""Cassandra ring: nodes killed under concurrent writers, replication factor 3, QUORUM.

The topology is ``scripts/servers/cassandra-ring`` (three nodes on 127.0.0.2-4); every
repository reaches it through one URL naming the three nodes, which creates the keyspace with
``replication_factor=3``. Reads and writes run at the defaults, ``LOCAL_QUORUM``, and the
Paxos phase of appends at ``LOCAL_SERIAL``. Eight writer threads append to one conversation
through one repository, sending a failed append again (appends are idempotent by message id).

- One node killed (SIGKILL): two replicas of three still form a quorum, so appends go on
  and none fails; the history checker runs against the ring meanwhile (its calls may meet a
  typed write timeout until the other nodes have marked the node down: a logged batch's
  batchlog may still be sent to it) and finds no anomaly. (The driver sends a request whose
  coordinator was killed to another node, applied or not; an append recognises its own
  applied attempt by the token on its claims, so it is not reported as stored before.)
- A second node killed: one replica is left, so calls fail with chatmem's typed errors
  (``RepositoryConnectionError`` when Cassandra refused before writing, the write-timeout or
  outcome-unknown ones where the write may have applied).
- Both nodes started again (side by side, the only restart of the suite): appends succeed,
  nothing acknowledged is lost or stored twice, and the lightweight-transaction counter gave
  every stored message its own position with none skipped.

The test prints what it measured (``-s``); ``benchmarks/failover_cassandra.py`` repeats it.
It leaves the three nodes up.
"""

from __future__ import annotations

import pytest

from chatmem_repositories.cassandra import CassandraChatMemoryRepository
from chatmem_repositories.cassandra._options import parse_url
from tests.support.cassandra_ring import RingTopology, repository_options, run_ring_faults
from tests.support.servers import server_url

# What a call may raise with two of three nodes down: refused before anything was written,
# or a write that may have applied (a Paxos round or commit that timed out, a lost connection).
TYPED_ERRORS = {
    "RepositoryConnectionError",
    "RepositoryWriteTimeoutError",
    "RepositoryOutcomeUnknownError",
    "RepositoryTimeoutError",
}


@pytest.fixture(scope="module")
def ring_url() -> str:
    return server_url("cassandra_ring")


def test_ring_url_names_three_nodes_and_creates_replication_factor_3(ring_url: str) -> None:
    settings, options, _ = parse_url(ring_url, {})
    assert settings.hosts == ("127.0.0.2", "127.0.0.3", "127.0.0.4")
    assert options.replication_factor == 3
    assert (options.read_consistency, options.write_consistency) == ("LOCAL_QUORUM",) * 2
    assert options.serial_consistency == "LOCAL_SERIAL"
    repository = CassandraChatMemoryRepository.from_url(ring_url, **repository_options())
    try:
        assert repository.find_conversation_ids() is not None  # connects, creates the keyspace
        session = repository._db.session
        assert session is not None
        row = session.execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
            (settings.keyspace,),
        ).one()
        assert row["replication"]["replication_factor"] == "3"
        hosts = {str(h.address) for h in session.cluster.metadata.all_hosts()}
        assert hosts == {"127.0.0.2", "127.0.0.3", "127.0.0.4"}
    finally:
        repository.close()


@pytest.mark.slow
def test_one_node_down_loses_nothing_two_down_fail_typed_restart_recovers(ring_url: str) -> None:
    run = run_ring_faults(RingTopology(ring_url))
    print("\n" + run.summary())
    _, one_down, two_down, _, restarted = run.phases
    # One node down: the quorum holds, the writers go on without an error (the driver sends
    # a request the killed node was coordinating to another node).
    assert one_down.acknowledged > 0
    assert not one_down.errors, (one_down.errors, one_down.samples)
    # Two nodes down: typed errors only, and Cassandra said why.
    assert sum(two_down.errors.values()) > 0
    assert set(run.all_errors) <= TYPED_ERRORS, run.all_errors
    assert restarted.acknowledged > 0
    # Nothing acknowledged lost, nothing stored twice, one position per message.
    assert run.lost == [], run.lost_detail
    assert run.duplicated == 0
    assert run.positions_consistent, (run.positions[:5], run.next_position)
    assert run.checker is not None
    assert set(run.checker.errors) <= TYPED_ERRORS, run.checker.errors
    for anomaly in run.checker.anomalies:
        print(f"  {anomaly.kind}: {anomaly.explanation}")
    assert run.checker.anomalies == [], [a.explanation for a in run.checker.anomalies]
