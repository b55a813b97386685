"""MCP servers (Model Context Protocol): their tools offered to the model next to the built-in ones.

- :mod:`.definitions` reads the definitions (the user's file, ``CODY_MCP_CONFIG``, the editor's
  ``cody.mcpServers``, ACP's ``session/new``, a workspace's ``.cody/mcp.json`` or
  ``.vscode/mcp.json``) — standard library only, so a server with no MCP server configured
  never imports the SDK;
- :mod:`.connection` is one running server (the official ``mcp`` SDK's client session over
  :mod:`.stdio` or streamable HTTP / SSE), started lazily, restarted with backoff;
- :mod:`.hub` owns every connection of the process and gives a run its MCP tools;
- :mod:`.results` turns a ``tools/call`` result into the text the model reads.

Nothing here imports pygls or builds a wire dict: the faces do that.
"""
