/**
 * `GET /service/realtime/browser.js`: the browser SDK as one ES module (@realtime/browser's bundled
 * build), so a page can `import { connect } from '<service>/service/realtime/browser.js'` with no
 * build step. Read once, then served from memory with a strong ETag (304 on `If-None-Match`), a cache
 * lifetime of an hour, its Subresource Integrity hash (`X-Integrity: sha384-...`, what a `<script
 * integrity>` or an import map's `integrity` takes), and `Access-Control-Allow-Origin: *` (module
 * scripts are fetched with CORS from the page's own origin).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { API_BASE } from '@realtime/protocol';
import { ApiError, sendError } from './answer.js';

export const BROWSER_BUNDLE_PATH = `${API_BASE}/browser.js`;

interface Bundle {
  body: Buffer;
  etag: string;
  integrity: string;
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
    return {
      body,
      etag: `"${createHash('sha256').update(body).digest('base64url')}"`,
      integrity: `sha384-${createHash('sha384').update(body).digest('base64')}`,
    };
  }
}

/** Answers the bundle's path (true), or leaves any other to the next handler (false). */
export function handleBrowserBundle(req: IncomingMessage, res: ServerResponse, bundle: BrowserBundle): boolean {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if ((q < 0 ? url : url.slice(0, q)) !== BROWSER_BUNDLE_PATH) return false;
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const allow = { Allow: 'GET, HEAD' };
    sendError(res, new ApiError('bad_method', `${BROWSER_BUNDLE_PATH} takes GET, HEAD, not ${req.method}`, allow));
    return true;
  }
  void bundle.load().then((found) => {
    if (!found) {
      sendError(res, new ApiError('not_found', 'the browser SDK bundle was not built (npm run build)'));
      return;
    }
    const headers = {
      'Content-Type': 'text/javascript; charset=utf-8',
      'Cache-Control': 'public, max-age=3600',
      ETag: found.etag,
      'X-Integrity': found.integrity,
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Expose-Headers': 'ETag, X-Integrity',
    };
    if (req.headers['if-none-match'] === found.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Length': found.body.length });
    res.end(found.body);
  });
  return true;
}
