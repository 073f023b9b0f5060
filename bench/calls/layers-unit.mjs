// The forwarding unit of bench:calls' layers part in a process of its own (as ./unit.mjs, so
// process.cpuUsage() here is the unit's CPU alone), but on the addresses it is told at `init`: the
// shaped links' address, which pages in network namespaces reach through their links and pages
// outside reach over loopback. One unit, one presenter, viewers by id. Driven over IPC (./rpc.mjs).
import { performance } from 'node:perf_hooks';
import { RTCRtpSender } from 'werift';
import { ForwardingUnit } from '../../packages/server/dist/units/forwarding-unit.js';

// Packets and bytes sent to viewers, counted where werift sends RTP once DTLS is up (as ./unit.mjs).
const sent = { packets: 0, bytes: 0 };
const sendRtp = RTCRtpSender.prototype.sendRtp;
RTCRtpSender.prototype.sendRtp = function (rtp) {
  if (this.dtlsTransport?.state === 'connected' && this.codec) {
    sent.packets++;
    sent.bytes += rtp.payload.length;
  }
  return sendRtp.call(this, rtp);
};

let unit;
const sessions = new Map();
const session = (id) => {
  const found = sessions.get(id);
  if (!found) throw new Error(`no session ${id}`);
  return found;
};

const ops = {
  /** `hosts`: the unit's own addresses; `remotes`: the only addresses pages may use. */
  init: (hosts, remotes) => {
    const allowed = new Set(remotes);
    unit = new ForwardingUnit({ hostAddresses: hosts, allowRemoteAddress: (address) => allowed.has(address) });
    return null;
  },
  presenter: (id) => sessions.set(id, unit.createPresenter(id)) && null,
  viewer: (id) => sessions.set(id, unit.createViewer(id)) && null,
  answer: (id, sdp) => session(id).answer(sdp),
  offer: (id) => session(id).offer(),
  accept: (id, sdp) => session(id).accept(sdp),
  candidate: (id, candidate) => session(id).addCandidate(candidate),
  /** Each viewer's layers (forwarded, chosen; 0 = q, 1 = h, 2 = f) and link estimate (bit/s). */
  layers: () => Object.fromEntries(unit.videoLayers()),
  /** CPU µs (user + system) and wall ms so far, and what was sent to viewers. */
  sample: () => {
    const { user, system } = process.cpuUsage();
    return { cpu: user + system, wall: performance.now(), ...sent };
  },
  close: async () => {
    await unit?.close();
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
