"""`kind: wiki` subscriptions (a whole wiki bootstrapped from dump files) through the admin API, and one tick of
the scheduler handing their files to nodes and taking the nodes' reports back (blackwidow.poller with a spawn
client that answers as a spawn reading the files would)."""
from datetime import datetime, timezone

import pytest

from blackwidow import poller, representations
from blackwidow.store.dumps import FileView
from blackwidow.store.nodes import register_node
from shared.census_wire import CensusReport, ShardProof
from shared.dump_wire import DONE, FAILED, CatchUpReport, DumpReport, Resume
from shared.wire import Poll, StatusReport
from tests.fixtures.hub import LOCAL_WIKI, api_client, hub_config

DUMPS = ["https://dumps.wikimedia.org/chwiki/20260101/chwiki-20260101-pages-meta-history1.xml.bz2",
         "https://dumps.wikimedia.org/chwiki/20260101/chwiki-20260101-pages-meta-history2.xml.bz2",
         "https://dumps.wikimedia.org/chwiki/20260101/chwiki-20260101-pages-meta-history3.xml.bz2"]

ALLOWLIST = "127.0.0.1:8780,*.wikipedia.org,dumps.wikimedia.org"


@pytest.fixture
def api(sqlite_url, hub_maker):
    return api_client(hub_config(sqlite_url, BW_WIKI_ALLOWLIST=ALLOWLIST), hub_maker)


def create(api, tenant, **extra):
    body = {"kind": "wiki", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "dumps": DUMPS, **extra}
    return api.simulate_post("/v1/subscriptions", json=body)


def test_create_shows_the_set_and_its_files(api, tenant):
    resp = create(api, tenant, dbname="chwiki", content=True, parallel=1)
    assert resp.status_code == 201
    s = resp.json
    assert resp.headers["location"] == f"/v1/sets/{s['id']}"
    assert (s["kind"], s["wiki"], s["dbname"], s["content"], s["parallel"], s["state"]) == (
        "wiki", LOCAL_WIKI, "chwiki", True, 1, "bootstrapping")
    assert [(f["position"], f["url"], f["state"]) for f in s["files"]] == \
        [(i, u, "pending") for i, u in enumerate(DUMPS)]
    assert s["progress"]["files"] == 3 and s["progress"]["revisions_written"] == 0
    assert s["progress"]["eta_s"] is None                  # no file's size known yet
    assert api.simulate_get(f"/v1/sets/{s['id']}").json == s
    assert [x["id"] for x in api.simulate_get("/v1/sets", params={"tenant_id": tenant["id"]}).json["items"]] == \
        [s["id"]]
    # the per-article listing is not where sets live
    assert api.simulate_get("/v1/subscriptions").json["items"] == []


@pytest.mark.parametrize("extra, field", [
    ({"dumps": []}, "dumps"),
    ({"dumps": "https://dumps.wikimedia.org/a.xml"}, "dumps"),
    ({"dumps": [DUMPS[0], 7]}, "dumps[1]"),
    ({"dumps": [DUMPS[0], "ftp://dumps.wikimedia.org/b.xml"]}, "dumps[1]"),
    ({"dumps": [DUMPS[0], "http://10.0.0.8/b.xml"]}, "dumps[1]"),            # internal, not allowlisted
    ({"dumps": [DUMPS[0], "https://evil.example/b.xml"]}, "dumps[1]"),       # host not allowlisted
    ({"dumps": [DUMPS[0], DUMPS[0]]}, "dumps[1]"),
    ({"dbname": "Ch Wiki"}, "dbname"),
    ({"parallel": 0}, "parallel"),
    ({"parallel": 9}, "parallel"),
    ({"wiki": "https://ch.wikipedia.org/wiki/Main_Page"}, "wiki"),
    ({"tenant_id": "1b4e28ba-2fa1-41d2-883f-0016d3cca427"}, "tenant_id"),
    ({"title": "Guam"}, "title"),                       # not a field of this kind
])
def test_bad_input_is_refused_naming_the_field_and_creates_nothing(api, tenant, extra, field):
    resp = create(api, tenant, **extra)
    assert resp.status_code == 422, resp.json
    assert resp.json["error"]["field"] == field
    assert api.simulate_get("/v1/sets").json["items"] == []


def test_stop_resume_and_delete(api, tenant):
    s = create(api, tenant).json
    stopped = api.simulate_patch(f"/v1/sets/{s['id']}", json={"enabled": False})
    assert (stopped.status_code, stopped.json["state"], stopped.json["enabled"]) == (200, "disabled", False)
    assert api.simulate_patch(f"/v1/sets/{s['id']}", json={"parallel": 3}).json["error"]["field"] == "parallel"
    assert api.simulate_patch(f"/v1/sets/{s['id']}", json={"enabled": True}).json["state"] == "bootstrapping"
    assert api.simulate_delete(f"/v1/sets/{s['id']}").status_code == 204
    missing = api.simulate_get(f"/v1/sets/{s['id']}")
    assert (missing.status_code, missing.json["error"]["field"]) == (404, "id")
    assert api.simulate_delete(f"/v1/sets/{s['id']}").status_code == 404


class ReadingSpawns:
    """A SpawnClient whose nodes answer each poll with `answers[node]` for the files it names."""

    def __init__(self, node_ids: dict[str, str]):
        self.ids = node_ids                     # url -> node id
        self.polls: list[tuple[str, Poll]] = []
        self.answers: dict[str, dict[str, DumpReport]] = {}
        self.catch_up: dict[str, CatchUpReport] = {}       # node -> its report of the set it reads on

    def poll(self, node_url: str, poll: Poll) -> StatusReport:
        node = self.ids[node_url]
        self.polls.append((node, poll))
        named = {d.file_id for d in poll.dumps}
        report = self.catch_up.get(node)
        return StatusReport(node_id=node, boot_id=f"boot-{node}", attached=True,
                            dumps={fid: r for fid, r in self.answers.get(node, {}).items() if fid in named},
                            catch_up={report.set_id: report} if report is not None else {})

    def send_batch(self, node_url, drops, puts):
        raise AssertionError("nothing to send")

    def send_changes(self, node_url, changes):
        return 0


def test_a_tick_hands_files_out_and_records_what_the_nodes_report(api, tenant, hub_maker, sqlite_url):
    s = create(api, tenant, parallel=2, dbname="chwiki").json
    first, second, third = (f["id"] for f in s["files"])
    with hub_maker.begin() as session:
        n1 = register_node(session, "http://127.0.0.1:9001")[0].id
        n2 = register_node(session, "http://127.0.0.1:9002")[0].id
    spawns = ReadingSpawns({"http://127.0.0.1:9001": n1, "http://127.0.0.1:9002": n2})
    config, state = hub_config(sqlite_url), poller.PollerState()

    def tick():
        spawns.polls.clear()
        poller.poll_once(hub_maker, spawns, config, state=state)        # type: ignore[arg-type]
        return {node: [(d.file_id, d.resume, d.dbname) for d in poll.dumps] for node, poll in spawns.polls}

    carried = tick()
    assert sorted(fid for duties in carried.values() for fid, _, _ in duties) == sorted([first, second])
    assert all(len(duties) == 1 and duties[0][2] == "chwiki" for duties in carried.values())
    node_of = {duties[0][0]: node for node, duties in carried.items()}
    assert api.simulate_get(f"/v1/sets/{s['id']}").json["files"][0]["node"] == node_of[first]

    # the first file's node reports progress, then done; the second's a failure
    spawns.answers[node_of[first]] = {first: DumpReport(first, "reading", resume=Resume(40, 400, 900),
                                                        bytes_read=1000, bytes_total=4000, bytes_per_s=500.0,
                                                        revisions_per_s=45.0, revisions_read=950)}
    spawns.answers[node_of[second]] = {second: DumpReport(second, FAILED, resume=Resume(2, 20, 30),
                                                          error="DumpNotFound: HTTP 404")}
    tick()
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    one, two, three = shown["files"]
    assert (one["state"], one["pages_written"], one["revisions_written"], one["bytes_read"]) == (
        "reading", 40, 900, 1000)
    assert (two["state"], two["error"], two["attempts"], two["node"]) == ("failed", "DumpNotFound: HTTP 404", 1,
                                                                          None)
    assert shown["state"] == "failed"
    assert shown["progress"]["revisions_written"] == 930
    metrics = api.simulate_get("/metrics").text
    assert f'bw_set_dump_revisions_written{{set="{s["id"]}"}} 930.0' in metrics
    assert f'bw_set_dump_files{{set="{s["id"]}",state="failed"}} 1.0' in metrics
    assert f'bw_set_dump_bytes_read{{set="{s["id"]}"}} 1000.0' in metrics
    assert f'bw_set_dump_eta_seconds{{set="{s["id"]}"}}' not in metrics      # the other files' sizes unknown

    # the failed file's node is free: the third file starts there; the second waits for its backoff
    carried = tick()
    assert [d[0] for d in carried[node_of[second]]] == [third]
    assert carried[node_of[first]][0][1] == Resume(40, 400, 900)    # the resume point travels with the duty

    spawns.answers[node_of[first]] = {first: DumpReport(first, DONE, resume=Resume(80, 800, 1800))}
    tick()
    one = api.simulate_get(f"/v1/sets/{s['id']}").json["files"][0]
    assert (one["state"], one["revisions_written"], one["node"]) == ("done", 1800, None)
    assert one["finished_at"] is not None
    assert first not in {d[0] for duties in tick().values() for d in duties}      # never named again


def test_a_stopped_set_is_named_to_no_node(api, tenant, hub_maker, sqlite_url):
    s = create(api, tenant).json
    with hub_maker.begin() as session:
        n1 = register_node(session, "http://127.0.0.1:9001")[0].id
    spawns = ReadingSpawns({"http://127.0.0.1:9001": n1})
    config, state = hub_config(sqlite_url), poller.PollerState()
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    assert [len(p.dumps) for _, p in spawns.polls] == [2]                # the node's two files at once
    api.simulate_patch(f"/v1/sets/{s['id']}", json={"enabled": False})
    spawns.polls.clear()
    poller.poll_once(hub_maker, spawns, config, state=state,            # type: ignore[arg-type]
                     now=lambda: datetime.now(timezone.utc))
    assert [len(p.dumps) for _, p in spawns.polls] == [0]
    assert {f["state"] for f in api.simulate_get(f"/v1/sets/{s['id']}").json["files"]} == {"pending"}


def _file(state: str, bytes_read: int, bytes_total: int | None, rate: float) -> FileView:
    return FileView(id="f", position=0, url="u", state=state, node_id=None, pages=1, revisions=10,
                    bytes_read=bytes_read, bytes_total=bytes_total, revisions_read=10, revisions_per_s=1.0,
                    bytes_per_s=rate, error=None, attempts=0, retry_at=None, reported_at=None, finished_at=None)


@pytest.mark.parametrize("files, eta", [
    ([_file("reading", 100, 1100, 50.0), _file("pending", 0, 500, 0.0)], 30.0),    # 1500 bytes left at 50/s
    ([_file("reading", 100, 1100, 50.0), _file("pending", 0, None, 0.0)], None),   # a size not known yet
    ([_file("reading", 100, 1100, 0.0)], None),                                     # no rate yet
    ([_file("done", 900, 900, 0.0), _file("done", 10, 10, 0.0)], 0.0),
])
def test_time_left_counts_every_byte_not_read_at_the_current_rate(files, eta):
    assert representations.dump_progress(tuple(files))["eta_s"] == eta


def test_the_dump_date_comes_from_wikimedias_paths_or_is_given(api, tenant):
    inferred = create(api, tenant).json
    assert inferred["dumped_at"] == "2026-01-01T00:00:00Z" and inferred["catch_up"]["caught_up_to"] is None
    given = create(api, tenant, dumped_at="2026-01-03T12:00:00+02:00").json
    assert given["dumped_at"] == "2026-01-03T10:00:00Z"
    local = ["https://dumps.wikimedia.org/other/chwiki-latest-pages-meta-history.xml.bz2"]
    unknown = create(api, tenant, dumps=local).json
    assert (unknown["dumped_at"], unknown["catch_up"]) == (None, None)
    for bad in ("2026-01-03", "yesterday", "2026-01-03T12:00:00"):
        resp = create(api, tenant, dumped_at=bad)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, "dumped_at")


def test_once_every_file_is_written_one_node_reads_on_from_the_dump_date(api, tenant, hub_maker, sqlite_url):
    s = create(api, tenant, dumps=DUMPS[:1]).json
    (only,) = (f["id"] for f in s["files"])
    with hub_maker.begin() as session:
        n1 = register_node(session, "http://127.0.0.1:9001")[0].id
    spawns = ReadingSpawns({"http://127.0.0.1:9001": n1})
    config, state = hub_config(sqlite_url), poller.PollerState()
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    assert [p.catch_up for _, p in spawns.polls] == [()]              # its file is not written yet
    spawns.answers[n1] = {only: DumpReport(only, DONE, resume=Resume(3, 30, 9))}
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    assert api.simulate_get(f"/v1/sets/{s['id']}").json["state"] == "catching_up"
    spawns.polls.clear()
    spawns.catch_up[n1] = CatchUpReport(s["id"], position="2026-03-01T00:00:00Z", revisions=40, requests=2)
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    (duty,) = spawns.polls[0][1].catch_up
    assert (duty.set_id, duty.since, duty.position, duty.tenants) == (s["id"], "2026-01-01T00:00:00Z", None,
                                                                      (tenant["id"],))
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    assert (shown["state"], shown["catch_up"]["node"], shown["catch_up"]["position"],
            shown["catch_up"]["revisions_written"]) == ("catching_up", n1, "2026-03-01T00:00:00Z", 40)
    spawns.catch_up[n1] = CatchUpReport(s["id"], position="2026-03-02T00:00:00Z",
                                        caught_up_to="2026-11-01T08:00:00Z", revisions=41, requests=3)
    spawns.polls.clear()
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    assert spawns.polls[0][1].catch_up[0].position == "2026-03-01T00:00:00Z"    # what the hub knew then
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json
    assert (shown["state"], shown["catch_up"]["caught_up_to"]) == ("following", "2026-11-01T08:00:00Z")
    lag = [line for line in api.simulate_get("/metrics").text.splitlines()
           if line.startswith(f'bw_set_catch_up_lag_seconds{{set="{s["id"]}"}}')]
    assert len(lag) == 1 and float(lag[0].split()[-1]) > 0


@pytest.mark.parametrize("body, field", [
    ({"kind": "namespace"}, "namespaces"),
    ({"kind": "namespace", "namespaces": []}, "namespaces"),
    ({"kind": "namespace", "namespaces": [0, -1]}, "namespaces[1]"),
    ({"kind": "namespace", "namespaces": ["0"]}, "namespaces[0]"),
    ({"kind": "wiki", "namespaces": [0]}, "namespaces"),
])
def test_namespaces_belong_to_the_namespace_kind(api, tenant, body, field):
    resp = create(api, tenant, **body)
    assert (resp.status_code, resp.json["error"]["field"]) == (422, field), resp.json


def test_a_namespace_set_carries_its_namespaces_to_the_nodes(api, tenant, hub_maker, sqlite_url):
    s = create(api, tenant, kind="namespace", namespaces=[4, 0, 4], dumps=DUMPS[:1]).json
    assert (s["kind"], s["namespaces"]) == ("namespace", [0, 4])
    with hub_maker.begin() as session:
        n1 = register_node(session, "http://127.0.0.1:9001")[0].id
    spawns = ReadingSpawns({"http://127.0.0.1:9001": n1})
    poller.poll_once(hub_maker, spawns, hub_config(sqlite_url), state=poller.PollerState())   # type: ignore[arg-type]
    assert [d.namespaces for d in spawns.polls[0][1].dumps] == [(0, 4)]
    assert create(api, tenant).json["namespaces"] is None


def test_a_census_travels_from_its_reader_to_the_set_and_sets_when_the_next_may_start(tenant, hub_maker,
                                                                                      sqlite_url):
    # the API and the scheduler read the same settings, as a deployment's processes do
    settings = {"BW_WIKI_ALLOWLIST": ALLOWLIST, "BW_CENSUS_SHARDS": "4", "BW_CENSUS_INTERVAL_S": "3600"}
    api = api_client(hub_config(sqlite_url, **settings), hub_maker)
    s = create(api, tenant, dumps=DUMPS[:1]).json
    (only,) = (f["id"] for f in s["files"])
    with hub_maker.begin() as session:
        n1 = register_node(session, "http://127.0.0.1:9001")[0].id
    spawns = ReadingSpawns({"http://127.0.0.1:9001": n1})
    config, state = hub_config(sqlite_url, **settings), poller.PollerState()
    spawns.answers[n1] = {only: DumpReport(only, DONE, resume=Resume(3, 30, 9))}
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    running = CensusReport(cut="2026-11-01T08:00:00Z", started_at="2026-11-01T08:00:05Z", shard_count=4,
                           listed=900, requests=2, shards=(ShardProof(0, 3, 30, 30),))
    spawns.catch_up[n1] = CatchUpReport(s["id"], position="2026-11-01T08:00:00Z",
                                        caught_up_to="2026-11-01T08:00:00Z", census=running)
    spawns.polls.clear()
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    (duty,) = spawns.polls[0][1].catch_up
    assert (duty.census_shards, duty.census_after, duty.census_every_s) == (4, None, 3600.0)   # the first: at once
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json["census"]
    assert shown["state"] == "running" and shown["last"] is None
    assert (shown["running"]["shards_done"], shown["running"]["listed"]) == (1, 900)

    proofs = (ShardProof(0, 3, 30, 30), ShardProof(1, 2, 20, 20, repaired=5), ShardProof(2, 1, 5, 5),
              ShardProof(3, 1, 4, 4, extra=1, extra_ids=(77,)))
    spawns.catch_up[n1] = CatchUpReport(s["id"], position="2026-11-01T08:00:00Z",
                                        caught_up_to="2026-11-01T08:00:00Z",
                                        census=CensusReport(cut=running.cut, started_at=running.started_at,
                                                            shard_count=4, finished_at="2026-11-01T08:01:00Z",
                                                            listed=59, requests=4, shards=proofs))
    poller.poll_once(hub_maker, spawns, config, state=state)
    spawns.polls.clear()
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    (duty,) = spawns.polls[0][1].catch_up
    assert duty.census_after == "2026-11-01T09:01:00Z"                  # its end plus the interval
    shown = api.simulate_get(f"/v1/sets/{s['id']}").json["census"]
    assert (shown["state"], shown["running"], shown["next_at"]) == ("unproven", None, "2026-11-01T09:01:00Z")
    assert (shown["last"]["proven_shards"], shown["last"]["revisions"], shown["last"]["repaired"],
            shown["last"]["extra"]) == (3, 59, 5, 1)
    assert shown["last"]["per_shard"][3]["extra_ids"] == [77]
    metrics = api.simulate_get("/metrics").text
    assert f'bw_set_census_shards{{set="{s["id"]}",state="unproven"}} 1.0' in metrics

    # the set's own interval: 0 turns its census off
    patched = api.simulate_patch(f"/v1/sets/{s['id']}", json={"census_interval_s": 0})
    assert (patched.status_code, patched.json["census_interval_s"], patched.json["census"]["next_at"]) == \
        (200, 0, None)
    spawns.polls.clear()
    poller.poll_once(hub_maker, spawns, config, state=state)            # type: ignore[arg-type]
    assert spawns.polls[0][1].catch_up[0].census_shards == 0
    back = api.simulate_patch(f"/v1/sets/{s['id']}", json={"census_interval_s": None}).json
    assert back["census_interval_s"] is None and back["census"]["next_at"] == "2026-11-01T09:01:00Z"


@pytest.mark.parametrize("body, field", [
    ({"census_interval_s": -1}, "census_interval_s"),
    ({"census_interval_s": "daily"}, "census_interval_s"),
    ({"census_interval_s": 400 * 86400}, "census_interval_s"),
    ({"kind": "category", "category": "Islands", "census_interval_s": 60}, "census_interval_s"),
])
def test_a_census_interval_is_checked(api, tenant, body, field):
    resp = create(api, tenant, **body)
    assert (resp.status_code, resp.json["error"]["field"]) == (422, field), resp.json
