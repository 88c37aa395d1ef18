"""LangChain tools: a ``BaseTool`` (``StructuredTool`` and ``Tool``, what ``@tool`` makes, or
a class of the user's) recorded.

The copy made here (pydantic's ``model_copy``: the same class, name, description and
``args_schema``) has its function wrapped: ``func`` and ``coroutine`` for the tools that
hold them, the ``_run`` and ``_arun`` methods of any other tool. A call is recorded with
the arguments the model sees in the tool's schema, as the turn announced them: what
LangChain or LangGraph inject (``config``, ``callbacks``, ``run_manager``, injected state
and ids) is left out. In replay the recorded answer is returned and the tool does not run.
LangGraph's ``ToolNode`` runs a turn's calls on threads; recording them is thread-safe.

Who is acting (:func:`resolver`), read from the config LangChain keeps for the runnable
that runs (what ``langgraph.config.get_config()`` gives): an agent ``create_agent(...,
name=...)`` made, which names itself in the config's metadata (``lc_agent_name``), else the
node that runs the innermost subgraph (from the checkpoint namespace, ``"billing:<id>|
model:<id>"``: ``billing``). The nodes of the top-level graph name nobody: a ``model`` and
a ``tools`` node are one agent's loop, not two agents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import wraps
from importlib import import_module
from typing import Any, Final

from ..tools import ToolRecorder, acall_recorded, call_recorded
from .accepted import unsupported

__all__ = ["resolver", "wrap"]

#: What LangChain passes a tool's function besides the model's arguments.
_INJECTED: Final = frozenset({"config", "callbacks", "run_manager"})
#: The argument name a single-input ``Tool`` is announced with.
_SINGLE_INPUT: Final = "__arg1"


def _visible(tool: Any) -> frozenset[str] | None:
    """The argument names the model sees in the tool's schema (``None``: unknown)."""
    if type(tool).__name__ == "Tool":
        return None
    try:
        schema = tool.tool_call_schema
    except Exception:
        return None
    if isinstance(schema, dict):
        return frozenset(schema.get("properties", {}))
    fields = getattr(schema, "model_fields", None)
    return frozenset(fields) if isinstance(fields, dict) else None


def _binder(tool: Any) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    visible = _visible(tool)

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if visible is None:
            found = {k: v for k, v in kwargs.items() if k not in _INJECTED}
        else:
            found = {k: v for k, v in kwargs.items() if k in visible}
        if len(args) == 1 and not found:
            return {_SINGLE_INPUT: args[0]}  # a single-input tool's one string
        if args:
            found["args"] = list(args)
        return found

    return arguments


def _sync(recorder: ToolRecorder, name: str, fn: Callable[..., Any], bind: Any) -> Any:
    @wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        return call_recorded(recorder, name, bind(args, kwargs), lambda: fn(*args, **kwargs))

    return recorded


def _async(recorder: ToolRecorder, name: str, fn: Callable[..., Any], bind: Any) -> Any:
    @wraps(fn)
    async def recorded(*args: Any, **kwargs: Any) -> Any:
        return await acall_recorded(recorder, name, bind(args, kwargs), lambda: fn(*args, **kwargs))

    return recorded


def _own_async(tool: Any) -> bool:
    """Whether the tool's class runs asynchronously by its own code (else LangChain runs
    ``_run`` in a thread, and wrapping ``_run`` covers both)."""
    for cls in type(tool).__mro__:
        if "_arun" in vars(cls):
            return cls.__module__.partition(".")[0] != "langchain_core"
    return False


def wrap(recorder: ToolRecorder, tool: Any) -> tuple[Any, list[str]]:
    """A copy of a LangChain tool whose calls are recorded, and its name."""
    name = getattr(tool, "name", None)
    if not isinstance(name, str) or not callable(getattr(tool, "model_copy", None)):
        raise unsupported(tool, "LangChain")
    bind = _binder(tool)
    func: Any = getattr(tool, "func", None)
    coroutine: Any = getattr(tool, "coroutine", None)
    if func is not None or coroutine is not None:
        recorder.expect_return(name, func if func is not None else coroutine)
        update: dict[str, Any] = {}
        if func is not None:
            update["func"] = _sync(recorder, name, func, bind)
        if coroutine is not None:
            update["coroutine"] = _async(recorder, name, coroutine, bind)
        return tool.model_copy(update=update), [name]
    if not callable(getattr(tool, "_run", None)):
        raise unsupported(tool, "LangChain")
    wrapped = tool.model_copy()
    recorder.expect_return(name, tool._run)  # a tool class's own _run says what it returns
    # Instance attributes over the class's methods: the copy keeps its class.
    run, arun = wrapped._run, wrapped._arun  # bound to the copy
    object.__setattr__(wrapped, "_run", _sync(recorder, name, run, bind))
    if _own_async(tool):
        object.__setattr__(wrapped, "_arun", _async(recorder, name, arun, bind))
    return wrapped, [name]


def _agent_in(config: Any) -> str | None:
    """The agent a runnable's config names (see the module's docstring), or ``None``."""
    metadata = config.get("metadata") or {}
    name = metadata.get("lc_agent_name")
    if isinstance(name, str) and name:
        return name
    namespace = metadata.get("langgraph_checkpoint_ns")
    if not isinstance(namespace, str):
        namespace = (config.get("configurable") or {}).get("checkpoint_ns")
    if not isinstance(namespace, str) or "|" not in namespace:
        return None  # outside a graph, or a node of the top-level graph
    return namespace.split("|")[-2].partition(":")[0] or None


@functools.cache
def resolver() -> Callable[[], str | None] | None:
    """Who is acting in a LangGraph run (``None``: LangChain keeps no such config)."""
    try:
        config_var = import_module("langchain_core.runnables.config").var_child_runnable_config
        current_config: Callable[[], Any] = config_var.get
    except (ImportError, AttributeError):
        return None

    def acting() -> str | None:
        try:
            config = current_config()
            return None if not config else _agent_in(config)
        except Exception:  # naming the agent never breaks the run
            return None

    return acting
