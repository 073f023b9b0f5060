// The forwarding units of bench:calls in a process of their own, so process.cpuUsage() here is the
// units' CPU alone (werift: ICE, DTLS, SRTP decrypt once, encrypt per viewer). Several named units
// (a live stream has one; a group call through units has one per page, as the service runs them),
// each made at its first session. Driven over IPC: { id, op, args } -> { id, result } or { id, error };
// session ops take the unit's name, then the session's id.
import { performance } from 'node:perf_hooks';
import { RTCRtpSender } from 'werift';
import { ForwardingUnit } from '../../packages/server/dist/units/forwarding-unit.js';

const LOOPBACK = '127.0.0.1';

// Packets and bytes the units sent to viewers: counted where werift sends RTP (a bench-only wrap;
// a sender whose DTLS is not up yet drops the packet, so those are not counted).
const sent = { packets: 0, bytes: 0 };
const sendRtp = RTCRtpSender.prototype.sendRtp;
RTCRtpSender.prototype.sendRtp = function (rtp) {
  if (this.dtlsTransport?.state === 'connected' && this.codec) {
    sent.packets++;
    sent.bytes += rtp.payload.length;
  }
  return sendRtp.call(this, rtp);
};

const units = new Map();
const sessions = new Map();
const unitNamed = (name) => {
  let unit = units.get(name);
  if (!unit) {
    unit = new ForwardingUnit({ hostAddresses: [LOOPBACK], allowRemoteAddress: (a) => a === LOOPBACK });
    units.set(name, unit);
  }
  return unit;
};
const key = (unit, id) => `${unit}\u0000${id}`;
const session = (unit, id) => {
  const found = sessions.get(key(unit, id));
  if (!found) throw new Error(`no session ${id} on unit ${unit}`);
  return found;
};

const ops = {
  presenter: (unit, id) => sessions.set(key(unit, id), unitNamed(unit).createPresenter(id)) && null,
  viewer: (unit, id) => sessions.set(key(unit, id), unitNamed(unit).createViewer(id)) && null,
  answer: (unit, id, sdp) => session(unit, id).answer(sdp),
  offer: (unit, id) => session(unit, id).offer(),
  accept: (unit, id, sdp) => session(unit, id).accept(sdp),
  candidate: (unit, id, candidate) => session(unit, id).addCandidate(candidate),
  /** CPU µs (user + system) and wall ms so far, what was sent, and the units' sessions (all units). */
  sample: () => {
    const { user, system } = process.cpuUsage();
    const all = [...units.values()];
    return {
      cpu: user + system,
      wall: performance.now(),
      ...sent,
      units: all.length,
      viewers: all.reduce((n, unit) => n + unit.viewerCount, 0),
      live: all.filter((unit) => unit.live).length,
    };
  },
  close: async () => {
    await Promise.all([...units.values()].map((unit) => unit.close()));
    setImmediate(() => process.exit(0));
    return null;
  },
};

process.on('message', async ({ id, op, args }) => {
  try {
    process.send({ id, result: (await ops[op](...args)) ?? null });
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
process.send({ ready: true });
