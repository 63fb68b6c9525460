"""The R2E-Gym scaffold: ``file_editor``, ``search``, ``execute_bash`` and ``finish`` as function tools.

Names, parameters and output formats follow R2E-Gym's ``agenthub/tools`` (the editor's ``cat -n`` views
with line numbers, the condensed view of long Python files, the 4-line edit snippets, the search summary
that asks to narrow past 100 files, ``Exit code: …`` bash observations, ``Steps Remaining: N`` after every
turn). Like R2E-Gym, the editor and search look at Python files only in directories and refuse to
``view`` other files (``execute_bash`` can ``cat`` them). One deliberate change: a ``str_replace`` whose
``old_str`` is not unique lists the line of every occurrence.

``file_editor`` and ``search`` start no process: they are served by the sandbox's agent
(``read_file``/``write_file``/``list_dir``/``search``) and formatted here.
"""

from __future__ import annotations

import ast
import posixpath
from typing import Any, Literal

import verifiers as vf
from swe_env.scaffolds.base import REPO, SANDBOX, SweEnv, bump
from swe_env.scaffolds.output import clip, elide_lines
from swe_env.scaffolds.shell import run_command
from swe_env.task import SweTask
from verifiers.sandbox import Sandbox

#: Lines of context around an edit in the snippet shown after it.
SNIPPET_LINES = 4
#: Python files longer than this are shown condensed when viewed whole.
CONCISE_ABOVE_LINES = 110
#: A directory search lists files up to this many; more asks the model to narrow it.
MAX_SEARCH_FILES = 100
BLOCKED_COMMANDS = ("cd", "ipython", "jupyter", "pip", "nohup")
NO_TOOL_CALL = (
    "\nYou did not call a function in your response. EVERY response must call one of the functions.\n\n"
    "IMPORTANT: do not ask for human help.\n"
)
HISTORY = "swe_edit_history"
EDITS = ("create", "str_replace", "insert", "undo_edit")

SYSTEM_PROMPT = (
    "You are a programming agent working in a bash environment on a code repository. You are given an "
    "issue and must change the repository so that the issue is resolved."
)
INSTANCE_PROMPT = """Here is an issue filed against the repository at {root}:
<github_issue>
{problem}
</github_issue>

Please make the changes to the repository needed to resolve the <github_issue>.
The tests for this issue are already taken care of: do not modify or add any test files. Make minimal
changes to non-test files under {root}.

A good way to proceed:
1. Explore the repository to learn its structure.
2. Write a short script that reproduces the problem and run it to see the error.
3. Edit the source code to fix the problem.
4. Run your script again to confirm the fix, and think about edge cases.
5. Call `finish` with command `submit` when you are confident in the fix.

Every response must contain a function call. In file_editor, `old_str` and `new_str` never include the line
numbers that `view` shows."""


class EditorError(Exception):
    """A usage or file error of the editor: shown to the model as ``ERROR: …``."""


def numbered(content: str, descriptor: str, first_line: int = 1) -> str:
    """R2E-Gym's snippet rendering: ``cat -n`` style, tabs expanded."""
    lines = clip(content).expandtabs().split("\n")
    body = "\n".join(f"{i + first_line:6}\t{line}" for i, line in enumerate(lines))
    return f"Here's the result of running `cat -n` on {descriptor}:\n{body}\n"


def condensed_lines(text: str, path: str) -> list[tuple[int, str]]:
    """``(0-based line, text)`` of a Python file with function bodies of 4+ lines and long class
    docstrings replaced by an ``... eliding lines a-b ...`` line (original numbering kept)."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise EditorError(f"Syntax error for file {path}: {exc}") from None
    ranges: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            start = node.body[0].lineno - 1
            end = (node.body[-1].end_lineno or node.body[-1].lineno) - 1
            if end - start >= 3:
                ranges.append((start, end))
        if isinstance(node, ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                d0, d1 = first.lineno - 1, (first.end_lineno or first.lineno) - 1
                if d1 - d0 >= 4:
                    ranges.append((d0 + 1, d1 - 1))
    hidden = {i for a, b in ranges for i in range(a, b + 1)}
    kept = [(i, line) for i, line in enumerate(text.splitlines()) if i not in hidden]
    notes = [(a, f"... eliding lines {a + 1}-{b + 1} ...") for a, b in ranges]
    return sorted(notes + kept, key=lambda x: x[0])


def occurrence_lines(content: str, needle: str) -> list[int]:
    """1-based line of the start of every (non-overlapping) occurrence of ``needle``."""
    out, start = [], 0
    while (i := content.find(needle, start)) != -1:
        out.append(content.count("\n", 0, i) + 1)
        start = i + len(needle)
    return out


class R2EEnv(SweEnv):
    """SWE tasks with R2E-Gym's function-calling tools; see the module docstring."""

    scaffold = "r2e"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("system_prompt", SYSTEM_PROMPT)
        super().__init__(**kwargs)
        for tool in (self.file_editor, self.search, self.execute_bash, self.finish):
            self.add_tool(tool, hidden_args=["state"])

    def instance_prompt(self, task: SweTask, root: str) -> str:
        return INSTANCE_PROMPT.format(root=root, problem=task.problem_statement.strip())

    async def setup_state(self, state: vf.State) -> None:
        await super().setup_state(state)
        state[HISTORY] = {}
        prompt = state["prompt"]
        prompt[-1]["content"] = f"{prompt[-1]['content']}\nSteps Remaining: {self.steps_remaining(state)}"

    # --- the loop ----------------------------------------------------------------------------------
    def no_tool_calls(self, state: vf.State) -> bool:
        """Not a stop condition here: as in R2E-Gym, a reply without a call is answered and the loop goes
        on (until ``max_turns``)."""
        return False

    async def env_response(self, messages: vf.Messages | str, state: vf.State) -> vf.Messages:
        assert not isinstance(messages, str)
        calls = messages[-1].get("tool_calls") or []
        out: vf.Messages
        if not calls:
            bump(state, "format_errors")
            out = [{"role": "user", "content": NO_TOOL_CALL}]
        else:
            # One at a time, in order: edits of the same file must not interleave.
            out = [await self.call_tool(c, i, messages, state) for i, c in enumerate(calls)]
        if not state.get("stop_condition"):
            left = self.steps_remaining(state)
            note = (
                f"Steps Remaining: {left}"
                if left > 0
                else "You have reached the maximum number of steps. Please submit your answer NOW."
            )
            out[-1]["content"] = f"{out[-1]['content']}\n{note}"
        return out

    # --- paths -------------------------------------------------------------------------------------
    def _rel(self, state: vf.State, path: str) -> tuple[str, str]:
        """``(workspace-relative path, absolute path shown to the model)`` of a model-given path
        (absolute, or relative to the repository)."""
        sandbox: Sandbox = state[SANDBOX]
        ws = sandbox.workdir.rstrip("/")
        p = path.strip()
        if not p:
            raise EditorError("The path is empty.")
        absolute = posixpath.normpath(p if p.startswith("/") else f"{ws}/{REPO}/{p}")
        if absolute == ws or not absolute.startswith(ws + "/"):
            raise EditorError(f"The path '{p}' is outside the repository's workspace {ws}.")
        return absolute[len(ws) + 1 :], absolute

    # --- tools -------------------------------------------------------------------------------------
    async def file_editor(
        self,
        command: Literal["view", "create", "str_replace", "insert", "undo_edit"],
        path: str,
        state: vf.State,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
        concise: bool = False,
    ) -> str:
        """Custom editing tool for viewing, creating and editing files.

        * State is persistent across command calls and discussions with the user.

        * If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a directory, `view` lists non-hidden files and directories up to 2 levels deep.

        * The `create` command cannot be used if the specified `path` already exists as a file.

        * If a `command` generates a long output, it will be truncated and marked with `<response clipped>`.

        * The `undo_edit` command will revert the last edit made to the file at `path`.

        Notes for using the `str_replace` command:

        * The `old_str` parameter should match EXACTLY one or more consecutive lines from the original file. Be mindful of whitespaces!

        * If the `old_str` parameter is not unique in the file, the replacement will not be performed (the error lists the line of every occurrence). Make sure to include enough context in `old_str` to make it unique.

        * The `new_str` parameter should contain the edited lines that should replace the `old_str`.

        Args:
            command: The command to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`.
            path: Absolute path to file or directory, e.g. `/workspace/repo/file.py` or `/workspace/repo`.
            file_text: Required for the `create` command, contains the content of the file to be created.
            old_str: Required for the `str_replace` command, specifies the string in `path` to replace.
            new_str: Optional for the `str_replace` command to specify the replacement string. Required for the `insert` command to specify the string to insert.
            insert_line: Required for the `insert` command. The `new_str` will be inserted AFTER the line specified.
            view_range: Optional for the `view` command when `path` points to a file. Specifies the line range to view. E.g., [11, 12] shows lines 11 and 12. Indexing starts at 1. Use [start_line, -1] to show all lines from `start_line` to the end.
            concise: Optional for the `view` command. If true, displays a condensed view of a Python file (long function bodies elided).
        """
        try:
            text = await self._edit(
                state, command, path, file_text, old_str, new_str, insert_line, view_range, concise
            )
        except EditorError as exc:
            if command in EDITS:
                bump(state, "edit_failures")
            text = f"ERROR: {exc}"
        return clip(f"Execution output of [file_editor]:\n{text}")

    async def _edit(
        self,
        state: vf.State,
        command: str,
        path: str,
        file_text: str | None,
        old_str: str | None,
        new_str: str | None,
        insert_line: int | None,
        view_range: list[int] | None,
        concise: bool,
    ) -> str:
        sandbox: Sandbox = state[SANDBOX]
        rel, shown = self._rel(state, path)
        content: str | None = None
        is_dir = False
        try:
            content = (await sandbox.read_file(rel)).decode("utf-8", errors="replace")
        except IsADirectoryError:
            is_dir = True
        except (FileNotFoundError, NotADirectoryError):
            pass
        except PermissionError as exc:
            raise EditorError(f"Cannot access {shown}: {exc}") from None
        exists = is_dir or content is not None
        if command == "create":
            if exists:
                raise EditorError(f"File already exists at: {shown}. Cannot overwrite with 'create'.")
        elif not exists:
            raise EditorError(f"The path '{shown}' does not exist.")
        if is_dir and command != "view":
            raise EditorError(f"The path '{shown}' is a directory. Only 'view' can be used on directories.")
        history: dict[str, list[str]] = state[HISTORY]

        if command == "view":
            if is_dir:
                return await self._view_dir(sandbox, rel, shown)
            assert content is not None
            return self._view_file(content, shown, view_range, concise)
        if command == "create":
            if file_text is None:
                raise EditorError("Cannot create file without 'file_text' parameter.")
            await self._write(sandbox, rel, file_text)
            history.setdefault(rel, []).append("")
            return (
                f"File created at {shown}. {numbered(file_text, shown)}"
                "Review the file and make sure that it is as expected. Edit the file if necessary."
            )
        assert content is not None
        if command == "str_replace":
            if old_str is None:
                raise EditorError("Missing required parameter 'old_str' for 'str_replace'.")
            if not old_str:
                raise EditorError("Parameter 'old_str' of 'str_replace' is empty.")
            lines = occurrence_lines(content, old_str)
            if not lines:
                raise EditorError(f"No occurrences of '{old_str}' found in {shown} for replacement.")
            if len(lines) > 1:
                raise EditorError(
                    f"Multiple occurrences of '{old_str}' found in {shown} at lines "
                    f"{', '.join(map(str, lines))}. Please ensure it is unique before using str_replace."
                )
            replacement = new_str or ""
            updated = content.replace(old_str, replacement)
            await self._write(sandbox, rel, updated)
            history.setdefault(rel, []).append(content)
            at = lines[0] - 1
            first = max(0, at - SNIPPET_LINES)
            last = at + SNIPPET_LINES + replacement.count("\n")
            snippet = "\n".join(updated.split("\n")[first : last + 1])
            return (
                f"The file {shown} has been edited. {numbered(snippet, f'a snippet of {shown}', first + 1)}"
                "Review the changes and make sure they are as expected. Edit the file again if necessary."
            )
        if command == "insert":
            if new_str is None:
                raise EditorError("Missing required parameter 'new_str' for 'insert'.")
            if insert_line is None:
                raise EditorError("Missing required parameter 'insert_line' for 'insert'.")
            old_lines = content.split("\n")
            if not 0 <= insert_line <= len(old_lines):
                raise EditorError(f"Invalid insert_line {insert_line}. Must be in [0, {len(old_lines)}].")
            new_lines = new_str.split("\n")
            updated = "\n".join(old_lines[:insert_line] + new_lines + old_lines[insert_line:])
            await self._write(sandbox, rel, updated)
            history.setdefault(rel, []).append(content)
            snippet = "\n".join(
                old_lines[max(0, insert_line - SNIPPET_LINES) : insert_line]
                + new_lines
                + old_lines[insert_line : insert_line + SNIPPET_LINES]
            )
            first = max(1, insert_line - SNIPPET_LINES + 1)
            return (
                f"The file {shown} has been edited. {numbered(snippet, 'a snippet of the edited file', first)}"
                "Review the changes and make sure they are as expected (correct indentation, no duplicate "
                "lines, etc). Edit the file again if necessary."
            )
        if command == "undo_edit":
            previous = history.get(rel) or []
            if not previous:
                raise EditorError(f"No previous edits found for {shown} to undo.")
            old_text = previous.pop()
            await self._write(sandbox, rel, old_text)
            return f"Last edit to {shown} undone successfully. {numbered(old_text, shown)}"
        raise EditorError(
            f"Unrecognized command '{command}'. Allowed commands: view, create, str_replace, insert, undo_edit."
        )

    @staticmethod
    async def _write(sandbox: Sandbox, rel: str, text: str) -> None:
        try:
            await sandbox.write_file(rel, text)
        except (OSError, ValueError) as exc:
            raise EditorError(f"Failed to write file /{rel}: {exc}") from None

    @staticmethod
    async def _view_dir(sandbox: Sandbox, rel: str, shown: str) -> str:
        entries = await sandbox.list_dir(rel, max_depth=2)
        base = sandbox.workdir.rstrip("/")
        listed = [shown] + [f"{base}/{e.path}" for e in entries if e.kind == "dir" or e.path.endswith(".py")]
        return (
            f"Here's the files and directories up to 2 levels deep in {shown}, excluding hidden:\n"
            + "".join(f"{p}\n" for p in listed)
        )

    @staticmethod
    def _view_file(content: str, shown: str, view_range: list[int] | None, concise: bool) -> str:
        if not shown.endswith(".py"):
            name = posixpath.basename(shown)
            raise EditorError(
                f"Viewing non-Python files is disallowed for saving context. File '{name}' is not a .py "
                "file. Use execute_bash (e.g. `cat`) to read it."
            )
        if not view_range and not concise and len(content.splitlines()) > CONCISE_ABOVE_LINES:
            concise = True
        lines = condensed_lines(content, shown) if concise else list(enumerate(content.splitlines()))
        if view_range:
            if len(view_range) != 2:
                raise EditorError(f"Invalid view_range {view_range}: give [start_line, end_line].")
            start, end = view_range
            total = len(lines)
            if not 1 <= start <= total:
                raise EditorError(f"Invalid view_range {view_range}: start line must be in [1, {total}]")
            if end != -1 and (end < start or end > total):
                raise EditorError(
                    f"Invalid view_range {view_range}: end must be >= start and <= {total}, or -1 to view "
                    "until end."
                )
            lines = [(i, t) for i, t in lines if i + 1 >= start and (end == -1 or i + 1 <= end)]
        head = (
            f"Here is a condensed view for file: {shown}; [Note: Useful for understanding file structure "
            "in a concise manner. Please use specific view_range without concise cmd if you want to explore "
            "further into the relevant parts.]\n"
            if concise
            else f"Here's the result of running `cat -n` on the file: {shown}:\n"
        )
        return head + "\n".join(f"{i + 1:6d} {t}" for i, t in lines)

    async def search(self, search_term: str, state: vf.State, path: str = ".") -> str:
        """Search for a term in either a directory or a single file.

        * If `path` points to a directory (default is `.`, the repository), all non-hidden Python files under it are searched recursively, and the number of matches per file is listed.

        * If `path` points to a file, the lines containing the search term are shown with their line numbers.

        * If more than 100 files match (directory search), the tool stops listing and asks you to narrow your search.

        * If nothing matches, the tool says so.

        Args:
            search_term: The term to search for in files.
            path: The file or directory to search in. Defaults to `.` if not specified.
        """
        sandbox: Sandbox = state[SANDBOX]
        try:
            rel, shown = self._rel(state, path)
        except EditorError as exc:
            return f"Execution output of [search]:\nERROR: {exc}"
        if not search_term:
            return "Execution output of [search]:\nERROR: the search term is empty."
        try:
            found = await sandbox.search(
                search_term, rel, suffixes=(".py",), max_files=MAX_SEARCH_FILES, max_lines=1000
            )
        except (FileNotFoundError, NotADirectoryError):
            return f"Execution output of [search]:\nDirectory '{shown}' not found or not a directory."
        except PermissionError as exc:
            return f"Execution output of [search]:\nERROR: cannot search {shown}: {exc}"
        if not found.files_matched:
            text = f'No matches found for "{search_term}" in {shown}'
        elif len(found.files) == 1 and found.files[0].path == rel:  # a file
            lines = "\n".join(f"{n}:{t}" for n, t in found.files[0].lines)
            text = f'Matches for "{search_term}" in {shown}:\n{lines}'
        elif found.files_matched > MAX_SEARCH_FILES:
            text = (
                f'More than {found.files_matched} files matched for "{search_term}" in {shown}. '
                "Please narrow your search."
            )
        else:
            repo = f"{REPO}/"
            listing = "\n".join(
                f"./{f.path[len(repo) :] if f.path.startswith(repo) else '../' + f.path} ({f.count} matches)"
                for f in found.files
            )
            total = sum(f.count for f in found.files)
            text = (
                f'Found {total} matches for "{search_term}" in {shown}:\n{listing}\n'
                f'End of matches for "{search_term}" in {shown}'
            )
        return clip(f"Execution output of [search]:\n{text}")

    async def execute_bash(self, cmd: str, state: vf.State) -> str:
        """Execute a bash command in the terminal, from the repository's root (each command in a fresh shell).

        Args:
            cmd: The command (and optional arguments) to execute. For example: 'python my_script.py'
        """
        bump(state, "commands")
        words = cmd.strip().split()
        if not words:
            return "Exit code: Error: Exit code 1\nExecution output of [execute_bash]:\nEmpty command."
        if words[0] in BLOCKED_COMMANDS:
            body = f"Bash command '{words[0]}' is not allowed. Please use a different command or tool.\n"
            return f"Exit code: Error: Exit code 1\nExecution output of [execute_bash]:\n{body}"
        result = await run_command(state[SANDBOX], cmd, cwd=REPO, timeout=self.command_timeout)
        if result.timed_out:
            self.count_timeout(state)
            return (
                "Exit code: -1\nExecution output of [execute_bash]:\n"
                f"The command took too long to execute (>{self.command_timeout:g}s)"
            )
        body = f"[STDOUT]\n\n{result.stdout.strip()} \n\n[STDERR]\n\n{result.stderr.strip()}\n"
        if result.truncated:
            body += "[output truncated by the sandbox]\n"
        code: str | int = 0
        if result.exit_code != 0:
            body = f"Error executing command:\n\n{body}"
            code = f"Error: Exit code {result.exit_code}"
        return clip(f"Exit code: {code}\nExecution output of [execute_bash]:\n{elide_lines(body)}")

    async def finish(self, command: Literal["submit"], state: vf.State, result: str = "") -> str:
        """A simple finish tool with a 'submit' command: call it when the repository is fixed, to end the task.

        Args:
            command: The command to run. Currently only `submit` is supported.
            result: Optional. The result text to submit. Defaults to an empty string if not provided.
        """
        state["submission"] = result
        state.stop("submitted")
        return "<<< Finished >>>"
