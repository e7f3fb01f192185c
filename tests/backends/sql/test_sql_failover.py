"""PostgreSQL failover: the primary killed and its standby promoted under concurrent writers.

The topology is ``scripts/servers/postgres-standby`` (a primary and a streaming standby), and
every repository reaches it through one multi-host URL with ``target_session_attrs=read-write``.
Eight writers (threads, or asyncio tasks) append to one conversation through one repository,
created once; the history checker runs beside them with a repository of its own. The primary's
processes are killed as in a crash (SIGQUIT, PostgreSQL's immediate shutdown) and the standby is
promoted. Then:

- the same repositories write again, without a restart: their pools discard the connections
  to the old primary, and new connections find the promoted standby;
- a call that fails meanwhile raises chatmem's connection errors, the outcome-unknown one where
  the write may have been applied; the writers send the same message again (appends are
  idempotent by message id), and nothing is stored twice;
- with synchronous replication nothing acknowledged is lost and the checker finds no anomaly;
  with asynchronous replication acknowledged commits the standby had not yet received may be
  lost, and the checker finds only what such a loss explains. The tests print what they
  measured (``-s``); ``benchmarks/failover_postgres.py`` repeats the failover to measure it.

After each failover the old primary is cloned again as the new primary's standby.
"""

from __future__ import annotations

import pytest

from chatmem.testing import check_history
from tests.support.postgres_standby import (
    LOSS_ANOMALIES,
    FailoverRun,
    StandbyTopology,
    async_run_failover,
    run_failover,
)
from tests.support.servers import server_url

# What a call may raise while the primary is gone: nothing was applied, or it may have been.
TYPED_ERRORS = {"RepositoryConnectionError", "RepositoryOutcomeUnknownError"}


@pytest.fixture(scope="module")
def standby_url() -> str:
    return server_url("postgresql_standby")


@pytest.fixture(scope="module")
def topology(standby_url: str) -> StandbyTopology:
    return StandbyTopology(standby_url)


def check_errors(run: FailoverRun) -> None:
    # The writers met the failover (the standby is promoted only once one of them has).
    assert sum(run.errors.values()) > 0
    assert set(run.errors) <= TYPED_ERRORS, run.errors
    assert run.checker is not None
    assert run.checker.during > 0  # the checker's calls met it too
    assert set(run.checker.errors) <= TYPED_ERRORS, run.checker.errors


def test_synchronous_replication_loses_nothing_acknowledged(
    topology: StandbyTopology, standby_url: str
) -> None:
    run = run_failover(topology, standby_url, "sync")
    print("\n" + run.summary())
    check_errors(run)
    assert run.lost == []
    assert run.duplicated == 0
    assert run.checker is not None
    check_history(run.checker.report.history)  # raises, with the shrunk history, on an anomaly


async def test_asynchronous_replication_loses_at_most_the_last_commits(
    topology: StandbyTopology, standby_url: str
) -> None:
    run = await async_run_failover(topology, standby_url, "async")
    print("\n" + run.summary())
    check_errors(run)
    assert run.duplicated == 0
    assert run.checker is not None
    for anomaly in run.checker.anomalies:
        print(f"  {anomaly.kind}: {anomaly.explanation}")
    assert {a.kind for a in run.checker.anomalies} <= LOSS_ANOMALIES
