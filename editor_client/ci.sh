#!/usr/bin/env bash
# CI for the VS Code extension: install, type-check strictly, compile, run every test (unit,
# extension activation with a mocked vscode, the real server over stdio, the webview in Chromium),
# package the .vsix, and run it in a real VS Code (code-server from npm, installed once into a
# cache folder by e2e/install-code-server.sh) against the real server: screenshots of each step
# in test-artifacts/vscode/; and the install action in a fresh profile (test-artifacts/install/).
# src/protocol.ts is generated from cody_lsp/protocol/wire.py (`python -m cody_lsp.protocol.export`);
# tests/unit/test_protocol_export.py checks that it is fresh.
# Nothing is skipped: a missing Chromium or Python with cody_lsp is an error.
set -euo pipefail
cd "$(dirname "$0")"

CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM_PATH" ]; then
  echo "editor_client/ci.sh: Chromium is missing at $CHROMIUM_PATH (the webview test needs it): apt-get install -y chromium" >&2
  exit 1
fi

# The Python that has cody_lsp installed: $CODY_PYTHON, else the repository's .venv, else python3.
if [ -z "${CODY_PYTHON:-}" ]; then
  if [ -x ../.venv/bin/python ]; then CODY_PYTHON="$(cd .. && pwd)/.venv/bin/python"; else CODY_PYTHON=python3; fi
fi
if ! "$CODY_PYTHON" -c 'import cody_lsp.testing.provider' 2>/dev/null; then
  echo "editor_client/ci.sh: $CODY_PYTHON cannot import cody_lsp (set CODY_PYTHON to the venv's python)" >&2
  exit 1
fi
export CODY_PYTHON CHROMIUM_PATH

npm ci --no-audit --no-fund
rm -rf out dist
# Strict type-checks (tsconfig.base.json): the extension and its tests (Node; this run also emits
# them into out/, so it is not repeated with --noEmit), and the webview (DOM).
npx tsc -p tsconfig.json
npx tsc --noEmit -p tsconfig.webview.json
node build.mjs
npm test
npm run package
CODY_CODE_SERVER_DIR="$(bash e2e/install-code-server.sh)"
# The dependencies of the wheel the .vsix carries (wheel/, built by npm run package), downloaded
# here, before the tests, into a cache: the install e2e installs them offline (cody.serverWheelhouse).
CODY_WHEELHOUSE="${CODY_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/cody-lsp/wheelhouse}"
mkdir -p "$CODY_WHEELHOUSE"
# A cody_lsp wheel of the same version left there by an earlier run would be taken as it is by
# `pip download` (its dependencies then those of the old code): always this run's.
rm -f "$CODY_WHEELHOUSE"/cody_lsp-*.whl
"$CODY_PYTHON" -m pip download --quiet --disable-pip-version-check --dest "$CODY_WHEELHOUSE" wheel/cody_lsp-*.whl
export CODY_CODE_SERVER_DIR CODY_WHEELHOUSE
npm run test:vscode
