// The e2e harness: the scripted gateway and the server as child processes,
// a temporary catalog for each test, and the official TypeScript MCP client
// connected over stdio or streamable HTTP.
//
// Every process is owned: stacks close their processes in close(), a
// process-exit hook kills whatever a crashed test left behind, and the
// gateway also exits when this process's end of its stdin closes. Waits are
// bounded polls with deadlines, never fixed sleeps.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { gatewayBin, serverBin } from './paths.mjs';

// Live child pids, killed if this process exits with any still running.
const livePids = new Set();
process.on('exit', () => {
  for (const pid of livePids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

function track(child) {
  if (child.pid === undefined) return;
  livePids.add(child.pid);
  child.once('exit', () => livePids.delete(child.pid));
}

for (const [what, bin] of [['server', serverBin], ['gateway', gatewayBin]]) {
  if (!fs.existsSync(bin)) {
    throw new Error(`the ${what} binary ${bin} is missing: run "npm test" in test/e2e (its pretest builds it) or "make e2e" from the repository root`);
  }
}

/** Keeps the last lines a process wrote, for failure messages. */
export class Output {
  constructor(limit = 400) {
    this.limit = limit;
    this.lines = [];
  }

  /** Collects a readable stream's lines under a label. */
  collect(stream, label) {
    if (!stream) return;
    createInterface({ input: stream }).on('line', (line) => {
      this.lines.push(`${label}: ${line}`);
      if (this.lines.length > this.limit) this.lines.shift();
    });
  }

  text() {
    return this.lines.join('\n');
  }
}

/**
 * Polls fn until it returns a value other than undefined/false, and
 * returns that value; throws saying what was awaited once deadlineMs pass.
 */
export async function waitFor(what, fn, { deadlineMs = 15_000, intervalMs = 50 } = {}) {
  const deadline = Date.now() + deadlineMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    }
    await delay(intervalMs);
  }
}

/** Resolves to true when child exits within ms, false otherwise. */
async function exitedWithin(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  const ac = new AbortController();
  try {
    return await Promise.race([
      once(child, 'exit').then(() => true),
      delay(ms, false, { signal: ac.signal }),
    ]);
  } finally {
    ac.abort();
  }
}

/** Stops child: signal first, SIGKILL if it outlives graceMs. Returns its exit code (null if killed). */
export async function stopProcess(child, signal = 'SIGINT', graceMs = 10_000) {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill(signal);
    if (!(await exitedWithin(child, graceMs))) {
      child.kill('SIGKILL');
      await exitedWithin(child, 5_000);
    }
  }
  return child.exitCode;
}

/** The gatewaytest command, scripted through its control API. */
export class Gateway {
  static async start() {
    const child = spawn(gatewayBin, ['-stdin-lifeline'], { stdio: ['pipe', 'pipe', 'pipe'] });
    track(child);
    const output = new Output();
    output.collect(child.stderr, 'gateway');
    const lines = createInterface({ input: child.stdout });
    const ac = new AbortController();
    try {
      const [line] = await Promise.race([
        once(lines, 'line', { signal: ac.signal }),
        once(child, 'exit', { signal: ac.signal }).then(([code]) => {
          throw new Error(`gatewaytest exited (${code}) before announcing its addresses:\n${output.text()}`);
        }),
        delay(15_000, undefined, { signal: ac.signal }).then(() => {
          throw new Error(`gatewaytest announced nothing within 15 s:\n${output.text()}`);
        }),
      ]);
      lines.close();
      // Nothing else is written to stdout; keep the pipe drained anyway so
      // the gateway can never block on it.
      child.stdout.resume();
      return new Gateway(child, JSON.parse(line), output);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    } finally {
      ac.abort();
    }
  }

  constructor(child, info, output) {
    this.child = child;
    /** The API root including /v1. */
    this.url = info.url;
    this.apiKey = info.api_key;
    this.controlUrl = info.control;
    this.output = output;
  }

  async control(method, pathAndQuery, body) {
    const res = await fetch(this.controlUrl + pathAndQuery, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`gatewaytest ${method} ${pathAndQuery}: ${res.status} ${text}`);
    return JSON.parse(text);
  }

  /** Queues chat replies (see internal/gatewaytest/cmd/gatewaytest/control.go for the shapes). */
  enqueue(...replies) {
    return this.control('POST', '/control/enqueue', replies);
  }

  /** Sets the reply for chat requests the queue does not cover. */
  respond(reply) {
    return this.control('POST', '/control/respond', reply);
  }

  release(gate) {
    return this.control('POST', '/control/gate/release', { gate });
  }

  /** The gate's state: {arrived, waiting}. */
  gate(name) {
    return this.control('GET', `/control/gate?name=${encodeURIComponent(name)}`);
  }

  /** Waits (long-poll, bounded) until n requests in total reached the gate. */
  async waitArrived(name, n = 1, deadlineMs = 20_000) {
    const state = await this.control('GET', `/control/gate?name=${encodeURIComponent(name)}&arrived=${n}&wait=${deadlineMs}ms`);
    if (!state.arrived) throw new Error(`no model request reached gate ${name} within ${deadlineMs} ms`);
    return state;
  }

  /** The chat request bodies the gateway received, in order. */
  async requests() {
    return (await this.control('GET', '/control/requests')).requests;
  }

  async close() {
    this.child.stdin.end();
    if (!(await exitedWithin(this.child, 5_000))) await stopProcess(this.child, 'SIGKILL');
  }
}

/** A free loopback port (free when asked: the server may still lose a race, see startHttpServer). */
export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

function tomlValue(v) {
  if (typeof v === 'string') return JSON.stringify(v); // a TOML basic string
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  throw new Error(`no TOML rendering for ${JSON.stringify(v)}`);
}

/**
 * Writes a prompts directory and prompts.toml into a fresh temporary
 * directory. server holds [server] keys (snake_case, as in prompts.toml),
 * catalog extra [catalog] keys (tools, say).
 */
export function writeCatalog({ gateway, prompts, server = {}, catalog = {} }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'promptforge-e2e-'));
  const promptsDir = path.join(dir, 'prompts');
  fs.mkdirSync(promptsDir);
  for (const [file, text] of Object.entries(prompts)) {
    fs.writeFileSync(path.join(promptsDir, file), text);
  }
  const serverKeys = { watch: true, watch_debounce: '50ms', ...server };
  const toml = [
    '[server]',
    ...Object.entries(serverKeys).map(([k, v]) => `${k} = ${tomlValue(v)}`),
    '',
    '[paths]',
    `prompts = ${tomlValue(promptsDir)}`,
    '',
    '[gateway]',
    `url = ${tomlValue(gateway.url)}`,
    `api_key = ${tomlValue(gateway.apiKey)}`,
    '',
    '[catalog]',
    'include = ["**/*.md"]',
    ...Object.entries(catalog).map(([k, v]) => `${k} = ${tomlValue(v)}`),
    '',
  ].join('\n');
  const configPath = path.join(dir, 'prompts.toml');
  fs.writeFileSync(configPath, toml);
  return { dir, promptsDir, configPath };
}

/**
 * Starts `promptforge-mcp-server serve` over HTTP on a free port and waits
 * for /healthz. A port lost to another process between freePort and the
 * server's bind is retried on a new port.
 */
export async function startHttpServer({ gateway, prompts, server = {}, catalog: catalogKeys = {}, apiKey }) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const catalog = writeCatalog({ gateway, prompts, server: { bind: `127.0.0.1:${port}`, api_key: apiKey, ...server }, catalog: catalogKeys });
    const child = spawn(serverBin, ['serve', catalog.configPath], { cwd: catalog.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    const output = new Output();
    output.collect(child.stdout, 'server');
    output.collect(child.stderr, 'server');
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitFor('the server to answer /healthz', async () => {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw Object.assign(new Error(`the server exited (${child.exitCode ?? child.signalCode}) while starting:\n${output.text()}`), { exited: true });
        }
        const res = await fetch(`${base}/healthz`).catch(() => undefined);
        return res?.status === 200;
      }, { deadlineMs: 20_000 });
      return { child, output, base, port, ...catalog };
    } catch (err) {
      await stopProcess(child, 'SIGKILL');
      fs.rmSync(catalog.dir, { recursive: true, force: true });
      const lostPort = /address already in use|bind/i.test(output.text());
      if (attempt < 3 && lostPort) continue;
      throw new Error(`${err.message}\n${output.text()}`);
    }
  }
}

/** A connected client over one transport, with its server and gateway. */
export class Stack {
  /**
   * @param {object} o
   * @param {'stdio'|'http'} o.transport
   * @param {Record<string,string>} o.prompts file name -> prompt text
   * @param {object} [o.server] extra [server] keys
   * @param {object} [o.clientCapabilities] the client's declared capabilities (extensions, say)
   */
  static async start({ transport, prompts, server = {}, clientCapabilities }) {
    const gateway = await Gateway.start();
    const stack = new Stack(transport, gateway, clientCapabilities);
    try {
      if (transport === 'stdio') {
        const catalog = writeCatalog({ gateway, prompts, server });
        Object.assign(stack, catalog);
        const t = new StdioClientTransport({
          command: serverBin,
          args: ['serve', '--stdio', catalog.configPath],
          cwd: catalog.dir,
          stderr: 'pipe',
        });
        stack.output.collect(t.stderr, 'server');
        stack.clientTransport = t;
        await stack.client.connect(t);
        if (t.pid !== null) livePids.add(t.pid);
      } else if (transport === 'http') {
        stack.apiKey = `e2e-${crypto.randomUUID()}`;
        const srv = await startHttpServer({ gateway, prompts, server, apiKey: stack.apiKey });
        Object.assign(stack, { dir: srv.dir, promptsDir: srv.promptsDir, configPath: srv.configPath, base: srv.base, port: srv.port });
        stack.serverProcess = srv.child;
        stack.output = srv.output;
        stack.mcpUrl = `${srv.base}/mcp`;
        stack.clientTransport = new StreamableHTTPClientTransport(new URL(stack.mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${stack.apiKey}` } },
        });
        await stack.client.connect(stack.clientTransport);
      } else {
        throw new Error(`unknown transport ${transport}`);
      }
      stack.recordWire();
      return stack;
    } catch (err) {
      err.message += `\n--- server ---\n${stack.output.text()}\n--- gateway ---\n${gateway.output.text()}`;
      await stack.close();
      throw err;
    }
  }

  constructor(transport, gateway, capabilities) {
    this.transport = transport;
    this.gateway = gateway;
    this.output = new Output();
    this.client = new Client({ name: 'promptforge-e2e', version: '1.0.0' }, capabilities ? { capabilities } : undefined);
  }

  /**
   * Records every message the client transport delivers, in arrival
   * order, before the SDK's protocol layer sees it. Wire order is what the
   * server controls: the SDK dispatches notifications a microtask later
   * than responses, so over stdio, where a frame and the response can
   * arrive in one read, onprogress may miss frames the server did send
   * first.
   */
  recordWire() {
    this.wire = [];
    const t = this.clientTransport;
    const deliver = t.onmessage;
    t.onmessage = (message, extra) => {
      this.wire.push(message);
      deliver?.(message, extra);
    };
  }

  /** tools/call through the client; opts go to the SDK (signal, onprogress, timeout). */
  call(name, args, opts) {
    return this.client.callTool({ name, arguments: args }, undefined, opts);
  }

  /** Stops the client, the server and the gateway, and removes the temp dir. */
  async close() {
    const pid = this.clientTransport?.pid;
    try {
      // End the HTTP session (DELETE) as a well-behaved client does before
      // it goes; the server then has nothing of ours left to drain.
      if (this.transport === 'http' && this.clientTransport?.sessionId) await this.clientTransport.terminateSession();
    } catch {
      // A session the test already ended, or a server that is gone.
    }
    try {
      await this.client.close();
    } catch {
      // Closing a client that never connected, or whose server died, is not this test's failure.
    }
    if (pid) livePids.delete(pid);
    if (this.serverProcess) this.serverExitCode = await stopProcess(this.serverProcess, 'SIGINT');
    await this.gateway.close();
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** The processes' recent output, for a failure message. */
  logs() {
    return `--- server (${this.transport}) ---\n${this.output.text()}\n--- gateway ---\n${this.gateway.output.text()}`;
  }
}

/**
 * Runs fn with a fresh stack and always closes it; a failure carries the
 * processes' recent output.
 */
export async function withStack(opts, fn) {
  const stack = await Stack.start(opts);
  try {
    return await fn(stack);
  } catch (err) {
    if (err && typeof err === 'object' && typeof err.message === 'string') {
      err.message += `\n${stack.logs()}`;
    }
    throw err;
  } finally {
    await stack.close();
  }
}
