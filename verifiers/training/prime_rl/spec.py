"""The adapter's own record of a rendered run (``vf-train.toml``): what prime-rl's files do not say.

prime-rl's TOMLs name the bridge packages and env-server addresses; this file says which of *our*
environments stand behind them (id, version pin, args, sampling ratio, ports), the prompt budget the length
check uses, the node hostnames of a multi-node preset and the custom loss package. ``render`` writes it,
``validate`` and ``launch`` read it.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from verifiers.training.prime_rl.release import RELEASE, RELEASE_COMMIT

SPEC_FILE = "vf-train.toml"
Preset = Literal["single-node", "intellect3"]

#: The custom loss package the adapter ships (its own name: prime-rl's venv already has ``verifiers``).
LOSS_DISTRIBUTION = "vf-icepop-loss"
LOSS_MODULE = "vf_icepop_loss"
LOSS_IMPORT_PATH = f"{LOSS_MODULE}.icepop_loss"
LOSS_KWARGS: dict[str, float] = {"alpha": 0.5, "beta": 5.0, "ratio_floor": 1e-5}


#: A plain name: what may go into generated code, shell scripts, batch files and paths under the run
#: directory unquoted (environment ids, distribution names, Slurm job names).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: An environment id (lower case, as distributions are named) and a version pin (PEP 440 characters).
ENV_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.!+_-]{0,63}")
#: A hostname (RFC 1123 labels) or node name.
HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
#: A dotted Python import path (``module.function``).
IMPORT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _matching(pattern: re.Pattern[str], what: str) -> Any:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return AfterValidator(check)


def _host(value: str) -> str:
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if not HOSTNAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a hostname or IP address")
    return value


EnvId = Annotated[str, _matching(ENV_ID, "an environment id (lower-case letters, digits, '.', '_', '-')")]
Version = Annotated[
    str, AfterValidator(lambda v: v if not v or VERSION.fullmatch(v) else _bad(v, "a version"))
]
Host = Annotated[str, AfterValidator(_host)]
Name = Annotated[str, _matching(NAME, "a plain name (letters, digits, '.', '_', '-')")]
ImportPath = Annotated[str, _matching(IMPORT_PATH, "a dotted import path (module.function)")]


def _bad(value: str, what: str) -> str:
    raise ValueError(f"{value!r} is not {what}")


def spec_errors(exc: Exception) -> list[str]:
    """A ``vf-train.toml`` error as one line per problem: ``where = value as given: what``."""
    if isinstance(exc, ValidationError):
        out = []
        for e in exc.errors():
            where = ".".join(str(p) for p in e["loc"]) or "vf_train"
            given = (
                f" = {e['input']!r}" if e["type"] != "missing" and not isinstance(e["input"], dict) else ""
            )
            out.append(f"{where}{given}: {e['msg'].removeprefix('Value error, ')}")
        return out
    return [str(exc).replace("\n", " ")]


def spec_problems(exc: Exception) -> str:
    """``spec_errors`` in one line (an exception message)."""
    return "; ".join(spec_errors(exc))


class _Strict(BaseModel):
    # strict: ``workers = true`` is not 1, nor ``http_port = "8000"`` a port (TOML has real types)
    model_config = ConfigDict(extra="forbid", strict=True)


class EnvEntry(_Strict):
    """One of our environments, served by ``vf-serve`` and mirrored by a bridge package."""

    id: EnvId
    version: Version = ""
    ratio: float | None = Field(default=None, gt=0)
    args: dict[str, Any] = Field(default_factory=dict)
    host: Host = "127.0.0.1"
    http_port: int = Field(ge=1, le=65535)
    zmq_port: int = Field(ge=1, le=65535)
    #: vf-serve's cap on rollouts in flight (its default, 256, would throttle a large batch) and its worker
    #: processes; render sets both from the preset's batch.
    max_concurrent: int = Field(default=256, ge=1)
    workers: int = Field(default=1, ge=1)

    @property
    def name(self) -> str:
        return self.id

    @property
    def bridge_distribution(self) -> str:
        return bridge_distribution(self.id)

    @property
    def bridge_module(self) -> str:
        return self.bridge_distribution.replace("-", "_")

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    @property
    def zmq_address(self) -> str:
        return f"tcp://{self.host}:{self.zmq_port}"


class Nodes(_Strict):
    """Hostnames of a multi-node run, in Slurm order: inference nodes first, then trainer nodes (the
    orchestrator and the env servers run on the first trainer node)."""

    inference: list[Host] = Field(default_factory=list)
    trainer: list[Host] = Field(default_factory=list)
    inference_port: int = Field(default=8000, ge=1, le=65535)


class RunSpec(_Strict):
    preset: Preset
    release: str = RELEASE
    release_commit: str = RELEASE_COMMIT
    model: str = Field(min_length=1)
    #: Longest prompt (tokens) the run expects; prompt + sampling.max_tokens must fit orchestrator.seq_len.
    prompt_budget: int = Field(gt=0)
    env: list[EnvEntry]
    nodes: Nodes = Field(default_factory=Nodes)
    loss_distribution: Name = LOSS_DISTRIBUTION
    loss_import_path: ImportPath = LOSS_IMPORT_PATH

    def write(self, out: Path) -> None:
        import tomli_w

        text = "# Written by vf-train render; read by vf-train validate / launch / bridge.\n"
        text += tomli_w.dumps({"vf_train": self.model_dump(mode="json", exclude_none=True)})
        (out / SPEC_FILE).write_text(text)

    @classmethod
    def read(cls, run_dir: Path) -> RunSpec:
        data = tomllib.loads((run_dir / SPEC_FILE).read_text())
        return cls.model_validate(data.get("vf_train", {}))


def bridge_distribution(env_id: str) -> str:
    """The bridge package's name in prime-rl's venv; its module is what ``vf.load_environment`` imports."""
    return f"{env_id}-vfbridge"


_ENV_ARG = re.compile(
    r"^(?P<id>[A-Za-z0-9][A-Za-z0-9._-]*?)(?:@(?P<version>[A-Za-z0-9][A-Za-z0-9.!+_-]*))?(?::(?P<ratio>[0-9.eE+-]+))?$"
)


def parse_env_arg(text: str) -> tuple[str, str, float | None]:
    """``--env ID[@VERSION][:RATIO]``: ``math-env``, ``code-env:0.3`` (sampling ratio 0.3), ``math-env@0.2.0``."""
    m = _ENV_ARG.match(text.strip())
    if m is None:
        raise ValueError(f"--env {text!r}: expected ID[@VERSION][:RATIO], e.g. math-env or code-env:0.3")
    ratio = None
    if m["ratio"] is not None:
        try:
            ratio = float(m["ratio"])
        except ValueError:
            raise ValueError(f"--env {text!r}: ratio {m['ratio']!r} is not a number") from None
        if ratio <= 0:
            raise ValueError(f"--env {text!r}: ratio must be > 0")
    return m["id"].lower(), m["version"] or "", ratio
