// Package transport serves an MCP server over streamable HTTP and stdio.
package transport
