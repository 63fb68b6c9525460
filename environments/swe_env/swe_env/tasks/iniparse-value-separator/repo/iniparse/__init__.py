"""A small INI dialect parser."""

from iniparse.core import ParseError, as_bool, as_list, parse, resolve

__all__ = ["ParseError", "as_bool", "as_list", "parse", "resolve"]
