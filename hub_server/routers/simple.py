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
from hub_server.sdk_dist import SDK_NAME, SdkRelease, SdkUnavailable
from hub_server.services import HubError
from hub_server.services.accounts import RESERVED_DISTRIBUTIONS
from hub_server.simple_index import CSP, JSON_V1, negotiate
from hub_server.upstream import UpstreamError
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
    502: {"description": "The hub does not own the name and the upstream index failed."},
    503: {"description": "The SDK's own files could not be built or found."},
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
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
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
    if project in RESERVED_DISTRIBUTIONS:
        release = await _sdk_release(hub)
        return _page_response(release.json if media == JSON_V1 else release.html, media, False)
    hit, page = hub.index.cached_page(project)
    if not hit:
        page = await run_in_threadpool(hub.index.load_page, project)
    if page is None:
        # No environment of that name at all: only then ask the upstream. A name the hub owns, even a private
        # one the caller may not see, is answered here (404 below), so it can neither leak nor be shadowed.
        return await _upstream_response(hub, project, media)
    if not can_read(principal, page):
        # The same work as for a name the hub lacks (the upstream round trip, or its cached answer, and a
        # 502 when the upstream fails), so neither the status nor the time tells a private name from an
        # absent one; the upstream's page is never served for it.
        await _upstream_response(hub, project, media)
        return _not_found()
    return _page_response(page.body(media), media, page.visibility == "private")


def _not_found() -> Response:
    return Response(content=b"Not Found\n", status_code=404, media_type="text/plain")


async def _upstream_response(hub: Hub, project: str, media: str) -> Response:
    if hub.upstream is None:
        return _not_found()
    try:
        upstream_page = await hub.upstream.page(project)
    except UpstreamError as exc:
        raise HubError(502, f"{exc}; the hub does not own {project!r} and could not relay it") from None
    if upstream_page is None:
        return _not_found()
    return _page_response(upstream_page.body(media), media, False)


async def _sdk_release(hub: Hub) -> SdkRelease:
    assert hub.sdk is not None
    release = hub.sdk.cached
    if release is None:
        try:
            release = await run_in_threadpool(hub.sdk.release)  # the first request may build (seconds)
        except SdkUnavailable as exc:
            raise HubError(503, f"the hub cannot serve {SDK_NAME} right now: {exc}") from None
    return release


def _sdk_download(release: SdkRelease, requested: str) -> Response:
    filename = requested.removesuffix(".metadata")
    found = release.files.get(filename)
    if found is None or (filename != requested and found.core_metadata is None):
        raise HubError(404, f"file {requested} not found (or not visible to you)")
    cache = "public, max-age=31536000, immutable"
    if filename != requested:
        assert found.core_metadata is not None
        return Response(
            found.core_metadata, media_type="application/octet-stream", headers={"Cache-Control": cache}
        )
    return FileResponse(
        found.path,
        media_type="application/octet-stream",
        filename=found.filename,
        headers={"Cache-Control": cache, "X-Content-Type-Options": "nosniff"},
    )


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
    if normalize_name(project) in RESERVED_DISTRIBUTIONS and hub.sdk is not None:
        try:
            release = hub.sdk.release()  # sync handler: already in a worker thread
        except SdkUnavailable as exc:
            raise HubError(503, f"the hub cannot serve {SDK_NAME} right now: {exc}") from None
        return _sdk_download(release, filename)
    found = services.find_download(hub, principal, project, filename)
    cache = "private, max-age=31536000, immutable" if found.private else "public, max-age=31536000, immutable"
    if found.core_metadata is not None:
        return Response(
            found.core_metadata.encode(),
            media_type="application/octet-stream",
            headers={"Cache-Control": cache},
        )
    if request.method == "GET":
        client = request.client.host if request.client else None
        services.record_download(hub, found, services.download_client(client, principal))
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
