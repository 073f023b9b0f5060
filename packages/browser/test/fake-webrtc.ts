/**
 * Just enough of MediaStream and RTCPeerConnection for the SDK's media classes to run in Node: a
 * connection answers an offer with `answer:<offer>` and does nothing else (no ICE, no tracks). The
 * globals are stubbed by `fakeWebRtc()` and put back by vitest's `unstubAllGlobals`.
 */
import { vi } from 'vitest';

class FakeMediaStream {
  readonly #tracks: { id: string }[] = [];
  getTracks() {
    return [...this.#tracks];
  }
  getTrackById(id: string) {
    return this.#tracks.find((t) => t.id === id) ?? null;
  }
  addTrack(track: { id: string }) {
    this.#tracks.push(track);
  }
  removeTrack(track: { id: string }) {
    const at = this.#tracks.indexOf(track);
    if (at >= 0) this.#tracks.splice(at, 1);
  }
}

class FakePeerConnection {
  onicecandidate: unknown = null;
  ontrack: unknown = null;
  onconnectionstatechange: unknown = null;
  connectionState = 'new';
  localDescription: { type: string; sdp: string } | null = null;
  remoteDescription: { type: string; sdp: string } | null = null;
  closed = false;
  getSenders() {
    return [];
  }
  addTrack() {}
  addTransceiver() {}
  async createOffer() {
    return { type: 'offer', sdp: 'offer' };
  }
  async createAnswer() {
    return { type: 'answer', sdp: `answer:${this.remoteDescription?.sdp ?? ''}` };
  }
  async setLocalDescription(description: { type: string; sdp: string }) {
    this.localDescription = description;
  }
  async setRemoteDescription(description: { type: string; sdp: string }) {
    this.remoteDescription = description;
  }
  async addIceCandidate() {}
  close() {
    this.closed = true;
  }
}

export function fakeWebRtc(): void {
  vi.stubGlobal('MediaStream', FakeMediaStream);
  vi.stubGlobal('RTCPeerConnection', FakePeerConnection);
}

/** A `<video>` as far as `attach` goes: its srcObject, and a size for pages without ResizeObserver. */
export function fakeVideoElement(): HTMLMediaElement {
  return { srcObject: null, clientWidth: 640, clientHeight: 360 } as unknown as HTMLMediaElement;
}

/** Lets the connections' queued steps (descriptions) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
