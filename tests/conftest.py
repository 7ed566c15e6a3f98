"""Session fixtures for the real local services live in tests/fixtures/, one plugin per service.

They connect to servers that `make services` started and fail (never skip) when one is missing.
"""
pytest_plugins = [
    "tests.fixtures.postgres",
    "tests.fixtures.cassandra",
    "tests.fixtures.mediawiki",
    "tests.fixtures.writable_wiki",
    "tests.fixtures.edge",
    "tests.fixtures.revision_stores",
    "tests.fixtures.dumps",
    "tests.fixtures.chwiki_wiki",
]
