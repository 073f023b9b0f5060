import { describe, expect, it } from 'vitest';
import { callOptions, iceUrlProblem, parseCallsConfig, splitList } from './calls-config.js';
import { UsageError } from './usage-error.js';

const SECRET = 'turn-shared-secret-0123456789';
const flagSource = (flag: string) => `--${flag}`;
const envSource = (flag: string) => `REALTIME_${flag.toUpperCase().replace(/-/g, '_')}`;

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    // The TURN secret never shows in a message: it would land in a log or a terminal.
    expect(message).not.toContain(SECRET);
    return message;
  }
  throw new Error('no UsageError');
}

describe('ICE server addresses', () => {
  it.for(['stun:stun.example.com', 'stun:stun.example.com:3478', 'stun:192.0.2.1:19302', 'stun:[2001:db8::1]:3478'])(
    'takes STUN %s',
    (url) => {
      expect(iceUrlProblem(url, 'stun')).toBeUndefined();
    },
  );

  it.for([
    'turn:turn.example.com',
    'turn:turn.example.com:3478?transport=udp',
    'turn:turn.example.com:3478?transport=tcp',
    'turns:turn.example.com:5349',
    'turns:turn.example.com:443?transport=tcp',
    'turn:[2001:db8::1]:3478',
  ])('takes TURN %s', (url) => {
    expect(iceUrlProblem(url, 'turn')).toBeUndefined();
  });

  it.for<[string, 'stun' | 'turn']>([
    ['turn:turn.example.com:3478', 'stun'],
    ['stun:stun.example.com:3478', 'turn'],
    ['stuns:stun.example.com', 'stun'],
    ['https://stun.example.com', 'stun'],
    ['stun.example.com:3478', 'stun'],
    ['stun:', 'stun'],
    ['stun:exa mple.com', 'stun'],
    ['stun:example.com:0', 'stun'],
    ['stun:example.com:70000', 'stun'],
    ['stun:example.com:3478?transport=udp', 'stun'],
    ['turn:example.com:3478?transport=sctp', 'turn'],
    ['turn:user@example.com', 'turn'],
    ['turn://example.com', 'turn'],
  ])('refuses %s as %s', ([url, kind]) => {
    expect(iceUrlProblem(url, kind)).toContain(JSON.stringify(url));
  });

  it('splits flag values at commas and drops blanks', () => {
    expect(splitList(undefined)).toBeUndefined();
    expect(splitList(['stun:a:1, stun:b:2', 'stun:c'])).toEqual(['stun:a:1', 'stun:b:2', 'stun:c']);
    expect(splitList([''])).toEqual([]);
  });
});

describe('calls in the config file', () => {
  const where = 'config /etc/realtime.json: calls';

  it('reads ring time, STUN and TURN', () => {
    const value = {
      ringMs: 30_000,
      stun: ['stun:stun.example.com:3478'],
      turn: { urls: ['turn:turn.example.com:3478?transport=udp'], secret: SECRET, ttlSeconds: 3600 },
    };
    expect(parseCallsConfig(value, where)).toEqual(value);
    expect(parseCallsConfig({}, where)).toEqual({});
  });

  it('reads invite rates, each of perCaller and perCallee on its own, and hands them to the service', () => {
    const invites = { perCaller: { perMinute: 6, burst: 2 }, perCallee: { perMinute: 30, burst: 12 } };
    expect(parseCallsConfig({ invites }, where)).toEqual({ invites });
    const callerOnly = parseCallsConfig({ invites: { perCaller: { perMinute: 6, burst: 2 } } }, where);
    expect(callerOnly).toEqual({ invites: { perCaller: { perMinute: 6, burst: 2 } } });
    expect(callOptions(callerOnly, {}, flagSource)).toEqual({ invites: { perCaller: { perMinute: 6, burst: 2 } } });
  });

  const bad: [string, unknown, string][] = [
    ['not an object', ['stun:a'], `${where} must be an object`],
    ['an unknown field', { ice: {} }, `${where}: unknown field "ice"`],
    ['ringMs not whole', { ringMs: 1.5 }, `${where}.ringMs must be a whole number of ms from 1000 to 600000`],
    ['ringMs too short', { ringMs: 10 }, `${where}.ringMs`],
    ['stun not an array', { stun: 'stun:a' }, `${where}.stun must be an array of stun: addresses`],
    ['a TURN address among STUN', { stun: ['turn:a:3478'] }, `${where}.stun: must be stun:HOST`],
    ['turn not an object', { turn: ['turn:a'] }, `${where}.turn must be`],
    ['an unknown turn field', { turn: { user: 'x' } }, `${where}.turn: unknown field "user"`],
    ['a STUN address among TURN', { turn: { urls: ['stun:a'] } }, `${where}.turn.urls: must be turn:HOST`],
    ['a short secret', { turn: { secret: 'short' } }, `${where}.turn.secret must be at least 16 characters`],
    ['a secret with spaces', { turn: { secret: `${SECRET} x` } }, `${where}.turn.secret must be at least 16`],
    ['a ttl too short', { turn: { ttlSeconds: 5 } }, `${where}.turn.ttlSeconds must be a whole number of seconds`],
    ['invites not an object', { invites: 5 }, `${where}.invites must be { "perCaller"`],
    ['an unknown invites field', { invites: { perPage: {} } }, `${where}.invites: unknown field "perPage"`],
    ['a rate not an object', { invites: { perCaller: 10 } }, `${where}.invites.perCaller must be { "perMinute"`],
    [
      'a rate without its burst',
      { invites: { perCallee: { perMinute: 10 } } },
      `${where}.invites.perCallee.burst must be a whole number of invites from 1`,
    ],
    [
      'a rate of 0',
      { invites: { perCaller: { perMinute: 0, burst: 5 } } },
      `${where}.invites.perCaller.perMinute must be a whole number of invites from 1`,
    ],
    [
      'an unknown rate field',
      { invites: { perCaller: { perSecond: 1, perMinute: 1, burst: 1 } } },
      `${where}.invites.perCaller: unknown field "perSecond"`,
    ],
  ];
  it.for(bad)('refuses %s in one line naming the field', ([, value, message]) => {
    expect(usageError(() => parseCallsConfig(value, where))).toContain(message);
  });
});

describe('flags, variables and the file together', () => {
  const file = parseCallsConfig(
    {
      ringMs: 20_000,
      stun: ['stun:file.example:3478'],
      turn: { urls: ['turn:file.example:3478'], secret: SECRET, ttlSeconds: 600 },
    },
    'config f: calls',
  );

  it('nothing set: no calls options at all (the server runs with its defaults)', () => {
    expect(callOptions(undefined, {}, flagSource)).toBeUndefined();
    expect(callOptions({}, {}, flagSource)).toBeUndefined();
    expect(callOptions(undefined, { stun: [] }, flagSource)).toBeUndefined();
  });

  it('the file alone', () => {
    expect(callOptions(file, {}, flagSource)).toEqual({
      ringMs: 20_000,
      ice: {
        stun: ['stun:file.example:3478'],
        turn: { urls: ['turn:file.example:3478'], secret: SECRET, ttlSeconds: 600 },
      },
    });
  });

  it('flags alone', () => {
    expect(
      callOptions(
        undefined,
        { stun: ['stun:a.example:3478', 'stun:b.example'], turn: ['turns:t.example:5349'], turnSecret: SECRET },
        flagSource,
      ),
    ).toEqual({
      ice: {
        stun: ['stun:a.example:3478', 'stun:b.example'],
        turn: { urls: ['turns:t.example:5349'], secret: SECRET },
      },
    });
  });

  it('each flag replaces its field of the file and keeps the rest', () => {
    const other = 'another-turn-secret-0123456789';
    expect(callOptions(file, { turnSecret: other }, envSource)).toEqual({
      ringMs: 20_000,
      ice: {
        stun: ['stun:file.example:3478'],
        turn: { urls: ['turn:file.example:3478'], secret: other, ttlSeconds: 600 },
      },
    });
    // An empty --stun= takes the file's STUN servers away.
    expect(callOptions(file, { stun: [], turn: ['turn:flag.example'] }, flagSource)?.ice).toEqual({
      turn: { urls: ['turn:flag.example'], secret: SECRET, ttlSeconds: 600 },
    });
    // The file names the TURN servers, the variable holds the secret: the secret stays out of the file.
    expect(
      callOptions(parseCallsConfig({ turn: { urls: ['turn:t.example'] } }, 'c'), { turnSecret: SECRET }, envSource),
    ).toEqual({ ice: { turn: { urls: ['turn:t.example'], secret: SECRET } } });
  });

  it('refuses TURN without a secret and a secret without TURN, naming where each came from', () => {
    expect(usageError(() => callOptions(undefined, { turn: ['turn:t.example'] }, envSource))).toMatch(
      /^REALTIME_TURN: TURN servers need their shared secret: --turn-secret, REALTIME_TURN_SECRET or calls\.turn\.secret/,
    );
    expect(
      usageError(() =>
        callOptions(parseCallsConfig({ turn: { urls: ['turn:t.example'] } }, 'c'), {}, flagSource, 'config f: calls'),
      ),
    ).toMatch(/^config f: calls\.turn\.urls: TURN servers need their shared secret/);
    expect(usageError(() => callOptions(undefined, { turnSecret: SECRET }, flagSource))).toMatch(
      /^--turn-secret is set but no TURN server is: add --turn URL/,
    );
    expect(usageError(() => callOptions(file, { turn: [], stun: [] }, flagSource))).toMatch(
      /^config calls\.turn\.secret is set but no TURN server is/,
    );
  });

  it('refuses bad flag values naming the flag or variable', () => {
    expect(usageError(() => callOptions(undefined, { stun: ['turn:a'] }, flagSource))).toMatch(
      /^--stun: must be stun:/,
    );
    expect(usageError(() => callOptions(undefined, { turn: ['stun:a'], turnSecret: SECRET }, envSource))).toMatch(
      /^REALTIME_TURN: must be turn:/,
    );
    expect(usageError(() => callOptions(undefined, { turn: ['turn:a'], turnSecret: 'short' }, envSource))).toMatch(
      /^REALTIME_TURN_SECRET must be at least 16 characters/,
    );
  });
});
