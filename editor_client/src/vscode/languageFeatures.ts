// cody/languageFeature (protocol.md, "Code navigation"): the agent's code_nav tool answered by VS Code's
// own language features — the language servers the user has, with the unsaved text of open documents —
// through the built-in commands (vscode.executeDefinitionProvider & co.). The answer is the LSP result
// shape: VS Code's objects turned into plain LSP JSON (its SymbolKind counts from 0, LSP's from 1).
// Positions are UTF-16, as VS Code's and the position encoding this client agrees on.
import * as vscode from 'vscode';
import type { LanguageFeatureParams } from '../protocol';

type Json = Record<string, unknown>;

function position(p: vscode.Position): Json {
  return { line: p.line, character: p.character };
}

function range(r: vscode.Range): Json {
  return { start: position(r.start), end: position(r.end) };
}

function isLink(item: vscode.Location | vscode.LocationLink): item is vscode.LocationLink {
  return 'targetUri' in item;
}

/** A Location or LocationLink (or an array of them) as LSP has it. */
export function lspLocations(result: unknown): Json[] {
  const items = (Array.isArray(result) ? result : result ? [result] : []) as Array<vscode.Location | vscode.LocationLink>;
  return items.map((item) =>
    isLink(item)
      ? {
          targetUri: item.targetUri.toString(),
          targetRange: range(item.targetRange),
          targetSelectionRange: range(item.targetSelectionRange ?? item.targetRange),
          ...(item.originSelectionRange ? { originSelectionRange: range(item.originSelectionRange) } : {}),
        }
      : { uri: item.uri.toString(), range: range(item.range) },
  );
}

function markdown(content: vscode.MarkdownString | vscode.MarkedString): string {
  if (typeof content === 'string') return content;
  if ('language' in content) return `\`\`\`${content.language}\n${content.value}\n\`\`\``;
  return content.value;
}

/** Every provider's hover as one LSP Hover (null when none says anything). */
export function lspHover(hovers: vscode.Hover[] | undefined): Json | null {
  const parts = (hovers ?? []).flatMap((hover) => hover.contents.map(markdown)).filter((text) => text.trim());
  return parts.length ? { contents: { kind: 'markdown', value: parts.join('\n\n---\n\n') } } : null;
}

function isSymbolInformation(item: vscode.DocumentSymbol | vscode.SymbolInformation): item is vscode.SymbolInformation {
  return 'location' in item;
}

function lspSymbol(item: vscode.DocumentSymbol | vscode.SymbolInformation): Json {
  if (isSymbolInformation(item)) {
    return {
      name: item.name,
      kind: item.kind + 1,
      location: { uri: item.location.uri.toString(), range: range(item.location.range) },
      ...(item.containerName ? { containerName: item.containerName } : {}),
    };
  }
  return {
    name: item.name,
    kind: item.kind + 1,
    range: range(item.range),
    selectionRange: range(item.selectionRange),
    ...(item.detail ? { detail: item.detail } : {}),
    children: (item.children ?? []).map(lspSymbol),
  };
}

function lspCallItem(item: vscode.CallHierarchyItem): Json {
  return {
    name: item.name,
    kind: item.kind + 1,
    uri: item.uri.toString(),
    range: range(item.range),
    selectionRange: range(item.selectionRange),
    ...(item.detail ? { detail: item.detail } : {}),
  };
}

const LOCATION_COMMANDS: Record<string, string> = {
  definition: 'vscode.executeDefinitionProvider',
  references: 'vscode.executeReferenceProvider',
  implementation: 'vscode.executeImplementationProvider',
  type_definition: 'vscode.executeTypeDefinitionProvider',
};

/** The answer to one cody/languageFeature request. */
export async function languageFeature(params: LanguageFeatureParams): Promise<unknown> {
  const run = vscode.commands.executeCommand;
  const uri = vscode.Uri.parse(params.uri);
  const at = params.position ? new vscode.Position(params.position.line, params.position.character) : undefined;
  const needsPosition = (): vscode.Position => {
    if (at === undefined) throw new Error(`${params.operation} needs a position`);
    return at;
  };
  switch (params.operation) {
    case 'definition':
    case 'references':
    case 'implementation':
    case 'type_definition': {
      const command = LOCATION_COMMANDS[params.operation] as string;
      return lspLocations(await run(command, uri, needsPosition()));
    }
    case 'hover':
      return lspHover(await run<vscode.Hover[]>('vscode.executeHoverProvider', uri, needsPosition()));
    case 'document_symbols': {
      const symbols = await run<Array<vscode.DocumentSymbol | vscode.SymbolInformation>>('vscode.executeDocumentSymbolProvider', uri);
      return symbols ? symbols.map(lspSymbol) : null;
    }
    case 'workspace_symbols': {
      const symbols = await run<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', params.query ?? '');
      return (symbols ?? []).map(lspSymbol);
    }
    case 'incoming_calls':
    case 'outgoing_calls': {
      const items = await run<vscode.CallHierarchyItem[]>('vscode.prepareCallHierarchy', uri, needsPosition());
      const item = items?.[0];
      if (item === undefined) return [];
      if (params.operation === 'incoming_calls') {
        const calls = await run<vscode.CallHierarchyIncomingCall[]>('vscode.provideIncomingCalls', item);
        return (calls ?? []).map((call) => ({ from: lspCallItem(call.from), fromRanges: call.fromRanges.map(range) }));
      }
      const calls = await run<vscode.CallHierarchyOutgoingCall[]>('vscode.provideOutgoingCalls', item);
      return (calls ?? []).map((call) => ({ to: lspCallItem(call.to), fromRanges: call.fromRanges.map(range) }));
    }
    default:
      throw new Error(`unknown operation ${String(params.operation)}`);
  }
}
