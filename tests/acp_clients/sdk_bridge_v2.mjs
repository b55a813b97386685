// The official ACP TypeScript SDK's draft-v2 client (`@agentclientprotocol/sdk/experimental/v2`, SDK
// 2.4, installed as `acp-sdk-v2`) in front of an agent process, driven by a test like sdk_bridge.mjs:
// one JSON command a line on stdin, one JSON event a line on stdout.
//
//   node sdk_bridge_v2.mjs '["python", "-m", "cody_lsp", "acp"]'
//
// The SDK's client validates what it handles (initialize, every response, the requests it serves);
// this bridge also checks every message the agent sends against the SDK's v2 zod schemas as it
// arrives (`session/update` notifications and `session/request_permission` requests), so a message
// that does not fit the v2 draft fails the test ("invalid" events).
//
// Commands: {"id": N, "op": "request", "params": {"method": M, "params": P}} → {"reply": N, "result"
// | "error"} (an agent method, e.g. "initialize", "session/new", "session/prompt"); {"op": "notify",
// "params": {"method": M, "params": P}} (e.g. "session/cancel"); {"op": "policy", "params":
// {"permission": KIND | "cancelled" | "ask"}}; {"op": "answer", "params": {"key": K, "outcome":
// {...}}}; {"op": "close"} ends the agent's stdin. Events: update, permission, exit, invalid, log.
import { spawn } from "node:child_process";
import * as readline from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "acp-sdk-v2/experimental/v2";

const zod = await import(new URL("./node_modules/acp-sdk-v2/dist/v2/schema/zod.gen.js", import.meta.url));
const out = (event) => process.stdout.write(JSON.stringify(event) + "\n");
for (const level of ["log", "warn", "error", "info", "debug"]) {
  console[level] = (...args) => out({ event: "log", level, text: args.map(String).join(" ") });
}

const RESULTS = {
  initialize: zod.zInitializeResponse,
  "auth/login": zod.zLoginAuthResponse,
  "auth/logout": zod.zLogoutAuthResponse,
  "session/new": zod.zNewSessionResponse,
  "session/resume": zod.zResumeSessionResponse,
  "session/list": zod.zListSessionsResponse,
  "session/close": zod.zCloseSessionResponse,
  "session/delete": zod.zDeleteSessionResponse,
  "session/prompt": zod.zPromptResponse,
  "session/set_config_option": zod.zSetSessionConfigOptionResponse,
};
const INCOMING = {
  "session/update": zod.zUpdateSessionNotification,
  "session/request_permission": zod.zRequestPermissionRequest,
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

function choose(params) {
  if (policy === "cancelled") return { outcome: { outcome: "cancelled" } };
  const option = params.options.find((o) => o.kind === policy) ?? params.options.find((o) => o.optionId === policy);
  if (option === undefined) throw new Error(`no option of kind ${policy} among ${JSON.stringify(params.options)}`);
  return { outcome: { outcome: "selected", optionId: option.optionId } };
}

// Every message the agent sends, checked as it arrives (before the SDK's client handles it).
const wire = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const tapped = wire.readable.pipeThrough(
  new TransformStream({
    transform(message, controller) {
      const schema = message && typeof message === "object" ? INCOMING[message.method] : undefined;
      if (schema) {
        const checked = schema.safeParse(message.params);
        if (!checked.success) out({ event: "invalid", message, issues: checked.error.issues });
      } else if (message && typeof message === "object" && "method" in message) {
        out({ event: "invalid", message, issues: ["a method the v2 draft's agent does not send"] });
      }
      controller.enqueue(message);
    },
  }),
);

const app = acp
  .client()
  .onRequest("session/request_permission", async ({ params }) => {
    const key = ++keys;
    out({ event: "permission", key, params });
    if (policy === "ask") return new Promise((resolve) => held.set(key, resolve));
    return choose(params);
  })
  .onNotification("session/update", async ({ params }) => {
    out({ event: "update", params });
  });
const connection = app.connect({ readable: tapped, writable: wire.writable });

async function run({ op, params }) {
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
  if (op === "close") {
    child.stdin.end();
    return null;
  }
  if (op === "notify") {
    await connection.agent.notify(params.method, params.params);
    return null;
  }
  const result = await connection.agent.request(params.method, params.params);
  const schema = RESULTS[params.method];
  const checked = schema?.safeParse(result ?? {});
  if (checked && !checked.success) out({ event: "invalid", op: params.method, result, issues: checked.error.issues });
  return result ?? null;
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  run(message).then(
    (result) => out({ reply: message.id, result }),
    (error) => out({ reply: message.id, error: { code: error?.code, message: error?.message, data: error?.data } }),
  );
});
