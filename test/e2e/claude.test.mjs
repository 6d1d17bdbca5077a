// The README's Claude Code recipes, pasted as written, through the real
// Claude Code CLI (@anthropic-ai/claude-code; `claude mcp add` and
// `claude mcp list` need no login): the stdio recipe, registered from the
// clone's root and started by Claude Code from another directory, and the
// HTTP recipe, with the token exported and the server started as the README
// says. `claude mcp list` health-checks each server; both must show
// "✓ Connected".
//
// Everything runs in a temporary HOME, so no real Claude Code configuration
// is read or written, with the built binary first on PATH under the name the
// README uses.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { Gateway, Output, stopProcess, waitFor } from './lib/harness.mjs';
import { e2eDir, repoRoot, serverBin } from './lib/paths.mjs';

const run = promisify(execFile);

/** The README's port for the HTTP recipe (examples/prompts.toml [server].bind). */
const readmePort = 9310;

/**
 * The shell block that follows `<!-- e2e: NAME ... -->` in README.md, as
 * written: this test never rewrites a recipe.
 */
function readmeBlock(name) {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const m = readme.match(new RegExp(`<!-- e2e: ${name}\\b[^>]*-->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``));
  assert.ok(m, `README.md has no block marked <!-- e2e: ${name} --> followed by a sh block`);
  return m[1];
}

/** The Claude Code CLI from node_modules, as `claude` on PATH. */
function claudeShim(binDir) {
  const wrapper = path.join(e2eDir, 'node_modules', '@anthropic-ai', 'claude-code', 'cli-wrapper.cjs');
  assert.ok(fs.existsSync(wrapper), `${wrapper} is missing: run "npm ci" in test/e2e`);
  const shim = path.join(binDir, 'claude');
  fs.writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(wrapper)} "$@"\n`, { mode: 0o755 });
}

async function portFree(port) {
  const srv = net.createServer();
  return new Promise((resolve) => {
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

test('Claude Code connects to the README stdio and HTTP recipes', { timeout: 90_000 }, async (t) => {
  assert.ok(await portFree(readmePort), `port ${readmePort} (the README's HTTP recipe) is in use; stop what holds it`);

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'promptforge-claude-'));
  const home = path.join(tmp, 'home');
  const bin = path.join(tmp, 'bin');
  // Another directory than the config's: where Claude Code runs, and so
  // where it starts the stdio server.
  const project = path.join(tmp, 'project');
  for (const d of [home, bin, project]) fs.mkdirSync(d);
  fs.symlinkSync(serverBin, path.join(bin, 'promptforge-mcp-server'));
  claudeShim(bin);

  const gateway = await Gateway.start();
  const env = { ...process.env, HOME: home, PATH: `${bin}${path.delimiter}${process.env.PATH}` };
  for (const k of Object.keys(env)) {
    // Nothing of a real Claude Code setup or of the caller's token leaks in.
    if (k.startsWith('CLAUDE') || k.startsWith('ANTHROPIC') || k === 'XDG_CONFIG_HOME' || k === 'PROMPTFORGE_MCP_API_KEY') delete env[k];
  }
  // The example reads its gateway from these (prompts.env names Ollama's);
  // the environment wins, so the scripted gateway stands in for Ollama.
  env.PROMPTFORGE_GATEWAY_URL = gateway.url;
  env.PROMPTFORGE_GATEWAY_API_KEY = gateway.apiKey;

  let server;
  const serverOutput = new Output();
  t.after(async () => {
    if (server) {
      // The recipe's `&` job and its shell are one process group.
      try {
        process.kill(-server.pid, 'SIGINT');
      } catch {
        // Already gone.
      }
      await stopProcess(server, 'SIGINT');
    }
    await gateway.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  // The stdio recipe, from the clone's root as the README says.
  await run('bash', ['-euc', readmeBlock('claude-stdio')], { cwd: repoRoot, env });

  // The HTTP recipe: the token is exported and the server started by the
  // README's own lines; claude mcp add runs in the same shell, so it reads
  // the exported token. The shell then waits on the server, which the test
  // stops at the end.
  const script = `${readmeBlock('http-serve')}\n${readmeBlock('claude-http')}\nwait\n`;
  server = spawn('bash', ['-euc', script], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  serverOutput.collect(server.stdout, 'recipe');
  serverOutput.collect(server.stderr, 'recipe');
  const exited = () => server.exitCode !== null || server.signalCode !== null;
  await waitFor('the HTTP recipe\'s server to answer /healthz and Claude Code to register it', async () => {
    // The recipe's shell outlives its server only when the server failed.
    if (exited()) return 'exited';
    const res = await fetch(`http://127.0.0.1:${readmePort}/healthz`).catch(() => undefined);
    const config = fs.existsSync(path.join(home, '.claude.json')) ? fs.readFileSync(path.join(home, '.claude.json'), 'utf8') : '';
    return res?.status === 200 && config.includes('promptforge-http');
  }, { deadlineMs: 30_000 });
  assert.ok(!exited(), `the HTTP recipe's server stopped:\n${serverOutput.text()}`);
  const token = serverOutput.text().match(/^recipe: ([0-9a-f]{32})$/m);
  assert.ok(token, `the recipe's echo did not print a 32-hex-digit token:\n${serverOutput.text()}`);

  // claude mcp list, from another directory: it starts the stdio server
  // there and health-checks both.
  const { stdout, stderr } = await run('claude', ['mcp', 'list'], { cwd: project, env, timeout: 60_000 });
  const listing = `${stdout}${stderr}`;
  const line = (name) => listing.split('\n').find((l) => l.startsWith(`${name}:`)) ?? '';
  assert.match(line('promptforge'), /[✓✔] Connected/, `claude mcp list:\n${listing}\nHTTP recipe:\n${serverOutput.text()}`);
  assert.match(line('promptforge-http'), /[✓✔] Connected/, `claude mcp list:\n${listing}\nHTTP recipe:\n${serverOutput.text()}`);
  // The stdio server is registered by the config's absolute path.
  assert.ok(line('promptforge').includes(path.join(repoRoot, 'examples', 'prompts.toml')), line('promptforge'));
});
