// The client suite over streamable HTTP, plus what only HTTP has: the
// bearer check (401), the Host check (403), /healthz and a clean stop.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { PROMPTS } from './lib/fixtures.mjs';
import { stopProcess, withStack } from './lib/harness.mjs';
import { defineClientSuite } from './lib/suite.mjs';

defineClientSuite('http');

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-e2e', version: '1.0.0' } },
});

/**
 * POSTs an initialize to /mcp with exactly these headers (node:http, so
 * Host can be set) and returns {status, headers, body}.
 */
function postInitialize(port, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        timeout: 15_000,
      },
      (res) => {
        // The body of an accepted initialize is an SSE stream the server
        // may keep open; the status and headers are all these cases need.
        res.destroy();
        resolve({ status: res.statusCode, headers: res.headers });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no response within 15 s')));
    req.on('error', reject);
    req.end(INITIALIZE);
  });
}

describe('streamable HTTP only', () => {
  const stack = (fn) => withStack({ transport: 'http', prompts: PROMPTS }, fn);

  test('a client with the wrong bearer gets 401 and cannot connect', () =>
    stack(async ({ mcpUrl, port, apiKey }) => {
      const client = new Client({ name: 'wrong-key', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
        requestInit: { headers: { Authorization: `Bearer not-${apiKey}` } },
      });
      await assert.rejects(client.connect(transport), (err) => {
        assert.ok(err instanceof StreamableHTTPError, `StreamableHTTPError expected, got ${err}`);
        assert.equal(err.code, 401);
        return true;
      });
      await client.close();

      for (const [what, headers] of [
        ['no Authorization', {}],
        ['a wrong token', { authorization: `Bearer not-${apiKey}` }],
        ['an empty token', { authorization: 'Bearer ' }],
        ['another scheme', { authorization: `Basic ${apiKey}` }],
      ]) {
        const res = await postInitialize(port, headers);
        assert.equal(res.status, 401, what);
        assert.equal(res.headers['www-authenticate'], 'Bearer', what);
      }
      // The same request with the right token is accepted, so the 401s
      // above come from the token alone.
      assert.equal((await postInitialize(port, { authorization: `Bearer ${apiKey}` })).status, 200);
    }));

  test('an authenticated request with a foreign Host header gets 403', () =>
    stack(async ({ port, apiKey }) => {
      const auth = { authorization: `Bearer ${apiKey}` };
      assert.equal((await postInitialize(port, { ...auth, host: 'evil.example.net' })).status, 403);
      assert.equal((await postInitialize(port, { ...auth, host: `evil.example.net:${port}` })).status, 403);
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
        assert.equal((await postInitialize(port, { ...auth, host })).status, 200, `Host ${host} is allowed`);
      }
    }));

  test('/healthz answers without a token', () =>
    stack(async ({ base }) => {
      const res = await fetch(`${base}/healthz`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'serving' });
    }));

  test('SIGINT stops the server cleanly with exit code 0', () =>
    stack(async (s) => {
      await s.client.callTool({ name: 'list_prompts', arguments: {} });
      await s.client.close();
      assert.equal(await stopProcess(s.serverProcess, 'SIGINT'), 0, 'exit code after SIGINT');
    }));
});
