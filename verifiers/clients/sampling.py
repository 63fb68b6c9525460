"""Sampling arguments: the one merge rule, and the request body they become.

Layers are merged lowest first (an environment's defaults, then a run's settings, then a caller's
override); a later layer wins key by key, and ``extra_body`` is merged key by key too, so a run that sets
``extra_body.top_k`` keeps an environment's ``extra_body.min_p``. ``None`` values are kept as sent: a
layer that sets ``temperature = None`` really sends ``null``.

The merge is idempotent (``merge(a, merge(a, b)) == merge(a, b)``), which is what lets a run compute what
each request family sends once, record exactly that, and hand it down unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from verifiers.types import SamplingArgs


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


def request_fields(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON body fields sampling arguments add to a request: ``extra_body`` flattened into the top
    level (the ``openai`` SDK's rule), everything else as given."""
    if not args:
        return {}
    fields = {k: v for k, v in args.items() if k != "extra_body"}
    fields.update(args.get("extra_body") or {})
    return fields


__all__ = ["cap_max_tokens", "merge_sampling_args", "request_fields"]
