import os
import subprocess
import sys

from shared.hashing import canonical_wiki_url, node_id_for, normalize_title, source_uuid, stable_hash, wiki_key


def test_stable_hash_is_the_same_in_another_process_with_another_hash_seed():
    values = ["a", "Synthetic article 1", "Ünïcödé – 東京", "6f1c3a52-9d1e-5b7a-8c1f-2b0e8d4a7c11"]
    code = "import sys; from shared.hashing import stable_hash; print([stable_hash(v) for v in sys.argv[1:]])"
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code, *values], env=env, capture_output=True, text=True,
                             check=True).stdout.strip()
        outputs.add(out)
    assert outputs == {str([stable_hash(v) for v in values])}


def test_stable_hash_is_64_bit_and_spreads():
    hashes = [stable_hash(str(i)) for i in range(10_000)]
    assert all(0 <= h < 2 ** 64 for h in hashes)
    buckets = [0] * 10
    for h in hashes:
        buckets[h % 10] += 1
    assert min(buckets) > 850 and max(buckets) < 1150


def test_canonical_wiki_url_drops_default_port_query_and_case():
    assert canonical_wiki_url("HTTPS://En.Wikipedia.org:443/w/api.php?x=1#f") == "https://en.wikipedia.org/w/api.php"
    assert canonical_wiki_url("http://127.0.0.1:8780/api.php") == "http://127.0.0.1:8780/api.php"
    assert wiki_key("http://127.0.0.1:8780/api.php") == "127.0.0.1:8780"


def test_titles_keep_their_case_and_read_underscores_as_spaces():
    assert normalize_title("  foo_bar   baz ") == "foo bar baz"
    assert normalize_title("ünïcödé") == "ünïcödé"
    assert normalize_title("Apple") == "Apple"


def test_one_title_from_any_spelling_of_url_and_spaces_shares_a_source_uuid():
    a = source_uuid("https://en.wikipedia.org/w/api.php", "Pyrus_communis")
    b = source_uuid("HTTPS://en.wikipedia.org:443/w/api.php", " Pyrus  communis ")
    assert a == b
    assert a != source_uuid("https://de.wikipedia.org/w/api.php", "Pyrus communis")
    # two pages on a wiki without first-letter capitals (Wiktionary): only the wiki's page key may merge them
    assert source_uuid("https://en.wiktionary.org/w/api.php", "apple") != \
        source_uuid("https://en.wiktionary.org/w/api.php", "Apple")


def test_node_id_ignores_trailing_slash():
    assert node_id_for("http://127.0.0.1:8701/") == node_id_for("http://127.0.0.1:8701")
