#!/usr/bin/env bash
# Installs the real VS Code the end-to-end test drives: code-server (pinned in
# e2e/code-server/package-lock.json) from the npm registry, into a cache folder outside the
# repository, once per lockfile. Prints the folder (the one that holds node_modules/code-server).
#
# code-server's own install scripts refuse to run as root and download binaries, so it is
# installed with --ignore-scripts and its post-install steps are done here (see
# ../../../shared/notes/real-vscode.md): native modules rebuilt against Debian's Node headers,
# ripgrep from Debian instead of a download. Needs: node 20, npm, and Debian's packages
# libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev pkg-config ripgrep build-essential
# python3 (installed here with apt-get when missing and running as root).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
spec="$here/code-server"
lock_hash="$(cat "$spec/package.json" "$spec/package-lock.json" | sha256sum | cut -c1-16)"
dir="${CODY_CODE_SERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cody-lsp/code-server-$lock_hash}"
stamp="$dir/.installed"

if [ -f "$stamp" ]; then
  echo "$dir"
  exit 0
fi

log() { echo "install-code-server: $*" >&2; }

missing=()
for pkg in libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev pkg-config ripgrep g++ make python3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "missing Debian packages: ${missing[*]} (apt-get install them)"
    exit 1
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${missing[@]}" >&2
fi

rm -rf "$dir"
mkdir -p "$dir"
cp "$spec/package.json" "$spec/package-lock.json" "$dir/"
cd "$dir"
export npm_config_nodedir=/usr # Debian's Node headers (/usr/include/node): node-gyp downloads nothing
export npm_config_yes=true     # node-pty's post-install runs `npx node-gyp`, which would wait for a prompt
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
log "npm ci code-server into $dir"
npm ci --ignore-scripts --loglevel=error >&2

cs="$dir/node_modules/code-server"
log "VS Code's own modules"
(
  cd "$cs/lib/vscode"
  npm install --omit=dev --ignore-scripts --loglevel=error >&2
  # @vscode/ripgrep's post-install downloads a binary unless one is already there.
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  npm rebuild --loglevel=error >&2
  ln -sfn node_modules node_modules.asar
  (cd extensions && npm install --omit=dev --loglevel=error >&2)
)
(cd "$cs/lib/vscode/bin/remote-cli" && ln -sfn code-linux.sh code-server)
(cd "$cs/lib/vscode/bin/helpers" && ln -sfn browser-linux.sh browser.sh)
npm rebuild argon2 --loglevel=error >&2 # hoisted next to code-server, not under it

node "$cs/out/node/entry.js" --version >&2
date -u +%FT%TZ >"$stamp"
log "done"
echo "$dir"
