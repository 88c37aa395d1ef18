"""MCP servers in a run: what a server offered (``tools/list``) and each ``tools/call``.

:class:`McpTraffic` is one server's traffic in one run, the same whichever client speaks it
(``session/mcp_clients.py`` puts it under the ``mcp`` client, the Agents SDK's servers and
pydantic-ai's toolsets). A listing is recorded as an ``mcp.tools.listed`` event (the server's
name and its tools as the protocol gives them); a call goes through the run's tool calls
(:func:`~pytest_rollout.session.tools.acall_recorded`), its output the protocol's
``CallToolResult`` as JSON: content blocks, ``structuredContent`` and ``isError`` as the
server sent them. A result with ``isError`` is a completed call, not an error; a call whose
client raised is recorded with its error, like any tool's.

When the run replays its golden no server is started: each listing is the golden's next one
of that server, each call is answered from the golden, and both come back as the ``mcp``
package's own types rebuilt from the recorded JSON. A listing the golden does not hold is a
replay divergence, as an unrecorded tool call is.

The ``mcp`` package is imported only when a result is rebuilt: nothing here needs it to be
installed until an MCP server is wrapped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from importlib import import_module
from typing import Any, Final

from ..diff.divergence import DivergenceKind, ReplayDivergenceError
from ..errors import RolloutError
from ..format.events import MCP_TOOLS_LISTED
from ..format.jsonable import json_copy
from ..safety.sanitize import sanitize
from .engine import Engine
from .tools import acall_recorded

__all__ = ["McpRecording", "McpTraffic", "result_json", "tool_json"]

#: The name of a server that says none (an ``mcp`` client or session).
DEFAULT_SERVER: Final = "mcp"

#: How a protocol model becomes the JSON the protocol sends (``isError``, ``inputSchema``).
_DUMP: Final = {"mode": "json", "by_alias": True, "exclude_none": True}


def tool_json(tool: Any) -> dict[str, Any]:
    """An MCP ``Tool`` as the protocol sends it."""
    dumped: dict[str, Any] = tool.model_dump(**_DUMP)
    return dumped


def result_json(result: Any) -> Any:
    """A ``CallToolResult`` as the protocol sends it (another value: as it is)."""
    dump = getattr(result, "model_dump", None)
    return result if dump is None else dump(**_DUMP)


class McpRecording:
    """The MCP servers of one run, by name: each name's traffic is one
    :class:`McpTraffic`, however many times its server is wrapped."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._servers: dict[str, McpTraffic] = {}

    def traffic(self, server: str) -> McpTraffic:
        found = self._servers.get(server)
        if found is None:
            found = self._servers[server] = McpTraffic(self._engine, server)
        return found


class McpTraffic:
    """One MCP server's ``tools/list`` and ``tools/call`` in a run: recorded from the live
    server, or answered from the golden (:attr:`replayed`: then no server is started)."""

    def __init__(self, engine: Engine, server: str) -> None:
        self._engine = engine
        self.server = server
        #: Whether the run answers this server from its golden (dry and full replay).
        self.replayed = engine.golden is not None
        self._listings: deque[dict[str, Any]] | None = None  # the golden's, once read
        self._served = 0
        #: Each listed tool's output schema, by name (what a client checks results with).
        self.output_schemas: dict[str, Any] = {}

    # -- tools/list -------------------------------------------------------------------

    async def list_tools(
        self, cursor: str | None, fetch: Callable[[], Awaitable[Any]] | None
    ) -> Any:
        """A ``ListToolsResult``: the server's, recorded, or the golden's next listing of
        this server, rebuilt. ``fetch`` asks the live server (``None``: there is none)."""
        engine = self._engine
        engine.ensure_started()
        if self.replayed:
            recorded = self._recorded_listing(cursor)
            engine.record(MCP_TOOLS_LISTED, recorded)
            return self._rebuilt_listing(recorded)
        if fetch is None:
            raise RolloutError(f"the MCP server {self.server!r} is not connected")
        result = await fetch()
        data: dict[str, Any] = {"server": self.server}
        if cursor is not None:
            data["cursor"] = cursor
        data["tools"] = [tool_json(tool) for tool in result.tools]
        next_cursor = getattr(result, "next_cursor", None)
        if next_cursor is not None:
            data["next_cursor"] = next_cursor
        for tool in result.tools:
            self.output_schemas[tool.name] = tool.output_schema
        engine.record(MCP_TOOLS_LISTED, data)
        return result

    def _golden_listings(self) -> deque[dict[str, Any]]:
        if self._listings is None:
            events = self._engine.require_golden().events
            self._listings = deque(
                e.data
                for e in events
                if e.type == MCP_TOOLS_LISTED and e.data.get("server") == self.server
            )
        return self._listings

    def _recorded_listing(self, cursor: str | None) -> dict[str, Any]:
        """The golden's next listing of this server (a copy), or a replay divergence."""
        listings = self._golden_listings()
        self._served += 1
        server = sanitize(repr(self.server))
        if not listings:
            raise self._diverge(
                f"tools/list #{self._served} of the MCP server {server} is not in the "
                f"recording (it holds {self._served - 1} listing(s) of that server)"
            )
        data: dict[str, Any] = json_copy(listings.popleft())
        if data.get("cursor") != cursor:
            raise self._diverge(
                f"tools/list #{self._served} of the MCP server {server} asks for page "
                f"{sanitize(repr(cursor))}; the recording has page "
                f"{sanitize(repr(data.get('cursor')))}"
            )
        return data

    def _rebuilt_listing(self, data: Mapping[str, Any]) -> Any:
        types = import_module("mcp.types")
        tools = [types.Tool.model_validate(tool) for tool in data.get("tools") or ()]
        for tool in tools:
            self.output_schemas[tool.name] = tool.output_schema
        return types.ListToolsResult(tools=tools, next_cursor=data.get("next_cursor"))

    def _diverge(self, detail: str) -> ReplayDivergenceError:
        """A listing replay cannot answer: noted with the replay's divergences and recorded
        as an event, like an unrecorded tool call."""
        engine = self._engine
        replay = engine.replay
        assert replay is not None  # only a replay diverges
        error = replay.diverge(DivergenceKind.UNRECORDED_CALL, engine.recorder.step, detail)
        engine.divergence_event(error)
        return error

    # -- tools/call -------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        fetch: Callable[[], Awaitable[Any]] | None,
    ) -> Any:
        """A ``CallToolResult``: the live server's, recorded, or the golden's answer to
        this call, rebuilt (a recorded error is raised again)."""
        live: list[Any] = []

        async def run() -> Any:
            if fetch is None:  # a fork's call after its step: nothing live to call
                raise RolloutError(
                    f"the MCP server {sanitize(repr(self.server))} is not started when the "
                    f"run is replayed, so its tool {sanitize(repr(name))} cannot run live"
                )
            result = await fetch()
            live.append(result)
            return result_json(result)

        output = await acall_recorded(self._engine.calls, name, dict(arguments or {}), run)
        if live:
            return live[0]
        return _rebuilt_result(output)


def _rebuilt_result(output: Any) -> Any:
    """The ``CallToolResult`` of a recorded output (the recorded value itself when it is
    not one: a call recorded before it was an MCP call)."""
    types = import_module("mcp.types")
    if not isinstance(output, dict) or "content" not in output:
        return output
    return types.CallToolResult.model_validate(output)
