// The client cases both transports must pass: the official TypeScript MCP
// client against the real binary and the scripted gateway process.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import { FRESH, PROMPTS } from './fixtures.mjs';
import { waitFor, withStack } from './harness.mjs';

const RUN_ID = /^[0-9a-f]{32}$/;

/** Each tool's parameters (strings, but run_prompt's arguments object) and required ones (spec mcp-server §4.2). */
const TOOLS = [
  { name: 'list_prompts', props: ['cursor'], required: undefined },
  { name: 'run_prompt', props: ['prompt', 'args', 'arguments', 'input_file', 'input_text', 'output_file'], required: ['prompt'] },
  { name: 'need_prompt', props: ['capability'], required: ['capability'] },
  { name: 'check_run', props: ['run_id', 'include_trace'], required: ['run_id'] },
];

/** The single text block of a result. */
function text(result) {
  assert.equal(result.content?.length, 1, `one content block expected: ${JSON.stringify(result)}`);
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

/** Asserts a run record (structuredContent, text and isError agree) and returns it. */
function runRecord(result, want) {
  const rec = result.structuredContent;
  assert.ok(rec, `structuredContent expected: ${JSON.stringify(result)}`);
  assert.deepEqual(Object.keys(rec).sort(), ['elapsed_ms', 'error', 'prompt', 'run_id', 'status', 'tokens', 'turns', 'value']);
  assert.deepEqual(Object.keys(rec.tokens).sort(), ['completion', 'prompt']);
  for (const n of Object.values(rec.tokens)) assert.ok(Number.isInteger(n) && n >= 0, `tokens ${JSON.stringify(rec.tokens)}`);
  assert.match(rec.run_id, RUN_ID);
  assert.ok(Number.isInteger(rec.elapsed_ms) && rec.elapsed_ms >= 0, `elapsed_ms ${rec.elapsed_ms}`);
  for (const [k, v] of Object.entries(want)) assert.deepEqual(rec[k], v, `${k} of ${JSON.stringify(rec)}`);
  switch (rec.status) {
    case 'completed':
      assert.equal(result.isError ?? false, false);
      assert.equal(rec.error, null);
      assert.equal(text(result), rec.value);
      break;
    case 'failed':
      assert.equal(result.isError, true);
      assert.equal(rec.value, null);
      assert.equal(text(result), rec.error);
      break;
    case 'running':
      assert.equal(result.isError ?? false, false);
      assert.equal(rec.value, null);
      assert.equal(rec.error, null);
      assert.equal(rec.turns, 0);
      assert.equal(text(result), `${rec.prompt} is still running as run ${rec.run_id}. Collect it with check_run.`);
      break;
    default:
      assert.fail(`unknown status ${rec.status}`);
  }
  return rec;
}

/** Defines the shared client cases for one transport. */
export function defineClientSuite(transport) {
  const stack = (opts, fn) => withStack({ transport, prompts: PROMPTS, ...opts }, fn);

  describe(`the TypeScript client over ${transport}`, () => {
    test('initialize reports the server, tools and prompts, and instructions', () =>
      stack({}, async ({ client }) => {
        assert.equal(client.getServerVersion()?.name, 'promptforge-mcp-server');
        const caps = client.getServerCapabilities();
        assert.ok(caps?.tools, `tools capability expected: ${JSON.stringify(caps)}`);
        assert.ok(!caps.tools.listChanged, 'without [catalog].tools the tool list never changes, so listChanged is not advertised');
        assert.deepEqual(caps.prompts, { listChanged: true }, 'every catalog prompt is an MCP prompt, and the catalog reloads');
        assert.equal(caps.resources, undefined);
        assert.match(client.getInstructions() ?? '', /PromptForge/);
      }));

    test('tools/list publishes the four built-in tools with their schemas', () =>
      stack({}, async ({ client }) => {
        const { tools, nextCursor } = await client.listTools();
        assert.equal(nextCursor, undefined);
        assert.deepEqual(tools.map((t) => t.name), TOOLS.map((t) => t.name));
        for (const want of TOOLS) {
          const tool = tools.find((t) => t.name === want.name);
          assert.equal(typeof tool.description, 'string');
          assert.ok(tool.description.length > 0, `${want.name} has a description`);
          const s = tool.inputSchema;
          assert.equal(s.type, 'object', want.name);
          assert.equal(s.additionalProperties, false, want.name);
          assert.deepEqual(Object.keys(s.properties), want.props, want.name);
          for (const [prop, schema] of Object.entries(s.properties)) {
            const type = { 'run_prompt.arguments': 'object', 'check_run.include_trace': 'boolean' }[`${want.name}.${prop}`] ?? 'string';
            assert.equal(schema.type, type, `${want.name}.${prop}`);
            assert.ok(typeof schema.description === 'string' && schema.description.length > 0, `${want.name}.${prop} description`);
          }
          assert.deepEqual(s.required, want.required, `${want.name} required`);
        }
      }));

    test('list_prompts lists the catalog, structured and as compact JSON text', () =>
      stack({}, async ({ client, gateway }) => {
        const result = await client.callTool({ name: 'list_prompts', arguments: {} });
        assert.equal(result.isError ?? false, false);
        const listing = result.structuredContent;
        assert.deepEqual(listing, {
          prompts: [
            { name: 'echo', description: 'Return the arguments unchanged, without calling a model.', problem: null },
            { name: 'greet', description: 'Greet someone by name in one friendly line.', problem: null },
            { name: 'trio', description: 'Walk three Lua sections and report that all three ran.', problem: null },
          ],
        });
        assert.deepEqual(JSON.parse(text(result)), listing);
        assert.deepEqual(await gateway.requests(), [], 'listing reaches no model');
      }));

    test('prompts/list offers every prompt, and prompts/get runs one and returns its value', () =>
      stack({}, async ({ client, gateway }) => {
        const { prompts } = await client.listPrompts();
        assert.deepEqual(prompts.map((p) => p.name), ['echo', 'greet', 'trio']);
        const echo = prompts.find((p) => p.name === 'echo');
        assert.deepEqual(echo.arguments.map((a) => [a.name, a.required ?? false]), [['args', false]]);
        const got = await client.getPrompt({ name: 'echo', arguments: { args: 'hello from a slash command' } });
        assert.deepEqual(got.messages, [{ role: 'user', content: { type: 'text', text: 'hello from a slash command' } }]);
        assert.deepEqual(await gateway.requests(), [], 'a Lua-only prompt calls no model');
      }));

    test('run_prompt on a Lua-only prompt returns its value with no model turn', () =>
      stack({}, async ({ client, gateway }) => {
        const result = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'echo', args: 'hello from e2e' } });
        runRecord(result, { prompt: 'echo', status: 'completed', value: 'hello from e2e', turns: 0, error: null, tokens: { completion: 0, prompt: 0 } });
        assert.deepEqual(await gateway.requests(), [], 'a Lua-only prompt calls no model');
      }));

    test('run_prompt on a prose prompt sends the turn to the gateway and returns the reply', () =>
      stack({}, async ({ client, gateway }) => {
        await gateway.enqueue({ text: 'Hello, Ada! Lovely to meet you.', usage: { prompt: 42, completion: 9 } });
        const result = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'greet', args: 'Ada' } });
        runRecord(result, { prompt: 'greet', status: 'completed', value: 'Hello, Ada! Lovely to meet you.', turns: 1, error: null, tokens: { completion: 9, prompt: 42 } });
        const requests = await gateway.requests();
        assert.equal(requests.length, 1, 'one model turn');
        assert.equal(requests[0].model, 'test-model');
        const user = requests[0].messages.filter((m) => m.role === 'user').at(-1);
        assert.match(user.content, /Write a one-line friendly greeting for Ada\./);
      }));

    test('a call with a progress token receives one frame per section start, before its result', () =>
      stack({}, async ({ client, wire, transport: t }) => {
        const frames = [];
        const result = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'trio' } }, undefined, {
          onprogress: (p) => frames.push(p),
        });
        runRecord(result, { prompt: 'trio', status: 'completed', value: 'trio done', turns: 0 });

        // What the server sent, in order: the frames, then the response.
        const response = wire.findIndex((m) => m.result?.structuredContent?.prompt === 'trio');
        assert.ok(response >= 0, 'the response was recorded');
        const sent = wire.filter((m) => m.method === 'notifications/progress');
        assert.deepEqual(sent.map((m) => m.params), [
          { progressToken: wire[response].id, progress: 0, message: 'Trio' },
          { progressToken: wire[response].id, progress: 1, message: 'First' },
          { progressToken: wire[response].id, progress: 2, message: 'Second' },
          { progressToken: wire[response].id, progress: 3, message: 'Third' },
        ], 'exactly one frame for the run start and one per section, with the call\'s token and no total');
        assert.ok(wire.lastIndexOf(sent.at(-1)) < response, 'every frame precedes the response');
        if (t === 'http') {
          // Each SSE event is its own read, so the SDK hands every frame to onprogress.
          assert.deepEqual(frames.map((f) => [f.progress, f.message]), [[0, 'Trio'], [1, 'First'], [2, 'Second'], [3, 'Third']]);
        }
      }));

    test('a call aborted by the client stops its run and frees its slot', () =>
      stack({ server: { max_concurrent_runs: 1, admission_timeout: '3s' } }, async ({ client, gateway }) => {
        // Every model call waits at the gate, which is never opened: only
        // cancellation can end the run and give its slot back.
        await gateway.respond({ gate: 'held', then: { text: 'too late' } });
        const ac = new AbortController();
        const call = client.callTool({ name: 'run_prompt', arguments: { prompt: 'greet', args: 'Bo' } }, undefined, { signal: ac.signal });
        await gateway.waitArrived('held');
        ac.abort(new Error('the e2e test aborted this call'));
        await assert.rejects(call, /aborted/);

        // The run stopping drops its model request at the gateway.
        await waitFor('the cancelled run to drop its model request', async () => (await gateway.gate('held')).waiting === 0);
        // With one slot, the next call is admitted instead of refused after
        // admission_timeout.
        const next = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'echo', args: 'admitted' } });
        runRecord(next, { prompt: 'echo', status: 'completed', value: 'admitted' });
      }));

    test('a run past reply_deadline comes back running and check_run collects it', () =>
      stack({ server: { reply_deadline: '500ms' } }, async ({ client, gateway }) => {
        await gateway.enqueue({ gate: 'slow', then: { text: 'worth the wait' } });
        // The gate never opens before the reply, so only the deadline can
        // answer this call; the client-side timeout turns a missing answer
        // into a clear failure instead of a hung test.
        const first = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'greet', args: 'Cy' } }, undefined, { timeout: 20_000 });
        const running = runRecord(first, { prompt: 'greet', status: 'running' });

        const stillRunning = await client.callTool({ name: 'check_run', arguments: { run_id: running.run_id } });
        runRecord(stillRunning, { run_id: running.run_id, prompt: 'greet', status: 'running' });

        await gateway.release('slow');
        const done = await waitFor('check_run to report the run finished', async () => {
          const r = await client.callTool({ name: 'check_run', arguments: { run_id: running.run_id } });
          return r.structuredContent?.status === 'running' ? undefined : r;
        });
        runRecord(done, { run_id: running.run_id, prompt: 'greet', status: 'completed', value: 'worth the wait', turns: 1 });
      }));

    test('an unknown prompt name is refused with the names nearest first', () =>
      stack({}, async ({ client, gateway }) => {
        const result = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'Gret' } });
        assert.equal(result.isError, true);
        assert.equal(result.structuredContent, undefined);
        // Edit distances from "gret": greet 1, trio 3, echo 4.
        assert.equal(text(result), 'there is no prompt named "Gret", so nothing was run. Enabled prompts, closest first: greet, trio, echo.');
        assert.deepEqual(await gateway.requests(), []);
      }));

    test('a tool name the server does not publish is an invalid-params error', () =>
      stack({}, async ({ client }) => {
        await assert.rejects(client.callTool({ name: 'echo', arguments: {} }), (err) => {
          assert.ok(err instanceof McpError, `McpError expected, got ${err}`);
          assert.equal(err.code, ErrorCode.InvalidParams);
          return true;
        });
      }));

    test('a prompt file saved during the session is callable without reconnecting', () =>
      stack({}, async ({ client, promptsDir }) => {
        const before = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'fresh', args: 'x' } });
        assert.equal(before.isError, true);
        assert.match(text(before), /^there is no prompt named "fresh"/);

        fs.writeFileSync(path.join(promptsDir, 'fresh.md'), FRESH);
        const result = await waitFor('the saved prompt to become callable', async () => {
          const r = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'fresh', args: 'saved' } });
          return r.structuredContent?.status === 'completed' ? r : undefined;
        }, { deadlineMs: 10_000, intervalMs: 100 });
        runRecord(result, { prompt: 'fresh', status: 'completed', value: 'fresh: saved' });

        const listing = await client.callTool({ name: 'list_prompts', arguments: {} });
        assert.deepEqual(listing.structuredContent.prompts.map((p) => p.name), ['echo', 'fresh', 'greet', 'trio']);
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), TOOLS.map((t) => t.name), 'a prompt never becomes a tool');
      }));
  });
}
