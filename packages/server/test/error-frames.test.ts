import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { signToken } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * Error frames carry back the `ref` and `room` of the refused frame whenever it had them (a `ref`
 * that is a whole number, a `room` that is a string), whatever was wrong with it, and the page
 * stays open.
 */

let server: TestServer;
let page: RawPage;
let token: string;

beforeAll(async () => {
  server = await startTestServer();
  page = await helloPage(server.url, server.app.key);
  token = await signToken({ room: 'lobby', exp: Math.floor(Date.now() / 1000) + 600 }, { secret: server.app.secret });
});
afterAll(async () => {
  await page.close();
  await server.close();
});

/** Sends one frame and returns the error frame it got. */
async function refusal(frame: unknown): Promise<Record<string, unknown>> {
  if (typeof frame === 'string') page.sendText(frame);
  else page.send(frame);
  return page.next((f) => f.t === 'error', 'an error frame');
}

const withBoth = (ref: number, room: string, code = 'bad_frame') => ({
  t: 'error',
  code,
  message: expect.any(String),
  ref,
  room,
});

describe('error frames carry the ref and room of the refused frame', () => {
  const cases: [string, () => unknown, object][] = [
    ['an unknown t', () => ({ t: 'jion', ref: 7, room: 'lobby', token }), withBoth(7, 'lobby')],
    ['an unknown t that is not a string', () => ({ t: 5, ref: 8, room: 'lobby' }), withBoth(8, 'lobby')],
    ['a join without token', () => ({ t: 'join', ref: 9, room: 'lobby' }), withBoth(9, 'lobby')],
    ['a join with last: 0', () => ({ t: 'join', ref: 10, room: 'lobby', token, last: 0 }), withBoth(10, 'lobby')],
    ['a join with last: 1001', () => ({ t: 'join', ref: 11, room: 'lobby', token, last: 1001 }), withBoth(11, 'lobby')],
    [
      'a join with since that is not an id',
      () => ({ t: 'join', ref: 12, room: 'lobby', token, since: 'x' }),
      withBoth(12, 'lobby'),
    ],
    [
      'a join with both since and last',
      () => ({ t: 'join', ref: 13, room: 'lobby', token, since: '1-0', last: 1 }),
      withBoth(13, 'lobby'),
    ],
    [
      'a join with a token that is not a string',
      () => ({ t: 'join', ref: 14, room: 'lobby', token: 1 }),
      withBoth(14, 'lobby'),
    ],
    ['a leave with an unknown field', () => ({ t: 'leave', ref: 15, room: 'lobby', x: 1 }), withBoth(15, 'lobby')],
    ['a send without event', () => ({ t: 'send', ref: 16, room: 'lobby' }), withBoth(16, 'lobby')],
    [
      'a send with an event that is not a string',
      () => ({ t: 'send', ref: 17, room: 'lobby', event: 3 }),
      withBoth(17, 'lobby'),
    ],
    [
      'a join with a bad token',
      () => ({ t: 'join', ref: 18, room: 'lobby', token: 'x.y.z' }),
      withBoth(18, 'lobby', 'bad_token'),
    ],
    ['a join of a bad room name', () => ({ t: 'join', ref: 19, room: '$x', token }), withBoth(19, '$x', 'bad_room')],
  ];
  for (const [what, frame, expected] of cases) {
    it(`for ${what}`, async () => {
      expect(await refusal(frame())).toEqual(expected);
    });
  }

  it('leaves out a ref that is not a whole number, and a room that is not a string', async () => {
    expect(await refusal({ t: 'join', ref: 1.5, room: 'lobby', token })).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: expect.stringContaining('ref'),
      room: 'lobby',
    });
    expect(await refusal({ t: 'join', ref: 20, room: 42, token })).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: expect.stringContaining('room'),
      ref: 20,
    });
  });

  it('names the stream or group of a frame refused before its handler ran, as it names a room or call', async () => {
    expect(await refusal({ t: 'stream.present', ref: 21, stream: 'live' })).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: expect.stringContaining('grant'),
      ref: 21,
      stream: 'live',
    });
    expect(await refusal({ t: 'group.nope', ref: 22, group: 'team' })).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: expect.stringContaining('unknown frame type'),
      ref: 22,
      group: 'team',
    });
  });

  it('has neither when the frame had neither', async () => {
    expect(await refusal({ t: 'nope' })).toEqual({ t: 'error', code: 'bad_frame', message: expect.any(String) });
    expect(await refusal('{"t":')).toEqual({ t: 'error', code: 'bad_frame', message: 'the frame is not JSON' });
    expect(await refusal('[1]')).toEqual({ t: 'error', code: 'bad_frame', message: 'a frame must be a JSON object' });
  });

  it('leaves the page open and working', async () => {
    expect(page.ws.readyState).toBe(WebSocket.OPEN);
    page.send({ t: 'join', ref: 21, room: 'lobby', token });
    expect(await page.next((f) => f.t === 'joined', 'joined')).toMatchObject({ ref: 21, room: 'lobby' });
  });
});
