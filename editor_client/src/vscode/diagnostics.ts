// cody/diagnostics (protocol.md, "Problems after an edit"): after the agent changed a file, the
// server asks for its problems — at once (`waitMs` 0, before the change), or once the language
// servers have reported on its new text: the first change of the file's diagnostics, then
// SETTLE_MS without another, at most `waitMs` in all. The answer is what VS Code has then.
import * as vscode from 'vscode';
import type { DiagnosticsParams, DiagnosticsResult } from '../protocol';
import { lspDiagnostic } from './context';

/** Quiet time after a change of the file's diagnostics before they count as settled. */
export const SETTLE_MS = 300;

export function fileProblems(params: DiagnosticsParams, token?: vscode.CancellationToken): Promise<DiagnosticsResult> {
  const uri = vscode.Uri.parse(params.uri);
  const now = (): DiagnosticsResult => ({ diagnostics: vscode.languages.getDiagnostics(uri).map(lspDiagnostic) });
  if (!(params.waitMs > 0)) return Promise.resolve(now());
  return new Promise((resolve) => {
    const key = uri.toString();
    let settle: ReturnType<typeof setTimeout> | undefined;
    const done = () => {
      clearTimeout(deadline);
      clearTimeout(settle);
      changes.dispose();
      cancelled?.dispose();
      resolve(now());
    };
    const deadline = setTimeout(done, params.waitMs);
    const changes = vscode.languages.onDidChangeDiagnostics((event) => {
      if (!event.uris.some((changed) => changed.toString() === key)) return;
      clearTimeout(settle);
      settle = setTimeout(done, SETTLE_MS);
    });
    const cancelled = token?.onCancellationRequested(done);
  });
}
