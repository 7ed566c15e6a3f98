"""Schema statements on a ring: one that reaches a node which has not applied the new keyspace yet is sent
again (shared.revisions.cql_schema.execute_ddl); anything else fails at once."""
import pytest

from shared.revisions import cql_schema


class InvalidRequest(Exception):
    """Named as the driver's: execute_ddl matches it by name."""


class Session:
    def __init__(self, failures: list[Exception]):
        self.failures = list(failures)
        self.sent: list[str] = []

    def execute(self, statement, timeout=None):
        self.sent.append(statement)
        if self.failures:
            raise self.failures.pop(0)


def test_a_statement_that_finds_no_keyspace_yet_is_sent_again():
    missing = InvalidRequest("Error from server: code=2200 [Invalid query] message=\"Keyspace 'k' doesn't exist\"")
    session, slept = Session([missing, missing]), []
    cql_schema.execute_ddl(session, "CREATE TABLE k.t (a int PRIMARY KEY)", sleep=slept.append)
    assert len(session.sent) == 3 and slept == [cql_schema.DDL_RETRY_S] * 2


@pytest.mark.parametrize("error", [InvalidRequest("line 1:7 no viable alternative"), ValueError("doesn't exist")])
def test_any_other_error_fails_at_once(error):
    session = Session([error])
    with pytest.raises(type(error)):
        cql_schema.execute_ddl(session, "CREATE TABLE k.t (a int PRIMARY KEY)", sleep=lambda s: None)
    assert len(session.sent) == 1


def test_it_gives_up_after_its_attempts():
    missing = InvalidRequest("Keyspace 'k' doesn't exist")
    session = Session([missing] * cql_schema.DDL_ATTEMPTS)
    with pytest.raises(InvalidRequest):
        cql_schema.execute_ddl(session, "CREATE TABLE k.t (a int PRIMARY KEY)", sleep=lambda s: None)
    assert len(session.sent) == cql_schema.DDL_ATTEMPTS
