"""Agent tools, all confined to the session's workspace folder.

Use :func:`tool_schemas` for the model request and :func:`run_tool` to execute
a tool call; see :mod:`.fsaccess` for the confinement rules.
"""

from .fsaccess import resolve_in_workspace
from .registry import TOOLS, ToolSpec, run_tool, tool_schemas
from .toolset import OfferedTool, ToolSet, builtin_tools
from .workspace import OutsideWorkspace, ToolConfig, ToolError, ToolResult

__all__ = [
    "ToolResult",
    "ToolSpec",
    "ToolConfig",
    "ToolError",
    "TOOLS",
    "tool_schemas",
    "OfferedTool",
    "ToolSet",
    "builtin_tools",
    "run_tool",
    "OutsideWorkspace",
    "resolve_in_workspace",
]
