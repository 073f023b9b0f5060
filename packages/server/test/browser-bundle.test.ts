/**
 * `/service/realtime/browser.js`: the service serves the browser SDK's bundled build, cached with an
 * ETag, its integrity hash and CORS for module scripts of other origins.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserBundle, handleBrowserBundle } from '../src/http/browser-bundle.js';
import { startTestServer, type TestServer } from './helpers.js';

const PATH = '/service/realtime/browser.js';

async function get(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, init);
}

describe('the browser SDK served by the service', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('serves the bundle as JavaScript with an ETag, its integrity hash and CORS; 304 when unchanged', async () => {
    const answer = await get(`${server.url}${PATH}`, { headers: { Origin: 'http://127.0.0.1:1' } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(answer.headers.get('cache-control')).toBe('public, max-age=3600');
    const body = Buffer.from(await answer.arrayBuffer());
    expect(body.toString('utf8')).toMatch(/export\s*\{[^}]*\bconnect\b/);
    expect(answer.headers.get('x-integrity')).toBe(`sha384-${createHash('sha384').update(body).digest('base64')}`);
    const etag = answer.headers.get('etag') as string;
    expect(etag).toMatch(/^"[\w-]{43}"$/);

    const again = await get(`${server.url}${PATH}`, { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    expect((await again.arrayBuffer()).byteLength).toBe(0);
    const head = await get(`${server.url}${PATH}?v=1`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(body.length));
  });

  it('serves its source map beside it, linked from the bundle, with the SDK sources in it', async () => {
    const bundle = await (await get(`${server.url}${PATH}`)).text();
    expect(bundle).toMatch(/\n\/\/# sourceMappingURL=browser\.js\.map\n$/);
    const answer = await get(new URL('browser.js.map', `${server.url}${PATH}`).href);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    const map = (await answer.json()) as { version: number; sources: string[]; sourcesContent?: string[] };
    expect(map.version).toBe(3);
    expect(map.sources.some((source) => source.endsWith('client.ts'))).toBe(true);
    expect(map.sourcesContent?.length).toBe(map.sources.length);
    const etag = answer.headers.get('etag') as string;
    expect((await get(`${server.url}${PATH}.map`, { headers: { 'If-None-Match': etag } })).status).toBe(304);
  });

  it('refuses other methods with bad_method and an Allow header', async () => {
    const answer = await get(`${server.url}${PATH}`, { method: 'POST', body: 'x' });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET, HEAD');
    expect(await answer.json()).toMatchObject({ ok: false, error: 'bad_method' });
  });
});

describe('BrowserBundle without a build', () => {
  let plain: Server;
  let url: string;
  beforeAll(async () => {
    const bundle = new BrowserBundle('/nonexistent/realtime.browser.js');
    plain = createServer((req, res) => {
      if (!handleBrowserBundle(req, res, bundle)) res.writeHead(418).end();
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(plain.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => plain.close(() => resolve())));

  it('answers not_found in one line, and leaves other paths to the next handler', async () => {
    const answer = await get(`${url}${PATH}`);
    expect(answer.status).toBe(404);
    expect(await answer.json()).toMatchObject({
      ok: false,
      error: 'not_found',
      message: expect.stringMatching(/not built/),
    });
    expect((await get(`${url}/other`)).status).toBe(418);
  });
});
