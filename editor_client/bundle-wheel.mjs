// The wheel of the cody-lsp package this extension is built with, into wheel/ (packaged in the
// .vsix: "Cody: Install cody-lsp into a Private Environment" installs it). Built with
// `pip wheel --no-deps` by $CODY_PYTHON (else python3; it needs pip, and the build backend —
// setuptools — which pip's build isolation takes from its index) from a copy of the package's
// files (pyproject.toml, README.md, cody_lsp/): setuptools' build/ folder in the checkout would
// keep modules deleted since.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'wheel');
const python = process.env.CODY_PYTHON || 'python3';
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
const root = join(here, '..');
const source = mkdtempSync(join(tmpdir(), 'cody-wheel-'));
try {
  for (const name of ['pyproject.toml', 'README.md']) cpSync(join(root, name), join(source, name));
  cpSync(join(root, 'cody_lsp'), join(source, 'cody_lsp'), { recursive: true, filter: (path) => basename(path) !== '__pycache__' && !path.endsWith('.pyc') });
  execFileSync(python, ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '--quiet', '--wheel-dir', out, source], { stdio: 'inherit' });
} finally {
  rmSync(source, { recursive: true, force: true });
}
const wheels = readdirSync(out).filter((name) => /^cody_lsp-.*-py3-none-any\.whl$/.test(name));
if (wheels.length !== 1) throw new Error(`bundle-wheel.mjs: expected one cody_lsp wheel in ${out}, found: ${readdirSync(out).join(', ') || 'none'}`);
console.log(`bundle-wheel.mjs: ${wheels[0]}`);
