import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.js';
import {
  historyCursor,
  parseHistoryQuery,
  parseLimit,
  parseMembersQuery,
  parseRoomsQuery,
  READ_LIMIT,
  roomParam,
  roomsCursor,
} from './room-queries.js';

/** The code and message of what `read` throws; fails when it does not throw an ApiError. */
function refusal(read: () => unknown): { code: string; message: string } {
  try {
    read();
  } catch (error) {
    if (error instanceof ApiError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('it did not refuse');
}

describe('limit', () => {
  it('defaults to 100 and takes 1 to 1,000 in plain digits', () => {
    expect(parseLimit(undefined)).toBe(READ_LIMIT.default);
    expect(parseLimit('1')).toBe(1);
    expect(parseLimit('1000')).toBe(1000);
    expect(parseLimit('%31%30')).toBe(10);
  });

  it('refuses anything else with bad_request naming limit', () => {
    for (const raw of ['', '0', '1001', '9999', '01', '-1', '1.5', '1e2', '+5', ' 5', '10000000', 'ten', '%ZZ']) {
      const { code, message } = refusal(() => parseLimit(raw));
      expect(code, raw).toBe('bad_request');
      expect(message, raw).toContain('limit');
    }
  });
});

describe('a room in the path', () => {
  it('takes room names as emit does and refuses others with bad_room', () => {
    expect(roomParam('lobby é 🚀')).toBe('lobby é 🚀');
    for (const bad of ['', '$x', 'a\u0000b', 'r'.repeat(201)])
      expect(refusal(() => roomParam(bad)).code).toBe('bad_room');
  });
});

describe('GET /rooms query', () => {
  it('takes nothing, a prefix, a cursor and a limit', () => {
    expect(parseRoomsQuery('')).toEqual({ limit: 100 });
    expect(parseRoomsQuery('prefix=game%3A&limit=5')).toEqual({ prefix: 'game:', limit: 5 });
    // An empty prefix or cursor is none.
    expect(parseRoomsQuery('prefix=&cursor=')).toEqual({ limit: 100 });
  });

  it('gives back, from a cursor, the room it was made of', () => {
    for (const room of ['lobby', 'é 🚀', 'a/b?c&d=e', 'r'.repeat(200)]) {
      const cursor = roomsCursor(room);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(parseRoomsQuery(`cursor=${cursor}`)).toEqual({ after: room, limit: 100 });
    }
  });

  it('refuses cursors it did not give, bad prefixes and other parameters', () => {
    const cases = [
      'cursor=%ZZ',
      'cursor=***',
      // Not canonical base64url: the padding bits of "bG9iYnk" changed.
      'cursor=bG9iYnl',
      `cursor=${Buffer.from([0xff, 0xfe]).toString('base64url')}`,
      `cursor=${roomsCursor('$kept')}`,
      `cursor=${'A'.repeat(301)}`,
      'prefix=%24',
      'prefix=a%00',
      `prefix=${'p'.repeat(201)}`,
      'limit=0',
      'limit=5&limit=6',
      'room=a',
    ];
    for (const query of cases) expect(refusal(() => parseRoomsQuery(query)).code, query).toBe('bad_request');
    expect(refusal(() => parseRoomsQuery('cursor=***')).message).toContain('cursor');
    expect(refusal(() => parseRoomsQuery('prefix=%24')).message).toContain('prefix');
  });
});

describe('GET /rooms/{room}/members query', () => {
  it('takes a cursor of the presence store and a limit', () => {
    expect(parseMembersQuery('')).toEqual({ limit: 100 });
    expect(parseMembersQuery('cursor=1700000000000001&limit=2')).toEqual({ after: '1700000000000001', limit: 2 });
    expect(parseMembersQuery('cursor=')).toEqual({ limit: 100 });
  });

  it('refuses other cursors and parameters', () => {
    for (const query of ['cursor=abc', 'cursor=12345678901234567', 'cursor=-1', 'limit=1001', 'prefix=a']) {
      expect(refusal(() => parseMembersQuery(query)).code, query).toBe('bad_request');
    }
  });
});

describe('GET /rooms/{room}/history query', () => {
  it('reads from the oldest kept event without since, last or cursor', () => {
    expect(parseHistoryQuery('')).toEqual({ from: 'start', limit: 100 });
    expect(parseHistoryQuery('limit=7&cursor=')).toEqual({ from: 'start', limit: 7 });
  });

  it('takes since (with its epoch) or last', () => {
    expect(parseHistoryQuery('since=1700000000000-3')).toEqual({ from: 'since', since: '1700000000000-3', limit: 100 });
    expect(parseHistoryQuery('since=0-0&epoch=abc_-1&limit=10')).toEqual({
      from: 'since',
      since: '0-0',
      epoch: 'abc_-1',
      limit: 10,
    });
    expect(parseHistoryQuery('last=1000&limit=50')).toEqual({ from: 'last', last: 1000, limit: 50 });
  });

  it('gives back the place a cursor was made of', () => {
    const onward = { after: '1700000000000-3', epoch: 'e1' };
    expect(parseHistoryQuery(`cursor=${historyCursor(onward)}`)).toEqual({
      from: 'cursor',
      cursor: onward,
      limit: 100,
    });
    const ofLast = { after: '5-0', epoch: 'Zq_-9', left: 40 };
    expect(parseHistoryQuery(`cursor=${historyCursor(ofLast)}&limit=20`)).toEqual({
      from: 'cursor',
      cursor: ofLast,
      limit: 20,
    });
  });

  it('refuses bad values, two starts at once, an epoch without since and cursors it did not give', () => {
    const encoded = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const cases = [
      'since=',
      'since=abc',
      'since=1-2-3',
      'since=1234567890123456-0',
      'last=0',
      'last=1001',
      'last=5.5',
      'since=1-0&last=5',
      `since=1-0&cursor=${historyCursor({ after: '1-0', epoch: 'e' })}`,
      `last=5&cursor=${historyCursor({ after: '1-0', epoch: 'e' })}`,
      'epoch=e1',
      'last=5&epoch=e1',
      'since=1-0&epoch=',
      `since=1-0&epoch=${'e'.repeat(65)}`,
      'cursor=not%20base64',
      `cursor=${encoded({ after: '1-0' })}`,
      `cursor=${encoded(['1-0'])}`,
      `cursor=${encoded(['x', 'e'])}`,
      `cursor=${encoded(['1-0', ''])}`,
      `cursor=${encoded(['1-0', 'e', 0])}`,
      `cursor=${encoded(['1-0', 'e', 1001])}`,
      `cursor=${encoded(['1-0', 'e', 2, 'more'])}`,
      `cursor=${Buffer.from('{').toString('base64url')}`,
      'limit=1001',
      'from=1-0',
    ];
    for (const query of cases) expect(refusal(() => parseHistoryQuery(query)).code, query).toBe('bad_request');
    expect(refusal(() => parseHistoryQuery('since=1-0&last=5')).message).toBe('give one of since, last and cursor');
    expect(refusal(() => parseHistoryQuery('epoch=e')).message).toBe('epoch goes with since');
  });
});
