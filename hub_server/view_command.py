"""``vf-view RUN_DIR``: the hub's eval pages for a local run directory, on a loopback
port. It lives with the hub because the pages are the hub's; it reads the run through ``verifiers.hub``.

Nothing is published. ``results.jsonl`` is read incrementally on every page load (only the lines added
since the last one), so the pages follow a running eval. The rows are shown as the hub would store them
(``verifiers.hub.results``: same truncation); the pages themselves are the hub's (``hub_server.local_view``).
"""

from __future__ import annotations

import json
import threading
import webbrowser
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from hub_server.local_view import LocalRun, create_local_app
from hub_server.usage import run_app
from verifiers.hub.results import METADATA_FILE, RESULTS_FILE, create_body, read_metadata, rollout_record
from verifiers.hub.wire import HubClientError, RolloutRecord

PROG = "vf-view"

app = typer.Typer(
    help="Serve the eval pages (results, histogram, per-example table, rollout viewer) for a local run directory.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class RunDirectory:
    """A run directory read incrementally: each ``snapshot`` parses only the complete lines added since
    the last one (a line still being written waits for the next), and re-reads ``metadata.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._rollouts: dict[tuple[int, int], RolloutRecord] = {}
        self._lock = threading.Lock()

    def _read_new(self) -> None:
        results = self.path / RESULTS_FILE
        if not results.is_file():
            return
        with results.open("rb") as f:
            f.seek(self._offset)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                self._offset += len(raw)
                if not raw.strip():
                    continue
                row: dict[str, Any] = json.loads(raw)
                record = rollout_record(row)
                self._rollouts[(record.example_id, record.rollout_index)] = record

    def snapshot(self) -> LocalRun:
        with self._lock:
            meta = read_metadata(self.path)
            self._read_new()
            rollouts = list(self._rollouts.values())
        return LocalRun(
            env_id=meta.env_id,
            status=meta.status,
            meta=create_body(meta, "private"),
            rollouts=rollouts,
            label=str(self.path),
        )


@app.command()
def view(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (holds metadata.json and results.jsonl).")],
    port: Annotated[int, typer.Option(help="Loopback port (0: any free one).", min=0, max=65535)] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in a browser.")
    ] = True,
) -> None:
    """Serve RUN_DIR's eval pages on 127.0.0.1 until interrupted."""
    if not (run_dir / METADATA_FILE).is_file():
        fail(f"{run_dir} is not a run directory (no {METADATA_FILE})")
    import uvicorn

    source = RunDirectory(run_dir.resolve())
    try:
        source.snapshot()  # a broken directory fails here, with its reason, not on the first page load
    except (HubClientError, ValueError) as exc:
        fail(f"cannot read {run_dir}: {exc}")
    server = uvicorn.Server(
        uvicorn.Config(
            create_local_app(source), host="127.0.0.1", port=port, log_level="warning", access_log=False
        )
    )

    def announce() -> None:
        # uvicorn picks the port when it binds; say where once it listens
        while not server.started:
            if not thread.is_alive():
                return
            threading.Event().wait(0.05)
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{bound}/"
        typer.echo(f"serving {run_dir} at {url} (Ctrl-C to stop)", err=True)
        if open_browser:
            webbrowser.open(url)

    thread = threading.current_thread()
    threading.Thread(target=announce, daemon=True).start()
    server.run()


def fail(message: str) -> NoReturn:
    typer.secho(f"{PROG}: error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def main(args: list[str] | None = None) -> None:
    run_app(app, PROG, args)


if __name__ == "__main__":
    main()
