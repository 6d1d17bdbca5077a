// The client suite over stdio: the SDK's StdioClientTransport spawns
// `promptforge-mcp-server serve --stdio`.
import { defineClientSuite } from './lib/suite.mjs';

defineClientSuite('stdio');
