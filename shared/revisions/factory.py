"""Pick the revision store a process uses: Cassandra when contact points are configured, else SQLite."""
from shared.config import CommonConfig
from shared.revisions.store import RevisionStore


def open_store(config: CommonConfig) -> RevisionStore:
    """The caller owns the store and must close() it. Cassandra's keyspace must already exist
    (python -m shared.revisions.cql_schema)."""
    if config.cassandra_hosts:
        from shared.revisions.cassandra_store import connect   # the driver loads only when used
        return connect(config.cassandra_hosts, config.cassandra_port, config.cassandra_keyspace,
                       write_consistency=config.cassandra_write_consistency,
                       read_consistency=config.cassandra_read_consistency)
    from shared.revisions.sqlite_store import SQLiteRevisionStore
    return SQLiteRevisionStore(config.revisions_sqlite)
