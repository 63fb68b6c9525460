"""``/simple/`` (PEP 503 HTML, PEP 691 JSON, PEP 700 fields) and ``/files/`` downloads.

The index handlers are async and, for anonymous callers, touch only the in-memory cache: no database,
no thread hop. Credentials (Bearer, pip's Basic ``__token__:<token>``, or the web cookie) cost one
token lookup in a worker thread.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, RedirectResponse, StreamingResponse

from hub_server import services
from hub_server.auth import can_read
from hub_server.context import Hub
from hub_server.deps import HubDep, PrincipalDep, optional_principal
from hub_server.services import HubError
from hub_server.simple_index import JSON_V1, negotiate
from verifiers.hub.packaging import normalize_name

router = APIRouter(tags=["simple index"])

_INDEX_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "text/html": {},
            "application/vnd.pypi.simple.v1+html": {},
            "application/vnd.pypi.simple.v1+json": {},
        },
        "description": "The index page, in the format chosen by the Accept header (or ?format=json|html).",
    },
    404: {"description": "No such project, or a private one you may not read."},
    406: {"description": "None of the Accept types is served."},
}


def _page_response(body: bytes, media_type: str, private: bool) -> Response:
    return Response(
        content=body,
        media_type=media_type,
        headers={
            "Vary": "Accept, Authorization",
            # Always revalidate so pip sees a new release at once; private pages stay out of shared caches.
            "Cache-Control": "private, no-cache" if private else "public, no-cache",
        },
    )


def _not_acceptable() -> Response:
    return Response(
        content=b"Not Acceptable: ask for text/html or application/vnd.pypi.simple.v1+json (or +html)\n",
        status_code=406,
        media_type="text/plain",
    )


@router.get("/simple/", response_class=Response, responses=_INDEX_RESPONSES)
@router.head("/simple/", include_in_schema=False)
async def simple_root(request: Request) -> Response:
    hub: Hub = request.app.state.hub
    media = negotiate(request.headers.get("accept"), request.query_params.get("format"))
    if media is None:
        return _not_acceptable()
    principal = await optional_principal(request, hub)
    listing = hub.index.cached_root
    if listing is None:
        listing = await run_in_threadpool(hub.index.load_root)
    html_, json_ = listing.for_principal(principal)
    return _page_response(json_ if media == JSON_V1 else html_, media, principal is not None)


@router.get("/simple/{project}/", response_class=Response, responses=_INDEX_RESPONSES)
@router.head("/simple/{project}/", include_in_schema=False)
async def simple_project(project: str, request: Request) -> Response:
    hub: Hub = request.app.state.hub
    canonical = normalize_name(project)
    if canonical != project:
        return RedirectResponse(f"/simple/{canonical}/", status_code=301)
    media = negotiate(request.headers.get("accept"), request.query_params.get("format"))
    if media is None:
        return _not_acceptable()
    principal = await optional_principal(request, hub)
    hit, page = hub.index.cached_page(project)
    if not hit:
        page = await run_in_threadpool(hub.index.load_page, project)
    if page is None or not can_read(principal, page):
        return Response(content=b"Not Found\n", status_code=404, media_type="text/plain")
    return _page_response(page.body(media), media, page.visibility == "private")


@router.get("/simple/{project}", include_in_schema=False)
async def simple_project_no_slash(project: str) -> Response:
    return RedirectResponse(f"/simple/{normalize_name(project)}/", status_code=301)


@router.get(
    "/files/{project}/{filename}",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}, 404: {"description": "Not found"}},
    summary="Download a wheel or sdist (append .metadata for its PEP 658 core metadata)",
)
@router.head("/files/{project}/{filename}", include_in_schema=False)
def download(project: str, filename: str, request: Request, hub: HubDep, principal: PrincipalDep) -> Response:
    found = services.find_download(hub, principal, project, filename)
    cache = "private, max-age=31536000, immutable" if found.private else "public, max-age=31536000, immutable"
    if found.core_metadata is not None:
        return Response(
            found.core_metadata.encode(),
            media_type="application/octet-stream",
            headers={"Cache-Control": cache},
        )
    if request.method == "GET":
        services.record_download(hub, found.environment_id)
    headers = {"Cache-Control": cache, "X-Content-Type-Options": "nosniff"}
    path = hub.blobs.local_path(found.blob_key)
    if path is not None:
        if not path.is_file():
            raise HubError(500, f"the blob for {found.filename} is missing on the server; tell the hub admin")
        return FileResponse(
            path, media_type="application/octet-stream", filename=found.filename, headers=headers
        )
    return StreamingResponse(
        hub.blobs.open(found.blob_key),
        media_type="application/octet-stream",
        headers={**headers, "Content-Disposition": f'attachment; filename="{found.filename}"'},
    )
