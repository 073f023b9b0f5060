import type { LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDeliverer, type Deliverer, type Lookup, MAX_ANSWER_BYTES } from './deliver.js';

/*
 * Traffic from these tests goes to 127.0.0.1 only. A guard around net.connect and tls.connect
 * records every address a socket is about to connect to (the IP host, or what the lookup handed to
 * node:net after the deliverer's own check) and fails the connection before it starts when the
 * address is not loopback. The stub resolver never falls back to the system DNS.
 */
const LOOPBACK = new Set(['127.0.0.1', '::1']);
/** Addresses a socket was about to connect to, in order. */
const reached: string[] = [];
/** Addresses the guard stopped; only the DNS-rebinding test expects any. */
const blocked: string[] = [];

type ConnectOptions = { host?: string; lookup?: net.LookupFunction };

function guard<T extends object>(options: T): T {
  const { host, lookup } = options as ConnectOptions;
  if (host !== undefined && net.isIP(host) !== 0) {
    reached.push(host);
    if (!LOOPBACK.has(host)) {
      blocked.push(host);
      throw new Error(`test guard: refused to connect to ${host}`);
    }
    return options;
  }
  if (lookup === undefined) throw new Error(`test guard: ${String(host)} would be resolved by the system DNS`);
  const guardedLookup: net.LookupFunction = (hostname, lookupOptions, callback) => {
    lookup(hostname, lookupOptions, (error, address, family) => {
      if (error) return callback(error, address, family);
      const list = typeof address === 'string' ? [address] : address.map((a) => a.address);
      reached.push(...list);
      const outside = list.filter((a) => !LOOPBACK.has(a));
      if (outside.length === 0) return callback(null, address, family);
      blocked.push(...outside);
      callback(new Error(`test guard: refused to connect to ${outside.join(', ')}`), address, family);
    });
  };
  return { ...options, lookup: guardedLookup };
}

beforeAll(() => {
  const netConnect = net.connect;
  const tlsConnect = tls.connect;
  vi.spyOn(net, 'connect').mockImplementation(((options: net.NetConnectOpts, ...rest: never[]) =>
    netConnect(guard(options), ...rest)) as typeof net.connect);
  vi.spyOn(tls, 'connect').mockImplementation(((options: tls.ConnectionOptions, ...rest: never[]) =>
    tlsConnect(guard(options), ...rest)) as typeof tls.connect);
});

afterAll(() => {
  vi.restoreAllMocks();
});

afterEach(() => {
  const stopped = blocked.splice(0);
  reached.length = 0;
  expect(stopped, 'connections the test guard had to stop').toEqual([]);
});

/** A stub DNS: names map to fixed answers; anything else is ENOTFOUND. Records what was asked. */
function stubDns(answers: Record<string, string[]>) {
  const asked: { hostname: string; all: boolean }[] = [];
  const lookup: Lookup = (hostname, options, callback) => {
    asked.push({ hostname, all: options.all });
    const found = answers[hostname];
    setImmediate(() => {
      if (found === undefined) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
        return;
      }
      callback(
        null,
        found.map((address): LookupAddress => ({ address, family: net.isIP(address) })),
      );
    });
  };
  return { lookup, asked };
}

interface Received {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

interface Receiver {
  port: number;
  url: string;
  requests: Received[];
  /** TCP connections accepted, whether or not a request came. */
  connections: number;
  close(): Promise<void>;
}

const open: Receiver[] = [];

/** A webhook receiver on 127.0.0.1 and a free port: records each request, then lets `answer` reply. */
async function receiver(answer: (res: ServerResponse, req: IncomingMessage) => void): Promise<Receiver> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      got.requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      answer(res, req);
    });
  });
  server.on('connection', () => {
    got.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const got: Receiver = {
    port,
    url: `http://127.0.0.1:${port}`,
    requests: [],
    connections: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  open.push(got);
  return got;
}

const deliverers: Deliverer[] = [];
function deliverer(options: Parameters<typeof createDeliverer>[0]): Deliverer {
  const made = createDeliverer(options);
  deliverers.push(made);
  return made;
}

afterEach(async () => {
  await Promise.all(deliverers.splice(0).map((d) => d.close()));
  await Promise.all(open.splice(0).map((r) => r.close()));
});

const BODY = '{"events":[{"id":"e1","at":1700000000000,"type":"webhook.test","note":"é ✓ 😀"}]}';
const HEADERS = {
  'X-Service-Site': 'site-key',
  'X-Service-Timestamp': '1700000000',
  'X-Service-Signature': 'ab'.repeat(32),
  'X-Service-Batch': 'b1',
};

describe('deliver to a local receiver (allowPrivate)', () => {
  it('answers 204 as { status: 204 }', async () => {
    const hooks = await receiver((res) => res.writeHead(204).end());
    const result = await deliverer({ allowPrivate: true }).deliver(`${hooks.url}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 204 });
    expect(hooks.requests).toHaveLength(1);
    expect(reached).toEqual(['127.0.0.1']);
  });

  it('answers 500 as { status: 500 }, the body read and dropped', async () => {
    const hooks = await receiver((res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('oops'));
    expect(await deliverer({ allowPrivate: true }).deliver(`${hooks.url}/in`, BODY, HEADERS)).toEqual({ status: 500 });
  });

  it('sends the body byte for byte, the headers, JSON content type and the path with its query', async () => {
    const hooks = await receiver((res) => res.writeHead(204).end());
    const send = deliverer({ allowPrivate: true });
    const url = `${hooks.url}/hooks/in?site=a&x=%20y`;
    // A caller's own content type does not survive: webhook bodies are JSON.
    const headers = { ...HEADERS, 'Content-Type': 'text/plain' };
    expect(await send.deliver(url, BODY, headers)).toEqual({ status: 204 });
    expect(await send.deliver(url, BODY, headers)).toEqual({ status: 204 });

    expect(hooks.requests).toHaveLength(2);
    for (const request of hooks.requests) {
      expect(request.method).toBe('POST');
      expect(request.url).toBe('/hooks/in?site=a&x=%20y');
      expect(request.body.equals(Buffer.from(BODY, 'utf8'))).toBe(true);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['content-length']).toBe(String(Buffer.byteLength(BODY)));
      expect(request.headers['x-service-site']).toBe('site-key');
      expect(request.headers['x-service-timestamp']).toBe('1700000000');
      expect(request.headers['x-service-signature']).toBe('ab'.repeat(32));
      expect(request.headers['x-service-batch']).toBe('b1');
    }
    // Each try has its own connection, so each try goes through the address check.
    expect(hooks.connections).toBe(2);
  });

  it.each([301, 302, 303, 307, 308])('does not follow a %i redirect, even to another local server', async (status) => {
    const target = await receiver((res) => res.writeHead(204).end());
    const hooks = await receiver((res) => res.writeHead(status, { location: `${target.url}/stolen` }).end());
    expect(await deliverer({ allowPrivate: true }).deliver(`${hooks.url}/in`, BODY, HEADERS)).toEqual({ status });
    expect(hooks.requests).toHaveLength(1);
    expect(target.connections).toBe(0);
  });

  it('does not follow a redirect to the cloud metadata address', async () => {
    const hooks = await receiver((res) =>
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    );
    expect(await deliverer({ allowPrivate: true }).deliver(`${hooks.url}/in`, BODY, HEADERS)).toEqual({ status: 302 });
    expect(reached).toEqual(['127.0.0.1']);
  });

  it('gives up on a receiver that never answers: timeout', async () => {
    const hooks = await receiver(() => {
      // Holds the request open; close() ends it.
    });
    const result = await deliverer({ allowPrivate: true, timeoutMs: 300 }).deliver(`${hooks.url}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 0, error: 'timeout' });
    expect(hooks.requests).toHaveLength(1);
  });

  it('counts an answer whose body never ends as a timeout', async () => {
    const hooks = await receiver((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"ok":');
    });
    const result = await deliverer({ allowPrivate: true, timeoutMs: 300 }).deliver(`${hooks.url}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 0, error: 'timeout' });
  });

  it('stops reading an endless answer body and keeps the status', async () => {
    let written = 0;
    let dropped!: () => void;
    const droppedByClient = new Promise<void>((resolve) => {
      dropped = resolve;
    });
    const hooks = await receiver((res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 0x78);
      const pump = () => {
        while (!res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      res.on('close', dropped);
      pump();
    });
    // With a generous limit: had the whole body been read, this would end as a timeout instead.
    const result = await deliverer({ allowPrivate: true, timeoutMs: 5_000 }).deliver(`${hooks.url}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 200 });
    await droppedByClient;
    expect(written).toBeGreaterThan(MAX_ANSWER_BYTES);
  });

  it('reports a closed port as unreachable', async () => {
    const gone = await receiver((res) => res.end());
    await gone.close();
    const result = await deliverer({ allowPrivate: true }).deliver(`${gone.url}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 0, error: 'unreachable' });
  });

  it('reports a connection reset before the answer as unreachable', async () => {
    const hooks = await receiver((_res, req) => req.socket.destroy());
    const result = await deliverer({ allowPrivate: true }).deliver(`${hooks.url}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 0, error: 'unreachable' });
    expect(hooks.requests).toHaveLength(1);
  });

  it('reports a failed TLS handshake as unreachable', async () => {
    // A plain-HTTP server on the other end: the TLS hello gets no TLS answer.
    const hooks = await receiver((res) => res.writeHead(204).end());
    const result = await deliverer({ allowPrivate: true }).deliver(`https://127.0.0.1:${hooks.port}/in`, BODY, HEADERS);
    expect(result).toEqual({ status: 0, error: 'unreachable' });
    expect(hooks.requests).toHaveLength(0);
  });

  it('resolves host names with the given lookup, asking for every address', async () => {
    const hooks = await receiver((res) => res.writeHead(204).end());
    const dns = stubDns({ 'receiver.test': ['127.0.0.1'] });
    const send = deliverer({ allowPrivate: true, lookup: dns.lookup });
    expect(await send.deliver(`http://receiver.test:${hooks.port}/in`, BODY, HEADERS)).toEqual({ status: 204 });
    expect(dns.asked).toEqual([{ hostname: 'receiver.test', all: true }]);
    expect(hooks.requests[0]?.headers.host).toBe(`receiver.test:${hooks.port}`);
  });

  it('answers node:net in the shape it asked for when it wants one address', async () => {
    const hooks = await receiver((res) => res.writeHead(204).end());
    const dns = stubDns({ 'receiver.test': ['127.0.0.1'] });
    const before = net.getDefaultAutoSelectFamily();
    net.setDefaultAutoSelectFamily(false);
    try {
      const send = deliverer({ allowPrivate: true, lookup: dns.lookup });
      expect(await send.deliver(`http://receiver.test:${hooks.port}/in`, BODY, HEADERS)).toEqual({ status: 204 });
    } finally {
      net.setDefaultAutoSelectFamily(before);
    }
    expect(dns.asked).toEqual([{ hostname: 'receiver.test', all: true }]);
  });

  it('reports a name that does not resolve, or resolves to nothing, as unreachable', async () => {
    const dns = stubDns({ 'empty.test': [] });
    const send = deliverer({ allowPrivate: true, lookup: dns.lookup });
    expect(await send.deliver('http://missing.test/in', BODY, HEADERS)).toEqual({ status: 0, error: 'unreachable' });
    expect(await send.deliver('http://empty.test/in', BODY, HEADERS)).toEqual({ status: 0, error: 'unreachable' });
    expect(dns.asked.map((a) => a.hostname)).toEqual(['missing.test', 'empty.test']);
    expect(reached).toEqual([]);
  });

  it('never throws: a bad URL, a bad header, a closed deliverer', async () => {
    const hooks = await receiver((res) => res.writeHead(204).end());
    const send = deliverer({ allowPrivate: true });
    expect(await send.deliver('not a url', BODY, HEADERS)).toEqual({ status: 0, error: 'not_public' });
    const badHeader = await send.deliver(`${hooks.url}/in`, BODY, { ...HEADERS, 'X-Bad': 'a\r\nb' });
    expect(badHeader).toEqual({ status: 0, error: 'unreachable' });
    await send.close();
    await send.close();
    expect(await send.deliver(`${hooks.url}/in`, BODY, HEADERS)).toEqual({ status: 0, error: 'unreachable' });
    expect(hooks.requests).toHaveLength(0);
  });

  it('refuses a bad time limit at creation', () => {
    expect(() => createDeliverer({ allowPrivate: true, timeoutMs: 0 })).toThrow(TypeError);
    expect(() => createDeliverer({ allowPrivate: true, timeoutMs: 1.5 })).toThrow(TypeError);
  });
});

describe('deliver refuses non-public addresses (allowPrivate false)', () => {
  /*
   * Every answer of this resolver that is not loopback is one the classifier refuses, except in the
   * mixed answers, where the private address alongside gets the whole answer refused.
   */
  const dns = stubDns({
    localhost: ['127.0.0.1', '::1'],
    'localhost.': ['127.0.0.1'],
    'hooks.example.com': ['10.0.0.7'],
    'metadata.example.com': ['169.254.169.254'],
    'mixed.example.com': ['8.8.8.8', '10.0.0.1'],
    'mixed-private-first.example.com': ['192.168.1.10', '1.1.1.1'],
    'v6.example.com': ['2606:4700::1111', 'fd00::1'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
    'zero.example.com': ['0.0.0.0'],
    'cgnat.example.com': ['100.64.0.1'],
  });
  let sentinel: Receiver;
  let send: Deliverer;

  beforeAll(async () => {
    // A live server behind every loopback URL below: it must never see a connection.
    sentinel = await receiver((res) => res.writeHead(204).end());
    open.splice(open.indexOf(sentinel), 1);
    send = createDeliverer({ allowPrivate: false, lookup: dns.lookup });
  });

  afterAll(async () => {
    await send.close();
    await sentinel.close();
  });

  const URLS: string[] = [
    // Loopback, in every spelling
    'https://127.0.0.1:PORT/',
    'https://127.1:PORT/',
    'https://2130706433:PORT/',
    'https://0x7f000001:PORT/',
    'https://0177.0.0.1:PORT/',
    'https://0x7f.1:PORT/',
    'https://127.255.255.254:PORT/',
    'https://[::1]:PORT/',
    'https://[::ffff:127.0.0.1]:PORT/',
    'https://[::ffff:7f00:1]:PORT/',
    'https://[::127.0.0.1]:PORT/',
    'https://[64:ff9b::7f00:1]:PORT/',
    'https://[2002:7f00:1::]:PORT/',
    'https://localhost:PORT/',
    'https://localhost.:PORT/',
    'https://mapped.example.com:PORT/',
    // Unspecified
    'https://0.0.0.0:PORT/',
    'https://0:PORT/',
    'https://[::]:PORT/',
    'https://zero.example.com/',
    // Private networks, link-local, metadata, CGNAT
    'https://10.0.0.1/',
    'https://172.16.0.1/',
    'https://192.168.1.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://100.64.0.1/',
    'https://[fe80::1]/',
    'https://[fd00::1]/',
    'https://[fc00::1]/',
    'https://[fec0::1]/',
    'https://[::ffff:10.0.0.1]/',
    'https://[::ffff:169.254.169.254]/',
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://[64:ff9b:1::808:808]/',
    'https://[2001::1]/',
    'https://224.0.0.1/',
    'https://255.255.255.255/',
    'https://192.0.2.1/',
    // Names that resolve (by the stub) to non-public addresses, all or some
    'https://hooks.example.com/',
    'https://metadata.example.com/latest/meta-data/',
    'https://cgnat.example.com/',
    'https://nat64.example.com/',
    'https://mixed.example.com/',
    'https://mixed-private-first.example.com/',
    'https://v6.example.com/',
    // Not https, or with credentials
    'http://127.0.0.1:PORT/',
    'http://hooks.example.com/',
    'http://8.8.8.8/',
    'ftp://127.0.0.1:PORT/',
    'https://user:secret@8.8.8.8/',
  ];

  it('has a table of at least 30 addresses', () => {
    expect(URLS.length).toBeGreaterThanOrEqual(30);
  });

  it.each(URLS)('refuses %s before any connection', async (template) => {
    // PORT is the sentinel's, so a loopback connection that got through would be seen there.
    const url = template.replace('PORT', String(sentinel.port));
    const connectionsBefore = sentinel.connections;
    expect(await send.deliver(url, BODY, HEADERS), url).toEqual({ status: 0, error: 'not_public' });
    expect(reached, url).toEqual([]);
    expect(sentinel.connections - connectionsBefore, url).toBe(0);
  });

  it('left the sentinel on 127.0.0.1 without a single connection', () => {
    expect(sentinel.connections).toBe(0);
  });

  it('asked the resolver for names only, never for a scheme it refuses', () => {
    const names = new Set(dns.asked.map((a) => a.hostname));
    expect(names.has('localhost')).toBe(true);
    expect(names.has('mixed.example.com')).toBe(true);
    // http://hooks.example.com/ was refused for its scheme; https://hooks.example.com/ asked once.
    expect(dns.asked.filter((a) => a.hostname === 'hooks.example.com')).toHaveLength(1);
  });
});

describe('DNS rebinding', () => {
  it('checks the answer of every try: public once, loopback next is refused', async () => {
    const hooks = await receiver((res) => res.writeHead(204).end());
    const answers = ['8.8.8.8', '127.0.0.1'];
    const asked: string[] = [];
    const lookup: Lookup = (hostname, _options, callback) => {
      asked.push(hostname);
      const address = answers[asked.length - 1] ?? '127.0.0.1';
      setImmediate(() => callback(null, [{ address, family: 4 }]));
    };
    const send = deliverer({ allowPrivate: false, lookup });

    // First try: 8.8.8.8 passes the check and reaches the socket; the test guard stops it there.
    const first = await send.deliver(`https://rebind.example.com:${hooks.port}/in`, BODY, HEADERS);
    expect(first).toEqual({ status: 0, error: 'unreachable' });
    expect(reached).toEqual(['8.8.8.8']);
    expect(blocked).toEqual(['8.8.8.8']);
    blocked.length = 0;
    reached.length = 0;

    // Second try: the same name now says 127.0.0.1; the check at connect time refuses it.
    const second = await send.deliver(`https://rebind.example.com:${hooks.port}/in`, BODY, HEADERS);
    expect(second).toEqual({ status: 0, error: 'not_public' });
    expect(asked).toEqual(['rebind.example.com', 'rebind.example.com']);
    expect(reached).toEqual([]);
    expect(hooks.connections).toBe(0);
  });
});
