"""The eval pages for a local run directory, served on loopback without a database (``vf-view RUN_DIR``).

The same templates and page parts as the hub's eval pages (``routers.web.eval_page_context``), fed by a
``RunSource`` the caller supplies: the SDK side reads the run directory (``results.jsonl`` incrementally,
so a running eval can be watched) and turns its rows into the records the hub would store
(``verifiers.hub.results``); this module only renders them. The numbers come from ``eval_stats``, as on
the hub.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Protocol

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.middleware.trustedhost import TrustedHostMiddleware

from hub_server import eval_view
from hub_server.eval_stats import aggregate
from hub_server.routers.web import (
    SECURITY_HEADERS,
    ErrorFilter,
    RolloutFilters,
    eval_page_context,
    rollout_filters,
    rollout_nav,
)
from hub_server.services.errors import HubError
from verifiers.hub import wire

HERE = Path(__file__).parent
PER_PAGE = 50
#: The only ``Host`` headers the pages answer (400 otherwise): a page of another site that rebinds its name
#: to 127.0.0.1 (DNS rebinding) still sends its own name, so it cannot read the rollouts.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class LocalRun:
    """A run directory as the viewer needs it: what ``metadata.json`` says, and the rollouts so far."""

    env_id: str
    status: str  # metadata.json's: running, completed, cancelled, failed
    meta: wire.EvalRunCreate
    rollouts: Sequence[wire.RolloutRecord]
    label: str  # the directory, for the page header


class RunSource(Protocol):
    def snapshot(self) -> LocalRun: ...


def run_info(run: LocalRun) -> wire.EvalRunInfo:
    """The run as an ``EvalRunInfo``, aggregated here from its rollouts (id 0: it is not on a hub)."""
    records = [r.model_dump(mode="json") for r in run.rollouts]
    stats = aggregate(records, run.meta.rollouts_per_example)
    m = run.meta
    return wire.EvalRunInfo(
        id=0,
        environment=run.env_id,
        version=m.version,
        content_hash=m.content_hash,
        model=m.model,
        sampling_args=m.sampling_args,
        env_args=m.env_args,
        sdk_version=m.sdk_version,
        visibility="private",
        status="uploading" if run.status == "running" else "complete",
        num_examples=m.num_examples,
        rollouts_per_example=m.rollouts_per_example,
        started_at=m.started_at,
        finished_at=m.finished_at,
        uploader=None,
        created_at=m.started_at or datetime.now(UTC),
        finalized_at=m.finished_at,
        rollout_count=stats.rollout_count,
        scored_count=stats.scored_count,
        avg_reward=stats.avg_reward,
        std_reward=stats.std_reward,
        reward_ci95=stats.reward_ci95,
        **wire.interval_fields(stats.avg_reward, stats.scored_count, stats.std_reward),
        pass_at_k=stats.pass_at_k,
        avg_metrics=stats.avg_metrics,
        error_counts=stats.error_counts,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        url="/",
        warnings=wire.run_warnings(stats.avg_metrics, stats.scored_count),
    )


def _matches(r: wire.RolloutRecord, f: RolloutFilters) -> bool:
    # The same filters as the hub's SQL (services.runs.list_rollouts), over the records in memory.
    if f.min_reward is not None and (r.reward is None or r.reward < f.min_reward):
        return False
    if f.max_reward is not None and (r.reward is None or r.reward > f.max_reward):
        return False
    if f.error == "none" and r.error is not None:
        return False
    if f.error == "any" and r.error is None:
        return False
    if f.error not in (None, "none", "any") and (r.error is None or r.error.category != f.error):
        return False
    return f.example_id is None or r.example_id == f.example_id


def rollout_page(
    rollouts: Sequence[wire.RolloutRecord], f: RolloutFilters, per_page: int = PER_PAGE
) -> wire.RolloutPage:
    chosen = sorted((r for r in rollouts if _matches(r, f)), key=lambda r: (r.example_id, r.rollout_index))
    window = chosen[(f.page - 1) * per_page : f.page * per_page]
    items = [wire.StoredRollout.model_validate(r.model_dump(mode="json")) for r in window]
    return wire.RolloutPage(items=items, total=len(chosen), page=f.page, per_page=per_page)


def create_local_app(source: RunSource) -> FastAPI:
    app = FastAPI(title="verifiers eval viewer", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_HOSTS))
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals["run_warnings"] = wire.RUN_WARNINGS
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        response: HTMLResponse = templates.TemplateResponse(
            request, template, context, status_code=status_code
        )
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(HubError)
    async def _error(request: Request, exc: HubError) -> Response:
        return render(
            request,
            "error.html",
            exc.status_code,
            code=exc.status_code,
            detail=exc.detail,
            local_view="error",
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return render(request, "error.html", 422, code=422, detail="invalid query", local_view="error")

    @app.get("/", response_class=HTMLResponse)
    def run_page(
        request: Request,
        sort: eval_view.ExampleSort = "example",
        min_reward: Annotated[str, Query(max_length=40)] = "",
        max_reward: Annotated[str, Query(max_length=40)] = "",
        error: ErrorFilter = "",
        example_id: Annotated[str, Query(max_length=12)] = "",
        page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    ) -> HTMLResponse:
        run = source.snapshot()
        filters = rollout_filters(min_reward, max_reward, error, example_id, page)
        records = [r.model_dump(mode="json") for r in run.rollouts]
        context = eval_page_context(
            run_info(run), records, rollout_page(run.rollouts, filters), filters, base="", sort=sort
        )
        return render(request, "eval_run.html", env_url=None, local_view=run.label, **context)

    @app.get("/rollouts/{example_id}/{rollout_index}", response_class=HTMLResponse)
    def rollout_view(request: Request, example_id: int, rollout_index: int) -> HTMLResponse:
        run = source.snapshot()
        found = next(
            (r for r in run.rollouts if (r.example_id, r.rollout_index) == (example_id, rollout_index)), None
        )
        if found is None:
            raise HubError(404, f"rollout {example_id}/{rollout_index} is not in {run.label} (yet)")
        stored = wire.StoredRollout.model_validate(found.model_dump(mode="json"))
        keys = sorted((r.example_id, r.rollout_index) for r in run.rollouts)
        at = keys.index((example_id, rollout_index))
        nav = rollout_nav(
            "",
            keys[at - 1] if at > 0 else None,
            keys[at + 1] if at + 1 < len(keys) else None,
            at + 1,
            len(keys),
        )
        return render(
            request, "rollout.html", run=run_info(run), r=stored, base="", local_view=run.label, nav=nav
        )

    return app
