import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fakeVideoElement, fakeWebRtc, settle } from '../../test/fake-webrtc.js';
import { ADAPT_SETTLE_MS } from '../calls/adaptive-video.js';
import { RemotePeer } from './remote-peer.js';

/** A peer page of a group, with the signals it sends `to` that page (or its unit). */
function peerOf() {
  const signals: Record<string, unknown>[] = [];
  const peer = new RemotePeer(
    { page: 'n1.2', user: 'ann', media: ['audio', 'video'] },
    'standup',
    { ice: [], rtc: {} },
    { signal: (data) => signals.push(data), track: () => {}, state: () => {} },
  );
  const video = () => signals.filter((s) => 'video' in s).map((s) => s.video);
  return { peer, signals, video };
}

const unitOffer = (sdp: string) => ({ sdp: { type: 'offer', sdp } });

beforeEach(() => {
  fakeWebRtc();
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe("a group peer's video wants (adaptive stream)", () => {
  it('in a mesh: nothing is sent; in unit mode: sent to the peer’s unit, and again to each of its new sessions', async () => {
    const { peer, signals, video } = peerOf();
    peer.connect(new MediaStream(), false);
    peer.setVideoSize(320, 180);
    peer.pauseVideo();
    expect(video()).toEqual([]);
    // The group switched: nothing until the unit's offer, which gets the wants kept so far.
    peer.viaUnit();
    peer.resumeVideo();
    expect(video()).toEqual([]);
    peer.receive(unitOffer('first'));
    expect(video()).toEqual([{ maxWidth: 320, maxHeight: 180 }]);
    await settle();
    expect(signals.at(-1)).toEqual({ sdp: { type: 'answer', sdp: 'answer:first' } });
    peer.pauseVideo();
    expect(video().at(-1)).toEqual({ maxWidth: 320, maxHeight: 180, paused: true });
    // The unit restarted (a new session): told again.
    peer.receive(unitOffer('second'));
    expect(video()).toHaveLength(3);
    expect(video().at(-1)).toEqual({ maxWidth: 320, maxHeight: 180, paused: true });
    peer.close();
    peer.resumeVideo();
    expect(video()).toHaveLength(3);
  });

  it('attach shows the peer’s stream in the element and fits the video to its size; detach clears it', async () => {
    const { peer, video } = peerOf();
    peer.viaUnit();
    peer.receive(unitOffer('first'));
    const element = fakeVideoElement();
    const detach = peer.attach(element);
    expect(element.srcObject).toBe(peer.stream);
    // No ResizeObserver in Node: the size the element has, told once it settles.
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    expect(video()).toEqual([{ maxWidth: 640, maxHeight: 360 }]);
    detach();
    expect(element.srcObject).toBeNull();
    // Back to nothing asked by hand: no bound.
    expect(video().at(-1)).toEqual({});
  });
});
