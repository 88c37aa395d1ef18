"""A small MCP server of the suite's own, run over stdio by the MCP tests (``python
tests/mcp_server.py``).

It offers ``get_weather(city)`` and ``lookup_order(order_id)``; ``get_weather("Atlantis")``
fails, which the protocol answers as a result with ``isError`` set. When the environment
names a file in ``MCP_SERVER_MARKER``, the server appends a line to it as it starts: a
replay that must not start the server checks that the file stays absent. With
``MCP_SERVER_VARIANT=v2`` the server offers another schema for ``get_weather`` (a ``unit``
argument), for the test of a changed tool list.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather", log_level="CRITICAL")


if os.environ.get("MCP_SERVER_VARIANT") == "v2":

    @server.tool()
    def get_weather(city: str, unit: str = "celsius") -> str:
        """The weather in a city, in a unit of your choice."""
        if city == "Atlantis":
            raise ToolError(f"no weather station in {city}")
        return f"Sunny in {city}, 21 degrees {unit}."

else:

    @server.tool()
    def get_weather(city: str) -> str:  # type: ignore[misc]
        """The weather in a city."""
        if city == "Atlantis":
            raise ToolError(f"no weather station in {city}")
        return f"Sunny in {city}, 21 degrees."


@server.tool()
def lookup_order(order_id: str) -> str:
    """The status of an order."""
    return f"Order {order_id} has shipped."


if __name__ == "__main__":
    marker = os.environ.get("MCP_SERVER_MARKER")
    if marker:
        with Path(marker).open("a", encoding="utf-8") as file:
            file.write(f"started {os.getpid()}\n")
    server.run()  # over stdio
