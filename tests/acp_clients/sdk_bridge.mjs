// The official ACP TypeScript SDK's client (ClientSideConnection over ndJsonStream) in front of
// an agent process, driven by a test: one JSON command a line on stdin, one JSON event a line on
// stdout. The SDK's zod validators check every request and notification the agent sends; this
// script checks every result too (the SDK's own zod schemas), so a message that does not fit ACP v1
// fails the test.
//
//   node sdk_bridge.mjs '["python", "-m", "cody_lsp", "acp"]'
//
// Commands: {"id": N, "op": "<ClientSideConnection method>", "params": {...}} → {"reply": N, "result"
// | "error"}; {"op": "policy", "params": {"permission": KIND | "cancelled" | "never" | "ask"}} (KIND:
// an option kind to choose, e.g. "allow_once"); {"op": "answer", "params": {"key": K, "outcome":
// {...}}} answers a permission request held by the "ask" policy; {"op": "files", "params": {PATH:
// TEXT}} sets what fs/read_text_file answers (the editor's unsaved buffers; other paths are read
// from disk); {"op": "buffers", "params": {"save": false}} makes fs/write_text_file keep the text in
// the buffer without writing the disk (default: it writes, as Zed's and agent-shell's do);
// {"op": "close"} ends the agent's stdin. Terminals (terminal/*, when the test initializes with
// `terminal: true`) run real processes like an editor's terminal: output of both streams kept up to
// `outputByteLimit`, `wait_for_exit`, `kill` (SIGKILL to its process group), `release`.
// Events: update, permission, read, write, terminal (each terminal/* call: {method, params}), exit,
// invalid (a message that did not fit), log (what the SDK said on the console).
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import * as readline from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const zod = await import(new URL("./node_modules/@agentclientprotocol/sdk/dist/schema/zod.gen.js", import.meta.url));
const out = (event) => process.stdout.write(JSON.stringify(event) + "\n");
for (const level of ["log", "warn", "error", "info", "debug"]) {
  console[level] = (...args) => out({ event: "log", level, text: args.map(String).join(" ") });
}

const RESULTS = {
  initialize: zod.zInitializeResponse,
  authenticate: zod.zAuthenticateResponse,
  newSession: zod.zNewSessionResponse,
  loadSession: zod.zLoadSessionResponse,
  resumeSession: zod.zResumeSessionResponse,
  listSessions: zod.zListSessionsResponse,
  closeSession: zod.zCloseSessionResponse,
  deleteSession: zod.zDeleteSessionResponse,
  prompt: zod.zPromptResponse,
  setSessionMode: zod.zSetSessionModeResponse,
  setSessionConfigOption: zod.zSetSessionConfigOptionResponse,
};

const [command, ...args] = JSON.parse(process.argv[2]);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
child.on("exit", (code, signal) => {
  out({ event: "exit", code, signal });
  setTimeout(() => process.exit(0), 50);
});

let policy = "allow_once";
const held = new Map();
let keys = 0;
let files = {};
let saves = true;
let terminals = 0;
const running = new Map();

function choose(params) {
  if (policy === "cancelled") return { outcome: { outcome: "cancelled" } };
  const option = params.options.find((o) => o.kind === policy) ?? params.options.find((o) => o.optionId === policy);
  if (option === undefined) throw new Error(`no option of kind ${policy} among ${JSON.stringify(params.options)}`);
  return { outcome: { outcome: "selected", optionId: option.optionId } };
}

const client = {
  async requestPermission(params) {
    const key = ++keys;
    out({ event: "permission", key, params });
    if (policy === "never") return new Promise(() => {}); // never answered, as CodeCompanion does on cancel
    if (policy === "ask") return new Promise((resolve) => held.set(key, resolve));
    return choose(params);
  },
  async sessionUpdate(params) {
    out({ event: "update", params });
  },
  async readTextFile(params) {
    out({ event: "read", params });
    const text = params.path in files ? files[params.path] : readFileSync(params.path, "utf8");
    if (params.line == null && params.limit == null) return { content: text };
    const lines = text.split("\n");
    const start = Math.max((params.line ?? 1) - 1, 0);
    return { content: lines.slice(start, params.limit == null ? undefined : start + params.limit).join("\n") };
  },
  async writeTextFile(params) {
    out({ event: "write", params });
    if (saves) writeFileSync(params.path, params.content);
    files[params.path] = params.content;
    return {};
  },
  async createTerminal(params) {
    out({ event: "terminal", method: "terminal/create", params });
    const terminalId = `term-${++terminals}`;
    const env = { ...process.env };
    for (const { name, value } of params.env ?? []) env[name] = value;
    const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, detached: true });
    const term = { proc, output: Buffer.alloc(0), truncated: false, limit: params.outputByteLimit ?? null, exit: null };
    const keep = (chunk) => {
      term.output = Buffer.concat([term.output, chunk]);
      if (term.limit != null && term.output.length > term.limit) {
        term.output = term.output.subarray(term.output.length - term.limit);
        term.truncated = true;
      }
    };
    proc.stdout.on("data", keep);
    proc.stderr.on("data", keep);
    term.exited = new Promise((resolve) =>
      proc.on("exit", (code, signal) => {
        term.exit = { exitCode: code, signal };
        resolve(term.exit);
      }),
    );
    running.set(terminalId, term);
    return { terminalId };
  },
  async terminalOutput(params) {
    out({ event: "terminal", method: "terminal/output", params });
    const term = running.get(params.terminalId);
    if (!term) throw acp.RequestError.resourceNotFound(params.terminalId);
    const result = { output: term.output.toString("utf8"), truncated: term.truncated };
    if (term.exit) result.exitStatus = term.exit;
    return result;
  },
  async waitForTerminalExit(params) {
    out({ event: "terminal", method: "terminal/wait_for_exit", params });
    const term = running.get(params.terminalId);
    if (!term) throw acp.RequestError.resourceNotFound(params.terminalId);
    return await term.exited;
  },
  async killTerminal(params) {
    out({ event: "terminal", method: "terminal/kill", params });
    const term = running.get(params.terminalId);
    if (!term) throw acp.RequestError.resourceNotFound(params.terminalId);
    if (!term.exit) {
      try {
        process.kill(-term.proc.pid, "SIGKILL");
      } catch {}
    }
    return {};
  },
  async releaseTerminal(params) {
    out({ event: "terminal", method: "terminal/release", params });
    const term = running.get(params.terminalId);
    if (term && !term.exit) {
      try {
        process.kill(-term.proc.pid, "SIGKILL");
      } catch {}
    }
    running.delete(params.terminalId);
    return {};
  },
};

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const connection = new acp.ClientSideConnection(() => client, stream);

async function run({ id, op, params }) {
  if (op === "policy") {
    policy = params.permission;
    return null;
  }
  if (op === "answer") {
    const resolve = held.get(params.key);
    held.delete(params.key);
    resolve?.({ outcome: params.outcome });
    return null;
  }
  if (op === "buffers") {
    saves = params.save;
    return null;
  }
  if (op === "files") {
    files = { ...files, ...params };
    return null;
  }
  if (op === "close") {
    child.stdin.end();
    return null;
  }
  if (op === "cancel") {
    await connection.cancel(params);
    return null;
  }
  const result = await connection[op](params);
  const schema = RESULTS[op];
  const checked = schema?.safeParse(result ?? {});
  if (checked && !checked.success) out({ event: "invalid", op, result, issues: checked.error.issues });
  return result ?? null;
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  run(message).then(
    (result) => out({ reply: message.id, result }),
    (error) => out({ reply: message.id, error: { code: error?.code, message: error?.message, data: error?.data } }),
  );
});
