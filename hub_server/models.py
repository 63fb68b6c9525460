"""SQLAlchemy 2 models. The schema itself is created only by the Alembic migrations in ``migrations/``."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, backref, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from verifiers.hub.packaging import module_name

# Stable constraint names, so migrations can refer to them on every backend.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Owner(Base):
    """A namespace that owns environments: a user's own, or an organisation's."""

    __tablename__ = "owners"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(8))  # "user" | "org"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), unique=True)
    email: Mapped[str | None] = mapped_column(String(320))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    owner: Mapped[Owner] = relationship(lazy="joined")

    @property
    def username(self) -> str:
        return self.owner.name


class Membership(Base):
    """A user's membership of an organisation, with its role (``auth.ROLES``: ``owner``, ``admin`` or
    ``member``; what each may do is the table in ``auth``'s docstring and docs/hub.md)."""

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("org_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    org_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16), default="member")  # "owner" | "admin" | "member"


class ApiToken(Base):
    """Only the sha256 of a token is stored; tokens are 256-bit random, so a fast hash is enough."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # shown in listings to tell tokens apart
    name: Mapped[str] = mapped_column(String(100), default="")
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The token that minted this one over the API (None: made with the CLI); revoking it revokes this.
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="SET NULL"), index=True
    )
    user: Mapped[User] = relationship(lazy="joined")


class WebSession(Base):
    """One browser sign-in (``services.web_sessions``): the cookie holds a random session id, never the
    API token it signed in with; only the id's sha256 is stored, as for tokens. It ends at logout, when
    the token is revoked or expires, and at ``expires_at`` (no later than the token's expiry)."""

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    token: Mapped[ApiToken] = relationship(lazy="joined")


class Environment(Base):
    """``owner/name``; ``name`` is the PEP 503 normalised distribution name, unique across all owners."""

    __tablename__ = "environments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(8), default="public")  # "public" | "private"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    download_count: Mapped[int] = mapped_column(BigInteger, default=0, index=True)
    star_count: Mapped[int] = mapped_column(Integer, default=0, index=True)
    owner: Mapped[Owner] = relationship(lazy="joined")
    tags: Mapped[list[EnvironmentTag]] = relationship(
        lazy="selectin", cascade="all, delete-orphan", order_by="EnvironmentTag.tag"
    )
    versions: Mapped[list[Version]] = relationship(
        back_populates="environment", cascade="all, delete-orphan", lazy="selectin"
    )

    @property
    def full_name(self) -> str:
        return f"{self.owner.name}/{self.name}"

    @property
    def module(self) -> str:
        return module_name(self.name)


class ReadGrant(Base):
    """One user may read one private environment (``services.sharing``; ``vf-hub env share``): its pages,
    versions, index page and files, and its public eval runs — nothing more (no publishing, no private
    runs). Revoked by deleting the row; a public environment's grants apply again once it is private."""

    __tablename__ = "read_grants"
    __table_args__ = (UniqueConstraint("environment_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    granted_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EnvironmentTag(Base):
    __tablename__ = "environment_tags"
    __table_args__ = (UniqueConstraint("environment_id", "tag"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id", ondelete="CASCADE"))
    tag: Mapped[str] = mapped_column(String(50), index=True)


class Star(Base):
    __tablename__ = "stars"
    __table_args__ = (UniqueConstraint("user_id", "environment_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Version(Base):
    """One immutable release. ``version`` is the normalised PEP 440 string."""

    __tablename__ = "versions"
    __table_args__ = (UniqueConstraint("environment_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id", ondelete="CASCADE"))
    version: Mapped[str] = mapped_column(String(100))
    summary: Mapped[str] = mapped_column(Text, default="")
    requires_python: Mapped[str | None] = mapped_column(String(200))
    dependencies: Mapped[list[str]] = mapped_column(JSON)
    readme: Mapped[str] = mapped_column(Text, default="")
    readme_content_type: Mapped[str] = mapped_column(String(100), default="text/markdown")
    # The README as sanitised HTML, rendered once at publish in a limited child (``hub_server.readme``);
    # None for versions published before that (rendered on first view, then stored).
    readme_html: Mapped[str | None] = mapped_column(Text, deferred=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    sdist_files: Mapped[list[dict[str, Any]]] = mapped_column(JSON)  # [{"path", "size"}]
    yanked: Mapped[bool] = mapped_column(Boolean, default=False)
    yanked_reason: Mapped[str] = mapped_column(Text, default="")
    uploader_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    environment: Mapped[Environment] = relationship(back_populates="versions")
    files: Mapped[list[File]] = relationship(
        back_populates="version", cascade="all, delete-orphan", lazy="selectin", order_by="File.filename"
    )


class File(Base):
    """A wheel or sdist. ``blob_key`` is unique per upload attempt, so a losing publish never shares it."""

    __tablename__ = "files"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id", ondelete="CASCADE"), index=True)
    filename: Mapped[str] = mapped_column(String(300), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # "bdist_wheel" | "sdist"
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    blob_key: Mapped[str] = mapped_column(String(400), unique=True)
    # PEP 658 core metadata (the wheel's METADATA), served next to the file.
    core_metadata: Mapped[str | None] = mapped_column(Text)
    core_metadata_sha256: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    version: Mapped[Version] = relationship(back_populates="files")


class DownloadEvent(Base):
    """One row per (file, client, UTC day) that downloaded it: ``download_count`` grows once per row."""

    __tablename__ = "download_events"
    file_id: Mapped[int] = mapped_column(ForeignKey("files.id", ondelete="CASCADE"), primary_key=True)
    client: Mapped[str] = mapped_column(String(32), primary_key=True)  # a hash, never the address itself
    day: Mapped[date] = mapped_column(Date, primary_key=True, index=True)


class EvalSummary(Base):
    """An uploaded eval summary for one environment version (the leaderboard)."""

    __tablename__ = "evals"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id", ondelete="CASCADE"), index=True)
    model: Mapped[str] = mapped_column(String(200))
    avg_reward: Mapped[float] = mapped_column(Float)
    num_examples: Mapped[int] = mapped_column(Integer)
    rollouts_per_example: Mapped[int] = mapped_column(Integer)
    pass_at_k: Mapped[dict[str, float]] = mapped_column(JSON)
    uploader_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EvalRun(Base):
    """One eval run uploaded as a record: metadata, its rollouts (``EvalRollout``) and, once finalized,
    its aggregates. Linked to the exact version *and* the content hash that produced it."""

    __tablename__ = "eval_runs"
    __table_args__ = (UniqueConstraint("environment_id", "run_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id", ondelete="CASCADE"))
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id", ondelete="CASCADE"), index=True)
    #: The client's id for the run (from its run directory): creating it again resumes the upload.
    run_key: Mapped[str] = mapped_column(String(64))
    content_hash: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200), index=True)
    sampling_args: Mapped[dict[str, Any]] = mapped_column(JSON)
    env_args: Mapped[dict[str, Any]] = mapped_column(JSON)
    sdk_version: Mapped[str] = mapped_column(String(64))
    visibility: Mapped[str] = mapped_column(String(8), default="private")  # "public" | "private"
    status: Mapped[str] = mapped_column(String(16), default="uploading")  # "uploading" | "complete"
    num_examples: Mapped[int] = mapped_column(Integer)
    rollouts_per_example: Mapped[int] = mapped_column(Integer)
    #: The examples are a shuffled selection (vf-eval --shuffle): their ids are dataset positions, any of
    #: them, at most ``num_examples`` distinct; otherwise they are 0 .. num_examples - 1.
    shuffled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    uploader_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finalized_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: Rollouts stored so far (kept up to date while uploading).
    rollout_count: Mapped[int] = mapped_column(Integer, default=0)
    # --- aggregates, computed by the hub from the stored rollouts when the run is finalized ---
    scored_count: Mapped[int] = mapped_column(Integer, default=0)
    avg_reward: Mapped[float | None] = mapped_column(Float)
    std_reward: Mapped[float | None] = mapped_column(Float)
    #: Half-width of the 95% confidence interval of ``avg_reward`` (normal approximation).
    reward_ci95: Mapped[float | None] = mapped_column(Float)
    pass_at_k: Mapped[dict[str, float]] = mapped_column(JSON)
    avg_metrics: Mapped[dict[str, float]] = mapped_column(JSON)
    error_counts: Mapped[dict[str, int]] = mapped_column(JSON)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)


class EvalRollout(Base):
    """One rollout of an ``EvalRun``; ``(run, example_id, rollout_index)`` is unique, so uploads are
    idempotent. ``data`` holds the (truncated) rollout as uploaded; the filter columns are copied out."""

    __tablename__ = "eval_rollouts"
    __table_args__ = (UniqueConstraint("run_id", "example_id", "rollout_index"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("eval_runs.id", ondelete="CASCADE"))
    example_id: Mapped[int] = mapped_column(Integer)
    rollout_index: Mapped[int] = mapped_column(Integer)
    reward: Mapped[float | None] = mapped_column(Float)
    error_category: Mapped[str | None] = mapped_column(String(16))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


#: ``hub_state`` key bumped by every change that alters the simple index (publish, yank, visibility, delete).
INDEX_GENERATION = "index_generation"
#: ``hub_state`` key bumped by every change that alters a JSON API answer: all index changes, plus
#: descriptions, tags, stars and download counts.
CATALOGUE_GENERATION = "catalogue_generation"


class HubState(Base):
    """Key/value rows: the change counters ``INDEX_GENERATION`` and ``CATALOGUE_GENERATION``."""

    __tablename__ = "hub_state"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)


class SmokeCheck(Base):
    """The publish-time smoke check of one version (``hub_server.smoke_checks``): queued, running, then passed,
    failed (with its log) or skipped (with the reason). It never blocks or changes the version."""

    __tablename__ = "smoke_checks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id", ondelete="CASCADE"), unique=True)
    status: Mapped[str] = mapped_column(String(16))  # queued | running | passed | failed | skipped
    reason: Mapped[str] = mapped_column(Text, default="")  # one line: why it failed or was skipped
    log: Mapped[str] = mapped_column(Text, default="")
    backend: Mapped[str | None] = mapped_column(String(16))
    duration_s: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # ``Version.smoke_check`` (the version page's badge); the database deletes the row with its version.
    version: Mapped[Version] = relationship(
        backref=backref("smoke_check", uselist=False, passive_deletes=True)
    )


class NameGrant(Base):
    """A distribution name the upstream index serves that an admin allowed one owner to publish first
    (``hub_server.services.names``; ``vf-hub name allow``). ``name`` is PEP 503 normalised."""

    __tablename__ = "name_grants"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
