"""Issue 32 item 2, from the command line against a live hub (a real port): ``vf-push --visibility private``
says "private" and prints pip's token form of the index URL (the token elided); ``vf-hub env share``,
``grants``, ``unshare`` and ``visibility``; and the user it is shared with installs it with plain pip and
that token form in a fresh venv, until it is unshared (SQLite and PostgreSQL)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.hub.conftest import Actors, LiveHub, clean_pip_env
from tests.hub.test_client_verbs import config, one_line_error, vf_hub  # noqa: F401 (config: a fixture)
from tests.hub.test_e2e import make_project, vf_push


def _pip_install(python: Path, index: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--no-deps",
            "--index-url",
            index,
            "demo-env",
        ],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
    )


def test_private_push_share_install_unshare_make_public(
    live_hub: LiveHub,
    actors: Actors,
    config: Path,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    make_venv: Callable[[str], Path],
) -> None:
    url = live_hub.url
    host = url.removeprefix("http://")
    project = make_project(tmp_path / "src")
    pushed = vf_push(project, url, actors.alice, "--visibility", "private")
    assert pushed.returncode == 0, pushed.stderr
    lines = pushed.stdout.splitlines()
    assert (
        "published alice/demo-env 0.1.0 (private: only members of alice and the users it is shared with can "
        "read or install it)"
    ) in lines, pushed.stdout
    assert (
        f"       or: pip install --index-url http://__token__:<token>@{host}/simple/ demo-env==0.1.0" in lines
    )
    assert "  share it: vf-hub env share alice/demo-env USER" in lines
    assert actors.alice not in pushed.stdout + pushed.stderr  # the token itself is never printed

    as_alice = ("--url", url, "--token", actors.alice)
    done = vf_hub("env", "grants", "alice/demo-env", *as_alice, config=config)
    assert done.returncode == 0 and done.stdout == "alice/demo-env is shared with no one\n", done.stdout
    done = vf_hub("env", "share", "demo-env", "bob", *as_alice, config=config)  # a bare name resolves
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "shared alice/demo-env with bob: they can now read and install it"
    assert f"pip install --index-url http://__token__:<token>@{host}/simple/ demo-env" in done.stdout
    listed = vf_hub("env", "grants", "alice/demo-env", *as_alice, config=config).stdout.splitlines()
    assert [line.split()[:2] for line in listed] == [["USER", "SHARED"], ["bob", "alice"]], listed

    # bob installs it with plain pip, his token in the index URL
    python = make_venv("bob")
    installed = _pip_install(python, f"http://__token__:{actors.bob}@{host}/simple/")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Successfully installed demo-env-0.1.0" in installed.stdout

    # bob may not share it on, nor change it
    refused = one_line_error(
        vf_hub("env", "share", "alice/demo-env", "root", "--url", url, "--token", actors.bob, config=config)
    )
    assert "HTTP 403" in refused
    refused = one_line_error(
        vf_hub(
            "env",
            "visibility",
            "alice/demo-env",
            "public",
            "--url",
            url,
            "--token",
            actors.bob,
            config=config,
        )
    )
    assert "HTTP 403" in refused

    done = vf_hub("env", "unshare", "alice/demo-env", "bob", *as_alice, config=config)
    assert done.returncode == 0 and done.stdout == "alice/demo-env is no longer shared with bob\n", (
        done.stdout
    )
    again = _pip_install(make_venv("bob-again"), f"http://__token__:{actors.bob}@{host}/simple/")
    assert again.returncode != 0, again.stdout
    missing = one_line_error(vf_hub("env", "unshare", "alice/demo-env", "bob", *as_alice, config=config))
    assert "is not shared with bob" in missing

    done = vf_hub("env", "visibility", "alice/demo-env", "public", *as_alice, config=config)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "alice/demo-env is now public: anyone can find, read and install it\n"
    anyone = _pip_install(make_venv("anyone"), f"{url}/simple/")
    assert anyone.returncode == 0, anyone.stdout + anyone.stderr
    done = vf_hub("env", "visibility", "alice/demo-env", "private", *as_alice, config=config)
    assert done.stdout.startswith("alice/demo-env is now private: only members of alice and the users")


def test_env_verbs_need_a_token_and_say_so(live_hub: LiveHub, actors: Actors, config: Path) -> None:  # noqa: F811
    missing = one_line_error(
        vf_hub("env", "share", "alice/demo-env", "bob", "--url", live_hub.url, config=config)
    )
    assert "no hub token" in missing
    refused = one_line_error(
        vf_hub(
            "env",
            "share",
            "alice/no-such-env",
            "bob",
            "--url",
            live_hub.url,
            "--token",
            actors.alice,
            config=config,
        )
    )
    assert "HTTP 404" in refused
