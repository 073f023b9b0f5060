// The forwarding unit of bench:calls in a process of its own, so process.cpuUsage() here is the
// unit's CPU alone (werift: ICE, DTLS, SRTP decrypt once, encrypt per viewer). Driven over IPC:
// { id, op, args } -> { id, result } or { id, error }.
import { performance } from 'node:perf_hooks';
import { RTCRtpSender } from 'werift';
import { ForwardingUnit } from '../../packages/server/dist/units/forwarding-unit.js';

const LOOPBACK = '127.0.0.1';

// Packets and bytes the unit sent to viewers: counted where werift sends RTP (a bench-only wrap;
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

const unit = new ForwardingUnit({ hostAddresses: [LOOPBACK], allowRemoteAddress: (a) => a === LOOPBACK });
const sessions = new Map();

const ops = {
  presenter: (id) => sessions.set(id, unit.createPresenter(id)) && null,
  viewer: (id) => sessions.set(id, unit.createViewer(id)) && null,
  answer: (id, sdp) => sessions.get(id).answer(sdp),
  offer: (id) => sessions.get(id).offer(),
  accept: (id, sdp) => sessions.get(id).accept(sdp),
  candidate: (id, candidate) => sessions.get(id).addCandidate(candidate),
  /** CPU µs (user + system) and wall ms so far, and what was sent. */
  sample: () => {
    const { user, system } = process.cpuUsage();
    return { cpu: user + system, wall: performance.now(), ...sent, viewers: unit.viewerCount, live: unit.live };
  },
  close: async () => {
    await unit.close();
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
