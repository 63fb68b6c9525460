"""Tokenizer for a small expression language."""

from tokenizer.core import Token, TokenizeError, tokenize, values

__all__ = ["Token", "TokenizeError", "tokenize", "values"]
