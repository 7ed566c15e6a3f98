"""End-to-end fixtures: a PostgreSQL schema and a Cassandra keyspace of the test's own (the keyspace from
tests/fixtures/cassandra.py), clusters of real processes (stopped after the test, their logs then searched for
secrets), and the recovery timings each test measures, printed at the end of the run."""
import pytest

from tests.e2e.cluster import Cluster
from tests.integration.coordination_support import new_schema_url

TIMINGS: list[tuple[str, float, str]] = []


@pytest.fixture
def database_url(postgres_url):
    return new_schema_url(postgres_url, "e2e")


@pytest.fixture
def make_cluster(tmp_path, database_url, keyspace, mediawiki):  # noqa: F811 - the imported fixture
    clusters: list[Cluster] = []

    def make(**options) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster{len(clusters) + 1}", database_url=database_url,
                          keyspace=keyspace, user_agent=mediawiki.user_agent, **options)
        clusters.append(cluster)
        return cluster

    yield make
    for cluster in clusters:
        cluster.stop()
    leaks = [leak for cluster in clusters for leak in cluster.leaks()]
    assert not leaks, f"secrets in process logs under {tmp_path}: {leaks}"


@pytest.fixture
def record_timing(record_property):
    def record(name: str, seconds: float, note: str = "") -> None:
        TIMINGS.append((name, seconds, note))
        record_property(name, round(seconds, 2))
        print(f"\ntiming: {name} = {seconds:.2f} s {note}")
    return record


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("end-to-end recovery timings")
        for name, seconds, note in TIMINGS:
            terminalreporter.write_line(f"{name:45} {seconds:7.2f} s  {note}")
