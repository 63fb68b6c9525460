from semver import Version, max_satisfying


def test_numeric_prerelease_identifiers_compare_numerically():
    assert Version.parse("1.0.0-rc.2") < Version.parse("1.0.0-rc.10")


def test_semver_spec_example_order():
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
             "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]
    parsed = [Version.parse(v) for v in order]
    assert sorted(reversed(parsed)) == parsed


def test_numeric_before_alphanumeric():
    assert Version.parse("1.0.0-1") < Version.parse("1.0.0-alpha")


def test_max_satisfying_picks_latest_rc():
    assert max_satisfying(["2.0.0-rc.9", "2.0.0-rc.10"], "<2.0.0") == "2.0.0-rc.10"


def test_sorting_release_candidates():
    rcs = [Version.parse(f"3.1.0-rc.{n}") for n in (1, 12, 3)]
    assert [str(v) for v in sorted(rcs)] == ["3.1.0-rc.1", "3.1.0-rc.3", "3.1.0-rc.12"]
