"""A problem's test cases, decoded from a ``code_generation_lite`` row without running anything it holds.

``public_test_cases`` is a JSON string: a list of ``{"input", "output", "testtype"}`` objects (``testtype``
``"stdin"`` or ``"functional"``). ``private_test_cases`` is the same list, either as a JSON string or (most
rows) as base64 of zlib of a pickle of that JSON string, which is how the official loader reads it.

A pickle is a program: unpickling one can call any importable callable (``os.system`` through
``__reduce__``). The private tests are therefore unpickled by ``DataOnlyUnpickler``, which resolves no
global at all (``find_class`` refuses every name, so nothing callable can be reached or built) and then
accepts only ``str``, ``list``, ``dict``, ``int``, ``float``, ``bool`` and ``None`` in what it built. A row
that needs anything else is refused with an error naming it; its payload is never executed.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from verifiers.errors import EnvError

#: Largest decompressed pickle accepted (the biggest release-v6 rows are tens of MB): a zlib bomb stops here.
MAX_DECOMPRESSED_BYTES = 1 << 30
#: The only types the unpickled value may contain (exact types: no subclasses).
ALLOWED_TYPES: tuple[type, ...] = (str, list, dict, int, float, bool, type(None))


class InvalidTestsError(EnvError, ValueError):
    """A row's test cases cannot be decoded, or would need more than plain data to be (an unsafe pickle).

    An environment error (the data, not the model, is at fault): the rollout records it with this message,
    which names the row."""


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle asked for something other than plain data (a global, a persistent id, another type)."""


class TestCase(BaseModel):
    """One test as the dataset stores it: ``input`` and ``output`` are text in both forms (a functional
    test's input holds one JSON value per line, one per argument; its output is one JSON value)."""

    __test__ = False  # not a pytest class, despite the name

    input: str
    output: str
    testtype: Literal["stdin", "functional"]


class DataOnlyUnpickler(pickle.Unpickler):
    """Unpickles plain data only: every global lookup (``GLOBAL``, ``STACK_GLOBAL``, ``INST``, the
    extension registry) and every persistent id is refused, so no callable is ever reached; out-of-band
    buffers are not given, so none can be read either."""

    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(f"the pickle refers to {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("the pickle uses a persistent id")


def _check_plain(value: Any) -> None:
    """Refuse anything but ``ALLOWED_TYPES`` anywhere in ``value`` (iteratively: no recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) not in ALLOWED_TYPES:
            raise UnsafePickleError(f"the pickle holds a {type(item).__name__}")
        if type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            stack.extend(item.keys())
            stack.extend(item.values())


def unpickle_data(blob: bytes) -> Any:
    """The plain data a pickle holds, or ``UnsafePickleError`` (nothing in ``blob`` is executed)."""
    try:
        value = DataOnlyUnpickler(io.BytesIO(blob)).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, MemoryError) as exc:
        raise UnsafePickleError(f"not a valid pickle ({type(exc).__name__}: {exc})") from None
    _check_plain(value)
    return value


def _inflate(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, MAX_DECOMPRESSED_BYTES)
    if inflater.unconsumed_tail or len(out) >= MAX_DECOMPRESSED_BYTES:
        raise ValueError(f"decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes")
    return out


def _cases(value: Any, where: str) -> list[TestCase]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise InvalidTestsError(f"{where}: not a JSON list of tests ({exc})") from None
    if not isinstance(value, list):
        raise InvalidTestsError(f"{where}: expected a list of tests, got {type(value).__name__}")
    cases = []
    for i, case in enumerate(value):
        try:
            cases.append(TestCase.model_validate(case))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "shape"
            raise InvalidTestsError(f"{where}: test {i} has a bad {field}: {first['msg']}") from None
    return cases


def decode_public(value: str, *, row: str) -> list[TestCase]:
    """``public_test_cases``: a JSON string."""
    return _cases(value, f"{row}: public_test_cases")


def decode_private(value: str, *, row: str) -> list[TestCase]:
    """``private_test_cases``: a JSON string, or base64 of zlib of a pickle of one (decoded as plain data).

    ``row`` names the row in every error (``InvalidTestsError``), an unsafe pickle included."""
    where = f"{row}: private_test_cases"
    try:
        plain = json.loads(value)
    except (ValueError, RecursionError):
        pass  # not JSON: the encoded form
    else:
        return _cases(plain, where)
    try:
        blob = _inflate(base64.b64decode(value.encode("ascii", "strict")))
    except (binascii.Error, UnicodeEncodeError, ValueError, zlib.error) as exc:
        raise InvalidTestsError(f"{where}: neither JSON nor base64 + zlib ({exc})") from None
    try:
        data = unpickle_data(blob)
    except UnsafePickleError as exc:
        raise InvalidTestsError(
            f"{where}: refused to unpickle it: {exc} (only str, list, dict, int, float, bool and None "
            "may be unpickled; nothing in it was run)"
        ) from None
    return _cases(data, where)
