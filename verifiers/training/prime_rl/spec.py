"""The adapter's own record of a rendered run (``vf-train.toml``): what prime-rl's files do not say.

prime-rl's TOMLs name the bridge packages and env-server addresses; this file says which of *our*
environments stand behind them (id, version pin, args, sampling ratio, ports), the prompt budget the length
check uses, the node hostnames of a multi-node preset and the custom loss package. ``render`` writes it,
``validate`` and ``launch`` read it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifiers.training.prime_rl.release import RELEASE, RELEASE_COMMIT

SPEC_FILE = "vf-train.toml"
Preset = Literal["single-node", "intellect3"]

#: The custom loss package the adapter ships (its own name: prime-rl's venv already has ``verifiers``).
LOSS_DISTRIBUTION = "vf-icepop-loss"
LOSS_MODULE = "vf_icepop_loss"
LOSS_IMPORT_PATH = f"{LOSS_MODULE}.icepop_loss"
LOSS_KWARGS: dict[str, float] = {"alpha": 0.5, "beta": 5.0, "ratio_floor": 1e-5}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EnvEntry(_Strict):
    """One of our environments, served by ``vf-serve`` and mirrored by a bridge package."""

    id: str
    version: str = ""
    ratio: float | None = Field(default=None, gt=0)
    args: dict[str, Any] = Field(default_factory=dict)
    host: str = "127.0.0.1"
    http_port: int
    zmq_port: int
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

    inference: list[str] = Field(default_factory=list)
    trainer: list[str] = Field(default_factory=list)
    inference_port: int = 8000


class RunSpec(_Strict):
    preset: Preset
    release: str = RELEASE
    release_commit: str = RELEASE_COMMIT
    model: str
    #: Longest prompt (tokens) the run expects; prompt + sampling.max_tokens must fit orchestrator.seq_len.
    prompt_budget: int = Field(gt=0)
    env: list[EnvEntry]
    nodes: Nodes = Field(default_factory=Nodes)
    loss_distribution: str = LOSS_DISTRIBUTION
    loss_import_path: str = LOSS_IMPORT_PATH

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
    r"^(?P<id>[A-Za-z0-9][A-Za-z0-9._-]*?)(?:@(?P<version>[^:]+))?(?::(?P<ratio>[0-9.eE+-]+))?$"
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
