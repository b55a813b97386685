// Bundles the extension (src/vscode/extension.ts → dist/extension.js, Node, `vscode` left to the host) and
// the webview (src/webview/main.ts → dist/webview/main.js, a classic script loaded with the CSP
// nonce). The tests are compiled separately by tsc into out/.
import { copyFileSync, mkdirSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
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
  }),
]);

// VS Code's icon font, loaded by media/main.css (the webview's CSP allows fonts from the extension).
mkdirSync('dist/webview', { recursive: true });
copyFileSync('node_modules/@vscode/codicons/dist/codicon.ttf', 'dist/webview/codicon.ttf');
