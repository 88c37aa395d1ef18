"""Which tool calls are actions (docs/analyzers.md): the calls the audit trail records.

A call is an action when the tool's whole name is one of :data:`STATE_MODIFYING_TOOLS`, or one
of the words of its name is one of :data:`STATE_MODIFYING_KEYWORDS` (the user can add to
both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["STATE_MODIFYING_KEYWORDS", "STATE_MODIFYING_TOOLS", "is_state_modifying"]

#: Tool names whose every call changes state (matched whole, in any case).
STATE_MODIFYING_TOOLS: Final[frozenset[str]] = frozenset(
    {
        # shells and code execution
        "bash",
        "sh",
        "zsh",
        "shell",
        "powershell",
        "cmd",
        "exec",
        "eval",
        "run_command",
        "execute_command",
        "run_shell_command",
        "shell_command",
        "terminal",
        "python",
        "python_repl",
        "code_interpreter",
        "code_execution",
        "computer",
        # files
        "file_write",
        "write_file",
        "file_edit",
        "edit_file",
        "file_delete",
        "delete_file",
        "create_file",
        "move_file",
        "rename_file",
        "copy_file",
        "append_file",
        "mkdir",
        "rm",
        "mv",
        "cp",
        "touch",
        "chmod",
        "chown",
        "apply_patch",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "text_editor",
        # version control
        "git_commit",
        "git_push",
        "git_merge",
        "git_rebase",
        "git_reset",
        "git_checkout",
        "git_tag",
        # network and messaging
        "http_post",
        "http_put",
        "http_patch",
        "http_delete",
        "http_request",
        "send_email",
        "send_message",
        "send_sms",
        "post_message",
        # data and infrastructure
        "sql",
        "execute_sql",
        "run_sql",
        "sql_execute",
        "kubectl",
        "docker",
        "terraform",
        "deploy",
        "pip_install",
        "npm_install",
    }
)

#: Name tokens that make a tool's calls actions ("createTicket", "db.delete_row").
STATE_MODIFYING_KEYWORDS: Final[frozenset[str]] = frozenset(
    {
        "write",
        "delete",
        "del",
        "remove",
        "rm",
        "create",
        "update",
        "upsert",
        "insert",
        "drop",
        "truncate",
        "alter",
        "commit",
        "push",
        "merge",
        "rebase",
        "revert",
        "rollback",
        "send",
        "post",
        "put",
        "patch",
        "exec",
        "execute",
        "eval",
        "run",
        "spawn",
        "shell",
        "move",
        "rename",
        "copy",
        "replace",
        "overwrite",
        "append",
        "deploy",
        "install",
        "uninstall",
        "kill",
        "terminate",
        "restart",
        "reboot",
        "shutdown",
        "stop",
        "modify",
        "edit",
        "set",
        "reset",
        "clear",
        "purge",
        "wipe",
        "destroy",
        "save",
        "upload",
        "transfer",
        "pay",
        "purchase",
        "buy",
        "refund",
        "charge",
        "withdraw",
        "deposit",
        "cancel",
        "approve",
        "reject",
        "grant",
        "revoke",
        "assign",
        "invite",
        "enable",
        "disable",
        "lock",
        "unlock",
        "publish",
        "submit",
        "restore",
        "migrate",
        "provision",
        "apply",
        "chmod",
        "chown",
        "mkdir",
        "touch",
        "notify",
        "tweet",
        "reply",
        "mutate",
        "register",
        "clone",
        "download",
        "import",
        "sync",
        "flush",
        "increment",
        "decrement",
    }
)

_TOKEN: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _tokens(name: str) -> set[str]:
    """The lowercase words of a tool name: split on anything but ASCII letters and digits,
    and on camelCase ("HTTPPostJSON" is http, post, json)."""
    return {word.lower() for word in _TOKEN.findall(name)}


def is_state_modifying(
    name: str, *, tools: Iterable[str] = (), keywords: Iterable[str] = ()
) -> bool:
    """Whether a call of the tool ``name`` is an action the audit trail records.

    First the whole name, in any case, against :data:`STATE_MODIFYING_TOOLS` and ``tools``;
    then its words ("createTicket" is create and ticket, "db.delete_row" is db, delete and
    row) against :data:`STATE_MODIFYING_KEYWORDS` and ``keywords``. Read-only names such as
    ``get_weather``, ``search`` or ``read_file`` are not actions.
    """
    whole = name.strip().lower()
    if not whole:
        return False
    if whole in STATE_MODIFYING_TOOLS or whole in {t.strip().lower() for t in tools}:
        return True
    words = _tokens(name)
    return not words.isdisjoint(STATE_MODIFYING_KEYWORDS) or not words.isdisjoint(
        {k.strip().lower() for k in keywords}
    )
