// Builds the two binaries the e2e suites drive, once per test run, into
// test/e2e/.bin: promptforge-mcp-server (the server under test) and
// gatewaytest (the scripted model gateway). $GO picks the go command.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { binDir, repoRoot } from '../lib/paths.mjs';

const go = process.env.GO || 'go';
mkdirSync(binDir, { recursive: true });
for (const [out, pkg] of [
  ['promptforge-mcp-server', './cmd/promptforge-mcp-server'],
  ['gatewaytest', './internal/gatewaytest/cmd/gatewaytest'],
]) {
  const target = `${binDir}/${out}`;
  console.log(`build ${pkg} -> ${target}`);
  execFileSync(go, ['build', '-o', target, pkg], { cwd: repoRoot, stdio: 'inherit' });
}
