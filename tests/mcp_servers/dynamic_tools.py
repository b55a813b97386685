"""A minimal MCP server (the official `mcp` SDK's MCPServer, over stdio) for what the registries'
servers do not offer: a tool list that changes while it runs. Its tool `grow` adds the tool
`shout` and sends `notifications/tools/list_changed`.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("dynamic-tools")


def shout(text: str) -> str:
    """Says the text louder."""
    return text.upper() + "!"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `shout`."""
    server.add_tool(shout)
    await ctx.request_context.session.send_tool_list_changed()
    return "shout added"


if __name__ == "__main__":
    server.run()
