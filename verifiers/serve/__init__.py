"""The env server (``vf-serve``): an environment's dataset and rollouts over HTTP and over the reference
SDK's ZMQ env-server protocol, for trainers (docs/training.md, "Env server")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "ClientNotAllowed": "verifiers.serve.policy",
    "ClientPolicy": "verifiers.serve.policy",
    "ServerDrainingError": "verifiers.serve.pool",
    "WorkerCrashedError": "verifiers.serve.pool",
    "WorkerPool": "verifiers.serve.pool",
    "to_reference_output": "verifiers.serve.reference_output",
    "GroupRunner": "verifiers.serve.runner",
    "ServeConfig": "verifiers.serve.server",
    "serve": "verifiers.serve.server",
    "EnvService": "verifiers.serve.service",
    "DatasetPage": "verifiers.serve.wire",
    "RolloutsRequest": "verifiers.serve.wire",
    "ServerInfo": "verifiers.serve.wire",
    "ReferenceZMQServer": "verifiers.serve.zmq_server",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.serve.policy import ClientNotAllowed as ClientNotAllowed, ClientPolicy as ClientPolicy
    from verifiers.serve.pool import (
        ServerDrainingError as ServerDrainingError,
        WorkerCrashedError as WorkerCrashedError,
        WorkerPool as WorkerPool,
    )
    from verifiers.serve.reference_output import to_reference_output as to_reference_output
    from verifiers.serve.runner import GroupRunner as GroupRunner
    from verifiers.serve.server import ServeConfig as ServeConfig, serve as serve
    from verifiers.serve.service import EnvService as EnvService
    from verifiers.serve.wire import (
        DatasetPage as DatasetPage,
        RolloutsRequest as RolloutsRequest,
        ServerInfo as ServerInfo,
    )
    from verifiers.serve.zmq_server import ReferenceZMQServer as ReferenceZMQServer
