"""``vf-eval``: evaluate an environment against an OpenAI-compatible endpoint (or the embedded local model).

A thin layer: it parses flags, calls ``verifiers`` (``load_environment``, ``eval_defaults``,
``Environment.a_evaluate``, ``rescore``, the endpoint registry and the local model server) and displays
the results. Run ``vf-eval --help`` for the flags; docs/cli.md is the guide.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from verifiers._extras import MissingExtraError
from verifiers.cli._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UNBOUNDED_WIDTH,
    CliError,
    exit_with_error,
    fail,
    hand_over,
    make_app,
    parse_json_object,
    run_command,
    setup_logging,
)

if TYPE_CHECKING:  # imported lazily at run time: `vf-eval --help` stays fast
    from verifiers.envs.environment import Environment
    from verifiers.eval.config import EvalConfig, SuiteEntry
    from verifiers.eval.launch import LocalModels
    from verifiers.eval.run import EvalRun
    from verifiers.hub.results import PushTarget
    from verifiers.jobs.suite import SuiteItem
    from verifiers.types import RunMetadata

PROG = "vf-eval"
# Shown in --help; the values themselves live in the library (verifiers.eval.config, verifiers.clients.target).
DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_VAR = "OPENAI_API_KEY"
#: Widest sample table (its text columns are clipped to fit).
SAMPLE_WIDTH = 200
log = logging.getLogger("verifiers.cli.eval")

app = make_app(
    "Evaluate environment ENV_ID (installed, or under ./environments/) against an OpenAI-compatible "
    "endpoint, the embedded local model with -m local/smollm2 (or -m local:/path/to/model.gguf), or the "
    "scripted model with -m scripted:RULES.toml (answers from a rules file, for offline tests). "
    "`vf-eval @ SUITE.toml` runs every [[eval]] table of a suite file in order (flags given here "
    "override the file's). Results stream to ./outputs/evals/<env>--<model>/<timestamp-id>/ "
    "(results.jsonl + metadata.json). Each setting comes from the flags, then a resumed run, then the "
    "environment package's [tool.verifiers.eval] defaults, then built-in defaults (all examples, 1 "
    "rollout each); --dry-run shows the result and where each value came from. `vf-eval view RUN_DIR` "
    "serves a run's pages locally (vf-view); `vf-eval report RUN_DIR…` prints the benchmark table of "
    "saved runs. Exit status: 0 ok, 1 every rollout failed or the endpoint was unreachable, 2 bad input, "
    "130 interrupted."
)
#: ``vf-eval view RUN_DIR …`` is ``vf-view RUN_DIR …`` (the pages are the hub's: hub_server).
VIEW_COMMAND = "view"
#: ``vf-eval report RUN_DIR …``: the benchmark table of saved runs.
REPORT_COMMAND = "report"


def _normalize_argv(argv: list[str]) -> list[str]:
    """Rewrite what click cannot express. ``-R/--resume`` takes an optional PATH: a bare flag becomes
    ``--resume=`` (the newest incomplete run) and ``-R PATH`` ``--resume=PATH``; a following word counts
    as PATH only if it looks like one (contains a slash or exists), so ``-R ENV_ID`` works. ``@ FILE``
    and ``@FILE`` name a suite file (``--suite=FILE``)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg in ("-R", "--resume"):
            if nxt is not None and not nxt.startswith("-") and (os.sep in nxt or Path(nxt).exists()):
                out.append(f"--resume={nxt}")
                i += 2
                continue
            out.append("--resume=")
        elif arg == "--ray":  # an optional ADDRESS: only a word that looks like one
            if nxt is not None and (nxt in ("auto", "local") or ":" in nxt):
                out.append(f"--ray={nxt}")
                i += 2
                continue
            out.append("--ray=local")
        elif arg == "@" and nxt is not None:
            out.append(f"--suite={nxt}")
            i += 2
            continue
        elif arg.startswith("@") and len(arg) > 1:
            out.append(f"--suite={arg[1:]}")
        else:
            out.append(arg)
        i += 1
    return out


def _package_defaults(env_id: str) -> dict[str, Any]:
    from verifiers.envs.loading import eval_defaults
    from verifiers.errors import EnvNotFoundError, VerifiersError

    try:
        return eval_defaults(env_id)
    except EnvNotFoundError as exc:
        fail(str(exc))
    except VerifiersError as exc:
        fail(str(exc))


def _load_env(env_id: str, env_args: dict[str, Any], verbose: bool) -> Environment:
    import verifiers as vf
    from verifiers.errors import EnvArgumentError, EnvNotFoundError, VerifiersError

    try:
        return vf.load_environment(env_id, **env_args)
    except EnvNotFoundError as exc:
        fail(str(exc))
    except EnvArgumentError as exc:
        fail(f"-a/--env-args: {exc}")
    except VerifiersError as exc:
        fail(str(exc), EXIT_FAILED)
    except Exception as exc:
        if verbose:
            log.exception("load_environment(%r) failed", env_id)
        fail(f"loading environment {env_id!r} failed: {type(exc).__name__}: {exc}", EXIT_FAILED)


# --- running -----------------------------------------------------------------------------------------
async def _evaluate(
    env: Environment, config: EvalConfig, console: Console, local_models: LocalModels | None
) -> EvalRun:
    from verifiers.cli._display import ProgressDisplay
    from verifiers.eval.engine import RunProgress
    from verifiers.eval.launch import run_config

    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)  # finish like Ctrl-C: metadata says cancelled

    def notify(message: str) -> None:
        console.print(f"[yellow]note:[/] {escape(message)}")

    try:
        progress = RunProgress()
        # run_config makes the client (a local model starting, the endpoint check) before the run
        # directory: a start-up that fails leaves nothing under outputs/evals/.
        async with ProgressDisplay(console, progress, f"{env.env_id} · {config.model}"):
            return await run_config(env, config, progress=progress, notify=notify, local_models=local_models)
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def _json_dump(data: dict[str, Any]) -> None:
    import orjson

    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # e.g. an integer beyond 64 bits in env_args: the results files' rule applies
        import json

        from verifiers.eval.results import to_json_value

        text = json.dumps(to_json_value(data), indent=2, ensure_ascii=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _all_failed(meta: RunMetadata) -> bool:
    c = meta.counts
    return c.completed > 0 and sum(c.errored.values()) == c.completed


def _failure_message(meta: RunMetadata, results: list[dict[str, Any]], hint: str) -> str:
    from verifiers.cli._display import error_examples

    examples = error_examples(results)
    parts = [f"{cat} {n}" for cat, (n, _) in sorted(examples.items())]
    first = next(iter(sorted(examples.items())), None)
    example = f"; e.g. {first[1][1][:200]}" if first else ""
    cats = set(examples)
    if cats & {"model", "infra"}:
        what = f"check {hint}"
    else:
        what = "check the environment (its load_environment arguments, rubric and dataset)"
    return f"every rollout failed ({', '.join(parts)}{example}); {what}"


# --- the command ---------------------------------------------------------------------------------------
@app.command()
def eval_command(
    env_id: Annotated[
        str | None,
        typer.Argument(metavar="ENV_ID", help="Environment id, e.g. math-env.", show_default=False),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "-m",
            "--model",
            help=f"Model name, an alias of the endpoint registry (-e), local/smollm2, local:/path/to/model.gguf, or scripted:RULES.toml (the scripted model, docs/tools.md) [default: {DEFAULT_MODEL}].",
            show_default=False,
        ),
    ] = None,
    api_base_url: Annotated[
        str | None,
        typer.Option(
            "-b",
            "--api-base-url",
            help=f"OpenAI-compatible base URL [default: {DEFAULT_BASE_URL}].",
            show_default=False,
        ),
    ] = None,
    api_key_var: Annotated[
        str | None,
        typer.Option(
            "-k",
            "--api-key-var",
            help=f"Name of the environment variable holding the API key [default: {DEFAULT_KEY_VAR}]. Given explicitly, an unset variable is an error; the default may be unset (servers without auth).",
            show_default=False,
        ),
    ] = None,
    num_examples: Annotated[
        int | None,
        typer.Option(
            "-n",
            "--num-examples",
            min=-1,
            help="Examples to evaluate, -1 = all [default: package default, else all].",
            show_default=False,
        ),
    ] = None,
    rollouts_per_example: Annotated[
        int | None,
        typer.Option(
            "-r",
            "--rollouts-per-example",
            min=1,
            help="Rollouts per example [default: package default, else 1].",
            show_default=False,
        ),
    ] = None,
    max_rollouts: Annotated[
        int | None,
        typer.Option(
            "--max-rollouts",
            min=1,
            help="The most rollouts (examples × rollouts per example) the run may plan [default: $VF_MAX_ROLLOUTS, else 100000].",
            show_default=False,
        ),
    ] = None,
    max_concurrent: Annotated[
        str | None,
        typer.Option(
            "-c",
            "--max-concurrent",
            metavar="N|auto|FLOOR:CEIL",
            help="Rollouts in flight at once; auto (or FLOOR:CEIL) adapts to the endpoint: additive increase, halved on 429, 503 and timeouts [default: 32].",
            show_default=False,
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="[ADDRESS]",
            help="Run the rollouts on Ray actors (one per node): without ADDRESS a Ray instance started here; auto, ray://HOST:10001 or a head HOST:PORT joins a cluster. Needs the ray extra.",
            show_default=False,
        ),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option("-t", "--max-tokens", min=1, help="max_tokens per model call.", show_default=False),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("-T", "--temperature", help="Sampling temperature.", show_default=False)
    ] = None,
    sampling_args: Annotated[
        str | None,
        typer.Option(
            "-S",
            "--sampling-args",
            metavar="JSON",
            help='Sampling arguments as a JSON object; overrides -t/-T. Server-specific ones go in "extra_body".',
            show_default=False,
        ),
    ] = None,
    env_args: Annotated[
        str | None,
        typer.Option(
            "-a",
            "--env-args",
            metavar="JSON",
            help="Keyword arguments for load_environment, as a JSON object.",
            show_default=False,
        ),
    ] = None,
    extra_env_kwargs: Annotated[
        str | None,
        typer.Option("-x", "--extra-env-kwargs", hidden=True, show_default=False),
    ] = None,
    save_results: Annotated[
        bool | None,
        typer.Option(
            "--save-results/--no-save",
            "-s",
            help="Save results.jsonl and metadata.json [default: save].",
            show_default=False,
        ),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output-dir",
            help="Run directory [default: ./outputs/evals/<env>--<model>/<timestamp-id>/].",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "-R",
            "--resume",
            metavar="[PATH]",
            help="Complete an interrupted run: PATH, or without PATH the newest incomplete run of this env and model (a new run if there is none). Unset settings default to the saved run's.",
            show_default=False,
        ),
    ] = None,
    shuffle: Annotated[
        bool, typer.Option("--shuffle", help="Shuffle the examples (seeded by --seed).")
    ] = False,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed for --shuffle [default: 0].", show_default=False)
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Wall-clock budget per rollout in seconds [default: the environment's].",
            show_default=False,
        ),
    ] = None,
    request_timeout: Annotated[
        float | None,
        typer.Option(
            "--request-timeout",
            min=0.001,
            help="Bound on one model request in seconds, retries included [default: connect 10 s, first byte 300 s, one attempt 600 s, 900 s in all; 3600 s for local models].",
            show_default=False,
        ),
    ] = None,
    max_retries: Annotated[
        int | None,
        typer.Option(
            "--max-retries",
            min=0,
            help="Retries per model request on connection errors, 429 and 5xx [default: 5].",
            show_default=False,
        ),
    ] = None,
    endpoints: Annotated[
        Path | None,
        typer.Option(
            "-e",
            "--endpoints",
            help="Endpoint registry TOML (aliases → url, key variable, model; repeated aliases are replicas) [default: ./configs/endpoints.toml if present].",
            show_default=False,
        ),
    ] = None,
    client_backend: Annotated[
        str | None,
        typer.Option(
            "--client",
            metavar="aiohttp|openai",
            help="Request transport: the fast built-in one, or the openai SDK (Azure, organisation/project headers, --api responses) [default: aiohttp].",
            show_default=False,
        ),
    ] = None,
    api: Annotated[
        str | None,
        typer.Option(
            "--api",
            metavar="chat|responses",
            help="API of chat environments: Chat Completions, or the Responses API (needs --client openai) [default: chat].",
            show_default=False,
        ),
    ] = None,
    return_tokens: Annotated[
        str | None,
        typer.Option(
            "--return-tokens",
            metavar="none|token_ids|logprobs|both",
            help="Ask a vLLM server for tokens: token_ids sends return_token_ids (prompt and completion ids), logprobs sends logprobs with return_tokens_as_token_ids, both sends all three (what a trainer needs) [default: none].",
            show_default=False,
        ),
    ] = None,
    interleaved_thinking: Annotated[
        bool | None,
        typer.Option(
            "--interleaved-thinking/--drop-thinking",
            help="Send earlier turns' reasoning (reasoning_content, <think> text) back to the model, or drop it from later requests [default: the environment's; keep].",
            show_default=False,
        ),
    ] = None,
    max_seq_len: Annotated[
        int | None,
        typer.Option(
            "--max-seq-len",
            min=1,
            help="Token budget of one model call's prompt + completion: a prompt that no longer fits ends the rollout as truncated [default: the environment's; none].",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the resolved settings and where each came from, and exit."),
    ] = False,
    suite: Annotated[
        Path | None,
        typer.Option(
            "--suite",
            metavar="FILE",
            help="Suite file of [[eval]] tables (also: @ FILE).",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Log retries and more; tracebacks on unexpected errors.")
    ] = False,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print a machine-readable summary on stdout (progress goes to stderr)."),
    ] = False,
    rescore: Annotated[
        Path | None,
        typer.Option(
            "--rescore",
            metavar="RUN_DIR",
            help="Re-score the saved completions of RUN_DIR with the environment's current rubric (no model calls); writes a new run directory.",
            show_default=False,
        ),
    ] = None,
    push: Annotated[
        bool,
        typer.Option(
            "--push",
            help="When the run has finished, upload it to the hub as a private eval run (like vf-push --results RUN_DIR). The token, the hub and the environment's published version are checked before the first rollout.",
        ),
    ] = False,
    hub_token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Hub token for --push [default: VF_HUB_TOKEN or vf-hub login].",
            show_default=False,
        ),
    ] = None,
    hub_url: Annotated[
        str | None,
        typer.Option(
            "--hub-url", help="Hub URL for --push [default: VF_HUB_URL or vf-hub login].", show_default=False
        ),
    ] = None,
    view: Annotated[
        bool,
        typer.Option(
            "--view",
            help="When the run has finished, serve its pages on a loopback port until Ctrl-C (vf-view; needs the hub extra).",
        ),
    ] = False,
) -> None:
    setup_logging(verbose)
    out = Console(stderr=json_output)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = UNBOUNDED_WIDTH  # logs and pipes: rich would fold every line at an assumed 80 columns
    if extra_env_kwargs is not None:
        fail(
            "-x/--extra-env-kwargs was removed (it set attributes on a built environment): pass "
            "load_environment arguments with -a/--env-args, and the rollout budget with --timeout"
        )
    env_args_d = parse_json_object(env_args, "-a/--env-args")
    sampling_d = parse_json_object(sampling_args, "-S/--sampling-args")
    if rescore is not None:
        _rescore(
            rescore, env_id, env_args_d, output_dir, save_results is not False, json_output, verbose, out
        )
        return
    shortcuts = {
        k: v for k, v in {"max_tokens": max_tokens, "temperature": temperature}.items() if v is not None
    }
    flags: dict[str, Any] = {
        "env_args": env_args_d,
        "model": model,
        "base_url": api_base_url,
        "api_key_var": api_key_var,
        "endpoints_file": endpoints,
        "client_backend": client_backend,
        "api": api,
        "num_examples": num_examples,
        "rollouts_per_example": rollouts_per_example,
        "max_rollouts": max_rollouts,
        "max_concurrent": max_concurrent,
        "ray": ray,
        "sampling_args": {**shortcuts, **(sampling_d or {})} or None,
        "seed": seed,
        "shuffle": True if shuffle else None,
        "timeout": timeout,
        "request_timeout": request_timeout,
        "max_retries": max_retries,
        "save_results": save_results,
        "output_dir": output_dir,
        "resume": (Path(resume) if resume else True) if resume is not None else None,
        "return_tokens": return_tokens,
        "interleaved_thinking": interleaved_thinking,
        "max_seq_len": max_seq_len,
    }
    if (hub_token is not None or hub_url is not None) and not push:
        fail("--token and --hub-url are for --push (uploading the run to the hub)")
    hub = _Hub(hub_url, hub_token) if push else None
    if suite is not None:
        if env_id is not None:
            fail(f"give either ENV_ID or a suite file, not both ({env_id!r} and {suite})")
        if view:
            fail("--view shows one run; after a suite, look at each with: vf-eval view RUN_DIR")
        _run_suite(suite, flags, dry_run=dry_run, json_output=json_output, verbose=verbose, out=out, hub=hub)
        return
    if env_id is None:
        from verifiers.envs.loading import known_environments

        known = known_environments()
        fail(f"missing ENV_ID; available: {', '.join(known) or 'none (create one with vf-init NAME)'}")
    config = _resolve(env_id, [("flag", flags)])
    if dry_run:
        _show_config(config, out, json_output)
        return
    if (push or view) and (not config.save_results or config.output_dir is None):
        fail(
            f"{'--push' if push else '--view'} needs the saved run directory; it cannot be combined with --no-save"
        )
    env = _load_env(config.env_id, config.env_args, verbose)
    target = hub.check(env.env_id, env.env_version, env.env_content_hash) if hub is not None else None
    run = _run_env(env, config, out, verbose)
    failure = _report(run, target_of_hint(config), out, json_output, verbose)
    if failure is not None:
        where = f"; look at it with: {PROG} {VIEW_COMMAND} {run.path}" if view and run.path else ""
        fail(failure + ("; nothing was pushed" if hub is not None else "") + where, EXIT_FAILED)
    if hub is not None and run.path is not None:
        hub.push(run.path, target, err=json_output)
    if view and run.path is not None:
        _view([str(run.path)])


class _Hub:
    """Where ``--push`` uploads: checked before the first rollout, used when the run has finished."""

    def __init__(self, url: str | None, token: str | None) -> None:
        self.url, self.token = url, token

    def check(self, env_id: str, version: str, content_hash: str, *, before: str = "the run") -> PushTarget:
        from verifiers.cli.push import check_push

        return check_push(env_id, version, content_hash, url=self.url, token=self.token, before=before)

    def check_suite(self, items: Sequence[SuiteItem]) -> dict[int, PushTarget]:
        """``--push`` for a suite: every entry checked before the first runs (``check_suite_push``)."""
        from verifiers.hub.client import HubClient
        from verifiers.jobs.suite import SuitePushError, check_suite_push

        with HubClient(url=self.url, token=self.token) as client:
            if not client.token:
                fail(f"--push: {client.config.missing_token_message()}")
            try:
                return check_suite_push(items, client)
            except SuitePushError as exc:
                fail(str(exc), EXIT_FAILED)

    def push(self, run_dir: Path, target: PushTarget | None, *, err: bool) -> None:
        from verifiers.cli.push import push_results

        push_results(run_dir, url=self.url, token=self.token, err=err, target=target)


def _view(args: list[str]) -> NoReturn:
    """Become ``vf-view ARGS`` (the hub's pages for a local run directory: ``verifiers.cli.view``)."""
    from verifiers.cli.view import VIEW_MODULE

    hand_over(VIEW_MODULE, args, extra="hub", what=f"{PROG} {VIEW_COMMAND}")


def target_of_hint(config: EvalConfig) -> str:
    from verifiers.eval.launch import target_of

    return target_of(config).hint()


def _resolve(env_id: str, layers: list[tuple[str, dict[str, Any]]]) -> EvalConfig:
    from verifiers.errors import VerifiersError
    from verifiers.eval.config import ConfigError
    from verifiers.eval.runs import ResumeMismatchError
    from verifiers.jobs.suite import resolve_run_config

    try:
        return resolve_run_config(env_id, layers)
    except ResumeMismatchError as exc:
        fail(str(exc))
    except ConfigError as exc:
        fail(_flag_names(str(exc)))
    except VerifiersError as exc:  # the package's defaults cannot be read, or it is not installed
        fail(str(exc))


#: Library setting names → the flags that set them, for error messages. Only names that cannot be
#: ordinary words (``model``, ``seed`` … are left alone; they read the same as their flags).
_FLAGS = {
    "save_results=False": "--no-save",
    "base_url": "-b/--api-base-url",
    "api_key_var": "-k/--api-key-var",
    "endpoints_file": "-e/--endpoints",
    "client_backend": "--client",
    "num_examples": "-n/--num-examples",
    "rollouts_per_example": "-r/--rollouts-per-example",
    "max_concurrent": "-c/--max-concurrent",
    "sampling_args": "-S/--sampling-args",
    "env_args": "-a/--env-args",
    "request_timeout": "--request-timeout",
    "max_retries": "--max-retries",
    "save_results": "--save-results/--no-save",
    "output_dir": "-o/--output-dir",
    "return_tokens": "--return-tokens",
    "interleaved_thinking": "--interleaved-thinking/--drop-thinking",
    "max_seq_len": "--max-seq-len",
}
_FLAG_NAME = re.compile(r"(?<![\w-])(" + "|".join(re.escape(k) for k in _FLAGS) + r")(?!\w)")


def _flag_names(message: str) -> str:
    """A library message in the CLI's terms: each setting name becomes the flag that sets it."""
    return _FLAG_NAME.sub(lambda m: _FLAGS[m.group(1)], message)


def _show_config(config: EvalConfig, out: Console, json_output: bool) -> None:
    if json_output:
        _json_dump({"config": config.model_dump(mode="json", exclude={"sources"}), "sources": config.sources})
        return
    from rich.table import Table

    table = Table(title=f"vf-eval {config.env_id} (dry run: nothing was started)", title_justify="left")
    table.add_column("setting")
    table.add_column("value")
    table.add_column("from", style="dim")
    for name, value, source in config.explain():
        shown = str(value) if isinstance(value, str | Path) else repr(value)
        table.add_row(name, escape(shown), source)
    out.print(table)
    for note in config.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")


def _run_suite(
    path: Path,
    flags: dict[str, Any],
    *,
    dry_run: bool,
    json_output: bool,
    verbose: bool,
    out: Console,
    hub: _Hub | None,
) -> None:
    from verifiers.cli._display import SuiteRow, suite_table
    from verifiers.eval.config import ConfigError
    from verifiers.jobs.suite import SuiteOutcome, plan_suite, run_suite

    try:
        items = plan_suite(path, flags)
    except ConfigError as exc:  # the file, or an entry's settings (named)
        fail(_flag_names(str(exc)))
    targets = hub.check_suite(items) if hub is not None and not dry_run else {}

    def title(item: SuiteItem) -> None:
        # Entry, environment and model first: a bounded rule cuts a long suite path, not what matters.
        head = f"[[eval]] #{item.index} {item.config.env_id} · {item.config.model} ({path})"
        _rule(out, f"[bold]{item.index}/{len(items)}[/] {escape(head)}")

    if dry_run:
        for item in items:
            title(item)
            _show_config(item.config, out, json_output)
        _show_protocol([i.entry for i in items], [i.config for i in items], out, json_output)
        return

    def run_one(item: SuiteItem, local_models: LocalModels) -> EvalRun:
        title(item)
        try:
            env = _load_env(item.config.env_id, item.config.env_args, verbose)
            run = _run_env(env, item.config, out, verbose, local_models)
            failure = _report(run, target_of_hint(item.config), out, json_output, verbose)
        except CliError as exc:
            if exc.code == EXIT_INTERRUPTED:
                raise _Interrupted(exc) from None
            out.print(f"[red]{escape(item.entry.origin)} failed:[/] {escape(str(exc))}")
            raise
        if failure is not None:
            failure += "; not pushed" if hub is not None else ""
            out.print(f"[red]{escape(item.entry.origin)} failed:[/] {escape(failure)}")
            raise CliError(failure, EXIT_FAILED)
        return run

    def push(outcome: SuiteOutcome) -> None:
        assert hub is not None and outcome.path is not None
        hub.push(outcome.path, targets.get(outcome.item.index), err=json_output)

    try:
        outcomes = run_suite(items, run_one, push=push if hub is not None else None)
    except _Interrupted as stop:
        raise stop.error from None
    rows = [
        SuiteRow(o.item.entry, o.item.config.model, o.metadata, o.path, o.failure, o.pushed) for o in outcomes
    ]
    out.print()
    out.print(suite_table(rows, pushed=hub is not None))
    failed = [row.origin for row in rows if row.failure is not None]
    if failed:
        fail(f"{len(failed)} of {len(items)} evaluations failed: {', '.join(failed)}", EXIT_FAILED)


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C during a suite entry: stops the suite (``run_suite`` records an ``Exception`` and goes on)."""

    def __init__(self, error: CliError) -> None:
        super().__init__(str(error))
        self.error = error


def _show_protocol(
    entries: list[SuiteEntry], configs: list[EvalConfig], out: Console, json_output: bool
) -> None:
    """A suite's protocol: every setting that decides a number, with where its value comes from."""
    from rich.table import Table

    from verifiers.eval.report import package_drift, protocol_rows

    rows = protocol_rows(entries, configs)
    drift = [note for entry in entries for note in package_drift(entry, _package_defaults(entry.env_id))]
    if json_output:
        _json_dump({"protocol": [r.model_dump(mode="json") for r in rows], "package_drift": drift})
        return
    table = Table(title="Protocol (dry run: nothing was started)", title_justify="left")
    for name in ("benchmark", "setting", "value"):
        table.add_column(name)
    table.add_column("source", overflow="fold")
    for r in rows:
        table.add_row(escape(r.benchmark), r.setting, escape(repr(r.value)), escape(r.source))
    out.print(table)
    for note in drift:
        out.print(f"[yellow]note:[/] {escape(note)}")


#: Widest rule between suite entries when the output is not a terminal (logs, pipes).
PLAIN_RULE_WIDTH = 100


def _rule(out: Console, title: str) -> None:
    """A titled rule across the terminal, or ``PLAIN_RULE_WIDTH`` wide in a log (whose console is
    ``UNBOUNDED_WIDTH`` wide, so that tables do not fold)."""
    from rich.rule import Rule

    if out.is_terminal:
        out.rule(title)
    else:
        out.print(Rule(title), width=min(out.width, PLAIN_RULE_WIDTH))


def _run_env(
    env: Environment, config: EvalConfig, out: Console, verbose: bool, local_models: LocalModels | None = None
) -> EvalRun:
    """Run ``config`` on the loaded ``env``; a run that cannot start exits with its one-line reason."""
    from verifiers.clients._server_process import ModelServerError
    from verifiers.eval.config import ConfigError
    from verifiers.eval.distributed import RayUnavailableError, WorkerLostError
    from verifiers.eval.launch import EndpointCheckError
    from verifiers.eval.results import RunDirectoryBusyError
    from verifiers.eval.runs import ResumeMismatchError
    from verifiers.eval.sync import run_async

    try:
        return run_async(_evaluate(env, config, out, local_models))
    except (ResumeMismatchError, FileExistsError, RunDirectoryBusyError) as exc:
        fail(str(exc))
    except ConfigError as exc:
        fail(_flag_names(str(exc)))
    except (ModelServerError, EndpointCheckError) as exc:
        fail(str(exc), EXIT_FAILED)
    except (RayUnavailableError, WorkerLostError) as exc:  # a cluster that cannot be reached, or is gone
        fail(str(exc), EXIT_FAILED)
    except (KeyboardInterrupt, asyncio.CancelledError):
        saved = config.save_results and config.output_dir is not None
        if saved and (Path(str(config.output_dir)) / "metadata.json").is_file():
            hint = f"; complete it with: {PROG} {env.env_id} -m {config.model} --resume {config.output_dir}"
        else:
            hint = " before the first rollout; nothing was written"
        raise CliError(f"interrupted{hint}", EXIT_INTERRUPTED) from None


def _report(run: EvalRun, hint: str, out: Console, json_output: bool, verbose: bool) -> str | None:
    """Show the run's summary; the failure message when every rollout failed, else ``None``."""
    from verifiers.cli._display import samples_table, summary_table

    meta = run.metadata
    path = str(run.path) if run.path is not None else None
    failed = _all_failed(meta)
    if json_output:
        from verifiers.eval.results import to_json_value
        from verifiers.hub import env_args

        recorded = meta.model_dump(mode="json")  # as metadata.json holds it: large env_args by reference
        recorded["env_args"] = env_args.compact(to_json_value(meta.env_args))
        _json_dump({"output_dir": path, "failed": failed, "metadata": recorded})
    else:
        out.print()
        out.print(summary_table(meta, run.results, path))
        if run.results:
            out.print()
            out.print(
                samples_table(
                    run.results, n=10 if verbose else 3, width=min(SAMPLE_WIDTH, max(60, out.width - 40))
                )
            )
    return _failure_message(meta, run.results, hint) if failed else None


def _rescore(
    run_dir: Path,
    env_id: str | None,
    env_args: dict[str, Any] | None,
    output_dir: Path | None,
    save: bool,
    json_output: bool,
    verbose: bool,
    out: Console,
) -> None:
    from verifiers.cli._display import fmt_reward, rescore_table
    from verifiers.eval.rescore import RescoreError
    from verifiers.jobs.rescore import rescore_saved_run

    try:
        result = rescore_saved_run(
            run_dir,
            env_id=env_id,
            env_args=env_args,
            output_dir=output_dir,
            save=save,
            load=lambda env_id, args: _load_env(env_id, dict(args), verbose),
        )
    except RescoreError as exc:
        fail(f"--rescore: {exc}")
    path = str(result.path) if result.path is not None else None
    if json_output:
        _json_dump(
            {
                "output_dir": path,
                "source": str(run_dir),
                "old_avg_reward": result.previous.avg_reward,
                "new_avg_reward": result.metadata.avg_reward,
                "rescored": result.rescored,
                "kept": result.kept,
                "changed": result.changed,
                "metadata": result.metadata.model_dump(mode="json"),
            }
        )
        return
    out.print(
        rescore_table(
            result.previous,
            result.metadata,
            rescored=result.rescored,
            kept=result.kept,
            changed=result.changed,
        )
    )
    old, new = result.previous.avg_reward, result.metadata.avg_reward
    out.print(f"mean reward: {fmt_reward(old)} → {fmt_reward(new)}")
    out.print(f"re-scored results: {path}" if path else "re-scored results not saved (--no-save)")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == [REPORT_COMMAND]:  # the benchmark table of saved runs (verifiers.cli.report)
        from verifiers.cli.report import main as report_main

        report_main(given[1:])
        return
    if given[:1] == [VIEW_COMMAND]:  # vf-view's own flags and help (`vf-eval view -h`)
        try:
            _view(given[1:])
        except MissingExtraError as exc:
            exit_with_error(f"{PROG} {VIEW_COMMAND}", CliError(str(exc), EXIT_FAILED))
    run_command(PROG, app, _normalize_argv(given))


__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_USAGE", "app", "main"]


if __name__ == "__main__":
    main()
