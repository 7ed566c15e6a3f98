import pytest

from blackwidow.wiki_policy import check_wiki
from shared.errors import ValidationError

ALLOW = ("*.wikipedia.org", "127.0.0.1:8780", "wiki.example.org:8443")


@pytest.mark.parametrize("url, canonical", [
    ("https://en.wikipedia.org/w/api.php", "https://en.wikipedia.org/w/api.php"),
    ("HTTPS://De.Wikipedia.ORG:443/w/api.php", "https://de.wikipedia.org/w/api.php"),
    ("http://127.0.0.1:8780/api.php", "http://127.0.0.1:8780/api.php"),
    ("https://wiki.example.org:8443/api.php", "https://wiki.example.org:8443/api.php"),
])
def test_allowed(url, canonical):
    assert check_wiki(url, ALLOW) == canonical


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/api.php",            # cloud metadata service (link-local)
    "http://127.0.0.1/api.php",                  # loopback, but not the exactly listed host:port
    "http://127.0.0.1:8781/api.php",
    "http://10.1.2.3/api.php", "http://192.168.0.1/api.php", "http://172.16.0.1/api.php",
    "http://100.64.0.1/api.php", "http://0.0.0.0/api.php", "http://224.0.0.1/api.php",
    "http://2130706433/api.php", "http://0x7f.1/api.php", "http://127.1/api.php",   # legacy IPv4 spellings
    "http://[::1]/api.php", "http://[::ffff:169.254.169.254]/api.php", "http://[fe80::1]/api.php",
    "http://localhost:8780/api.php", "http://wiki.localhost/api.php",
    "ftp://en.wikipedia.org/w/api.php", "file:///etc/passwd", "gopher://en.wikipedia.org/api.php",
    "https://en.wikipedia.org/w/index.php", "https://en.wikipedia.org/w/api.php?action=query",
    "https://en.wikipedia.org/w/api.php#x", "https://user:pw@en.wikipedia.org/w/api.php",
    "https://en.wikipedia.org:8443/w/api.php",   # a pattern without a port matches the default port only
    "https://wikipedia.org.evil.com/w/api.php", "https://evil.com\\.wikipedia.org/w/api.php",
    "https://en.wikipedia.org:99999/w/api.php", "https:///api.php", "not a url",
    "https://example.org/api.php",
])
def test_refused(url):
    with pytest.raises(ValidationError) as err:
        check_wiki(url, ALLOW)
    assert err.value.field == "wiki"


def test_internal_address_needs_an_exact_entry_even_under_a_wildcard():
    with pytest.raises(ValidationError):
        check_wiki("http://169.254.169.254/api.php", ("*",))
    with pytest.raises(ValidationError):
        check_wiki("http://127.0.0.1:8780/api.php", ("127.0.0.*",))
    metadata = "http://169.254.169.254/api.php"
    assert check_wiki(metadata, ("169.254.169.254",)) == metadata
    assert check_wiki("http://8.8.8.8/api.php", ("*",)) == "http://8.8.8.8/api.php"
