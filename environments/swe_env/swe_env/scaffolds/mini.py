"""The mini-swe-agent scaffold (v1): bash only, one fenced ```bash block per reply.

The formats follow mini-swe-agent's ``agents/default.py`` and its SWE-bench config: the action is the one
match of ``` ```bash\\s*\\n(.*?)\\n``` ``` in the reply (zero or several: the format-error message, which
says how many were found); each command runs in a fresh shell in the repository with stderr merged into
stdout; the observation is ``<returncode>N</returncode>`` then ``<output>…</output>``, or, for outputs of
10,000 characters or more, a warning with the first and last 5,000 characters and the elided count; a
timeout gets its own message. The rollout ends when a command that succeeded printed
``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` as its first line; the rest of the output is the submission.
"""

from __future__ import annotations

import re
from typing import Any

import verifiers as vf
from swe_env.scaffolds.base import REPO, SANDBOX, SweEnv, bump
from swe_env.scaffolds.output import ELIDE_CHARS, elide_middle
from swe_env.scaffolds.shell import run_command
from swe_env.task import SweTask

ACTION_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
SUBMIT_SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
#: What mini-swe-agent sets for every command (no pagers, no progress bars).
COMMAND_ENV = {
    "PAGER": "cat",
    "MANPAGER": "cat",
    "LESS": "-R",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
}

SYSTEM_PROMPT = """You are a helpful assistant that can interact with a computer shell many times to solve programming tasks.
Your response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).

Include a THOUGHT section before your command, explaining your reasoning.

<format_example>
THOUGHT: your reasoning and analysis here

```bash
your_command_here
```
</format_example>

Responses that do not follow these rules are rejected."""

INSTANCE_PROMPT = """<pr_description>
Consider the following PR description:
{problem}
</pr_description>

<instructions>
You are a software engineer working on the repository in your current directory ({root}). Change its
non-test files so that the PR description is satisfied, in a way that is general and fits the codebase.
Do not modify tests or configuration files (pyproject.toml, setup.cfg, ...).

Every response has a THOUGHT section and exactly ONE bash code block with ONE command (or commands joined
with && or ||). Each command runs in a new subshell from {root}: `cd` and environment variables do not
persist between commands (prefix a command with `cd dir && ...` when needed). Avoid interactive programs.

A good way to proceed: read the relevant code, write a script that reproduces the problem, fix the source,
run the script again, and test edge cases.

Useful commands: `nl -ba file.py | sed -n '10,20p'` to view lines, `sed -i 's/old/new/' file.py` to edit,
`cat <<'EOF' > file.py ... EOF` to write a file.

## Submission
When you are done (and cannot make further progress), issue exactly this command:

```bash
echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached
```

You cannot continue working on the task after submitting.
</instructions>"""

FORMAT_ERROR = """Please always provide EXACTLY ONE action in triple backticks, found {n} actions.

Please format your action in triple backticks as shown in <response_example>.

<response_example>
Here are some thoughts about why you want to perform the action.

```bash
<action>
```
</response_example>

If you have completed your assignment, please consult the first message about how to
submit your solution (you will not be able to continue working on this task after that)."""

LONG_OUTPUT_WARNING = """<warning>
The output of your last command was too long.
Please try a different command that produces less output.
If you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.
If you're using grep or find and it produced too much output, you can use a more selective search pattern.
If you really need to see something from the full command's output, you can redirect output to a file and then search in that file.
</warning>"""


def parse_actions(text: str) -> list[str]:
    """Every ```bash block of a reply (the action must be the only one)."""
    return [a.strip() for a in ACTION_RE.findall(text)]


def format_error(n_actions: int) -> str:
    return FORMAT_ERROR.format(n=n_actions)


def observation(returncode: int | None, output: str) -> str:
    """mini-swe-agent's action observation, with head/tail elision of long outputs."""
    elided = elide_middle(output, ELIDE_CHARS)
    if elided is None:
        return f"<returncode>{returncode}</returncode>\n<output>\n{output}</output>"
    head, tail, n = elided
    return (
        f"<returncode>{returncode}</returncode>\n{LONG_OUTPUT_WARNING}\n"
        f"<output_head>\n{head}\n</output_head>\n"
        f"<elided_chars>\n{n} characters elided\n</elided_chars>\n"
        f"<output_tail>\n{tail}\n</output_tail>"
    )


def timeout_message(action: str, output: str) -> str:
    elided = elide_middle(output, ELIDE_CHARS)
    if elided is None:
        shown = f"<output>\n{output}\n</output>"
    else:
        head, tail, n = elided
        shown = (
            "<warning>Output was too long and has been truncated.</warning>\n"
            f"<output_head>\n{head}\n</output_head>\n"
            f"<elided_chars>{n} characters elided</elided_chars>\n"
            f"<output_tail>\n{tail}\n</output_tail>"
        )
    return (
        f"The last command <command>{action}</command> timed out and has been killed.\n"
        f"The output of the command was:\n{shown}\n"
        "Please try another command and make sure to avoid those requiring interactive input."
    )


def submission_of(returncode: int | None, output: str) -> str | None:
    """The submitted text when the command's first output line is the sentinel and it succeeded."""
    lines = output.lstrip().splitlines(keepends=True)
    if lines and lines[0].strip() in SUBMIT_SENTINELS and returncode == 0:
        return "".join(lines[1:])
    return None


class MiniEnv(SweEnv):
    """SWE tasks with mini-swe-agent's bash-only loop; see the module docstring."""

    scaffold = "mini"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("system_prompt", SYSTEM_PROMPT)
        super().__init__(**kwargs)

    def instance_prompt(self, task: SweTask, root: str) -> str:
        return INSTANCE_PROMPT.format(root=root, problem=task.problem_statement.strip())

    def no_tool_calls(self, state: vf.State) -> bool:
        """Not a stop condition: the model talks in text; the loop ends on submission or a limit."""
        return False

    async def env_response(self, messages: vf.Messages | str, state: vf.State) -> vf.Messages:
        assert not isinstance(messages, str)
        content = messages[-1].get("content")
        actions = parse_actions(content if isinstance(content, str) else "")
        if len(actions) != 1:
            bump(state, "format_errors")
            return [{"role": "user", "content": format_error(len(actions))}]
        action = actions[0]
        bump(state, "commands")
        result = await run_command(
            state[SANDBOX],
            action,
            cwd=REPO,
            timeout=self.command_timeout,
            env=COMMAND_ENV,
            stderr_to_stdout=True,
        )
        output = result.stdout + result.stderr  # stderr is empty: merged into stdout
        if result.timed_out:
            self.count_timeout(state)
            return [{"role": "user", "content": timeout_message(action, output)}]
        submitted = submission_of(result.exit_code, output)
        if submitted is not None:
            state["submission"] = submitted
            state.stop("submitted")
            return [{"role": "user", "content": submitted}]
        return [{"role": "user", "content": observation(result.exit_code, output)}]
