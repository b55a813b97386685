// The messages from the webview are checked on arrival (messages.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFromWebview } from '../messages';

describe('messages from the webview', () => {
  it('accepts only well-formed messages', () => {
    assert.ok(isFromWebview({ type: 'permissionAnswer', id: 'r/c', choice: 'always' }));
    assert.ok(!isFromWebview({ type: 'permissionAnswer', id: 'r/c', choice: 3 }));
    assert.ok(isFromWebview({ type: 'action', command: 'configure' }));
    assert.ok(!isFromWebview({ type: 'action', command: 'toString' }));
    assert.ok(isFromWebview({ type: 'listSessions', allFolders: false }));
    assert.ok(!isFromWebview({ type: 'listSessions', allFolders: 'yes' }));
    assert.ok(isFromWebview({ type: 'renameSession', sessionId: 's', title: 't' }));
    assert.ok(!isFromWebview({ type: 'renameSession', sessionId: 's' }));
    assert.ok(!isFromWebview({ type: 'send' }));
    assert.ok(isFromWebview({ type: 'scrolled', at: null }));
    assert.ok(isFromWebview({ type: 'scrolled', at: { index: 3, offset: -8 } }));
    assert.ok(!isFromWebview({ type: 'scrolled', at: { index: -3, offset: 0 } }));
    assert.ok(!isFromWebview({ type: 'scrolled' }));
    assert.ok(isFromWebview({ type: 'listCommands' }));
    assert.ok(!isFromWebview({ type: 'constructor' }));
    assert.ok(isFromWebview({ type: 'stop' }));
  });
});
