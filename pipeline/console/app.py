"""The console's web app (aiohttp + Jinja2 templates, a few lines of JS): pages, sign-in, sessions.

Sign-in takes an API key — a tenant's proxy key, or the operator's (``sink.admin_key``, else the key file
``sink.admin_key_file`` the store writes at first start; the sign-in page names it) — and checks it the way the store does (``sinks.principal.resolve_principal``). The key stays in
this process's memory; the browser gets a random session id in an HttpOnly, SameSite=Strict cookie.
Scripts may send ``Authorization: Bearer <key>`` instead. Every page's data is read through the store's
query client with that key, so the store's tenant scoping is what a page shows. Trajectories that have not
landed yet are asked of the proxy with the same key (``pending.py``) and listed above the landed ones.

    GET /trajectories?tenant=&eligibility=&rewarded=&reward_min=&grade=&policy_version=&q=
    GET /trajectories/{id}      steps (redactions highlighted), versions, rewards, reasons
    GET /status                 every service's state, lag, throughput, dead letters, spool, restarts
    GET /learning               mean reward by serving policy version
    GET /policies               per tenant: the policy version it is served, its lineage, reward by version
    GET /policies/{version}     the trajectory versions one policy version trained on
    GET /evolution              the control plane's proposals, where each stands
    GET /evolution/{id}         one proposal's ledger: evidence, every gate, decisions, diff
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from jinja2 import Environment, FileSystemLoader, select_autoescape

from pipeline.console import queries as q
from pipeline.console.config import ConsoleConfig
from pipeline.console.pending import pending_trajectories
from pipeline.console.render import (
    highlight_redactions,
    learning_svg,
    message_text,
    parse_messages,
    pretty_json,
)
from sinks.admin_key import admin_key_path
from sinks.clients import connect_client
from sinks.exceptions import AuthError, SinkError
from sinks.principal import Principal, resolve_principal
from sinks.settings import SinkSettings

HERE = Path(__file__).parent
COOKIE = "sluice_session"


@dataclass
class Session:
    api_key: str | None
    principal: Principal
    expires: float


StatusSource = Callable[[float], Any]
"""What ``sluice status`` shows, sampled over the given seconds (a dataclass: ``app.status.Status``)."""


class Console:
    """State shared by the handlers: the config, sessions, templates and the status cache."""

    def __init__(
        self, ui: ConsoleConfig, store: SinkSettings, status: StatusSource, proxy_url: str | None
    ) -> None:
        self.ui, self.store, self.collect_status, self.proxy_url = ui, store, status, proxy_url
        self.sessions: dict[str, Session] = {}
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape())
        self.env.filters["redactions"] = highlight_redactions
        self.env.filters["message_text"] = message_text
        self._status: tuple[float, dict[str, Any]] | None = None
        self._status_lock = asyncio.Lock()

    # ------------------------------------------------------------------ sessions

    def sign_in(self, api_key: str | None) -> tuple[str, Session]:
        principal = resolve_principal(self.store, api_key or None)  # AuthError for a wrong key
        token = secrets.token_urlsafe(32)
        session = Session(api_key or None, principal, time.time() + self.ui.session_hours * 3600)
        self.sessions[token] = session
        return token, session

    def session_of(self, request: web.Request) -> Session | None:
        auth = request.headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            try:
                key = auth[7:].strip()
                return Session(key, resolve_principal(self.store, key), time.time() + 60)
            except AuthError:
                return None
        token = request.cookies.get(COOKIE, "")
        session = self.sessions.get(token)
        if session is None or session.expires < time.time():
            self.sessions.pop(token, None)
            return None
        return session

    # ------------------------------------------------------------------ data

    async def query(self, session: Session, sql: str) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            client = connect_client(self.store, session.api_key)
            try:
                return client.query(sql).read_all().to_pylist()
            finally:
                client.close()

        return await asyncio.get_running_loop().run_in_executor(None, run)

    async def status(self) -> dict[str, Any]:
        """``sluice status`` (one-second rate sample), cached for a refresh period."""
        async with self._status_lock:
            now = time.monotonic()
            if self._status is None or now - self._status[0] > self.ui.status_refresh_s / 2:
                loop = asyncio.get_running_loop()
                status = await loop.run_in_executor(None, self.collect_status, 1.0)
                data = asdict(status)
                for g, row in zip(status.groups, data["groups"], strict=True):
                    row["lag"] = g.lag
                self._status = (now, data)
            return self._status[1]

    async def pending(self, session: Session) -> tuple[list[dict[str, Any]], str | None]:
        """The session's trajectories the proxy recorded that have not landed, and why none could be read."""
        if self.proxy_url is None:
            return [], None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, pending_trajectories, self.proxy_url, self.store, session.principal, session.api_key
        )

    def login_page(self, error: str | None, nxt: str) -> web.Response:
        """The sign-in form, which says where the operator key is."""
        configured = self.store.sink.admin_key is not None
        return self.page(
            "login.html",
            None,
            error=error,
            next=nxt,
            admin_key_configured=configured,
            admin_key_file=str(admin_key_path(self.store)),
        )

    def page(self, name: str, session: Session | None, **ctx: Any) -> web.Response:
        html = self.env.get_template(name).render(session=session, **ctx)
        return web.Response(text=html, content_type="text/html")

    def not_found(self, session: Session | None, what: str) -> web.HTTPNotFound:
        """The not-found page, as the exception a handler raises."""
        html = self.env.get_template("not_found.html").render(session=session, what=what)
        return web.HTTPNotFound(text=html, content_type="text/html")


def _require(console: Console, request: web.Request) -> Session:
    session = console.session_of(request)
    if session is None:
        raise web.HTTPFound(f"/login?next={request.path_qs}")
    return session


async def _lookup(
    console: Console, request: web.Request, key: str, sql_of: Callable[[str], str], what: str
) -> tuple[Session, str, list[dict[str, Any]]]:
    """The signed-in session, the id at ``key`` in the path and the rows ``sql_of(id)`` reads; the
    not-found page naming ``what`` (``{}``: the id) for an unknown id, and alike for another tenant's."""
    session = _require(console, request)
    name = request.match_info[key]
    found = await console.query(session, sql_of(name))
    if not found:
        raise console.not_found(session, what.format(name))
    return session, name, found


def _rows_page(console: Console, sql: str, template: str) -> Callable[[web.Request], Any]:
    """The handler of a page that lists what ``sql`` reads for the signed-in session (its tenant's rows)."""

    async def page(request: web.Request) -> web.Response:
        session = _require(console, request)
        return console.page(template, session, rows=await console.query(session, sql))

    return page


def make_app(
    ui: ConsoleConfig, store: SinkSettings, status: StatusSource, proxy_url: str | None = None
) -> web.Application:
    """The console's app: ``ui`` its own section, ``store`` the sink's (sign-in and every page's data),
    ``status`` what the status page shows, ``proxy_url`` where pending trajectories are asked (None: not
    shown)."""
    console = Console(ui, store, status, proxy_url)
    routes = web.RouteTableDef()

    @routes.get("/")
    async def index(request: web.Request) -> web.Response:
        raise web.HTTPFound("/trajectories")

    @routes.get("/login")
    async def login_form(request: web.Request) -> web.Response:
        return console.login_page(None, request.query.get("next", "/trajectories"))

    @routes.post("/login")
    async def login(request: web.Request) -> web.Response:
        form = await request.post()
        nxt = str(form.get("next") or "/trajectories")
        if not nxt.startswith("/") or nxt.startswith("//"):
            nxt = "/trajectories"
        try:
            token, _ = console.sign_in(str(form.get("api_key") or "").strip())
        except AuthError as err:
            resp = console.login_page(str(err), nxt)
            resp.set_status(401)
            return resp
        resp = web.HTTPFound(nxt)
        resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
        raise resp

    @routes.post("/logout")
    async def logout(request: web.Request) -> web.Response:
        console.sessions.pop(request.cookies.get(COOKIE, ""), None)
        resp = web.HTTPFound("/login")
        resp.del_cookie(COOKIE, path="/")
        raise resp

    @routes.get("/trajectories")
    async def trajectories(request: web.Request) -> web.Response:
        session = _require(console, request)
        try:
            f = q.TrajectoryFilter.from_query(dict(request.query))
        except q.FilterError as err:
            resp = console.page(
                "trajectories.html",
                session,
                f=q.TrajectoryFilter(),
                page=q.Page(),
                error=str(err),
                pending=[],
                pending_error=None,
            )
            resp.set_status(400)
            return resp
        (pending, pending_error), rows, total, *facets = await asyncio.gather(
            console.pending(session),
            console.query(session, q.trajectories_sql(f)),
            console.query(session, q.count_sql(f)),
            *(console.query(session, sql) for sql in q.FACETS_SQL.values()),
        )
        pending = [
            p
            for p in pending
            if (not f.tenant or p["tenant"] == f.tenant) and str(p["id"]).startswith(f.search)
        ]
        page = q.Page(
            rows=rows,
            total=int(total[0]["n"]) if total else 0,
            facets={name: [r["v"] for r in got] for name, got in zip(q.FACETS_SQL, facets, strict=True)},
        )
        return console.page(
            "trajectories.html",
            session,
            f=f,
            page=page,
            error=None,
            grades=q.GRADES,
            eligibility=q.ELIGIBILITY,
            pending=pending,
            pending_error=pending_error,
        )

    @routes.get("/trajectories/{tid}")
    async def trajectory(request: web.Request) -> web.Response:
        session, tid, found = await _lookup(console, request, "tid", q.trajectory_sql, "trajectory {}")
        versions, rewards, steps = await asyncio.gather(
            console.query(session, q.versions_sql(tid)),
            console.query(session, q.rewards_sql(tid)),
            console.query(session, q.steps_sql(tid)),
        )
        for step in steps:
            step["messages"] = parse_messages(step.pop("new_messages"))
            step["completion"] = parse_messages(step["completion"])
            step["entities"] = parse_messages(step["entities"])[0] if step["entities"] else {}
        return console.page(
            "trajectory.html", session, t=found[0], versions=versions, rewards=rewards, steps=steps
        )

    @routes.get("/status")
    async def status(request: web.Request) -> web.Response:
        session = _require(console, request)
        data = await console.status()
        template = "status_body.html" if request.query.get("fragment") else "status.html"
        return console.page(template, session, s=data, refresh_s=ui.status_refresh_s)

    @routes.get("/learning")
    async def learning(request: web.Request) -> web.Response:
        session = _require(console, request)
        rows = await console.query(session, q.LEARNING_SQL)
        svg = learning_svg([(r["policy_version"], r["mean_reward"]) for r in rows])
        return console.page("learning.html", session, rows=rows, svg=svg)

    routes.get("/policies")(_rows_page(console, q.TENANT_POLICIES_SQL, "policies.html"))

    @routes.get("/policies/{version}")
    async def version_lineage(request: web.Request) -> web.Response:
        what = "lineage of policy version {}"
        session, version, items = await _lookup(console, request, "version", q.version_lineage_sql, what)
        return console.page("policy_lineage.html", session, version=version, items=items, head=items[0])

    routes.get("/evolution")(_rows_page(console, q.PROPOSALS_SQL, "evolution.html"))

    @routes.get("/evolution/{pid}")
    async def proposal(request: web.Request) -> web.Response:
        session, pid, entries = await _lookup(console, request, "pid", q.ledger_sql, "proposal {}")
        for e in entries:
            e["evidence"] = pretty_json(e["evidence"])
            e["diff"] = pretty_json(e["diff"])
        trained = (
            await console.query(session, q.lineage_sql(pid)) if entries[0]["surface"] == "weights" else []
        )
        return console.page(
            "proposal.html", session, pid=pid, entries=entries, head=entries[0], lineage=trained
        )

    @routes.get("/healthz")
    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    @web.middleware
    async def store_errors(request: web.Request, handler: Any) -> web.StreamResponse:
        """The store being unreachable or refusing the key is a page, not a stack trace."""
        try:
            return await handler(request)
        except AuthError as err:
            resp = console.login_page(str(err), request.path_qs)
            resp.set_status(401)
            return resp
        except SinkError as err:
            resp = console.page("not_found.html", console.session_of(request), what=f"store ({err})")
            resp.set_status(503)
            return resp

    app = web.Application(middlewares=[store_errors])
    app.add_routes(routes)
    app.router.add_static("/static", HERE / "static")
    app["console"] = console
    return app
