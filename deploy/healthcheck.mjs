// The image's HEALTHCHECK: exit 0 when this container's node answers /service/realtime/health.
// Liveness only: a draining node is still healthy (load balancers read /service/realtime/ready).
const port = process.env.REALTIME_PORT || '4000';
const host = process.env.HEALTHCHECK_HOST || '127.0.0.1';
try {
  const answer = await fetch(`http://${host}:${port}/service/realtime/health`, { signal: AbortSignal.timeout(2500) });
  process.exit(answer.ok ? 0 : 1);
} catch {
  process.exit(1);
}
