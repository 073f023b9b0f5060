import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchDataBytes, dataBytes } from './json-span.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const size = (text: string): number => Buffer.byteLength(text, 'utf8');

describe('dataBytes', () => {
  it.each([
    ['an object', '{"data":{"a":1}}', '{"a":1}'],
    ['whitespace inside data, not around it', '{ "data" :  { "a" : [ 1 ,\n 2 ] }\t, "x":1}', '{ "a" : [ 1 ,\n 2 ] }'],
    ['escapes as sent', '{"data":"\\u00e9\\n\\"\\\\"}', '"\\u00e9\\n\\"\\\\"'],
    ['raw multi-byte characters', '{"data":"é😀漢"}', '"é😀漢"'],
    ['a number', '{"data":-1.5e+3}', '-1.5e+3'],
    ['a number before whitespace', '{"data":123 \n}', '123'],
    ['a number before a comma', '{"data":0,"x":1}', '0'],
    ['true', '{"x":1,"data":true}', 'true'],
    ['null', '{"data":null}', 'null'],
    ['an empty string', '{"data":""}', '""'],
    ['the last of duplicate keys', '{"data":1,"data":"abc","x":{}}', '"abc"'],
    ['the last of duplicate keys, one written with escapes', '{"data":"last?","\\u0064ata":[1, 2]}', '[1, 2]'],
    ['a key written with escapes', '{"d\\u0061t\\u0061":{"k":1}}', '{"k":1}'],
    ['a key with upper-case hex escapes', '{"\\u0044ata":1,"\\u0064\\u0061\\u0074\\u0061":22}', '22'],
    [
      'brackets and quotes inside strings',
      '{"a":"}{][\\"","data":["]","\\\\",{"k":"\\"}"}],"b":"{"}',
      '["]","\\\\",{"k":"\\"}"}]',
    ],
    ['deep nesting', '{"data":[[[{"a":[{"b":{}}]}]]],"z":0}', '[[[{"a":[{"b":{}}]}]]]'],
    ['a data member after nested ones', '{"x":{"data":1},"y":[{"data":2}],"data":33}', '33'],
    ['leading and trailing whitespace around the body', ' \r\n\t{ "data" : "x" } \n', '"x"'],
  ])('measures %s', (_, body, data) => {
    expect(JSON.parse(body).data).toEqual(JSON.parse(data));
    expect(dataBytes(bytes(body))).toBe(size(data));
  });

  it.each([
    ['an empty object', '{}'],
    ['an empty object with whitespace', '{ \n }'],
    ['no data member', '{"event":"x","rooms":["a"]}'],
    ['data only in nested objects', '{"x":{"data":12345},"y":[{"data":1}],"z":"\\"data\\":1"}'],
    ['keys that only look like data', '{"Data":1,"data ":2,"dat":3,"\\u0064at":4,"datas":5}'],
  ])('answers 0 for %s', (_, body) => {
    expect(dataBytes(bytes(body))).toBe(0);
  });

  it('reads a buffer that starts inside a larger one', () => {
    const body = '{"\\u0064ata" : [ "é" ] }';
    const backing = bytes(`garbage "{[${body}`);
    const view = backing.subarray(backing.length - size(body));
    expect(view.byteOffset).toBeGreaterThan(0);
    expect(dataBytes(view)).toBe(size('[ "é" ]'));
    expect(dataBytes(new Uint8Array(view.buffer, view.byteOffset, view.byteLength))).toBe(size('[ "é" ]'));
  });

  it('measures data over a megabyte, whitespace included', () => {
    const data = `{ "text" : ${JSON.stringify('é😀"}'.repeat(120_000))} ,\n  "pad": "${' '.repeat(300_000)}" }`;
    const body = `{"rooms":["a"],"event":"big", "data" :${data} }`;
    expect(size(data)).toBeGreaterThan(1_048_576);
    expect(dataBytes(bytes(body))).toBe(size(data));
  });
});

describe('batchDataBytes', () => {
  it.each([
    ['one size per event, 0 without data', '{"events":[{"data":1},{"event":"x"},{"data":"ab"}]}', [1, 0, 4]],
    ['0 for events that are not objects', '{"events":[1,"x",[{"data":1}],null,{"data":[ ]}]}', [0, 0, 0, 0, 3]],
    ['whitespace everywhere', '{ "events" : [ { "data" : { } } ,\n { "x":1 , "data" : "é" } ] }', [3, 4]],
    ['the last data of each event', '{"events":[{"data":1,"data":"last"},{"\\u0064ata":2,"data":[]}]}', [6, 2]],
    ['the last events member', '{"events":[{"data":12345}],"events":[{"data":1},{"data":22}]}', [1, 2]],
    ['an events key written with escapes', '{"\\u0065vents":[{"data":"x"}]}', [3]],
    ['nested events and data left alone', '{"x":{"events":[{"data":1}]},"events":[{"e":{"data":123},"data":4}]}', [1]],
    ['brackets inside strings', '{"events":[{"a":"]}","data":"[{"},{"data":"\\"]"}]}', [4, 5]],
    ['an empty list', '{"events":[]}', []],
    ['no events member', '{"data":1}', []],
  ])('gives %s', (_, body, expected) => {
    expect(batchDataBytes(bytes(body))).toEqual(expected);
  });

  it('gives nothing when the last events member is not a list', () => {
    expect(JSON.parse('{"events":[{"data":1}],"events":5}').events).toBe(5);
    expect(batchDataBytes(bytes('{"events":[{"data":1}],"events":5}'))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The reference: bodies written here token by token, with random whitespace and escapes, while
// remembering the exact text written for each `data` member. Last member wins, as in JSON.parse.
// ---------------------------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Random = () => number;

/** mulberry32: a small seeded generator, so one fast-check seed is one layout. */
function seeded(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(random: Random, options: readonly T[]): T {
  return options[Math.floor(random() * options.length)] as T;
}

const SPACES = ['', '', '', ' ', '  ', '\n', '\t', '\r\n', ' \n\t  '];
const space = (random: Random): string => pick(random, SPACES);

function unicodeEscape(random: Random, code: number): string {
  const hex = code.toString(16).padStart(4, '0');
  return `\\u${random() < 0.5 ? hex : hex.toUpperCase()}`;
}

const SHORT_ESCAPES: Record<number, string> = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' };

/** A JSON string literal for `text`, each character raw or escaped at random (always valid JSON). */
function stringText(random: Random, text: string, escapeRate: number): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += random() < escapeRate ? unicodeEscape(random, code) + unicodeEscape(random, next) : text.slice(i, i + 2);
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += unicodeEscape(random, code); // a lone surrogate has no UTF-8 form
    } else if (code === 0x22) {
      out += random() < 0.5 ? '\\"' : unicodeEscape(random, code);
    } else if (code === 0x5c) {
      out += random() < 0.5 ? '\\\\' : unicodeEscape(random, code);
    } else if (code < 0x20) {
      out += SHORT_ESCAPES[code] !== undefined && random() < 0.5 ? SHORT_ESCAPES[code] : unicodeEscape(random, code);
    } else if (code === 0x2f) {
      out += pick(random, ['/', '\\/', unicodeEscape(random, code)]);
    } else {
      out += random() < escapeRate ? unicodeEscape(random, code) : text[i];
    }
  }
  return `${out}"`;
}

function numberText(random: Random, value: number): string {
  const text = JSON.stringify(value);
  const roll = random();
  if (/^-?\d+$/.test(text) && roll < 0.2) return `${text}.0`;
  if (!/[eE]/.test(text) && roll < 0.4) return `${text}${pick(random, ['e0', 'E+0', 'e-0', 'E00'])}`;
  return text;
}

function objectText(random: Random, members: ReadonlyArray<readonly [keyText: string, valueText: string]>): string {
  if (members.length === 0) return `{${space(random)}}`;
  const parts = members.map(([key, value]) => `${key}${space(random)}:${space(random)}${value}`);
  return `{${space(random)}${parts.join(`${space(random)},${space(random)}`)}${space(random)}}`;
}

function arrayText(random: Random, items: readonly string[]): string {
  if (items.length === 0) return `[${space(random)}]`;
  return `[${space(random)}${items.join(`${space(random)},${space(random)}`)}${space(random)}]`;
}

function valueText(random: Random, value: Json): string {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') return numberText(random, value);
  if (typeof value === 'string') return stringText(random, value, 0.1);
  if (Array.isArray(value))
    return arrayText(
      random,
      value.map((item) => valueText(random, item)),
    );
  const members: Array<[string, string]> = [];
  for (const [key, item] of Object.entries(value)) {
    // Now and then a decoy member with the same key first: the later one wins.
    if (random() < 0.1) members.push([stringText(random, key, 0.3), valueText(random, 'decoy')]);
    members.push([stringText(random, key, 0.3), valueText(random, item)]);
  }
  return objectText(random, members);
}

/**
 * An object written member by member; `dataText` is the text written for its last `data` member,
 * `data` that text's size in bytes (0 without one).
 */
function writeObject(
  random: Random,
  members: ReadonlyArray<readonly [string, Json]>,
): { text: string; data: number; dataText?: string } {
  let dataText: string | undefined;
  const written = members.map(([key, value]) => {
    const text = valueText(random, value);
    if (key === 'data') dataText = text;
    return [stringText(random, key, 0.3), text] as const;
  });
  return { text: objectText(random, written), data: dataText === undefined ? 0 : size(dataText), dataText };
}

const TRICKY_UNITS = [
  '{',
  '}',
  '[',
  ']',
  '"',
  '\\',
  ',',
  ':',
  ' ',
  '\n',
  '/',
  'a',
  'é',
  '😀',
  '\u2028',
  '\u0000',
  '\ud800',
  '\udc00',
];
const unit = fc.oneof(fc.constantFrom(...TRICKY_UNITS), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }));
const json = fc.jsonValue({ maxDepth: 3, stringUnit: unit }) as fc.Arbitrary<Json>;
const value = fc.oneof(
  { weight: 4, arbitrary: json },
  { weight: 1, arbitrary: fc.record({ data: json, x: json }) as fc.Arbitrary<Json> },
  { weight: 1, arbitrary: fc.array(fc.record({ data: json }), { maxLength: 3 }) as fc.Arbitrary<Json> },
);
const key = fc.oneof(
  { weight: 3, arbitrary: fc.constant('data') },
  { weight: 2, arbitrary: fc.constantFrom('events', 'Data', 'dat', 'data ', 'datа', 'd"ata', 'data\u0000', '') },
  { weight: 2, arbitrary: fc.string({ unit, maxLength: 6 }) },
);
const members = fc.array(fc.tuple(key, value), { maxLength: 6 });
const seed = fc.integer();
const notObject = json.filter((v) => v === null || typeof v !== 'object' || Array.isArray(v));
const notList = json.filter((v) => v === null || typeof v !== 'object');

/** Checks the reference itself: the text it recorded is the `data` JSON.parse sees. */
function expectReferenceAgrees(body: string, dataText: string | undefined): void {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  expect(Object.hasOwn(parsed, 'data')).toBe(dataText !== undefined);
  if (dataText !== undefined) expect(JSON.stringify(JSON.parse(dataText))).toBe(JSON.stringify(parsed.data));
}

describe('dataBytes against the reference', () => {
  it('measures the last top-level data member exactly as written', () => {
    fc.assert(
      fc.property(members, seed, (generated, s) => {
        const random = seeded(s);
        const { text, data, dataText } = writeObject(random, generated);
        const body = `${space(random)}${text}${space(random)}`;
        expectReferenceAgrees(body, dataText);
        expect(dataBytes(bytes(body))).toBe(data);
      }),
      { numRuns: 1000 },
    );
  });

  it('measures data values of every kind, with random whitespace and escapes', () => {
    fc.assert(
      fc.property(value, members, seed, (data, others, s) => {
        const random = seeded(s);
        const { text, data: expected, dataText } = writeObject(random, [...others, ['data', data]]);
        expectReferenceAgrees(text, dataText);
        expect(JSON.stringify((JSON.parse(text) as { data: unknown }).data)).toBe(JSON.stringify(data));
        expect(dataBytes(bytes(text))).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('batchDataBytes against the reference', () => {
  const event = fc.oneof(
    { weight: 4, arbitrary: members.map((m) => ({ members: m })) },
    { weight: 1, arbitrary: notObject.map((v) => ({ value: v })) },
  );
  const eventsMember = fc.oneof(
    { weight: 5, arbitrary: fc.array(event, { maxLength: 6 }).map((events) => ({ events })) },
    { weight: 1, arbitrary: notList.map((v) => ({ value: v })) },
  );
  const bodyMember = fc.oneof(
    { weight: 3, arbitrary: eventsMember.map((m) => ['events', m] as const) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          key.filter((k) => k !== 'events'),
          value,
        )
        .map(([k, v]) => [k, { value: v }] as const),
    },
  );

  it('measures the data of each event of the last events member', () => {
    fc.assert(
      fc.property(fc.array(bodyMember, { maxLength: 4 }), seed, (generated, s) => {
        const random = seeded(s);
        let expected: number[] = [];
        const written = generated.map(([name, member]) => {
          let text: string;
          let sizes: number[] | undefined;
          if ('events' in member) {
            sizes = [];
            const items: string[] = [];
            for (const item of member.events) {
              if ('members' in item) {
                const object = writeObject(random, item.members);
                items.push(object.text);
                sizes.push(object.data);
              } else {
                items.push(valueText(random, item.value));
                sizes.push(0);
              }
            }
            text = arrayText(random, items);
          } else {
            text = valueText(random, member.value);
          }
          if (name === 'events') expected = sizes ?? [];
          return [stringText(random, name, 0.3), text] as const;
        });
        const body = `${space(random)}${objectText(random, written)}${space(random)}`;
        const parsed = JSON.parse(body) as { events?: unknown };
        expect(Array.isArray(parsed.events) ? parsed.events.length : 0).toBe(expected.length);
        expect(batchDataBytes(bytes(body))).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });
});
