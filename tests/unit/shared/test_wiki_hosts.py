"""Host and address classification shared by the hub's subscription check and the spawn's connections."""
import pytest

from shared.wiki_hosts import exactly_listed, internal_address, internal_host


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "::", "fe80::1%eth0",
                                     "fc00::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
                                     "64:ff9b::a9fe:a9fe", "2002:7f00:1::1"])
def test_internal_addresses(address):
    assert internal_address(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "208.80.154.224", "2620:0:861:ed1a::1", "::ffff:8.8.8.8"])
def test_global_addresses(address):
    assert not internal_address(address)


@pytest.mark.parametrize("host, internal", [("localhost", True), ("wiki.localhost", True), ("LOCALHOST", True),
                                            ("2130706433", True), ("0x7f.1", True), ("127.1", True),
                                            ("en.wikipedia.org", False), ("208.80.154.224", False)])
def test_hosts_are_judged_without_dns(host, internal):
    assert internal_host(host) is internal


def test_only_an_exact_entry_counts():
    allowlist = (" 127.0.0.1:8780 ", "*.wikipedia.org", "Wiki.Example.org")
    assert exactly_listed("127.0.0.1:8780", allowlist) and exactly_listed("wiki.example.org", allowlist)
    assert not exactly_listed("127.0.0.1", allowlist) and not exactly_listed("en.wikipedia.org", allowlist)
