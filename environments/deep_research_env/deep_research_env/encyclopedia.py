"""A seeded generator of a fictional encyclopedia (the bundled offline corpus) and of multi-hop questions
over it, each with its recorded hop chain.

The world: provinces, cities, universities, people, works and companies, with invented names so that no
answer can come from a model's memory. Pages mention other entities (a company names the city it is
based in, a person the university they attended, ...), and each question walks such links: the first
page is found by searching for an entity named in the question, every later page by searching for the
name the previous page gave, and the last page states the answer.

``build(seed)`` is pure: the same seed gives the same pages and questions. The package ships the output
of ``build(0)`` as ``data/corpus.jsonl`` and ``data/questions.jsonl`` (regenerate with
``python -m deep_research_env.encyclopedia``); a test checks the files match the generator.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

URL_PREFIX = "local://wiki/"

_ONSETS = ["b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr",
           "st", "th", "tr", "sk", "gl", "pr", "qu", "vel", "mar", "cor", "hal", "ost"]  # fmt: skip
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ei", "ou", "ia", "y"]
_CODAS = ["", "", "n", "r", "l", "s", "th", "nd", "rk", "m", "x", "sk", "v"]
_ENDINGS = ["a", "on", "ia", "en", "ar", "is", "orn", "el", "ith", "una", "ay", "os"]

FLOWERS = ["saffron crocus", "blue gentian", "white heather", "marsh iris", "scarlet poppy", "wild thyme",
           "golden broom", "moon lily", "sea aster", "frost orchid", "amber tulip", "dusk violet"]  # fmt: skip
DISHES = ["smoked eel stew", "barley flatbread", "river trout pie", "honeyed lentils", "pepper dumplings",
          "salted plum cake", "mushroom broth", "roast chestnut soup", "lamb and quince tagine",
          "buttered kelp noodles", "sour cherry porridge", "fennel sausage"]  # fmt: skip
ANIMALS = ["heron", "lynx", "otter", "kestrel", "badger", "ibex", "marten", "raven", "stag", "salamander",
           "falcon", "wolverine", "crane", "boar", "hare", "osprey", "viper", "bison", "owl", "fox"]  # fmt: skip
COLOURS = ["crimson", "teal", "ochre", "violet", "silver", "emerald", "indigo", "amber", "slate", "maroon",
           "saffron", "cobalt", "ivory", "copper", "jade", "rose", "sable", "azure", "olive", "pearl"]  # fmt: skip
PROFESSIONS = ["physicist", "botanist", "novelist", "engineer", "cartographer", "composer", "chemist",
               "architect", "astronomer", "poet", "geologist", "economist", "painter", "linguist"]  # fmt: skip
WORK_KINDS = [("lamp", "invented"), ("engine", "designed"), ("telescope", "built"), ("loom", "invented"),
              ("novel", "wrote"), ("symphony", "composed"), ("atlas", "compiled"), ("treatise", "wrote"),
              ("bridge", "designed"), ("vaccine", "developed")]  # fmt: skip
PRODUCTS = ["glass lenses", "river barges", "wool textiles", "clockwork toys", "paper and ink",
            "ceramic tiles", "copper wire", "canned fish", "bicycles", "printing presses",
            "weather instruments", "herbal medicines"]  # fmt: skip


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@dataclass
class Entity:
    kind: str
    name: str
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.name

    @property
    def url(self) -> str:
        return URL_PREFIX + slugify(self.name)


class _Names:
    """Unique invented words (no repeats across the whole world, so every name has one page)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int = 2) -> str:
        while True:
            parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS)]
            parts += [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables - 2)]
            parts.append(self.rng.choice(_ONSETS) + self.rng.choice(_ENDINGS))
            w = "".join(parts).capitalize()
            if w.lower() not in self.used and 5 <= len(w) <= 11:
                self.used.add(w.lower())
                return w


@dataclass
class World:
    provinces: list[Entity]
    cities: list[Entity]
    universities: list[Entity]
    people: list[Entity]
    works: list[Entity]
    companies: list[Entity]

    def all(self) -> list[Entity]:
        return [*self.provinces, *self.cities, *self.universities, *self.people, *self.works, *self.companies]


def _distinct_years(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    return rng.sample(range(lo, hi), n)


def make_world(seed: int = 0) -> World:
    rng = random.Random(seed)
    names = _Names(rng)
    n_prov, n_city, n_uni, n_people, n_works, n_comp = 12, 45, 20, 45, 30, 20

    provinces = []
    for i, year in enumerate(_distinct_years(rng, n_prov, 1100, 1500)):
        provinces.append(
            Entity("province", f"{names.word()} Province", {
                "flower": FLOWERS[i], "dish": DISHES[i], "seats": rng.randint(21, 99), "year": year,
            })
        )  # fmt: skip
    rivers = [names.word() for _ in range(18)]
    cities = []
    for i, year in enumerate(_distinct_years(rng, n_city, 1200, 1800)):
        prov = provinces[i % n_prov] if i < n_prov else rng.choice(provinces)
        cities.append(
            Entity("city", names.word(rng.choice([2, 3])), {
                "province": prov, "year": year, "river": rivers[i % len(rivers)],
                "population": rng.randint(12, 900) * 1000 + rng.randint(1, 999),
                "landmark": f"{names.word()} {rng.choice(['Tower', 'Gate', 'Bridge', 'Abbey', 'Market'])}",
            })
        )  # fmt: skip
    for prov in provinces:  # the capital is one of the province's own cities
        own = [c for c in cities if c.facts["province"] is prov]
        prov.facts["capital"] = own[0]
    universities = []
    uni_years = _distinct_years(rng, n_uni, 1300, 1900)
    for i in range(n_uni):
        universities.append(
            Entity("university", f"{names.word()} {rng.choice(['University', 'Institute', 'College'])}", {
                "city": cities[(i * 2) % n_city], "year": uni_years[i], "mascot": ANIMALS[i],
                "colour": COLOURS[i], "students": rng.randint(2, 40) * 500,
            })
        )  # fmt: skip
    people = []
    birth_years = _distinct_years(rng, n_people, 1650, 1950)
    for i in range(n_people):
        people.append(
            Entity("person", f"{names.word()} {names.word()}", {
                "born_city": cities[(i * 3 + 1) % n_city], "born": birth_years[i],
                "university": universities[i % n_uni], "profession": PROFESSIONS[i % len(PROFESSIONS)],
            })
        )  # fmt: skip
    for i, p in enumerate(people):  # a mentor: an older link that is a decoy for most questions
        p.facts["mentor"] = people[(i + 7) % n_people]
    works = []
    work_years = _distinct_years(rng, n_works, 1700, 1990)
    for i in range(n_works):
        kind, verb = WORK_KINDS[i % len(WORK_KINDS)]
        works.append(
            Entity("work", f"{names.word()} {kind.capitalize()}", {
                "creator": people[i], "verb": verb, "kind": kind, "year": work_years[i],
            })
        )  # fmt: skip
        people[i].facts["work"] = works[-1]
    companies = []
    comp_years = _distinct_years(rng, n_comp, 1780, 1995)
    for i in range(n_comp):
        companies.append(
            Entity("company", f"{names.word()} {rng.choice(['Works', 'Company', 'Industries', 'Guild'])}", {
                "founder": people[(i + 10) % n_people], "city": cities[(i * 5 + 2) % n_city],
                "year": comp_years[i], "product": PRODUCTS[i % len(PRODUCTS)],
                "employees": rng.randint(3, 300) * 10,
            })
        )  # fmt: skip
    return World(provinces, cities, universities, people, works, companies)


# --- page text -----------------------------------------------------------------------------------------
def _page_text(e: Entity, world: World) -> str:
    f = e.facts
    lines = [f"# {e.name}", ""]
    if e.kind == "province":
        cities = [c.name for c in world.cities if c.facts["province"] is e]
        lines += [
            f"{e.name} is a province of the Aurelian Federation, a fictional country of the northern coast.",
            f"The capital of {e.name} is {f['capital'].name}.",
            f"The province was chartered in {f['year']} and its assembly has {f['seats']} seats.",
            f"The official flower of {e.name} is the {f['flower']}.",
            f"Its best-known traditional dish is {f['dish']}.",
            "",
            "## Cities",
            f"Cities of the province include {', '.join(cities)}.",
        ]
    elif e.kind == "city":
        prov: Entity = f["province"]
        lines += [
            f"{e.name} is a city in {prov.name} of the Aurelian Federation.",
            f"It was founded in {f['year']} on the banks of the {f['river']} River.",
            f"The city has a population of {f['population']:,} people.",
            f"Its most visited landmark is the {f['landmark']}.",
            "",
            "## Economy",
            f"Trade along the {f['river']} River shaped the markets of {e.name} for centuries.",
        ]
        unis = [u.name for u in world.universities if u.facts["city"] is e]
        if unis:
            lines.append(f"{e.name} is home to {', '.join(unis)}.")
        firms = [c.name for c in world.companies if c.facts["city"] is e]
        if firms:
            lines.append(f"Companies based in {e.name} include {', '.join(firms)}.")
    elif e.kind == "university":
        city: Entity = f["city"]
        lines += [
            f"{e.name} is a public university located in the city of {city.name}.",
            f"It was founded in {f['year']} and today enrols about {f['students']:,} students.",
            f"The university's mascot is the {f['mascot']}, and its colour is {f['colour']}.",
            "",
            "## Notable people",
        ]
        alumni = [p.name for p in world.people if p.facts["university"] is e]
        lines.append(f"Alumni of {e.name} include {', '.join(alumni) or 'no one of note'}.")
    elif e.kind == "person":
        born: Entity = f["born_city"]
        uni: Entity = f["university"]
        mentor: Entity = f["mentor"]
        lines += [
            f"{e.name} (born {f['born']}) is {_article(f['profession'])} {f['profession']} of the Aurelian Federation.",
            f"{e.name} was born in the city of {born.name}.",
            f"{e.name.split()[0]} studied at {uni.name}.",
            f"As a young {f['profession']}, {e.name.split()[0]} trained under {mentor.name}.",
        ]
        work = f.get("work")
        if work is not None:
            lines += [
                "",
                "## Works",
                f"{e.name} {work.facts['verb']} the {work.name} in {work.facts['year']}.",
            ]
        founded = [c.name for c in world.companies if c.facts["founder"] is e]
        if founded:
            lines += ["", "## Business", f"{e.name} founded {', '.join(founded)}."]
    elif e.kind == "work":
        creator: Entity = f["creator"]
        lines += [
            f"The {e.name} is a {f['kind']} from the Aurelian Federation.",
            f"It was {f['verb']} by {creator.name} in {f['year']}.",
            f"The {e.name} is often cited as the best-known {f['kind']} of its decade.",
        ]
    elif e.kind == "company":
        founder: Entity = f["founder"]
        city = f["city"]
        lines += [
            f"{e.name} is a manufacturer of {f['product']}.",
            f"The company was founded in {f['year']} by {founder.name}.",
            f"{e.name} is headquartered in {city.name} and employs about {f['employees']:,} people.",
        ]
    return "\n".join(lines) + "\n"


# --- questions -----------------------------------------------------------------------------------------
def _hop(e: Entity, query: str, finds: str) -> dict[str, str]:
    """One step: search ``query``, open ``e``'s page, read ``finds`` there (the next name or the answer)."""
    return {"url": e.url, "title": e.name, "query": query, "finds": finds}


def _questions(world: World, rng: random.Random, per_template: int = 7) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(question: str, answer: Any, hops: list[dict[str, str]], template: str) -> None:
        out.append({"question": question, "answer": str(answer), "hops": hops, "template": template})

    for c in rng.sample(world.companies, per_template):
        city = c.facts["city"]
        add(f"Which river flows through the city where {c.name} is headquartered?", city.facts["river"],
            [_hop(c, c.name, city.name), _hop(city, city.name, city.facts["river"])], "company_city_river")  # fmt: skip
    for p in rng.sample(world.people, per_template):
        u = p.facts["university"]
        add(f"In what year was the university where {p.name} studied founded?", u.facts["year"],
            [_hop(p, p.name, u.name), _hop(u, u.name, str(u.facts["year"]))], "person_university_year")  # fmt: skip
    for city in rng.sample(world.cities, per_template):
        prov = city.facts["province"]
        cap = prov.facts["capital"]
        if cap is city:
            continue
        add(f"What is the capital of the province in which the city of {city.name} lies?", cap.name,
            [_hop(city, city.name, prov.name), _hop(prov, prov.name, cap.name)], "city_province_capital")  # fmt: skip
    for w in rng.sample(world.works, per_template):
        p = w.facts["creator"]
        born = p.facts["born_city"]
        add(f"In which city was the creator of the {w.name} born?", born.name,
            [_hop(w, w.name, p.name), _hop(p, p.name, born.name)], "work_creator_birthplace")  # fmt: skip
    for p in rng.sample(world.people, per_template):
        city = p.facts["born_city"]
        prov = city.facts["province"]
        add(f"What is the official flower of the province that contains the birthplace of {p.name}?",
            prov.facts["flower"],
            [_hop(p, p.name, city.name), _hop(city, city.name, prov.name), _hop(prov, prov.name, prov.facts["flower"])],
            "person_birthplace_province_flower")  # fmt: skip
    for c in rng.sample(world.companies, per_template):
        p = c.facts["founder"]
        city = p.facts["born_city"]
        add(f"In what year was the birthplace of the founder of {c.name} founded?", city.facts["year"],
            [_hop(c, c.name, p.name), _hop(p, p.name, city.name), _hop(city, city.name, str(city.facts["year"]))],
            "company_founder_birthplace_year")  # fmt: skip
    for w in rng.sample(world.works, per_template):
        p = w.facts["creator"]
        u = p.facts["university"]
        add(f"What animal is the mascot of the university attended by the creator of the {w.name}?",
            u.facts["mascot"],
            [_hop(w, w.name, p.name), _hop(p, p.name, u.name), _hop(u, u.name, u.facts["mascot"])],
            "work_creator_university_mascot")  # fmt: skip
    for c in rng.sample(world.companies, per_template):
        city = c.facts["city"]
        prov = city.facts["province"]
        add(f"How many seats does the assembly of the province where {c.name} is headquartered have?",
            prov.facts["seats"],
            [_hop(c, c.name, city.name), _hop(city, city.name, prov.name), _hop(prov, prov.name, str(prov.facts["seats"]))],
            "company_city_province_seats")  # fmt: skip
    return out


def build(seed: int = 0) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """``(pages, questions)``: pages as ``{"url", "title", "text"}``, questions with their ``hops``."""
    world = make_world(seed)
    pages = [{"url": e.url, "title": e.title, "text": _page_text(e, world)} for e in world.all()]
    questions = _questions(world, random.Random(seed + 1))
    return pages, questions


def write(directory: Path, seed: int = 0) -> None:
    """Write ``corpus.jsonl`` and ``questions.jsonl`` (the bundled files) into ``directory``."""
    pages, questions = build(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for name, records in (("corpus.jsonl", pages), ("questions.jsonl", questions)):
        with (directory / name).open("w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write(Path(__file__).resolve().parent / "data")
