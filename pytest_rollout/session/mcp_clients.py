"""``rollout.mcp(...)``: an MCP client, server or toolset whose tool traffic is recorded, and
answered from the golden without starting the server when the run is replayed.

Each comes back as what its framework takes in place of the original:

* the ``mcp`` package's ``Client`` or ``ClientSession``: a :class:`RecordedMcpClient`, with
  the same ``list_tools`` and ``call_tool`` (and, for a ``Client``, ``async with``: in replay
  it connects to nothing);
* the Agents SDK's MCP servers (``MCPServerStdio``, ``MCPServerStreamableHttp``, ...): a copy
  of the server, of a subclass of its class, whose ``connect()`` puts a
  :class:`RecordedMcpClient` where the SDK keeps its session (in replay without starting the
  server), so that the SDK's own listing, filtering and calling run over it;
* pydantic-ai's ``MCPToolset``: a copy of the toolset whose FastMCP client is a
  :class:`FastMcpClient`, so that pydantic-ai's own error handling runs over the recorded
  results.

The frameworks stay optional: which one an object belongs to is read from the modules of its
class, and FastMCP is imported only when a pydantic-ai toolset is wrapped.
"""

from __future__ import annotations

import copy
from importlib import import_module
from typing import Any, Final

from ..safety.sanitize import sanitize
from .mcp import DEFAULT_SERVER, McpRecording, McpTraffic

__all__ = ["FastMcpClient", "RecordedMcpClient", "wrap_mcp"]

#: What ``rollout.mcp()`` takes, in words.
ACCEPTED: Final = (
    "an mcp Client or ClientSession, an Agents SDK MCP server (agents.mcp.MCPServerStdio, "
    "MCPServerStreamableHttp, ...) or a pydantic-ai MCPToolset"
)


def _replay_only(traffic: McpTraffic, attr: str) -> AttributeError:
    return AttributeError(
        f"{attr}: the MCP server {sanitize(repr(traffic.server))} is not started when the run "
        f"is replayed; only its tools/list and tools/call are answered, from the golden"
    )


class RecordedMcpClient:
    """An ``mcp`` ``Client`` or ``ClientSession`` whose ``list_tools`` and ``call_tool`` are
    recorded, and answered from the golden in replay. Everything else is the client's own
    (in replay there is no connection: only the two calls are answered)."""

    def __init__(self, traffic: McpTraffic, inner: Any) -> None:
        self._rollout_traffic = traffic
        #: The client or session wrapped (``None``: none, the server is not started).
        self.inner = inner

    def __getattr__(self, attr: str) -> Any:
        inner = self.__dict__.get("inner")
        if inner is None:
            raise _replay_only(self.__dict__["_rollout_traffic"], attr)
        return getattr(inner, attr)

    async def __aenter__(self) -> RecordedMcpClient:
        if not self._rollout_traffic.replayed and self.inner is not None:
            await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        if not self._rollout_traffic.replayed and self.inner is not None:
            return await self.inner.__aexit__(*exc_info)
        return None

    async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
        """``tools/list`` (a ``ListToolsResult``): the client's arguments are passed on."""
        params = kwargs.get("params")
        cursor = kwargs.get("cursor") or getattr(params, "cursor", None)
        inner = self.inner

        def fetch() -> Any:
            return inner.list_tools(*args, **kwargs)

        return await self._rollout_traffic.list_tools(cursor, None if inner is None else fetch)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        """``tools/call`` (a ``CallToolResult``): the client's arguments are passed on."""
        inner = self.inner

        def fetch() -> Any:
            return inner.call_tool(name, arguments, *args, **kwargs)

        return await self._rollout_traffic.call_tool(
            name, arguments, None if inner is None else fetch
        )


class _SchemaCache:
    """What FastMCP reads of its session to check a result: each tool's output schema."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self._tool_output_schemas = schemas


class FastMcpClient:
    """A FastMCP ``Client`` (what a pydantic-ai ``MCPToolset`` talks through) whose
    ``tools/list`` and ``tools/call`` are recorded, and answered from the golden in replay.

    FastMCP's own ``list_tools`` and ``call_tool`` run over it (pagination, the parsing of a
    result and the ``ToolError`` of an ``isError`` one); only the two protocol calls beneath
    them, ``list_tools_mcp`` and ``call_tool_mcp``, are recorded. In replay the client
    connects to nothing and says the server offers tools."""

    def __init__(self, traffic: McpTraffic, inner: Any) -> None:
        self._rollout_traffic = traffic
        self.inner = inner

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.__dict__["inner"], attr)

    @property
    def _replayed(self) -> bool:
        return self._rollout_traffic.replayed

    async def __aenter__(self) -> FastMcpClient:
        if not self._replayed:
            await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        if not self._replayed:
            return await self.inner.__aexit__(*exc_info)
        return None

    def is_connected(self) -> bool:
        return True if self._replayed else bool(self.inner.is_connected())

    @property
    def initialize_result(self) -> Any:
        return None if self._replayed else self.inner.initialize_result

    @property
    def server_capabilities(self) -> Any:
        if not self._replayed:
            return self.inner.server_capabilities
        types = import_module("mcp.types")
        return types.ServerCapabilities(tools=types.ToolsCapability())

    @property
    def server_info(self) -> Any:
        return None if self._replayed else self.inner.server_info

    @property
    def instructions(self) -> Any:
        return None if self._replayed else self.inner.instructions

    @property
    def session(self) -> Any:
        if self._replayed:
            return _SchemaCache(self._rollout_traffic.output_schemas)
        return self.inner.session

    async def list_tools_mcp(self, *, cursor: str | None = None, **kwargs: Any) -> Any:
        def fetch() -> Any:
            return self.inner.list_tools_mcp(cursor=cursor, **kwargs)

        return await self._rollout_traffic.list_tools(cursor, fetch)

    async def call_tool_mcp(
        self, name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        def fetch() -> Any:
            return self.inner.call_tool_mcp(name, arguments, *args, **kwargs)

        return await self._rollout_traffic.call_tool(name, arguments, fetch)

    async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
        return await _fastmcp_client().list_tools(self, *args, **kwargs)

    async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
        return await _fastmcp_client().call_tool(self, *args, **kwargs)

    async def _parse_call_tool_result(self, *args: Any, **kwargs: Any) -> Any:
        return await _fastmcp_client()._parse_call_tool_result(self, *args, **kwargs)


def _fastmcp_client() -> Any:
    """FastMCP's ``Client`` class, whose methods :class:`FastMcpClient` runs over itself."""
    return import_module("fastmcp.client").Client


def _agents_class(cls: type) -> type:
    """A subclass of an Agents SDK server class whose session is a
    :class:`RecordedMcpClient`, over the live session, or over none (in replay, where
    ``connect()`` starts nothing). The server's own layout: a copy of a server of ``cls``
    can take it."""

    async def connect(self: Any) -> None:
        traffic: McpTraffic = self._rollout_traffic
        if traffic.replayed:
            self.session = RecordedMcpClient(traffic, None)
            return
        await cls.connect(self)  # type: ignore[attr-defined]
        self.session = RecordedMcpClient(traffic, self.session)

    async def cleanup(self: Any) -> None:
        session = self.session
        if isinstance(session, RecordedMcpClient):
            self.session = session.inner
        if self._rollout_traffic.replayed:
            return
        await cls.cleanup(self)  # type: ignore[attr-defined]

    namespace = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "__slots__": (),
        "connect": connect,
        "cleanup": cleanup,
    }
    return type(cls.__name__, (cls,), namespace)


def _agents_server(recording: McpRecording, server: Any, name: str | None) -> Any:
    wrapped = copy.copy(server)
    wrapped.__class__ = _agents_class(type(server))
    wrapped._rollout_traffic = recording.traffic(name or str(server.name))
    return wrapped


def _pydantic_ai_toolset(recording: McpRecording, toolset: Any, name: str | None) -> Any:
    __tracebackhide__ = True  # a usage error: the traceback ends in the test
    client = getattr(toolset, "client", None)
    if client is None or not hasattr(client, "call_tool_mcp"):
        raise TypeError(
            f"rollout.mcp() takes pydantic-ai's MCPToolset itself, got a "
            f"{type(toolset).__qualname__}: wrap the toolset first, then prefix or filter "
            f"what comes back"
        )
    own = getattr(toolset, "id", None)
    traffic = recording.traffic(name or (own if isinstance(own, str) else DEFAULT_SERVER))
    wrapped = copy.copy(toolset)  # as pydantic-ai's own for_run() copies a toolset
    vars(wrapped).pop("_enter_lock", None)
    wrapped.client = FastMcpClient(traffic, client)
    return wrapped


def _package(obj: Any) -> str | None:
    """The framework ``obj`` belongs to, from the packages of its class and bases."""
    for cls in type(obj).__mro__:
        top = cls.__module__.partition(".")[0]
        if top in ("agents", "pydantic_ai", "mcp"):
            return top
    return None


def wrap_mcp(recording: McpRecording, obj: Any, name: str | None) -> Any:
    """``obj`` recorded as the MCP server ``name`` (default: the server's own name, else
    ``"mcp"``); see the module's docstring for what comes back."""
    __tracebackhide__ = True  # a usage error: the traceback ends in the test
    package = _package(obj)
    if package == "agents" and hasattr(obj, "call_tool") and hasattr(obj, "connect"):
        return _agents_server(recording, obj, name)
    if package == "pydantic_ai":
        return _pydantic_ai_toolset(recording, obj, name)
    if package == "mcp" and hasattr(obj, "call_tool") and hasattr(obj, "list_tools"):
        return RecordedMcpClient(recording.traffic(name or DEFAULT_SERVER), obj)
    raise TypeError(
        f"rollout.mcp() cannot record a {sanitize(type(obj).__module__)}."
        f"{sanitize(type(obj).__qualname__)}; it takes {ACCEPTED}"
    )
