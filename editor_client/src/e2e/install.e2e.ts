// The first run in a fresh VS Code profile whose Python lacks cody-lsp (code-server, the packaged
// .vsix, Chromium): the setup checklist says so and offers "Install cody-lsp into a private
// environment"; an install that cannot find a dependency fails with pip's last lines and Retry;
// with the folder of wheels set (cody.serverWheelhouse: the dependencies the CI downloaded before
// the run into $CODY_WHEELHOUSE; nothing is downloaded here) Retry makes a venv in the extension's
// global storage, installs the wheel the .vsix carries into it offline, sets cody.pythonPath (the
// user's setting) and the server it starts answers a prompt. Screenshots in test-artifacts/install/.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Frame, Page } from 'playwright-core';
import { startProvider, type Provider } from '../test/support/realServer';
import { chatFrame, CodeServer, codeServerDir, EDITOR_CLIENT, launchBrowser } from './codeServer';

declare const document: { getElementById(id: string): { textContent: string | null } | null };

const VSIX = process.env.CODY_VSIX || join(EDITOR_CLIENT, 'cody-lsp.vsix');
const WHEELHOUSE = process.env.CODY_WHEELHOUSE ?? '';
const ARTIFACTS = join(EDITOR_CLIENT, 'test-artifacts', 'install');
/** A bare venv of it (no cody_lsp, no pip) is the interpreter the private environment is made from: the Python the wheels were downloaded for. */
const BASE_PYTHON = process.env.CODY_PYTHON || 'python3';

describe('the install action in a fresh profile (code-server)', { timeout: 600_000 }, () => {
  let home: string;
  let provider: Provider;
  let codeServer: CodeServer;
  let browser: Browser;
  let page: Page;
  let frame: Frame;
  let bare: string;
  let shot = 0;

  const screenshot = async (name: string): Promise<void> => {
    shot++;
    await page.screenshot({ path: join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`) });
  };
  const welcome = () => frame.evaluate(() => document.getElementById('welcome')?.textContent ?? '');
  const toast = (text: string | RegExp) => page.locator('.notifications-toasts .notification-toast', { hasText: text });

  const command = async (title: string): Promise<void> => {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(`>${title}`);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
    await page.keyboard.press('Enter');
  };

  /** Sets a text setting through the Settings editor (User scope), as a user would. */
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
  };

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

  before(async () => {
    assert.ok(existsSync(VSIX), `the packaged extension is missing at ${VSIX}: run npm run package`);
    assert.ok(WHEELHOUSE && existsSync(WHEELHOUSE) && readdirSync(WHEELHOUSE).some((f) => f.endsWith('.whl')), `CODY_WHEELHOUSE (${WHEELHOUSE || 'unset'}) must be a folder of the dependencies' wheels: ci.sh downloads them`);
    rmSync(ARTIFACTS, { recursive: true, force: true });
    mkdirSync(ARTIFACTS, { recursive: true });
    home = realpathSync(mkdtempSync(join(tmpdir(), 'cody-install-e2e-')));
    const workspace = join(home, 'shop');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'app.py'), "print('hello')\n");
    // A Python without cody_lsp (nor pip): what a fresh machine's interpreter is to this extension.
    bare = join(home, 'bare-python');
    execFileSync(BASE_PYTHON, ['-m', 'venv', '--without-pip', bare]);
    mkdirSync(join(home, 'empty-wheelhouse'));
    writeFileSync(join(home, 'script.json'), JSON.stringify([{ text: 'Installed, and answering.' }]));
    provider = await startProvider(join(home, 'script.json'));
    const settings = {
      'security.workspace.trust.enabled': false,
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'extensions.ignoreRecommendations': true,
      'remote.autoForwardPorts': false,
      'cody.pythonPath': join(bare, 'bin', 'python'),
      // First a folder without the dependencies: the install fails, and says why.
      'cody.serverWheelhouse': join(home, 'empty-wheelhouse'),
      'cody.model': 'scripted-model',
      'cody.baseUrl': provider.baseUrl,
    };
    const env: NodeJS.ProcessEnv = { CODY_DB: join(home, 'sessions.db'), CODY_MODEL_API_KEY: 'sk-install-e2e' };
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

  step('the setup checklist says the interpreter lacks cody-lsp and offers to install it', async () => {
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    await page.locator('.activitybar [aria-label^="Cody"]').first().click();
    frame = await chatFrame(page, 60_000);
    await frame.waitForFunction(() => /cody-lsp is not installed/.test(document.getElementById('welcome')?.textContent ?? ''), undefined, { timeout: 60_000 });
    const first = frame.locator('.setup-steps li').first();
    assert.match(await first.innerText(), new RegExp(`cody-lsp is not installed in ${bare.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/bin/python \\(cody\\.pythonPath\\)`));
    assert.deepEqual(await first.locator('button').allInnerTexts(), ['Install cody-lsp into a private environment', 'Set Python Path', 'Show Output']);
    assert.equal(await frame.locator('#transcript .notice').count(), 0, 'the checklist says it (it stays visible), not a notice over it');
    assert.equal(await toast(/not installed/).count(), 0, 'nor a notification, which would stay after the install');
    await screenshot('not-installed');
  });

  step('an install that cannot find a dependency fails with pip\'s last lines and Retry', async () => {
    await frame.locator('.setup-steps li').first().locator('button', { hasText: 'Install cody-lsp' }).click();
    const failed = toast('installing cody-lsp failed');
    await failed.first().waitFor({ timeout: 180_000 });
    const text = await failed.first().innerText();
    assert.match(text, /installing cody-lsp failed \(pip install: exit code 1\)\. Its last lines:/);
    assert.match(text, /No matching distribution found for/, 'pip\'s own words');
    assert.ok(await failed.first().locator('.monaco-button', { hasText: 'Retry' }).isVisible());
    assert.ok(await failed.first().locator('.monaco-button', { hasText: 'Show Output' }).isVisible());
    assert.doesNotMatch(readFileSync(codeServer.userSettingsFile, 'utf8'), /python-env/, 'cody.pythonPath is not changed by a failed install');
    await screenshot('install-failed');
  });

  step('with the folder of wheels, Retry installs offline into the global storage, sets cody.pythonPath and starts the server', async () => {
    await setSetting('cody.serverWheelhouse', WHEELHOUSE);
    // The Settings editor writes the file a moment later; Retry reads the setting when clicked.
    for (let i = 0; i < 100 && !readFileSync(codeServer.userSettingsFile, 'utf8').includes(WHEELHOUSE); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(readFileSync(codeServer.userSettingsFile, 'utf8').includes(WHEELHOUSE));
    await page.waitForTimeout(3000); // …and the extension host gets the change a moment after that (as a user's click would come)
    await toast('installing cody-lsp failed').first().locator('.monaco-button', { hasText: 'Retry' }).click();
    await toast('installing cody-lsp failed').first().waitFor({ state: 'detached', timeout: 15_000 });
    await toast(/Cody: installing cody-lsp(?! failed)/).first().waitFor({ timeout: 30_000 });
    await screenshot('installing');
    const settingsFile = codeServer.userSettingsFile;
    const deadline = Date.now() + 300_000;
    let python = '';
    while (Date.now() < deadline) {
      python = (JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, string>)['cody.pythonPath'] ?? '';
      if (python.includes('python-env')) break;
      if ((await toast('installing cody-lsp failed').count()) > 0) {
        // What the extension logged (its Output channel's file): the folder it installed from.
        let logs = '';
        try {
          logs = execFileSync('bash', ['-c', `cat "${home}"/user-data/logs/*/exthost*/output_logging_*/*Cody.log | grep -F '[cody]'`], { encoding: 'utf8' });
        } catch {
          // no log yet
        }
        assert.fail(`the install failed again: ${await toast('installing cody-lsp failed').first().innerText()}\n${logs}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.equal(python, join(home, 'user-data', 'User', 'globalStorage', 'cody-lsp.cody-lsp', 'python-env', 'bin', 'python'), 'the user\'s cody.pythonPath names the private environment');
    assert.match(execFileSync(python, ['-m', 'cody_lsp', '--version'], { encoding: 'utf8' }), /^cody-lsp \d/);
    // The server restarts with it: the checklist's first step is done.
    await frame.waitForFunction((p) => (document.getElementById('welcome')?.textContent ?? '').includes(`Python: ${p} (cody.pythonPath)`), python, { timeout: 60_000 });
    assert.doesNotMatch(await welcome(), /not installed/);
    // Nothing says "not installed" any more: no notification from before the install is left.
    assert.equal(await toast(/not installed/).count(), 0);
    await command('Notifications: Show Notifications');
    const center = page.locator('.notifications-center.visible');
    await center.waitFor({ timeout: 15_000 });
    assert.equal(await center.locator('.monaco-list-row', { hasText: /not installed/ }).count(), 0, 'nor in the notification center');
    await page.keyboard.press('Escape');
    await center.waitFor({ state: 'hidden', timeout: 15_000 });
    await screenshot('installed');
  });

  step('the installed server answers a prompt', async () => {
    await frame.fill('#prompt', 'Hello?');
    await frame.press('#prompt', 'Enter');
    await frame.waitForFunction(() => /Installed, and answering\./.test(document.getElementById('transcript')?.textContent ?? ''), undefined, { timeout: 60_000 });
    await frame.locator('.run-end.done').waitFor({ timeout: 30_000 });
    await screenshot('answered');
  });
});
