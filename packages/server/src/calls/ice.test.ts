import { describe, expect, it } from 'vitest';
import { iceServers, iceUser } from './ice.js';
import { DEFAULT_TURN_TTL_SECONDS } from './options.js';

const SECRET = 'turn-shared-secret-0123456789';
const NOW_MS = 1_700_000_000_123;

/*
 * The credentials below were computed apart from this code, at a shell:
 *   printf '%s' '1700003600:alice' | openssl dgst -sha1 -hmac 'turn-shared-secret-0123456789' -binary | base64
 */
const VECTORS = {
  alice: { username: '1700003600:alice', credential: 'en/I5cUsJ5XBg4z1kwps54z6FG0=' },
  anonymous: { username: '1700043200:$anon:p1', credential: 'O9hopeWST9LpPN32g0OOC5B07Ss=' },
  utf8: { username: '1700003600:zoë', credential: 'sf771Do07cqPpWduoajzATSWK74=' },
};

describe('iceServers', () => {
  it('gives nothing without a configuration, or with empty lists', () => {
    expect(iceServers(undefined, 'alice', NOW_MS)).toEqual([]);
    expect(iceServers({}, 'alice', NOW_MS)).toEqual([]);
    expect(iceServers({ stun: [], turn: { urls: [], secret: SECRET } }, 'alice', NOW_MS)).toEqual([]);
  });

  it('gives the STUN servers as configured, without credentials', () => {
    const stun = ['stun:stun.example.com:3478', 'stun:[2001:db8::1]:3478'];
    expect(iceServers({ stun }, 'alice', NOW_MS)).toEqual([{ urls: stun }]);
  });

  it('gives TURN servers the REST API credentials coturn checks (openssl vector)', () => {
    const urls = ['turn:turn.example.com:3478?transport=udp', 'turns:turn.example.com:5349?transport=tcp'];
    const servers = iceServers(
      { stun: ['stun:turn.example.com:3478'], turn: { urls, secret: SECRET, ttlSeconds: 3600 } },
      'alice',
      NOW_MS,
    );
    expect(servers).toEqual([{ urls: ['stun:turn.example.com:3478'] }, { urls, ...VECTORS.alice }]);
    expect(iceServers({ turn: { urls, secret: SECRET, ttlSeconds: 3600 } }, 'zoë', NOW_MS)).toEqual([
      { urls, ...VECTORS.utf8 },
    ]);
  });

  it('lasts 12 hours unless configured; an anonymous page is $anon:<page id>', () => {
    expect(DEFAULT_TURN_TTL_SECONDS).toBe(43_200);
    const urls = ['turn:turn.example.com:3478'];
    const [server] = iceServers({ turn: { urls, secret: SECRET } }, iceUser(null, 'p1'), NOW_MS);
    expect(server).toEqual({ urls, ...VECTORS.anonymous });
    expect(iceUser('alice', 'p1')).toBe('alice');
  });

  it('hands out copies: a page changing its list changes nobody else', () => {
    const config = { stun: ['stun:a.example:3478'], turn: { urls: ['turn:a.example:3478'], secret: SECRET } };
    const [stun, turn] = iceServers(config, 'alice', NOW_MS);
    stun?.urls.push('stun:evil.example');
    turn?.urls.push('turn:evil.example');
    expect(config.stun).toEqual(['stun:a.example:3478']);
    expect(config.turn.urls).toEqual(['turn:a.example:3478']);
  });
});
