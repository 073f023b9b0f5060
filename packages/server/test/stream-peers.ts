/**
 * A WebRTC peer in the test process (werift) standing in for a browser on a live stream: it offers
 * send-only audio and video as a presenter, or answers the forwarding unit's offer as a viewer. Its
 * ICE uses 127.0.0.1 only. Media connecting is what the service acts on; no packets need to flow.
 */
import { RTCPeerConnection, RtpHeader, RtpPacket } from 'werift';
import { iceConfig } from '../src/units/ice-settings.js';
import { mediaConfig } from '../src/units/peer-sessions.js';

export class StreamPeer {
  readonly pc = new RTCPeerConnection({
    ...iceConfig({ hostAddresses: ['127.0.0.1'], allowRemoteAddress: (a) => a === '127.0.0.1' }),
    ...mediaConfig(),
  });
  readonly connected: Promise<void>;

  /** Its ICE and DTLS states as they came, for the message when the media does not connect. */
  readonly #states: string[] = [];

  constructor() {
    this.pc.iceConnectionStateChange.subscribe((state) => this.#states.push(`ice ${state}`));
    this.connected = new Promise((resolve, reject) => {
      this.pc.connectionStateChange.subscribe((state) => {
        if (state === 'connecting') this.#watchDtls();
        if (state === 'connected') resolve();
        if (state === 'failed') {
          reject(
            new Error(`the media did not connect (${this.#states.join(', ')}, at ${Math.round(performance.now())} ms)`),
          );
        }
      });
    });
    this.connected.catch(() => undefined);
  }

  #watchDtls(): void {
    for (const dtls of this.pc.dtlsTransports) {
      dtls.onStateChange.subscribe((state) => this.#states.push(`dtls ${state} (${Math.round(performance.now())} ms)`));
    }
  }

  /** A presenter's offer: send-only audio and video. */
  async offer(): Promise<string> {
    this.pc.addTransceiver('audio', { direction: 'sendonly' });
    this.pc.addTransceiver('video', { direction: 'sendonly' });
    await this.pc.setLocalDescription(await this.pc.createOffer());
    return this.#local();
  }

  async accept(answerSdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answerSdp });
  }

  /** A viewer's answer to the unit's offer. */
  async answer(offerSdp: string): Promise<string> {
    await this.pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
    await this.pc.setLocalDescription(await this.pc.createAnswer());
    return this.#local();
  }

  close(): Promise<void> {
    return this.pc.close();
  }

  #local(): string {
    const sdp = this.pc.localDescription?.sdp;
    if (!sdp) throw new Error('no local description');
    return sdp;
  }
}

/**
 * A StreamPeer whose media flows: once sending (`send()`), it writes a small RTP packet on each of
 * its send-only tracks every 20 ms; it counts the RTP packets it receives per kind.
 */
export class MediaPeer extends StreamPeer {
  readonly received = { audio: 0, video: 0 };
  #timer: NodeJS.Timeout | undefined;

  constructor() {
    super();
    this.pc.ontrack = ({ track }) => {
      const kind = track.kind === 'audio' ? 'audio' : 'video';
      track.onReceiveRtp.subscribe(() => this.received[kind]++);
    };
  }

  /** Starts sending on the peer's send-only transceivers (after its offer was answered). */
  send(): void {
    if (this.#timer) return;
    // Payloads a decoder would not take, but the unit forwards packets without looking inside.
    const payloads = { audio: Buffer.from([0xfc, 0xff, 0xfe]), video: Buffer.from([0x10, 0x00, 0x9d, 0x01, 0x2a]) };
    let sequenceNumber = 0;
    this.#timer = setInterval(() => {
      sequenceNumber = (sequenceNumber + 1) & 0xffff;
      for (const transceiver of this.pc.getTransceivers()) {
        if (transceiver.direction !== 'sendonly') continue;
        const kind = transceiver.kind === 'audio' ? 'audio' : 'video';
        const header = new RtpHeader({ sequenceNumber, timestamp: sequenceNumber * 960, marker: true });
        transceiver.sender.sendRtp(new RtpPacket(header, payloads[kind])).catch(() => undefined);
      }
    }, 20);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  override close(): Promise<void> {
    this.stop();
    return super.close();
  }
}
