"""MediaWiki Action API client for revision histories: the spawn's only caller of a wiki's API.

Exception tree (callers catch these, never requests' own):
    MediaWikiError
      ├── Retryable            retried here with backoff; re-raised once attempts run out
      │     ├── TransportError     connection refused, reset, timeout
      │     ├── ServerError        HTTP 5xx, or an API error the server says is temporary
      │     ├── RateLimited        HTTP 429 or API 'ratelimited' (retry_after)
      │     ├── Maxlagged          API 'maxlag' (retry_after, lag)
      │     └── BadResponse        truncated JSON, HTML error page, missing or malformed fields
      ├── ApiError             any other API error code: a request we should not repeat as is
      ├── PageUnavailable      missing, invalid or special title (message from the API)
      │     └── TitleMissing       the title names no page (it may have been moved or deleted)
      ├── PageDeleted          a page id the wiki now answers as missing: deleted (or never there)
      ├── AddressRefused       the wiki's host resolves to an internal address (spawn.wiki_session)
      ├── AuthRefused          the wiki refused the identity's credentials (its reason; no retry here)
      └── Cancelled            the caller's cancel event fired while waiting
A request of an identity-paced client (budget given) that its window's end cut short raises
WindowClosed inside query(), which sends it again under the next window: not a wiki failure.
Requests use formatversion=2 and errorformat=plaintext (errors come as an `errors` list).
"""
import email.utils
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable, Iterator

import requests

from shared.hashing import wiki_key
from shared.http import DEFAULT_TIMEOUT
from shared.revisions.model import Revision
from spawn import host_limiter, request_watch
from spawn.host_limiter import Backoff, HostLimiter
from spawn.upstream_budget import Demand, IdentityBudget, Permit
from spawn.wiki_auth import IdentityAuth, LoginRefused, WikiAuth
from spawn.wiki_session import InternalAddress

logger = logging.getLogger(__name__)

RVPROP = "ids|timestamp|flags|user|userid|size|sha1|comment|tags|contentmodel"
MAX_TITLES = 50                 # titles/pageids per request for clients without apihighlimits
DEFAULT_MAX_ATTEMPTS = 6


class MediaWikiError(Exception):
    retry_after: float | None = None


class Retryable(MediaWikiError):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class TransportError(Retryable):
    pass


class ServerError(Retryable):
    pass


class RateLimited(Retryable):
    pass


class Maxlagged(Retryable):
    def __init__(self, message: str, retry_after: float | None = None, lag: float | None = None):
        super().__init__(message, retry_after)
        self.lag = lag


class BadResponse(Retryable):
    pass


class ApiError(MediaWikiError):
    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code


class PageUnavailable(MediaWikiError):
    pass


class TitleMissing(PageUnavailable):
    pass


class PageDeleted(MediaWikiError):
    def __init__(self, page_id: int):
        super().__init__(f"page {page_id} no longer exists on the wiki (deleted)")
        self.page_id = page_id


class AddressRefused(MediaWikiError):
    pass


class Cancelled(MediaWikiError):
    pass


class AuthRefused(MediaWikiError):
    pass


class WindowClosed(Exception):
    """The request ran into its budget window's end and was aborted (retried, never counted)."""


# API codes that mean "try again later" rather than "your request is wrong"
_TEMPORARY_CODES = {"readonly", "internal_api_error_DBQueryError", "internal_api_error_DBConnectionError",
                    "internal_api_error_DBQueryTimeoutError"}


@dataclass(frozen=True)
class PageInfo:
    page_id: int
    ns: int
    title: str
    last_rev_id: int


@dataclass(frozen=True)
class Opening:
    """A page's first history request: the resolved page and its first batch, read from `start`
    (None when the title named another page than the one expected), and the continuation."""
    page: PageInfo
    start: datetime | None
    content: bool
    batch: list[Revision] | None
    more: dict | None


def _plain(params: dict) -> dict:
    """A request of the login flow: the same JSON conventions, no query defaults."""
    base = {"format": "json", "formatversion": "2", "errorformat": "plaintext"}
    return {**base, "action": "query", **params}


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def api_timestamp(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class MediaWikiClient:
    """One wiki's api.php. Thread-safe: the host limiter serialises requests to the host."""

    def __init__(self, http: requests.Session, api_url: str, *, limiter: HostLimiter, maxlag: int = 5,
                 timeout=DEFAULT_TIMEOUT, backoff: Backoff | None = None,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, on_request: Callable[[str], None] | None = None,
                 budget: IdentityBudget | None = None, auth: WikiAuth | None = None,
                 wall_clock: Callable[[], float] = time.time):
        self.http = http
        self.api_url = api_url
        self.host = wiki_key(api_url)
        self.limiter = limiter
        self.maxlag = maxlag
        self.timeout = timeout
        self.backoff = backoff or Backoff()
        self.max_attempts = max_attempts
        self._on_request = on_request or (lambda outcome: None)
        # identity pacing (spawn.upstream_budget) instead of the host limiter, with its credentials
        self.budget = budget
        self.auth = auth or WikiAuth({}, anonymous=http, make_session=lambda: http)
        self._wall_clock = wall_clock

    # -- transport -------------------------------------------------------------------------
    def query(self, params: dict, *, parse: Callable[[dict], object] | None = None,
              cancel: threading.Event | None = None,
              on_retry: Callable[[MediaWikiError, float], None] | None = None,
              demand: Demand = Demand(), on_wait: Callable[[str | None], None] | None = None):
        """One API call with bounded retries of Retryable failures, `parse` included (a body that
        fails validation is fetched again). Returns parse(body), or the body. Raises MediaWikiError.
        `demand` and `on_wait` matter to identity-paced clients only (spawn.upstream_budget)."""
        full = {"action": "query", "format": "json", "formatversion": "2", "errorformat": "plaintext",
                "maxlag": str(self.maxlag), **params}
        attempt = 0
        while True:
            try:
                if self.budget is None:
                    with self.limiter.slot(self.host, cancel):
                        body = self._once(full)
                else:
                    body = self._paced(full, cancel, demand, on_wait)
                return parse(body) if parse is not None else body
            except host_limiter.Cancelled:
                raise Cancelled("cancelled") from None
            except WindowClosed:
                continue
            except Retryable as exc:
                attempt += 1
                if attempt >= self.max_attempts:
                    raise
                delay = self.backoff.delay(attempt - 1, exc.retry_after)
                logger.warning("mediawiki.retry", extra={"host": self.host, "error": str(exc),
                                                         "attempt": attempt, "delay_s": round(delay, 2)})
                if on_retry is not None:
                    on_retry(exc, delay)
                self._back_off(exc, delay, cancel)

    def _back_off(self, exc: Retryable, delay: float, cancel: threading.Event | None) -> None:
        if self.budget is None:
            self.limiter.pause(self.host, delay)
        elif isinstance(exc, (RateLimited, Maxlagged)) or exc.retry_after is not None:
            # the wiki metered the identity: pause it here now, and the hub pauses the other nodes
            self.budget.pause(delay, f"{type(exc).__name__}: {exc}", throttled=isinstance(exc, RateLimited))
        else:
            try:
                host_limiter.wait(delay, cancel)
            except host_limiter.Cancelled:
                raise Cancelled("cancelled") from None

    # -- identity pacing ---------------------------------------------------------------------
    def _paced(self, params: dict, cancel, demand: Demand, on_wait) -> dict:
        """One request under the identity's budget, logged in first when its credential needs it;
        a lapsed bot-password session is logged in again once."""
        budget = self.budget
        assert budget is not None
        if budget.auth_error is not None:
            raise AuthRefused(f"the wiki refused the credentials of {budget.identity}: {budget.auth_error}")
        # the Budget names the credential: nothing is sent, and no session chosen, before it arrived
        auth = self.auth.for_identity(budget.identity, budget.wait_budget(demand, cancel, on_wait).credential)

        def send(request: dict, post: bool = False, login: bool = False) -> dict:
            with budget.slot(demand, cancel, on_wait) as permit:
                return self._once(request, auth=auth, permit=permit, post=post, login=login)

        def login_send(request: dict, post: bool = False) -> dict:
            return send(_plain(request), post, login=True)

        def log_in() -> None:
            if not auth.needs_login:
                auth.ensure(login_send)         # nothing to do, or a credential this spawn lacks (refused)
                return
            with budget.login_turn(demand, cancel, on_wait):
                auth.ensure(login_send)
        try:
            log_in()
            try:
                return send(params)
            except ApiError as exc:
                if exc.code != "assertuserfailed" or not auth.lapsed():
                    raise
            log_in()
            return send(params)
        except LoginRefused as exc:
            return self._refused(budget, str(exc))
        except ApiError as exc:
            if exc.code == "assertuserfailed" or exc.code.startswith("mwoauth-invalid-authorization"):
                return self._refused(budget, str(exc))
            raise

    def _refused(self, budget: IdentityBudget, reason: str) -> dict:
        budget.refuse_credentials(reason)
        logger.error("mediawiki.credentials_refused", extra={"identity": budget.identity, "reason": reason})
        raise AuthRefused(f"the wiki refused the credentials of {budget.identity}: {reason}")

    def _once(self, params: dict, *, auth: IdentityAuth | None = None, permit: Permit | None = None,
              post: bool = False, login: bool = False) -> dict:
        """One request; `login`: a request of the login flow itself (it cannot assert the user yet)."""
        http, timeout = self.http, self.timeout
        if auth is not None:
            http, params = auth.session, params if login else {**params, **auth.params()}
        if permit is not None:
            params = {**params, "maxlag": str(permit.maxlag)} if "maxlag" in params else params
            left = permit.deadline - self._wall_clock()
            if left <= 0:
                raise WindowClosed()
            # connecting must fit the window known now; the answer gets the whole read timeout, ended
            # early only when the window really ends (spawn.request_watch)
            connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
            timeout = (min(connect, left), read)
        try:
            if permit is None:
                resp = http.get(self.api_url, params=params, timeout=timeout)
            else:
                resp = self._within(http, params, timeout, permit.deadline, post, auth)
        except InternalAddress as exc:
            self._on_request("refused")
            logger.error("mediawiki.address_refused",
                         extra={"host": exc.host_port, "addresses": exc.addresses})
            raise AddressRefused(f"refused to connect: {exc}") from None
        except WindowClosed:
            self._on_request("window_closed")
            raise
        except requests.RequestException as exc:
            self._on_request("transport")
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        outcome = "ok"
        try:
            return self._check(resp)
        except MediaWikiError as exc:
            outcome = type(exc).__name__
            raise
        finally:
            self._on_request(outcome)

    def _within(self, http: requests.Session, params: dict, timeout, deadline: float, post: bool,
                auth: IdentityAuth | None) -> requests.Response:
        """The request, its socket shut if the window it runs under ends first (renewals that arrive
        meanwhile move that end); raises WindowClosed then, whatever the cut left of the answer."""
        assert self.budget is not None
        headers = auth.headers() if auth is not None else {}
        with request_watch.watched() as watch, \
                request_watch.WindowEnd(deadline, self._wall_clock, self.budget.extended, watch.end):
            try:
                if post:        # a login's password travels in the body, never in a URL a server may log
                    resp = http.post(self.api_url, data=params, timeout=timeout, headers=headers, stream=True)
                else:
                    resp = http.get(self.api_url, params=params, timeout=timeout, headers=headers, stream=True)
                resp.content        # reads the body now, under the watch
            except requests.RequestException:
                # a connect timeout was cut to the window known at the start
                if watch.cut or self._wall_clock() >= self.budget.extended(deadline) - 0.05:
                    raise WindowClosed() from None
                raise
            if watch.cut:
                raise WindowClosed()
        return resp

    @staticmethod
    def _check(resp: requests.Response) -> dict:
        retry_after = _retry_after(resp.headers.get("Retry-After"))
        if resp.status_code == 429:
            raise RateLimited("HTTP 429 Too Many Requests", retry_after)
        if resp.status_code >= 500:
            raise ServerError(f"HTTP {resp.status_code}", retry_after)
        if resp.status_code != 200:
            raise ApiError(f"http_{resp.status_code}", f"HTTP {resp.status_code}")
        ctype = resp.headers.get("Content-Type", "")
        if "json" not in ctype:
            raise BadResponse(f"expected JSON, got {ctype or 'no content type'}", retry_after)
        try:
            body = resp.json()
        except ValueError:
            raise BadResponse("truncated or invalid JSON") from None
        if not isinstance(body, dict):
            raise BadResponse("JSON body is not an object")
        errors = body.get("errors") or ([body["error"]] if isinstance(body.get("error"), dict) else None)
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            code = str(first.get("code", "unknown"))
            text = str(first.get("text") or first.get("info") or code)
            if code == "maxlag":
                lag = (first.get("data") or {}).get("lag", first.get("lag"))
                raise Maxlagged(text, retry_after if retry_after is not None else 5.0, lag)
            if code == "ratelimited":
                raise RateLimited(text, retry_after)
            if code in _TEMPORARY_CODES:
                raise ServerError(f"{code}: {text}", retry_after)
            raise ApiError(code, text)
        return body

    # -- pages -------------------------------------------------------------------------------
    def resolve(self, title: str, **kw) -> PageInfo:
        """Normalise the title and follow redirects as the wiki does. Raises PageUnavailable."""
        return self.query({"prop": "info", "titles": title, "redirects": "1"},
                          parse=lambda body: _page_info(_resolved(body, title)), **kw)

    def page_by_id(self, page_id: int, **kw) -> PageInfo | None:
        """The page with this id under its current title, or None when the wiki answers it as missing."""
        def parse(body: dict) -> PageInfo | None:
            page = next((p for p in _pages(body) if p.get("pageid") == page_id), None)
            if page is None:
                raise BadResponse(f"page {page_id} absent from the answer")
            return None if page.get("missing") else _page_info(page)
        return self.query({"prop": "info", "pageids": str(page_id)}, parse=parse, **kw)

    def last_rev_ids(self, page_ids: list[int], **kw) -> dict[int, int | None]:
        """lastrevid of up to 50 pages in one request; None for pages that no longer exist."""
        if len(page_ids) > MAX_TITLES:
            raise ValueError(f"at most {MAX_TITLES} pages per request")

        def parse(body: dict) -> dict[int, int | None]:
            out: dict[int, int | None] = {pid: None for pid in page_ids}
            for page in _pages(body):
                if "pageid" in page and not page.get("missing"):
                    out[int(page["pageid"])] = _page_info(page).last_rev_id
            return out
        return self.query({"prop": "info", "pageids": "|".join(map(str, page_ids))}, parse=parse, **kw)

    # -- history -----------------------------------------------------------------------------
    def open_history(self, title: str, *, page_id: int | None = None, start: datetime | None = None,
                     content: bool = False, **kw) -> Opening:
        """Resolve `title` (normalisation, redirects) and read the first oldest-first batch of its
        history from `start` in the same request. `start` is where page `page_id` resumes: when the
        title now names another page, the batch is not read (Opening.batch is None). Raises
        PageUnavailable for a missing, invalid or special title."""
        params = {**self._history_params(start, content), "prop": "revisions|info", "titles": title,
                  "redirects": "1"}

        def parse(body: dict) -> Opening:
            page = _page_info(_resolved(body, title))
            if page_id is not None and page.page_id != page_id:
                return Opening(page, start, content, None, None)
            batch, more = self._parse_batch(body, page, content)
            return Opening(page, start, content, batch, more)
        return self.query(params, parse=parse, **kw)

    def continue_history(self, opening: Opening, **kw) -> Iterator[list[Revision]]:
        """The opening's batch, then the rest of the history by page id from its continuation."""
        if opening.batch is not None:
            yield opening.batch
        if opening.more is not None:
            yield from self.revision_batches(opening.page, start=opening.start, content=opening.content,
                                             cont=opening.more, **kw)

    def revision_batches(self, page: PageInfo, *, start: datetime | None = None, content: bool = False,
                         cont: dict | None = None, **kw) -> Iterator[list[Revision]]:
        """Oldest-first batches of a page's history from `start` (inclusive), following `continue`
        (from `cont` when given). Each batch is fully validated before it is yielded; a bad batch is
        retried, never yielded."""
        params = {**self._history_params(start, content), "pageids": str(page.page_id)}
        cont = cont or {}
        while True:
            batch, more = self.query({**params, **cont}, parse=lambda b: self._parse_batch(b, page, content), **kw)
            yield batch
            if more is None:
                return
            cont = more

    def revisions_by_id(self, page: PageInfo, rev_ids: Iterable[int], *, content: bool = False,
                        **kw) -> list[Revision]:
        """These revisions of `page`, oldest first, MAX_TITLES ids a request (with their texts when `content`;
        an answer cut short by the wiki's result size limit is continued). An id the wiki does not know, or of
        another page, is left out: a repair reads only the revisions it writes, never the whole history."""
        return self.revisions_of_pages([page.page_id], rev_ids, content=content, **kw).get(page.page_id, [])

    def revisions_of_pages(self, page_ids: Iterable[int], rev_ids: Iterable[int], *, content: bool = False,
                           **kw) -> dict[int, list[Revision]]:
        """{page id: its revisions among `rev_ids`, oldest first}, for any number of pages, MAX_TITLES ids a
        request (texts when `content`; continued when the wiki's result size limit cuts an answer short). An
        id the wiki does not know, or of a page not in `page_ids`, is left out."""
        ids = sorted(set(rev_ids))
        wanted = frozenset(page_ids)
        found: dict[int, dict[int, Revision]] = {}
        for i in range(0, len(ids), MAX_TITLES):
            params = {"prop": "revisions", "revids": "|".join(str(r) for r in ids[i:i + MAX_TITLES]),
                      "rvprop": RVPROP + ("|content" if content else ""), "rvslots": "main"}
            cont: dict = {}
            while True:
                batch, more = self.query({**params, **cont}, parse=lambda b: self._parse_by_id(b, wanted, content),
                                         **kw)
                for r in batch:
                    found.setdefault(r.page_id, {})[r.rev_id] = r
                if more is None:
                    break
                cont = more
        return {pid: sorted(revs.values(), key=lambda r: (r.timestamp, r.rev_id)) for pid, revs in found.items()}

    def _parse_by_id(self, body: dict, page_ids: frozenset[int], content: bool) -> tuple[list[Revision], dict | None]:
        more = body.get("continue")
        if more is not None and not isinstance(more, dict):
            raise BadResponse("'continue' is not an object")
        wiki = wiki_key(self.api_url)
        revisions: list[Revision] = []
        for p in _pages(body):
            if p.get("pageid") not in page_ids:
                continue
            listed = p.get("revisions", [])
            if not isinstance(listed, list):
                raise BadResponse("'revisions' is not a list")
            revisions.extend(revision_from_api(wiki, p, r, content) for r in listed)
        return revisions, more

    @staticmethod
    def _history_params(start: datetime | None, content: bool) -> dict:
        params = {"prop": "revisions", "rvlimit": "max", "rvdir": "newer",
                  "rvprop": RVPROP + ("|content" if content else ""), "rvslots": "main"}
        if start is not None:
            params["rvstart"] = api_timestamp(start)
        return params

    def _parse_batch(self, body: dict, page: PageInfo, content: bool) -> tuple[list[Revision], dict | None]:
        more = body.get("continue")
        if more is not None and not isinstance(more, dict):
            raise BadResponse("'continue' is not an object")
        pages = [p for p in _pages(body) if p.get("pageid") == page.page_id]
        if not pages:
            raise BadResponse(f"page {page.page_id} absent from the answer")
        p = pages[0]
        if p.get("missing"):
            raise PageDeleted(page.page_id)
        if "revisions" not in p:
            if more:        # a batch cut short by the result size limit may carry no revision
                return [], more
            raise BadResponse("'revisions' missing from the answer")
        if not isinstance(p["revisions"], list):
            raise BadResponse("'revisions' is not a list")
        wiki = wiki_key(self.api_url)
        return [revision_from_api(wiki, p, r, content) for r in p["revisions"]], more


def listed(body: dict, name: str) -> tuple[list, dict | None]:
    """A `list=` answer's `query.<name>` items and its continuation, or BadResponse (the answer is fetched again,
    never read in part)."""
    query = body.get("query")
    items = query.get(name) if isinstance(query, dict) else None
    if not isinstance(items, list):
        raise BadResponse(f"'query.{name}' missing from the answer")
    more = body.get("continue")
    if more is not None and not isinstance(more, dict):
        raise BadResponse("'continue' is not an object")
    return items, more


def _pages(body: dict) -> list[dict]:
    query = body.get("query")
    if not isinstance(query, dict) or not isinstance(query.get("pages"), list):
        raise BadResponse("'query.pages' missing from the answer")
    return [p for p in query["pages"] if isinstance(p, dict)]


def _resolved(body: dict, title: str) -> dict:
    """The page `title` names after the wiki's normalisation and redirects; PageUnavailable if none."""
    query = body.get("query")
    away = query.get("interwiki") if isinstance(query, dict) and not query.get("pages") else None
    if isinstance(away, list) and away and isinstance(away[0], dict):
        # an interwiki title, or a redirect to one: the page it names is on another wiki
        raise PageUnavailable(f"{title!r} leads to another wiki: {away[0].get('title')!r}")
    pages = _pages(body)
    if not pages:
        raise BadResponse("the answer names no page")
    page = pages[0]
    if page.get("invalid"):
        reason = page.get("invalidreason")
        if isinstance(reason, dict):
            reason = reason.get("text")
        raise PageUnavailable(f"invalid title {title!r}: {reason or 'rejected by the wiki'}")
    if page.get("missing"):
        raise TitleMissing(f"page {page.get('title', title)!r} does not exist")
    if page.get("special") or "pageid" not in page:
        raise PageUnavailable(f"{page.get('title', title)!r} is not an article with a history")
    return page


def _page_info(page: dict) -> PageInfo:
    try:
        return PageInfo(int(page["pageid"]), int(page["ns"]), str(page["title"]), int(page["lastrevid"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadResponse(f"page field missing or malformed: {exc}") from None


def revision_from_api(wiki: str, page: dict, r: dict, content: bool) -> Revision:
    try:
        slot = (r.get("slots") or {}).get("main") or {}
        user_hidden = bool(r.get("userhidden"))
        comment_hidden = bool(r.get("commenthidden"))
        sha1_hidden = bool(r.get("sha1hidden"))
        text_hidden = bool(slot.get("texthidden") or r.get("texthidden"))
        text = None
        if content and not text_hidden:
            text = slot["content"]
        return Revision(
            wiki=wiki, page_id=int(page["pageid"]), ns=int(page["ns"]), title=str(page["title"]),
            rev_id=int(r["revid"]), parent_id=int(r["parentid"]),
            timestamp=datetime.fromisoformat(r["timestamp"]).astimezone(timezone.utc),
            user=None if user_hidden else str(r["user"]),
            user_id=None if user_hidden else int(r["userid"]),
            anon=bool(r.get("anon")), minor=bool(r["minor"]), size=int(r["size"]),
            sha1=None if sha1_hidden else str(r["sha1"]),
            comment=None if comment_hidden else str(r["comment"]),
            tags=tuple(str(t) for t in r["tags"]),
            content_model=slot.get("contentmodel") or r.get("contentmodel"),
            content=text, user_hidden=user_hidden, comment_hidden=comment_hidden,
            sha1_hidden=sha1_hidden, text_hidden=text_hidden,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BadResponse(f"revision field missing or malformed: {exc!r}") from None
