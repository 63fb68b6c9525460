"""``vf-eval``: evaluate an environment against an OpenAI-compatible endpoint (or the embedded local model).

A thin layer: it parses flags, calls ``verifiers`` (``load_environment``, ``eval_defaults``,
``Environment.a_evaluate``, ``rescore``, the endpoint registry and the local model server) and displays
the results. Run ``vf-eval --help`` for the flags; docs/cli.md is the guide.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from verifiers.cli._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    fail,
    make_app,
    parse_json_object,
    run_command,
    setup_logging,
)

if TYPE_CHECKING:  # imported lazily at run time: `vf-eval --help` stays fast
    from verifiers.clients import Client, Endpoint
    from verifiers.envs.environment import Environment
    from verifiers.eval.run import EvalRun
    from verifiers.types import RunMetadata

PROG = "vf-eval"
DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_VAR = "OPENAI_API_KEY"
DEFAULT_NUM_EXAMPLES = 5
DEFAULT_ROLLOUTS = 3
DEFAULT_MAX_RETRIES = 5
log = logging.getLogger("verifiers.cli.eval")

app = make_app(
    "Evaluate environment ENV_ID (installed, or under ./environments/) against an OpenAI-compatible "
    "endpoint, or the embedded local model with -m local/smollm2 (or -m local:/path/to/model.gguf). "
    "Results stream to ./outputs/evals/<env>--<model>/<timestamp-id>/ (results.jsonl + metadata.json). "
    "Settings come from the flags, then the environment package's [tool.verifiers.eval] defaults, "
    "then built-in defaults. Exit status: 0 ok, 1 every rollout failed or the endpoint was "
    "unreachable, 2 bad input, 130 interrupted."
)


@dataclass
class Target:
    """Where requests go: the client endpoints and the model name recorded in results."""

    model: str
    endpoints: list[Endpoint] = field(default_factory=list)
    local: bool = False
    key_var: str | None = None
    key_set: bool = False
    base_url_flag: str | None = None

    def hint(self) -> str:
        if self.local:
            return f"the local model server ({self.model})"
        key = (
            f"the API key variable {self.key_var} ({'set' if self.key_set else 'not set'})"
            if self.key_var
            else "the API key"
        )
        urls = ", ".join(e.base_url for e in self.endpoints)
        return f"the URL ({urls}), {key} and the model name ({self.model})"


def _normalize_resume(argv: list[str]) -> list[str]:
    """``-R/--resume`` takes an optional PATH, which click cannot express: rewrite a bare flag to
    ``--resume=`` (meaning: the newest incomplete run) and ``-R PATH`` to ``--resume=PATH``. A following
    word counts as PATH only if it looks like one (contains a slash or exists), so ``-R ENV_ID`` works."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg in ("-R", "--resume"):
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and not nxt.startswith("-") and (os.sep in nxt or Path(nxt).exists()):
                out.append(f"--resume={nxt}")
                i += 2
                continue
            out.append("--resume=")
        else:
            out.append(arg)
        i += 1
    return out


# --- resolving flags ----------------------------------------------------------------------------------
def _resolve_target(
    model: str, base_url: str | None, key_var: str | None, registry_path: Path | None
) -> Target:
    from verifiers.clients import Endpoint
    from verifiers.clients.local_model import is_local_model
    from verifiers.clients.registry import DEFAULT_REGISTRY_PATH, EndpointRegistry, RegistryError

    if is_local_model(model):
        from verifiers.clients.local_model import LocalModelError, check_server_installed, resolve_model_file

        if base_url is not None:
            fail(f"-b/--api-base-url cannot be combined with the local model {model!r}")
        try:  # fail before loading anything when a package or the model file is missing
            resolve_model_file(model)
            check_server_installed()
        except LocalModelError as exc:
            fail(str(exc))
        return Target(model=model, local=True)
    registry: EndpointRegistry | None = None
    try:
        if registry_path is not None:
            registry = EndpointRegistry.load(registry_path)
        elif DEFAULT_REGISTRY_PATH.is_file():
            registry = EndpointRegistry.load(DEFAULT_REGISTRY_PATH)
    except RegistryError as exc:
        fail(f"-e/--endpoints: {exc}")
    if registry is not None and model in registry and base_url is None:
        try:
            endpoints = registry.endpoints(model, key_var=key_var)
        except RegistryError as exc:
            fail(str(exc))
        entries = registry.get(model) or []
        entry_var = key_var or next((e.key_var for e in entries if e.key_var), None)
        return Target(model, endpoints, key_var=entry_var, key_set=all(e.api_key for e in endpoints))
    var = key_var or DEFAULT_KEY_VAR
    key = os.environ.get(var)
    if key_var is not None and key is None:
        fail(f"the API key variable {key_var} (from -k/--api-key-var) is not set")
    # The default variable may be unset: local servers need no key (the server says so if it does).
    url = base_url or DEFAULT_BASE_URL
    return Target(model, [Endpoint(url, key)], key_var=var, key_set=key is not None, base_url_flag=base_url)


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


def _eval_defaults(env_id: str, console: Console) -> dict[str, Any]:
    """The package's eval defaults that vf-eval understands (a note names the others)."""
    from verifiers.envs.loading import EVAL_DEFAULT_KEYS, eval_defaults
    from verifiers.errors import VerifiersError

    try:
        defaults = eval_defaults(env_id)
    except VerifiersError as exc:
        fail(str(exc))
    unknown = sorted(set(defaults) - set(EVAL_DEFAULT_KEYS))
    if unknown:
        console.print(f"[yellow]note:[/] ignoring unknown eval default(s) of {env_id}: {', '.join(unknown)}")
    return {k: v for k, v in defaults.items() if k in EVAL_DEFAULT_KEYS}


def _apply_extra_kwargs(env: Environment, env_id: str, extra: dict[str, Any]) -> None:
    unknown = sorted(
        k for k in extra if k.startswith("_") or not hasattr(env, k) or callable(getattr(env, k))
    )
    if unknown:
        settable = sorted(k for k, v in vars(env).items() if not k.startswith("_") and not callable(v))
        fail(
            f"-x/--extra-env-kwargs: {env_id} has no attribute {', '.join(unknown)}; "
            f"settable: {', '.join(settable)}"
        )
    for k, v in extra.items():
        setattr(env, k, v)


# --- running -----------------------------------------------------------------------------------------
async def _preflight(client: Client, target: Target, console: Console) -> None:
    """A cheap ``GET /models`` per endpoint, so a wrong URL or key fails in seconds with a clear message."""
    from verifiers.clients import Client
    from verifiers.errors import AuthenticationError, InfraError, VerifiersError

    probe = Client(client.endpoints, timeout=20.0, connect_timeout=10.0, max_retries=1, backoff_base=0.2)
    try:
        for i, ep in enumerate(probe.endpoints):
            try:
                served = await probe.list_models(i)
            except AuthenticationError as exc:
                fail(f"{ep.base_url} refused the credentials: check {target.hint()} ({exc})", EXIT_FAILED)
            except InfraError as exc:
                fail(
                    f"cannot reach {ep.base_url}: {exc}. Check {target.hint()}, and that the server is running",
                    EXIT_FAILED,
                )
            except VerifiersError:
                continue  # no usable /models on this server: the run itself will tell
            name = ep.model or target.model
            if served and name not in served:
                shown = ", ".join(served[:5]) + (", …" if len(served) > 5 else "")
                console.print(
                    f"[yellow]warning:[/] {ep.base_url} does not list the model {name!r} (it serves: {shown})"
                )
    finally:
        await probe.aclose()


@dataclass
class Plan:
    num_examples: int
    rollouts_per_example: int
    max_concurrent: int
    sampling_args: dict[str, Any]
    seed: int | None
    shuffle: bool
    output_dir: Path | None
    resume: bool


async def _evaluate(
    env: Environment, client: Client, target: Target, plan: Plan, console: Console
) -> EvalRun:
    from verifiers.cli._display import ProgressDisplay
    from verifiers.eval.engine import RunProgress

    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)  # finish like Ctrl-C: metadata says cancelled
    try:
        await _preflight(client, target, console)
        progress = RunProgress()
        title = f"{env.env_id} · {target.model}"
        async with ProgressDisplay(console, progress, title):
            return await env.a_evaluate(
                client,
                target.model,
                num_examples=plan.num_examples,
                rollouts_per_example=plan.rollouts_per_example,
                max_concurrent=plan.max_concurrent,
                sampling_args=plan.sampling_args,
                seed=plan.seed,
                shuffle=plan.shuffle,
                output_dir=plan.output_dir,
                resume=plan.resume,
                progress=progress,
            )
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        await client.aclose()


def _json_dump(data: dict[str, Any]) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    sys.stdout.flush()


def _all_failed(meta: RunMetadata) -> bool:
    c = meta.counts
    return c.completed > 0 and sum(c.errored.values()) == c.completed


def _failure_message(meta: RunMetadata, results: list[dict[str, Any]], target: Target) -> str:
    from verifiers.cli._display import error_examples

    examples = error_examples(results)
    parts = [f"{cat} {n}" for cat, (n, _) in sorted(examples.items())]
    first = next(iter(sorted(examples.items())), None)
    example = f"; e.g. {first[1][1][:200]}" if first else ""
    cats = set(examples)
    if cats & {"model", "infra"}:
        what = f"check {target.hint()}"
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
        str,
        typer.Option(
            "-m",
            "--model",
            help="Model name, an alias of the endpoint registry (-e), local/smollm2, or local:/path/to/model.gguf.",
        ),
    ] = DEFAULT_MODEL,
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
            help=f"Examples to evaluate, -1 = all [default: package default, else {DEFAULT_NUM_EXAMPLES}].",
            show_default=False,
        ),
    ] = None,
    rollouts_per_example: Annotated[
        int | None,
        typer.Option(
            "-r",
            "--rollouts-per-example",
            min=1,
            help=f"Rollouts per example [default: package default, else {DEFAULT_ROLLOUTS}].",
            show_default=False,
        ),
    ] = None,
    max_concurrent: Annotated[
        int, typer.Option("-c", "--max-concurrent", min=1, help="Rollouts in flight at once.")
    ] = 32,
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
            help="Sampling arguments as a JSON object; overrides -t/-T.",
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
        typer.Option(
            "-x",
            "--extra-env-kwargs",
            metavar="JSON",
            help="Attributes to set on the loaded environment (existing attributes only), as a JSON object.",
            show_default=False,
        ),
    ] = None,
    save_results: Annotated[
        bool, typer.Option("--save-results/--no-save", "-s", help="Save results.jsonl and metadata.json.")
    ] = True,
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
            help="Wall-clock budget per rollout in seconds (sets env.timeout).",
            show_default=False,
        ),
    ] = None,
    max_retries: Annotated[
        int,
        typer.Option(
            "--max-retries", min=0, help="Retries per model request on connection errors, 429 and 5xx."
        ),
    ] = DEFAULT_MAX_RETRIES,
    endpoints: Annotated[
        Path | None,
        typer.Option(
            "-e",
            "--endpoints",
            help="Endpoint registry TOML (aliases → url, key variable, model; repeated aliases are replicas) [default: ./configs/endpoints.toml if present].",
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
) -> None:
    setup_logging(verbose)
    out = Console(stderr=json_output)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = 120  # logs and pipes: rich would assume 80 columns and fold the summary
    env_args_d = parse_json_object(env_args, "-a/--env-args")
    sampling_d = parse_json_object(sampling_args, "-S/--sampling-args")
    extra_d = parse_json_object(extra_env_kwargs, "-x/--extra-env-kwargs")

    if rescore is not None:
        _rescore(rescore, env_id, env_args_d, extra_d, output_dir, save_results, json_output, verbose, out)
        return
    if env_id is None:
        from verifiers.envs.loading import installed_environments, local_environments

        known = sorted({*installed_environments(), *local_environments()})
        fail(f"missing ENV_ID; available: {', '.join(known) or 'none (create one with vf-init NAME)'}")
    if output_dir is not None and not save_results:
        fail("-o/--output-dir and --no-save contradict each other")
    if resume is not None and not save_results:
        fail("--resume needs saved results; drop --no-save")
    from verifiers.hub.packaging import normalize_name

    env_id = normalize_name(env_id)  # the id runs are recorded (and found by --resume) under
    target = _resolve_target(model, api_base_url, api_key_var, endpoints)

    # --- which run directory, and what a resumed run was made with
    from verifiers.cli._runs import find_resumable, new_run_dir, read_run

    saved = None
    run_dir: Path | None = output_dir
    if resume:
        run_dir = Path(resume)
        saved = read_run(run_dir)
        if saved is None:
            fail(f"nothing to resume at {run_dir} (no readable metadata.json)")
    elif resume is not None and output_dir is not None:
        saved = read_run(output_dir)
    elif resume is not None:
        given = {
            "rollouts_per_example": rollouts_per_example,
            "env_args": env_args_d,
            "seed": seed,
            "shuffle": shuffle or None,
        }
        saved = find_resumable(env_id, target.model, {k: v for k, v in given.items() if v is not None})
        if saved is None:
            out.print(
                f"[yellow]note:[/] no incomplete run of {env_id} with {target.model} to resume; starting a new one"
            )
        else:
            run_dir = saved.path
    sm = saved.metadata if saved is not None else None
    if sm is not None and (normalize_name(sm.env_id) != env_id or sm.model != target.model):
        # Checked before loading anything; run_eval would refuse too, but only after a local model started.
        fail(
            f"cannot resume {run_dir}: it is a run of {sm.env_id} with model {sm.model}, "
            f"not {env_id} with {target.model}"
        )

    env = _load_env(env_id, env_args_d if env_args_d is not None else (sm.env_args if sm else {}), verbose)
    if extra_d:
        _apply_extra_kwargs(env, env_id, extra_d)
    if timeout is not None:
        env.timeout = timeout

    # Each unset flag falls back to the resumed run's setting, else the package's default, else ours.
    base: dict[str, Any]
    if sm is not None:
        base = sm.model_dump(
            include={"num_examples", "rollouts_per_example", "sampling_args", "seed", "shuffle"}
        )
    else:
        base = {
            "num_examples": DEFAULT_NUM_EXAMPLES,
            "rollouts_per_example": DEFAULT_ROLLOUTS,
            **_eval_defaults(env_id, out),
        }
    r = rollouts_per_example if rollouts_per_example is not None else base["rollouts_per_example"]
    if r < 1:
        fail(f"rollouts_per_example must be at least 1, not {r}")
    shortcuts = {"max_tokens": max_tokens, "temperature": temperature}
    plan = Plan(
        num_examples=num_examples if num_examples is not None else base["num_examples"],
        rollouts_per_example=r,
        max_concurrent=max_concurrent,
        sampling_args={
            **(base.get("sampling_args") or {}),
            **{k: v for k, v in shortcuts.items() if v is not None},
            **(sampling_d or {}),
        },
        seed=seed if seed is not None else base.get("seed"),
        shuffle=shuffle or bool(base.get("shuffle")),
        output_dir=(run_dir or new_run_dir(env.env_id, target.model)) if save_results else None,
        resume=resume is not None and run_dir is not None,
    )
    _run_and_report(env, target, plan, max_retries, out, json_output, verbose)


def _make_client(target: Target, max_retries: int, verbose: bool) -> Client:
    from verifiers.clients import Client

    # Local models answer one request at a time: a long queue must not look like a dead server.
    client = Client(target.endpoints, max_retries=max_retries, timeout=3600.0 if target.local else 600.0)
    if verbose:
        client.on_retry = lambda attempt, delay, reason: log.info(
            "retry %d in %.1fs: %s", attempt, delay, reason
        )
    return client


def _run_and_report(
    env: Environment,
    target: Target,
    plan: Plan,
    max_retries: int,
    out: Console,
    json_output: bool,
    verbose: bool,
) -> None:
    from verifiers.clients import Endpoint
    from verifiers.eval.run import ResumeMismatchError
    from verifiers.eval.sync import run_async

    server = None
    try:
        if target.local:
            from verifiers.clients.local_model import LocalModelError, LocalModelServer

            try:
                server = LocalModelServer(target.model)
                out.print(f"starting the local model {target.model} ({server.model_file.name}) …")
                server.start()
            except LocalModelError as exc:
                fail(str(exc), EXIT_FAILED)
            out.print(f"local model server ready at {server.base_url}")
            target.endpoints = [Endpoint(server.base_url)]
        client = _make_client(target, max_retries, verbose)
        try:
            run = run_async(_evaluate(env, client, target, plan, out))
        except (ResumeMismatchError, FileExistsError) as exc:
            fail(str(exc))
        except (KeyboardInterrupt, asyncio.CancelledError):
            where = f" --resume {plan.output_dir}" if plan.output_dir is not None else ""
            hint = f"; complete it with: {PROG} {env.env_id} -m {target.model}{where}" if where else ""
            raise CliError(f"interrupted{hint}", EXIT_INTERRUPTED) from None
    finally:
        if server is not None:
            server.stop()  # also after Ctrl-C while it was starting
    _report(run, target, out, json_output, verbose)


def _report(run: EvalRun, target: Target, out: Console, json_output: bool, verbose: bool) -> None:
    from verifiers.cli._display import samples_table, summary_table

    meta = run.metadata
    path = str(run.path) if run.path is not None else None
    failed = _all_failed(meta)
    if json_output:
        _json_dump({"output_dir": path, "failed": failed, "metadata": meta.model_dump(mode="json")})
    else:
        out.print()
        out.print(summary_table(meta, run.results, path))
        if run.results:
            out.print()
            out.print(samples_table(run.results, n=10 if verbose else 3, width=max(60, out.width - 40)))
    if failed:
        fail(_failure_message(meta, run.results, target), EXIT_FAILED)


def _rescore(
    run_dir: Path,
    env_id: str | None,
    env_args: dict[str, Any] | None,
    extra: dict[str, Any] | None,
    output_dir: Path | None,
    save: bool,
    json_output: bool,
    verbose: bool,
    out: Console,
) -> None:
    from verifiers.cli._display import fmt_reward, rescore_table
    from verifiers.eval.rescore import RescoreError, load_metadata, rescore
    from verifiers.hub.packaging import normalize_name

    try:
        meta = load_metadata(run_dir)
    except RescoreError as exc:
        fail(f"--rescore: {exc}")
    if env_id is not None and normalize_name(env_id) != normalize_name(meta.env_id):
        fail(f"--rescore: {run_dir} is a run of {meta.env_id}, not {env_id}")
    env = _load_env(meta.env_id, env_args if env_args is not None else meta.env_args, verbose)
    if extra:
        _apply_extra_kwargs(env, meta.env_id, extra)
    try:
        result = rescore(env, run_dir, output_dir=output_dir, save=save)
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
    args = _normalize_resume(list(sys.argv[1:] if argv is None else argv))
    run_command(PROG, app, args)


__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_USAGE", "app", "main"]


if __name__ == "__main__":
    main()
