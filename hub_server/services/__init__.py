"""What the hub does, independent of HTTP: the routers and the CLI call these.

One module per domain — ``catalogue`` (search, resolve, downloads), ``publishing`` (and its garbage
collection), ``environments`` (edit, yank, star, delete), ``sharing`` (read grants), ``evals``,
``accounts`` (users, organisations), ``members`` (an organisation's members and roles), ``tokens`` —
over shared ``lookups`` and ``errors``. Errors are ``HubError(status, detail)``; the app turns
them into JSON ``{"detail": ...}`` responses. Blocking (sync SQLAlchemy, archive checks): call from sync
route handlers, which run in a thread pool.
"""

from hub_server.services.accounts import create_org, create_user, whoami
from hub_server.services.catalogue import (
    Download,
    download_client,
    find_download,
    record_download,
    resolve,
    search,
)
from hub_server.services.environments import (
    delete_environment,
    delete_version,
    set_star,
    set_yanked,
    update_environment,
)
from hub_server.services.errors import HubError
from hub_server.services.evals import add_eval, list_evals
from hub_server.services.lookups import (
    find_user,
    get_environment,
    get_environment_view,
    get_version,
    uploader_name,
)
from hub_server.services.members import add_member, list_members, remove_member, set_role
from hub_server.services.publishing import Upload, collect_garbage, precheck_publish, publish
from hub_server.services.sharing import list_grants, share, unshare
from hub_server.services.tokens import create_token, list_tokens, revoke_token
from hub_server.services.web_sessions import end_session, start_session

__all__ = [
    "Download",
    "HubError",
    "Upload",
    "add_eval",
    "add_member",
    "collect_garbage",
    "create_org",
    "create_token",
    "create_user",
    "delete_environment",
    "delete_version",
    "download_client",
    "end_session",
    "find_download",
    "find_user",
    "get_environment",
    "get_environment_view",
    "get_version",
    "list_evals",
    "list_grants",
    "list_members",
    "list_tokens",
    "precheck_publish",
    "publish",
    "record_download",
    "remove_member",
    "resolve",
    "revoke_token",
    "search",
    "set_role",
    "set_star",
    "set_yanked",
    "share",
    "start_session",
    "unshare",
    "update_environment",
    "uploader_name",
    "whoami",
]
