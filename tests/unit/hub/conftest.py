from tests.fixtures.hub import api, hub_maker, migrated_sqlite_template, sqlite_url, tenant  # noqa: F401
