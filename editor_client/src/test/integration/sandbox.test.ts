// The command sandbox (issue 23) in the panel, through real runs of the real server against the
// scripted model: a command's card offers "Run commands in this folder without asking
// (sandboxed)"; clicking it runs the command sandboxed and keeps a folder rule that the rules
// view labels sandboxed and that runs the next command unasked; a command asking to leave the
// sandbox shows the model's reason and offers Allow once / Deny only. Everything lies under
// /var/tmp (a sandboxed command may write /tmp). Skipped, saying why, where the kernel has no
// Landlock (the server's initialize says so).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ToWebview } from '../../messages';
import { Methods, type PermissionRuleList } from '../../protocol';
import { serverFeatures } from '../../core/protocolVersion';
import { ruleLabel } from '../../core/permissions';
import { Session } from '../../core/session';
import { startProvider, startServer, type Provider, type Server } from '../support/realServer';

const SANDBOXED_LABEL = 'Run commands in this folder without asking (sandboxed)';
const REASON = 'the build tool caches in my home';
const SCRIPT = [
  // Run 1: asked; answered with the sandboxed folder rule (the write to $HOME is refused).
  { tool_calls: [{ name: 'run_command', arguments: { command: 'echo 1 > "$HOME/a.txt"; echo 1 > a.txt' } }] },
  { text: 'First.' },
  // Run 2: the rule covers it: not asked, sandboxed.
  { tool_calls: [{ name: 'run_command', arguments: { command: 'echo 2 > b.txt' } }] },
  { text: 'Second.' },
  // Run 3: asks to leave the sandbox: asked, with its reason; denied.
  { tool_calls: [{ name: 'run_command', arguments: { command: 'echo 3 > "$HOME/c.txt"', sandbox: false, reason: REASON } }] },
  { text: 'Third.' },
];

function waitFor<T>(what: string, find: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      const found = find();
      if (found !== undefined) resolve(found);
      else if (Date.now() - started > timeoutMs) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

type Card = Extract<ToWebview, { type: 'permission' }>;

describe('The command sandbox in the panel, against the real server', { timeout: 90_000 }, () => {
  let dir: string;
  let workspace: string;
  let home: string;
  let provider: Provider;
  let server: Server;
  let session: Session;
  let noSandbox: string | undefined;
  const posted: ToWebview[] = [];
  const card = (): Promise<Card> => waitFor('the permission card', () => posted.find((m): m is Card => m.type === 'permission'));
  const results = (): string[] => posted.flatMap((m) => (m.type === 'toolResult' ? [JSON.stringify(m)] : []));

  before(async () => {
    dir = realpathSync(mkdtempSync('/var/tmp/cody-vscode-sandbox-'));
    workspace = join(dir, 'workspace');
    home = join(dir, 'home');
    for (const folder of [workspace, home, join(dir, 'state')]) mkdirSync(folder);
    writeFileSync(join(dir, 'script.json'), JSON.stringify(SCRIPT));
    provider = await startProvider(join(dir, 'script.json'));
    server = await startServer(
      {
        CODY_MODEL: 'scripted-demo-model',
        CODY_MODEL_BASE_URL: provider.baseUrl,
        CODY_MODEL_API_KEY: 'test-key',
        CODY_DB: join(dir, 'state', 'sessions.db'),
        HOME: home,
        XDG_STATE_HOME: join(dir, 'state'),
      },
      workspace,
    );
    const features = serverFeatures(server.initializeResult);
    noSandbox = features.noSandbox;
    session = new Session({ connection: server.connection, workspaceFolder: workspace, post: (m) => posted.push(m), features });
  });

  after(async () => {
    session?.dispose();
    await server?.stop();
    provider?.process.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('offers the sandboxed folder rule; the rules view labels it; the next command runs unasked, sandboxed', async (t) => {
    if (noSandbox !== undefined) return t.skip(`the server has no sandbox here: ${noSandbox}`);
    await session.resume();
    assert.ok(!posted.some((m) => m.type === 'notice'), 'no "no sandbox" notice where there is one');
    posted.length = 0;
    const running = session.send('first');
    const first = await card();
    const sandboxed = first.choices.find((c) => c.label === SANDBOXED_LABEL);
    assert.ok(sandboxed, JSON.stringify(first.choices));
    assert.equal(sandboxed.choice, 'sandboxed:folder');
    assert.ok(session.answerPermission(first.id, sandboxed.choice));
    assert.equal((await running)?.status, 'done', server.stderr());
    const closed = posted.find((m) => m.type === 'permissionClosed');
    assert.equal(closed?.type === 'permissionClosed' && closed.label, 'Always allowed in this folder, sandboxed');
    assert.match(results()[0] ?? '', /Permission denied/, 'the call so answered runs sandboxed');
    assert.ok(existsSync(join(workspace, 'a.txt')) && !existsSync(join(home, 'a.txt')));

    const { rules } = (await server.connection.sendRequest(Methods.listPermissionRules, { workspaceFolder: workspace })) as PermissionRuleList;
    assert.equal(rules.length, 1);
    assert.equal(rules[0]!.sandboxed, true);
    assert.equal(ruleLabel(rules[0]!), 'run_command — always allowed in this folder, sandboxed');

    posted.length = 0;
    assert.equal((await session.send('second'))?.status, 'done', server.stderr());
    assert.ok(!posted.some((m) => m.type === 'permission'), 'the rule answered: nobody was asked');
    assert.ok(existsSync(join(workspace, 'b.txt')));
  });

  it('shows why a command asks to leave the sandbox, and answers for that call only', async (t) => {
    if (noSandbox !== undefined) return t.skip(`the server has no sandbox here: ${noSandbox}`);
    posted.length = 0;
    const running = session.send('third');
    const third = await card();
    assert.ok(third.detail.includes(`The model's reason: ${REASON}`), third.detail);
    assert.ok(third.detail.startsWith('Outside the sandbox'), third.detail);
    assert.deepEqual(
      third.choices.map((c) => c.label),
      ['Allow once', 'Deny'],
    );
    assert.ok(session.answerPermission(third.id, 'deny'));
    assert.equal((await running)?.status, 'done', server.stderr());
    assert.ok(!existsSync(join(home, 'c.txt')));
  });
});
