"""A tiny offline tokenizer with a ChatML chat template, built here with the ``tokenizers`` library.

It stands in for a real model's tokenizer wherever one is needed without a download: the token server
(``token_server.py``) encodes prompts and replies with it, and prime-rl's orchestrator loads the same
directory with ``transformers.AutoTokenizer`` (``[model] name = "<directory>"``). Byte-level BPE, so every
text round-trips and every token can also be spelled as its single-byte tokens; trained on a fixed corpus
(deterministic: the same directory every time), with the ChatML markers as special tokens.

The chat template is ChatML as Qwen2.5 writes it (tool schemas in the system turn, a tool call as
``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` inside the assistant turn, tool results as
``tool`` turns), written so that the rendering of an assistant message is exactly the text the model
generated followed by ``<|im_end|>\\n``. ``render`` applies it the way ``transformers`` does (jinja2 with
``trim_blocks`` and ``lstrip_blocks``, a ``tojson`` filter), so both sides tokenize a conversation alike.

    python tiny_tokenizer.py DIR      # writes DIR/tokenizer.json and DIR/tokenizer_config.json
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

IM_START, IM_END, END_OF_TEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
SPECIAL_TOKENS = (END_OF_TEXT, IM_START, IM_END)
VOCAB_SIZE = 1024

CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for call in message.tool_calls or [] %}
{%- set fn = call.function if call.function is defined else call %}
{%- if (message.content or not loop.first) %}{{- '\\n' }}{%- endif %}
{{- '<tool_call>\\n{"name": "' + fn.name + '", "arguments": ' }}
{%- if fn.arguments is string %}{{- fn.arguments }}{%- else %}{{- fn.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""

#: What the merges are learnt from: the kinds of text the bundled environments and their replies hold.
_CORPUS = (
    "Solve the following math problem. Put your final answer in \\boxed{}. "
    "What is the value of x if 3x + 7 = 22? The answer is \\boxed{5}. \\boxed{12} \\boxed{-3} \\frac{1}{2}",
    "Is the following boolean expression True or False? not ( True and False ) or False is "
    "<answer>True</answer> <answer>False</answer> <answer>Unknown</answer>",
    "Answer the question by searching the encyclopedia. Which city is the capital of the province? "
    "search_web queries num_results_per_query scan_page open_lines finish final_answer",
    '<tool_call>\n{"name": "search_web", "arguments": {"queries": ["capital of the province"]}}\n</tool_call>',
    '<tool_call>\n{"name": "finish", "arguments": {"final_answer": "the river"}}\n</tool_call>',
    "You are a software engineer. Fix the issue in the repository. ```bash\ncat src/module.py\n``` "
    "```bash\ngit diff\n``` python -m pytest tests echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "The quick brown fox jumps over the lazy dog. 0123456789 the and of to in is that it for on with as",
)


@cache
def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(_CORPUS) * 4, trainer)
    return str(tok.to_str())


def tokenizer_config() -> dict[str, Any]:
    """``tokenizer_config.json``: what ``transformers.AutoTokenizer`` needs besides ``tokenizer.json``."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": END_OF_TEXT,
        "unk_token": None,
        "model_max_length": 1 << 20,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }


def write(directory: Path) -> Path:
    """Write the tokenizer directory (``tokenizer.json``, ``tokenizer_config.json``); returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tokenizer.json").write_text(_tokenizer_json())
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=1) + "\n")
    return directory


class TinyTokenizer:
    """Encode, decode and render chats with the tiny tokenizer (the ``tokenizers`` library and jinja2
    only; no ``transformers`` needed)."""

    def __init__(self) -> None:
        import jinja2.sandbox
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(_tokenizer_json())
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
        self._template = env.from_string(CHAT_TEMPLATE)
        self.eos_id = self.token_id(IM_END)
        self.vocab_size = int(self._tok.get_vocab_size())

    def token_id(self, token: str) -> int:
        tid = self._tok.token_to_id(token)
        if tid is None:
            raise KeyError(token)
        return int(tid)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=skip_special_tokens))

    def piece(self, token_id: int) -> str:
        return str(self._tok.id_to_token(token_id))

    def spelled_out(self, ids: list[int]) -> list[int]:
        """The same text with its first multi-byte token replaced by its single-byte tokens: a valid but
        non-canonical tokenization (``encode(decode(x))`` merges it back), as a sampling model may emit."""
        for i, tid in enumerate(ids):
            piece = self.piece(tid)
            if len(piece) > 1 and piece not in SPECIAL_TOKENS:
                return [*ids[:i], *(self.token_id(ch) for ch in piece), *ids[i + 1 :]]
        return list(ids)

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        return str(
            self._template.render(
                messages=messages, tools=tools or None, add_generation_prompt=add_generation_prompt
            )
        )

    def chat_ids(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> list[int]:
        return self.encode(self.render(messages, tools, add_generation_prompt=add_generation_prompt))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tiny_tokenizer.py DIR")
    print(write(Path(sys.argv[1])))
