import { describe, expect, it } from 'vitest';
import type { Outgoing, Publication } from '../types.js';
import { decodePublication, encodePublication } from './publication-codec.js';

/** The channel message as the publish script writes it: the id (when there is one) between head and tail. */
function sent(event: Outgoing, id?: string): string {
  const { head, tail, body } = encodePublication(event);
  return `${head}${id ?? ''}${tail}\n${body}`;
}

// The broker contract round-trips every kind through Redis; these are the encoding's own promises.
describe('publication codec', () => {
  it('writes a room event as a short header with the id in its place, and the data as is after it', () => {
    const data = '{ "a" :\n [1, "ü\\n"] }';
    const message = sent({ kind: 'room', app: 'app1', room: 'lobby', event: 'chat', data }, '1700000000000-0');
    expect(message).toBe(`["r","1700000000000-0","app1","lobby","chat"]\n${data}`);
    expect(decodePublication(message)).toEqual({
      kind: 'room',
      app: 'app1',
      room: 'lobby',
      event: 'chat',
      data,
      id: '1700000000000-0',
    });
  });

  it('keeps an origin without a from, and a presence change without an id', () => {
    const withOrigin = sent({ kind: 'room', app: 'a', room: 'r', event: 'e', data: '1', origin: 'p:n' }, '1-0');
    expect(withOrigin.slice(0, withOrigin.indexOf('\n'))).toBe('["r","1-0","a","r","e",null,"p:n"]');
    expect(decodePublication(withOrigin)).toEqual({
      kind: 'room',
      app: 'a',
      room: 'r',
      event: 'e',
      data: '1',
      id: '1-0',
      origin: 'p:n',
    });
    const presence = sent({ kind: 'room', app: 'a', room: 'r', event: '$member.left', data: '{}', presence: true });
    expect(decodePublication(presence)).toEqual({
      kind: 'room',
      app: 'a',
      room: 'r',
      event: '$member.left',
      data: '{}',
    });
  });

  it('reads back every other kind as it was sent', () => {
    const publications: Publication[] = [
      { kind: 'user', app: 'a', user: 'u', event: 'e', data: '"x"' },
      { kind: 'user.frame', app: 'a', user: 'u', frame: '{"t":"ring"}', except: 'p1' },
      { kind: 'ask', app: 'a', user: 'u', ask: 'q', replyTo: 'n', event: 'e', data: '1' },
      { kind: 'node', node: 'n', app: 'a', message: { type: 'page.frame', page: 'p', frame: '{}' } },
      { kind: 'node', node: 'n', app: 'a', message: { type: 'service', service: 's', data: '{}' } },
      { kind: 'node', node: 'n', app: 'a', message: { type: 'ask.reply', ask: 'q', data: 'null' } },
      { kind: 'node', node: 'n', app: 'a', message: { type: 'ask.decline', ask: 'q' } },
      { kind: 'node', node: 'n', app: 'a', message: { type: 'console.entry', entry: '{"kind":"emit"}' } },
      { kind: 'broadcast', message: { type: 'console.watch', announcement: '{"node":"n"}' } },
      { kind: 'broadcast', message: { type: 'console.app_gone', app: 'a' } },
    ];
    for (const publication of publications) expect(decodePublication(sent(publication))).toEqual(publication);
  });

  it('reads nothing from a message of another shape', () => {
    for (const message of [
      'no newline',
      '{"app":"a","event":"e"}\n1',
      'not json\n1',
      '["x","a"]\n1',
      '["r","1-0","a","r"]\n1',
      '["u","a",1,"e"]\n1',
      '["a","a","u","q","n"]\n1',
      '["n","n","a","z","x"]\n1',
      '["n","n","a","r"]\n1',
      '["b","z"]\n1',
    ]) {
      expect(decodePublication(message)).toBeUndefined();
    }
  });
});
