import pytest

from iniparse import ParseError, as_bool, as_list, parse, resolve


def test_sections_and_keys():
    data = parse("[server]\nhost = example.org\nPort: 8080\n")
    assert data["server"] == {"host": "example.org", "port": "8080"}


def test_comments_and_blank_lines():
    data = parse("; a comment\n# another\n\n[a]\nx = 1\n")
    assert data["a"] == {"x": "1"}


def test_default_section():
    data = parse("name = top\n[a]\n")
    assert data["DEFAULT"] == {"name": "top"}


def test_continuation_lines():
    data = parse("[a]\npaths = one\n    two\n    three\n")
    assert data["a"]["paths"] == "one\ntwo\nthree"


def test_unterminated_header():
    with pytest.raises(ParseError) as info:
        parse("[a\n")
    assert info.value.lineno == 1


def test_missing_separator():
    with pytest.raises(ParseError):
        parse("[a]\njust words\n")


def test_resolve_reference():
    data = parse("[paths]\nroot = /srv\nlogs = ${root}/logs\n")
    assert resolve(data, "paths", "logs") == "/srv/logs"


def test_resolve_cross_section_and_default():
    data = parse("base = /opt\n[app]\nhome = ${base}/app\n[web]\nstatic = ${app:home}/static\n")
    assert resolve(data, "web", "static") == "/opt/app/static"


def test_resolve_cycle():
    data = parse("[a]\nx = ${y}\ny = ${x}\n")
    with pytest.raises(ValueError):
        resolve(data, "a", "x")


def test_as_bool_and_list():
    assert as_bool("Yes") is True and as_bool("off") is False
    with pytest.raises(ValueError):
        as_bool("maybe")
    assert as_list("a, b,,c\nd") == ["a", "b", "c", "d"]
