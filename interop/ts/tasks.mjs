#!/usr/bin/env node
// Durable MCP tasks through the official TypeScript SDK's task client
// (@modelcontextprotocol/sdk, pinned in package-lock.json): one step per run, so that every step
// is a new client process and a new server process, as a real client that comes back later is.
//
//   OPENPROGRAM_MCP_TOKEN=<token> node tasks.mjs <openprogram-binary> <state-dir> <step> [args]
//
// Steps (cli/e2e/tasks drives them and asserts on what they print):
//   start <prompt>    listTools, then callToolStream(prompt_send) until the task is created and
//                     its first status was polled; then client.close(), which closes the server
//                     the SDK's way (stdin end, SIGTERM after 2 s, SIGKILL after 2 s more);
//                     with TASKS_START_SIGTERM=1 the server gets SIGTERM before that.
//   result <taskId>   getTaskResult (it waits for the task to end)
//   get <taskId>      getTask
//   list              listTasks, every page
//   cancel <taskId>   cancelTask
//   call <prompt>     a plain callTool(prompt_send), no task
//
// The last line on stdout is `OUTCOME <json>`: {"ok": <what the SDK returned>} or
// {"error": {"code", "message"}}. Everything before it is a transcript. Exit 0 when the step ran
// (whatever the server answered), 1 when the script itself failed, 2 on bad usage.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const [binary, stateDir, step, arg] = process.argv.slice(2);
const token = process.env.OPENPROGRAM_MCP_TOKEN ?? '';
if (!binary || !stateDir || !step || !token) {
  console.error('usage: OPENPROGRAM_MCP_TOKEN=<token> node tasks.mjs <openprogram-binary> <state-dir> <step> [arg]');
  process.exit(2);
}
// Longer than the longest turn the tests run: tasks/result waits for the turn.
const LONG = { timeout: 300_000 };
const t0 = Date.now();
const say = (s) => console.log(`[${((Date.now() - t0) / 1000).toFixed(2)}s] ${s}`);

const transport = new StdioClientTransport({
  command: binary,
  args: ['mcp', 'serve'],
  env: { OPENPROGRAM_HOME: stateDir, OPENPROGRAM_MCP_TOKEN: token },
  stderr: 'inherit',
});
const client = new Client({ name: 'openprogram-tasks-ts', version: '1.0.0' }, { capabilities: {} });

function errorOf(e) {
  if (e instanceof McpError) return { code: e.code, message: e.message };
  return { code: null, message: String(e?.message ?? e) };
}

async function run() {
  switch (step) {
    case 'start': {
      const tools = await client.listTools();
      const ps = tools.tools.find((t) => t.name === 'prompt_send');
      say(`tools/list: prompt_send execution ${JSON.stringify(ps?.execution)}`);
      const stream = client.experimental.tasks.callToolStream({ name: 'prompt_send', arguments: { prompt: arg } }, CallToolResultSchema, LONG);
      let created;
      for await (const msg of stream) {
        say(`stream: ${msg.type} ${JSON.stringify(msg.task ?? msg.result ?? errorOf(msg.error))}`);
        if (msg.type === 'taskCreated') {
          created = msg.task;
          continue;
        }
        if (msg.type === 'taskStatus') {
          // The first poll came back: leave, as a client that gives up or is quit does.
          if (process.env.TASKS_START_SIGTERM === '1') {
            // A client that is itself being shut down: the server gets SIGTERM first.
            process.kill(transport.pid, 'SIGTERM');
            say(`sent SIGTERM to the server (pid ${transport.pid})`);
          }
          return { created, status: msg.task, toolExecution: ps?.execution ?? null };
        }
        return { created, early: msg.type, result: msg.result ?? null, error: msg.error ? errorOf(msg.error) : null };
      }
      throw new Error('the stream ended without a task status');
    }
    case 'result':
      return client.experimental.tasks.getTaskResult(arg, CallToolResultSchema, LONG);
    case 'get':
      return client.experimental.tasks.getTask(arg);
    case 'list': {
      const all = [];
      let cursor;
      for (let page = 0; page < 100; page++) {
        const r = await client.experimental.tasks.listTasks(cursor);
        all.push(...r.tasks);
        cursor = r.nextCursor;
        if (!cursor) return { tasks: all };
      }
      throw new Error('tasks/list gave more than 100 pages');
    }
    case 'cancel':
      return client.experimental.tasks.cancelTask(arg);
    case 'call':
      return client.callTool({ name: 'prompt_send', arguments: { prompt: arg } }, CallToolResultSchema, LONG);
    default:
      console.error(`unknown step ${step}`);
      process.exit(2);
  }
}

let outcome;
try {
  await client.connect(transport);
  say(`connected: server capabilities ${JSON.stringify(client.getServerCapabilities())}`);
  try {
    outcome = { ok: await run() };
  } catch (e) {
    outcome = { error: errorOf(e) };
  }
  const closing = Date.now();
  await client.close();
  say(`client.close() took ${Date.now() - closing} ms`);
} catch (e) {
  console.error(`tasks.mjs ${step}: ${e?.stack ?? e}`);
  process.exit(1);
}
console.log(`OUTCOME ${JSON.stringify(outcome)}`);
process.exit(0);
