// A loopback reverse proxy that adds the server's bearer token to every
// request. The conformance CLI connects with no credentials, while our HTTP
// transport refuses to serve without [server].api_key; the proxy keeps
// both as they are. It forwards everything else untouched, Host included
// (the DNS-rebinding scenario depends on it), and streams bodies both ways
// so SSE responses pass as they are produced.
import http from 'node:http';
import { once } from 'node:events';

/**
 * Starts the proxy on a free 127.0.0.1 port; returns {url, close}.
 * onRequestBody, if given, gets each request's whole body (a Buffer) once
 * it has passed through, for a test that records what a client sent.
 */
export async function startAuthProxy({ targetPort, token, onRequestBody }) {
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    if (onRequestBody) {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => onRequestBody(Buffer.concat(chunks)));
    }
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.statusMessage, up.headers);
        res.flushHeaders();
        up.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: ${err.message}`);
      } else {
        res.destroy(err);
      }
    });
    // A client that goes away takes its upstream request with it, so the
    // server sees the disconnect as it would without the proxy.
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
