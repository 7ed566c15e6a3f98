"""History-native storage of a page's wikitext: what to store for each revision. Pure: no I/O.

A page's texts are kept in *groups*. A group's dictionary is the text of its first revision (the
anchor), stored once zstd-compressed on its own; every other distinct text of the group is a zstd
frame compressed with that dictionary, so a near-copy of the anchor costs about the bytes that
differ. A text whose sha1 was stored before for the page costs no body at all: the revision points at
the earlier blob. A new group starts when the current one holds GROUP_BLOBS texts or a text no
longer compresses well against its anchor, so reading any revision is always two rows of one
partition (the dictionary and the blob). Layout and read path: cassandra/schema.cql, docs/analysts.md.
"""
import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import zstandard

CODEC_DICTIONARY = "zstd"            # a group's dictionary row: a plain zstd frame of the anchor's text
CODEC_BLOB = "zstd-dict"             # a blob row: a zstd frame made with the group's dictionary
DICTIONARY_BLOB = 0                  # clustering key of a group's dictionary row
GROUP_BLOBS = 32                     # distinct texts per group at most (bench/content_storage.py)
DICTIONARY_LEVEL = 15
BLOB_LEVEL = 6
# a text is a good fit for its group while its frame is at most this share of the anchor's own
# compressed size (with a floor, so that a short page's growth does not open a group per edit)
FIT_SHARE = 0.3
FIT_FLOOR_BYTES = 1024


def digest(text: str) -> str:
    """sha1 of the UTF-8 text in base 16, as MediaWiki computes rev_sha1's source."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _dictionary(anchor: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(anchor, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def compress_dictionary(anchor_text: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=DICTIONARY_LEVEL).compress(anchor_text)


def decode(dictionary_body: bytes, blob_body: bytes) -> str:
    """The text of a blob, from its group's dictionary row and its own row."""
    anchor = zstandard.ZstdDecompressor().decompress(dictionary_body)
    return zstandard.ZstdDecompressor(dict_data=_dictionary(anchor)).decompress(blob_body).decode("utf-8")


@dataclass
class Group:
    """The group a page's next new text goes to, with the compressor made from its dictionary."""
    grp: int
    anchor: bytes                     # the anchor's UTF-8 text (the dictionary)
    dictionary_size: int              # bytes of its compressed dictionary row
    blobs: int                        # distinct texts stored in it
    # blob id of the anchor: the group's id, until revision deletion rebuilt it around another text
    base: int | None = None
    _compressor: zstandard.ZstdCompressor | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dictionary(cls, grp: int, dictionary_body: bytes, blobs: int, base: int | None = None) -> "Group":
        return cls(grp, zstandard.ZstdDecompressor().decompress(dictionary_body), len(dictionary_body), blobs,
                   base)

    @property
    def anchor_id(self) -> int:
        return self.grp if self.base is None else self.base

    def compress(self, text: bytes) -> bytes:
        if self._compressor is None:
            self._compressor = zstandard.ZstdCompressor(level=BLOB_LEVEL, dict_data=_dictionary(self.anchor))
        return self._compressor.compress(text)

    def fits(self, frame: bytes) -> bool:
        return self.blobs < GROUP_BLOBS and len(frame) <= max(FIT_SHARE * self.dictionary_size, FIT_FLOOR_BYTES)


@dataclass(frozen=True)
class TextInput:
    rev_id: int
    text: str


@dataclass(frozen=True)
class Pointer:
    """revision_text row: where a revision's text lives."""
    rev_id: int
    sha1: str
    grp: int
    blob: int


@dataclass(frozen=True)
class Blob:
    """text_blobs row. blob == DICTIONARY_BLOB is a group's dictionary; `base` names the anchor
    (blob id) whose text the dictionary holds, on both kinds of row, so a reader can tell a blob made
    with another dictionary from a valid one."""
    grp: int
    blob: int
    base: int
    codec: str
    body: bytes


@dataclass
class Plan:
    pointers: list[Pointer] = field(default_factory=list)
    blobs: list[Blob] = field(default_factory=list)            # new rows, dictionaries included
    new_digests: dict[str, tuple[int, int]] = field(default_factory=dict)  # sha1 -> (grp, blob)
    refs: dict[tuple[int, int], set[int]] = field(default_factory=dict)    # (grp, blob) -> rev ids using it
    groups: list[int] = field(default_factory=list)            # groups opened by this plan
    group: Group | None = None                                 # the group the next text goes to

    @property
    def body_bytes(self) -> int:
        return sum(len(b.body) for b in self.blobs)


def plan_texts(texts: Iterable[TextInput], known: Mapping[str, tuple[int, int]], group: Group | None) -> Plan:
    """What to store for `texts` (oldest first) of one page, given the digests already stored for it
    (sha1 -> (grp, blob)) and its current group (None: no text stored yet)."""
    plan = Plan(group=group)
    seen = dict(known)
    for item in texts:
        raw = item.text.encode("utf-8")
        sha1 = hashlib.sha1(raw).hexdigest()
        where = seen.get(sha1)
        if where is None:
            where = _store(plan, item.rev_id, raw)
            seen[sha1] = plan.new_digests[sha1] = where
        plan.pointers.append(Pointer(item.rev_id, sha1, *where))
        plan.refs.setdefault(where, set()).add(item.rev_id)
    return plan


def _store(plan: Plan, rev_id: int, raw: bytes) -> tuple[int, int]:
    group = plan.group
    if group is not None:
        frame = group.compress(raw)
        if group.fits(frame):
            plan.blobs.append(Blob(group.grp, rev_id, group.anchor_id, CODEC_BLOB, frame))
            group.blobs += 1
            return group.grp, rev_id
    dictionary = compress_dictionary(raw)
    group = plan.group = Group(rev_id, raw, len(dictionary), 1)
    plan.groups.append(rev_id)
    plan.blobs += [Blob(rev_id, DICTIONARY_BLOB, rev_id, CODEC_DICTIONARY, dictionary),
                   Blob(rev_id, rev_id, rev_id, CODEC_BLOB, group.compress(raw))]
    return rev_id, rev_id


def rebuild_group(grp: int, texts: Mapping[int, str]) -> list[Blob]:
    """Every row of group `grp` rebuilt around its lowest remaining blob as the anchor: used when the
    anchor's own text must go (revision deletion). `texts` is blob id -> text of the blobs that stay;
    the group id (the partition) and every blob id are kept, so no pointer changes."""
    if not texts:
        return []
    base = min(texts)
    anchor = texts[base].encode("utf-8")
    group = Group(grp, anchor, 0, 0, base)
    rows = [Blob(grp, DICTIONARY_BLOB, base, CODEC_DICTIONARY, compress_dictionary(anchor))]
    rows += [Blob(grp, blob, base, CODEC_BLOB, group.compress(texts[blob].encode("utf-8"))) for blob in sorted(texts)]
    return rows
