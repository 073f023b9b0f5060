import { describe, expect, it } from 'vitest';
import {
  mediaAddressProblem,
  parsePortRange,
  parseStreamsConfig,
  streamOptions,
  unreachableStreamsWarning,
} from './streams-config.js';
import { UsageError } from './usage-error.js';

const flagSource = (flag: string) => `--${flag}`;
const envSource = (flag: string) => `REALTIME_${flag.toUpperCase().replace(/-/g, '_')}`;

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error('no UsageError');
}

describe('media addresses', () => {
  it.for(['203.0.113.7', '10.0.0.5', '127.0.0.1', '2001:db8::7', '::1'])('takes %s', (address) => {
    expect(mediaAddressProblem(address)).toBeUndefined();
  });

  it.for(['media.example.com', 'localhost', '', ' 203.0.113.7', '203.0.113.7:40000', '10.0.0.0/8', '1.2.3'])(
    'refuses %j: not an IP literal',
    (address) => {
      expect(mediaAddressProblem(address)).toBe(
        `must be IP addresses, not host names (got ${JSON.stringify(address)})`,
      );
    },
  );

  it.for(['0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0', '224.0.0.1', '255.255.255.255', 'ff02::1'])(
    'refuses %s: browsers cannot send to it',
    (address) => {
      expect(mediaAddressProblem(address)).toContain(`${JSON.stringify(address)} cannot be announced`);
    },
  );
});

describe('port ranges', () => {
  it('reads MIN-MAX', () => {
    expect(parsePortRange('40000-40100', '--media-ports')).toEqual([40000, 40100]);
    expect(parsePortRange('1024-65535', '--media-ports')).toEqual([1024, 65535]);
  });

  it.for([
    ['40000', 'must be MIN-MAX, like 40000-40100 (got "40000")'],
    ['40000:40100', 'must be MIN-MAX'],
    ['-40100', 'must be MIN-MAX'],
    ['40000-40100-40200', 'must be MIN-MAX'],
    ['4e4-40100', 'must be MIN-MAX'],
    ['1023-2000', 'must be two whole port numbers from 1024 to 65535, the first below the second (got "1023-2000")'],
    ['40000-65536', 'from 1024 to 65535'],
    ['40100-40000', 'the first below the second'],
    ['40000-40000', 'the first below the second'],
  ])('refuses %s', ([text, message]) => {
    const refusal = usageError(() => parsePortRange(text as string, 'REALTIME_MEDIA_PORTS'));
    expect(refusal).toMatch(/^REALTIME_MEDIA_PORTS must be /);
    expect(refusal).toContain(message);
  });
});

describe('streams in the config file', () => {
  const where = 'config /etc/realtime.json: streams';

  it('reads every field', () => {
    const value = {
      mediaAddresses: ['203.0.113.7', '2001:db8::7'],
      portRange: [40000, 40100],
      maxPages: 500,
      connectTimeoutMs: 10_000,
      unitsPerPage: 2,
      unitsPerApp: 40,
    };
    expect(parseStreamsConfig(value, where)).toEqual(value);
    expect(parseStreamsConfig({}, where)).toEqual({});
    // The same address twice is announced once.
    expect(parseStreamsConfig({ mediaAddresses: ['10.0.0.5', '10.0.0.5'] }, where)).toEqual({
      mediaAddresses: ['10.0.0.5'],
    });
  });

  const bad: [string, unknown, string][] = [
    ['not an object', ['203.0.113.7'], `${where} must be an object`],
    ['an unknown field', { remoteAddresses: ['10.0.0.1'] }, `${where}: unknown field "remoteAddresses"`],
    ['addresses not an array', { mediaAddresses: '203.0.113.7' }, `${where}.mediaAddresses must be an array of IP`],
    ['no address', { mediaAddresses: [] }, `${where}.mediaAddresses must name at least one IP address`],
    [
      'a host name',
      { mediaAddresses: ['media.example.com'] },
      `${where}.mediaAddresses must be IP addresses, not host`,
    ],
    ['the any address', { mediaAddresses: ['0.0.0.0'] }, `${where}.mediaAddresses must be addresses browsers can`],
    ['the IPv6 any address', { mediaAddresses: ['10.0.0.5', '::'] }, '"::" cannot be announced'],
    ['a range as text', { portRange: '40000-40100' }, `${where}.portRange must be two whole port numbers`],
    ['a range of one', { portRange: [40000] }, `${where}.portRange must be two whole port numbers`],
    ['a range of three', { portRange: [40000, 40100, 40200] }, '(got [40000,40100,40200])'],
    ['a port too low', { portRange: [80, 40100] }, 'from 1024 to 65535'],
    ['a port too high', { portRange: [40000, 70000] }, 'from 1024 to 65535'],
    ['a port not whole', { portRange: [40000.5, 40100] }, `${where}.portRange must be two whole`],
    ['a range backwards', { portRange: [40100, 40000] }, 'the first below the second (got [40100,40000])'],
    ['a range empty', { portRange: [40000, 40000] }, 'the first below the second'],
    ['maxPages 1', { maxPages: 1 }, `${where}.maxPages must be a whole number from 2 to 10000`],
    ['maxPages too many', { maxPages: 10_001 }, `${where}.maxPages must be a whole number from 2 to 10000`],
    ['maxPages as text', { maxPages: '200' }, `${where}.maxPages must be a whole number`],
    ['a timeout too short', { connectTimeoutMs: 10 }, `${where}.connectTimeoutMs must be a whole number of ms`],
    ['no unit per page', { unitsPerPage: 0 }, `${where}.unitsPerPage must be a whole number from 1 to 64`],
    ['units per page as text', { unitsPerPage: '4' }, `${where}.unitsPerPage must be a whole number`],
    [
      'too many units per app',
      { unitsPerApp: 100_001 },
      `${where}.unitsPerApp must be a whole number from 1 to 100000`,
    ],
    ['units per app not whole', { unitsPerApp: 2.5 }, `${where}.unitsPerApp must be a whole number`],
  ];
  it.for(bad)('refuses %s in one line naming the field', ([, value, message]) => {
    expect(usageError(() => parseStreamsConfig(value, where))).toContain(message);
  });
});

describe('flags, variables and the file together', () => {
  const file = parseStreamsConfig(
    { mediaAddresses: ['10.0.0.5'], portRange: [40000, 40100], maxPages: 50, connectTimeoutMs: 5000 },
    'config f: streams',
  );

  it('nothing set: no stream options at all (the server runs with its defaults)', () => {
    expect(streamOptions(undefined, {}, flagSource)).toBeUndefined();
    expect(streamOptions({}, {}, flagSource)).toBeUndefined();
  });

  it('the file alone', () => {
    expect(streamOptions(file, {}, flagSource)).toEqual({
      mediaAddresses: ['10.0.0.5'],
      portRange: [40000, 40100],
      maxPages: 50,
      connectTimeoutMs: 5000,
    });
  });

  it('flags alone', () => {
    expect(
      streamOptions(undefined, { mediaAddress: ['203.0.113.7', '2001:db8::7'], mediaPorts: '50000-50999' }, flagSource),
    ).toEqual({
      mediaAddresses: ['203.0.113.7', '2001:db8::7'],
      portRange: [50000, 50999],
    });
  });

  it('each flag replaces its field of the file and keeps the rest', () => {
    expect(streamOptions(file, { mediaAddress: ['203.0.113.7'] }, envSource)).toEqual({
      mediaAddresses: ['203.0.113.7'],
      portRange: [40000, 40100],
      maxPages: 50,
      connectTimeoutMs: 5000,
    });
    expect(streamOptions(file, { mediaPorts: '41000-41010' }, envSource)).toEqual({
      mediaAddresses: ['10.0.0.5'],
      portRange: [41000, 41010],
      maxPages: 50,
      connectTimeoutMs: 5000,
    });
  });

  it('refuses bad flag values naming the flag or variable', () => {
    expect(usageError(() => streamOptions(file, { mediaAddress: ['media.example.com'] }, flagSource))).toBe(
      '--media-address must be IP addresses, not host names (got "media.example.com")',
    );
    expect(usageError(() => streamOptions(undefined, { mediaAddress: ['10.0.0.5', '0.0.0.0'] }, envSource))).toMatch(
      /^REALTIME_MEDIA_ADDRESS must be addresses browsers can send to/,
    );
    // `--media-address=` names none: refused, not read as "the default".
    expect(usageError(() => streamOptions(file, { mediaAddress: [] }, flagSource))).toBe(
      '--media-address must name at least one IP address',
    );
    expect(usageError(() => streamOptions(file, { mediaPorts: '40100-40000' }, envSource))).toMatch(
      /^REALTIME_MEDIA_PORTS must be two whole port numbers from 1024 to 65535, the first below the second/,
    );
  });
});

describe('the warning when remote browsers cannot reach live streams', () => {
  it('streams in a plan, the default address, a host beyond loopback: one line naming the flag', () => {
    for (const host of ['0.0.0.0', '::', '203.0.113.7', 'realtime.example.com']) {
      const warning = unreachableStreamsWarning(host, undefined, true);
      expect(warning).toContain(`listens on ${host}`);
      expect(warning).toContain('remote browsers cannot reach live streams until --media-address');
      expect(warning).not.toContain('\n');
    }
    // Other stream settings given, the addresses left alone: still the default.
    expect(unreachableStreamsWarning('0.0.0.0', { maxPages: 50, portRange: [40000, 40100] }, true)).toBeDefined();
  });

  it('nothing to say when the host is loopback, the addresses are set, or no plan has streams', () => {
    for (const host of ['127.0.0.1', '127.0.1.1', '::1', 'localhost']) {
      expect(unreachableStreamsWarning(host, undefined, true)).toBeUndefined();
    }
    expect(unreachableStreamsWarning('0.0.0.0', { mediaAddresses: ['203.0.113.7'] }, true)).toBeUndefined();
    // Set on purpose to loopback: the operator chose it.
    expect(unreachableStreamsWarning('0.0.0.0', { mediaAddresses: ['127.0.0.1'] }, true)).toBeUndefined();
    expect(unreachableStreamsWarning('0.0.0.0', undefined, false)).toBeUndefined();
  });
});
