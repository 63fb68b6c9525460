"""The scripted model: an OpenAI-compatible chat-completions server that answers from a rules file, so tool
environments (and anything else) can be tested offline to an exact, known reward (docs/tools.md).

``vf-model-stub RULES --port N`` serves it; ``vf-eval ENV -m scripted:RULES`` and
``env.evaluate(model="scripted:RULES")`` start it for the run (``ScriptedModelServer``). The rules file's
schema is ``Script`` (``verifiers.clients.scripted.rules``, which documents it); ``load_script`` reads one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "Answer": "verifiers.clients.scripted.rules",
    "ErrorSpec": "verifiers.clients.scripted.rules",
    "Rule": "verifiers.clients.scripted.rules",
    "RulesError": "verifiers.clients.scripted.rules",
    "Script": "verifiers.clients.scripted.rules",
    "TextMatch": "verifiers.clients.scripted.rules",
    "ToolCallSpec": "verifiers.clients.scripted.rules",
    "load_script": "verifiers.clients.scripted.rules",
    "parse_script": "verifiers.clients.scripted.rules",
    "SCRIPTED_PREFIX": "verifiers.clients.scripted.server",
    "ScriptedModelError": "verifiers.clients.scripted.server",
    "ScriptedModelServer": "verifiers.clients.scripted.server",
    "is_scripted_model": "verifiers.clients.scripted.server",
    "scripted_app": "verifiers.clients.scripted.server",
    "serve": "verifiers.clients.scripted.server",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.clients.scripted.rules import (
        Answer as Answer,
        ErrorSpec as ErrorSpec,
        Rule as Rule,
        RulesError as RulesError,
        Script as Script,
        TextMatch as TextMatch,
        ToolCallSpec as ToolCallSpec,
        load_script as load_script,
        parse_script as parse_script,
    )
    from verifiers.clients.scripted.server import (
        SCRIPTED_PREFIX as SCRIPTED_PREFIX,
        ScriptedModelError as ScriptedModelError,
        ScriptedModelServer as ScriptedModelServer,
        is_scripted_model as is_scripted_model,
        scripted_app as scripted_app,
        serve as serve,
    )
