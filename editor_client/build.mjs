// Bundles the extension (src/vscode/extension.ts → dist/extension.js, Node, `vscode` left to the host) and
// the webview (src/webview/main.ts → dist/webview/main.js, a classic script loaded with the CSP
// nonce). The tests are compiled separately by tsc into out/.
import { readFileSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');

// The codicons the webview draws (src/webview/icons.ts), as inline SVG paths: { name: [viewBox, [[d, fill-rule?]…]] }.
const ICONS = ['file', 'folder', 'list-selection', 'warning', 'terminal', 'file-media', 'copy', 'edit', 'hubot', 'info', 'check', 'circle-large', 'circle-large-filled', 'pass-filled', 'checklist', 'debug-stop', 'discard', 'diff', 'chevron-down', 'chevron-right'];
function codicons() {
  const icons = {};
  for (const name of ICONS) {
    const svg = readFileSync(`node_modules/@vscode/codicons/src/icons/${name}.svg`, 'utf8');
    const viewBox = /viewBox="([\d .]+)"/.exec(svg)?.[1];
    const paths = [...svg.matchAll(/<path\b([^>]*)>/g)].map(([, attributes]) => {
      const d = /\sd="([^"]+)"/.exec(attributes)?.[1];
      const rule = /fill-rule="(\w+)"/.exec(attributes)?.[1];
      return rule ? [d, rule] : [d];
    });
    if (!viewBox || paths.length === 0 || paths.some(([d]) => !d)) throw new Error(`build.mjs: cannot read the codicon ${name}`);
    icons[name] = [viewBox, paths];
  }
  return icons;
}
const common = { bundle: true, target: 'es2022', sourcemap: !production, minify: production, logLevel: 'warning' };

await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: ['src/vscode/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    external: ['vscode'],
  }),
  esbuild.build({
    ...common,
    entryPoints: ['src/webview/main.ts'],
    outfile: 'dist/webview/main.js',
    platform: 'browser',
    format: 'iife',
    define: { CODICONS: JSON.stringify(codicons()) },
  }),
]);

