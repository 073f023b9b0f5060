// The baseline of bench:api: a bare node:http server that only checks an HMAC-SHA256 of the body
// and answers {"ok":true}. Port 0; prints its port on stdout.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const key = Buffer.from(process.env.BARE_KEY ?? 'bench-key');
const answer = '{"ok":true}';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const expected = createHmac('sha256', key).update(body).digest();
    const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''), 'hex');
    const ok = given.length === expected.length && timingSafeEqual(given, expected);
    res.writeHead(ok ? 200 : 401, { 'Content-Type': 'application/json', 'Content-Length': answer.length });
    res.end(answer);
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
