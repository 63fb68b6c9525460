"""Fuzz every operation of the OpenAPI schema with schemathesis: no input may cause a 5xx.

Runs in-process over ASGI against a hub holding one published environment. Half of the examples carry a
publish token, so generated requests also get past authentication. Bounded (``MAX_EXAMPLES`` per
operation, derandomised so a failure reproduces) to stay well under a minute per database.

Hypothesis is driven directly rather than through schemathesis' pytest plugin, which does not support
this pytest version's fixture handling.
"""

from __future__ import annotations

import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st
from schemathesis import GenerationMode

from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

MAX_EXAMPLES = 30
REAL_PATH = {"owner": "alice", "name": "demo-env", "version": "0.1.0", "project": "demo-env"}


def test_no_server_errors(app: FastAPI, client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        # Random inputs, inputs aimed at the real environment (so deep code runs), and invalid inputs.
        real = {k: v for k, v in REAL_PATH.items() if "{" + k + "}" in operation.path}
        strategy = st.one_of(
            operation.as_strategy(),
            operation.as_strategy(path_parameters=real),
            operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        )

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy, authed=st.booleans())
        def run(case, authed: bool) -> None:  # type: ignore[no-untyped-def]
            headers = {"Authorization": f"Bearer {actors.alice}"} if authed else {}
            # schemathesis' default 10 s per call is a speed requirement; this only guards a hang.
            response = case.call(headers=headers, timeout=300)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
                )

        run()
    assert operations >= 20, "the schema lost its operations"
    assert not failures, "\n".join(failures[:20])
