"""``vf-hub``: the Environments Hub from the command line.

The client verbs live here, in the SDK, and need nothing beyond a plain install: ``login``, ``logout``,
``whoami``, ``search``, ``info``, ``yank``/``unyank``, ``env visibility|share|unshare|grants`` and
``run visibility``/``run list`` talk to a hub over HTTP (``verifiers.hub.client``). The server and its admin tasks (``serve``, ``db``, ``user``, ``org``,
``token``, ``name``, ``gc``) belong to ``hub_server``, which the SDK never imports: after checking that the ``hub``
extra is installed (one line saying how to install it otherwise), ``vf-hub`` hands the process over to
``python -m hub_server.cli`` with the same arguments, so signals and exit statuses are the server's own.
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Literal

import typer

from verifiers._urls import redact_url
from verifiers.cli._common import EXIT_FAILED, fail, hand_over, run_command
from verifiers.hub import wire
from verifiers.hub.client import DEFAULT_URL, HubClient, HubClientError
from verifiers.hub.packaging import parse_env_spec

PROG = "vf-hub"
#: The module that runs the server side (``hub_server``'s own command line).
SERVER_MODULE = "hub_server.cli"

app = typer.Typer(
    help="The verifiers Environments Hub: log in, search, inspect, yank, share environments and manage "
    "eval runs on a hub; "
    "serve and administer one (serve, db, user, org, token, name, gc: the [hub] extra).",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
run_app = typer.Typer(
    help="Eval runs pushed to the hub (vf-push --results, vf-eval --push).", no_args_is_help=True
)
app.add_typer(run_app, name="run")
env_app = typer.Typer(
    help="An environment's visibility and the users it is shared with (owners and admins of its namespace).",
    no_args_is_help=True,
)
app.add_typer(env_app, name="env")

Url = Annotated[str | None, typer.Option("--url", help="Hub URL (default: VF_HUB_URL or `vf-hub login`).")]
Token = Annotated[
    str | None, typer.Option("--token", help="API token (default: VF_HUB_TOKEN or `vf-hub login`).")
]
Json = Annotated[bool, typer.Option("--json", help="Print the hub's JSON answer.")]


def _client(url: str | None, token: str | None, *, need_token: bool = False) -> HubClient:
    try:
        client = HubClient(url=url, token=token)
    except HubClientError as exc:
        fail(str(exc))
    if need_token and not client.token:
        client.close()
        fail(client.config.missing_token_message())
    return client


def _owner_and_name(client: HubClient, env: str) -> tuple[str, str]:
    """``owner/name``, or a bare name the hub resolves to its owner (names are unique hub-wide)."""
    try:
        spec = parse_env_spec(env)
    except ValueError as exc:
        fail(f"{env!r}: {exc}")
    if spec.specifier:
        fail(f"{env!r}: give the environment without a version here (owner/name or name)")
    if spec.owner:
        return spec.owner, spec.name
    return client.resolve(spec.name).owner, spec.name


# --- client verbs ---------------------------------------------------------------------------------------
@app.command()
def login(
    url: Annotated[
        str, typer.Option("--url", envvar="VF_HUB_URL", prompt="Hub URL", help=f"e.g. {DEFAULT_URL}")
    ] = DEFAULT_URL,
    token: Annotated[str, typer.Option("--token", envvar="VF_HUB_TOKEN", prompt=True, hide_input=True)] = "",
) -> None:
    """Check TOKEN against the hub at URL and store both for vf-push / vf-install (file mode 0600)."""
    from verifiers.hub.wire import save_config

    token = token.strip()
    if not token:
        fail("no token given: create one on the hub's /account page, or ask its admin (vf-hub token create)")
    with _client(url, token) as client:
        try:
            me = client.whoami()
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
        path = save_config(client.url, token)
    typer.echo(
        f"logged in to {redact_url(client.url)} as {me.username} (scopes {','.join(me.scopes)}); saved to {path}"
    )


@app.command()
def logout() -> None:
    """Forget the stored token (the hub URL stays the default). The token itself stays valid on the hub
    until it is revoked (on the hub's /account page, or `vf-hub token revoke` by an admin)."""
    from verifiers.hub.wire import forget_token

    path, had = forget_token()
    typer.echo(f"logged out: removed the token from {path}" if had else f"no stored token ({path})")
    if os.environ.get("VF_HUB_TOKEN"):
        typer.echo("note: VF_HUB_TOKEN is set in this shell and still supplies a token", err=True)


@app.command()
def whoami(url: Url = None, token: Token = None, json_output: Json = False) -> None:
    """The user the token belongs to, its scopes and namespaces."""
    with _client(url, token, need_token=True) as client:
        try:
            me = client.whoami()
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    if json_output:
        typer.echo(me.model_dump_json(indent=2))
        return
    admin = " (hub admin)" if me.is_admin else ""
    typer.echo(f"{me.username}{admin} on {redact_url(client.url)}")
    typer.echo(f"  scopes: {', '.join(me.scopes)}")
    typer.echo(f"  namespaces: {', '.join(me.namespaces)}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Text in the name, description or owner.")] = "",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Required tag (repeatable).")] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="Only this namespace.")] = None,
    sort: Annotated[
        Literal["downloads", "stars", "updated", "name"], typer.Option("--sort", help="Order of the results.")
    ] = "downloads",
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="Most results shown.")] = 20,
    url: Url = None,
    token: Token = None,
    json_output: Json = False,
) -> None:
    """Environments on the hub that match QUERY (the ones your token may see)."""
    with _client(url, token) as client:
        try:
            page = client.search(query, tags=tag or (), owner=owner, sort=sort, per_page=limit)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    if json_output:
        typer.echo(page.model_dump_json(indent=2))
        return
    if not page.items:
        typer.echo(f"no environments match {query!r}" if query else "no environments")
        return
    width = max(len(e.full_name) for e in page.items)
    for e in page.items:
        private = " [private]" if e.visibility == "private" else ""
        version = e.latest_version or "-"
        typer.echo(
            f"{e.full_name:<{width}}  {version:<10} {e.downloads:>6} ⬇ {e.stars:>4} ★  {e.description}{private}"
        )
    if page.total > len(page.items):
        typer.echo(f"({len(page.items)} of {page.total}; --limit shows more)")


@app.command()
def info(
    env: Annotated[str, typer.Argument(metavar="ENV", help="owner/name, or a name (unique on the hub).")],
    url: Url = None,
    token: Token = None,
    json_output: Json = False,
) -> None:
    """An environment: description, versions (yanked ones marked), install command, leaderboard."""
    with _client(url, token) as client:
        try:
            owner, name = _owner_and_name(client, env)
            detail = client.environment(owner, name)
            board = client.leaderboard(owner, name)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
        page = client.environment_url(detail.full_name)
    if json_output:
        typer.echo(detail.model_dump_json(indent=2))
        return
    private = " (private)" if detail.visibility == "private" else ""
    typer.echo(f"{detail.full_name}{private}: {detail.description or 'no description'}")
    typer.echo(f"  {page}")
    if detail.tags:
        typer.echo(f"  tags: {', '.join(detail.tags)}")
    typer.echo(f"  {detail.downloads} downloads, {detail.stars} stars, module {detail.module}")
    typer.echo(f"  install: {detail.install_command}")
    typer.echo("versions:")
    for v in detail.versions:
        yanked = f"  yanked: {v.yanked_reason or 'no reason given'}" if v.yanked else ""
        latest = "  (latest)" if v.version == detail.latest_version else ""
        typer.echo(
            f"  {v.version:<12} {v.created_at:%Y-%m-%d}  content hash {v.content_hash[:12]}…{latest}{yanked}"
        )
    if board.entries:
        typer.echo(f"leaderboard ({wire.LEADERBOARD_RANKING}):")
        for e in board.entries[:10]:
            mean = "—" if e.avg_reward is None else f"{e.avg_reward:.3f}"
            ci = (
                f", {wire.ci_text(e.reward_ci_low, e.reward_ci_high)}"
                if e.reward_ci_low is not None and e.reward_ci_high is not None
                else ""
            )
            typer.echo(
                f"  {e.model}  {e.version}  mean {mean}{ci}  ({e.rollout_count} rollouts, eval {e.run_id})"
            )


def _set_yanked(
    env: str, version: str, yanked: bool, reason: str, url: str | None, token: str | None
) -> None:
    with _client(url, token, need_token=True) as client:
        try:
            owner, name = _owner_and_name(client, env)
            if yanked:
                done = client.yank(owner, name, version, reason)
            else:
                done = client.unyank(owner, name, version)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    if done.yanked:
        typer.echo(
            f"yanked {owner}/{name} {done.version}: out of resolution, still installable pinned "
            f"(@=={done.version})"
        )
    else:
        typer.echo(f"unyanked {owner}/{name} {done.version}: it resolves again")


@app.command()
def yank(
    env: Annotated[str, typer.Argument(metavar="ENV", help="owner/name, or a name (unique on the hub).")],
    version: Annotated[str, typer.Argument(help="The version to take out of resolution.")],
    reason: Annotated[str, typer.Option("--reason", help="Shown on the version's page and to pip.")] = "",
    url: Url = None,
    token: Token = None,
) -> None:
    """Take VERSION out of resolution (never deleted: still downloadable and installable with ==)."""
    _set_yanked(env, version, True, reason, url, token)


@app.command()
def unyank(
    env: Annotated[str, typer.Argument(metavar="ENV", help="owner/name, or a name (unique on the hub).")],
    version: Annotated[str, typer.Argument(help="The yanked version to put back.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Put a yanked VERSION back into resolution."""
    _set_yanked(env, version, False, "", url, token)


EnvArg = Annotated[str, typer.Argument(metavar="ENV", help="owner/name, or a name (unique on the hub).")]
UserArg = Annotated[str, typer.Argument(metavar="USER", help="The user's name on the hub.")]


@env_app.command("visibility")
def env_visibility(
    env: EnvArg,
    visibility: Annotated[Literal["public", "private"], typer.Argument(help="public or private.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Make ENV public (anyone finds, reads and installs it) or private (its namespace and the users it
    is shared with)."""
    with _client(url, token, need_token=True) as client:
        try:
            owner, name = _owner_and_name(client, env)
            detail = client.set_visibility(owner, name, visibility)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    if detail.visibility == "public":
        typer.echo(f"{detail.full_name} is now public: anyone can find, read and install it")
    else:
        typer.echo(
            f"{detail.full_name} is now private: only members of {detail.owner} and the users it is shared "
            f"with (vf-hub env share {detail.full_name} USER) can read or install it"
        )


@env_app.command("share")
def env_share(env: EnvArg, user: UserArg, url: Url = None, token: Token = None) -> None:
    """Let USER read and install ENV while it is private (a read grant; no publishing, no private runs)."""
    with _client(url, token, need_token=True) as client:
        try:
            owner, name = _owner_and_name(client, env)
            grant = client.share(owner, name, user)
            detail = client.environment(owner, name)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
        index = client.token_index_url()
    typer.echo(f"shared {grant.environment} with {grant.username}: they can now read and install it")
    typer.echo(f"  {grant.username} installs it with a token of theirs: vf-install {grant.environment}")
    typer.echo(f"    or: pip install --index-url {index} {detail.name}")
    if detail.visibility == "public":
        typer.echo(
            f"note: {grant.environment} is public, so anyone reads it; the grant counts while it is private"
        )


@env_app.command("unshare")
def env_unshare(env: EnvArg, user: UserArg, url: Url = None, token: Token = None) -> None:
    """Revoke USER's read grant on ENV (refused from USER's next request on)."""
    with _client(url, token, need_token=True) as client:
        try:
            owner, name = _owner_and_name(client, env)
            client.unshare(owner, name, user)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    typer.echo(f"{owner}/{name} is no longer shared with {user.lower()}")


@env_app.command("grants")
def env_grants(env: EnvArg, url: Url = None, token: Token = None, json_output: Json = False) -> None:
    """The users ENV is shared with, who shared it and when."""
    with _client(url, token, need_token=True) as client:
        try:
            owner, name = _owner_and_name(client, env)
            grants = client.grants(owner, name)
            detail = client.environment(owner, name)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    if json_output:
        typer.echo(json.dumps([g.model_dump(mode="json") for g in grants], indent=2))
        return
    if not grants:
        typer.echo(f"{detail.full_name} is shared with no one")
    else:
        width = max(len("USER"), *(len(g.username) for g in grants))
        by = max(len("SHARED BY"), *(len(g.granted_by or "-") for g in grants))
        typer.echo(f"{'USER':<{width}}  {'SHARED BY':<{by}}  SINCE")
        for g in grants:
            typer.echo(f"{g.username:<{width}}  {g.granted_by or '-':<{by}}  {g.created_at:%Y-%m-%d}")
    if detail.visibility == "public":
        typer.echo(
            f"note: {detail.full_name} is public, so anyone reads it; grants count while it is private"
        )


@run_app.command("visibility")
def run_visibility(
    run_id: Annotated[
        int, typer.Argument(metavar="RUN_ID", help="The eval run's id (its page: …/evals/RUN_ID).")
    ],
    visibility: Annotated[Literal["public", "private"], typer.Argument(help="public or private.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Make an eval run public (it goes on the leaderboard) or private again."""
    with _client(url, token, need_token=True) as client:
        try:
            run = client.set_run_visibility(run_id, visibility)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
        page = client.url + run.url
    board = "on the leaderboard" if run.visibility == "public" else "off the leaderboard"
    typer.echo(f"eval run {run.id} of {run.environment} ({run.model}) is {run.visibility}: {board}")
    typer.echo(f"  {page}")


@run_app.command("list")
def run_list(
    env: Annotated[str, typer.Argument(metavar="ENV", help="owner/name, or a name (unique on the hub).")],
    model: Annotated[str | None, typer.Option("--model", help="Only runs of this model.")] = None,
    version: Annotated[str | None, typer.Option("--version", help="Only runs of this version.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="Most runs shown.")] = 20,
    url: Url = None,
    token: Token = None,
) -> None:
    """The eval runs of ENV you may see, newest first."""
    with _client(url, token) as client:
        try:
            owner, name = _owner_and_name(client, env)
            page = client.runs(owner, name, model=model, version=version, per_page=limit)
        except HubClientError as exc:
            fail(str(exc), EXIT_FAILED)
    if not page.items:
        typer.echo(f"no eval runs of {owner}/{name} you may see")
        return
    header = ("RUN", "VISIBILITY", "STATUS", "MODEL", "VERSION", "MEAN", "ROLLOUTS", "CREATED")
    rows = [
        (
            str(r.id),
            r.visibility,
            r.status,
            r.model,
            r.version,
            "—" if r.avg_reward is None else f"{r.avg_reward:.3f}",
            str(r.rollout_count),
            f"{r.created_at:%Y-%m-%d}",
        )
        for r in page.items
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


# --- the server side: handed to hub_server ---------------------------------------------------------------
SERVER_COMMANDS = {
    "serve": "Serve the API, the simple index and the web UI ([hub] extra; --demo for sample content).",
    "db": "Database migrations ([hub] extra).",
    "user": "Create users, on the hub's database ([hub] extra).",
    "org": "Organisations (shared namespaces), on the hub's database ([hub] extra).",
    "token": "Create, list and revoke any user's API tokens, on the hub's database ([hub] extra).",
    "name": "Let an owner publish a name the upstream index serves (allow, revoke, list; [hub] extra).",
    "gc": "Delete artifact blobs no version references ([hub] extra).",
}


def _server(ctx: typer.Context) -> None:
    command = ctx.info_name or ""
    hand_over(SERVER_MODULE, [command, *ctx.args], extra="hub", what=f"{PROG} {command}")


for _name, _help in SERVER_COMMANDS.items():
    app.command(
        _name,
        help=_help,
        add_help_option=False,  # `vf-hub serve --help` is the server's own help
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(_server)


def main(args: list[str] | None = None) -> None:
    run_command(PROG, app, args)


if __name__ == "__main__":
    main()
