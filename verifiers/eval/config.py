"""``EvalConfig``: an evaluation's settings, resolved once, for ``vf-eval`` and ``Environment.evaluate``
alike.

Each setting comes from the first layer that has it:

1. what the caller gave (``vf-eval`` flags, ``env.evaluate(...)`` arguments, an ``[[eval]]`` table of a
   suite file — several explicit layers may be stacked, the later winning);
2. the run being resumed (its ``metadata.json``: sizes, seed, shuffle, env args, sampling args);
3. the environment package's ``[tool.verifiers.eval]`` defaults (``num_examples``,
   ``rollouts_per_example``, ``sampling_args``);
4. the built-in defaults below (every example, one rollout each — ``Environment.evaluate``'s rule).

``sampling_args`` is resolved key by key over the same layers (a flag's ``temperature`` keeps the
package's ``max_tokens``), and ``config.sources`` records where every value came from
(``sampling_args.<key>`` for sampling keys), for ``vf-eval --dry-run`` and for the run's metadata.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifiers.clients.sampling import merge_sampling_args, token_request_args
from verifiers.clients.target import DEFAULT_MODEL, resolve_context_tokens
from verifiers.eval import runs
from verifiers.eval.engine import ScoreMode
from verifiers.eval.runs import ResumeError, ResumeMismatchError, new_run_dir, saved_run_for
from verifiers.hub.packaging import normalize_name
from verifiers.types import ReturnTokens, RunMetadata, SamplingArgs

ClientBackend = Literal["aiohttp", "openai"]
ApiKind = Literal["chat", "responses"]
#: Where a resolved value came from (``EvalConfig.sources``).
Source = str
DEFAULT_SOURCE: Source = "default"
PACKAGE_SOURCE: Source = "package"
RESUMED_SOURCE: Source = "resumed run"

#: Settings a resumed run supplies when they are not given again.
_RESUMABLE = ("env_args", "num_examples", "rollouts_per_example", "seed", "shuffle")
#: Keys of a package's ``[tool.verifiers.eval]`` / ``EVAL_DEFAULTS`` that apply to a run, with their types.
PACKAGE_KEYS: dict[str, type] = {"num_examples": int, "rollouts_per_example": int, "sampling_args": dict}


RESUME_NEEDS_SAVING = "resume needs saved results; drop save_results=False"
#: The run settings that live on the environment object: ``launch`` sets them on it from the config,
#: and a distributed run copies them onto each actor's own copy.
ENV_SETTINGS = ("timeout", "max_seq_len", "interleaved_thinking")
#: ``ray="local"``: a Ray instance started for the run (``verifiers.eval.distributed`` starts it).
RAY_LOCAL = "local"


class ConfigError(ValueError):
    """Settings that cannot make a run; the message names the setting and what to change."""


#: The most rollouts (examples × rollouts per example) one run plans unless told otherwise: a run keeps
#: every result in memory and the plan of every group, so 10**8 rollouts would take gigabytes before the
#: first request. The env server bounds a request the same way (``verifiers.serve.wire``: 1,024 rollouts
#: per example, 32,768 per request); the hub bounds an uploaded run's sizes too.
DEFAULT_MAX_ROLLOUTS = 100_000
#: The environment variable that raises (or lowers) the bound; ``max_rollouts`` / ``--max-rollouts`` win.
MAX_ROLLOUTS_VAR = "VF_MAX_ROLLOUTS"


def default_max_rollouts() -> int:
    """``$VF_MAX_ROLLOUTS`` if set (a positive integer), else ``DEFAULT_MAX_ROLLOUTS``."""
    raw = os.environ.get(MAX_ROLLOUTS_VAR, "").strip()
    if not raw:
        return DEFAULT_MAX_ROLLOUTS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"{MAX_ROLLOUTS_VAR}={raw!r} must be a positive integer (the most rollouts one run plans)"
        )
    return value


def check_run_size(num_examples: int, rollouts_per_example: int, max_rollouts: int) -> None:
    """Refuse a run planning more than ``max_rollouts`` rollouts (``num_examples`` -1: not known yet,
    then only ``rollouts_per_example`` is checked), before any work or allocation."""
    planned = rollouts_per_example * max(num_examples, 1)
    if planned > max_rollouts:
        size = (
            f"{num_examples} examples × {rollouts_per_example} rollouts = {planned}"
            if num_examples > 0
            else f"rollouts_per_example = {rollouts_per_example}"
        )
        raise ConfigError(
            f"{size} is more than the {max_rollouts} rollouts one run may plan; if you mean it, raise the "
            f"bound (vf-eval --max-rollouts N, max_rollouts=N in evaluate() or a suite's [[eval]] table, or "
            f"{MAX_ROLLOUTS_VAR}=N), or split the run"
        )


class RunSettings(TypedDict, total=False):
    """The settings of ``Environment.evaluate`` besides its ``model`` argument (all optional)."""

    env_args: dict[str, Any]
    base_url: str | None
    api_key_var: str | None
    endpoints_file: str | Path | None
    client_backend: ClientBackend
    api: ApiKind
    num_examples: int
    rollouts_per_example: int
    max_rollouts: int
    max_concurrent: int | str | tuple[int, int]
    ray: str | bool | None
    sampling_args: SamplingArgs
    seed: int | None
    shuffle: bool
    timeout: float | None
    request_timeout: float | None
    max_retries: int
    save_results: bool
    output_dir: str | Path | None
    resume: bool | str | Path | None
    score: ScoreMode
    pass_threshold: float
    return_tokens: ReturnTokens
    interleaved_thinking: bool
    max_seq_len: int | None


class EvalSettings(RunSettings, total=False):
    """What a caller may set; every key is optional (see the module docstring for the fallbacks)."""

    model: str


SETTING_NAMES: frozenset[str] = frozenset(EvalSettings.__optional_keys__)


class EvalConfig(BaseModel):
    """A fully resolved evaluation: what ``run_config`` runs and ``vf-eval --dry-run`` prints."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str
    env_args: dict[str, Any] = Field(default_factory=dict)
    #: Model name, an endpoint-registry alias, ``local/NAME`` or ``local:PATH``.
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key_var: str | None = None
    endpoints_file: Path | None = None
    client_backend: ClientBackend = "aiohttp"
    api: ApiKind = "chat"
    #: Examples of the eval split; -1 means all.
    num_examples: int = Field(-1, ge=-1)
    rollouts_per_example: int = Field(1, ge=1)
    #: The most rollouts (examples × rollouts per example) the run may plan (``DEFAULT_MAX_ROLLOUTS``, or
    #: ``$VF_MAX_ROLLOUTS``); checked here and again once the rows are known.
    max_rollouts: int = Field(DEFAULT_MAX_ROLLOUTS, ge=1)
    #: Rollouts in flight: a fixed cap, ``"auto"`` or a ``(floor, ceiling)`` pair (adaptive, AIMD:
    #: ``verifiers.eval.concurrency``).
    max_concurrent: int | Literal["auto"] | tuple[int, int] = 32
    #: Run the groups on Ray (``verifiers.eval.distributed``): ``"local"`` (a Ray instance started for
    #: the run), ``"auto"``, ``"ray://host:10001"`` or a head ``host:port``; ``None``: this process.
    ray: str | None = None
    #: The run's layer of sampling arguments; each request family merges its environment's under it.
    sampling_args: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    shuffle: bool = False
    #: Wall-clock budget per rollout in seconds (``None``: the environment's own).
    timeout: float | None = Field(None, gt=0)
    #: Bound on one model request, retries included, in seconds (``None``: the client's defaults,
    #: ``verifiers.clients.client.DEFAULT_TOTAL_TIMEOUT``; generous for a local model).
    request_timeout: float | None = Field(None, gt=0)
    max_retries: int = Field(5, ge=0)
    save_results: bool = True
    #: The run directory; ``None`` with ``save_results`` means a new one under ./outputs/evals/.
    output_dir: Path | None = None
    #: ``True``: continue the newest incomplete run (or the one at ``output_dir``); a path: that run.
    resume: bool | Path = False
    score: ScoreMode = "group"
    pass_threshold: float = 1.0
    #: Which token fields the model requests ask for (``verifiers.types.ReturnTokens``); folded into
    #: ``sampling_args`` under the explicit ones, so the run records what was sent.
    return_tokens: ReturnTokens = "none"
    #: Send earlier turns' reasoning back to the model (``None``: the environment's own setting).
    interleaved_thinking: bool | None = None
    #: Token budget of one model call's prompt + completion (``None``: the environment's own).
    max_seq_len: int | None = Field(None, ge=1)
    #: ``max_tokens`` is capped to this (half a local model's context); ``None``: no cap.
    max_tokens_limit: int | None = None
    #: Setting name (``sampling_args.<key>`` for sampling keys) → where its value came from.
    sources: dict[str, Source] = Field(default_factory=dict)
    #: Things worth telling the user about the resolution (ignored package keys, caps, …).
    notes: list[str] = Field(default_factory=list)

    @field_validator("max_concurrent", mode="before")
    @classmethod
    def _max_concurrent(cls, value: Any) -> Any:
        from verifiers.eval.concurrency import AUTO, parse_max_concurrent

        spec = parse_max_concurrent(value)  # ValueError -> a validation error naming the setting
        if spec.fixed is not None:
            return spec.fixed
        auto = isinstance(value, str) and value.strip().lower() == AUTO
        return AUTO if auto else (spec.floor, spec.ceiling)

    @field_validator("ray", mode="before")
    @classmethod
    def _ray(cls, value: Any) -> Any:
        if value is True:
            return RAY_LOCAL
        return None if value is False or value == "" else value

    @field_validator("resume", mode="before")
    @classmethod
    def _resume_path(cls, value: Any) -> Any:
        return Path(value) if isinstance(value, str) else (False if value is None else value)

    # --- resolution -------------------------------------------------------------------------------
    @classmethod
    def resolve(
        cls,
        env_id: str,
        *layers: tuple[Source, Mapping[str, Any]],
        saved: RunMetadata | None = None,
        package_defaults: Mapping[str, Any] | None = None,
    ) -> EvalConfig:
        """Resolve ``env_id``'s settings: explicit ``(source, settings)`` layers (lowest first, e.g.
        ``("config file", table), ("flag", flags)``), then ``saved`` (the run being resumed), then
        ``package_defaults``, then the built-in defaults. Raises ``ConfigError`` naming a bad setting."""
        for source, layer in layers:
            unknown = sorted(set(layer) - SETTING_NAMES)
            if unknown:
                raise ConfigError(
                    f"unknown setting(s) {', '.join(unknown)} ({source}); known: {', '.join(sorted(SETTING_NAMES))}"
                )
        package = dict(package_defaults or {})
        notes: list[str] = []
        ignored = sorted(set(package) - set(PACKAGE_KEYS))
        if ignored:
            notes.append(f"ignoring unknown eval default(s) of {env_id}: {', '.join(ignored)}")
        # A resumed run's settings already include the package defaults it was made with.
        fallback: tuple[Source, Mapping[str, Any]] = (
            (RESUMED_SOURCE, saved.model_dump(include={*_RESUMABLE, "sampling_args"}))
            if saved is not None
            else (PACKAGE_SOURCE, {k: package[k] for k in PACKAGE_KEYS if package.get(k) is not None})
        )
        values: dict[str, Any] = {"max_rollouts": default_max_rollouts()}
        sources: dict[str, Source] = {name: DEFAULT_SOURCE for name in SETTING_NAMES}
        if os.environ.get(MAX_ROLLOUTS_VAR, "").strip():
            sources["max_rollouts"] = MAX_ROLLOUTS_VAR
        sampling_layers: list[Mapping[str, Any]] = []
        for source, layer in [fallback, *layers]:  # lowest precedence first: later layers overwrite
            for key, value in given(layer).items():
                if key == "sampling_args":
                    if not isinstance(value, Mapping):
                        raise ConfigError(f"sampling_args ({source}) must be a table/object, not {value!r}")
                    sampling_layers.append(value)
                    sources.update({f"sampling_args.{k}": source for k in value})
                    continue
                values[key] = value
                sources[key] = source
        if any(k.startswith("sampling_args.") for k in sources):
            del sources["sampling_args"]
        try:
            sampling = dict(merge_sampling_args(*sampling_layers))
        except TypeError as exc:
            raise ConfigError(str(exc)) from None
        return_tokens = values.get("return_tokens", "none")
        if return_tokens != "none":
            try:
                token_layer = token_request_args(return_tokens)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            for key in token_layer:
                sources.setdefault(f"sampling_args.{key}", f"return_tokens ({sources['return_tokens']})")
            sources.pop("sampling_args", None)
            sampling = dict(merge_sampling_args(token_layer, sampling))
        model = values.get("model", DEFAULT_MODEL)
        context = resolve_context_tokens(model) if isinstance(model, str) else None
        limit = context // 2 if context else None
        asked = sampling.get("max_tokens")
        if limit is not None and isinstance(asked, int) and asked > limit:
            notes.append(f"{model} has a {context}-token context: max_tokens {asked} is capped to {limit}")
        if limit is not None:
            sources["max_tokens_limit"] = f"{model} context"
        try:
            config = cls(
                env_id=env_id,
                **values,
                sampling_args=sampling,
                max_tokens_limit=limit,
                sources=sources,
                notes=notes,
            )
        except ValidationError as exc:
            raise ConfigError(_validation_message(exc, sources)) from None
        return config._checked()

    def _checked(self) -> EvalConfig:
        if self.num_examples == 0:  # a run of nothing would "complete" with an empty run directory
            raise ConfigError(
                "num_examples=0 evaluates nothing: give how many examples to run, or -1 for all"
            )
        check_run_size(self.num_examples, self.rollouts_per_example, self.max_rollouts)
        if self.output_dir is not None and not self.save_results:
            raise ConfigError("output_dir and save_results=False contradict each other")
        if self.resume is not False and not self.save_results:
            raise ConfigError(RESUME_NEEDS_SAVING)
        return self

    def explain(self) -> list[tuple[str, Any, Source]]:
        """(setting, value, source) rows in declaration order, sampling keys expanded — for display."""
        rows: list[tuple[str, Any, Source]] = [("env_id", self.env_id, "argument")]
        for name in type(self).model_fields:
            if name in ("env_id", "sources", "notes"):
                continue
            if name == "sampling_args" and self.sampling_args:
                rows.extend(
                    (f"sampling_args.{k}", v, self.sources.get(f"sampling_args.{k}", DEFAULT_SOURCE))
                    for k, v in self.sampling_args.items()
                )
                continue
            rows.append((name, getattr(self, name), self.sources.get(name, DEFAULT_SOURCE)))
        return rows


def _validation_message(exc: ValidationError, sources: Mapping[str, Source]) -> str:
    parts = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"]) or "settings"
        where = sources.get(name)
        value = err.get("input")
        parts.append(f"{name} ({where}) = {value!r}: {err['msg']}" if where else f"{name}: {err['msg']}")
    return "; ".join(parts)


# --- suites: several evaluations in one TOML file ---------------------------------------------------
SUITE_SOURCE: Source = "config file"


#: Keys of an ``[[eval]]`` table that describe the entry rather than set the run (``SuiteEntry``).
SUITE_ENTRY_KEYS = frozenset({"benchmark", "reference", "sources"})


class SuiteEntry(BaseModel):
    """One ``[[eval]]`` table of a suite file: an environment id and its settings, and optionally how a
    report names it (``benchmark``), the value a model card reports for it (``reference``, in percent)
    and where each setting's value comes from (``sources``: setting name → text, ``sampling_args.<key>``
    for a sampling argument)."""

    model_config = ConfigDict(frozen=True)

    env_id: str
    settings: dict[str, Any]
    #: Where it was read from, for messages (``suite.toml [[eval]] #2``).
    origin: str
    benchmark: str | None = None
    reference: float | None = None
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        """What a report calls it: ``benchmark``, else the environment id."""
        return self.benchmark or self.env_id


def _setting_paths(settings: Mapping[str, Any]) -> set[str]:
    """The names ``sources`` may explain: each setting, and ``sampling_args.<key>`` / ``env_args.<key>``."""
    paths = set(settings)
    for table in ("sampling_args", "env_args"):
        if isinstance(settings.get(table), Mapping):
            paths |= {f"{table}.{k}" for k in settings[table]}
    return paths


def _entry_fields(origin: str, table: dict[str, Any]) -> dict[str, Any]:
    """``benchmark``, ``reference`` and ``sources`` of an ``[[eval]]`` table, checked (popped from it)."""
    fields: dict[str, Any] = {}
    benchmark = table.pop("benchmark", None)
    if benchmark is not None:
        if not isinstance(benchmark, str) or not benchmark.strip():
            raise ConfigError(f'{origin}: benchmark must be a name, e.g. benchmark = "AIME 2025"')
        fields["benchmark"] = benchmark.strip()
    reference = table.pop("reference", None)
    if reference is not None:
        if isinstance(reference, bool) or not isinstance(reference, int | float) or not 0 <= reference <= 100:
            raise ConfigError(
                f"{origin}: reference must be the model card's value in percent (0-100), not {reference!r}"
            )
        fields["reference"] = float(reference)
    sources = table.pop("sources", None)
    if sources is not None:
        if not isinstance(sources, dict) or not all(
            isinstance(v, str) and v.strip() for v in sources.values()
        ):
            raise ConfigError(f'{origin}: sources must be a table of setting = "where the value comes from"')
        known = _setting_paths(table) | ({"reference"} if reference is not None else set())
        stray = sorted(set(sources) - known)
        if stray:
            raise ConfigError(
                f"{origin}: sources names {', '.join(stray)}, which this entry does not set "
                f"(it sets: {', '.join(sorted(known))})"
            )
        fields["sources"] = {k: " ".join(v.split()) for k, v in sources.items()}
    return fields


def load_suite(path: str | Path) -> list[SuiteEntry]:
    """Read a suite file: one or more ``[[eval]]`` tables, each an ``env_id`` plus ``EvalSettings`` keys
    (``env_args`` and ``sampling_args`` as inline or sub-tables). Raises ``ConfigError`` on a bad file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"suite file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read suite file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"suite file {path} is not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"eval"})
    tables = data.get("eval")
    if extra or not isinstance(tables, list) or not tables:
        raise ConfigError(
            f"suite file {path} must hold one or more [[eval]] tables"
            + (f" and nothing else (found: {', '.join(extra)})" if extra else "")
        )
    entries: list[SuiteEntry] = []
    for i, table in enumerate(tables, start=1):
        origin = f"{path} [[eval]] #{i}"
        if not isinstance(table, dict):
            raise ConfigError(f"{origin} must be a table")
        settings = dict(table)
        env_id = settings.pop("env_id", None) or settings.pop("env", None)
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError(f'{origin} needs env_id = "…" (the environment to evaluate)')
        unknown = sorted(set(settings) - SETTING_NAMES - SUITE_ENTRY_KEYS)
        if unknown:
            raise ConfigError(
                f"{origin}: unknown setting(s) {', '.join(unknown)}; known: env_id, "
                f"{', '.join(sorted(SETTING_NAMES | SUITE_ENTRY_KEYS))}"
            )
        fields = _entry_fields(origin, settings)
        entries.append(SuiteEntry(env_id=env_id, settings=settings, origin=origin, **fields))
    return entries


def resolve_eval_config(
    env_id: str,
    *layers: tuple[Source, Mapping[str, Any]],
    package_defaults: Mapping[str, Any] | None = None,
    runs_root: Path | None = None,
) -> EvalConfig:
    """``EvalConfig.resolve`` plus the run-directory policy: find the run to resume (``resume=True``: the
    newest incomplete run of this environment and model that agrees with the settings given; a path:
    that run), and pick the run directory (the resumed run's, ``output_dir``, or a new
    ``<runs_root>/<env>--<model>/<timestamp-id>/``). ``env_id`` is normalised as runs record it."""
    env_id = normalize_name(env_id)
    runs_root = runs_root if runs_root is not None else runs.DEFAULT_OUTPUT_ROOT  # read late: tests move it
    explicit: dict[str, Any] = {}
    for _, layer in layers:
        explicit.update(given(layer))
    model = explicit.get("model", DEFAULT_MODEL)
    output_dir = Path(explicit["output_dir"]) if explicit.get("output_dir") is not None else None
    resume = explicit.get("resume")
    resume = Path(resume) if isinstance(resume, str) else resume
    if resume is not None and resume is not False and explicit.get("save_results") is False:
        raise ConfigError(RESUME_NEEDS_SAVING)  # before the run directories are searched
    wanted: dict[str, Any] = {
        k: explicit[k] for k in ("rollouts_per_example", "env_args", "seed", "shuffle") if k in explicit
    }
    if wanted.get("shuffle") is False:
        del wanted["shuffle"]  # not asking for a shuffle matches any run
    try:
        saved = saved_run_for(
            env_id, model, resume=resume, output_dir=output_dir, wanted=wanted, base=runs_root
        )
    except ResumeError as exc:
        raise ConfigError(str(exc)) from None
    if saved is not None:
        sm = saved.metadata
        if normalize_name(sm.env_id) != env_id or sm.model != model:
            raise ResumeMismatchError(
                f"cannot resume {saved.path}: it is a run of {sm.env_id} with model {sm.model}, "
                f"not {env_id} with {model}"
            )
    config = EvalConfig.resolve(
        env_id, *layers, saved=saved.metadata if saved else None, package_defaults=package_defaults
    )
    if not config.save_results:
        return config
    update: dict[str, Any] = {"resume": bool(config.resume)}
    sources = dict(config.sources)
    notes = list(config.notes)
    if saved is not None:
        update["output_dir"] = saved.path
        sources["output_dir"] = RESUMED_SOURCE
    elif isinstance(resume, Path):  # a directory killed before its first metadata: start the run there
        update["output_dir"] = resume
        sources["output_dir"] = RESUMED_SOURCE
    elif config.output_dir is None:
        update["output_dir"] = new_run_dir(env_id, config.model, runs_root)
        if config.resume:
            notes.append(f"no incomplete run of {env_id} with {config.model} to resume; starting a new one")
    return config.model_copy(update={**update, "sources": sources, "notes": notes})


def given(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings actually given (``None`` means "not given" everywhere in this module)."""
    return {k: v for k, v in settings.items() if v is not None}


__all__ = [
    "DEFAULT_SOURCE",
    "PACKAGE_KEYS",
    "PACKAGE_SOURCE",
    "RESUMED_SOURCE",
    "SETTING_NAMES",
    "SUITE_ENTRY_KEYS",
    "SUITE_SOURCE",
    "ApiKind",
    "ClientBackend",
    "ConfigError",
    "EvalConfig",
    "EvalSettings",
    "RunSettings",
    "SuiteEntry",
    "given",
    "load_suite",
    "resolve_eval_config",
]
