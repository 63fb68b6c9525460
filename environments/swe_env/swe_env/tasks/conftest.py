"""Keep pytest runs of this checkout out of the task data: the task repositories' tests fail on purpose."""

collect_ignore_glob = ["*"]
