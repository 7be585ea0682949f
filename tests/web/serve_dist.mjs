// serve_dist.mjs: the static server the page tests and the page benchmark share. It serves a
// built dist/ under a sub-path only (so a URL that is not relative fails), with the MIME types
// a module worker and wasm streaming compilation need, and reports every miss.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/**
 * Starts serving `dist` under `subPath` (e.g. `/sub/dir/`) on 127.0.0.1, a free port.
 * `onMiss(text)` is called for each request outside the sub-path or not in dist/.
 * Resolves with the `http.Server`.
 */
export function serveDist(dist, subPath, onMiss) {
  const root = path.resolve(dist);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    if (!url.pathname.startsWith(subPath)) {
      onMiss(`outside ${subPath}: ${url.pathname}`);
      res.writeHead(404).end();
      return;
    }
    let rel = decodeURIComponent(url.pathname.slice(subPath.length));
    if (rel === '' || rel.endsWith('/')) rel += 'index.html';
    const file = path.resolve(root, rel);
    let stat = null;
    try {
      stat = file.startsWith(root + path.sep) ? fs.statSync(file) : null;
    } catch {
      stat = null;
    }
    if (stat === null || !stat.isFile()) {
      onMiss(`not in dist/: ${url.pathname}`);
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'content-type': MIME[path.extname(file)] || 'application/octet-stream',
      'content-length': stat.size,
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
