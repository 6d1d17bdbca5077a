// A run longer than the client's request timeout, through the official
// TypeScript SDK client. Clients built on that SDK give up after 60 s
// (DEFAULT_REQUEST_TIMEOUT_MSEC) and cancel the request; the server's
// reply_deadline has to answer first, so the run is collected later instead
// of cancelled. Scaled down: the client's `timeout` request option is 3 s
// and reply_deadline 1 s, and the run is held at a gateway gate until it has
// outlived the client's timeout.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { z } from 'zod';

import { PROMPTS } from './lib/fixtures.mjs';
import { waitFor, withStack } from './lib/harness.mjs';

const clientTimeoutMs = 3_000;
const server = { reply_deadline: '1s' };
const tasksExtension = 'io.modelcontextprotocol/tasks';

/** Polls check_run while the run is running, until the client's timeout has passed since start. */
async function outliveClientTimeout(client, runId, start) {
  await waitFor('the run to outlive the client timeout, still running', async () => {
    const r = await client.callTool({ name: 'check_run', arguments: { run_id: runId } });
    assert.equal(r.structuredContent?.status, 'running', `the run stopped before its gate opened: ${JSON.stringify(r)}`);
    return Date.now() - start > clientTimeoutMs + 500;
  }, { deadlineMs: clientTimeoutMs * 4, intervalMs: 250 });
}

/** Opens the gate and waits for check_run to report the run completed with the gateway's reply. */
async function collect(client, gateway, gate, runId, reply) {
  await gateway.release(gate);
  const done = await waitFor('check_run to report the run finished', async () => {
    const r = await client.callTool({ name: 'check_run', arguments: { run_id: runId } });
    return r.structuredContent?.status === 'running' ? undefined : r;
  });
  assert.equal(done.structuredContent.status, 'completed', `the run was not completed: ${JSON.stringify(done)}`);
  assert.equal(done.structuredContent.value, reply);
  assert.equal(done.structuredContent.turns, 1);
}

for (const transport of ['stdio', 'http']) {
  describe(`a run longer than the TypeScript client's timeout over ${transport}`, () => {
    test('comes back running within the client timeout and is collected, not cancelled', () =>
      withStack({ transport, prompts: PROMPTS, server }, async ({ client, gateway, wire }) => {
        await gateway.enqueue({ gate: 'long', then: { text: 'outlived the client' } });
        const start = Date.now();
        // The SDK rejects with RequestTimeout and sends notifications/cancelled
        // when this option's time passes without a response.
        const first = await client.callTool({ name: 'run_prompt', arguments: { prompt: 'greet', args: 'Di' } }, undefined, { timeout: clientTimeoutMs });
        assert.equal(first.structuredContent?.status, 'running', JSON.stringify(first));
        const runId = first.structuredContent.run_id;

        await outliveClientTimeout(client, runId, start);
        assert.equal((await gateway.gate('long')).waiting, 1, 'the model call is still held, not dropped');
        await collect(client, gateway, 'long', runId, 'outlived the client');
        assert.ok(!wire.some((m) => m.method === 'notifications/cancelled'), 'the server cancelled nothing');
      }));

    test('with the Tasks extension declared, comes back as a task and is collected with tasks/get', () =>
      withStack({ transport, prompts: PROMPTS, server, clientCapabilities: { extensions: { [tasksExtension]: {} } } }, async ({ client, gateway }) => {
        await gateway.enqueue({ gate: 'long', then: { text: 'a task outlived the client' } });
        const start = Date.now();
        const created = await client.request(
          { method: 'tools/call', params: { name: 'run_prompt', arguments: { prompt: 'greet', args: 'Ed' } } },
          z.object({ resultType: z.literal('task'), taskId: z.string(), status: z.string() }).passthrough(),
          { timeout: clientTimeoutMs },
        );
        assert.equal(created.status, 'working', JSON.stringify(created));

        // The task id is the run id: check_run and tasks/get read one record.
        await outliveClientTimeout(client, created.taskId, start);
        await collect(client, gateway, 'long', created.taskId, 'a task outlived the client');
        const got = await client.request(
          { method: 'tasks/get', params: { taskId: created.taskId } },
          z.object({ status: z.string(), result: z.object({ structuredContent: z.object({ value: z.string() }).passthrough() }).passthrough() }).passthrough(),
        );
        assert.equal(got.status, 'completed');
        assert.equal(got.result.structuredContent.value, 'a task outlived the client');
      }));
  });
}
