// The official TypeScript SDK's floor for the end-to-end benchmark
// (test/bench, `make bench`): an MCP server whose only tool, "const",
// returns a constant. stdio by default; `--http PORT` serves streamable HTTP
// with stateful sessions (one transport per session, the SDK's documented
// pattern). Not a test: `node --test` does not pick it up (no .test.mjs).
import { randomUUID } from 'node:crypto';
import http from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

function newServer() {
  const server = new McpServer({ name: 'ts-consttool', version: '1' });
  server.registerTool('const', { description: 'Returns a constant.' }, async () => ({
    content: [{ type: 'text', text: 'hello' }],
  }));
  return server;
}

const at = process.argv.indexOf('--http');
if (at < 0) {
  await newServer().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[at + 1]);
  const sessions = new Map();
  const readBody = (req) =>
    new Promise((resolve, reject) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined));
      req.on('error', reject);
    });
  http
    .createServer(async (req, res) => {
      try {
        const body = req.method === 'POST' ? await readBody(req) : undefined;
        const sid = req.headers['mcp-session-id'];
        let transport = sid ? sessions.get(sid) : undefined;
        if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
          transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => sessions.set(id, transport),
          });
          transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
          await newServer().connect(transport);
        }
        if (!transport) {
          res.writeHead(400).end('no session');
          return;
        }
        await transport.handleRequest(req, res, body);
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    })
    .listen(port, '127.0.0.1');
}
