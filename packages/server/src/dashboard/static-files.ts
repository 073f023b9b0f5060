/**
 * The dashboard's page: one HTML file and the bundle `npm run build` makes of packages/server/ui
 * (build-ui.mjs) into packages/server/dist-ui. Read once, kept in memory: a few hundred KB at most.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Refusal } from './refusal.js';
import { DASHBOARD_PATH } from './request.js';

const DIST = new URL('../../dist-ui/', import.meta.url);

const FILES: Record<string, { file: string; type: string }> = {
  [`${DASHBOARD_PATH}/`]: { file: 'index.html', type: 'text/html; charset=utf-8' },
  [`${DASHBOARD_PATH}/dashboard.js`]: { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  [`${DASHBOARD_PATH}/dashboard.css`]: { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  [`${DASHBOARD_PATH}/favicon.svg`]: { file: 'favicon.svg', type: 'image/svg+xml' },
};

/** The page may load only its own files: no inline script, no other origin. */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

const cache = new Map<string, Buffer>();

export function isStaticPath(path: string): boolean {
  return path === DASHBOARD_PATH || Object.hasOwn(FILES, path);
}

/** Answers GET/HEAD of the page's files; `/dashboard` moves to `/dashboard/`. */
export async function serveStatic(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new Refusal(405, 'bad_method', `${path} takes GET, HEAD, not ${req.method}`, { Allow: 'GET, HEAD' });
  }
  if (path === DASHBOARD_PATH) {
    res.writeHead(308, { Location: `${DASHBOARD_PATH}/` }).end();
    return;
  }
  const entry = FILES[path];
  if (entry === undefined) throw new Refusal(404, 'not_found', 'no such file');
  let body = cache.get(entry.file);
  if (body === undefined) {
    try {
      body = await readFile(new URL(entry.file, DIST));
    } catch {
      throw new Refusal(503, 'unavailable', 'the dashboard page is not built: run `npm run build`');
    }
    cache.set(entry.file, body);
  }
  res.writeHead(200, {
    'Content-Type': entry.type,
    'Content-Length': body.length,
    'Cache-Control': 'no-cache',
    ...SECURITY_HEADERS,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
