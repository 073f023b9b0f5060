/**
 * `GET /service/realtime/browser.js`: the browser SDK as one ES module (@realtime/browser's bundled
 * build), so a page can `import { connect } from '<service>/service/realtime/browser.js'` with no
 * build step. Read once, then served from memory with a strong ETag (304 on `If-None-Match`), a cache
 * lifetime of an hour, its Subresource Integrity hash (`X-Integrity: sha384-...`, what a `<script
 * integrity>` or an import map's `integrity` takes), and `Access-Control-Allow-Origin: *` (module
 * scripts are fetched with CORS from the page's own origin). Its source map is served beside it
 * (`browser.js.map`), so a browser's developer tools show the SDK's sources.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { API_BASE } from '@realtime/protocol';
import { ApiError, sendError } from './answer.js';

export const BROWSER_BUNDLE_PATH = `${API_BASE}/browser.js`;
export const BROWSER_MAP_PATH = `${BROWSER_BUNDLE_PATH}.map`;

interface Served {
  body: Buffer;
  etag: string;
}

interface Bundle extends Served {
  integrity: string;
  /** Undefined when the build wrote none. */
  map: Served | undefined;
}

function served(body: Buffer): Served {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}

/** Where @realtime/browser's bundle is; undefined when the package cannot be found. */
function bundleFile(): string | undefined {
  try {
    return fileURLToPath(import.meta.resolve('@realtime/browser/browser'));
  } catch {
    return undefined;
  }
}

export class BrowserBundle {
  readonly #file: string | undefined;
  #loaded: Promise<Bundle | undefined> | undefined;

  constructor(file: string | undefined = bundleFile()) {
    this.#file = file;
  }

  /** The bundle, read on first use (undefined when it was not built). */
  load(): Promise<Bundle | undefined> {
    this.#loaded ??= this.#read();
    return this.#loaded;
  }

  async #read(): Promise<Bundle | undefined> {
    if (this.#file === undefined) return undefined;
    let body: Buffer;
    try {
      body = await readFile(this.#file);
    } catch {
      // Not built: asked again next time (a build may come).
      this.#loaded = undefined;
      return undefined;
    }
    // The build names its map by the file's own name; here it is served beside browser.js.
    const text = body.toString('utf8');
    const link = /\n\/\/# sourceMappingURL=[^\n]*\n?$/.exec(text);
    const map = await readFile(`${this.#file}.map`).then(served, () => undefined);
    if (link && map) body = Buffer.from(`${text.slice(0, link.index)}\n//# sourceMappingURL=browser.js.map\n`);
    else if (link) body = Buffer.from(text.slice(0, link.index + 1));
    return { ...served(body), integrity: `sha384-${createHash('sha384').update(body).digest('base64')}`, map };
  }
}

/** Answers the bundle's path (true), or leaves any other to the next handler (false). */
export function handleBrowserBundle(req: IncomingMessage, res: ServerResponse, bundle: BrowserBundle): boolean {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path !== BROWSER_BUNDLE_PATH && path !== BROWSER_MAP_PATH) return false;
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const allow = { Allow: 'GET, HEAD' };
    sendError(res, new ApiError('bad_method', `${path} takes GET, HEAD, not ${req.method}`, allow));
    return true;
  }
  void bundle.load().then((found) => {
    if (!found) {
      sendError(res, new ApiError('not_found', 'the browser SDK bundle was not built (npm run build)'));
      return;
    }
    const file = path === BROWSER_MAP_PATH ? found.map : found;
    if (!file) {
      sendError(res, new ApiError('not_found', 'the browser SDK bundle was built without a source map'));
      return;
    }
    const headers: Record<string, string> = {
      'Content-Type': file === found ? 'text/javascript; charset=utf-8' : 'application/json; charset=utf-8',
      'Cache-Control': 'public, max-age=3600',
      ETag: file.etag,
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Expose-Headers': 'ETag, X-Integrity',
    };
    if (file === found) headers['X-Integrity'] = found.integrity;
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Length': String(file.body.length) });
    res.end(file.body);
  });
  return true;
}
