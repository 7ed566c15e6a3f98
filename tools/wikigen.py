"""Deterministic synthetic wiki history for the local MediaWiki.

Writes a MediaWiki XML export (schema 0.11) for importDump.php, the accounts it needs
(users.txt) and the expected histories (expected.json.gz) that tests compare the API against.
An export carries no change tags: the revisions' tags are in the expected histories only, and
tools.wikitags applies them to the imported wiki.
Stdlib only: scripts/services/mediawiki.sh runs it with the system python3 before any venv exists.

    python -m tools.wikigen --out DIR [--seed N]
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import random
import sys
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

# Bump whenever the output for a given seed changes: the service script reseeds the wiki on a mismatch.
GENERATOR_VERSION = "3"
DEFAULT_SEED = 1

BIG_TITLE = "Synthetic article 1"
UNICODE_TITLE = "Ünïcödé – 東京"
REDIRECT_TITLE = "Redirect to one"
REVERT_TAG = "vandalism-revert"     # the change tag of every revert of vandalism

DUMP_FILE = "dump.xml"
USERS_FILE = "users.txt"
EXPECTED_FILE = "expected.json.gz"

N_USERS = 420
N_IPS = 160
WINDOW = (datetime(2003, 1, 1, tzinfo=timezone.utc), datetime(2024, 12, 31, tzinfo=timezone.utc))

# (title, namespace, revisions, size class); the final size of each page is drawn from its class.
PLAN: tuple[tuple[str, int, int, str], ...] = (
    (BIG_TITLE, 0, 5200, "compact"),
    ("Orb-weaver spider", 0, 950, "medium"),
    ("Spider silk", 0, 700, "medium"),
    (UNICODE_TITLE, 0, 420, "medium"),
    ("Tarantula", 0, 300, "large"),
    ("Web crawler", 0, 180, "small"),
    ("Talk:" + BIG_TITLE, 1, 140, "small"),
    ("Arachnology", 0, 110, "medium"),
    ("Black widow", 0, 60, "medium"),
    ("Jumping spider", 0, 45, "small"),
    ("Charlotte's Web", 0, 40, "medium"),
    ("Spiders & webs (1999)", 0, 35, "small"),
    ("Wolf spider", 0, 30, "small"),
    ("Huntsman spider", 0, 25, "large"),
    ("Trapdoor spider", 0, 20, "small"),
    ("Cellar spider", 0, 15, "small"),
    ("Crab spider", 0, 12, "small"),
    ("Funnel-web spider", 0, 10, "medium"),
    ("Peacock spider", 0, 8, "small"),
    ("Sheet weaver/Taxonomy", 0, 5, "small"),
    ("Spinneret", 0, 3, "small"),
    ("Cobweb", 0, 2, "small"),
    ("Hub and spoke", 0, 1, "small"),
)
# Bytes; chosen so the dump stays well under 60 MB for any seed.
SIZE_TARGETS = {"small": (300, 2_000), "compact": (1_500, 6_000), "medium": (2_000, 12_000),
                "large": (20_000, 45_000)}

_WORDS = (
    "spider web silk thread orb radial spiral hub anchor frame prey insect venom fang chelicera "
    "abdomen cephalothorax leg eye molt egg sac spiderling ballooning wind dew morning garden "
    "forest cave desert meadow species genus family order taxonomy specimen museum collection "
    "study survey field observation behaviour courtship mating male female size colour pattern "
    "stripe band spot dark pale bright large small long short common rare native introduced "
    "range habitat climate season summer winter spring autumn night day hunt wait ambush build "
    "repair weave spin capture wrap store feed bite harmless dangerous medical record history "
    "early modern ancient author reference journal paper book chapter edition figure table "
    "café naïve façade Größe Straße élan señor smörgåsbord 東京 蜘蛛 網 糸 паук сеть αράχνη 🕷"
).split()
_COMMENTS = (
    "copyedit", "fix typo", "expand", "add reference", "cleanup", "wikify", "update", "rm unsourced claim",
    "+cat", "grammar", "reword lead", "add image caption", "moved paragraph", "source: field guide (2nd ed.)",
    "Korrektur: Größe", "修正", "исправление", "merge <ref> & cleanup", "per talk page",
    "Undo revision — see discussion on talk page; the previous wording was better sourced and the new "
    "figures contradicted the cited survey, so restoring until someone checks the journal",
)
_SECTIONS = ("History", "Description", "Distribution", "Behaviour", "Taxonomy", "In culture", "References")
_FIRST = ("Ada", "Bram", "Cleo", "Dara", "Emil", "Faye", "Gus", "Hana", "Ivo", "Jia", "Kofi", "Lena",
          "Milo", "Nia", "Otto", "Pia", "Quin", "Rosa", "Sami", "Tove", "Uma", "Vik", "Wren", "Yara", "Zane")
_LAST = ("Abara", "Berg", "Costa", "Dahl", "Eze", "Fink", "Garza", "Holm", "Ito", "Jansen", "Kaur",
         "Lund", "Moreau", "Novak", "Okafor", "Park", "Quist", "Rossi", "Sato", "Tanaka", "Urban", "Varga")
_ADJ = ("Quiet", "Silver", "Patient", "Red", "Swift", "Hidden", "Golden", "Lucky", "Night", "Old", "Green")
_ANIMAL = ("Heron", "Weaver", "Spinner", "Moth", "Beetle", "Lynx", "Otter", "Wren", "Finch", "Gecko")
_UNICODE_USERS = ("Zoë Weiß", "Jürgen Müller", "Łukasz Żółw", "Søren Ågård", "Иван Петров", "山田太郎",
                  "Ελένη Παππά", "José Núñez", "Ngozi Ọkafọ", "Çağla Şahin")


@dataclass(frozen=True)
class Revision:
    timestamp: str          # ISO 8601, UTC, "Z"
    user: str               # account name, or the IP as MediaWiki normalises it
    anon: bool
    minor: bool
    comment: str
    size: int               # UTF-8 bytes of text
    sha1: str               # base 16, as the API reports it
    text: str | None = None  # present when generated, absent when loaded from expected.json.gz
    tags: tuple[str, ...] = ()  # change tags, sorted


@dataclass(frozen=True)
class Page:
    title: str
    ns: int
    is_redirect: bool
    redirect_target: str | None
    revisions: tuple[Revision, ...]


@dataclass(frozen=True)
class Wiki:
    generator_version: str
    seed: int
    users: tuple[str, ...]
    pages: tuple[Page, ...]

    def page(self, title: str) -> Page:
        for page in self.pages:
            if page.title == title:
                return page
        raise KeyError(title)

    @property
    def biggest(self) -> Page:
        return max(self.pages, key=lambda p: len(p.revisions))


def sha1_base36(text: str) -> str:
    """The <sha1> form of XML dumps: base 36 of the SHA-1, zero-padded to 31 characters."""
    n = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16)
    digits = ""
    while n:
        n, r = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
    return digits.rjust(31, "0")


def _make_users(rng: random.Random) -> list[str]:
    names: list[str] = list(_UNICODE_USERS) + ["SilkBot", "ArchiveBot 2"]
    seen = set(names)
    while len(names) < N_USERS:
        style = rng.random()
        if style < 0.45:
            name = f"{rng.choice(_ADJ)}{rng.choice(_ANIMAL)}{rng.randint(1, 999)}"
        elif style < 0.85:
            name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        else:
            name = f"{rng.choice(_FIRST)}.{rng.choice(_LAST).lower()}{rng.randint(70, 99)}"
        if name not in seen:
            seen.add(name)
            names.append(name)
    rng.shuffle(names)
    return names


def _make_ips(rng: random.Random) -> list[str]:
    ips: list[str] = []
    while len(ips) < N_IPS:
        if rng.random() < 0.65:
            first = rng.choice([n for n in range(1, 224) if n not in (10, 127)])
            octets = (first, rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 254))
            ip = ".".join(str(o) for o in octets)
        else:
            # IPUtils::sanitizeIP form: eight upper-case groups, no leading zeros, no "::".
            prefix = rng.choice(((0x2001, 0xDB8), (0x2A02, 0x8108), (0x2600, 0x1700)))
            groups = list(prefix) + [rng.choice((0, rng.randint(0, 0xFFFF))) for _ in range(6)]
            ip = ":".join(f"{g:X}" for g in groups)
        if ip not in ips:
            ips.append(ip)
    return ips


def _timestamps(rng: random.Random, n: int) -> list[str]:
    """Strictly increasing instants, scaled into a span of years, from a Poisson process whose rate
    switches between calm and burst regimes; the calm rate also drifts (interest waxes and wanes)."""
    gaps, burst, level = [], False, 0.0
    for _ in range(n):
        burst = rng.random() < (0.85 if burst else 0.04)
        level = max(-3.0, min(3.0, 0.98 * level + rng.gauss(0, 0.2)))
        gaps.append(rng.expovariate(1.0 / (0.004 if burst else math.exp(level))))
    lo, hi = (t.timestamp() for t in WINDOW)
    start = rng.uniform(lo, lo + (hi - lo) * 0.45)
    end = rng.uniform(max(start + (hi - lo) * 0.3, hi - (hi - lo) * 0.2), hi)
    scale = (end - start) / sum(gaps)
    out, t, prev = [], start, 0
    for gap in gaps:
        t += gap * scale
        second = max(int(t), prev + 1)
        out.append(datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        prev = second
    return out


class _PageText:
    """Paragraph list evolving by appends, rewrites and deletions toward a drifting size target."""

    def __init__(self, rng: random.Random, titles: list[str]):
        self.rng = rng
        self.titles = titles
        self.paras: list[str] = [self._paragraph()]

    def _sentence(self) -> str:
        words = [self.rng.choice(_WORDS) for _ in range(self.rng.randint(6, 18))]
        roll = self.rng.random()
        if roll < 0.15:
            words[self.rng.randrange(len(words))] = f"[[{self.rng.choice(self.titles)}]]"
        elif roll < 0.22:
            i = self.rng.randrange(len(words))
            words[i] = f"'''{words[i]}'''"
        return words[0][:1].upper() + " ".join(words)[1:] + "."

    def _paragraph(self) -> str:
        if self.rng.random() < 0.12:
            return f"== {self.rng.choice(_SECTIONS)} =="
        return " ".join(self._sentence() for _ in range(self.rng.randint(2, 6)))

    def text(self) -> str:
        return "\n\n".join(self.paras)

    def edit(self, target: int) -> None:
        size = len(self.text().encode("utf-8"))
        roll = self.rng.random()
        if size < target * 0.9:
            op = "append" if roll < 0.7 else "rewrite"
        elif size > target * 1.1 and len(self.paras) > 1:
            op = "delete" if roll < 0.5 else "rewrite"
        else:
            op = "append" if roll < 0.3 else "delete" if roll < 0.45 and len(self.paras) > 1 else "rewrite"
        i = self.rng.randrange(len(self.paras))
        if op == "append":
            self.paras.insert(self.rng.randint(0, len(self.paras)), self._paragraph())
        elif op == "delete":
            del self.paras[i]
        elif self.paras[i].startswith("=="):
            self.paras[i] = self._paragraph()
        else:
            words = self.paras[i].split(" ")
            for _ in range(self.rng.randint(1, 3)):
                words[self.rng.randrange(len(words))] = self.rng.choice(_WORDS)
            self.paras[i] = " ".join(words)


def _revision(ts: str, user: str, anon: bool, minor: bool, comment: str, text: str,
              tags: tuple[str, ...] = ()) -> Revision:
    return Revision(ts, user, anon, minor, comment, len(text.encode("utf-8")),
                    hashlib.sha1(text.encode("utf-8")).hexdigest(), text, tags)


def _history(rng: random.Random, n: int, size_class: str, pick_user, pick_ip,
             titles: list[str]) -> list[Revision]:
    stamps = _timestamps(rng, n)
    lo, hi = SIZE_TARGETS[size_class]
    final = rng.uniform(lo, hi)
    body = _PageText(rng, titles)
    revs: list[Revision] = []
    i = 0
    while i < n:
        target = int(lo * 0.2 + (final - lo * 0.2) * (i / max(n - 1, 1)) * rng.uniform(0.8, 1.2))
        # Vandalism by an IP, reverted in the next revision: repeats an older sha1 with a newer timestamp.
        if i > 0 and i + 1 < n and rng.random() < 0.03:
            ip, good = pick_ip(), revs[-1]
            vandal = "" if rng.random() < 0.15 else body.text() + "\n\nLOL " + rng.choice(_WORDS) * 3
            summary = "" if rng.random() < 0.6 else "fixed it"
            revs.append(_revision(stamps[i], ip, True, False, summary, vandal))
            reverter = pick_user()
            revs.append(_revision(stamps[i + 1], reverter, False, True,
                                  f"Reverted edits by [[Special:Contributions/{ip}|{ip}]] "
                                  f"([[User talk:{ip}|talk]]) to last version by {good.user}", body.text(),
                                  (REVERT_TAG,)))
            i += 2
            continue
        if i > 0:
            body.edit(target)
        anon = rng.random() < 0.12
        user = pick_ip() if anon else pick_user()
        roll = rng.random()
        if roll < 0.15:
            comment = ""
        elif roll < 0.35:
            comment = f"/* {rng.choice(_SECTIONS)} */ {rng.choice(_COMMENTS)}"
        else:
            comment = rng.choice(_COMMENTS)
        revs.append(_revision(stamps[i], user, anon, not anon and rng.random() < 0.25, comment, body.text()))
        i += 1
    return revs


def generate(seed: int = DEFAULT_SEED, plan=PLAN) -> Wiki:
    """The whole synthetic wiki, texts included; same seed and version, same result."""
    rng = random.Random(seed)
    users = _make_users(rng)
    ips = _make_ips(rng)
    # Zipf-like activity: a few prolific editors and a long tail.
    user_weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(users))]
    ip_weights = [1.0 / (rank + 1) ** 0.7 for rank in range(len(ips))]

    def pick_user() -> str:
        return rng.choices(users, user_weights)[0]

    def pick_ip() -> str:
        return rng.choices(ips, ip_weights)[0]

    titles = [t for t, ns, _, _ in plan if ns == 0]
    pages = []
    for title, ns, n, size_class in plan:
        revs = _history(rng, n, size_class, pick_user, pick_ip, titles)
        pages.append(Page(title, ns, False, None, tuple(revs)))
    target = plan[0][0]
    first, second = _timestamps(rng, 2)
    redirect = (_revision(first, pick_user(), False, False, f"redirect to [[{target}]]",
                          f"#REDIRECT [[{target}]]"),
                _revision(second, pick_user(), False, True, "categorise redirect",
                          f"#REDIRECT [[{target}]]\n\n[[Category:Redirects from alternative names]]"))
    pages.append(Page(REDIRECT_TITLE, 0, True, target, redirect))
    return Wiki(GENERATOR_VERSION, seed, tuple(users), tuple(pages))


def write_dump(wiki: Wiki, path: Path) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" '
                  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                  'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.11/ '
                  'http://www.mediawiki.org/xml/export-0.11.xsd" version="0.11" xml:lang="en">\n')
        revid = 0
        user_ids = {name: i + 1 for i, name in enumerate(wiki.users)}
        for pageid, page in enumerate(wiki.pages, start=1):
            out.write(f"  <page>\n    <title>{escape(page.title)}</title>\n    <ns>{page.ns}</ns>\n"
                      f"    <id>{pageid}</id>\n")
            if page.redirect_target:
                out.write(f"    <redirect title={quoteattr(page.redirect_target)} />\n")
            parent = None
            for rev in page.revisions:
                revid += 1
                who = (f"<ip>{rev.user}</ip>" if rev.anon else
                       f"<username>{escape(rev.user)}</username><id>{user_ids[rev.user]}</id>")
                out.write(f"    <revision>\n      <id>{revid}</id>\n")
                if parent:
                    out.write(f"      <parentid>{parent}</parentid>\n")
                out.write(f"      <timestamp>{rev.timestamp}</timestamp>\n"
                          f"      <contributor>{who}</contributor>\n")
                if rev.minor:
                    out.write("      <minor />\n")
                if rev.comment:
                    out.write(f"      <comment>{escape(rev.comment)}</comment>\n")
                out.write(f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
                          f'      <text bytes="{rev.size}" xml:space="preserve">{escape(rev.text)}</text>\n'
                          f"      <sha1>{sha1_base36(rev.text)}</sha1>\n    </revision>\n")
                parent = revid
            out.write("  </page>\n")
        out.write("</mediawiki>\n")


def _expected_dict(wiki: Wiki) -> dict:
    return {
        "generator_version": wiki.generator_version,
        "seed": wiki.seed,
        "pages": [
            {**{k: v for k, v in asdict(page).items() if k != "revisions"},
             "revisions": [{k: v for k, v in asdict(rev).items() if k != "text"} for rev in page.revisions]}
            for page in wiki.pages
        ],
        "users": list(wiki.users),
    }


def write(wiki: Wiki, out_dir: Path) -> None:
    """Write dump.xml, users.txt and expected.json.gz; each file appears complete or not at all."""
    out_dir.mkdir(parents=True, exist_ok=True)

    def atomic(name: str, writer) -> None:
        tmp = out_dir / (name + ".tmp")
        writer(tmp)
        os.replace(tmp, out_dir / name)

    atomic(DUMP_FILE, lambda p: write_dump(wiki, p))
    atomic(USERS_FILE, lambda p: p.write_text("".join(u + "\n" for u in wiki.users), encoding="utf-8"))
    # mtime=0 keeps the gzip bytes reproducible too.
    atomic(EXPECTED_FILE, lambda p: p.write_bytes(
        gzip.compress(json.dumps(_expected_dict(wiki), ensure_ascii=False).encode("utf-8"), mtime=0)))


def load_expected(path: str | os.PathLike) -> Wiki:
    """Read expected.json.gz back into a Wiki whose revisions carry no text."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    pages = tuple(
        Page(p["title"], p["ns"], p["is_redirect"], p["redirect_target"],
             tuple(Revision(**{**r, "tags": tuple(r["tags"])}) for r in p["revisions"]))
        for p in data["pages"]
    )
    return Wiki(data["generator_version"], data["seed"], tuple(data["users"]), pages)


def without_text(wiki: Wiki) -> Wiki:
    pages = tuple(replace(p, revisions=tuple(replace(r, text=None) for r in p.revisions)) for p in wiki.pages)
    return replace(wiki, pages=pages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.wikigen", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="output directory")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--version", action="store_true", help="print the generator version and exit")
    args = parser.parse_args(argv)
    if args.version:
        print(GENERATOR_VERSION)
        return 0
    if args.out is None:
        parser.error("--out is required")
    wiki = generate(args.seed)
    write(wiki, args.out)
    revs = [r for p in wiki.pages for r in p.revisions]
    print(f"wikigen {GENERATOR_VERSION}: {len(wiki.pages)} pages, {len(revs)} revisions "
          f"({sum(bool(r.tags) for r in revs)} tagged), {len(wiki.users)} users -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
