"""The Agent Client Protocol v1 messages, generated from the pinned schema — do not edit.

Schema 1.21.0 of agentclientprotocol/agent-client-protocol at b7f0005493b9
(pinned/source.json); regenerate with `python -m cody_lsp.server.acp.generate`. `DEFS_JSON` is what validate.py checks
a client's messages against; the TypedDicts exist for mypy only (TYPE_CHECKING).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

SCHEMA_VERSION = '1.21.0'
PROTOCOL_VERSION = 1

# The methods by the schema's names for them (meta.json).
AGENT_METHODS: dict[str, str] = {'authenticate': 'authenticate', 'initialize': 'initialize', 'logout': 'logout', 'session_cancel': 'session/cancel', 'session_close': 'session/close', 'session_delete': 'session/delete', 'session_list': 'session/list', 'session_load': 'session/load', 'session_new': 'session/new', 'session_prompt': 'session/prompt', 'session_resume': 'session/resume', 'session_set_config_option': 'session/set_config_option', 'session_set_mode': 'session/set_mode'}
CLIENT_METHODS: dict[str, str] = {'elicitation_complete': 'elicitation/complete', 'elicitation_create': 'elicitation/create', 'fs_read_text_file': 'fs/read_text_file', 'fs_write_text_file': 'fs/write_text_file', 'session_request_permission': 'session/request_permission', 'session_update': 'session/update', 'terminal_create': 'terminal/create', 'terminal_kill': 'terminal/kill', 'terminal_output': 'terminal/output', 'terminal_release': 'terminal/release', 'terminal_wait_for_exit': 'terminal/wait_for_exit'}
PROTOCOL_METHODS: dict[str, str] = {'cancel_request': '$/cancel_request'}

# Method → the definition of its params (requests and notifications) or of its result.
AGENT_REQUESTS: dict[str, str] = {'authenticate': 'AuthenticateRequest', 'session/close': 'CloseSessionRequest', 'session/delete': 'DeleteSessionRequest', 'initialize': 'InitializeRequest', 'session/list': 'ListSessionsRequest', 'session/load': 'LoadSessionRequest', 'logout': 'LogoutRequest', 'session/new': 'NewSessionRequest', 'session/prompt': 'PromptRequest', 'session/resume': 'ResumeSessionRequest', 'session/set_config_option': 'SetSessionConfigOptionRequest', 'session/set_mode': 'SetSessionModeRequest'}
AGENT_RESPONSES: dict[str, str] = {'authenticate': 'AuthenticateResponse', 'session/close': 'CloseSessionResponse', 'session/delete': 'DeleteSessionResponse', 'initialize': 'InitializeResponse', 'session/list': 'ListSessionsResponse', 'session/load': 'LoadSessionResponse', 'logout': 'LogoutResponse', 'session/new': 'NewSessionResponse', 'session/prompt': 'PromptResponse', 'session/resume': 'ResumeSessionResponse', 'session/set_config_option': 'SetSessionConfigOptionResponse', 'session/set_mode': 'SetSessionModeResponse'}
AGENT_NOTIFICATIONS: dict[str, str] = {'session/cancel': 'CancelNotification'}
CLIENT_REQUESTS: dict[str, str] = {'elicitation/create': 'CreateElicitationRequest', 'terminal/create': 'CreateTerminalRequest', 'terminal/kill': 'KillTerminalRequest', 'fs/read_text_file': 'ReadTextFileRequest', 'terminal/release': 'ReleaseTerminalRequest', 'session/request_permission': 'RequestPermissionRequest', 'terminal/output': 'TerminalOutputRequest', 'terminal/wait_for_exit': 'WaitForTerminalExitRequest', 'fs/write_text_file': 'WriteTextFileRequest'}
CLIENT_RESPONSES: dict[str, str] = {'elicitation/create': 'CreateElicitationResponse', 'terminal/create': 'CreateTerminalResponse', 'terminal/kill': 'KillTerminalResponse', 'fs/read_text_file': 'ReadTextFileResponse', 'terminal/release': 'ReleaseTerminalResponse', 'session/request_permission': 'RequestPermissionResponse', 'terminal/output': 'TerminalOutputResponse', 'terminal/wait_for_exit': 'WaitForTerminalExitResponse', 'fs/write_text_file': 'WriteTextFileResponse'}
CLIENT_NOTIFICATIONS: dict[str, str] = {'elicitation/complete': 'CompleteElicitationNotification', 'session/update': 'SessionNotification'}
PROTOCOL_NOTIFICATIONS: dict[str, str] = {'$/cancel_request': 'CancelRequestNotification'}

# The schema's definitions without their prose, as JSON (validate.py reads it on first use:
# a string loads at once where a dict literal this size costs milliseconds at every start).
DEFS_JSON = '{"AgentAuthCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"logout":{"anyOf":[{"$ref":"LogoutCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"AgentCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"auth":{"allOf":[{"$ref":"AgentAuthCapabilities"}],"x-deserialize-default-on-error":true},"loadSession":{"type":"boolean","x-deserialize-default-on-error":true},"mcpCapabilities":{"allOf":[{"$ref":"McpCapabilities"}],"x-deserialize-default-on-error":true},"promptCapabilities":{"allOf":[{"$ref":"PromptCapabilities"}],"x-deserialize-default-on-error":true},"sessionCapabilities":{"allOf":[{"$ref":"SessionCapabilities"}],"x-deserialize-default-on-error":true}},"type":"object"},"AgentNotification":{"properties":{"method":{"type":"string"},"params":{"anyOf":[{"anyOf":[{"allOf":[{"$ref":"SessionNotification"}]},{"allOf":[{"$ref":"CompleteElicitationNotification"}]},{"allOf":[{"$ref":"ExtNotification"}]}]},{"type":"null"}]}},"required":["method"],"type":"object"},"AgentRequest":{"properties":{"id":{"allOf":[{"$ref":"RequestId"}]},"method":{"type":"string"},"params":{"anyOf":[{"anyOf":[{"allOf":[{"$ref":"WriteTextFileRequest"}]},{"allOf":[{"$ref":"ReadTextFileRequest"}]},{"allOf":[{"$ref":"RequestPermissionRequest"}]},{"allOf":[{"$ref":"CreateTerminalRequest"}]},{"allOf":[{"$ref":"TerminalOutputRequest"}]},{"allOf":[{"$ref":"ReleaseTerminalRequest"}]},{"allOf":[{"$ref":"WaitForTerminalExitRequest"}]},{"allOf":[{"$ref":"KillTerminalRequest"}]},{"allOf":[{"$ref":"CreateElicitationRequest"}]},{"allOf":[{"$ref":"ExtRequest"}]}]},{"type":"null"}]}},"required":["id","method"],"type":"object"},"AgentResponse":{"anyOf":[{"properties":{"id":{"allOf":[{"$ref":"RequestId"}]},"result":{"anyOf":[{"allOf":[{"$ref":"InitializeResponse"}]},{"allOf":[{"$ref":"AuthenticateResponse"}]},{"allOf":[{"$ref":"LogoutResponse"}]},{"allOf":[{"$ref":"NewSessionResponse"}]},{"allOf":[{"$ref":"LoadSessionResponse"}]},{"allOf":[{"$ref":"ListSessionsResponse"}]},{"allOf":[{"$ref":"DeleteSessionResponse"}]},{"allOf":[{"$ref":"ResumeSessionResponse"}]},{"allOf":[{"$ref":"CloseSessionResponse"}]},{"allOf":[{"$ref":"SetSessionModeResponse"}]},{"allOf":[{"$ref":"SetSessionConfigOptionResponse"}]},{"allOf":[{"$ref":"PromptResponse"}]},{"allOf":[{"$ref":"ExtResponse"}]}]}},"required":["id","result"],"type":"object"},{"properties":{"error":{"allOf":[{"$ref":"Error"}]},"id":{"allOf":[{"$ref":"RequestId"}]}},"required":["id","error"],"type":"object"}]},"Annotations":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"audience":{"items":{"$ref":"Role"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"lastModified":{"type":["string","null"],"x-deserialize-default-on-error":true},"priority":{"type":["number","null"],"x-deserialize-default-on-error":true}},"type":"object"},"AudioContent":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"annotations":{"anyOf":[{"$ref":"Annotations"},{"type":"null"}],"x-deserialize-default-on-error":true},"data":{"type":"string"},"mimeType":{"type":"string"}},"required":["data","mimeType"],"type":"object"},"AuthCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"terminal":{"type":"boolean","x-deserialize-default-on-error":true}},"type":"object"},"AuthMethod":{"anyOf":[{"allOf":[{"$ref":"AuthMethodTerminal"}],"properties":{"type":{"const":"terminal","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"AuthMethodAgent"}]}]},"AuthMethodAgent":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"id":{"allOf":[{"$ref":"AuthMethodId"}]},"name":{"type":"string"}},"required":["id","name"],"type":"object"},"AuthMethodId":{"type":"string"},"AuthMethodTerminal":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"args":{"items":{"type":"string"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"env":{"type":"object","x-deserialize-default-on-error":true},"id":{"allOf":[{"$ref":"AuthMethodId"}]},"name":{"type":"string"}},"required":["id","name"],"type":"object"},"AuthenticateRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"methodId":{"allOf":[{"$ref":"AuthMethodId"}]}},"required":["methodId"],"type":"object"},"AuthenticateResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"AvailableCommand":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"description":{"type":"string"},"input":{"anyOf":[{"$ref":"AvailableCommandInput"},{"type":"null"}],"x-deserialize-default-on-error":true},"name":{"type":"string"}},"required":["name","description"],"type":"object"},"AvailableCommandInput":{"anyOf":[{"allOf":[{"$ref":"UnstructuredCommandInput"}]}]},"AvailableCommandsUpdate":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"availableCommands":{"items":{"$ref":"AvailableCommand"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["availableCommands"],"type":"object"},"BlobResourceContents":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"blob":{"type":"string"},"mimeType":{"type":["string","null"],"x-deserialize-default-on-error":true},"uri":{"type":"string"}},"required":["blob","uri"],"type":"object"},"BooleanConfigOptionCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"BooleanPropertySchema":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"default":{"type":["boolean","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"title":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"CancelNotification":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId"],"type":"object"},"CancelRequestNotification":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"requestId":{"allOf":[{"$ref":"RequestId"}]}},"required":["requestId"],"type":"object"},"ClientCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"auth":{"allOf":[{"$ref":"AuthCapabilities"}],"x-deserialize-default-on-error":true},"elicitation":{"anyOf":[{"$ref":"ElicitationCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"fs":{"allOf":[{"$ref":"FileSystemCapabilities"}],"x-deserialize-default-on-error":true},"session":{"anyOf":[{"$ref":"ClientSessionCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"terminal":{"type":"boolean","x-deserialize-default-on-error":true}},"type":"object"},"ClientNotification":{"properties":{"method":{"type":"string"},"params":{"anyOf":[{"anyOf":[{"allOf":[{"$ref":"CancelNotification"}]},{"allOf":[{"$ref":"ExtNotification"}]}]},{"type":"null"}]}},"required":["method"],"type":"object"},"ClientRequest":{"properties":{"id":{"allOf":[{"$ref":"RequestId"}]},"method":{"type":"string"},"params":{"anyOf":[{"anyOf":[{"allOf":[{"$ref":"InitializeRequest"}]},{"allOf":[{"$ref":"AuthenticateRequest"}]},{"allOf":[{"$ref":"LogoutRequest"}]},{"allOf":[{"$ref":"NewSessionRequest"}]},{"allOf":[{"$ref":"LoadSessionRequest"}]},{"allOf":[{"$ref":"ListSessionsRequest"}]},{"allOf":[{"$ref":"DeleteSessionRequest"}]},{"allOf":[{"$ref":"ResumeSessionRequest"}]},{"allOf":[{"$ref":"CloseSessionRequest"}]},{"allOf":[{"$ref":"SetSessionModeRequest"}]},{"allOf":[{"$ref":"SetSessionConfigOptionRequest"}]},{"allOf":[{"$ref":"PromptRequest"}]},{"allOf":[{"$ref":"ExtRequest"}]}]},{"type":"null"}]}},"required":["id","method"],"type":"object"},"ClientResponse":{"anyOf":[{"properties":{"id":{"allOf":[{"$ref":"RequestId"}]},"result":{"anyOf":[{"allOf":[{"$ref":"WriteTextFileResponse"}]},{"allOf":[{"$ref":"ReadTextFileResponse"}]},{"allOf":[{"$ref":"RequestPermissionResponse"}]},{"allOf":[{"$ref":"CreateTerminalResponse"}]},{"allOf":[{"$ref":"TerminalOutputResponse"}]},{"allOf":[{"$ref":"ReleaseTerminalResponse"}]},{"allOf":[{"$ref":"WaitForTerminalExitResponse"}]},{"allOf":[{"$ref":"KillTerminalResponse"}]},{"allOf":[{"$ref":"CreateElicitationResponse"}]},{"allOf":[{"$ref":"ExtResponse"}]}]}},"required":["id","result"],"type":"object"},{"properties":{"error":{"allOf":[{"$ref":"Error"}]},"id":{"allOf":[{"$ref":"RequestId"}]}},"required":["id","error"],"type":"object"}]},"ClientSessionCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configOptions":{"anyOf":[{"$ref":"SessionConfigOptionsCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"CloseSessionRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId"],"type":"object"},"CloseSessionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"CompleteElicitationNotification":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"elicitationId":{"allOf":[{"$ref":"ElicitationId"}]}},"required":["elicitationId"],"type":"object"},"ConfigOptionUpdate":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configOptions":{"items":{"$ref":"SessionConfigOption"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["configOptions"],"type":"object"},"Content":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"allOf":[{"$ref":"ContentBlock"}]}},"required":["content"],"type":"object"},"ContentBlock":{"discriminator":"type","oneOf":[{"allOf":[{"$ref":"TextContent"}],"properties":{"type":{"const":"text","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"ImageContent"}],"properties":{"type":{"const":"image","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"AudioContent"}],"properties":{"type":{"const":"audio","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"ResourceLink"}],"properties":{"type":{"const":"resource_link","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"EmbeddedResource"}],"properties":{"type":{"const":"resource","type":"string"}},"required":["type"],"type":"object"}]},"ContentChunk":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"allOf":[{"$ref":"ContentBlock"}]},"messageId":{"anyOf":[{"$ref":"MessageId"},{"type":"null"}],"x-deserialize-default-on-error":true}},"required":["content"],"type":"object"},"Cost":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"amount":{"type":"number"},"currency":{"type":"string"}},"required":["amount","currency"],"type":"object"},"CreateElicitationRequest":{"anyOf":[{"allOf":[{"$ref":"ElicitationFormMode"}],"properties":{"mode":{"const":"form","type":"string"}},"required":["mode"],"type":"object"},{"allOf":[{"$ref":"ElicitationUrlMode"}],"properties":{"mode":{"const":"url","type":"string"}},"required":["mode"],"type":"object"},{"anyOf":[{"allOf":[{"$ref":"ElicitationSessionScope"}]},{"allOf":[{"$ref":"ElicitationRequestScope"}]}],"properties":{"mode":{"type":"string"}},"required":["mode"],"type":"object"}],"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"message":{"type":"string"}},"required":["message"],"type":"object"},"CreateElicitationResponse":{"anyOf":[{"allOf":[{"$ref":"ElicitationAcceptAction"}],"properties":{"action":{"const":"accept","type":"string"}},"required":["action"],"type":"object"},{"properties":{"action":{"const":"decline","type":"string"}},"required":["action"],"type":"object"},{"properties":{"action":{"const":"cancel","type":"string"}},"required":["action"],"type":"object"},{"properties":{"action":{"type":"string"}},"required":["action"],"type":"object"}],"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"CreateTerminalRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"args":{"items":{"type":"string"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"command":{"type":"string"},"cwd":{"type":["string","null"],"x-deserialize-default-on-error":true},"env":{"items":{"$ref":"EnvVariable"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"outputByteLimit":{"minimum":0,"type":["integer","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","command"],"type":"object"},"CreateTerminalResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"terminalId":{"allOf":[{"$ref":"TerminalId"}]}},"required":["terminalId"],"type":"object"},"CurrentModeUpdate":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"currentModeId":{"allOf":[{"$ref":"SessionModeId"}]}},"required":["currentModeId"],"type":"object"},"DeleteSessionRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId"],"type":"object"},"DeleteSessionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"Diff":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"newText":{"type":"string"},"oldText":{"type":["string","null"],"x-deserialize-default-on-error":true},"path":{"type":"string"}},"required":["path","newText"],"type":"object"},"ElicitationAcceptAction":{"properties":{"content":{"type":["object","null"]}},"type":"object"},"ElicitationCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"form":{"anyOf":[{"$ref":"ElicitationFormCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"url":{"anyOf":[{"$ref":"ElicitationUrlCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"ElicitationContentValue":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"number"},{"type":"boolean"},{"items":{"type":"string"},"type":"array"}]},"ElicitationFormCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"ElicitationFormMode":{"anyOf":[{"allOf":[{"$ref":"ElicitationSessionScope"}]},{"allOf":[{"$ref":"ElicitationRequestScope"}]}],"properties":{"requestedSchema":{"allOf":[{"$ref":"ElicitationSchema"}]}},"required":["requestedSchema"],"type":"object"},"ElicitationId":{"type":"string"},"ElicitationPropertySchema":{"anyOf":[{"allOf":[{"$ref":"StringPropertySchema"}],"properties":{"type":{"const":"string","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"NumberPropertySchema"}],"properties":{"type":{"const":"number","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"IntegerPropertySchema"}],"properties":{"type":{"const":"integer","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"BooleanPropertySchema"}],"properties":{"type":{"const":"boolean","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"MultiSelectPropertySchema"}],"properties":{"type":{"const":"array","type":"string"}},"required":["type"],"type":"object"},{"properties":{"type":{"type":"string"}},"required":["type"],"type":"object"}]},"ElicitationRequestScope":{"properties":{"requestId":{"allOf":[{"$ref":"RequestId"}]}},"required":["requestId"],"type":"object"},"ElicitationSchema":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"properties":{"type":"object"},"required":{"items":{"type":"string"},"type":["array","null"]},"title":{"type":["string","null"],"x-deserialize-default-on-error":true},"type":{"allOf":[{"$ref":"ElicitationSchemaType"}],"x-deserialize-default-on-error":true}},"type":"object"},"ElicitationSchemaType":{"oneOf":[{"const":"object","type":"string"}]},"ElicitationSessionScope":{"properties":{"sessionId":{"allOf":[{"$ref":"SessionId"}]},"toolCallId":{"anyOf":[{"$ref":"ToolCallId"},{"type":"null"}],"x-deserialize-default-on-error":true}},"required":["sessionId"],"type":"object"},"ElicitationUrlCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"ElicitationUrlMode":{"anyOf":[{"allOf":[{"$ref":"ElicitationSessionScope"}]},{"allOf":[{"$ref":"ElicitationRequestScope"}]}],"properties":{"elicitationId":{"allOf":[{"$ref":"ElicitationId"}]},"url":{"type":"string"}},"required":["elicitationId","url"],"type":"object"},"EmbeddedResource":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"annotations":{"anyOf":[{"$ref":"Annotations"},{"type":"null"}],"x-deserialize-default-on-error":true},"resource":{"allOf":[{"$ref":"EmbeddedResourceResource"}]}},"required":["resource"],"type":"object"},"EmbeddedResourceResource":{"anyOf":[{"allOf":[{"$ref":"TextResourceContents"}]},{"allOf":[{"$ref":"BlobResourceContents"}]}]},"EnumOption":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"const":{"type":"string"},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"title":{"type":"string"}},"required":["const","title"],"type":"object"},"EnvVariable":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"name":{"type":"string"},"value":{"type":"string"}},"required":["name","value"],"type":"object"},"Error":{"properties":{"code":{"allOf":[{"$ref":"ErrorCode"}]},"data":{"x-deserialize-default-on-error":true},"message":{"type":"string"}},"required":["code","message"],"type":"object"},"ErrorCode":{"anyOf":[{"const":-32700,"type":"integer"},{"const":-32600,"type":"integer"},{"const":-32601,"type":"integer"},{"const":-32602,"type":"integer"},{"const":-32603,"type":"integer"},{"const":-32800,"type":"integer"},{"const":-32000,"type":"integer"},{"const":-32002,"type":"integer"},{"type":"integer"}]},"ExtNotification":{},"ExtRequest":{},"ExtResponse":{},"FileSystemCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"readTextFile":{"type":"boolean","x-deserialize-default-on-error":true},"writeTextFile":{"type":"boolean","x-deserialize-default-on-error":true}},"type":"object"},"HttpHeader":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"name":{"type":"string"},"value":{"type":"string"}},"required":["name","value"],"type":"object"},"ImageContent":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"annotations":{"anyOf":[{"$ref":"Annotations"},{"type":"null"}],"x-deserialize-default-on-error":true},"data":{"type":"string"},"mimeType":{"type":"string"},"uri":{"type":["string","null"],"x-deserialize-default-on-error":true}},"required":["data","mimeType"],"type":"object"},"Implementation":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"name":{"type":"string"},"title":{"type":["string","null"],"x-deserialize-default-on-error":true},"version":{"type":"string"}},"required":["name","version"],"type":"object"},"InitializeRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"clientCapabilities":{"allOf":[{"$ref":"ClientCapabilities"}],"x-deserialize-default-on-error":true},"clientInfo":{"anyOf":[{"$ref":"Implementation"},{"type":"null"}],"x-deserialize-default-on-error":true},"protocolVersion":{"allOf":[{"$ref":"ProtocolVersion"}]}},"required":["protocolVersion"],"type":"object"},"InitializeResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"agentCapabilities":{"allOf":[{"$ref":"AgentCapabilities"}],"x-deserialize-default-on-error":true},"agentInfo":{"anyOf":[{"$ref":"Implementation"},{"type":"null"}],"x-deserialize-default-on-error":true},"authMethods":{"items":{"$ref":"AuthMethod"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"protocolVersion":{"allOf":[{"$ref":"ProtocolVersion"}]}},"required":["protocolVersion"],"type":"object"},"IntegerPropertySchema":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"default":{"type":["integer","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"maximum":{"type":["integer","null"]},"minimum":{"type":["integer","null"]},"title":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"KillTerminalRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"terminalId":{"allOf":[{"$ref":"TerminalId"}]}},"required":["sessionId","terminalId"],"type":"object"},"KillTerminalResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"ListSessionsRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"cursor":{"type":["string","null"]},"cwd":{"type":["string","null"]}},"type":"object"},"ListSessionsResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"nextCursor":{"type":["string","null"],"x-deserialize-default-on-error":true},"sessions":{"items":{"$ref":"SessionInfo"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["sessions"],"type":"object"},"LoadSessionRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"additionalDirectories":{"items":{"type":"string"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"cwd":{"type":"string"},"mcpServers":{"items":{"$ref":"McpServer"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["mcpServers","cwd","sessionId"],"type":"object"},"LoadSessionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configOptions":{"items":{"$ref":"SessionConfigOption"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"modes":{"anyOf":[{"$ref":"SessionModeState"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"LogoutCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"LogoutRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"LogoutResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"McpCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"http":{"type":"boolean","x-deserialize-default-on-error":true},"sse":{"type":"boolean","x-deserialize-default-on-error":true}},"type":"object"},"McpServer":{"anyOf":[{"allOf":[{"$ref":"McpServerHttp"}],"properties":{"type":{"const":"http","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"McpServerSse"}],"properties":{"type":{"const":"sse","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"McpServerStdio"}]}]},"McpServerHttp":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"headers":{"items":{"$ref":"HttpHeader"},"type":"array"},"name":{"type":"string"},"url":{"type":"string"}},"required":["name","url","headers"],"type":"object"},"McpServerSse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"headers":{"items":{"$ref":"HttpHeader"},"type":"array"},"name":{"type":"string"},"url":{"type":"string"}},"required":["name","url","headers"],"type":"object"},"McpServerStdio":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"args":{"items":{"type":"string"},"type":"array"},"command":{"type":"string"},"env":{"items":{"$ref":"EnvVariable"},"type":"array"},"name":{"type":"string"}},"required":["name","command","args","env"],"type":"object"},"MessageId":{"type":"string"},"MultiSelectItems":{"anyOf":[{"allOf":[{"$ref":"StringMultiSelectItems"}],"properties":{"type":{"const":"string","type":"string"}},"required":["type"],"type":"object"},{"properties":{"type":{"type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"TitledMultiSelectItems"}]}]},"MultiSelectPropertySchema":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"default":{"items":{"type":"string"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"items":{"allOf":[{"$ref":"MultiSelectItems"}]},"maxItems":{"minimum":0,"type":["integer","null"]},"minItems":{"minimum":0,"type":["integer","null"]},"title":{"type":["string","null"],"x-deserialize-default-on-error":true}},"required":["items"],"type":"object"},"NewSessionRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"additionalDirectories":{"items":{"type":"string"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"cwd":{"type":"string"},"mcpServers":{"items":{"$ref":"McpServer"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["cwd","mcpServers"],"type":"object"},"NewSessionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configOptions":{"items":{"$ref":"SessionConfigOption"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"modes":{"anyOf":[{"$ref":"SessionModeState"},{"type":"null"}],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId"],"type":"object"},"NumberPropertySchema":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"default":{"type":["number","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"maximum":{"type":["number","null"]},"minimum":{"type":["number","null"]},"title":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"PermissionOption":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"kind":{"allOf":[{"$ref":"PermissionOptionKind"}]},"name":{"type":"string"},"optionId":{"allOf":[{"$ref":"PermissionOptionId"}]}},"required":["optionId","name","kind"],"type":"object"},"PermissionOptionId":{"type":"string"},"PermissionOptionKind":{"oneOf":[{"const":"allow_once","type":"string"},{"const":"allow_always","type":"string"},{"const":"reject_once","type":"string"},{"const":"reject_always","type":"string"}]},"Plan":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"entries":{"items":{"$ref":"PlanEntry"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["entries"],"type":"object"},"PlanEntry":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"type":"string"},"priority":{"allOf":[{"$ref":"PlanEntryPriority"}]},"status":{"allOf":[{"$ref":"PlanEntryStatus"}]}},"required":["content","priority","status"],"type":"object"},"PlanEntryPriority":{"oneOf":[{"const":"high","type":"string"},{"const":"medium","type":"string"},{"const":"low","type":"string"}]},"PlanEntryStatus":{"oneOf":[{"const":"pending","type":"string"},{"const":"in_progress","type":"string"},{"const":"completed","type":"string"}]},"PromptCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"audio":{"type":"boolean","x-deserialize-default-on-error":true},"embeddedContext":{"type":"boolean","x-deserialize-default-on-error":true},"image":{"type":"boolean","x-deserialize-default-on-error":true}},"type":"object"},"PromptRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"prompt":{"items":{"$ref":"ContentBlock"},"type":"array"},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","prompt"],"type":"object"},"PromptResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"stopReason":{"allOf":[{"$ref":"StopReason"}]}},"required":["stopReason"],"type":"object"},"ProtocolVersion":{"maximum":65535,"minimum":0,"type":"integer"},"ReadTextFileRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"limit":{"minimum":0,"type":["integer","null"],"x-deserialize-default-on-error":true},"line":{"minimum":0,"type":["integer","null"],"x-deserialize-default-on-error":true},"path":{"type":"string"},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","path"],"type":"object"},"ReadTextFileResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"type":"string"}},"required":["content"],"type":"object"},"ReleaseTerminalRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"terminalId":{"allOf":[{"$ref":"TerminalId"}]}},"required":["sessionId","terminalId"],"type":"object"},"ReleaseTerminalResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"RequestId":{"anyOf":[{"type":"null"},{"type":"integer"},{"type":"string"}]},"RequestPermissionOutcome":{"discriminator":"outcome","oneOf":[{"properties":{"outcome":{"const":"cancelled","type":"string"}},"required":["outcome"],"type":"object"},{"allOf":[{"$ref":"SelectedPermissionOutcome"}],"properties":{"outcome":{"const":"selected","type":"string"}},"required":["outcome"],"type":"object"}]},"RequestPermissionRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"options":{"items":{"$ref":"PermissionOption"},"type":"array"},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"toolCall":{"allOf":[{"$ref":"ToolCallUpdate"}]}},"required":["sessionId","toolCall","options"],"type":"object"},"RequestPermissionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"outcome":{"allOf":[{"$ref":"RequestPermissionOutcome"}]}},"required":["outcome"],"type":"object"},"ResourceLink":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"annotations":{"anyOf":[{"$ref":"Annotations"},{"type":"null"}],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"mimeType":{"type":["string","null"],"x-deserialize-default-on-error":true},"name":{"type":"string"},"size":{"type":["integer","null"],"x-deserialize-default-on-error":true},"title":{"type":["string","null"],"x-deserialize-default-on-error":true},"uri":{"type":"string"}},"required":["name","uri"],"type":"object"},"ResumeSessionRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"additionalDirectories":{"items":{"type":"string"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"cwd":{"type":"string"},"mcpServers":{"items":{"$ref":"McpServer"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","cwd"],"type":"object"},"ResumeSessionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configOptions":{"items":{"$ref":"SessionConfigOption"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"modes":{"anyOf":[{"$ref":"SessionModeState"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"Role":{"oneOf":[{"const":"assistant","type":"string"},{"const":"user","type":"string"}]},"SelectedPermissionOutcome":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"optionId":{"allOf":[{"$ref":"PermissionOptionId"}]}},"required":["optionId"],"type":"object"},"SessionAdditionalDirectoriesCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"SessionCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"additionalDirectories":{"anyOf":[{"$ref":"SessionAdditionalDirectoriesCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"close":{"anyOf":[{"$ref":"SessionCloseCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"delete":{"anyOf":[{"$ref":"SessionDeleteCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"list":{"anyOf":[{"$ref":"SessionListCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true},"resume":{"anyOf":[{"$ref":"SessionResumeCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"SessionCloseCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"SessionConfigBoolean":{"properties":{"currentValue":{"type":"boolean"}},"required":["currentValue"],"type":"object"},"SessionConfigGroupId":{"type":"string"},"SessionConfigId":{"type":"string"},"SessionConfigOption":{"discriminator":"type","oneOf":[{"allOf":[{"$ref":"SessionConfigSelect"}],"properties":{"type":{"const":"select","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"SessionConfigBoolean"}],"properties":{"type":{"const":"boolean","type":"string"}},"required":["type"],"type":"object"}],"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"category":{"anyOf":[{"$ref":"SessionConfigOptionCategory"},{"type":"null"}],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"id":{"allOf":[{"$ref":"SessionConfigId"}]},"name":{"type":"string"}},"required":["id","name"],"type":"object"},"SessionConfigOptionCategory":{"anyOf":[{"const":"mode","type":"string"},{"const":"model","type":"string"},{"const":"model_config","type":"string"},{"const":"thought_level","type":"string"},{"type":"string"}]},"SessionConfigOptionsCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"boolean":{"anyOf":[{"$ref":"BooleanConfigOptionCapabilities"},{"type":"null"}],"x-deserialize-default-on-error":true}},"type":"object"},"SessionConfigSelect":{"properties":{"currentValue":{"allOf":[{"$ref":"SessionConfigValueId"}]},"options":{"allOf":[{"$ref":"SessionConfigSelectOptions"}]}},"required":["currentValue","options"],"type":"object"},"SessionConfigSelectGroup":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"group":{"allOf":[{"$ref":"SessionConfigGroupId"}]},"name":{"type":"string"},"options":{"items":{"$ref":"SessionConfigSelectOption"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["group","name","options"],"type":"object"},"SessionConfigSelectOption":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"name":{"type":"string"},"value":{"allOf":[{"$ref":"SessionConfigValueId"}]}},"required":["value","name"],"type":"object"},"SessionConfigSelectOptions":{"anyOf":[{"items":{"$ref":"SessionConfigSelectOption"},"type":"array"},{"items":{"$ref":"SessionConfigSelectGroup"},"type":"array"}]},"SessionConfigValueId":{"type":"string"},"SessionDeleteCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"SessionId":{"type":"string"},"SessionInfo":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"additionalDirectories":{"items":{"type":"string"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"cwd":{"type":"string"},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"title":{"type":["string","null"],"x-deserialize-default-on-error":true},"updatedAt":{"type":["string","null"],"x-deserialize-default-on-error":true}},"required":["sessionId","cwd"],"type":"object"},"SessionInfoUpdate":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"title":{"type":["string","null"],"x-deserialize-default-on-error":true},"updatedAt":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"SessionListCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"SessionMode":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"id":{"allOf":[{"$ref":"SessionModeId"}]},"name":{"type":"string"}},"required":["id","name"],"type":"object"},"SessionModeId":{"type":"string"},"SessionModeState":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"availableModes":{"items":{"$ref":"SessionMode"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"currentModeId":{"allOf":[{"$ref":"SessionModeId"}]}},"required":["currentModeId","availableModes"],"type":"object"},"SessionNotification":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"update":{"allOf":[{"$ref":"SessionUpdate"}]}},"required":["sessionId","update"],"type":"object"},"SessionResumeCapabilities":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"SessionUpdate":{"discriminator":"sessionUpdate","oneOf":[{"allOf":[{"$ref":"ContentChunk"}],"properties":{"sessionUpdate":{"const":"user_message_chunk","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"ContentChunk"}],"properties":{"sessionUpdate":{"const":"agent_message_chunk","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"ContentChunk"}],"properties":{"sessionUpdate":{"const":"agent_thought_chunk","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"ToolCall"}],"properties":{"sessionUpdate":{"const":"tool_call","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"ToolCallUpdate"}],"properties":{"sessionUpdate":{"const":"tool_call_update","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"Plan"}],"properties":{"sessionUpdate":{"const":"plan","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"AvailableCommandsUpdate"}],"properties":{"sessionUpdate":{"const":"available_commands_update","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"CurrentModeUpdate"}],"properties":{"sessionUpdate":{"const":"current_mode_update","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"ConfigOptionUpdate"}],"properties":{"sessionUpdate":{"const":"config_option_update","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"SessionInfoUpdate"}],"properties":{"sessionUpdate":{"const":"session_info_update","type":"string"}},"required":["sessionUpdate"],"type":"object"},{"allOf":[{"$ref":"UsageUpdate"}],"properties":{"sessionUpdate":{"const":"usage_update","type":"string"}},"required":["sessionUpdate"],"type":"object"}]},"SetSessionConfigOptionRequest":{"anyOf":[{"properties":{"type":{"const":"boolean","type":"string"},"value":{"type":"boolean"}},"required":["type","value"],"type":"object"},{"properties":{"value":{"allOf":[{"$ref":"SessionConfigValueId"}]}},"required":["value"],"type":"object"}],"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configId":{"allOf":[{"$ref":"SessionConfigId"}]},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","configId"],"type":"object"},"SetSessionConfigOptionResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"configOptions":{"items":{"$ref":"SessionConfigOption"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true}},"required":["configOptions"],"type":"object"},"SetSessionModeRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"modeId":{"allOf":[{"$ref":"SessionModeId"}]},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","modeId"],"type":"object"},"SetSessionModeResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"},"StopReason":{"oneOf":[{"const":"end_turn","type":"string"},{"const":"max_tokens","type":"string"},{"const":"max_turn_requests","type":"string"},{"const":"refusal","type":"string"},{"const":"cancelled","type":"string"}]},"StringFormat":{"oneOf":[{"const":"email","type":"string"},{"const":"uri","type":"string"},{"const":"date","type":"string"},{"const":"date-time","type":"string"}]},"StringMultiSelectItems":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"enum":{"items":{"type":"string"},"type":"array"}},"required":["enum"],"type":"object"},"StringPropertySchema":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"default":{"type":["string","null"],"x-deserialize-default-on-error":true},"description":{"type":["string","null"],"x-deserialize-default-on-error":true},"enum":{"items":{"type":"string"},"type":["array","null"]},"format":{"anyOf":[{"$ref":"StringFormat"},{"type":"null"}]},"maxLength":{"minimum":0,"type":["integer","null"]},"minLength":{"minimum":0,"type":["integer","null"]},"oneOf":{"items":{"$ref":"EnumOption"},"type":["array","null"]},"pattern":{"type":["string","null"]},"title":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"Terminal":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"terminalId":{"allOf":[{"$ref":"TerminalId"}]}},"required":["terminalId"],"type":"object"},"TerminalExitStatus":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"exitCode":{"minimum":0,"type":["integer","null"],"x-deserialize-default-on-error":true},"signal":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"TerminalId":{"type":"string"},"TerminalOutputRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"terminalId":{"allOf":[{"$ref":"TerminalId"}]}},"required":["sessionId","terminalId"],"type":"object"},"TerminalOutputResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"exitStatus":{"anyOf":[{"$ref":"TerminalExitStatus"},{"type":"null"}],"x-deserialize-default-on-error":true},"output":{"type":"string"},"truncated":{"type":"boolean"}},"required":["output","truncated"],"type":"object"},"TextContent":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"annotations":{"anyOf":[{"$ref":"Annotations"},{"type":"null"}],"x-deserialize-default-on-error":true},"text":{"type":"string"}},"required":["text"],"type":"object"},"TextResourceContents":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"mimeType":{"type":["string","null"],"x-deserialize-default-on-error":true},"text":{"type":"string"},"uri":{"type":"string"}},"required":["text","uri"],"type":"object"},"TitledMultiSelectItems":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"anyOf":{"items":{"$ref":"EnumOption"},"type":"array"}},"required":["anyOf"],"type":"object"},"ToolCall":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"items":{"$ref":"ToolCallContent"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"kind":{"allOf":[{"$ref":"ToolKind"}],"x-deserialize-default-on-error":true},"locations":{"items":{"$ref":"ToolCallLocation"},"type":"array","x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"rawInput":{"x-deserialize-default-on-error":true},"rawOutput":{"x-deserialize-default-on-error":true},"status":{"allOf":[{"$ref":"ToolCallStatus"}],"x-deserialize-default-on-error":true},"title":{"type":"string"},"toolCallId":{"allOf":[{"$ref":"ToolCallId"}]}},"required":["toolCallId","title"],"type":"object"},"ToolCallContent":{"discriminator":"type","oneOf":[{"allOf":[{"$ref":"Content"}],"properties":{"type":{"const":"content","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"Diff"}],"properties":{"type":{"const":"diff","type":"string"}},"required":["type"],"type":"object"},{"allOf":[{"$ref":"Terminal"}],"properties":{"type":{"const":"terminal","type":"string"}},"required":["type"],"type":"object"}]},"ToolCallId":{"type":"string"},"ToolCallLocation":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"line":{"minimum":0,"type":["integer","null"],"x-deserialize-default-on-error":true},"path":{"type":"string"}},"required":["path"],"type":"object"},"ToolCallStatus":{"oneOf":[{"const":"pending","type":"string"},{"const":"in_progress","type":"string"},{"const":"completed","type":"string"},{"const":"failed","type":"string"}]},"ToolCallUpdate":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"items":{"$ref":"ToolCallContent"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"kind":{"anyOf":[{"$ref":"ToolKind"},{"type":"null"}],"x-deserialize-default-on-error":true},"locations":{"items":{"$ref":"ToolCallLocation"},"type":["array","null"],"x-deserialize-default-on-error":true,"x-deserialize-skip-invalid-items":true},"rawInput":{"x-deserialize-default-on-error":true},"rawOutput":{"x-deserialize-default-on-error":true},"status":{"anyOf":[{"$ref":"ToolCallStatus"},{"type":"null"}],"x-deserialize-default-on-error":true},"title":{"type":["string","null"],"x-deserialize-default-on-error":true},"toolCallId":{"allOf":[{"$ref":"ToolCallId"}]}},"required":["toolCallId"],"type":"object"},"ToolKind":{"oneOf":[{"const":"read","type":"string"},{"const":"edit","type":"string"},{"const":"delete","type":"string"},{"const":"move","type":"string"},{"const":"search","type":"string"},{"const":"execute","type":"string"},{"const":"think","type":"string"},{"const":"fetch","type":"string"},{"const":"switch_mode","type":"string"},{"const":"other","type":"string"}]},"UnstructuredCommandInput":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"hint":{"type":"string"}},"required":["hint"],"type":"object"},"UsageUpdate":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"cost":{"anyOf":[{"$ref":"Cost"},{"type":"null"}],"x-deserialize-default-on-error":true},"size":{"minimum":0,"type":"integer"},"used":{"minimum":0,"type":"integer"}},"required":["used","size"],"type":"object"},"WaitForTerminalExitRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"sessionId":{"allOf":[{"$ref":"SessionId"}]},"terminalId":{"allOf":[{"$ref":"TerminalId"}]}},"required":["sessionId","terminalId"],"type":"object"},"WaitForTerminalExitResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"exitCode":{"minimum":0,"type":["integer","null"],"x-deserialize-default-on-error":true},"signal":{"type":["string","null"],"x-deserialize-default-on-error":true}},"type":"object"},"WriteTextFileRequest":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true},"content":{"type":"string"},"path":{"type":"string"},"sessionId":{"allOf":[{"$ref":"SessionId"}]}},"required":["sessionId","path","content"],"type":"object"},"WriteTextFileResponse":{"properties":{"_meta":{"type":["object","null"],"x-deserialize-default-on-error":true}},"type":"object"}}'

if TYPE_CHECKING:
    from typing import Any, Literal, Required, TypeAlias, TypedDict

    class AgentAuthCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        logout: LogoutCapabilities | None
    class AgentCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        auth: AgentAuthCapabilities
        loadSession: bool
        mcpCapabilities: McpCapabilities
        promptCapabilities: PromptCapabilities
        sessionCapabilities: SessionCapabilities
    class AgentNotification(TypedDict, total=False):
        method: Required[str]
        params: SessionNotification | CompleteElicitationNotification | ExtNotification | None
    class AgentRequest(TypedDict, total=False):
        id: Required[RequestId]
        method: Required[str]
        params: WriteTextFileRequest | ReadTextFileRequest | RequestPermissionRequest | CreateTerminalRequest | TerminalOutputRequest | ReleaseTerminalRequest | WaitForTerminalExitRequest | KillTerminalRequest | CreateElicitationRequest | ExtRequest | None
    AgentResponse: TypeAlias = 'dict[str, Any]'
    class Annotations(TypedDict, total=False):
        _meta: dict[str, Any] | None
        audience: list[Role] | None
        lastModified: str | None
        priority: float | None
    class AudioContent(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        data: Required[str]
        mimeType: Required[str]
    class AuthCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        terminal: bool
    class AuthMethodTerminal(TypedDict, total=False):
        _meta: dict[str, Any] | None
        args: list[str]
        description: str | None
        env: dict[str, Any]
        id: Required[AuthMethodId]
        name: Required[str]
        type: Required[Literal['terminal']]
    AuthMethod: TypeAlias = 'AuthMethodTerminal | AuthMethodAgent'
    class AuthMethodAgent(TypedDict, total=False):
        _meta: dict[str, Any] | None
        description: str | None
        id: Required[AuthMethodId]
        name: Required[str]
    AuthMethodId: TypeAlias = 'str'
    class AuthenticateRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        methodId: Required[AuthMethodId]
    class AuthenticateResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class AvailableCommand(TypedDict, total=False):
        _meta: dict[str, Any] | None
        description: Required[str]
        input: AvailableCommandInput | None
        name: Required[str]
    AvailableCommandInput: TypeAlias = 'UnstructuredCommandInput'
    class AvailableCommandsUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        availableCommands: Required[list[AvailableCommand]]
    class BlobResourceContents(TypedDict, total=False):
        _meta: dict[str, Any] | None
        blob: Required[str]
        mimeType: str | None
        uri: Required[str]
    class BooleanConfigOptionCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class BooleanPropertySchema(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: bool | None
        description: str | None
        title: str | None
    class CancelNotification(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
    class CancelRequestNotification(TypedDict, total=False):
        _meta: dict[str, Any] | None
        requestId: Required[RequestId]
    class ClientCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        auth: AuthCapabilities
        elicitation: ElicitationCapabilities | None
        fs: FileSystemCapabilities
        session: ClientSessionCapabilities | None
        terminal: bool
    class ClientNotification(TypedDict, total=False):
        method: Required[str]
        params: CancelNotification | ExtNotification | None
    class ClientRequest(TypedDict, total=False):
        id: Required[RequestId]
        method: Required[str]
        params: InitializeRequest | AuthenticateRequest | LogoutRequest | NewSessionRequest | LoadSessionRequest | ListSessionsRequest | DeleteSessionRequest | ResumeSessionRequest | CloseSessionRequest | SetSessionModeRequest | SetSessionConfigOptionRequest | PromptRequest | ExtRequest | None
    ClientResponse: TypeAlias = 'dict[str, Any]'
    class ClientSessionCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: SessionConfigOptionsCapabilities | None
    class CloseSessionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
    class CloseSessionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class CompleteElicitationNotification(TypedDict, total=False):
        _meta: dict[str, Any] | None
        elicitationId: Required[ElicitationId]
    class ConfigOptionUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: Required[list[SessionConfigOption]]
    class Content(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[ContentBlock]
    class ContentBlockText(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        text: Required[str]
        type: Required[Literal['text']]
    class ContentBlockImage(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        data: Required[str]
        mimeType: Required[str]
        uri: str | None
        type: Required[Literal['image']]
    class ContentBlockAudio(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        data: Required[str]
        mimeType: Required[str]
        type: Required[Literal['audio']]
    class ContentBlockResourceLink(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        description: str | None
        mimeType: str | None
        name: Required[str]
        size: int | None
        title: str | None
        uri: Required[str]
        type: Required[Literal['resource_link']]
    class ContentBlockResource(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        resource: Required[EmbeddedResourceResource]
        type: Required[Literal['resource']]
    ContentBlock: TypeAlias = 'ContentBlockText | ContentBlockImage | ContentBlockAudio | ContentBlockResourceLink | ContentBlockResource'
    class ContentChunk(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[ContentBlock]
        messageId: MessageId | None
    class Cost(TypedDict, total=False):
        _meta: dict[str, Any] | None
        amount: Required[float]
        currency: Required[str]
    class CreateElicitationRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        message: Required[str]
        requestedSchema: ElicitationSchema
        mode: Literal['form']
        elicitationId: ElicitationId
        url: str
    class CreateElicitationResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: dict[str, Any] | None
        action: Literal['accept']
    class CreateTerminalRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        args: list[str]
        command: Required[str]
        cwd: str | None
        env: list[EnvVariable]
        outputByteLimit: int | None
        sessionId: Required[SessionId]
    class CreateTerminalResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        terminalId: Required[TerminalId]
    class CurrentModeUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        currentModeId: Required[SessionModeId]
    class DeleteSessionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
    class DeleteSessionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class Diff(TypedDict, total=False):
        _meta: dict[str, Any] | None
        newText: Required[str]
        oldText: str | None
        path: Required[str]
    class ElicitationAcceptAction(TypedDict, total=False):
        content: dict[str, Any] | None
    class ElicitationCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        form: ElicitationFormCapabilities | None
        url: ElicitationUrlCapabilities | None
    ElicitationContentValue: TypeAlias = 'str | int | float | bool | list[str]'
    class ElicitationFormCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class ElicitationFormMode(TypedDict, total=False):
        requestedSchema: Required[ElicitationSchema]
        sessionId: SessionId
        toolCallId: ToolCallId | None
        requestId: RequestId
    ElicitationId: TypeAlias = 'str'
    class ElicitationPropertySchemaString(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: str | None
        description: str | None
        enum: list[str] | None
        format: StringFormat | None
        maxLength: int | None
        minLength: int | None
        oneOf: list[EnumOption] | None
        pattern: str | None
        title: str | None
        type: Required[Literal['string']]
    class ElicitationPropertySchemaNumber(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: float | None
        description: str | None
        maximum: float | None
        minimum: float | None
        title: str | None
        type: Required[Literal['number']]
    class ElicitationPropertySchemaInteger(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: int | None
        description: str | None
        maximum: int | None
        minimum: int | None
        title: str | None
        type: Required[Literal['integer']]
    class ElicitationPropertySchemaBoolean(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: bool | None
        description: str | None
        title: str | None
        type: Required[Literal['boolean']]
    class ElicitationPropertySchemaArray(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: list[str] | None
        description: str | None
        items: Required[MultiSelectItems]
        maxItems: int | None
        minItems: int | None
        title: str | None
        type: Required[Literal['array']]
    ElicitationPropertySchema: TypeAlias = 'ElicitationPropertySchemaString | ElicitationPropertySchemaNumber | ElicitationPropertySchemaInteger | ElicitationPropertySchemaBoolean | ElicitationPropertySchemaArray | dict[str, Any]'
    class ElicitationRequestScope(TypedDict, total=False):
        requestId: Required[RequestId]
    class ElicitationSchema(TypedDict, total=False):
        _meta: dict[str, Any] | None
        description: str | None
        properties: dict[str, Any]
        required: list[str] | None
        title: str | None
        type: ElicitationSchemaType
    ElicitationSchemaType: TypeAlias = "Literal['object']"
    class ElicitationSessionScope(TypedDict, total=False):
        sessionId: Required[SessionId]
        toolCallId: ToolCallId | None
    class ElicitationUrlCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class ElicitationUrlMode(TypedDict, total=False):
        elicitationId: Required[ElicitationId]
        url: Required[str]
        sessionId: SessionId
        toolCallId: ToolCallId | None
        requestId: RequestId
    class EmbeddedResource(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        resource: Required[EmbeddedResourceResource]
    EmbeddedResourceResource: TypeAlias = 'TextResourceContents | BlobResourceContents'
    class EnumOption(TypedDict, total=False):
        _meta: dict[str, Any] | None
        const: Required[str]
        description: str | None
        title: Required[str]
    class EnvVariable(TypedDict, total=False):
        _meta: dict[str, Any] | None
        name: Required[str]
        value: Required[str]
    class Error(TypedDict, total=False):
        code: Required[ErrorCode]
        data: Any
        message: Required[str]
    ErrorCode: TypeAlias = 'Literal[-32700] | Literal[-32600] | Literal[-32601] | Literal[-32602] | Literal[-32603] | Literal[-32800] | Literal[-32000] | Literal[-32002] | int'
    ExtNotification: TypeAlias = 'Any'
    ExtRequest: TypeAlias = 'Any'
    ExtResponse: TypeAlias = 'Any'
    class FileSystemCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        readTextFile: bool
        writeTextFile: bool
    class HttpHeader(TypedDict, total=False):
        _meta: dict[str, Any] | None
        name: Required[str]
        value: Required[str]
    class ImageContent(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        data: Required[str]
        mimeType: Required[str]
        uri: str | None
    class Implementation(TypedDict, total=False):
        _meta: dict[str, Any] | None
        name: Required[str]
        title: str | None
        version: Required[str]
    class InitializeRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        clientCapabilities: ClientCapabilities
        clientInfo: Implementation | None
        protocolVersion: Required[ProtocolVersion]
    class InitializeResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        agentCapabilities: AgentCapabilities
        agentInfo: Implementation | None
        authMethods: list[AuthMethod]
        protocolVersion: Required[ProtocolVersion]
    class IntegerPropertySchema(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: int | None
        description: str | None
        maximum: int | None
        minimum: int | None
        title: str | None
    class KillTerminalRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
        terminalId: Required[TerminalId]
    class KillTerminalResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class ListSessionsRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        cursor: str | None
        cwd: str | None
    class ListSessionsResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        nextCursor: str | None
        sessions: Required[list[SessionInfo]]
    class LoadSessionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        additionalDirectories: list[str]
        cwd: Required[str]
        mcpServers: Required[list[McpServer]]
        sessionId: Required[SessionId]
    class LoadSessionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: list[SessionConfigOption] | None
        modes: SessionModeState | None
    class LogoutCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class LogoutRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class LogoutResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class McpCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        http: bool
        sse: bool
    class McpServerHttp(TypedDict, total=False):
        _meta: dict[str, Any] | None
        headers: Required[list[HttpHeader]]
        name: Required[str]
        url: Required[str]
        type: Required[Literal['http']]
    class McpServerSse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        headers: Required[list[HttpHeader]]
        name: Required[str]
        url: Required[str]
        type: Required[Literal['sse']]
    McpServer: TypeAlias = 'McpServerHttp | McpServerSse | McpServerStdio'
    class McpServerStdio(TypedDict, total=False):
        _meta: dict[str, Any] | None
        args: Required[list[str]]
        command: Required[str]
        env: Required[list[EnvVariable]]
        name: Required[str]
    MessageId: TypeAlias = 'str'
    class MultiSelectItemsString(TypedDict, total=False):
        _meta: dict[str, Any] | None
        enum: Required[list[str]]
        type: Required[Literal['string']]
    MultiSelectItems: TypeAlias = 'MultiSelectItemsString | dict[str, Any] | TitledMultiSelectItems'
    class MultiSelectPropertySchema(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: list[str] | None
        description: str | None
        items: Required[MultiSelectItems]
        maxItems: int | None
        minItems: int | None
        title: str | None
    class NewSessionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        additionalDirectories: list[str]
        cwd: Required[str]
        mcpServers: Required[list[McpServer]]
    class NewSessionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: list[SessionConfigOption] | None
        modes: SessionModeState | None
        sessionId: Required[SessionId]
    class NumberPropertySchema(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: float | None
        description: str | None
        maximum: float | None
        minimum: float | None
        title: str | None
    class PermissionOption(TypedDict, total=False):
        _meta: dict[str, Any] | None
        kind: Required[PermissionOptionKind]
        name: Required[str]
        optionId: Required[PermissionOptionId]
    PermissionOptionId: TypeAlias = 'str'
    PermissionOptionKind: TypeAlias = "Literal['allow_once', 'allow_always', 'reject_once', 'reject_always']"
    class Plan(TypedDict, total=False):
        _meta: dict[str, Any] | None
        entries: Required[list[PlanEntry]]
    class PlanEntry(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[str]
        priority: Required[PlanEntryPriority]
        status: Required[PlanEntryStatus]
    PlanEntryPriority: TypeAlias = "Literal['high', 'medium', 'low']"
    PlanEntryStatus: TypeAlias = "Literal['pending', 'in_progress', 'completed']"
    class PromptCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        audio: bool
        embeddedContext: bool
        image: bool
    class PromptRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        prompt: Required[list[ContentBlock]]
        sessionId: Required[SessionId]
    class PromptResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        stopReason: Required[StopReason]
    ProtocolVersion: TypeAlias = 'int'
    class ReadTextFileRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        limit: int | None
        line: int | None
        path: Required[str]
        sessionId: Required[SessionId]
    class ReadTextFileResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[str]
    class ReleaseTerminalRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
        terminalId: Required[TerminalId]
    class ReleaseTerminalResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    RequestId: TypeAlias = 'None | int | str'
    class RequestPermissionOutcomeCancelled(TypedDict, total=False):
        outcome: Required[Literal['cancelled']]
    class RequestPermissionOutcomeSelected(TypedDict, total=False):
        _meta: dict[str, Any] | None
        optionId: Required[PermissionOptionId]
        outcome: Required[Literal['selected']]
    RequestPermissionOutcome: TypeAlias = 'RequestPermissionOutcomeCancelled | RequestPermissionOutcomeSelected'
    class RequestPermissionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        options: Required[list[PermissionOption]]
        sessionId: Required[SessionId]
        toolCall: Required[ToolCallUpdate]
    class RequestPermissionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        outcome: Required[RequestPermissionOutcome]
    class ResourceLink(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        description: str | None
        mimeType: str | None
        name: Required[str]
        size: int | None
        title: str | None
        uri: Required[str]
    class ResumeSessionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        additionalDirectories: list[str]
        cwd: Required[str]
        mcpServers: list[McpServer]
        sessionId: Required[SessionId]
    class ResumeSessionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: list[SessionConfigOption] | None
        modes: SessionModeState | None
    Role: TypeAlias = "Literal['assistant', 'user']"
    class SelectedPermissionOutcome(TypedDict, total=False):
        _meta: dict[str, Any] | None
        optionId: Required[PermissionOptionId]
    class SessionAdditionalDirectoriesCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class SessionCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        additionalDirectories: SessionAdditionalDirectoriesCapabilities | None
        close: SessionCloseCapabilities | None
        delete: SessionDeleteCapabilities | None
        list: SessionListCapabilities | None
        resume: SessionResumeCapabilities | None
    class SessionCloseCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class SessionConfigBoolean(TypedDict, total=False):
        currentValue: Required[bool]
    SessionConfigGroupId: TypeAlias = 'str'
    SessionConfigId: TypeAlias = 'str'
    class SessionConfigOption(TypedDict, total=False):
        _meta: dict[str, Any] | None
        category: SessionConfigOptionCategory | None
        description: str | None
        id: Required[SessionConfigId]
        name: Required[str]
        currentValue: SessionConfigValueId
        options: SessionConfigSelectOptions
        type: Literal['select']
    SessionConfigOptionCategory: TypeAlias = "Literal['mode'] | Literal['model'] | Literal['model_config'] | Literal['thought_level'] | str"
    class SessionConfigOptionsCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
        boolean: BooleanConfigOptionCapabilities | None
    class SessionConfigSelect(TypedDict, total=False):
        currentValue: Required[SessionConfigValueId]
        options: Required[SessionConfigSelectOptions]
    class SessionConfigSelectGroup(TypedDict, total=False):
        _meta: dict[str, Any] | None
        group: Required[SessionConfigGroupId]
        name: Required[str]
        options: Required[list[SessionConfigSelectOption]]
    class SessionConfigSelectOption(TypedDict, total=False):
        _meta: dict[str, Any] | None
        description: str | None
        name: Required[str]
        value: Required[SessionConfigValueId]
    SessionConfigSelectOptions: TypeAlias = 'list[SessionConfigSelectOption] | list[SessionConfigSelectGroup]'
    SessionConfigValueId: TypeAlias = 'str'
    class SessionDeleteCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    SessionId: TypeAlias = 'str'
    class SessionInfo(TypedDict, total=False):
        _meta: dict[str, Any] | None
        additionalDirectories: list[str]
        cwd: Required[str]
        sessionId: Required[SessionId]
        title: str | None
        updatedAt: str | None
    class SessionInfoUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        title: str | None
        updatedAt: str | None
    class SessionListCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class SessionMode(TypedDict, total=False):
        _meta: dict[str, Any] | None
        description: str | None
        id: Required[SessionModeId]
        name: Required[str]
    SessionModeId: TypeAlias = 'str'
    class SessionModeState(TypedDict, total=False):
        _meta: dict[str, Any] | None
        availableModes: Required[list[SessionMode]]
        currentModeId: Required[SessionModeId]
    class SessionNotification(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
        update: Required[SessionUpdate]
    class SessionResumeCapabilities(TypedDict, total=False):
        _meta: dict[str, Any] | None
    class SessionUpdateUserMessageChunk(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[ContentBlock]
        messageId: MessageId | None
        sessionUpdate: Required[Literal['user_message_chunk']]
    class SessionUpdateAgentMessageChunk(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[ContentBlock]
        messageId: MessageId | None
        sessionUpdate: Required[Literal['agent_message_chunk']]
    class SessionUpdateAgentThoughtChunk(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[ContentBlock]
        messageId: MessageId | None
        sessionUpdate: Required[Literal['agent_thought_chunk']]
    class SessionUpdateToolCall(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: list[ToolCallContent]
        kind: ToolKind
        locations: list[ToolCallLocation]
        rawInput: Any
        rawOutput: Any
        status: ToolCallStatus
        title: Required[str]
        toolCallId: Required[ToolCallId]
        sessionUpdate: Required[Literal['tool_call']]
    class SessionUpdateToolCallUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: list[ToolCallContent] | None
        kind: ToolKind | None
        locations: list[ToolCallLocation] | None
        rawInput: Any
        rawOutput: Any
        status: ToolCallStatus | None
        title: str | None
        toolCallId: Required[ToolCallId]
        sessionUpdate: Required[Literal['tool_call_update']]
    class SessionUpdatePlan(TypedDict, total=False):
        _meta: dict[str, Any] | None
        entries: Required[list[PlanEntry]]
        sessionUpdate: Required[Literal['plan']]
    class SessionUpdateAvailableCommandsUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        availableCommands: Required[list[AvailableCommand]]
        sessionUpdate: Required[Literal['available_commands_update']]
    class SessionUpdateCurrentModeUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        currentModeId: Required[SessionModeId]
        sessionUpdate: Required[Literal['current_mode_update']]
    class SessionUpdateConfigOptionUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: Required[list[SessionConfigOption]]
        sessionUpdate: Required[Literal['config_option_update']]
    class SessionUpdateSessionInfoUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        title: str | None
        updatedAt: str | None
        sessionUpdate: Required[Literal['session_info_update']]
    class SessionUpdateUsageUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        cost: Cost | None
        size: Required[int]
        used: Required[int]
        sessionUpdate: Required[Literal['usage_update']]
    SessionUpdate: TypeAlias = 'SessionUpdateUserMessageChunk | SessionUpdateAgentMessageChunk | SessionUpdateAgentThoughtChunk | SessionUpdateToolCall | SessionUpdateToolCallUpdate | SessionUpdatePlan | SessionUpdateAvailableCommandsUpdate | SessionUpdateCurrentModeUpdate | SessionUpdateConfigOptionUpdate | SessionUpdateSessionInfoUpdate | SessionUpdateUsageUpdate'
    class SetSessionConfigOptionRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configId: Required[SessionConfigId]
        sessionId: Required[SessionId]
        type: Literal['boolean']
        value: bool
    class SetSessionConfigOptionResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        configOptions: Required[list[SessionConfigOption]]
    class SetSessionModeRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        modeId: Required[SessionModeId]
        sessionId: Required[SessionId]
    class SetSessionModeResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
    StopReason: TypeAlias = "Literal['end_turn', 'max_tokens', 'max_turn_requests', 'refusal', 'cancelled']"
    StringFormat: TypeAlias = "Literal['email', 'uri', 'date', 'date-time']"
    class StringMultiSelectItems(TypedDict, total=False):
        _meta: dict[str, Any] | None
        enum: Required[list[str]]
    class StringPropertySchema(TypedDict, total=False):
        _meta: dict[str, Any] | None
        default: str | None
        description: str | None
        enum: list[str] | None
        format: StringFormat | None
        maxLength: int | None
        minLength: int | None
        oneOf: list[EnumOption] | None
        pattern: str | None
        title: str | None
    class Terminal(TypedDict, total=False):
        _meta: dict[str, Any] | None
        terminalId: Required[TerminalId]
    class TerminalExitStatus(TypedDict, total=False):
        _meta: dict[str, Any] | None
        exitCode: int | None
        signal: str | None
    TerminalId: TypeAlias = 'str'
    class TerminalOutputRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
        terminalId: Required[TerminalId]
    class TerminalOutputResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        exitStatus: TerminalExitStatus | None
        output: Required[str]
        truncated: Required[bool]
    class TextContent(TypedDict, total=False):
        _meta: dict[str, Any] | None
        annotations: Annotations | None
        text: Required[str]
    class TextResourceContents(TypedDict, total=False):
        _meta: dict[str, Any] | None
        mimeType: str | None
        text: Required[str]
        uri: Required[str]
    class TitledMultiSelectItems(TypedDict, total=False):
        _meta: dict[str, Any] | None
        anyOf: Required[list[EnumOption]]
    class ToolCall(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: list[ToolCallContent]
        kind: ToolKind
        locations: list[ToolCallLocation]
        rawInput: Any
        rawOutput: Any
        status: ToolCallStatus
        title: Required[str]
        toolCallId: Required[ToolCallId]
    class ToolCallContentContent(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[ContentBlock]
        type: Required[Literal['content']]
    class ToolCallContentDiff(TypedDict, total=False):
        _meta: dict[str, Any] | None
        newText: Required[str]
        oldText: str | None
        path: Required[str]
        type: Required[Literal['diff']]
    class ToolCallContentTerminal(TypedDict, total=False):
        _meta: dict[str, Any] | None
        terminalId: Required[TerminalId]
        type: Required[Literal['terminal']]
    ToolCallContent: TypeAlias = 'ToolCallContentContent | ToolCallContentDiff | ToolCallContentTerminal'
    ToolCallId: TypeAlias = 'str'
    class ToolCallLocation(TypedDict, total=False):
        _meta: dict[str, Any] | None
        line: int | None
        path: Required[str]
    ToolCallStatus: TypeAlias = "Literal['pending', 'in_progress', 'completed', 'failed']"
    class ToolCallUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: list[ToolCallContent] | None
        kind: ToolKind | None
        locations: list[ToolCallLocation] | None
        rawInput: Any
        rawOutput: Any
        status: ToolCallStatus | None
        title: str | None
        toolCallId: Required[ToolCallId]
    ToolKind: TypeAlias = "Literal['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other']"
    class UnstructuredCommandInput(TypedDict, total=False):
        _meta: dict[str, Any] | None
        hint: Required[str]
    class UsageUpdate(TypedDict, total=False):
        _meta: dict[str, Any] | None
        cost: Cost | None
        size: Required[int]
        used: Required[int]
    class WaitForTerminalExitRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        sessionId: Required[SessionId]
        terminalId: Required[TerminalId]
    class WaitForTerminalExitResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
        exitCode: int | None
        signal: str | None
    class WriteTextFileRequest(TypedDict, total=False):
        _meta: dict[str, Any] | None
        content: Required[str]
        path: Required[str]
        sessionId: Required[SessionId]
    class WriteTextFileResponse(TypedDict, total=False):
        _meta: dict[str, Any] | None
