"""A run directory (``metadata.json`` + ``results.jsonl``) as a hub upload: read, truncate, push.

What is kept of each rollout: example id and index, task, prompt and completion (roles, text, reasoning,
tool calls and results), answer, reward, metrics, error (category, type, message), stop condition,
truncation flag, token usage and timing. Token ids, logprobs, trajectories and ``info`` stay local.

**Truncation** (documented limits, ``verifiers.hub.wire``): each text field of a message (content,
reasoning, a tool call's arguments), the answer and an error message keep at most
``MESSAGE_TEXT_LIMIT`` (8192) characters, ending in ``TRUNCATION_MARK`` when cut; a conversation keeps at
most ``MESSAGES_LIMIT`` (256) messages, the first and last halves with one ``note`` message saying how many
were left out. A rollout whose upload would still exceed ``CHUNK_BYTES`` is cut further (the text limit
halves until it fits). NUL characters, which the hub refuses, become U+FFFD.

**Chunks and resume**: rollouts go up in chunks of at most ``wire.CHUNK_LIMIT`` rollouts and
``CHUNK_BYTES`` bytes. The run's key is derived from its metadata (environment, version, model, start
time), so pushing the same directory again resumes: the hub answers the run it already has, the client
skips the rollouts the hub already holds, and the hub ignores any it receives twice.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verifiers._urls import redact_url
from verifiers.hub import env_args, wire
from verifiers.hub.client import HubClient
from verifiers.hub.wire import HubClientError
from verifiers.types import RunMetadata

METADATA_FILE = "metadata.json"
RESULTS_FILE = "results.jsonl"
#: Largest chunk body sent (the hub refuses JSON bodies over 1 MiB).
CHUNK_BYTES = 768 * 1024


@dataclass(frozen=True)
class PushTarget:
    """The published version a run's results go to: found (and the token checked) before anything is
    uploaded — before a run even starts, for ``vf-eval --push``."""

    owner: str
    name: str
    #: The version whose content hash is the run's (not always the version the run recorded).
    version: str
    content_hash: str
    #: Set when the run recorded another version than the one its code matches (a stale install).
    note: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True)
class PushResult:
    run: wire.EvalRunInfo
    #: Rollouts sent now, and those the hub already had (an earlier, interrupted push).
    sent: int
    already_there: int
    url: str
    target: PushTarget | None = None


def _clean(text: str, limit: int) -> str:
    text = text.replace("\x00", "\ufffd")
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(wire.TRUNCATION_MARK))] + wire.TRUNCATION_MARK


def _text_of(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text, name the rest
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                kind = part.get("type", "part") if isinstance(part, dict) else "part"
                parts.append(f"[{kind}]")
        return "\n".join(parts)
    return json.dumps(content, default=str)


def _message(msg: Any, limit: int) -> dict[str, Any]:
    if not isinstance(msg, dict):
        return {"role": "unknown", "content": _clean(str(msg), limit)}
    out: dict[str, Any] = {"role": _clean(str(msg.get("role") or "unknown"), 32)}
    content = _text_of(msg.get("content"))
    if content is not None:
        out["content"] = _clean(content, limit)
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out["reasoning_content"] = _clean(reasoning, limit)
    calls = []
    for call in (msg.get("tool_calls") or [])[:64]:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        fn: dict[str, Any] = function if isinstance(function, dict) else call
        args = fn.get("arguments", "")
        calls.append(
            {
                "id": _clean(str(call.get("id") or ""), 200),
                "name": _clean(str(fn.get("name") or ""), 200),
                "arguments": _clean(args if isinstance(args, str) else json.dumps(args, default=str), limit),
            }
        )
    if calls:
        out["tool_calls"] = calls
    for key in ("tool_call_id", "name"):
        if isinstance(msg.get(key), str):
            out[key] = _clean(msg[key], 200)
    return out


def _conversation(value: Any, limit: int) -> list[dict[str, Any]] | str:
    if isinstance(value, str):
        return _clean(value, limit)
    messages = list(value or [])
    if len(messages) > wire.MESSAGES_LIMIT:
        head = (wire.MESSAGES_LIMIT - 1) // 2
        tail = wire.MESSAGES_LIMIT - 1 - head
        note = {"role": "note", "content": f"[{len(messages) - head - tail} messages left out]"}
        messages = [*messages[:head], note, *messages[-tail:]]
    return [_message(m, limit) for m in messages]


def rollout_record(row: dict[str, Any], *, limit: int = wire.MESSAGE_TEXT_LIMIT) -> wire.RolloutRecord:
    """One ``results.jsonl`` row as the hub keeps it (truncated as documented above)."""
    error = row.get("error")
    timing = row.get("timing") or {}
    usage = row.get("usage") or {}
    data = {
        "example_id": row["example_id"],
        "rollout_index": row["rollout_index"],
        "task": _clean(str(row.get("task") or ""), 200),
        "prompt": _conversation(row.get("prompt"), limit),
        "completion": _conversation(row.get("completion"), limit),
        "answer": _clean(str(row.get("answer") or ""), limit),
        "reward": row.get("reward"),
        "metrics": row.get("metrics") or {},
        "error": {
            "category": error.get("category", "env"),
            "type": _clean(str(error.get("type") or ""), 200),
            "message": _clean(str(error.get("message") or ""), limit),
        }
        if isinstance(error, dict)
        else None,
        "stop_condition": _clean(row["stop_condition"], 200) if row.get("stop_condition") else None,
        "is_truncated": bool(row.get("is_truncated")),
        "usage": {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")},
        "timing": {k: float(timing.get(k) or 0.0) for k in ("generation", "scoring", "total")},
    }
    for name, value in [("reward", data["reward"]), *data["metrics"].items()]:
        if value is not None and not (isinstance(value, int | float) and math.isfinite(value)):
            raise HubClientError(
                f"rollout {row['example_id']}/{row['rollout_index']}: {name} is {value!r}, not a finite number"
            )
    try:
        return wire.RolloutRecord.model_validate(data)
    except ValidationError as exc:
        raise HubClientError(
            f"rollout {row['example_id']}/{row['rollout_index']} cannot be uploaded: {exc.errors()[0]['msg']}"
        ) from None


def fitted_record(row: dict[str, Any]) -> tuple[wire.RolloutRecord, bytes]:
    """``rollout_record`` cut further until its JSON fits in a chunk; with that JSON."""
    limit = wire.MESSAGE_TEXT_LIMIT
    while True:
        record = rollout_record(row, limit=limit)
        body = record.model_dump_json().encode()
        if len(body) <= CHUNK_BYTES - 64 or limit <= 16:
            return record, body
        limit //= 2


def read_results(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of ``results.jsonl``, in file order (a line still being written is skipped)."""
    path = Path(run_dir) / RESULTS_FILE
    if not path.is_file():
        return
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # the writer has not finished this line yet
            if raw.strip():
                yield json.loads(raw)


def read_metadata(run_dir: Path) -> RunMetadata:
    path = Path(run_dir) / METADATA_FILE
    try:
        return RunMetadata.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise HubClientError(f"{run_dir} is not a run directory (no {METADATA_FILE})") from None
    except ValidationError as exc:
        raise HubClientError(f"{path} is not run metadata: {exc.errors()[0]['msg']}") from None


def run_key(meta: RunMetadata) -> str:
    """The run's id on the hub: the same directory always gives the same key (its ``run_id``; directories
    from before ``run_id`` existed fall back to what identified them then)."""
    if meta.run_id:
        return meta.run_id
    ident = json.dumps([meta.env_id, meta.env_version, meta.model, meta.started_at])
    return hashlib.sha256(ident.encode()).hexdigest()[:32]


def _timestamp(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def create_body(
    meta: RunMetadata, visibility: wire.Visibility, *, version: str | None = None
) -> wire.EvalRunCreate:
    """The run as the hub records it; ``version`` overrides the recorded one (``push_target``), and
    large ``env_args`` values go by content hash (``verifiers.hub.env_args``), as metadata.json keeps
    them, also for directories written before that rule."""
    return wire.EvalRunCreate(
        run_key=run_key(meta),
        version=version or meta.env_version,
        content_hash=meta.env_content_hash,
        model=meta.model,
        sampling_args=meta.sampling_args,
        env_args=env_args.compact(meta.env_args),
        sdk_version=meta.sdk_version,
        num_examples=meta.num_examples,
        rollouts_per_example=meta.rollouts_per_example,
        shuffle=meta.shuffle,
        visibility=visibility,
        started_at=_timestamp(meta.started_at),
        finished_at=_timestamp(meta.finished_at),
    )


def _chunks(rows: Iterator[dict[str, Any]]) -> Iterator[list[wire.RolloutRecord]]:
    chunk: list[wire.RolloutRecord] = []
    size = 0
    for row in rows:
        record, body = fitted_record(row)
        if chunk and (len(chunk) >= wire.CHUNK_LIMIT or size + len(body) + 1 > CHUNK_BYTES - 64):
            yield chunk
            chunk, size = [], 0
        chunk.append(record)
        size += len(body) + 1
    if chunk:
        yield chunk


def _newest(versions: list[wire.VersionInfo]) -> wire.VersionInfo:
    from packaging.version import InvalidVersion, Version

    def key(v: wire.VersionInfo) -> tuple[bool, Version]:
        try:
            parsed = Version(v.version)
        except InvalidVersion:
            parsed = Version("0")
        return (not v.yanked, parsed)

    return max(versions, key=key)


def _owner_of(client: HubClient, env_id: str, version: str, me: wire.WhoAmI) -> str | None:
    """Whose ``env_id`` is (names are unique hub-wide), or ``None`` when the hub has no such environment
    this token may see."""
    for spec in (f"{env_id}@=={version}", env_id):
        try:
            return client.resolve(spec).owner
        except HubClientError as exc:
            if exc.status_code != 404:
                raise
    for namespace in me.namespaces:  # every version yanked: resolve finds none, the listing still does
        try:
            return client.environment(namespace, env_id).owner
        except HubClientError as exc:
            if exc.status_code != 404:
                raise
    return None


def push_target(
    client: HubClient, env_id: str, version: str, content_hash: str, *, owner: str | None = None
) -> PushTarget:
    """Check that results of ``env_id`` (at ``version``, with code ``content_hash``) can be pushed with
    ``client``, and where they go: the token works and may publish, the hub has the environment, and one
    of its versions has this content hash — the recorded version when it does, else the newest that
    does (an editable install's metadata can name an older version than its code). Raises
    ``HubClientError`` saying what to do."""
    client.require_token()
    if not content_hash:
        raise HubClientError(f"{env_id} has no content hash; the hub links results to a content hash")
    try:
        me = client.whoami()
    except HubClientError as exc:
        if exc.status_code == 401:
            raise HubClientError(
                f"the hub at {redact_url(client.url)} refused the token ({exc})", 401
            ) from None
        raise
    if "publish" not in me.scopes and not me.is_admin:
        raise HubClientError(
            f"the token of {me.username} for {redact_url(client.url)} has the scopes {', '.join(me.scopes) or 'none'}; "
            "pushing results needs a token with the publish scope",
            403,
        )
    owner = owner or _owner_of(client, env_id, version, me)
    if owner is None:
        raise HubClientError(
            f"{env_id} is not on the hub at {redact_url(client.url)} (or this token may not see it): publish it first "
            f"(vf-push in its project directory), then push its results",
            404,
        )
    try:
        detail = client.environment(owner, env_id)
    except HubClientError as exc:
        if exc.status_code == 404:
            raise HubClientError(
                f"{owner}/{env_id} is not on the hub at {redact_url(client.url)}: publish it first (vf-push in its "
                "project directory), then push its results",
                404,
            ) from None
        raise
    full = detail.full_name
    if detail.owner not in me.namespaces and not me.is_admin:
        raise HubClientError(
            f"{me.username} may not push results to {full}: only publishers of {detail.owner}'s namespace may",
            403,
        )
    recorded = next((v for v in detail.versions if v.version == version), None)
    if recorded is not None and recorded.content_hash == content_hash:
        return PushTarget(detail.owner, detail.name, version, content_hash)
    same = [v for v in detail.versions if v.content_hash == content_hash]
    if same:
        best = _newest(same)
        said = f"{full} has no version {version}" if recorded is None else f"the run records {version}"
        note = (
            f"{said}, but its code (content hash {content_hash[:12]}…) is {full} {best.version}'s: "
            f"pushing against {best.version}"
        )
        return PushTarget(detail.owner, detail.name, best.version, content_hash, note=note)
    latest = _newest(detail.versions) if detail.versions else None
    published = (
        f"{recorded.version} has {recorded.content_hash[:12]}…"
        if recorded is not None
        else f"it has no version {version}" + (f"; the newest is {latest.version}" if latest else "")
    )
    raise HubClientError(
        f"the code of {env_id} (content hash {content_hash[:12]}…) matches no published version of {full} "
        f"({published}): publish this code as a new version first (bump the version, vf-push), then push "
        "its results",
        409,
    )


def push_run(
    client: HubClient,
    run_dir: Path,
    *,
    owner: str | None = None,
    visibility: wire.Visibility | None = None,
    target: PushTarget | None = None,
) -> PushResult:
    """Upload a finished run directory to the published version its code matches (``push_target``,
    unless ``target`` was found already), resuming an earlier push.

    ``visibility``: a new run's (private when None); a run the hub already has is changed to it when it
    differs (pushing a private run again with ``public`` publishes it) and left as it is when None."""
    meta = read_metadata(run_dir)
    if meta.status == "running":
        raise HubClientError(
            f"{run_dir} is still running (metadata status 'running'); push it once it has finished"
        )
    if not meta.env_content_hash:
        raise HubClientError(f"{run_dir} has no env_content_hash; the hub links results to a content hash")
    if target is None or target.content_hash != meta.env_content_hash:
        target = push_target(client, meta.env_id, meta.env_version, meta.env_content_hash, owner=owner)
    body = create_body(meta, visibility or "private", version=target.version)
    run = client.create_run(target.owner, target.name, body)
    if visibility is not None and run.visibility != visibility:  # the hub had it already, as the other
        run = client.set_run_visibility(run.id, visibility)
    if run.status == "complete":
        return PushResult(run, 0, run.rollout_count, client.url + run.url, target)
    have = set(client.rollout_keys(run.id)) if run.rollout_count else set()
    seen: set[tuple[int, int]] = set()

    def pending() -> Iterator[dict[str, Any]]:
        for row in read_results(run_dir):
            key = (int(row["example_id"]), int(row["rollout_index"]))
            if key in seen or key in have:
                continue
            seen.add(key)
            yield row

    sent = 0
    for chunk in _chunks(pending()):
        client.upload_rollouts(run.id, chunk)
        sent += len(chunk)
    if not sent and not have:
        raise HubClientError(f"{run_dir} has no rollouts in {RESULTS_FILE}; nothing to push")
    final = client.finalize_run(run.id)
    return PushResult(final, sent, len(have), client.url + final.url, target)
