#!/usr/bin/env node
// Interop test: the official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package-lock.json) drives `openprogram mcp serve` over stdio and checks the wire contract
// (docs/contract.md) from the outside.
//
//   OPENPROGRAM_MCP_TOKEN=<token> node interop.mjs <openprogram-binary> <state-dir>
//
// The state dir must be fresh and already hold the token (`openprogram mcp token create`) and a
// config with model.provider=scripted, model.script=<a copy of interop/ts/script.json> and
// mcp_server.exposed_tools=["memory_status","memory_update","memory_search","memory_get","bash","read"]
// (cli/e2e/interop/typescript prepares exactly that). The script's turns are consumed in order:
// one prompt that calls memory_search and answers, then two slow replies that get cancelled.
//
// Prints a transcript on stdout. Exits 0 when every assertion holds, 1 when one fails
// (the failing step, the last wire frames and the server's stderr are printed), 2 on bad usage.
// INTEROP_FRAMES=1 prints every JSON-RPC frame as it passes.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PROTOCOL = '2025-11-25';
const WRAPPERS = ['sessions_list', 'session_get', 'prompt_send', 'prompt_cancel', 'tools_list', 'tool_call'];
// exposed_tools ∩ registry ∩ what the paired tier may use, in configured order.
const EXPOSED_USABLE = ['memory_status', 'memory_update', 'memory_search', 'memory_get'];
const SLOW_MARKER = 'tortoise'; // appears only in the scripted slow replies, never in a prompt
const NB = { type: 'string', minLength: 1, pattern: '\\S' };

const [binary, stateDir] = process.argv.slice(2);
const token = process.env.OPENPROGRAM_MCP_TOKEN ?? '';
if (!binary || !stateDir || !token) {
  console.error('usage: OPENPROGRAM_MCP_TOKEN=<token> node interop.mjs <openprogram-binary> <state-dir>');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const sdkVersion = JSON.parse(
  readFileSync(join(here, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'),
).version;

// ---------------------------------------------------------------- transcript and assertions

class AssertionFailure extends Error {}
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(2)}s`;
const say = (s) => console.log(s);
let stepNo = 0;
const failures = [];

function check(cond, what, detail) {
  if (!cond) {
    const d = detail === undefined ? '' : `\n      got: ${clip(typeof detail === 'string' ? detail : safeJSON(detail), 1500)}`;
    throw new AssertionFailure(`${what}${d}`);
  }
  say(`   ok  ${what}`);
}
// eq compares as canonical JSON: arrays in order, object keys in any order.
function eq(got, want, what) {
  check(canonicalOrUndefined(got) === canonicalOrUndefined(want), `${what} = ${clip(safeJSON(want), 200)}`, got);
}
const canonicalOrUndefined = (v) => (v === undefined ? 'undefined' : canonical(v));
function safeJSON(v) {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
function clip(s, n) {
  s = String(s);
  return s.length <= n ? s : `${s.slice(0, n)}… (${s.length} chars)`;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function step(title, fn) {
  stepNo++;
  say(`\n== ${stepNo}. ${title}  [${elapsed()}]`);
  try {
    await fn();
  } catch (e) {
    const msg = e instanceof AssertionFailure ? e.message : `unexpected ${e?.stack ?? e}`;
    say(`   FAIL ${msg}`);
    failures.push({ step: `${stepNo}. ${title}`, msg });
    return false;
  }
  return true;
}

// canonical: compact JSON, object keys sorted at every depth, non-ASCII and <>& kept as is.
// A payload text must equal canonical(JSON.parse(text)) (docs/contract.md §4 Output).
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

// payload checks a successful structured result: ONE TextContent holding compact sorted JSON,
// isError false, no second representation. Returns the decoded value.
function payload(res, label) {
  check(res.isError !== true, `${label}: isError is not set`, res);
  check(Array.isArray(res.content) && res.content.length === 1, `${label}: exactly one content item`, res.content);
  const c = res.content[0];
  check(c.type === 'text' && typeof c.text === 'string', `${label}: it is a TextContent`, c);
  check(res.structuredContent === undefined, `${label}: no structuredContent (one representation in v1)`, res);
  let v;
  try {
    v = JSON.parse(c.text);
  } catch (e) {
    check(false, `${label}: the text is JSON`, c.text);
  }
  check(canonical(v) === c.text, `${label}: compact JSON, keys sorted, UTF-8 kept`, c.text);
  return v;
}

// toolError checks an execution error: isError true with ONE TextContent of exactly text.
function toolError(res, text, label) {
  check(res.isError === true, `${label}: isError true`, res);
  check(Array.isArray(res.content) && res.content.length === 1 && res.content[0].type === 'text', `${label}: one TextContent`, res.content);
  eq(res.content[0].text, text, `${label}: text`);
}

// expectRPCError awaits p and checks it rejects with the SDK's McpError of this code and message.
async function expectRPCError(p, code, message, label) {
  let res;
  try {
    res = await p;
  } catch (e) {
    check(e instanceof McpError, `${label}: the SDK rejects with McpError`, `${e?.constructor?.name}: ${e?.message}`);
    eq(e.code, code, `${label}: error.code`);
    if (message !== undefined) eq(e.message, `MCP error ${code}: ${message}`, `${label}: error.message`);
    return e;
  }
  check(false, `${label}: JSON-RPC error ${code} expected`, res);
}

// ---------------------------------------------------------------- the wire tap

// Every JSON-RPC message in both directions, as the SDK's transport sends and receives it
// (JSONRPCMessageSchema-parsed; result objects are loose, so their keys are kept).
const frames = [];
const clientErrors = [];
const printFrames = process.env.INTEROP_FRAMES === '1';
function record(dir, msg) {
  frames.push({ dir, at: elapsed(), msg });
  if (printFrames) say(`   ${dir} ${clip(JSON.stringify(msg), 600)}`);
}
function tap(transport) {
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    record('->', msg);
    return send(msg, opts);
  };
  // Protocol.connect assigns transport.onmessage; wrap whatever it assigns.
  let inner;
  const wrapped = (msg, extra) => {
    record('<-', msg);
    inner?.(msg, extra);
  };
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => (inner ? wrapped : undefined),
    set: (fn) => {
      inner = fn;
    },
  });
}
const isResponseTo = (id) => (f) => f.dir === '<-' && f.msg.id === id && ('result' in f.msg || 'error' in f.msg);
async function waitFrame(pred, ms, what) {
  const until = Date.now() + ms;
  for (;;) {
    const f = frames.find(pred);
    if (f) return f;
    if (Date.now() > until) check(false, `${what} within ${ms} ms`, frames.slice(-6).map((x) => x.msg));
    await sleep(20);
  }
}
// The id of the last tools/call request sent for this wrapper tool whose arguments match.
function requestIdOf(name, match) {
  const f = [...frames]
    .reverse()
    .find((x) => x.dir === '->' && x.msg.method === 'tools/call' && x.msg.params?.name === name && match(x.msg.params.arguments ?? {}));
  return f?.msg.id;
}

// ---------------------------------------------------------------- the run

say(`TypeScript SDK interop: @modelcontextprotocol/sdk ${sdkVersion} (LATEST_PROTOCOL_VERSION ${LATEST_PROTOCOL_VERSION}) on Node ${process.version}`);
say(`server: ${binary} mcp serve   OPENPROGRAM_HOME=${stateDir}   token from OPENPROGRAM_MCP_TOKEN (${token.length} chars, not shown)`);

const transport = new StdioClientTransport({
  command: binary,
  args: ['mcp', 'serve'],
  env: { OPENPROGRAM_HOME: stateDir, OPENPROGRAM_MCP_TOKEN: token },
  stderr: 'pipe',
});
let serverStderr = '';
transport.stderr?.on('data', (b) => {
  serverStderr += b.toString();
});
tap(transport);
const client = new Client({ name: 'openprogram-interop-ts', version: sdkVersion }, { capabilities: {} });
client.onerror = (e) => clientErrors.push(e?.message ?? String(e));
const validator = new AjvJsonSchemaValidator();

let connected = false;
let sessionID = '';
let assistantMsgID = '';
const prompt1 = 'What do you remember about the interop note? (café ☕ <b>&</b>)';

await step('initialize over stdio', async () => {
  const started = Date.now();
  await client.connect(transport);
  connected = true;
  say(`   connected in ${Date.now() - started} ms, server pid ${transport.pid}`);
  const req = frames.find((f) => f.dir === '->' && f.msg.method === 'initialize');
  eq(req.msg.params.protocolVersion, PROTOCOL, 'the SDK asks for protocolVersion');
  const res = frames.find(isResponseTo(req.msg.id));
  check(res && res.msg.result, 'initialize answered with a result', res?.msg);
  const r = res.msg.result;
  eq(r.protocolVersion, PROTOCOL, 'result.protocolVersion');
  eq(r.serverInfo?.name, 'openprogram', 'result.serverInfo.name');
  check(typeof r.serverInfo?.version === 'string' && r.serverInfo.version !== '', `result.serverInfo.version is set (${r.serverInfo?.version})`, r.serverInfo);
  // Durable tasks are on by default: tools and tasks (contract section 11).
  eq(Object.keys(r.capabilities ?? {}).sort(), ['tasks', 'tools'], 'result.capabilities keys (tools and tasks)');
  eq(r.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'result.capabilities.tasks');
  eq(client.getServerVersion()?.name, 'openprogram', 'client.getServerVersion().name');
  check(client.getServerCapabilities()?.tools !== undefined, 'client.getServerCapabilities().tools is set', client.getServerCapabilities());
  const initd = frames.find((f) => f.dir === '->' && f.msg.method === 'notifications/initialized');
  check(initd !== undefined, 'the SDK sent notifications/initialized');
});
if (!connected) finish();

await step('ping', async () => {
  eq(await client.ping(), {}, 'ping result');
});

await step('methods of capabilities the server does not advertise: -32601', async () => {
  // The SDK only refuses these itself with enforceStrictCapabilities; by default it asks.
  await expectRPCError(client.listResources(), ErrorCode.MethodNotFound, undefined, 'resources/list');
  await expectRPCError(client.listPrompts(), ErrorCode.MethodNotFound, undefined, 'prompts/list');
  await expectRPCError(client.setLoggingLevel('info'), ErrorCode.MethodNotFound, undefined, 'logging/setLevel');
});

await step('tools/list: exactly the six tools, in order, closed input schemas', async () => {
  const { tools } = await client.listTools();
  eq(
    tools.map((t) => t.name),
    WRAPPERS,
    'tool names',
  );
  const raw = [...frames].reverse().find((f) => f.dir === '<-' && Array.isArray(f.msg.result?.tools)).msg.result.tools;
  const want = {
    sessions_list: { type: 'object', properties: {}, additionalProperties: false },
    tools_list: { type: 'object', properties: {}, additionalProperties: false },
  };
  for (const t of raw) {
    const s = t.inputSchema;
    check(s?.type === 'object' && s.additionalProperties === false, `${t.name}: inputSchema is a closed object (additionalProperties:false)`, s);
    check(typeof t.description === 'string' && t.description.trim().length > 20, `${t.name}: has a description`, t.description);
    if (want[t.name]) eq(s, want[t.name], `${t.name}: inputSchema`);
    // The SDK's own validator (Ajv) must compile every schema.
    validator.getValidator(s);
  }
  // docs/contract.md §4: every tool has a title and all four hints, as the
  // SDK parsed them (so a client such as Codex can skip approval for reads).
  const hints = {
    sessions_list: [true, false, true, false],
    session_get: [true, false, true, false],
    prompt_send: [false, false, false, true],
    prompt_cancel: [false, false, true, false],
    tools_list: [true, false, true, false],
    tool_call: [false, false, false, false],
  };
  for (const t of tools) {
    check(typeof t.title === 'string' && t.title.length > 0, `${t.name}: has a title`, t.title);
    const a = t.annotations ?? {};
    eq([a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint], hints[t.name], `${t.name}: annotations [readOnly, destructive, idempotent, openWorld]`);
  }
  const byName = Object.fromEntries(raw.map((t) => [t.name, t.inputSchema]));
  eq(byName.session_get.properties.session_id, NB, 'session_get.session_id is a non-blank string');
  eq(byName.session_get.required, ['session_id'], 'session_get.required');
  eq(byName.prompt_send.properties.prompt, NB, 'prompt_send.prompt is a non-blank string');
  eq(byName.prompt_send.properties.session_id, NB, 'prompt_send.session_id is a non-blank string');
  eq(byName.prompt_send.required, ['prompt'], 'prompt_send.required');
  eq(byName.prompt_cancel.required, ['session_id'], 'prompt_cancel.required');
  eq(byName.tool_call.properties.name, NB, 'tool_call.name is a non-blank string');
  eq(byName.tool_call.properties.arguments?.type, 'object', 'tool_call.arguments is an object');
  eq(byName.tool_call.required, ['name'], 'tool_call.required');
  check(raw.every((t) => t.outputSchema === undefined), 'no outputSchema (so the SDK expects no structuredContent)', raw);
  // prompt_send alone may run as a task; the other five answer at once.
  for (const t of raw) {
    eq(t.execution, t.name === 'prompt_send' ? { taskSupport: 'optional' } : undefined, `${t.name}: execution`);
  }
});

await step('tools_list: the exposed runtime tools the paired tier may use', async () => {
  const list = payload(await client.callTool({ name: 'tools_list', arguments: {} }), 'tools_list');
  eq(
    list.map((t) => t.name),
    EXPOSED_USABLE,
    'names (bash and read are configured but the paired tier cannot use them)',
  );
  for (const t of list) {
    eq(Object.keys(t).sort(), ['description', 'inputSchema', 'name'], `${t.name}: keys`);
    check(t.inputSchema?.type === 'object', `${t.name}: inputSchema is an object schema`, t.inputSchema);
  }
});

await step('tool_call memory_update, then memory_search finds it', async () => {
  const up = await client.callTool({
    name: 'tool_call',
    arguments: { name: 'memory_update', arguments: { path: 'notes/interop', content: 'The TypeScript SDK interop note: café ☕ stays UTF-8.' } },
  });
  check(up.isError !== true, 'memory_update: not an error', up);
  check(up.content.length >= 1 && up.content.every((c) => c.type === 'text'), 'memory_update: text content (the runtime tool’s own)', up.content);
  say(`   memory_update -> ${clip(up.content[0].text, 160)}`);
  const progress = [];
  const se = await client.callTool(
    { name: 'tool_call', arguments: { name: 'memory_search', arguments: { query: 'interop' } } },
    undefined,
    { onprogress: (p) => progress.push(p) },
  );
  check(se.isError !== true, 'memory_search: not an error', se);
  const text = se.content.map((c) => c.text ?? '').join('\n');
  check(text.includes('notes/interop'), 'memory_search: finds notes/interop', text);
  check(text.includes('café ☕'), 'memory_search: UTF-8 survives the round trip', text);
  say(`   memory_search -> ${clip(text, 160)} (${progress.length} progress notifications)`);
});

await step('tool_call bash and read: exposed, denied by the gate without running', async () => {
  toolError(await client.callTool({ name: 'tool_call', arguments: { name: 'bash', arguments: { command: 'id' } } }), '[denied] hard constraint', 'bash');
  toolError(
    await client.callTool({ name: 'tool_call', arguments: { name: 'read', arguments: { path: 'README.md' } } }),
    '[denied] authority tier does not allow fs.read',
    'read',
  );
});

await step('tool_call of an unexposed, an unknown tool, bad runtime arguments: JSON-RPC errors', async () => {
  await expectRPCError(
    client.callTool({ name: 'tool_call', arguments: { name: 'write', arguments: { path: 'x', content: 'y' } } }),
    ErrorCode.MethodNotFound,
    'runtime tool not exposed; tools_list lists the exposed ones',
    'write (registered, not exposed)',
  );
  await expectRPCError(
    client.callTool({ name: 'tool_call', arguments: { name: 'no_such_tool' } }),
    ErrorCode.MethodNotFound,
    'runtime tool not exposed; tools_list lists the exposed ones',
    'no_such_tool (unknown: indistinguishable)',
  );
  await expectRPCError(
    client.callTool({ name: 'tool_call', arguments: { name: 'memory_search', arguments: { query: 42 } } }),
    ErrorCode.InvalidParams,
    'invalid underlying Runtime tool arguments',
    'memory_search {query: 42}',
  );
  await expectRPCError(client.callTool({ name: 'no_such_wrapper', arguments: {} }), ErrorCode.MethodNotFound, undefined, 'unknown wrapper tool');
});

await step('session_get with bad arguments: -32602, and the SDK’s Ajv agrees with the server', async () => {
  const schema = (await client.listTools()).tools.find((t) => t.name === 'session_get').inputSchema;
  const validate = validator.getValidator(schema);
  const cases = [
    [{}, 'invalid arguments at $.session_id: required'],
    [{ session_id: '' }, 'invalid arguments at $.session_id: minLength'],
    [{ session_id: ' \t ' }, 'invalid arguments at $.session_id: pattern'],
    [{ session_id: 7 }, 'invalid arguments at $.session_id: type'],
    [{ session_id: 'mcp_x', extra: true }, 'invalid arguments at $.extra: additionalProperties'],
  ];
  for (const [args, message] of cases) {
    check(!validate(args).valid, `Ajv rejects ${JSON.stringify(args)}`);
    await expectRPCError(client.callTool({ name: 'session_get', arguments: args }), ErrorCode.InvalidParams, message, `session_get ${JSON.stringify(args)}`);
  }
  check(validate({ session_id: 'mcp_unknown' }).valid, 'Ajv accepts {"session_id":"mcp_unknown"}');
  const nf = await client.callTool({ name: 'session_get', arguments: { session_id: 'mcp_unknown' } });
  toolError(nf, '{"error":"session not found"}', 'session_get of an unknown session');
});

await step('prompt_send (scripted model, new session) with onprogress', async () => {
  const progress = [];
  const res = await client.callTool({ name: 'prompt_send', arguments: { prompt: prompt1 } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  const r = payload(res, 'prompt_send');
  eq(Object.keys(r), ['assistant_msg_id', 'failed', 'session_id', 'text'], 'payload keys');
  check(/^mcp_[0-9a-f]{32}$/.test(r.session_id), `session_id ${r.session_id} is mcp_<32 hex>`, r.session_id);
  eq(r.failed, false, 'failed');
  check(r.text.includes('Memory has one interop note.'), 'text is the scripted final answer', r.text);
  check(typeof r.assistant_msg_id === 'string' && r.assistant_msg_id !== '', 'assistant_msg_id is set', r);
  sessionID = r.session_id;
  assistantMsgID = r.assistant_msg_id;
  for (const p of progress) say(`   progress ${p.progress}: ${p.message}`);
  check(progress.length >= 4, `at least 4 progress notifications (turn started, tool started/finished, turn finished): ${progress.length}`, progress);
  check(
    progress.every((p, i) => typeof p.progress === 'number' && (i === 0 || p.progress > progress[i - 1].progress)),
    'progress strictly increasing',
    progress,
  );
  eq(
    progress.map((p) => p.progress),
    progress.map((_, i) => i + 1),
    'progress values (1, 2, 3, … as docs/contract.md §5 says)',
  );
  check(progress.every((p) => typeof p.message === 'string' && p.message !== ''), 'every notification has a message', progress);
  check(progress.some((p) => p.message.includes('memory_search')), 'a notification names the memory_search tool call', progress);
  check(!progress.some((p) => JSON.stringify(p).includes('interop')), 'no notification carries tool arguments or prompt text', progress);
  // Every notification was written before the response.
  const id = requestIdOf('prompt_send', (a) => a.prompt === prompt1);
  const sent = frames.find((f) => f.dir === '->' && f.msg.id === id);
  eq(sent.msg.params._meta?.progressToken, id, 'the SDK sent _meta.progressToken');
  const respAt = frames.findIndex(isResponseTo(id));
  const late = frames.slice(respAt + 1).filter((f) => f.msg.method === 'notifications/progress' && f.msg.params.progressToken === id);
  eq(late.length, 0, 'progress notifications after the response');
});

await step('sessions_list', async () => {
  const list = payload(await client.callTool({ name: 'sessions_list', arguments: {} }), 'sessions_list');
  check(Array.isArray(list) && list.length >= 1 && list.length <= 100, `an array of 1..100 sessions (${list.length})`, list);
  eq(list[0].id, sessionID, 'the most recently updated session comes first');
  for (const s of list) {
    eq(Object.keys(s), ['id', 'title', 'updated_at'], `${s.id}: keys`);
    check(Number.isInteger(s.updated_at) && Math.abs(s.updated_at - Date.now() / 1000) < 3600, `${s.id}: updated_at is Unix seconds (${s.updated_at})`, s);
  }
  for (let i = 1; i < list.length; i++) check(list[i - 1].updated_at >= list[i].updated_at, `ordered by updated_at desc at ${i}`, list);
});

await step('session_get: the active branch, root first', async () => {
  const msgs = payload(await client.callTool({ name: 'session_get', arguments: { session_id: sessionID } }), 'session_get');
  for (const m of msgs) say(`   [${m.role}] ${clip(m.content.replace(/\s+/g, ' '), 100)}`);
  check(msgs.length >= 3, `at least user, tool and assistant messages (${msgs.length})`, msgs);
  for (const m of msgs) eq(Object.keys(m), ['content', 'id', 'role', 'timestamp'], `${m.id}: keys`);
  eq(msgs[0].role, 'user', 'the root is the user message');
  eq(msgs[0].content, prompt1, 'the user message is the prompt, UTF-8 and <>& kept');
  eq(msgs.at(-1).role, 'assistant', 'the last message is the assistant’s');
  eq(msgs.at(-1).id, assistantMsgID, 'the last message is assistant_msg_id');
  check(msgs.some((m) => m.role === 'tool'), 'the memory_search result is on the branch', msgs);
  check(msgs.every((m, i) => Number.isInteger(m.timestamp) && (i === 0 || m.timestamp >= msgs[i - 1].timestamp)), 'timestamps are Unix seconds, non-decreasing', msgs);
  eq(new Set(msgs.map((m) => m.id)).size, msgs.length, 'distinct message ids');
});

await step('prompt_send into an unknown session: -32602, never created', async () => {
  await expectRPCError(
    client.callTool({ name: 'prompt_send', arguments: { prompt: 'hello', session_id: 'mcp_00000000000000000000000000000000' } }),
    ErrorCode.InvalidParams,
    'invalid MCP prompt session',
    'prompt_send session_id=mcp_000…',
  );
  const list = payload(await client.callTool({ name: 'sessions_list', arguments: {} }), 'sessions_list');
  check(!list.some((s) => s.id === 'mcp_00000000000000000000000000000000'), 'the session was not created', list);
});

await step('prompt_cancel of an unknown session: cancelled:false', async () => {
  const r = payload(await client.callTool({ name: 'prompt_cancel', arguments: { session_id: 'mcp_unknown' } }), 'prompt_cancel');
  eq(r, { cancelled: false, session_id: 'mcp_unknown' }, 'payload');
});

// startSlow starts a slow scripted prompt_send on sessionID and resolves once the server
// reported progress (the turn is running), with the pending call.
async function startSlow(promptText, options = {}) {
  const progress = [];
  let started;
  const running = new Promise((r) => (started = r));
  const call = client
    .callTool({ name: 'prompt_send', arguments: { prompt: promptText, session_id: sessionID } }, undefined, {
      ...options,
      onprogress: (p) => {
        progress.push(p);
        started();
      },
    })
    .then(
      (res) => ({ res }),
      (err) => ({ err }),
    );
  const first = await Promise.race([running.then(() => 'progress'), call.then(() => 'settled'), sleep(20000).then(() => 'timeout')]);
  check(first === 'progress', 'the slow prompt_send is running (progress arrived before any answer)', first === 'settled' ? await call : first);
  await sleep(400); // let the scripted model stream a little
  return { call, progress, id: requestIdOf('prompt_send', (a) => a.prompt === promptText) };
}

await step('cancel a slow prompt_send with an AbortSignal: notifications/cancelled, the SDK rejects', async () => {
  const ac = new AbortController();
  const { call, progress, id } = await startSlow('Tell me a long story (to be aborted).', { signal: ac.signal });
  const reason = 'interop: user aborted';
  const abortedAt = Date.now();
  ac.abort(reason);
  const out = await call;
  check(out.err !== undefined, 'the call rejects', out.res);
  check(out.err instanceof McpError, 'with an McpError', `${out.err?.constructor?.name}: ${out.err?.message}`);
  // SDK 1.x: an abort with a non-McpError reason rejects locally with RequestTimeout(String(reason)).
  eq(out.err.code, ErrorCode.RequestTimeout, 'error.code (the SDK’s local rejection)');
  check(out.err.message.includes(reason), `error.message carries the abort reason: ${out.err.message}`, out.err.message);
  const cn = frames.find((f) => f.dir === '->' && f.msg.method === 'notifications/cancelled' && f.msg.params.requestId === id);
  check(cn !== undefined, `the SDK sent notifications/cancelled for request ${id}`, frames.slice(-4));
  // docs/contract.md §6: the server answers the cancelled request with {"code":0,"message":"Request cancelled"}.
  const resp = await waitFrame(isResponseTo(id), 5000, `the server answers request ${id}`);
  eq(resp.msg.error, { code: 0, message: 'Request cancelled' }, `the server's answer to the cancelled request (after ${Date.now() - abortedAt} ms)`);
  say(`   (${progress.length} progress notifications before the abort)`);
  const msgs = payload(await client.callTool({ name: 'session_get', arguments: { session_id: sessionID } }), 'session_get');
  check(!msgs.some((m) => m.content.includes(SLOW_MARKER)), 'the cancelled turn wrote no assistant text', msgs.at(-1));
  await sleep(700); // a late model answer would be written by now
  const again = payload(await client.callTool({ name: 'session_get', arguments: { session_id: sessionID } }), 'session_get');
  check(!again.some((m) => m.content.includes(SLOW_MARKER)), 'nor later', again.at(-1));
});

await step('prompt_cancel of a running prompt_send on this connection (the session lock was released)', async () => {
  const { call, id } = await startSlow('Tell me another long story (to be cancelled).');
  const busy = await client.callTool({ name: 'prompt_send', arguments: { prompt: 'Are you busy?', session_id: sessionID } });
  check(busy.isError === true, 'a second prompt_send on the busy session is an execution error', busy);
  const busyPayload = JSON.parse(busy.content[0].text);
  eq(busyPayload.error, 'prompt execution failed', 'its error');
  const pc = payload(await client.callTool({ name: 'prompt_cancel', arguments: { session_id: sessionID } }), 'prompt_cancel');
  eq(pc, { cancelled: true, session_id: sessionID }, 'prompt_cancel payload');
  const out = await call;
  check(out.err instanceof McpError, 'the original prompt_send rejects with McpError', out.res ?? `${out.err?.constructor?.name}: ${out.err?.message}`);
  eq(out.err.code, 0, 'error.code');
  eq(out.err.message, 'MCP error 0: Request cancelled', 'error.message');
  const resp = frames.find(isResponseTo(id));
  eq(resp?.msg.error, { code: 0, message: 'Request cancelled' }, 'the frame');
  const pc2 = payload(await client.callTool({ name: 'prompt_cancel', arguments: { session_id: sessionID } }), 'prompt_cancel');
  eq(pc2, { cancelled: false, session_id: sessionID }, 'prompt_cancel again (nothing runs)');
});

await step('the SDK saw no protocol errors', async () => {
  // After an AbortSignal the SDK forgets the request id, so the server's code-0 answer
  // (docs/contract.md §6) reaches Client.onerror as "unknown message ID". That one is expected.
  const abortedIds = frames.filter((f) => f.dir === '->' && f.msg.method === 'notifications/cancelled').map((f) => f.msg.params.requestId);
  // The SDK also dispatches a notification after a response that reached it in the same
  // read, so a progress notification the server wrote before the response (docs/contract.md
  // §5) can find its handler gone ("unknown token"). That is the SDK's order, not the
  // server's: it is expected only when the wire shows the notification before the response.
  const wireIndex = (pred) => frames.findIndex((f) => f.dir === '<-' && pred(f.msg));
  const progressBeforeResponse = (e) => {
    const m = /^Received a progress notification for an unknown token: (\{.*\})$/.exec(e);
    if (!m) return false;
    let note;
    try {
      note = JSON.parse(m[1]);
    } catch {
      return false;
    }
    const token = note?.params?.progressToken;
    const at = wireIndex((msg) => msg.method === 'notifications/progress' && msg.params?.progressToken === token && msg.params?.progress === note.params.progress);
    const answer = wireIndex((msg) => msg.id === token && (msg.result !== undefined || msg.error !== undefined));
    return at >= 0 && answer > at;
  };
  const unexpected = clientErrors.filter(
    (e) => !abortedIds.some((id) => e.startsWith('Received a response for an unknown message ID') && e.includes(`"id":${id}`)) && !progressBeforeResponse(e),
  );
  if (clientErrors.length > unexpected.length) say(`   note: ${clientErrors.length - unexpected.length} late answer(s) or late-dispatched progress reported by Client.onerror (expected)`);
  eq(unexpected, [], 'unexpected Client.onerror reports');
});

await step('close: stdin EOF, the server exits on its own', async () => {
  const pid = transport.pid;
  const started = Date.now();
  await client.close();
  const ms = Date.now() - started;
  connected = false;
  // StdioClientTransport.close ends stdin, waits 2 s, then sends SIGTERM.
  check(ms < 1900, `the server exited ${ms} ms after stdin EOF (before the SDK's SIGTERM)`, ms);
  let alive = true;
  try {
    process.kill(pid, 0);
  } catch {
    alive = false;
  }
  check(!alive, `process ${pid} is gone`);
});

finish();

function finish() {
  const total = elapsed();
  if (failures.length === 0) {
    say(`\nPASS: ${stepNo} steps, ${frames.length} frames, ${total}`);
    process.exit(0);
  }
  say(`\nFAIL: ${failures.length} of ${stepNo} steps failed (${total})`);
  for (const f of failures) say(` - ${f.step}: ${f.msg.split('\n')[0]}`);
  say('\nlast frames:');
  for (const f of frames.slice(-30)) say(`  ${f.at} ${f.dir} ${clip(JSON.stringify(f.msg), 700)}`);
  if (clientErrors.length) say(`\nClient.onerror:\n  ${clientErrors.join('\n  ')}`);
  say(`\nserver stderr (last 4000 chars):\n${serverStderr.slice(-4000)}`);
  if (connected) client.close().catch(() => {});
  process.exit(1);
}
