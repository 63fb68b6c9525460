"""``vf-serve ENV_ID``: serve an environment's dataset and rollouts to trainers, over HTTP and over the
reference SDK's ZMQ env-server protocol (docs/training.md, "Env server")."""

from __future__ import annotations

from typing import Annotated

import typer

from verifiers._extras import require_extra
from verifiers.cli._common import EXIT_FAILED, fail, make_app, parse_json_object, run_command, setup_logging

PROG = "vf-serve"

app = make_app(
    "Serve an environment to trainers: GET /health, /info, /dataset and POST /rollouts over HTTP, and the "
    "reference env-server protocol (prime-rl's ZMQEnvClient) on --zmq-port. Prints "
    "'vf-serve listening http=HOST:PORT zmq=tcp://HOST:PORT' once ready; SIGTERM drains in-flight groups."
)


@app.command()
def serve_command(
    env_id: Annotated[str, typer.Argument(help="environment id (installed, or under ./environments)")],
    env_args: Annotated[
        str | None, typer.Option("--env-args", "-a", help="JSON object of load_environment() arguments")
    ] = None,
    host: Annotated[str, typer.Option("--host", help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port (0: a free one)")] = 8000,
    zmq_port: Annotated[
        int, typer.Option("--zmq-port", help="port of the reference ZMQ protocol (0: a free one)")
    ] = 0,
    max_concurrent: Annotated[
        int, typer.Option("--max-concurrent", help="rollouts generating at once, over all requests")
    ] = 256,
    workers: Annotated[int, typer.Option("--workers", help="environment worker processes")] = 1,
    drain_timeout: Annotated[
        float, typer.Option("--drain-timeout", help="seconds SIGTERM waits for in-flight groups")
    ] = 600.0,
    worker_timeout: Annotated[
        float, typer.Option("--worker-timeout", help="seconds a silent (hung) worker lives before a restart")
    ] = 60.0,
    max_seq_len: Annotated[
        int | None,
        typer.Option(
            "--max-seq-len",
            help="token budget of each rollout whose request names none (every reference-protocol rollout): "
            "a prompt that no longer fits ends the rollout as prompt_too_long",
            show_default=False,
        ),
    ] = None,
    score_rollouts: Annotated[
        bool,
        typer.Option(
            "--score-rollouts/--no-score-rollouts",
            help="score reference-protocol rollouts (--no-score-rollouts: return them unscored)",
        ),
    ] = True,
    api_key_var: Annotated[
        list[str] | None,
        typer.Option(
            "--api-key-var",
            help="a variable of this server's environment that requests may name as api_key_var, whose value "
            "is sent to the request's endpoint (repeatable; default: OPENAI_API_KEY and VLLM_API_KEY)",
        ),
    ] = None,
    allow_base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-base-url",
            help="an endpoint (or URL prefix) requests may name as base_url (repeatable; default: any)",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log more")] = False,
) -> None:
    """Serve an environment to trainers: GET /health, /info, /dataset and POST /rollouts over HTTP (JSON,
    or msgpack; NDJSON streams a line per finished group), and the reference env-server protocol (prime-rl's
    ZMQEnvClient) on --zmq-port. Prints 'vf-serve listening http=HOST:PORT zmq=tcp://HOST:PORT' once
    ready; SIGTERM drains in-flight groups. See docs/training.md, "Env server"."""
    setup_logging(verbose)
    if max_concurrent < 1 or workers < 1:
        fail("--max-concurrent and --workers must be at least 1")
    if worker_timeout <= 0 or drain_timeout < 0:
        fail("--worker-timeout must be positive and --drain-timeout not negative")
    if max_seq_len is not None and max_seq_len < 1:
        fail("--max-seq-len must be at least 1")
    require_extra("serve", PROG)  # pyzmq and msgpack: one line saying how to install them, not a traceback
    from verifiers.errors import VerifiersError
    from verifiers.eval.sync import run_async
    from verifiers.serve.policy import ClientPolicy
    from verifiers.serve.server import ServeConfig, serve

    try:
        policy = ClientPolicy.make(api_key_var, allow_base_url or [])
    except ValueError as exc:
        fail(f"--api-key-var / --allow-base-url: {exc}")

    config = ServeConfig(
        env_id=env_id,
        env_args=parse_json_object(env_args, "--env-args") or {},
        host=host,
        port=port,
        zmq_port=zmq_port,
        max_concurrent=max_concurrent,
        workers=workers,
        drain_timeout=drain_timeout,
        worker_timeout=worker_timeout,
        max_seq_len=max_seq_len,
        score_rollouts=score_rollouts,
        policy=policy,
    )
    try:
        run_async(serve(config))
    except VerifiersError as exc:  # the environment did not load (unknown id, bad --env-args, env bug)
        fail(str(exc), EXIT_FAILED)


def main(args: list[str] | None = None) -> None:
    run_command(PROG, app, args)


if __name__ == "__main__":
    main()
