"""``vf-view RUN_DIR``: the hub's eval pages for a local run directory, on a loopback port.

The pages are the hub's (``hub_server.view_command``, which needs the ``hub`` extra: FastAPI, Jinja2,
nh3, …); this entry point checks that extra first, so a plain install gets one line saying how to add
it, then hands the process over to that module.
"""

from __future__ import annotations

import sys

from verifiers._extras import MissingExtraError
from verifiers.cli._common import EXIT_FAILED, hand_over

PROG = "vf-view"
VIEW_MODULE = "hub_server.view_command"


def main(args: list[str] | None = None) -> None:
    argv = sys.argv[1:] if args is None else args
    try:
        hand_over(VIEW_MODULE, argv, extra="hub", what=PROG)
    except MissingExtraError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
