"""Authenticated access to a wiki: credentials live only on the spawn, in BW_CREDENTIALS_FILE
({"name": {"type": "botpassword", "username": "User@Bot", "password": "..."} |
          {"type": "oauth2", "token": "..."}}), named by a Budget's `credential`.

Bot passwords log in (action=query&meta=tokens&type=login, then action=login) into a cookie session
of their own; OAuth 2 owner-only tokens go in an Authorization header. Every authenticated request
asserts the user (assert=user). The flows send through a callable the MediaWiki client gives them,
so their requests take budget slots like any other. Secrets never reach a repr, a message or a log.
"""
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from shared.errors import ConfigError

Send = Callable[..., dict]      # send(params, post=False) -> the API's JSON answer
Session = Any       # a requests.Session from spawn.wiki_session (the modules allowed to import requests)


class LoginRefused(Exception):
    """The wiki refused these credentials; the message is the wiki's reason (never the secret)."""


@dataclass(frozen=True)
class Credential:
    name: str
    type: str                                        # "botpassword" | "oauth2"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)


_FIELDS = {"botpassword": ("username", "password"), "oauth2": ("token",)}


def parse_credentials(body: object, source: str = "BW_CREDENTIALS_FILE") -> dict[str, Credential]:
    """The credentials file's JSON; errors name the entry and the field, never a value."""
    if not isinstance(body, dict):
        raise ConfigError(f"{source}: must hold a JSON object of named credentials")
    out = {}
    for name, entry in body.items():
        kind = entry.get("type") if isinstance(entry, dict) else None
        needed = _FIELDS.get(kind) if isinstance(kind, str) else None
        if kind is None or needed is None:
            raise ConfigError(f"{source}: credential {name!r} needs a 'type' of botpassword or oauth2")
        for key in needed:
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise ConfigError(f"{source}: credential {name!r} needs a non-empty string '{key}'")
        out[name] = Credential(name, kind, **{k: entry[k] for k in needed})
    return out


def load_credentials(path: str | None) -> dict[str, Credential]:
    """Read BW_CREDENTIALS_FILE; no file configured means anonymous access only."""
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            body = json.load(f)
    except OSError as exc:
        raise ConfigError(f"BW_CREDENTIALS_FILE cannot be read: {exc.strerror}") from None
    except ValueError:
        raise ConfigError("BW_CREDENTIALS_FILE is not valid JSON") from None
    return parse_credentials(body)


def _reason(answer: Mapping) -> str:
    """The wiki's reason in an action=login answer (formatversion=2, plaintext or legacy shapes)."""
    login = answer.get("login")
    login = login if isinstance(login, dict) else {}
    reason = login.get("reason") or login.get("result") or "no reason given"
    if isinstance(reason, dict):
        reason = reason.get("text") or reason.get("code") or "no reason given"
    return str(reason)


class IdentityAuth:
    """How requests of one identity authenticate: its session, extra parameters and headers."""

    def __init__(self, credential: Credential | None, session: Session, *, missing: str | None = None):
        self.credential = credential
        self.session = session
        self.missing = missing              # the Budget named a credential this spawn does not hold
        self.logged_in = False
        self._login_lock = threading.Lock()  # one login at a time: the others find the session made

    @property
    def name(self) -> str | None:
        return None if self.credential is None else self.credential.name

    def params(self) -> dict:
        return {} if self.credential is None else {"assert": "user"}

    def headers(self) -> dict:
        c = self.credential
        return {"Authorization": f"Bearer {c.token}"} if c is not None and c.type == "oauth2" else {}

    def ensure(self, send: Send) -> None:
        """Log in when a bot password has no session yet. Raises LoginRefused."""
        if self.missing is not None:
            raise LoginRefused(self.missing)
        c = self.credential
        if c is None or c.type != "botpassword" or self.logged_in:
            return
        with self._login_lock:
            if not self.logged_in:
                self._log_in(c, send)

    def _log_in(self, c: "Credential", send: Send) -> None:
        tokens = send({"meta": "tokens", "type": "login"})
        token = ((tokens.get("query") or {}).get("tokens") or {}).get("logintoken")
        if not isinstance(token, str):
            raise LoginRefused("the wiki gave no login token")
        answer = send({"action": "login", "lgname": c.username, "lgpassword": c.password, "lgtoken": token},
                      post=True)
        if (answer.get("login") or {}).get("result") != "Success":
            raise LoginRefused(_reason(answer))
        self.logged_in = True

    @property
    def needs_login(self) -> bool:
        """A bot password without a session: ensure() would log in."""
        c = self.credential
        return self.missing is None and c is not None and c.type == "botpassword" and not self.logged_in

    def lapsed(self) -> bool:
        """The wiki no longer knows the session (assertuserfailed). True when logging in again may
        help (a bot password that was logged in); the caller then tries once more."""
        if self.credential is None or self.credential.type != "botpassword" or not self.logged_in:
            return False
        self.logged_in = False
        self.session.cookies.clear()
        return True


class WikiAuth:
    """The credentials this spawn holds and one IdentityAuth per identity, replaced when the
    Budget names another credential. Bot-password identities get a cookie session of their own."""

    def __init__(self, credentials: Mapping[str, Credential], *, anonymous: Session,
                 make_session: Callable[[], Session]):
        self._credentials = dict(credentials)
        self._anonymous = anonymous
        self._make_session = make_session
        self._by_identity: dict[str, tuple[str | None, IdentityAuth]] = {}
        self._lock = threading.Lock()

    def for_identity(self, identity: str, credential: str | None) -> IdentityAuth:
        with self._lock:
            held = self._by_identity.get(identity)
            if held is not None and held[0] == credential:
                return held[1]
            if credential is None:
                auth = IdentityAuth(None, self._anonymous)
            elif credential not in self._credentials:
                auth = IdentityAuth(None, self._anonymous,
                                    missing=f"credential {credential!r} is not in this spawn's BW_CREDENTIALS_FILE")
            else:
                c = self._credentials[credential]
                auth = IdentityAuth(c, self._make_session() if c.type == "botpassword" else self._anonymous)
            self._by_identity[identity] = (credential, auth)
            return auth
