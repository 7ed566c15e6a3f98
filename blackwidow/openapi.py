"""The OpenAPI 3.0 document served at /openapi.json. Request schemas come from blackwidow.validation's
field specs, so what is documented is what is enforced; tests check routes and responses against it."""
from blackwidow import validation
from blackwidow.upstream import settings as identity_input
from shared.wire import STATES

_TS = {"type": "string", "format": "date-time"}
_NULL_TS = {**_TS, "nullable": True}
_ID = {"type": "string", "format": "uuid"}
_QUOTA = {"type": "integer", "nullable": True, "minimum": 0}


def _obj(props: dict, required=None, **extra) -> dict:
    return {"type": "object", "properties": props, "required": list(required or props), **extra}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


SCHEMAS = {
    "Error": _obj({"error": _obj({
        "code": {"type": "string"}, "message": {"type": "string"},
        "field": {"type": "string", "nullable": True},
        "items": {"type": "array", "description": "Bulk requests: every refused item.",
                  "items": _obj({"index": {"type": "integer"}, "code": {"type": "string"},
                                 "message": {"type": "string"},
                                 "field": {"type": "string", "nullable": True}})},
    }, required=["code", "message", "field"])}),
    "Tenant": _obj({
        "id": _ID, "name": {"type": "string"}, "quota": _QUOTA, "weight": identity_input.WEIGHT_SCHEMA,
        "used": {"type": "integer", "description": "Revisions harvested over all its subscriptions."},
        "leased": {"type": "integer", "description": "Quota leased to spawns and not delivered yet "
                   "(as of the scheduler's last tick; 0 without a quota). used + leased <= quota."},
        "subscriptions": {"type": "integer", "description": "Number of subscriptions."},
        "created_at": _TS, "updated_at": _TS}),
    "Subscription": _obj({
        "id": _ID, "tenant_id": _ID,
        "wiki": {"type": "string", "description": "Canonical api.php URL."},
        "title": {"type": "string", "description": "The title as typed ('_' as space, trimmed; case kept)."},
        "source_uuid": {**_ID, "description": "uuid5(canonical wiki URL + title as typed); shared by every "
                        "tenant that typed the same title."},
        "page_key": {**_ID, "nullable": True, "readOnly": True,
                     "description": "source_uuid of the article the wiki resolved the title to (a redirect's "
                     "target), once a spawn reported it; it follows the page when the page is moved. "
                     "Subscriptions route on it when known."},
        "quota": _QUOTA, "content": {"type": "boolean"}, "enabled": {"type": "boolean"},
        "state": {"type": "string", "enum": list(STATES),
                  "description": "`deleted`: the page was deleted on the wiki; its node re-checks it once per "
                  "longest revisit interval and resumes the harvest when it is undeleted."},
        "node": {**_ID, "nullable": True, "description": "Node it is assigned to."},
        "revisions": {"type": "integer", "description": "Revisions harvested so far."},
        "last_rev_id": {"type": "integer", "nullable": True},
        "last_error": {"type": "string", "nullable": True},
        "complete": {"type": "boolean", "nullable": True, "readOnly": True,
                     "description": "Whether its node compared the page's stored history with the wiki's, by "
                     "revision id, and found it equal (after writing the revisions missing from the store: an "
                     "undeletion, a history merge or an import with old timestamps). Checked once the history "
                     "is caught up, then once per longest revisit interval. false: the store holds revisions "
                     "the wiki no longer shows; null: not checked yet."},
        "settled": {"type": "boolean", "nullable": True, "readOnly": True,
                    "description": "Its node has the page's history up to now and no change the wiki's feed "
                    "routed to it is waiting (null: not reported yet)."},
        "watermark": {**_NULL_TS, "readOnly": True,
                      "description": "Freshness watermark: every revision of the page up to this time (the "
                      "wiki's clock) is known to be stored. While settled it is its wiki feed's watermark "
                      "(GET /v1/feeds); while its node catches up, the one it had when last settled. null: "
                      "its wiki's feed is not followed (BW_FEED_INTERVAL_S=0) or not read yet."},
        "created_at": _TS, "updated_at": _TS}),
    "Feed": _obj({
        "wiki": {"type": "string", "description": "The wiki's api.php URL."},
        "position": {"type": "string", "nullable": True,
                     "description": "`<YYYYmmddHHMMSS>|<rcid>` of the last recentchanges entry whose changes were "
                     "routed to the nodes fetching those pages and delivered."},
        "watermark": {**_NULL_TS, "description": "Nothing before this time (the wiki's clock) is unread."},
        "lag_s": {"type": "number", "nullable": True, "description": "Seconds from the watermark to now."},
        "reader": {**_ID, "nullable": True, "description": "The node reading the feed for the cluster."},
        "reported_at": {**_NULL_TS, "description": "When the reader last reported (a report that changed nothing "
                        "else is written once per BW_FEED_INTERVAL_S or BW_POLL_INTERVAL_S, the longer)."},
        "error": {"type": "string", "nullable": True, "description": "Why the reader's last read failed."},
        "changes": {"type": "integer", "description": "Changed pages read and routed."},
        "gaps": {"type": "integer", "description": "Spans the feed no longer covered (the wiki forgot them, "
                 "$wgRCMaxAge): every page of the wiki was then checked one by one."},
        "last_gap": {"type": "string", "nullable": True, "description": "`<start>/<end>` of the latest gap."},
        "subscriptions": {"type": "integer", "description": "Enabled subscriptions on the wiki."},
        "requests": {"type": "integer", "description": "Requests the reader spent on the feed since it took it "
                     "(a new reader starts at 0), as of reported_at."}}),
    "Node": _obj({
        "id": _ID, "url": {"type": "string"}, "state": {"type": "string"},
        "last_seen": {**_NULL_TS, "description": "Last successful poll."}, "registered_at": _TS,
        "consecutive_failures": {"type": "integer"},
        "subscriptions": {"type": "integer", "description": "Subscriptions assigned to it."},
        "clock": {**_obj({
            "offset_s": {"type": "number", "description": "The node's wall clock less the hub's at its last poll."},
            "error_s": {"type": "number", "description": "How far off offset_s may be: half the poll's round trip."},
            "consensus_s": {"type": "number", "description": "What nodes are judged against: the median of the "
                            "hub's own offset (0) and the live nodes' offsets."},
            "bound_s": {"type": "number", "description": "BW_MAX_CLOCK_SKEW_S."},
            "trusted": {"type": "boolean", "description": "Upstream budgets give the node slot holds: its clock "
                        "is not certainly beyond bound_s of consensus_s (docs/upstream.md, \"Clocks\")."}}),
                  "nullable": True, "description": "Not measured yet: null."}}),
    "RegistrationAck": _obj({"id": _ID, "poll_interval_s": {"type": "number"},
                             "detach_after_s": {"type": "number"}, "orphan_after_s": {"type": "number"}}),
    "Health": _obj({"status": {"type": "string", "enum": ["ok", "unavailable"]},
                    "database": {"type": "string", "enum": ["ok", "unreachable"]},
                    "scheduler": {"type": "string",
                                  "enum": ["ok", "unknown", "absent", "no_leader", "starting", "stalled"]},
                    "reason": {"type": "string", "description": "Why the hub is unavailable (503 only)."},
                    "last_tick_age_s": {"type": "number",
                                        "description": "Seconds since the leader's last finished tick."},
                    "stale_after_s": {"type": "number",
                                      "description": "Older than this, the leader counts as wedged."}},
                   required=["status", "database", "scheduler"]),
    "TenantCreate": validation.schema(validation.TENANT_CREATE),
    "TenantPatch": validation.schema(validation.TENANT_PATCH),   # + weight, below
    "SubscriptionCreate": validation.schema(validation.SUBSCRIPTION_CREATE),
    "SubscriptionPatch": validation.schema(validation.SUBSCRIPTION_PATCH),
    "SubscriptionBulk": validation.schema(validation.BULK_CREATE),
    "NodeRegistration": validation.schema(validation.NODE_REGISTER),
}
for _name in ("Tenant", "Subscription"):
    SCHEMAS[_name + "Page"] = _obj({"items": {"type": "array", "items": _ref(_name)},
                                    "next_cursor": {"type": "string", "nullable": True,
                                                    "description": "Pass as `cursor` for the next page."}})
SCHEMAS["NodeList"] = _obj({"items": {"type": "array", "items": _ref("Node")}})
SCHEMAS["FeedList"] = _obj({"items": {"type": "array", "items": _ref("Feed")}})
_RATE = {"type": "number", "description": "Per second, over the current runs of the files being read."}
_DUMP_COUNTS = {
    "bytes_read": {"type": "integer", "description": "Compressed bytes read (a resumed file is read from its "
                   "start again: compressed streams cannot be entered in the middle)."},
    "bytes_total": {"type": "integer", "nullable": True, "description": "Compressed size, once known."},
    "revisions_read": {"type": "integer", "description": "Revisions parsed by the current runs."},
    "revisions_written": {"type": "integer", "description": "Revisions durably written (up to each file's "
                          "resume point)."},
    "revisions_per_s": _RATE, "bytes_per_s": _RATE}
SCHEMAS["DumpFile"] = _obj({
    "id": _ID, "position": {"type": "integer", "description": "Its place in the set's `dumps` list."},
    "url": {"type": "string"},
    "state": {"type": "string", "enum": ["pending", "reading", "done", "failed"]},
    "node": {**_ID, "nullable": True, "description": "The node reading it."},
    "pages_written": {"type": "integer", "description": "Pages of the file written, in dump order: where a "
                      "reading resumes, on any node."},
    **_DUMP_COUNTS,
    "error": {"type": "string", "nullable": True, "description": "Why its last reading failed (DumpNotFound, "
              "DumpStalled, DumpCorrupt, DumpSchemaUnknown, DumpWrongWiki: docs/dumps.md)."},
    "attempts": {"type": "integer", "description": "Failed readings so far."},
    "retry_at": {**_NULL_TS, "description": "A failed file is read again from its resume point after this."},
    "reported_at": _NULL_TS, "finished_at": _NULL_TS})
SCHEMAS["WikiSet"] = _obj({
    "id": _ID, "kind": {"type": "string", "enum": list(validation.SET_KINDS)}, "tenant_id": _ID,
    "wiki": {"type": "string"},
    "namespaces": {"type": "array", "items": {"type": "integer"}, "nullable": True,
                   "description": "kind namespace: the namespaces it holds; null: every one."},
    "dbname": {"type": "string", "nullable": True}, "content": {"type": "boolean"}, "enabled": {"type": "boolean"},
    "parallel": {"type": "integer"},
    "state": {"type": "string", "enum": ["listing", "bootstrapping", "failed", "catching_up", "following", "dumped",
                                         "disabled"],
              "description": "listing: a category set whose members are not known yet; "
                             "failed: a file failed (it is retried; the set never counts as read until it is); "
                             "catching_up: every file is written and the wiki is read from dumped_at on; "
                             "following: that read reached the present, and what is new is read as it comes; "
                             "dumped: every file is written and the dump's date is unknown (nothing read after)."},
    "dumped_at": {**_NULL_TS, "description": "The dump's date: the catch-up reads every revision from it on."},
    "created_at": _TS,
    "progress": _obj({"files": {"type": "integer"}, "files_done": {"type": "integer"},
                      "files_failed": {"type": "integer"}, "files_reading": {"type": "integer"},
                      "pages_written": {"type": "integer"}, **_DUMP_COUNTS,
                      "eta_s": {"type": "number", "nullable": True, "description": "Seconds left at the current "
                                "byte rate, once every file's size is known."}}),
    "files": {"type": "array", "items": _ref("DumpFile")},
    "catch_up": _obj({
        "node": {**_ID, "nullable": True, "description": "The node reading the wiki on from the dump."},
        "position": {**_NULL_TS, "description": "Every revision before it is written."},
        "caught_up_to": {**_NULL_TS, "description": "The wiki's clock at the end of the last read that found "
                         "nothing more: every revision up to it is written."},
        "revisions_written": {"type": "integer"},
        "requests": {"type": "integer", "description": "Spent by its current reader."},
        "error": {"type": "string", "nullable": True}, "reported_at": _NULL_TS}, nullable=True),
    "census_interval_s": {"type": "integer", "nullable": True, "description": "The set's own seconds between "
                          "censuses; 0: none; null: the deployment's BW_CENSUS_INTERVAL_S."},
    "census": _obj({
        "state": {"type": "string", "enum": ["running", "proven", "unproven"],
                  "description": "proven: at the last census every shard's stored history equalled the wiki's "
                                 "up to its cut; unproven: a shard differed (see per_shard)."},
        "last": _obj({
            "cut": _TS, "started_at": _TS, "finished_at": _TS,
            "shards": {"type": "integer"}, "proven_shards": {"type": "integer"},
            "pages": {"type": "integer"},
            "revisions": {"type": "integer", "description": "The wiki's, up to the cut."},
            "stored": {"type": "integer"},
            "repaired": {"type": "integer", "description": "Written by the census: they were missing."},
            "missing": {"type": "integer"},
            "extra": {"type": "integer", "description": "Stored, not listed by the wiki."},
            "requests": {"type": "integer", "description": "The listing's and every shard's repair."},
            "nodes": {"type": "integer", "description": "The nodes that proved its shards."},
            "per_shard": {"type": "array", "items": _obj({
                "shard": {"type": "integer"}, "pages": {"type": "integer"}, "wiki": {"type": "integer"},
                "stored": {"type": "integer"}, "repaired": {"type": "integer"}, "missing": {"type": "integer"},
                "extra": {"type": "integer"}, "proven": {"type": "boolean"},
                "requests": {"type": "integer", "description": "The shard's repair."},
                "node": {**_ID, "nullable": True, "description": "The node that proved it."},
                "extra_ids": {"type": "array", "items": {"type": "integer"}},
                "missing_ids": {"type": "array", "items": {"type": "integer"}}})}}, nullable=True),
        "running": _obj({"cut": _TS, "started_at": _TS, "shards": {"type": "integer"},
                         "listed_whole": {"type": "boolean", "description": "The listing is whole: its shards "
                                          "are being proven on the nodes."},
                         "shards_done": {"type": "integer"}, "listed": {"type": "integer"},
                         "requests": {"type": "integer"}}, nullable=True),
        "next_at": {**_NULL_TS, "description": "When the next census may start."}},
        nullable=True, description="The proof, shard by shard (page-id hash buckets), that the stored history "
                                   "equals the wiki's (docs/dumps.md, \"The census\")."),
    "category": {"type": "string", "nullable": True, "description": "kind category: the category's title."},
    "depth": {"type": "integer", "nullable": True, "description": "kind category: levels of subcategories "
              "whose pages count too."},
    "members": _obj({
        "node": {**_ID, "nullable": True, "description": "The node listing the category's members."},
        "listed": {"type": "integer", "description": "Pages in the listing held whole."},
        "read_at": {**_NULL_TS, "description": "When its node last read the listing."},
        "requests": {"type": "integer", "description": "Spent on listings by its current node."},
        "error": {"type": "string", "nullable": True, "description": "Why the last listing failed (the one "
                  "before it stands)."},
        "pages": {"type": "integer", "description": "Members the set holds."},
        "subscribed": {"type": "integer", "description": "Members with a subscription (the set's own, or one "
                       "the tenant made itself)."},
        "complete": {"type": "integer", "description": "Members whose stored history is proven equal to the "
                     "wiki's."},
        "states": {"type": "object", "additionalProperties": {"type": "integer"},
                   "description": "The members' subscriptions by state."}}, nullable=True)})
SCHEMAS["WikiSetList"] = _obj({"items": {"type": "array", "items": _ref("WikiSet")}})
SCHEMAS["WikiSetCreate"] = validation.schema(validation.WIKI_SET_CREATE)
SCHEMAS["WikiSetPatch"] = validation.schema(validation.WIKI_SET_PATCH)
SCHEMAS["Reload"] = _obj({"id": {"type": "integer"}, "kind": {"type": "string", "enum": ["hard", "soft"]},
                          "reason": {"type": "string"}, "sends": {"type": "integer"},
                          "drops": {"type": "integer"}, "at": _TS})
SCHEMAS["Dashboard"] = _obj({
    "generated_at": _TS,
    "nodes": {"type": "array", "items": _ref("Node"), "description": "Live nodes first, then by url."},
    "subscriptions": _obj({
        "total": {"type": "integer"},
        "revisions": {"type": "integer", "description": "Harvested over all subscriptions."},
        "by_state": _obj({name: {"type": "integer"} for name in STATES}),
        "state": {"type": "string", "enum": [*STATES, None], "nullable": True,
                  "description": "The `state` filter applied to `recent`."},
        "recent": {"type": "array", "description": "Most recently changed first.", "items": {"allOf": [
            _ref("Subscription"), _obj({"tenant": {"type": "string", "description": "Tenant name."}})]}}}),
    "tenants": _obj({"total": {"type": "integer"},
                     "items": {"type": "array", "items": _ref("Tenant"),
                               "description": "Most revisions harvested first."}}),
    "reloads": {"type": "array", "items": _ref("Reload"), "description": "Newest first."},
    "identities": {"type": "array", "items": _ref("Identity"),
                   "description": "Upstream identities by host: limits, windows held, pauses."}})
SCHEMAS["TenantPatch"]["properties"]["weight"] = identity_input.WEIGHT_SCHEMA
_NUM = {"type": "number"}
SCHEMAS["IdentityPut"] = identity_input.schema(patch=False)
SCHEMAS["IdentityPatch"] = identity_input.schema(patch=True)
SCHEMAS["Identity"] = _obj({
    "id": {"type": "string", "description": "The wiki's host[:port]: what the wiki meters, with the credential."},
    "credential": {"type": "string", "nullable": True,
                   "description": "Name of the credential the spawns use (never the secret); null: anonymous."},
    "in_flight": {"type": "integer"}, "per_s": _NUM, "per_min": {"type": "integer", "nullable": True},
    "slow_after_s": _NUM, "slow_wait_s": _NUM, "maxlag": {"type": "integer"},
    "rate_per_s": {**_NUM, "description": "Binding rate R = min(per_s, per_min / 60) x 0.95 over all nodes."},
    "configured": {"type": "boolean", "description": "false: no row yet, the host's defaults apply."},
    "gen": {"type": "integer", "description": "Generation of the budgets sent last."},
    "subscriptions": {"type": "integer", "description": "Subscriptions on this wiki."},
    "in_use": {"type": "integer", "description": "Slots held by nodes right now."},
    "windows": {"type": "array", "description": "Slot windows handed out and not ended, by start.",
                "items": _obj({"node": _ID, "slot": {"type": "integer"}, "start": _TS, "end": _TS,
                               "rate_per_s": _NUM})},
    "paused_until": {**_NULL_TS, "description": "A 429, Retry-After or maxlag a node saw pauses every node."},
    "pause_reason": {"type": "string", "nullable": True},
    "auth_error": {"type": "string", "nullable": True, "description": "The wiki refused the credential."},
    "auth_error_node": {**_ID, "nullable": True, "description": "The node that saw the refusal."},
    "created_at": _NULL_TS, "updated_at": _NULL_TS})
SCHEMAS["IdentityList"] = _obj({"items": {"type": "array", "items": _ref("Identity")}})
SCHEMAS["SubscriptionPages"] = validation.schema(validation.PAGES_CREATE)
_INDEX = {"type": "integer", "description": "The item's position in `titles`, from 0."}
_AS_SENT = {"type": "string", "description": "The title as sent."}
SCHEMAS["PagesResult"] = _obj({
    "kind": {"type": "string", "enum": ["pages"]}, "tenant_id": _ID,
    "wiki": {"type": "string", "description": "Canonical api.php URL."},
    "case": {"type": "string", "enum": list(validation.PAGES_CASES)},
    "requested": {"type": "integer", "description": "Number of titles sent."},
    "created": {"type": "array", "description": "Subscriptions created, in request order.",
                "items": _obj({"index": _INDEX, "title": _AS_SENT, "id": _ID})},
    "refused": {"type": "array", "description": "Titles refused, in request order; nothing was created for them.",
                "items": _obj({
                    "index": _INDEX, "title": _AS_SENT, "field": {"type": "string", "enum": ["title"]},
                    "reason": {"type": "string", "enum": ["malformed_title", "duplicate", "already_subscribed"]},
                    "message": {"type": "string"},
                    "duplicate_of": {"type": "integer", "nullable": True,
                                     "description": "duplicate: the earlier item naming the same page."},
                    "subscription_id": {**_ID, "nullable": True,
                                        "description": "already_subscribed: the tenant's subscription to it."}})}})
SCHEMAS["BulkCreated"] = _obj({"items": {"type": "array", "items": _ref("Subscription")},
                               "count": {"type": "integer"}})

_ERRORS = {
    "400": "Malformed JSON, invalid UTF-8 or empty body.",
    "401": "Missing or wrong bearer token.",
    "404": "No such resource.",
    "409": "Conflict with an existing resource.",
    "413": "Body larger than BW_MAX_BODY_BYTES.",
    "415": "Content-Type is not application/json.",
    "422": "Invalid field; `error.field` names it.",
}


def _json(schema: dict) -> dict:
    return {"content": {"application/json": {"schema": schema}}}


def _op(summary: str, ok: str, schema: str | None, *, body: str | None = None, errors=(), params=(),
        security=None) -> dict:
    content = _json(_ref(schema)) if schema else {}
    responses: dict[str, dict] = {ok: {"description": "Success", **content}}
    op: dict[str, object] = {"summary": summary, "responses": responses}
    for code in errors:
        responses[code] = {"description": _ERRORS[code], **_json(_ref("Error"))}
    if body:
        op["requestBody"] = {"required": True, **_json(_ref(body))}
    if params:
        op["parameters"] = list(params)
    if security is not None:
        op["security"] = security
    return op


def _query(name: str, schema: dict, description: str) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _path(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": _ID}


_PAGING = (_query("limit", {"type": "integer", "minimum": 1, "maximum": validation.MAX_LIMIT,
                            "default": validation.DEFAULT_LIMIT}, "Page size."),
           _query("cursor", {"type": "string"}, "`next_cursor` of the previous page."))
_READ = ("401", "404")
_WRITE = ("400", "401", "404", "413", "415", "422")


def document() -> dict:
    tenant, sub, node, wiki_set = _path("tenant_id"), _path("sub_id"), _path("node_id"), _path("set_id")
    identity = {"name": "identity_id", "in": "path", "required": True, "schema": {"type": "string"},
                "description": "The wiki's host[:port], e.g. en.wikipedia.org."}
    put_identity = _op("Set every limit of an identity (the host's defaults for those left out); 201 when "
                       "created", "200", "Identity", body="IdentityPut", errors=_WRITE, params=[identity])
    put_identity["responses"]["201"] = put_identity["responses"]["200"]
    register = _op("Register a spawn (idempotent by url: 201 the first time, 200 after)", "200",
                   "RegistrationAck", body="NodeRegistration",
                   errors=("400", "401", "409", "413", "415", "422"), security=[{"nodeSecret": []}])
    register["responses"]["201"] = register["responses"]["200"]
    subscribe = _op("Subscribe a tenant to an article, (`kind: pages`) to a list of articles on one wiki, or "
                    "(`kind: wiki`) to a whole wiki bootstrapped from its dump files",
                    "201", None, errors=("400", "401", "409", "413", "415", "422"))
    either = {"oneOf": [_ref("SubscriptionCreate"), _ref("SubscriptionPages"), _ref("WikiSetCreate")]}
    subscribe["requestBody"] = {"required": True, **_json(either)}
    subscribe["responses"]["201"] = {
        "description": "kind page: the subscription; kind pages: every title was created; kind wiki: the set "
                       "subscription (Location: /v1/sets/{id})",
        **_json({"oneOf": [_ref("Subscription"), _ref("PagesResult"), _ref("WikiSet")]})}
    subscribe["responses"]["207"] = {
        "description": "kind pages: some or all titles were refused (`refused` says which and why); the "
                       "others were created", **_json(_ref("PagesResult"))}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Black Widow hub admin API", "version": "1",
                 "description": "Tenants, subscriptions and spawn nodes of the hub. Errors are "
                                "{\"error\": {\"code\", \"message\", \"field\"}}."},
        "components": {
            "securitySchemes": {
                "adminToken": {"type": "http", "scheme": "bearer", "description": "BW_ADMIN_TOKEN"},
                "nodeSecret": {"type": "http", "scheme": "bearer", "description": "BW_NODE_SECRET"}},
            "schemas": SCHEMAS,
        },
        "security": [{"adminToken": []}],
        "paths": {
            "/v1/tenants": {
                "get": _op("List tenants", "200", "TenantPage", errors=("401", "422"), params=_PAGING),
                "post": _op("Create a tenant", "201", "Tenant", body="TenantCreate",
                            errors=("400", "401", "409", "413", "415", "422")),
            },
            "/v1/tenants/{tenant_id}": {
                "get": _op("Get a tenant", "200", "Tenant", errors=_READ, params=[tenant]),
                "patch": _op("Change a tenant's name, quota or weight", "200", "Tenant", body="TenantPatch",
                             errors=_WRITE + ("409",), params=[tenant]),
                "delete": _op("Delete a tenant and its subscriptions", "204", None, errors=_READ,
                              params=[tenant]),
            },
            "/v1/subscriptions": {
                "get": _op("List subscriptions", "200", "SubscriptionPage", errors=("401", "422"), params=(
                    _query("tenant_id", _ID, "Only this tenant's."),
                    _query("state", {"type": "string", "enum": list(STATES)}, "Only in this state."),
                    _query("node", _ID, "Only those assigned to this node."), *_PAGING)),
                "post": subscribe,
            },
            "/v1/subscriptions/bulk": {
                "post": _op("Subscribe to many articles at once (all or nothing; top-level tenant_id, wiki, "
                            "quota and content are defaults for the items)", "201", "BulkCreated",
                            body="SubscriptionBulk", errors=("400", "401", "413", "415", "422")),
            },
            "/v1/subscriptions/{sub_id}": {
                "get": _op("Get a subscription", "200", "Subscription", errors=_READ, params=[sub]),
                "patch": _op("Disable, re-enable, change quota or content", "200", "Subscription",
                             body="SubscriptionPatch", errors=_WRITE, params=[sub]),
                "delete": _op("Delete a subscription", "204", None, errors=_READ, params=[sub]),
            },
            "/v1/sets": {
                "get": _op("List set subscriptions (`kind: wiki`) with their dump bootstraps' progress", "200",
                           "WikiSetList", errors=("401", "422"), params=(
                               _query("tenant_id", _ID, "Only this tenant's."),)),
            },
            "/v1/sets/{set_id}": {
                "get": _op("Get a set subscription: state, progress in total and per dump file", "200", "WikiSet",
                           errors=_READ, params=[wiki_set]),
                "patch": _op("Stop (enabled false) or resume its reading", "200", "WikiSet", body="WikiSetPatch",
                             errors=_WRITE, params=[wiki_set]),
                "delete": _op("Delete a set subscription (the revisions it stored stay)", "204", None,
                              errors=_READ, params=[wiki_set]),
            },
            "/v1/identities": {
                "get": _op("List upstream identities (wikis with a row or a subscription)", "200", "IdentityList",
                           errors=("401", "422")),
            },
            "/v1/identities/{identity_id}": {
                "get": _op("Get an identity: limits, credential name, windows held, pause", "200", "Identity",
                           errors=_READ, params=[identity]),
                "put": put_identity,
                "patch": _op("Change some limits of an identity, or lift its pause", "200", "Identity",
                             body="IdentityPatch", errors=_WRITE, params=[identity]),
            },
            "/v1/feeds": {
                "get": _op("List the wikis' change feeds: reader, position, watermark and lag", "200", "FeedList",
                           errors=("401", "422")),
            },
            "/v1/nodes": {
                "get": _op("List spawn nodes", "200", "NodeList", errors=("401", "422")),
                "post": register,
            },
            "/v1/nodes/{node_id}": {
                "get": _op("Get a spawn node", "200", "Node", errors=_READ, params=[node]),
            },
            "/health": {"get": {**_op("Whether the deployment can make progress", "200", "Health", security=[]),
                                "responses": {"200": {"description": "Database answers; a scheduler leads and "
                                                      "ticked recently", **_json(_ref("Health"))},
                                              "503": {"description": "Database unreachable, no scheduler "
                                                      "leading, or its last tick too old",
                                                      **_json(_ref("Health"))}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "security": [], "responses": {"200": {
                "description": "Prometheus text format, only on the BW_METRICS_PORT listener (404 elsewhere)",
                "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/v1/dashboard": {
                "get": _op("Everything the dashboard page shows, in one document", "200", "Dashboard",
                           errors=("401", "422"), params=(
                               _query("state", {"type": "string", "enum": list(STATES)},
                                      "List only subscriptions in this state (counts stay global)."),)),
            },
            "/": {"get": {"summary": "Redirects to /dashboard", "security": [],
                          "responses": {"302": {"description": "Location: /dashboard"}}}},
            "/dashboard": {"get": {
                "summary": "The operator's dashboard page (static; its script calls /v1/dashboard with the "
                           "admin token)", "security": [],
                "responses": {"200": {"description": "HTML page",
                                      "content": {"text/html": {"schema": {"type": "string"}}}}}}},
            "/dashboard/{name}": {"get": {
                "summary": "The dashboard's script and style sheet", "security": [],
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string", "enum": ["dashboard.js", "dashboard.css"]}}],
                "responses": {"200": {"description": "JavaScript or CSS"},
                              "404": {"description": _ERRORS["404"], **_json(_ref("Error"))}}}},
            "/openapi.json": {"get": {"summary": "This document", "security": [],
                                      "responses": {"200": {"description": "OpenAPI 3.0 document",
                                                            **_json({"type": "object"})}}}},
        },
    }
