"""Word sorting: sort a list of words in ascending or descending order.

Hard items mix letter case and ask for code-point order (uppercase before lowercase), which differs from
dictionary order. The verifier checks that the answer is a permutation of the given words in the
requested order.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from logic_env.tasks.base import Difficulty, Item, TaskSpec, bounded, instruction

WORDS = (
    "anchor", "apricot", "archive", "arrow", "autumn", "badge", "balcony", "bamboo", "banner", "barrel",
    "basket", "beacon", "blanket", "blossom", "border", "bottle", "breeze", "bridge", "bucket", "butter",
    "cabin", "cactus", "candle", "canyon", "carpet", "castle", "cellar", "cement", "channel", "cherry",
    "chimney", "circle", "citizen", "clover", "cobalt", "comet", "copper", "cotton", "cradle", "crystal",
    "dagger", "dancer", "desert", "diamond", "dinner", "dolphin", "donkey", "dragon", "drizzle", "eagle",
    "echo", "eclipse", "elbow", "ember", "engine", "falcon", "fabric", "feather", "fiddle", "figure",
    "flannel", "forest", "fossil", "fountain", "gadget", "galaxy", "garden", "garlic", "ginger", "glacier",
    "goblet", "granite", "gravel", "hammer", "harbor", "harvest", "hazel", "helmet", "hermit", "honey",
    "horizon", "iceberg", "igloo", "island", "ivory", "jacket", "jasmine", "jigsaw", "journal", "jungle",
    "kernel", "kettle", "kingdom", "kitten", "ladder", "lantern", "lemon", "lettuce", "lizard", "lobster",
    "magnet", "mango", "marble", "meadow", "mirror", "mitten", "monsoon", "mosaic", "muffin", "napkin",
    "nectar", "needle", "nickel", "noodle", "nutmeg", "oasis", "oyster", "orchard", "otter", "paddle",
    "palace", "parcel", "parrot", "pebble", "pepper", "pillow", "pirate", "planet", "pocket", "puzzle",
    "quartz", "quiver", "rabbit", "radish", "raven", "ribbon", "river", "rocket", "saddle", "salmon",
    "sandal", "saucer", "scarlet", "shadow", "silver", "sketch", "spider", "spiral", "squash", "statue",
    "summit", "tablet", "teapot", "temple", "thimble", "thunder", "timber", "tomato", "tunnel", "turtle",
    "umbrella", "unicorn", "valley", "velvet", "violin", "volcano", "voyage", "wagon", "walnut", "whisker",
    "willow", "window", "winter", "wizard", "yogurt", "zenith", "zephyr", "zigzag", "acorn", "almond",
    "banjo", "basil", "bison", "cedar", "cider", "daisy", "delta", "fable", "flint", "grape",
)  # fmt: skip

Order = Literal["ascending", "descending"]
_SPLIT = re.compile(r"[,\n;]+|\s+")


@dataclass(frozen=True)
class Config:
    num_words: int = 10
    #: Mix letter case and sort by Unicode code point (uppercase letters come first).
    mixed_case: bool = False
    order: Literal["ascending", "descending", "random"] = "random"

    @classmethod
    def preset(cls, difficulty: Difficulty) -> Config:
        return {
            "easy": cls(num_words=6),
            "medium": cls(num_words=12),
            "hard": cls(num_words=18, mixed_case=True),
        }[difficulty]

    def validate(self) -> None:
        if not 2 <= self.num_words <= 60:
            raise ValueError("num_words must be between 2 and 60")
        if self.order not in ("ascending", "descending", "random"):
            raise ValueError("order must be ascending, descending or random")


def sort_words(words: Sequence[str], order: str) -> list[str]:
    # Plain code-point order: dictionary order for lowercase words, uppercase-first for mixed case.
    return sorted(words, reverse=order == "descending")


def generate(rng: random.Random, cfg: Config) -> Item:
    words = rng.sample(WORDS, cfg.num_words)
    if cfg.mixed_case:
        words = [w.capitalize() if rng.random() < 0.4 else w for w in words]
    order: Order = cfg.order if cfg.order != "random" else rng.choice(("ascending", "descending"))
    rule = (
        "by Unicode code point, character by character (so every uppercase letter comes before every "
        "lowercase letter: 'Zebra' < 'apple')"
        if cfg.mixed_case
        else "alphabetically"
    )
    question = f"Sort these words in {order} order, {rule}:\n\n{', '.join(words)}" + instruction(
        "Write the sorted words separated by commas, e.g. <answer>first, second, third</answer>."
    )
    info: dict[str, Any] = {"words": words, "order": order, "mixed_case": cfg.mixed_case}
    return {"question": question, "answer": ", ".join(sort_words(words, order)), "info": info}


def score(answer_text: str, item: Mapping[str, Any]) -> float:
    info = item["info"]
    words: list[str] = list(info["words"])
    text = bounded(answer_text, 40 * len(words) + 200)
    if text is None:
        return 0.0
    got = [w.strip(" .'\"`") for w in _SPLIT.split(text) if w.strip(" .'\"`")]
    if sorted(got) != sorted(words):
        return 0.0
    # Items adapted from other sources may carry the expected order instead of an order rule.
    expected = info.get("expected") or sort_words(words, str(info["order"]))
    return 1.0 if got == list(expected) else 0.0


SPEC = TaskSpec(
    name="word_sorting",
    description="Sort words ascending or descending (alphabetically, or by code point for mixed case).",
    answer_format="the sorted words separated by commas",
    config_cls=Config,
    generate_fn=generate,
    score_fn=score,
)
