import pytest

from semver import Version, max_satisfying, satisfies


def test_parse_and_str_round_trip():
    for text in ["1.2.3", "0.0.1-alpha", "1.0.0-rc.1+build.5"]:
        assert str(Version.parse(text)) == text


def test_parse_rejects_garbage():
    for text in ["1.2", "01.2.3", "1.2.3-", "x.y.z"]:
        with pytest.raises(ValueError):
            Version.parse(text)


def test_core_ordering():
    assert Version.parse("1.2.3") < Version.parse("1.2.10") < Version.parse("1.10.0") < Version.parse("2.0.0")


def test_prerelease_before_release():
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0")


def test_build_metadata_ignored():
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")


def test_bump():
    v = Version.parse("1.4.2-beta")
    assert str(v.bump("major")) == "2.0.0"
    assert str(v.bump("minor")) == "1.5.0"
    assert str(v.bump("patch")) == "1.4.3"


def test_satisfies_ranges():
    assert satisfies("1.4.0", ">=1.2.0, <2.0.0")
    assert not satisfies("2.0.0", ">=1.2.0, <2.0.0")
    assert satisfies("1.9.9", "^1.2.0") and not satisfies("2.0.0", "^1.2.0")
    assert satisfies("0.2.5", "^0.2.1") and not satisfies("0.3.0", "^0.2.1")
    assert satisfies("1.2.9", "~1.2.0") and not satisfies("1.3.0", "~1.2.0")


def test_max_satisfying():
    assert max_satisfying(["1.0.0", "1.5.0", "2.1.0"], "<2.0.0") == "1.5.0"
    assert max_satisfying(["3.0.0"], "<2.0.0") is None
