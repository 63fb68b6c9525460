"""Sampling arguments: the one merge rule, and the request body they become.

Layers are merged lowest first (an environment's defaults, then a run's settings, then a caller's
override); a later layer wins key by key, and ``extra_body`` is merged key by key too, so a run that sets
``extra_body.top_k`` keeps an environment's ``extra_body.min_p``. A layer that sets ``temperature = None``
overrides a lower layer's value with "unset": request bodies leave ``None`` values out, so the server's
default applies.

The merge is idempotent (``merge(a, merge(a, b)) == merge(a, b)``), which is what lets a run compute what
each request family sends once, record exactly that, and hand it down unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_args

from verifiers.types import ReturnTokens, SamplingArgs

#: The request fields each ``ReturnTokens`` setting adds (vLLM's two forms; ``both`` asks for both).
_TOKEN_FIELDS: dict[str, dict[str, Any]] = {
    "none": {},
    "token_ids": {"extra_body": {"return_token_ids": True}},
    "logprobs": {"logprobs": True, "extra_body": {"return_tokens_as_token_ids": True}},
    "both": {"logprobs": True, "extra_body": {"return_tokens_as_token_ids": True, "return_token_ids": True}},
}


def merge_sampling_args(*layers: Mapping[str, Any] | None) -> SamplingArgs:
    """Merge sampling-argument layers, lowest precedence first (``None`` layers are skipped)."""
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for layer in layers:
        if not layer:
            continue
        for key, value in layer.items():
            if key == "extra_body":
                if value is not None and not isinstance(value, Mapping):
                    raise TypeError(f"sampling_args.extra_body must be a mapping, not {value!r}")
                extra.update(value or {})
            else:
                out[key] = value
    if extra:
        out["extra_body"] = extra
    return cast(SamplingArgs, out)


def cap_max_tokens(args: SamplingArgs, limit: int | None) -> SamplingArgs:
    """``args`` with ``max_tokens`` (and ``max_completion_tokens``) at most ``limit``; unset ones become
    ``limit`` so a server's own default cannot overrun a small context either."""
    if limit is None:
        return args
    out: dict[str, Any] = dict(args)
    for key in ("max_tokens", "max_completion_tokens"):
        value = out.get(key)
        if isinstance(value, int) and value > limit:
            out[key] = limit
    if out.get("max_tokens") is None and out.get("max_completion_tokens") is None:
        out["max_tokens"] = limit
    return cast(SamplingArgs, out)


def token_request_args(return_tokens: ReturnTokens) -> SamplingArgs:
    """The sampling-argument layer that asks a vLLM server for tokens (see ``ReturnTokens``):
    ``"token_ids"`` sends ``return_token_ids: true`` (the server answers ``prompt_token_ids`` and each
    choice's ``token_ids``); ``"logprobs"`` sends ``logprobs: true`` with ``return_tokens_as_token_ids:
    true`` (logprob tokens read ``token_id:<n>``); ``"both"`` sends all three. Merge it *under* the run's
    own arguments, so an explicit ``logprobs``/``top_logprobs`` there wins."""
    if return_tokens not in _TOKEN_FIELDS:
        raise ValueError(f"return_tokens must be one of {get_args(ReturnTokens)}, not {return_tokens!r}")
    return merge_sampling_args(_TOKEN_FIELDS[return_tokens])


def request_fields(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON body fields sampling arguments add to a request: ``extra_body`` flattened into the top
    level (the ``openai`` SDK's rule), everything else as given except ``None`` values, which are left out
    (as the reference SDK's clients do: the server's default applies)."""
    if not args:
        return {}
    fields = {k: v for k, v in args.items() if k != "extra_body"}
    fields.update(args.get("extra_body") or {})
    return {k: v for k, v in fields.items() if v is not None}


__all__ = ["cap_max_tokens", "merge_sampling_args", "request_fields", "token_request_args"]
