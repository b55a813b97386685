// The extension in a real VS Code (code-server from npm, the packaged .vsix), driven in
// Debian's Chromium, against the real server ($CODY_PYTHON -m cody_lsp) and the scripted model
// provider. A user's story, one step per test, each step's screenshot saved to
// test-artifacts/vscode/ (NN-step.png): the panel opens and says what to do first, the API key
// is set through the command, a prompt streams and its Markdown renders, an edit of a file open in
// the editor (approved from the keyboard) lands in its buffer (workspace/applyEdit, the disk
// untouched) and the editor's Undo restores it, a write is approved "always" and the approval
// holds, Stop, a reload restores the session with its end states and the stopped answer's text,
// the sessions list switches sessions, every kind of theme is readable (computed colours, in
// contrast.txt), a long session lands on and follows its newest message, a plan made in plan mode
// (the composer's picker) is carried out in code mode with its write asked for, an edit is accepted
// and another rejected from its diff editor's title bar, an edit denied with what to do instead
// (the model gets the words with the refusal), the agent's plan pinned above the composer with a
// background dev server listed (its output, Stop) and web_fetch's page, the panel moved to the secondary side bar
// works there and stays there across a reload, and a wrong cody.pythonPath is said once, in the
// panel, with a button (no notification that would outlive the fix).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Frame, Page } from 'playwright-core';
import { chips } from '../test/support/chips';
import { startProvider, startServer, type Provider } from '../test/support/realServer';
import { chatFrame, CodeServer, codeServerDir, EDITOR_CLIENT, launchBrowser } from './codeServer';
import { measure, unreadable, type Probe } from './contrast';

/** The little of the DOM the functions evaluated in the chat view's frame use (this is a Node program). */
declare const document: {
  querySelectorAll(selector: string): { length: number };
  querySelector(selector: string): { textContent: string | null } | null;
  getElementById(id: string): { textContent: string | null; hidden?: boolean } | null;
};

const PYTHON = process.env.CODY_PYTHON || 'python3';
const VSIX = process.env.CODY_VSIX || join(EDITOR_CLIENT, 'cody-lsp.vsix');
export const ARTIFACTS = process.env.CODY_E2E_ARTIFACTS || join(EDITOR_CLIENT, 'test-artifacts', 'vscode');

const ANSWER =
  'Here is **the plan** for `app.py`:\n\n## Steps\n\n1. Read the code\n2. Write the tests\n\n' +
  "```python\nprint('hello')\n```\n\nSee [the docs](https://example.com/docs).";

const GREET = "def greet():\n    return 'hi'\n";
/** shop.py before and after the run the review bar reviews: two places changed, far apart (two hunks). */
const SHOP_LINES = ['# The shop', "NAME = 'shop'", '', 'def open_shop():', '    return NAME', '', '', '', '', '', 'def close_shop():', '    return None', ''];
const SHOP_BEFORE = SHOP_LINES.join('\n');
const SHOP_AFTER = SHOP_BEFORE.replace("NAME = 'shop'", "NAME = 'the shop'").replace('    return None\n', '    return None\n\n\ndef health():\n    return \'ok\'\n');
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** A port nothing listens on (for the dev server the model starts in the background). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** Answers of different heights, for the long session. */
function longAnswer(i: number): string {
  const points = Array.from({ length: 1 + (i % 6) }, (_, k) => `- point ${k}: something about part ${i} of the code, long enough to wrap in the side bar`);
  const code = i % 3 === 0 ? `\n\n\`\`\`python\n${Array.from({ length: 2 + (i % 9) }, (_, k) => `print(${k})`).join('\n')}\n\`\`\`` : '';
  return `Answer ${i}: here is what I found.\n\n${points.join('\n')}${code}`;
}

/** One theme of each kind, with the kind the webview's body says (data-vscode-theme-kind). */
const THEMES: Array<[string, string]> = [
  ['Dark Modern', 'vscode-dark'],
  ['Light Modern', 'vscode-light'],
  ['Dark High Contrast', 'vscode-high-contrast'],
  ['Light High Contrast', 'vscode-high-contrast-light'],
];

/** What must be readable in every theme: text at 4.5:1 (WCAG AA), muted and status text at 3:1, bubbles and chips visible. */
const READABLE: Probe[] = [
  { name: 'title', selector: '#session-title', text: 4.5 },
  { name: 'folder', selector: '#folder-name', text: 3 },
  { name: 'user message', selector: '.msg.user', text: 4.5, shape: 1.15 },
  { name: 'answer text', selector: '.markdown p', text: 4.5 },
  { name: 'inline code', selector: '.markdown p code', text: 4.5, shape: 1.15 },
  { name: 'code block', selector: '.code-block pre code', text: 4.5 },
  { name: 'code string', selector: '.code-block .tok-string', text: 3 },
  { name: 'code block frame', selector: '.code-block', shape: 1.15 },
  { name: 'Copy button', selector: '.code-block .code-copy', text: 4.5 },
  { name: 'link', selector: '.markdown a', text: 3 },
  { name: 'end state', selector: '.run-end', text: 3 },
  { name: 'checkpoint action', selector: '.checkpoint-actions button', text: 3 },
  { name: 'prompt', selector: '#prompt', text: 4.5 },
  { name: 'Send button', selector: '#send', text: 4.5 },
  { name: 'mode picker', selector: '#mode-picker', text: 4.5 },
  { name: 'model picker', selector: '#model-picker', text: 4.5 },
];

// One reply per model request, in the order the story makes them.
const SCRIPT = [
  // Session A: a Markdown answer, streamed.
  { text: ANSWER, text_deltas: 16, delay: 0.04 },
  // Session A again: an edit of the open greet.py (asks once), applied in the editor's buffer.
  { tool_calls: [{ name: 'read_file', arguments: { path: 'greet.py' } }] },
  { tool_calls: [{ name: 'edit_file', arguments: { path: 'greet.py', old_string: "'hi'", new_string: "'hello'" } }] },
  { text: 'The greeting now says hello.' },
  // Session B: a write that asks; then a run that is stopped.
  { text: "I'll write it.", tool_calls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'first line\n' } }] },
  { text: 'Wrote notes.txt.' },
  { text: 'Let me think about this for a while', text_deltas: 6, fault: { kind: 'stall', after: 3, seconds: 60 } },
  // Steering: a run that stalls, a message queued and withdrawn, another sent now (interrupting).
  { text: 'Thinking again, slowly', text_deltas: 4, fault: { kind: 'stall', after: 2, seconds: 60 } },
  { text: 'Done instead.' },
  // Session C: another write, covered by the "always" rule: no card.
  { tool_calls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'first line\nsecond line\n' } }] },
  { text: 'Added the second line.' },
  // Attachments: @app.py and a pasted image.
  { text: 'It prints hello; the picture is one red pixel.' },
  // @terminal and a folder.
  { text: 'The terminal said 42; src holds util.py.' },
  // Problems fed back: an edit that breaks the open config.json (VS Code's own JSON language server reports it).
  { tool_calls: [{ name: 'edit_file', arguments: { path: 'config.json', old_string: '"port": 8080', new_string: '"port": ' } }] },
  { text: 'config.json has a problem now.' },
  // Checkpoints: a command changes data.txt on disk; the turn's checkpoint restores it.
  { tool_calls: [{ name: 'run_command', arguments: { command: "printf 'changed by the agent\\n' > data.txt" } }] },
  { text: 'Changed data.txt.' },
  // Modes: a plan-mode answer (read-only tools), then "Carry out the plan" in code mode: an edit that asks.
  { text: '1. Make greeting.txt greet the shop.\n2. Read it back.' },
  { tool_calls: [{ name: 'edit_file', arguments: { path: 'greeting.txt', old_string: 'Hello.', new_string: 'Hello, shop!' } }] },
  { text: 'Carried out the plan: greeting.txt greets the shop.' },
  // The model picker: the answer of the model picked.
  { text: 'The big model answers.' },
  // Accept / Reject from the diff editor's title bar: two edits of todo.txt that ask.
  { tool_calls: [{ name: 'edit_file', arguments: { path: 'todo.txt', old_string: 'buy milk\n', new_string: 'buy milk\nbuy bread\n' } }] },
  { text: 'Added bread to the list.' },
  { tool_calls: [{ name: 'edit_file', arguments: { path: 'todo.txt', old_string: 'buy bread\n', new_string: 'buy bread\nbuy eggs\n' } }] },
  { text: 'Understood: no eggs.' },
  // Deny with what to do instead: an edit that asks, refused with the user's words.
  { tool_calls: [{ name: 'edit_file', arguments: { path: 'todo.txt', old_string: 'buy bread\n', new_string: 'buy bread\nbuy butter\n' } }] },
  { text: 'Understood: oat milk instead of butter.' },
  // A subagent (task: explore) greps for the greeting; then a command a user hook refuses (PreToolUse).
  { tool_calls: [{ name: 'task', arguments: { description: 'Look for the greeting', prompt: 'Where is greet defined?', agent: 'explore' } }] },
  { tool_calls: [{ name: 'grep', arguments: { pattern: 'def greet' } }] },
  { text: 'greet is defined in greet.py.' },
  { tool_calls: [{ name: 'run_command', arguments: { command: 'rm -f notes.txt' } }] },
  { text: 'The greeting is in greet.py; the hook kept notes.txt.' },
  // A custom slash command (.claude/commands/review-pr.md), picked in the "/" menu.
  { text: 'Pull request 42 looks fine.' },
  // code_nav: the definition of greet in main.ts, answered by VS Code's own TypeScript (cody/languageFeature).
  { tool_calls: [{ name: 'code_nav', arguments: { operation: 'definition', path: 'main.ts', line: 3, query: 'greet' } }] },
  { text: 'greet is defined in lib.ts, line 1.' },
  // The review bar: a write of shop.py that changes two places (two hunks); one is undone, one kept.
  { tool_calls: [{ name: 'write_file', arguments: { path: 'shop.py', content: SHOP_AFTER } }] },
  { text: 'Renamed the shop and added a health check.' },
  // The power tools: a plan, a dev server in the background (its page read with web_fetch), the plan moved on.
  { tool_calls: [{ name: 'update_plan', arguments: { plan: [{ step: 'Start the dev server', status: 'in_progress' }, { step: 'Read the shop page', status: 'pending' }, { step: 'Check the opening hours', status: 'pending' }] } }] },
  { tool_calls: [{ name: 'run_command', arguments: { command: 'python3 -u -m http.server __PORT__ --bind 127.0.0.1', background: true } }] },
  { tool_calls: [{ name: 'web_fetch', arguments: { url: 'http://127.0.0.1:__PORT__/index.html' } }] },
  { tool_calls: [{ name: 'update_plan', arguments: { explanation: 'the page is read', plan: [{ step: 'Start the dev server', status: 'completed' }, { step: 'Read the shop page', status: 'completed' }, { step: 'Check the opening hours', status: 'in_progress' }] } }] },
  { text: 'The shop is open 9 to 5; the dev server is still running.' },
  // The panel in the secondary side bar.
  { text: 'Answering from the secondary side bar.' },
];
// What the provider's GET /v1/models lists (the model picker's choices; cody.model is the first).
const LISTED_MODELS = ['scripted-model', 'big-model', 'small-model'];

describe('the extension in a real VS Code (code-server)', { timeout: 600_000 }, () => {
  let home: string;
  let workspace: string;
  let provider: Provider;
  let codeServer: CodeServer;
  let browser: Browser;
  let page: Page;
  let frame: Frame;
  let shot = 0;
  /** Whether the server offered "Always in this folder" (permission rules). */
  let folderRule = false;
  /** Where the dev server the model starts in the background listens. */
  let devPort = 0;

  const screenshot = async (name: string): Promise<void> => {
    shot++;
    await page.screenshot({ path: join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`) });
  };
  const panelText = () => frame.locator('#messages').innerText();

  const openPanel = async (): Promise<void> => {
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    const icon = page.locator('.activitybar [aria-label^="Cody"]').first();
    await icon.waitFor({ timeout: 30_000 });
    // After a reload the workbench restores the open view by itself (slowly on a busy machine);
    // click only if it did not, since a click on the open view's icon closes the side bar.
    const title = page.locator('.part.sidebar .title-label', { hasText: /cody/i });
    const shown = () => title.waitFor({ timeout: 5_000 }).then(() => true, () => false);
    for (let attempt = 0; attempt < 3 && !(await shown()); attempt++) await icon.click();
    await title.waitFor({ timeout: 10_000 });
    frame = await chatFrame(page, 45_000);
    await frame.locator('#composer').waitFor({ state: 'visible', timeout: 30_000 });
  };

  const send = async (prompt: string): Promise<void> => {
    await frame.fill('#prompt', prompt);
    await frame.press('#prompt', 'Enter');
  };

  const runEnded = (count: number) => frame.waitForFunction((n) => document.querySelectorAll('.run-end').length >= n, count, { timeout: 30_000 });

  const command = async (title: string): Promise<void> => {
    // The palette lists the commands known when it opens: right after a reload, before the
    // extensions' contributions are registered, it may not list this one; it is opened again then.
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor();
      await input.fill(`>${title}`);
      try {
        await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: attempt < 3 ? 10_000 : 30_000 });
        break;
      } catch (error) {
        if (attempt >= 3) throw error;
        await page.keyboard.press('Escape');
      }
    }
    await page.keyboard.press('Enter');
  };

  /** Saves what the agent left in the editor's buffers (File: Save All), then waits for `path` to hold `text` on disk. */
  const savedAs = async (path: string, text: string): Promise<void> => {
    await command('File: Save All');
    for (let i = 0; i < 150 && !(existsSync(path) && readFileSync(path, 'utf8') === text); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(readFileSync(path, 'utf8'), text);
  };

  /** A step of the story; a failing step leaves a screenshot of what was on the screen. */
  const step = (name: string, fn: () => Promise<void>) =>
    it(name, async () => {
      try {
        await fn();
      } catch (error) {
        const failed = `FAILED-${name.replace(/\W+/g, '-').slice(0, 60)}`;
        await page?.screenshot({ path: join(ARTIFACTS, `${failed}.png`) }).catch(() => undefined);
        codeServer?.copyLogs(join(ARTIFACTS, `${failed}-logs`));
        throw error;
      }
    });

  /** Picks a colour theme with "Preferences: Color Theme", as a user does (clicking the exact rows:
   * the palette's first match may be "Browse Color Themes in Marketplace", which needs the network). */
  const setTheme = async (label: string): Promise<void> => {
    const row = (text: string) => page.locator('.quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name').getByText(text, { exact: true }) });
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill('>Preferences: Color Theme');
    await row('Preferences: Color Theme').first().click();
    // The theme picker replaced the palette: its title or its placeholder says so (VS Code 1.100 has no title there: waiting for one cost 15 s a theme).
    await page
      .locator('.quick-input-widget .quick-input-title', { hasText: /color theme/i })
      .or(page.locator('.quick-input-widget input[placeholder*="Color Theme" i]'))
      .first()
      .waitFor({ timeout: 15_000 })
      .catch(() => undefined);
    await input.fill(label);
    await row(label).first().click();
  };

  /**
   * What `probes` name is readable in every kind of theme (computed colours): a screenshot in each
   * (`name-dark`, …), the measures added to contrast.txt; back to Light Modern after.
   */
  const readableInThemes = async (name: string, probes: Probe[]): Promise<void> => {
    const problems: string[] = [];
    const report: string[] = [];
    for (const [theme, kind] of [...THEMES.filter(([t]) => t !== 'Light Modern'), ['Light Modern', 'vscode-light'] as [string, string]]) {
      await setTheme(theme);
      await frame.waitForFunction((k) => (document as unknown as { body: { getAttribute(n: string): string | null } }).body.getAttribute('data-vscode-theme-kind') === k, kind, { timeout: 30_000 });
      await page.waitForTimeout(300); // the theme's colours reach the webview's variables
      const measures = await measure(frame, probes);
      report.push(`${name}, ${theme}: ${measures.map((m) => `${m.name} ${m.contrast.toFixed(1)}`).join(', ')}`);
      await screenshot(`${name}-${kind.replace('vscode-', '')}`);
      problems.push(...unreadable(probes, measures).map((p) => `${theme}: ${p}`));
    }
    writeFileSync(join(ARTIFACTS, `contrast-${name}.txt`), `${report.join('\n')}\n`);
    assert.deepEqual(problems, []);
  };

  /** Sets a text setting through the Settings editor, as a user would (User scope). */
  const setSetting = async (id: string, value: string): Promise<void> => {
    await command('Preferences: Open User Settings');
    const search = page.locator('.settings-editor .suggest-input-container');
    await search.waitFor();
    await search.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.type(`@id:${id}`);
    await page.locator('.settings-editor .settings-count-widget', { hasText: '1 Setting Found' }).waitFor({ timeout: 15_000 });
    const input = page.locator('.settings-editor .setting-item-text input').first();
    await input.waitFor({ timeout: 15_000 });
    await input.fill(value);
    await page.keyboard.press('Tab');
    // The settings editor writes a typed value after a delay: it is in settings.json before the editor closes.
    const written = (): boolean => {
      try {
        return ((JSON.parse(readFileSync(codeServer.userSettingsFile, 'utf8')) as Record<string, unknown>)[id] ?? '') === value; // a default ('') is written as no entry
      } catch {
        return false; // being written
      }
    };
    for (let i = 0; i < 150 && !written(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(written(), `${id} is ${JSON.stringify(value)} in settings.json`);
    // Closed again: what opens the settings next (the Configure button) opens them afresh.
    await page.locator('.tabs-container .tab.active', { hasText: 'Settings' }).locator('.tab-actions .action-label').click();
    await page.locator('.settings-editor').waitFor({ state: 'detached', timeout: 15_000 });
  };

  before(async () => {
    assert.ok(existsSync(VSIX), `the packaged extension is missing at ${VSIX}: run npm run package`);
    rmSync(ARTIFACTS, { recursive: true, force: true });
    mkdirSync(ARTIFACTS, { recursive: true });
    home = realpathSync(mkdtempSync(join(tmpdir(), 'cody-vscode-e2e-')));
    workspace = join(home, 'shop');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'app.py'), "print('hello')\n");
    writeFileSync(join(workspace, 'greet.py'), GREET);
    writeFileSync(join(workspace, 'config.json'), '{"name": "shop", "port": 8080}\n');
    writeFileSync(join(workspace, 'lib.ts'), "export function greet(name: string): string {\n  return 'hi ' + name;\n}\n");
    writeFileSync(join(workspace, 'main.ts'), "import { greet } from './lib';\n\nconsole.log(greet('shop'));\n");
    mkdirSync(join(workspace, 'src'));
    writeFileSync(join(workspace, 'src', 'util.py'), 'def util():\n    pass\n');
    devPort = await freePort();
    writeFileSync(join(home, 'script.json'), JSON.stringify(SCRIPT).replaceAll('__PORT__', String(devPort)));
    provider = await startProvider(join(home, 'script.json'), join(home, 'requests.jsonl'), LISTED_MODELS);
    const settings = {
      'security.workspace.trust.enabled': false,
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'extensions.ignoreRecommendations': true,
      // Desktop VS Code's default; in the browser it is 'afterDelay', which would save the agent's
      // edit of an open file 1 s after it lands in the buffer (the undo step checks the disk).
      'files.autoSave': 'off',
      // The story starts many local servers; code-server would offer to forward each port.
      'remote.autoForwardPorts': false,
      // A shell with VS Code's shell integration (what @terminal reads; sh has none).
      'terminal.integrated.defaultProfile.linux': 'bash',
      'cody.pythonPath': PYTHON,
      'cody.model': 'scripted-model',
      'cody.modelImages': true, // the scripted model takes the pasted image
      'cody.diagnosticsWait': 10, // a bound: the answer comes once the JSON language server's report settled
      'cody.baseUrl': provider.baseUrl,
    };
    const env: NodeJS.ProcessEnv = {
      CODY_DB: join(home, 'sessions.db'),
      CODY_RETRY_BASE_DELAY: '0.01',
      CODY_RETRY_MAX_DELAY: '0.05',
      CODY_APPROVALS: 'auto',
      CODY_MODEL_API_KEY: '', // the key comes from the secret storage (set in the story)
      XDG_CONFIG_HOME: join(home, 'xdg'), // the user's cody-lsp files (a hook, written by the story)
      CODY_WEB_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${devPort}`, // web_fetch of the dev server the model starts
    };
    codeServer = await CodeServer.start({ dir: codeServerDir(), vsix: VSIX, home, settings, env });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    await page.goto(`${codeServer.url}/?folder=${encodeURIComponent(workspace)}`);
  });

  after(async () => {
    await browser?.close();
    await codeServer?.stop();
    provider?.process.kill();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  step('opens the panel, which says what to do first', async () => {
    await openPanel();
    await frame.waitForSelector('#welcome:not([hidden]) .setup-steps li', { timeout: 30_000 });
    const steps = await frame.locator('.setup-steps li').allInnerTexts();
    assert.match(steps[0] ?? '', /Python: .*\(cody\.pythonPath\)/);
    assert.match(steps[1] ?? '', /Model: scripted-model at http:\/\/127\.0\.0\.1/);
    assert.match(steps[2] ?? '', /Set the API key/);
    assert.equal(await frame.locator('#folder-name').innerText(), 'in shop');
    await screenshot('empty-panel');
  });

  step('sets the API key with "Cody: Set API Key" (secret storage)', async () => {
    await command('Cody: Set API Key');
    const input = page.locator('.quick-input-widget input[type="password"]');
    await input.waitFor();
    await input.fill('sk-e2e-secret');
    await screenshot('set-api-key');
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => /API key: set/.test(document.querySelector('.setup-steps')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.doesNotMatch(readFileSync(codeServer.userSettingsFile, 'utf8'), /sk-e2e-secret/, 'the key is not in the settings');
  });

  step('streams a prompt and renders its Markdown', async () => {
    await send('Explain the plan');
    // The header names the session from the first chunk, before the run ends.
    await frame.waitForFunction(() => document.getElementById('session-title')?.textContent === 'Explain the plan', undefined, { timeout: 30_000 });
    await frame.waitForSelector('.markdown strong', { timeout: 30_000 });
    await screenshot('streaming');
    await runEnded(1);
    assert.equal(await frame.locator('.markdown strong').first().innerText(), 'the plan');
    assert.equal(await frame.locator('.markdown h2').innerText(), 'Steps');
    assert.deepEqual(await frame.locator('.markdown ol li').allInnerTexts(), ['Read the code', 'Write the tests']);
    assert.equal((await frame.locator('.code-block code').innerText()).trim(), "print('hello')");
    assert.deepEqual(await frame.locator('.code-block button').allInnerTexts(), ['Copy', 'Insert']);
    assert.equal(await frame.locator('.markdown a').getAttribute('href'), 'https://example.com/docs');
    assert.doesNotMatch(await panelText(), /\*\*|```|##/, 'no raw Markdown');
    assert.match(await frame.locator('#context-text').innerText(), /^[\d.]+k? \/ [\d.]+k$/, 'the context meter: used / window');
    await screenshot('markdown');
    // Insert puts the code block at the cursor of the editor the user was in.
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input').fill('app.py');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'app.py' }).first().waitFor();
    await page.keyboard.press('Enter');
    const editor = page.locator('.editor-instance .monaco-editor .view-lines');
    await editor.waitFor();
    await page.keyboard.press('Control+End');
    await frame.locator('.code-block .code-insert').click();
    await page.waitForFunction(
      () => (document.querySelector('.editor-instance .monaco-editor .view-lines')?.textContent ?? '').split("print('hello')").length === 3,
      undefined,
      { timeout: 15_000 },
    );
    await screenshot('inserted');
  });

  step("edits a file open in the editor in its buffer (not on disk), and the editor's Undo restores it", async () => {
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input').fill('greet.py');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'greet.py' }).first().waitFor();
    await page.keyboard.press('Enter');
    const tab = page.locator('.tabs-container .tab', { hasText: 'greet.py' });
    await tab.and(page.locator('.tab.active')).waitFor({ timeout: 15_000 });
    const lines = '.editor-group-container.active .editor-instance .monaco-editor .view-lines';
    const bufferShows = (text: string) =>
      page.waitForFunction(
        ([selector, wanted]) => (document.querySelector(selector)?.textContent ?? '').replace(/\u00a0/g, ' ').includes(wanted),
        [lines, text] as const,
        { timeout: 15_000 },
      );
    await bufferShows("return 'hi'");
    await send('Make greet.py say hello');
    const card = frame.locator('.permission:not(.settled)');
    await card.waitFor({ timeout: 30_000 });
    assert.match(await card.locator('.permission-title').innerText(), /edit_file/);
    assert.equal(readFileSync(join(workspace, 'greet.py'), 'utf8'), GREET, 'nothing is written before the answer');
    // Answered from the keyboard: the waiting card has the focus (on Allow once); Enter allows once.
    await frame.waitForFunction(() => (document as unknown as { activeElement: { textContent: string | null } | null }).activeElement?.textContent === 'Allow once', undefined, {
      timeout: 15_000,
    });
    assert.match(await card.innerText(), /Enter: allow once · Esc: deny/);
    await page.keyboard.press('Enter');
    await runEnded(2);
    assert.match(await panelText(), /The greeting now says hello\./);
    await bufferShows("return 'hello'");
    assert.equal(readFileSync(join(workspace, 'greet.py'), 'utf8'), GREET, 'the edit is in the buffer, not on disk');
    await tab.and(page.locator('.tab.dirty')).waitFor({ timeout: 15_000 });
    await screenshot('edited-in-buffer');
    // The user undoes the agent's edit in the editor.
    await page.locator(lines).click();
    await page.keyboard.press('Control+Z');
    await bufferShows("return 'hi'");
    assert.doesNotMatch((await page.locator(lines).textContent()) ?? '', /hello/);
    await tab.and(page.locator('.tab:not(.dirty)')).waitFor({ timeout: 15_000 });
    assert.equal(readFileSync(join(workspace, 'greet.py'), 'utf8'), GREET, 'the disk is still untouched');
    await screenshot('edit-undone');
  });

  step('asks before a write; "always" is remembered; the card opens a diff', async () => {
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Create notes.txt');
    const card = frame.locator('.permission');
    await card.waitFor({ timeout: 30_000 });
    const labels = await card.locator('button').allInnerTexts();
    folderRule = labels.includes('Always in this folder');
    await screenshot('permission');
    assert.ok(!existsSync(join(workspace, 'notes.txt')), 'nothing is written before the answer');
    await card.locator('button', { hasText: folderRule ? 'Always in this folder' : /^Always$/ }).click();
    await runEnded(1);
    // A new file goes through the editor (CreateFile + its text in one workspace/applyEdit: Undo covers it):
    // on disk it is empty until saved.
    assert.equal(readFileSync(join(workspace, 'notes.txt'), 'utf8'), '', 'created in the editor, its text not saved yet');
    await savedAs(join(workspace, 'notes.txt'), 'first line\n');
    assert.match(await card.locator('.permission-outcome').innerText(), /^Always allowed/);
    const tool = frame.locator('.tool').first();
    await tool.locator('summary').click();
    assert.match(await tool.locator('.tool-args').innerText(), /notes\.txt\s+first line/);
    await tool.locator('.tool-diff').click();
    await page.locator('.tab', { hasText: 'notes.txt (Cody)' }).waitFor({ timeout: 15_000 });
    await screenshot('diff');
  });

  step('stops a running run', async () => {
    await send('Think it over');
    await frame.waitForFunction(() => /Let me/.test(document.querySelector('.msg.assistant:last-child .markdown')?.textContent ?? ''), undefined, {
      timeout: 30_000,
    });
    assert.ok(await frame.locator('#stop').isVisible());
    await frame.click('#stop');
    await runEnded(2);
    assert.equal(await frame.locator('.run-end.cancelled .run-end-label').last().innerText(), 'Stopped');
    assert.equal(await frame.locator('#stop').isVisible(), false);
    // What it had streamed is not an answer: shown as unfinished.
    assert.match(await frame.locator('.msg.assistant').last().locator('.step.partial').innerText(), /Let me[\s\S]*Unfinished: the run was stopped while the model was answering/);
    await screenshot('stopped');
  });

  step('queues a message while a run goes (a chip, cancellable) and sends another now', async () => {
    await send('Think again');
    await frame.waitForFunction(() => /Thinki/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal(await frame.locator('#send').innerText(), 'Queue');
    await send('Also check the README');
    await frame.locator('#queue .chip', { hasText: 'Also check the README' }).waitFor({ timeout: 15_000 });
    await screenshot('queued');
    await frame.locator('#queue .chip-cancel').click();
    await frame.waitForSelector('#queue', { state: 'hidden', timeout: 15_000 });
    await frame.fill('#prompt', 'Do this instead');
    await frame.click('#send-now');
    await frame.waitForFunction(() => /Done instead\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await frame.waitForFunction(() => document.getElementById('stop')?.hidden === true, undefined, { timeout: 15_000 });
    assert.equal(await frame.locator('.run-end.cancelled').count(), 2, 'the interrupted run is Stopped');
    assert.doesNotMatch(await panelText(), /Also check the README/, 'the withdrawn message was never sent');
    await screenshot('sent-now');
  });

  step('restores the session after a reload, with the stops shown as states', async () => {
    await page.reload();
    await openPanel();
    await frame.waitForFunction(() => document.querySelectorAll('.msg.user').length === 4, undefined, { timeout: 30_000 });
    assert.equal(await frame.locator('#session-title').innerText(), 'Create notes.txt');
    const text = await panelText();
    assert.match(text, /Wrote notes\.txt\./);
    // Each bubble's text (its first line: the chips of what it carried follow, e.g. the current file).
    assert.deepEqual((await frame.locator('.msg.user').allInnerTexts()).map((t) => t.split('\n')[0]), ['Create notes.txt', 'Think it over', 'Think again', 'Do this instead']);
    assert.equal(await frame.locator('.run-end.cancelled').count(), 2, 'the interrupted markers are states');
    assert.doesNotMatch(text, /\[This turn/, 'never the marker text the model reads');
    assert.match(text, /Let me think/, "the stopped answer's text, as it streamed");
    assert.equal(await frame.locator('.step.partial', { hasText: 'Let me think' }).count(), 1, 'shown as unfinished after the reload too (the history\'s partial message)');
    await frame.locator('.step.partial').first().scrollIntoViewIfNeeded();
    await readableInThemes('unfinished-answer', [
      { name: 'unfinished text', selector: '.step.partial .markdown p', text: 4.5 },
      { name: 'unfinished label', selector: '.partial-label', text: 3 },
    ]);
    assert.match(await frame.locator('.run-end.done').first().innerText(), /^Done · [\d,]+ tokens$/, 'a finished run says so, with its tokens');
    await screenshot('reloaded');
  });

  step('lists the sessions and switches to another one', async () => {
    await frame.click('#sessions-toggle');
    await frame.waitForSelector('#sessions-list li.session', { timeout: 15_000 });
    const titles = await frame.locator('#sessions-list .session-title').allInnerTexts();
    assert.deepEqual(titles, ['Create notes.txt', 'Explain the plan'], 'newest first');
    assert.match(await frame.locator('#sessions-list .session-meta').first().innerText(), /messages/);
    await frame.fill('#sessions-search', 'plan');
    assert.deepEqual(await frame.locator('#sessions-list .session-title').allInnerTexts(), ['Explain the plan']);
    await screenshot('sessions');
    await frame.locator('#sessions-list .session-open').first().click();
    await frame.waitForFunction(() => document.getElementById('session-title')?.textContent === 'Explain the plan');
    await frame.waitForSelector('.markdown h2');
    assert.doesNotMatch(await panelText(), /notes\.txt/);
    await screenshot('switched');
  });

  step('is readable in every kind of theme: dark, light, high contrast dark and light', async () => {
    // The session shown has a user bubble, Markdown (inline code, a code block, a link) and a Done state.
    const report: string[] = [];
    const problems: string[] = [];
    for (const [theme, kind] of THEMES) {
      await setTheme(theme);
      await frame.waitForFunction((k) => (document as unknown as { body: { getAttribute(n: string): string | null } }).body.getAttribute('data-vscode-theme-kind') === k, kind, {
        timeout: 30_000,
      });
      await page.waitForTimeout(300); // the theme's colours reach the webview's variables
      const measures = await measure(frame, READABLE);
      report.push(`${theme}: ${measures.map((m) => `${m.name} ${m.contrast.toFixed(1)}${m.fill !== undefined ? `/${m.fill.toFixed(2)}/${(m.border ?? 1).toFixed(2)}` : ''}`).join(', ')}`);
      await screenshot(`theme-${kind.replace('vscode-', '')}`);
      writeFileSync(join(ARTIFACTS, 'contrast.txt'), `${report.join('\n')}\n`);
      problems.push(...unreadable(READABLE, measures).map((p) => `${theme}: ${p}`));
    }
    assert.deepEqual(problems, []);
    await setTheme('Light Modern'); // code-server's default, which the rest of the story's screenshots show
  });

  step('does not ask again for a write the "always" answer covers', async () => {
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    if (!folderRule) {
      // A server without folder rules remembers "always" for the session: continue that one.
      await frame.click('#sessions-toggle');
      await frame.locator('#sessions-list .session-open', { hasText: 'Create notes.txt' }).click();
      await frame.waitForFunction(() => document.getElementById('session-title')?.textContent === 'Create notes.txt');
    }
    await send('Add a second line');
    await frame.waitForFunction(() => /Added the second line/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, {
      timeout: 30_000,
    });
    await savedAs(join(workspace, 'notes.txt'), 'first line\nsecond line\n');
    assert.equal(await frame.locator('.permission:not(.settled)').count(), 0, 'no card was shown');
    await screenshot('approval-remembered');
    if (folderRule) {
      // The folder's rules, from the sessions list: the one just made, revocable.
      await frame.click('#sessions-toggle');
      await frame.click('#approval-rules');
      const rule = page.locator('.quick-input-list .monaco-list-row', { hasText: 'write_file — always allowed in this folder' });
      await rule.waitFor({ timeout: 15_000 });
      await screenshot('approval-rules');
      await page.keyboard.press('Escape');
      await frame.click('#sessions-toggle');
    }
  });

  step('lands on the newest message of a short and a long session when opened and after a reload, and follows it', async () => {
    // Two sessions of this folder, written by a second server on the same database: a short one (3
    // prompts and their answers: 6 messages, taller than the panel) and a long one (prompts committed
    // without a model call, and answers of different heights), from a second provider.
    const short = Array.from({ length: 3 }, (_, i) => ({ text: `Short answer ${i}:\n\n${Array.from({ length: 9 }, (_, k) => `- step ${k} of the short answer ${i}`).join('\n')}` }));
    const answers = Array.from({ length: 30 }, (_, i) => ({ text: longAnswer(i), text_deltas: 2 }));
    writeFileSync(join(home, 'long.json'), JSON.stringify([...short, ...answers]));
    const seeder = await startProvider(join(home, 'long.json'));
    const server = await startServer({ CODY_DB: join(home, 'sessions.db'), CODY_MODEL: 'scripted-model', CODY_MODEL_BASE_URL: seeder.baseUrl, CODY_MODEL_API_KEY: 'sk-seed' }, workspace);
    try {
      const brief = (await server.connection.sendRequest('cody/createSession', { workspaceFolder: workspace, title: 'A short session' })) as { id: string };
      for (let i = 0; i < short.length; i++) await server.connection.sendRequest('cody/run', { prompt: `Short question ${i}`, sessionId: brief.id });
      const session = (await server.connection.sendRequest('cody/createSession', { workspaceFolder: workspace, title: 'A long session' })) as { id: string };
      for (let i = 0; i < answers.length; i++) {
        await Promise.all(Array.from({ length: 4 }, (_, n) => server.connection.sendRequest('cody/run', { prompt: `Note ${i}.${n}: keep this in mind.`, sessionId: session.id, shouldQuery: false })));
        await server.connection.sendRequest('cody/run', { prompt: `Question ${i}`, sessionId: session.id });
      }
    } finally {
      await server.stop();
      seeder.process.kill();
    }
    /** How far the view is above its bottom, and whether the newest answer is in view. */
    const position = () =>
      frame.evaluate(() => {
        const doc = document as unknown as {
          getElementById(id: string): { scrollTop: number; scrollHeight: number; clientHeight: number; getBoundingClientRect(): { bottom: number } };
          querySelectorAll(s: string): ArrayLike<{ getBoundingClientRect(): { top: number; bottom: number } }>;
        };
        const messages = doc.getElementById('messages');
        const answersShown = doc.querySelectorAll('.msg.assistant');
        const last = answersShown[answersShown.length - 1]?.getBoundingClientRect();
        return { above: messages.scrollHeight - messages.scrollTop - messages.clientHeight, visible: last !== undefined && last.bottom <= messages.getBoundingClientRect().bottom + 1 };
      });
    /** The message at the top of the view (its text's start) and how far into it the view is (px). */
    const topMessage = () =>
      frame.evaluate(() => {
        type Box = { textContent: string | null; getBoundingClientRect(): { top: number; bottom: number } };
        const doc = document as unknown as { getElementById(id: string): Box; querySelectorAll(s: string): ArrayLike<Box> };
        const top = doc.getElementById('messages').getBoundingClientRect().top;
        const first = Array.from(doc.querySelectorAll('#transcript > .msg')).find((node) => node.getBoundingClientRect().bottom > top);
        return { text: (first?.textContent ?? '').slice(0, 40), offset: Math.round(top - (first?.getBoundingClientRect().top ?? 0)) };
      });
    const atNewest = async (what: string, newest: string): Promise<void> => {
      await frame.waitForFunction((t) => (document.getElementById('transcript')?.textContent ?? '').includes(t), newest, { timeout: 30_000 });
      await page.waitForTimeout(500); // the messages that came into view took their real height
      const { above, visible } = await position();
      assert.ok(above <= 2, `${what}: at the newest message, not ${above} px above it`);
      assert.ok(visible, `${what}: the newest answer is in view`);
    };
    /**
     * After a reload: the view kept from before is drawn at once, then the extension's answer
     * (the same messages, drawn anew) replaces it. Both land on the newest message, and so does
     * every frame after the answer was drawn (it landed at the top: issue 34), before the turns'
     * checkpoint actions come and change the height again.
     */
    const reloadedAtNewest = async (what: string, newest: string): Promise<void> => {
      await page.reload();
      await openPanel();
      // Frame by frame from now: the view drawn when the answer replaced the kept one (its messages are new elements).
      const watched = frame.evaluate(() => {
        const win = globalThis as unknown as {
          requestAnimationFrame(f: () => void): void;
          document: {
            getElementById(id: string): { scrollTop: number; scrollHeight: number; clientHeight: number };
            querySelectorAll(s: string): ArrayLike<{ dataset: Record<string, string | undefined> }>;
          };
        };
        const kept = Array.from(win.document.querySelectorAll('#transcript > .msg'));
        for (const node of kept) node.dataset.keptView = '1';
        return new Promise<{ redrawn: boolean; frames: number[] }>((resolve) => {
          const frames: number[] = [];
          let redrawn = kept.length === 0;
          const started = Date.now();
          const tick = (): void => {
            const nodes = Array.from(win.document.querySelectorAll('#transcript > .msg'));
            if (!redrawn && nodes.length > 0 && nodes.every((node) => node.dataset.keptView === undefined)) redrawn = true;
            if (redrawn && nodes.length > 0) {
              const m = win.document.getElementById('messages');
              frames.push(m.scrollHeight - m.scrollTop - m.clientHeight);
            }
            if (frames.length >= 30 || Date.now() - started > 30_000) resolve({ redrawn, frames });
            else win.requestAnimationFrame(tick);
          };
          win.requestAnimationFrame(tick);
        });
      });
      const { redrawn, frames } = await watched;
      // (The frame the answer is drawn in may still have its placeholders' heights; from the next one on, settled.)
      if (redrawn) assert.deepEqual(frames.slice(2).filter((above) => above > 2), [], `${what}: every frame after the answer was drawn is at the newest message (px above it: ${frames.join(', ')})`);
      await atNewest(what, newest);
      await frame.locator('.checkpoint-bar').first().waitFor({ timeout: 30_000 });
      await atNewest(`${what}, with the turns' actions`, newest);
    };
    const open = async (title: string): Promise<void> => {
      await frame.click('#sessions-toggle');
      await frame.locator('#sessions-list .session-open', { hasText: title }).click();
    };
    await open('A short session');
    await atNewest('the short session opened from the sessions list', 'Short answer 2:');
    await reloadedAtNewest('the short session after a reload', 'Short answer 2:');
    await screenshot('short-session-reloaded');
    const newest = `Answer ${answers.length - 1}:`;
    await open('A long session');
    await atNewest('opened from the sessions list', newest);
    await screenshot('long-session');
    await reloadedAtNewest('the long session after a reload', newest);
    // Scrolled up, the view stays; "Jump to latest" brings the user back.
    const box = await page.locator('.part.sidebar').boundingBox();
    await page.mouse.move((box?.x ?? 0) + 150, (box?.y ?? 0) + 300);
    await page.mouse.wheel(0, -2500);
    const jump = frame.locator('#jump-latest');
    await jump.waitFor({ state: 'visible', timeout: 15_000 });
    await page.waitForTimeout(500); // where the user is is told once the scrolling stopped
    const reading = await topMessage();
    await screenshot('scrolled-up');
    // …and a reload leaves a user who had scrolled up where they were: the same message at the top.
    await page.waitForTimeout(1500); // the kept view is saved a moment after the last change
    await page.reload();
    await openPanel();
    await frame.waitForFunction((t) => (document.getElementById('transcript')?.textContent ?? '').includes(t), newest, { timeout: 30_000 });
    await frame.locator('.checkpoint-bar').first().waitFor({ timeout: 30_000 });
    await page.waitForTimeout(500);
    assert.deepEqual(await topMessage(), reading, 'after the reload, the message the user had scrolled up to is at the top of the view');
    assert.ok(await frame.locator('#jump-latest').isVisible(), '"Jump to latest" offered'); // the frame after the reload, not jump's
    await screenshot('scrolled-up-reloaded');
    await frame.locator('#jump-latest').click();
    await atNewest('after Jump to latest', newest);
    assert.equal(await frame.locator('#jump-latest').isVisible(), false);
  });

  step('attaches a file with @ and a pasted image, and both reach the model', async () => {
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    // The file the user is in is offered as context; removed here (✕), it is not sent.
    const current = frame.locator('.attachments .current-file');
    await current.waitFor({ timeout: 15_000 });
    assert.deepEqual(await chips(current), ['file greet.py (current file)']);
    await current.locator('.chip-cancel').click();
    await frame.focus('#prompt');
    await page.keyboard.type('What is in @app');
    await frame.locator('.at-menu .slash-name', { hasText: /^app\.py$/ }).waitFor({ timeout: 15_000 });
    await screenshot('at-completion');
    await page.keyboard.press('Enter');
    await frame.locator('.attachments .chip', { hasText: 'app.py' }).waitFor();
    // A pasted image (the browser's own paste event, with a one-pixel png in its clipboard data).
    await frame.evaluate((png) => {
      const win = globalThis as unknown as {
        document: { getElementById(id: string): { dispatchEvent(e: unknown): boolean } };
        DataTransfer: new () => { items: { add(f: unknown): void } };
        File: new (parts: unknown[], name: string, options: { type: string }) => unknown;
        ClipboardEvent: new (type: string, init: { clipboardData: unknown; bubbles: boolean; cancelable: boolean }) => unknown;
        atob(s: string): string;
        Uint8Array: { from(s: string, f: (c: string) => number): unknown };
      };
      const data = new win.DataTransfer();
      data.items.add(new win.File([win.Uint8Array.from(win.atob(png), (c) => c.charCodeAt(0))], 'pixel.png', { type: 'image/png' }));
      win.document.getElementById('prompt').dispatchEvent(new win.ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, PIXEL);
    await frame.locator('.attachments .chip.image').waitFor({ timeout: 15_000 });
    await frame.focus('#prompt');
    await page.keyboard.type('and this picture?');
    await screenshot('attachments');
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => /one red pixel/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.deepEqual(await chips(frame.locator('.msg.user').last().locator('.attached-chip')), ['file app.py', 'file-media pixel.png (1 KB)']);
    // What the model was sent: the file's text (the editor's buffer) and the image, with the prompt.
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }> });
    const content = requests.at(-1)?.messages.filter((m) => m.role === 'user').at(-1)?.content as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    assert.ok(Array.isArray(content), 'a message with an image is sent in parts');
    const text = content[0]?.text ?? '';
    assert.match(text, /^\[Attachments: 2\]\n\n\[Attachment 1: file app\.py\]\n\s*1\tprint\('hello'\)\n/);
    assert.match(text, /\n\[Attachment 2: image pixel\.png, attached below\]\n\n\[Message\]\nWhat is in @app\.py and this picture\?$/);
    assert.equal(content[1]?.image_url?.url, `data:image/png;base64,${PIXEL}`);
    // The answer's text comes before the run's end (its terminal chunk, after the server commits
    // the turn): the composer is back to Send once the run ended, not at the first words.
    await frame.locator('.msg.assistant').last().locator('.run-end.done').waitFor({ timeout: 30_000 });
    assert.equal(await frame.locator('#stop').isVisible(), false, 'no Stop once the run ended');
    assert.equal(await frame.locator('#send').innerText(), 'Send');
    await screenshot('attachments-answered');
  });

  step("attaches the terminal's output (@terminal) and a folder's listing (@src/)", async () => {
    await command('Terminal: Create New Terminal');
    const rows = page.locator('.terminal-wrapper.active .xterm-rows');
    await rows.waitFor({ timeout: 30_000 });
    await page.waitForTimeout(3000); // the shell's prompt (and its shell integration) first
    // VS Code's shell integration streams a command's output from the moment the extension host
    // hears the command started: an instant command's first bytes can come before that (then only its
    // line is recorded). The output comes a moment after the start here, as most commands' does.
    await page.keyboard.type('sleep 0.5; echo cody-terminal-$((6*7))');
    await page.keyboard.press('Enter');
    // The terminal draws on a canvas (no text in the DOM): the model request below shows what it printed.
    await page.waitForTimeout(2000);
    await frame.focus('#prompt');
    await page.keyboard.type('What did @term');
    const terminal = frame.locator('.at-menu .slash-item', { has: frame.locator('.slash-name', { hasText: /^@terminal$/ }) });
    await terminal.waitFor({ timeout: 15_000 });
    await terminal.click();
    await page.keyboard.type('print, and what is in @src');
    const folder = frame.locator('.at-menu .slash-item', { has: frame.locator('.slash-name', { hasText: /^src\/$/ }) });
    await folder.waitFor({ timeout: 15_000 });
    await screenshot('terminal-and-folder');
    await folder.click();
    assert.deepEqual((await chips(frame.locator('.attachments .chip'))).filter((c) => !c.includes('(current file)')), ['terminal bash (terminal)', 'folder src/']);
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => /The terminal said 42/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await frame.locator('.msg.assistant').last().locator('.run-end.done').waitFor({ timeout: 30_000 });
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }> });
    const text = String(requests.at(-1)?.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
    assert.match(text, /\[Attachment \d: terminal output \(bash\)\]\n[\s\S]*\$ sleep 0\.5; echo cody-terminal-\$\(\(6\*7\)\)\n[\s\S]*cody-terminal-42/, 'the command and its output, from shell integration');
    assert.match(text, /\[Attachment \d: file src\][\s\S]*util\.py/, "the folder's listing");
    await screenshot('terminal-and-folder-answered');
  });

  step('Ctrl+Alt+C (Cody: Open Chat) opens the closed panel with the keys in the prompt', async () => {
    const title = page.locator('.part.sidebar .title-label', { hasText: /cody/i });
    await command('View: Close Primary Side Bar');
    await title.waitFor({ state: 'hidden', timeout: 15_000 });
    await page.locator('.part.editor').click({ position: { x: 300, y: 300 } });
    await page.keyboard.press('Control+Alt+KeyC');
    await title.waitFor({ timeout: 15_000 });
    frame = await chatFrame(page, 30_000);
    const focused = () => (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document.activeElement?.id === 'prompt';
    await frame.waitForFunction(focused, undefined, { timeout: 15_000 });
    await page.keyboard.type('typed after Ctrl+Alt+C');
    assert.equal(await frame.inputValue('#prompt'), 'typed after Ctrl+Alt+C');
    await screenshot('open-chat-keybinding');
    await frame.fill('#prompt', '');
  });

  step("feeds an edited file's new problems back to the model (cody/diagnostics)", async () => {
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input').fill('config.json');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'config.json' }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: 'config.json' }).waitFor({ timeout: 15_000 });
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Break config.json');
    const card = frame.locator('.permission:not(.settled)');
    await card.waitFor({ timeout: 30_000 });
    await card.locator('button', { hasText: 'Allow once' }).click();
    await frame.waitForFunction(() => /config\.json has a problem now/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await screenshot('problems-fed-back');
    // The edit went to the editor's buffer; its JSON language server's error reached the model in the tool result.
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }> });
    const result = String(requests.at(-1)?.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '');
    assert.match(result, /^edited config\.json/);
    assert.match(result, /\n\nNew problems in config\.json \(reported by the editor\):\n- line 1:\d+: error: /);
  });

  step('restores the files of a turn from its checkpoint, then forks from it (a new session)', async () => {
    const data = join(workspace, 'data.txt');
    writeFileSync(data, 'as the user left it\n');
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Change data.txt');
    const card = frame.locator('.permission:not(.settled)');
    await card.waitFor({ timeout: 30_000 });
    await card.locator('button', { hasText: 'Allow once' }).click();
    await frame.waitForFunction(() => /Changed data\.txt/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal(readFileSync(data, 'utf8'), 'changed by the agent\n', 'the command wrote to the disk');
    const bar = frame.locator('.checkpoint-bar').last();
    await bar.waitFor({ timeout: 15_000 });
    assert.equal(await bar.locator('.checkpoint-diff').innerText(), '1 file changed');
    await screenshot('checkpoint-actions');
    await bar.locator('.checkpoint-restore').click();
    await bar.locator('.checkpoint-files', { hasText: 'data.txt' }).waitFor({ timeout: 15_000 });
    assert.equal(await bar.locator('.checkpoint-files').innerText(), 'Files that will change: data.txt');
    await screenshot('checkpoint-restore-choice');
    await bar.locator('.checkpoint-choice button', { hasText: 'Files only' }).click();
    const restored = frame.locator('.checkpoint-restored');
    await restored.waitFor({ timeout: 15_000 });
    assert.match(await restored.innerText(), /Restored to before that message: 1 file put back: data\.txt \(modified\)\./);
    assert.equal(readFileSync(data, 'utf8'), 'as the user left it\n', 'back on disk');
    await screenshot('checkpoint-restored');
    // Fork from the turn: a new session with the conversation before its prompt (none), opened.
    await frame.locator('.checkpoint-bar').last().locator('.checkpoint-fork').click();
    await frame.waitForFunction(() => document.getElementById('session-title')?.textContent === 'Change data.txt (fork)', undefined, { timeout: 15_000 });
    // The notice follows the session's page (its title comes first).
    await frame.waitForFunction(() => /Forked from “Change data\.txt”/.test(document.getElementById('messages')?.textContent ?? ''), undefined, { timeout: 15_000 });
    assert.match(await panelText(), /Forked from “Change data\.txt”/);
    assert.equal(await frame.locator('.msg.user').count(), 0, 'the fork holds what came before that prompt: nothing');
    await screenshot('checkpoint-forked');
    await frame.click('#sessions-toggle');
    await frame.locator('#sessions-list .session-title', { hasText: 'Change data.txt (fork)' }).waitFor({ timeout: 15_000 });
    const titles = await frame.locator('#sessions-list .session-title').allInnerTexts();
    assert.ok(titles.includes('Change data.txt') && titles.includes('Change data.txt (fork)'), `the original is still there: ${titles.join(', ')}`);
    await frame.click('#sessions-toggle');
  });

  step('plans in plan mode (picked in the composer), then "Carry out the plan" switches to code and asks for the write', async () => {
    writeFileSync(join(workspace, 'AGENTS.md'), 'Greet politely.\n'); // project instructions: the Rules line names them
    writeFileSync(join(workspace, 'greeting.txt'), 'Hello.\n');
    await frame.click('#new-session');
    // The mode is picked at once, while the new session is being made (the fork shown before has no
    // messages either): it goes to the new session (CI once picked it for the fork).
    await frame.selectOption('#mode-picker', 'plan');
    await frame.waitForFunction(() => document.getElementById('session-title')?.textContent === 'New session');
    await send('Plan a greeting for the shop');
    await frame.locator('#plan-bar').waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await frame.locator('#rules-line').innerText(), 'Rules: AGENTS.md');
    assert.equal(await frame.inputValue('#mode-picker'), 'plan');
    await screenshot('plan-ready');
    assert.equal(readFileSync(join(workspace, 'greeting.txt'), 'utf8'), 'Hello.\n', 'a plan changes nothing');
    const requests = () =>
      readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string } }> });
    const planned = requests().at(-1);
    const offered = planned?.tools?.map((t) => t.function.name) ?? [];
    assert.ok(['read_file', 'list_dir', 'glob', 'grep'].every((name) => offered.includes(name)), `plan mode reads: ${offered.join(', ')}`);
    assert.deepEqual(offered.filter((name) => ['write_file', 'edit_file', 'run_command', 'stop_command'].includes(name)), [], 'plan mode offers no tool that changes things');
    assert.match(String(planned?.messages[0]?.content), /# Mode: plan/);
    assert.match(String(planned?.messages[0]?.content), /Greet politely\./);
    await frame.click('#plan-bar .plan-carry');
    const card = frame.locator('.permission:not(.settled)');
    await card.waitFor({ timeout: 30_000 });
    assert.equal(await frame.inputValue('#mode-picker'), 'code', 'the session is in code mode now');
    assert.equal(await frame.locator('#plan-bar').isVisible(), false);
    await screenshot('carry-out-asks');
    const carry = requests().at(-1);
    assert.deepEqual(carry?.messages.at(-1), { role: 'user', content: 'Carry out the plan.' });
    assert.ok(carry?.tools?.some((t) => t.function.name === 'edit_file'), 'code mode offers every tool');
    await card.locator('button', { hasText: 'Allow once' }).click();
    await frame.waitForFunction(() => /Carried out the plan/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await screenshot('plan-carried-out');
    assert.equal(readFileSync(join(workspace, 'greeting.txt'), 'utf8'), 'Hello, shop!\n');
  });

  step("picks a model in the composer (the endpoint's models, listed when opened), and the next model request uses it", async () => {
    assert.equal(await frame.inputValue('#model-picker'), 'scripted-model', "the session's model");
    await frame.focus('#model-picker'); // opened from the keyboard: the endpoint's models are asked for now
    await frame.waitForFunction((n) => document.querySelectorAll('#model-picker option').length === n, LISTED_MODELS.length, { timeout: 15_000 });
    assert.deepEqual(await frame.locator('#model-picker option').allInnerTexts(), LISTED_MODELS);
    await frame.selectOption('#model-picker', 'big-model');
    // The session's model changed (cody/updateSession): the header's tooltip says so.
    await frame.locator('#session-title[title*="· big-model ·"]').waitFor({ state: 'attached', timeout: 15_000 });
    const ended = await frame.locator('.run-end').count();
    await send('Which model answers?');
    await runEnded(ended + 1);
    assert.match(await panelText(), /The big model answers\./);
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { model: string });
    assert.equal(requests.at(-1)?.model, 'big-model', 'the model request uses the model picked');
    assert.equal(requests.at(-2)?.model, 'scripted-model', 'the one before it, the model of then');
    assert.equal(await frame.inputValue('#model-picker'), 'big-model');
    await screenshot('model-picked');
  });

  step("answers a proposed edit from its diff editor's title bar: Accept writes it, Reject refuses it (the model is told)", async () => {
    const todo = join(workspace, 'todo.txt');
    writeFileSync(todo, 'buy milk\n');
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    const diffTab = page.locator('.tabs-container .tab', { hasText: 'todo.txt (Cody)' });
    const titleAction = (label: string) => page.locator(`.editor-group-container.active .action-label[aria-label="${label}"]`);
    /** Sends `prompt`, waits for its edit's card, opens the edit's diff from its tool card. */
    const proposed = async (prompt: string): Promise<void> => {
      await send(prompt);
      await frame.locator('.permission:not(.settled)').waitFor({ timeout: 30_000 });
      await frame.locator('.tool').last().locator('.tool-diff').click();
      await diffTab.and(page.locator('.tab.active')).waitFor({ timeout: 15_000 });
      await titleAction('Accept Edit').waitFor({ timeout: 15_000 });
      assert.ok(await titleAction('Reject Edit').isVisible());
    };
    await proposed('Add bread to the todo list');
    assert.equal(readFileSync(todo, 'utf8'), 'buy milk\n', 'nothing is written before the answer');
    await screenshot('diff-accept-reject');
    await titleAction('Accept Edit').click();
    await diffTab.waitFor({ state: 'detached', timeout: 15_000 });
    await frame.waitForFunction(() => /Added bread to the list\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal(await frame.locator('.permission.settled .permission-outcome').last().innerText(), 'Allowed once', 'the card settled as its Allow once would');
    assert.equal(readFileSync(todo, 'utf8'), 'buy milk\nbuy bread\n', 'the accepted edit is on disk');
    await screenshot('diff-accepted');
    await proposed('Add eggs too');
    await titleAction('Reject Edit').click();
    await diffTab.waitFor({ state: 'detached', timeout: 15_000 });
    await frame.waitForFunction(() => /Understood: no eggs\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal(await frame.locator('.permission.settled .permission-outcome').last().innerText(), 'Denied');
    assert.equal(readFileSync(todo, 'utf8'), 'buy milk\nbuy bread\n', 'the rejected edit is not written');
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }> });
    assert.match(String(requests.at(-1)?.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''), /^Permission to run edit_file was refused by the user/, 'the model got the refusal');
    await screenshot('diff-rejected');
  });

  step('denies an edit saying what to do instead (typed in the card, Enter), and the model gets it with the refusal', async () => {
    await send('Add butter too');
    const card = frame.locator('.permission:not(.settled)');
    await card.waitFor({ timeout: 30_000 });
    const feedback = card.locator('.permission-feedback');
    await feedback.fill('No butter: add oat milk instead');
    await screenshot('deny-with-feedback');
    await feedback.press('Enter');
    await frame.waitForFunction(() => /Understood: oat milk instead of butter\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal(await frame.locator('.permission.settled .permission-outcome').last().innerText(), 'Denied: “No butter: add oat milk instead”', 'the settled card says what the user said');
    assert.equal(readFileSync(join(workspace, 'todo.txt'), 'utf8'), 'buy milk\nbuy bread\n', 'the denied edit is not written');
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }> });
    const refusal = String(requests.at(-1)?.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '');
    assert.match(refusal, /^Permission to run edit_file was refused by the user, who said what to do instead:\nNo butter: add oat milk instead\n/, 'the model got the refusal with the words');
    await screenshot('denied-with-feedback');
  });

  step("shows a subagent's steps in a block under its task call (live, folded once it answered, again after a reload), and a hook's refusal", async () => {
    // The user's own hook (no approval needed): PreToolUse refuses `rm`, the reason on stderr.
    mkdirSync(join(home, 'xdg', 'cody-lsp'), { recursive: true });
    writeFileSync(
      join(home, 'xdg', 'cody-lsp', 'hooks.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'run_command', hooks: [{ type: 'command', command: `grep -q '"rm ' && { echo 'rm is not allowed here: move files to trash/ instead' >&2; exit 2; }; exit 0` }] }] } }),
    );
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Find the greeting, then clean up');
    await frame.waitForFunction(() => /the hook kept notes\.txt/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 60_000 });
    await frame.locator('.msg.assistant').last().locator('.run-end.done').waitFor({ timeout: 30_000 });
    const run = frame.locator('.msg.assistant').last();
    const block = run.locator('details.subagent');
    assert.equal(await block.count(), 1);
    assert.match(await block.locator(':scope > summary').innerText(), /explore\s+Look for the greeting/);
    assert.equal(await block.getAttribute('open'), null, 'folded once its task answered');
    assert.match(await run.locator(':scope > .tool').first().innerText(), /task Look for the greeting \(explore\)/);
    await block.locator(':scope > summary').click();
    assert.match(await block.locator('.tool .tool-call').innerText(), /^grep def greet/);
    assert.match(await block.locator('.markdown').innerText(), /greet is defined in greet\.py\./);
    const hook = run.locator('.hook.blocked');
    assert.equal(await hook.innerText(), 'PreToolUse hook blocked: rm is not allowed here: move files to trash/ instead');
    assert.ok(existsSync(join(workspace, 'notes.txt')), 'the hook kept the file');
    assert.equal(await frame.locator('.permission:not(.settled)').count(), 0, 'refused before any approval was asked');
    await screenshot('subagent-and-hook');
    await readableInThemes('subagent-and-hook', [
      { name: 'subagent agent', selector: '.subagent-agent', text: 4.5 },
      { name: 'subagent task', selector: '.subagent-description', text: 3 },
      { name: "subagent's text", selector: '.subagent-body .markdown p', text: 4.5 },
      { name: "subagent's tool", selector: '.subagent-body .tool-call', text: 3 },
      { name: 'hook', selector: '.hook-label', text: 3 },
      { name: 'hook message', selector: '.hook-message', text: 3 },
    ]);
    // After a reload, the subagent's steps come from the history (folded under the task call).
    rmSync(join(home, 'xdg', 'cody-lsp', 'hooks.json'));
    await page.reload();
    await openPanel();
    await frame.waitForFunction(() => /the hook kept notes\.txt/.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await frame.locator('.checkpoint-bar').first().waitFor({ timeout: 30_000 }); // the extension's answer is drawn
    const stored = frame.locator('.msg.assistant details.subagent');
    await stored.locator(':scope > summary').click();
    assert.match(await stored.locator('.tool .tool-call').innerText(), /^grep def greet/);
    assert.match(await stored.locator('.markdown').innerText(), /greet is defined in greet\.py\./);
    await screenshot('subagent-reloaded');
  });

  step('offers the folder\'s slash commands in the "/" menu and runs one (the server expands it)', async () => {
    mkdirSync(join(workspace, '.claude', 'commands'), { recursive: true });
    writeFileSync(join(workspace, '.claude', 'commands', 'review-pr.md'), '---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview pull request #$ARGUMENTS: read its diff and list the problems.\n');
    await frame.focus('#prompt');
    await page.keyboard.type('/');
    const item = frame.locator('.slash-menu .slash-item.custom', { hasText: '/review-pr' });
    await item.waitFor({ timeout: 15_000 });
    assert.equal(await item.locator('.slash-hint').innerText(), '<number>');
    assert.equal(await item.locator('.slash-source').innerText(), 'folder');
    await screenshot('slash-commands');
    await page.keyboard.type('rev');
    await page.keyboard.press('Enter');
    assert.equal(await frame.inputValue('#prompt'), '/review-pr ');
    await page.keyboard.type('42');
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => /Pull request 42 looks fine\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal((await frame.locator('.msg.user').last().innerText()).split('\n')[0], '/review-pr 42');
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }> });
    assert.match(String(requests.at(-1)?.messages.filter((m) => m.role === 'user').at(-1)?.content ?? ''), /Review pull request #42: read its diff and list the problems\./, 'the model read the expansion');
    await screenshot('slash-command-ran');
  });

  step("answers the agent's code_nav with VS Code's own TypeScript (cody/languageFeature)", async () => {
    // lib.ts and main.ts are written before the story (quick open finds a file made just now only once its watcher saw it).
    // VS Code's TypeScript answers once its server runs: open main.ts and go to greet's definition by hand first.
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input').fill('main.ts');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'main.ts' }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: 'main.ts' }).waitFor({ timeout: 15_000 });
    const greet = page.locator('.editor-group-container.active .view-line', { hasText: "console.log(greet('shop'))" }).locator('span', { hasText: /^greet$/ }).first();
    for (let attempt = 0; attempt < 20; attempt++) {
      await greet.click();
      await page.keyboard.press('F12');
      if (await page.locator('.tabs-container .tab.active', { hasText: 'lib.ts' }).waitFor({ timeout: 3_000 }).then(() => true, () => false)) break;
    }
    await page.locator('.tabs-container .tab.active', { hasText: 'lib.ts' }).waitFor({ timeout: 5_000 });
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Where is greet defined?');
    await frame.waitForFunction(() => /greet is defined in lib\.ts, line 1\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 60_000 });
    const requests = readFileSync(join(home, 'requests.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string } }> });
    const asked = requests.at(-2);
    assert.ok(asked?.tools?.some((t) => t.function.name === 'code_nav'), 'code_nav offered: the editor answers');
    const result = String(requests.at(-1)?.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '');
    assert.match(result, /answered by the editor/, result);
    assert.match(result, /^lib\.ts:1:17: export function greet\(name: string\): string \{$/m, 'the definition, from VS Code\'s TypeScript, at the right place');
    assert.match(await frame.locator('.tool').last().innerText(), /code_nav/);
    await screenshot('code-nav-typescript');
  });

  step("reviews a run's changes: undoes one of two hunks from the review bar, its diff marks them, the review survives a reload", async () => {
    const shop = join(workspace, 'shop.py');
    writeFileSync(shop, SHOP_BEFORE);
    // config.json still holds an earlier run's unsaved edit in its buffer: saved first, so the folder is
    // as on disk (a buffer left as the run found it is not the run's change: tests/e2e/test_change_review.py).
    await command('File: Save All');
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Tidy shop.py');
    const asked = frame.locator('.permission:not(.settled)');
    if (await asked.waitFor({ timeout: 5_000 }).then(() => true, () => false)) await asked.locator('button', { hasText: 'Allow once' }).click();
    await frame.waitForFunction(() => /Renamed the shop and added a health check\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    const bar = frame.locator('#review');
    await bar.waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await bar.locator('.review-title').innerText(), '1 file changed');
    const hunks = bar.locator('.review-file[data-path="shop.py"] .review-hunk');
    assert.equal(await hunks.count(), 2, 'one file: its hunks shown at once');
    assert.match(await hunks.nth(0).locator('.review-lines').innerText(), /-NAME = 'shop'\n\+NAME = 'the shop'/);
    assert.match(await hunks.nth(1).locator('.review-lines').innerText(), /\+def health\(\):/);
    await screenshot('review-bar');
    await savedAs(shop, SHOP_AFTER); // what the run left (in the editor's buffer if open) is on disk
    // Undo the first hunk only.
    await hunks.nth(0).locator('.review-undo').click();
    await hunks.nth(0).locator('.review-state', { hasText: 'Undone' }).waitFor({ timeout: 30_000 });
    assert.equal(await hunks.nth(1).locator('.review-undo').count(), 1, 'the other hunk still to review');
    const undone = SHOP_AFTER.replace("NAME = 'the shop'", "NAME = 'shop'");
    await savedAs(shop, undone);
    await screenshot('review-hunk-undone');
    // The file in the diff editor: before the run ↔ the file, the hunk still to review marked; Keep All / Undo All in its title bar.
    await bar.locator('.review-open', { hasText: 'shop.py' }).click();
    await page.locator('.tabs-container .tab.active', { hasText: "shop.py (Cody: the run's changes)" }).waitFor({ timeout: 15_000 });
    await page.locator('.editor-group-container.active .action-label[aria-label="Keep All Changes in This File"]').waitFor({ timeout: 15_000 });
    assert.ok(await page.locator('.editor-group-container.active .action-label[aria-label="Undo All Changes in This File"]').isVisible());
    await page.locator('.editor-group-container.active .modified-in-monaco-diff-editor .view-line', { hasText: 'def health():' }).first().waitFor({ timeout: 15_000 });
    await screenshot('review-diff');
    // A reload: the bar comes back as it was reviewed.
    await page.reload();
    await openPanel();
    // The panel's frame after the reload is a new one: the bar and its hunks are looked up in it.
    const barAgain = frame.locator('#review');
    const hunksAgain = barAgain.locator('.review-file[data-path="shop.py"] .review-hunk');
    await barAgain.waitFor({ state: 'visible', timeout: 30_000 });
    await hunksAgain.nth(0).locator('.review-state', { hasText: 'Undone' }).waitFor({ timeout: 30_000 });
    assert.equal(await hunksAgain.nth(1).locator('.review-keep').count(), 1);
    await screenshot('review-reloaded');
    await readableInThemes('review-bar', [
      { name: 'review title', selector: '.review-title', text: 4.5 },
      { name: 'review file', selector: '.review-open', text: 3 },
      { name: 'review added count', selector: '.review-added', text: 3 },
      { name: 'review added line', selector: '.review-line.add', text: 3 },
      { name: 'review removed line', selector: '.review-line.del', text: 3 },
      { name: 'review context line', selector: '.review-line.ctx', text: 4.5 },
      { name: 'review state', selector: '.review-state.undone', text: 3 },
      { name: 'Keep button', selector: '.review-keep', text: 4.5 },
      { name: 'Undo all button', selector: '.review-undo-all', text: 4.5 },
    ]);
    await hunksAgain.nth(1).locator('.review-keep').click();
    await barAgain.waitFor({ state: 'hidden', timeout: 15_000 });
    assert.equal(readFileSync(shop, 'utf8'), undone, 'Keep changes nothing');
  });

  step("pins the agent's plan above the composer, lists a background dev server with its output and Stop, shows web_fetch's page; the plan is back after a reload", async () => {
    writeFileSync(join(workspace, 'index.html'), '<!doctype html><html><head><title>Shop</title></head><body><h1>The shop</h1><p>Open <b>9 to 5</b>, Monday to Saturday.</p></body></html>\n');
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Start the shop and read its page');
    // The background command and the fetch may ask: allowed once each.
    const answered = frame.waitForFunction(() => /the dev server is still running\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 60_000 }).then(() => true);
    // A card just answered keeps its (disabled) buttons until it is drawn settled: only an enabled
    // "Allow once" is clicked, and a card that went meanwhile is no failure.
    const allow = frame.locator('.permission:not(.settled) button:not([disabled])', { hasText: 'Allow once' }).first();
    while (!(await Promise.race([answered, allow.waitFor({ timeout: 60_000 }).then(() => false, () => false)]))) {
      await allow.click({ timeout: 5_000 }).catch(() => undefined);
    }
    // The plan, pinned above the composer.
    const plan = frame.locator('#plan-steps');
    await plan.waitFor({ state: 'visible' });
    assert.equal(await plan.locator('.plan-progress').innerText(), '2 of 3 done');
    assert.deepEqual(await plan.locator('.plan-entry').evaluateAll((items) => items.map((i) => `${i.className.replace('plan-entry ', '')}: ${i.textContent}`)), [
      'completed: Start the dev server',
      'completed: Read the shop page',
      'in_progress: Check the opening hours',
    ]);
    // The dev server, running, with its output (the fetch's request in its log) and Stop.
    const list = frame.locator('#background');
    await list.waitFor({ state: 'visible', timeout: 15_000 });
    assert.equal(await list.locator('.bg-title').innerText(), '1 background command running');
    assert.equal(await list.locator('.bg-text').first().innerText(), `$ python3 -u -m http.server ${devPort} --bind 127.0.0.1`);
    await list.locator('.bg-toggle').first().click();
    await list.locator('.bg-output', { hasText: 'GET /index.html' }).waitFor({ timeout: 15_000 });
    assert.match(await frame.locator('.msg.assistant').last().locator('.tool .tool-call').nth(1).innerText(), /\(background\)$/);
    // web_fetch's page: its HTML as Markdown.
    const fetchCard = frame.locator('.msg.assistant').last().locator('.tool', { hasText: 'web_fetch' });
    assert.match(await fetchCard.locator('.tool-result').innerText(), /^HTTP 200, text\/html/);
    await fetchCard.locator('summary').click();
    assert.equal(await fetchCard.locator('.tool-page h1').innerText(), 'The shop');
    assert.equal(await fetchCard.locator('.tool-page strong').innerText(), '9 to 5');
    await screenshot('plan-background-page');
    await readableInThemes('power-tools', [
      { name: 'plan title', selector: '.plan-title', text: 4.5 },
      { name: 'plan progress', selector: '.plan-progress', text: 3 },
      { name: 'plan step done', selector: '.plan-entry.completed .plan-step', text: 3 },
      { name: 'plan step now', selector: '.plan-entry.in_progress .plan-step', text: 4.5 },
      { name: 'background title', selector: '.bg-title', text: 4.5 },
      { name: 'background command', selector: '.bg-text', text: 4.5 },
      { name: 'background running', selector: '.bg-status.running', text: 3 },
      { name: 'Stop button', selector: '.bg-stop', text: 4.5 },
      { name: 'background output', selector: '.bg-output', text: 4.5 },
      { name: 'page heading', selector: '.tool-page h1', text: 4.5 },
      { name: 'page text', selector: '.tool-page p', text: 4.5 },
      { name: 'page address', selector: '.tool-page-url', text: 3 },
    ]);
    // Stop: the server ends (its port closes), and the list says so until cleared.
    await list.locator('.bg-stop').click();
    await list.locator('.bg-status.stopped').waitFor({ timeout: 15_000 });
    assert.equal(await list.locator('.bg-title').innerText(), 'Background command ended');
    await screenshot('background-stopped');
    await list.locator('.bg-clear').click();
    await list.waitFor({ state: 'hidden', timeout: 15_000 });
    // A reload: the session's plan is pinned again.
    await page.reload();
    await openPanel();
    await frame.waitForFunction(() => /the dev server is still running\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await frame.locator('#plan-steps .plan-progress', { hasText: '2 of 3 done' }).waitFor({ timeout: 30_000 });
    assert.equal(await frame.locator('#background').isVisible(), false, 'no command runs');
    await screenshot('plan-reloaded');
  });

  step('moves to the secondary side bar ("View: Move View"), works there, and is still there after a reload', async () => {
    const row = (text: string) => page.locator('.quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name').getByText(text, { exact: true }) });
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill('>View: Move View');
    await row('View: Move View').first().click();
    // The views, each under its place ("Side Bar / Cody"), then where to.
    await page.locator('.quick-input-list .monaco-list-row[aria-label="Chat, Side Bar / Cody"]').click();
    await row('New Secondary Side Bar Entry').click();
    // The secondary side bar shows Cody's view; the activity bar has no Cody icon any more.
    const inSecondary = page.locator('.part.auxiliarybar .composite-bar .action-item.checked', { hasText: /cody/i });
    await inSecondary.waitFor({ timeout: 15_000 });
    assert.equal(await page.locator('.activitybar [aria-label^="Cody"]').count(), 0);
    frame = await chatFrame(page, 45_000);
    await frame.locator('#composer').waitFor({ state: 'visible', timeout: 30_000 });
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0);
    await send('Where are you?');
    await frame.waitForFunction(() => /Answering from the secondary side bar\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await screenshot('secondary-side-bar');
    // VS Code remembers where the view is: after a reload it opens there (Cody: Open Chat, as the
    // window may come back with the secondary side bar closed), with its session.
    await page.reload();
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    await command('Cody: Open Chat');
    await inSecondary.waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('.activitybar [aria-label^="Cody"]').count(), 0, 'not back in the side bar');
    frame = await chatFrame(page, 45_000);
    await frame.waitForFunction(() => /Answering from the secondary side bar\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await screenshot('secondary-side-bar-reloaded');
    // Back to where it was, for the rest of the story.
    await command('View: Reset View Locations');
    await page.locator('.activitybar [aria-label^="Cody"]').first().waitFor({ timeout: 15_000 });
    await openPanel();
  });

  step('keeps the Output channel readable: no error for a restart, no stray lines', async () => {
    await command('Cody: Restart Server');
    await command('Cody: Show Output');
    const lines = page.locator('.part.panel .view-lines .view-line');
    const restarted = async () => (await lines.allInnerTexts()).filter((line) => line.includes('[cody] started')).length >= 2;
    for (let i = 0; i < 100 && !(await restarted()); i++) await page.waitForTimeout(200);
    const text = (await lines.allInnerTexts()).map((line) => line.replace(/\u00a0/g, ' ').trim());
    assert.ok(text.some((line) => line.startsWith('[cody] the server stopped (exit code 0)')), `a restart is said plainly:\n${text.join('\n')}`);
    assert.deepEqual(text.filter((line) => /^\[Error|^true$|WARNING|Traceback/.test(line)), [], text.join('\n'));
    await screenshot('output');
    await page.keyboard.press('Control+J'); // hide the panel again
  });

  step('with no model configured, a run fails with a Configure button that opens the cody.* settings', async () => {
    await setSetting('cody.model', '');
    // The server restarts without a model (the setup the panel shows when empty says so); a new
    // session has none either (a session keeps the model it was created with).
    await frame.waitForFunction(() => /Choose a model/.test(document.getElementById('welcome')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await frame.click('#new-session');
    await frame.waitForFunction(() => document.querySelectorAll('.msg').length === 0 && document.getElementById('session-title')?.textContent === 'New session');
    await send('Hello?');
    const failed = frame.locator('.run-end.error');
    await failed.waitFor({ timeout: 30_000 });
    assert.match(await failed.innerText(), /^Failed: No model is configured: set the model and endpoint in the cody\.\* settings/);
    await failed.locator('button', { hasText: 'Configure' }).click();
    await page.locator('.settings-editor').waitFor({ timeout: 15_000 });
    await page.locator('.settings-editor .settings-count-widget', { hasText: /\d+ Settings Found/ }).waitFor({ timeout: 15_000 });
    assert.match(await page.locator('.settings-editor .suggest-input-container').innerText(), /@ext:cody-lsp\.cody-lsp/);
    await screenshot('configure');
  });

  step('says once what is wrong with a cody.pythonPath that has no cody-lsp, with a button', async () => {
    await setSetting('cody.pythonPath', '/usr/bin/python3');
    // The setup checklist (the panel is emptied, so it shows) says it, with the install offered (the .vsix carries the wheel).
    await frame.waitForFunction(() => /cody-lsp is not installed/.test(document.getElementById('welcome')?.textContent ?? ''), undefined, {
      timeout: 30_000,
    });
    const python = frame.locator('.setup-steps li').first();
    assert.match(await python.innerText(), /^\S*\s*cody-lsp is not installed in \/usr\/bin\/python3 \(cody\.pythonPath\): No module named .?cody_lsp.? Install it into a private environment, or there with/);
    assert.deepEqual(await python.locator('button').allInnerTexts(), ['Install cody-lsp into a private environment', 'Set Python Path', 'Show Output']);
    await page.waitForTimeout(3000); // a restart loop would add more messages meanwhile
    // Said once, in the panel: no notification (VS Code cannot take one back once the install or a new setting fixed it), no notice over the checklist.
    const problems = page.locator('.notifications-toasts .notification-toast', { hasText: /cody-lsp|cody_lsp|connection|server/i });
    assert.equal(await problems.count(), 0, 'no notification, no restart storm');
    assert.equal(await frame.locator('#transcript .notice').count(), 0);
    await screenshot('bad-python-path');
  });
});
