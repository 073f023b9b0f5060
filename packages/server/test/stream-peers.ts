/**
 * A WebRTC peer in the test process (werift) standing in for a browser on a live stream: it offers
 * send-only audio and video as a presenter, or answers the forwarding unit's offer as a viewer. Its
 * ICE uses 127.0.0.1 only. Media connecting is what the service acts on; no packets need to flow.
 */
import { RTCPeerConnection } from 'werift';
import { iceConfig } from '../src/units/ice-settings.js';
import { mediaConfig } from '../src/units/peer-sessions.js';

export class StreamPeer {
  readonly pc = new RTCPeerConnection({
    ...iceConfig({ hostAddresses: ['127.0.0.1'], allowRemoteAddress: (a) => a === '127.0.0.1' }),
    ...mediaConfig(),
  });
  readonly connected: Promise<void>;

  constructor() {
    this.connected = new Promise((resolve, reject) => {
      this.pc.connectionStateChange.subscribe((state) => {
        if (state === 'connected') resolve();
        if (state === 'failed') reject(new Error('the media did not connect'));
      });
    });
    this.connected.catch(() => undefined);
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
