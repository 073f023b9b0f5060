import { readdirSync, readFileSync } from 'node:fs';
import { DELIVERY_ERRORS, ERRORS, FEATURES } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';

const docs = (name: string) => readFileSync(new URL(`../docs/${name}`, import.meta.url), 'utf8');

/** Table rows of the shape `| `code` | 400 | ... |`: a backticked code, then a three-digit status. */
const CODE_ROW = /^\|\s*`([a-z][a-z_]*)`\s*\|\s*(\d{3})\s*\|/;

function codeRows(markdown: string): [code: string, status: number][] {
  const rows: [string, number][] = [];
  for (const line of markdown.split('\n')) {
    const match = CODE_ROW.exec(line.trim());
    if (match) rows.push([match[1] as string, Number(match[2])]);
  }
  return rows;
}

/** Words in single backticks outside fenced code blocks, plus `"error":"x"` inside them (placeholders like `<code>` skipped). */
function backticked(markdown: string): string[] {
  const tokens: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.trimStart().startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      for (const m of line.matchAll(/"error"\s*:\s*"([a-z_]+)"/g)) tokens.push(m[1] as string);
      continue;
    }
    for (const m of line.matchAll(/`([^`\n]+)`/g)) tokens.push(m[1] as string);
  }
  return tokens;
}

/**
 * Snake_case words in backticks that are not error codes: field names, states and values of the
 * contract that api.md mentions. An error code is any other snake_case word in backticks.
 */
const NOT_ERROR_CODES = new Set<string>([
  ...DELIVERY_ERRORS,
  ...FEATURES,
  'given_up',
  'next_at',
  'event_id',
  'bad_answer',
]);

describe('docs/errors.md', () => {
  const rows = codeRows(docs('errors.md'));
  const codes = Object.keys(ERRORS);

  it('has one row per code, no duplicates', () => {
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map(([code]) => code)).size).toBe(rows.length);
  });

  it('lists every code of ERRORS with its status', () => {
    const documented = new Map(rows);
    for (const code of codes) {
      expect(documented.has(code), `${code} is missing from docs/errors.md`).toBe(true);
      expect(documented.get(code), `status of ${code}`).toBe(ERRORS[code as keyof typeof ERRORS].status);
    }
  });

  it('lists no code that ERRORS lacks', () => {
    for (const [code] of rows) expect(Object.hasOwn(ERRORS, code), `${code} is not in ERRORS`).toBe(true);
  });

  it('equals ERRORS exactly as a set of (code, status)', () => {
    const fromDocs = rows.map(([code, status]) => `${code} ${status}`).sort();
    const fromCode = Object.entries(ERRORS)
      .map(([code, { status }]) => `${code} ${status}`)
      .sort();
    expect(fromDocs).toEqual(fromCode);
  });
});

describe('docs/api.md', () => {
  const api = docs('api.md');

  it('mentions only error codes that exist in ERRORS', () => {
    const unknown = new Set<string>();
    for (const token of backticked(api)) {
      const looksLikeCode = /^[a-z]+(_[a-z]+)+$/.test(token);
      if (looksLikeCode && !NOT_ERROR_CODES.has(token) && !Object.hasOwn(ERRORS, token)) unknown.add(token);
    }
    expect([...unknown]).toEqual([]);
  });

  it('gives the catalogue status in its error tables', () => {
    const rows = codeRows(api);
    expect(rows.length).toBeGreaterThan(0);
    for (const [code, status] of rows) {
      expect(Object.hasOwn(ERRORS, code), `${code} is not in ERRORS`).toBe(true);
      expect(status, `status of ${code}`).toBe(ERRORS[code as keyof typeof ERRORS].status);
    }
  });

  it('quotes only catalogue codes as "error" in its examples', () => {
    const inExamples = [...api.matchAll(/"error"\s*:\s*"([a-z_]+)"/g)].map((m) => m[1] as string);
    for (const code of inExamples) expect(Object.hasOwn(ERRORS, code), `${code} is not in ERRORS`).toBe(true);
  });

  it('mentions every code of ERRORS', () => {
    const mentioned = new Set(backticked(api));
    for (const code of Object.keys(ERRORS)) expect(mentioned.has(code), `${code} is not in docs/api.md`).toBe(true);
  });
});

describe('README.md', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const cli = readFileSync(new URL('../packages/server/src/cli.ts', import.meta.url), 'utf8');

  it('has a row for every variable the CLI reads, with its flag', () => {
    const variables = new Set(cli.match(/\bREALTIME_[A-Z_]*[A-Z]\b/g) ?? []);
    expect(variables.size).toBeGreaterThan(10);
    const rows = new Map<string, string>();
    for (const line of readme.split('\n')) {
      const row = /^\| `(REALTIME_[A-Z_]+)` \| `(--[a-z-]+)` \|/.exec(line);
      if (row) rows.set(row[1] as string, row[2] as string);
    }
    const missing = [...variables].filter((name) => !rows.has(name));
    expect(missing, 'variables without a README row').toEqual([]);
    for (const [name, flag] of rows) expect(cli, `${flag} of ${name}`).toContain(`'${flag.slice(2)}'`);
  });

  it('links every page of docs/', () => {
    const pages = readdirSync(new URL('../docs/', import.meta.url)).filter((name) => name.endsWith('.md'));
    expect(pages.length).toBeGreaterThan(5);
    const missing = pages.filter((page) => !readme.includes(`(docs/${page})`));
    expect(missing, 'docs pages README does not link').toEqual([]);
  });
});
