import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type TestServer, post, startTestServer } from './helpers.js';

describe('smoke', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());
  it('answers a signed emit', async () => {
    const a = await post(server, `${API}/emit`, { rooms: ['lobby'], event: 'hello', data: { text: 'hi' } });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ ok: true, ids: {} });
  });
});
