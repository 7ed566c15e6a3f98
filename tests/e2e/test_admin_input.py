"""Bad admin input against the real `blackwidow serve` (gunicorn) on PostgreSQL: schemathesis generates
well over 1,000 requests from /openapi.json, valid and invalid, and none may get a 5xx; every 4xx carries the
error JSON, and a 422 names the field at fault. Then the classic abuses one by one: oversized bodies
(declared and chunked), wrong content types, unknown fields, negative quotas, titles over 255 bytes,
invalid UTF-8."""
import json

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.e2e.cluster import LOCAL_WIKI
from tests.support.processes import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MAX_BODY = 64 * 1024
EXAMPLES = 50                  # per operation and generation mode
WIKI = f"http://{LOCAL_WIKI}/api.php"


@pytest.fixture
def hub(make_cluster):
    cluster = make_cluster(hub_env={"BW_MAX_BODY_BYTES": str(MAX_BODY)})
    # with its scheduler: /health tells a load balancer 503 while no scheduler leads (docs/coordination.md)
    cluster.hub.start("1")
    cluster.hub.wait_leader()
    wait_for(cluster.hub.healthy, 60, 0.2, "the hub's /health to say 200")
    return cluster


def _error_problem(resp: requests.Response, sent: dict) -> str | None:
    """Why a 4xx answer is not the documented error JSON naming the field (None when it is)."""
    try:
        error = resp.json()["error"]
        assert isinstance(error["code"], str) and isinstance(error["message"], str) and "field" in error
    except (ValueError, KeyError, TypeError, AssertionError):
        return f"{resp.status_code} without the error JSON: {resp.text[:200]!r}"
    if resp.status_code == 422 and error["field"] not in sent:
        return f"422 naming {error['field']!r}, which is not among {sorted(sent, key=str)}: {error['message']}"
    return None


def _names_sent(case, op) -> set:
    """Every name a 422 may blame: body keys and documented properties, query and path parameters; None
    when the body is JSON but no object (then no field is at fault)."""
    names = set((case.query or {}).keys()) | set((case.path_parameters or {}).keys())
    body = case.body if isinstance(case.body, dict) else {}
    names |= set(body)
    if op.definition.raw.get("requestBody") and not isinstance(case.body, dict):
        names.add(None)
    for param in op.definition.raw.get("parameters", []):
        names.add(param["name"])
    schema = op.definition.raw.get("requestBody", {}).get("content", {}).get("application/json", {}) \
        .get("schema", {})
    # one body schema, or several (POST /v1/subscriptions: one article, or kind pages)
    for ref in [schema.get("$ref"), *(s.get("$ref") for s in schema.get("oneOf", []))]:
        if ref:
            names |= set(op.schema.raw_schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
    return names


def test_generated_requests_never_get_a_5xx_and_4xx_name_the_field(hub, record_property):
    cluster = hub
    schema = schemathesis.openapi.from_url(f"{cluster.hub.url}/openapi.json", timeout=10)
    http = requests.Session()
    tokens = {"adminToken": cluster.admin_token, "nodeSecret": cluster.node_secret}
    sent, statuses, problems = 0, {}, []

    for result in schema.get_all_operations():
        op = result.ok()
        security = op.definition.raw.get("security", schema.raw_schema["security"])
        scheme = next(iter(security[0]), None) if security else None
        headers = {"Authorization": f"Bearer {tokens[scheme]}"} if scheme else {}
        inputs = op.definition.raw.get("parameters") or op.definition.raw.get("requestBody")
        modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE) if inputs else (GenerationMode.POSITIVE,)
        for mode in modes:
            @settings(max_examples=EXAMPLES, database=None, deadline=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            @given(case=op.as_strategy(generation_mode=mode))
            def run(case):
                nonlocal sent
                resp = case.call(base_url=cluster.hub.url, session=http, headers=headers, timeout=30)
                sent += 1
                statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
                where = f"{op.label} [{mode.value}] {case.as_curl_command(headers=headers)}"
                if resp.status_code >= 500:
                    problems.append(f"{resp.status_code} {where}: {resp.text[:200]}")
                elif resp.status_code >= 400:
                    problem = _error_problem(resp, _names_sent(case, op))
                    if problem:
                        problems.append(f"{problem} for {where}")
            try:
                run()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE      # nothing to get wrong in a call without inputs

    print(f"\nschemathesis: {sent} requests, statuses {dict(sorted(statuses.items()))}")
    record_property("generated_requests", sent)
    assert sent >= 1000
    assert not problems, "\n".join(problems[:20])
    assert all(status < 500 for status in statuses)


# -- the classic abuses, one by one -----------------------------------------------------------------------

def _post(cluster, path: str, data, content_type="application/json", **headers):
    headers = {"Authorization": f"Bearer {cluster.admin_token}", "Content-Type": content_type, **headers}
    return requests.post(f"{cluster.hub.url}{path}", data=data, timeout=30, headers=headers)


def _assert_error(resp, status: int, field=None) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    error = resp.json()["error"]
    assert error["field"] == field, error
    return error


def test_oversized_bodies_wrong_types_unknown_fields_bad_quotas_long_titles_invalid_utf8(hub):
    cluster = hub
    tenant = cluster.tenant("abuse")
    body = lambda **kw: json.dumps(kw).encode()      # noqa: E731

    # oversized: declared, and streamed without a length (chunked)
    big = body(name="x" * (MAX_BODY + 10))
    _assert_error(_post(cluster, "/v1/tenants", big), 413)
    _assert_error(_post(cluster, "/v1/tenants", iter([big[i:i + 8192] for i in range(0, len(big), 8192)])),
                  413)
    chunked = _post(cluster, "/v1/tenants", iter([b'{"name": ', b'"chunked"}']))    # a small one is read
    assert chunked.status_code == 201, chunked.text
    _assert_error(_post(cluster, "/v1/subscriptions/bulk", body(
        tenant_id=tenant["id"], wiki=WIKI, items=[{"title": f"Article {i}"} for i in range(5000)])), 413)

    # wrong content types
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                  "application/xml", "application/json; charset=latin-1", ""):
        _assert_error(_post(cluster, "/v1/tenants", body(name="typed"), content_type=ctype), 415)

    # unknown fields, at the top and inside bulk items
    _assert_error(_post(cluster, "/v1/tenants", body(name="n", colour="red")), 422, "colour")
    items = [{"title": "A"}, {"title": "B", "colour": 1}]
    bulk = body(tenant_id=tenant["id"], wiki=WIKI, items=items)
    error = _assert_error(_post(cluster, "/v1/subscriptions/bulk", bulk), 422, "items")
    assert [(e["index"], e["field"]) for e in error["items"]] == [(1, "colour")]

    # negative, fractional, boolean and out-of-range quotas
    for quota in (-1, -(2 ** 63), 1.5, True, "10", 2 ** 63):
        _assert_error(_post(cluster, "/v1/tenants", body(name=f"q{quota!r}", quota=quota)), 422, "quota")
        sub = body(tenant_id=tenant["id"], wiki=WIKI, title="Q", quota=quota)
        _assert_error(_post(cluster, "/v1/subscriptions", sub), 422, "quota")
    resp = requests.patch(f"{cluster.hub.url}/v1/tenants/{tenant['id']}", json={"quota": -5}, timeout=10,
                          headers={"Authorization": f"Bearer {cluster.admin_token}"})
    _assert_error(resp, 422, "quota")

    # titles: 255 UTF-8 bytes is the limit (MediaWiki's), in characters of any width
    for title in ("é" * 128, "x" * 256, "東" * 86, "🕷" * 64):
        assert len(title.encode()) > 255
        sub = body(tenant_id=tenant["id"], wiki=WIKI, title=title)
        _assert_error(_post(cluster, "/v1/subscriptions", sub), 422, "title")
    ok = _post(cluster, "/v1/subscriptions", body(tenant_id=tenant["id"], wiki=WIKI, title="X" + "é" * 127))
    assert ok.status_code == 201, ok.text

    # invalid UTF-8, lone surrogates, overlong encodings; and broken JSON
    for raw in (b'{"name": "\xff\xfe"}', b'{"name": "\xc0\xaf"}', b'{"name": "\xed\xa0\x80"}',
                b'{"name": "\\ud800"}', b'{"name": "a", "name": "b"}', b'{"name": NaN}', b'{"name": ',
                b"[" * 50_000, b"", b"   "):
        _assert_error(_post(cluster, "/v1/tenants", raw), 400)
    _assert_error(_post(cluster, "/v1/tenants", b'["not", "an", "object"]'), 422)

    # none of the refusals created anything
    names = {t["name"] for t in cluster.hub.get("/v1/tenants")["items"]}
    assert names == {"abuse", "chunked"}
    assert [s["title"] for s in cluster.hub.subscriptions()] == ["X" + "é" * 127]
