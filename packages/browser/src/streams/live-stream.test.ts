import type { StreamClientFrame } from '@realtime/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fakeVideoElement, fakeWebRtc, settle } from '../../test/fake-webrtc.js';
import { ADAPT_SETTLE_MS } from '../calls/adaptive-video.js';
import type { StreamLink, StreamParty } from './link.js';
import { LiveStream } from './live-stream.js';

/** A stream over a fake link: the frames it sends, and its party to hand it the service's frames. */
async function streamAs(role: 'presenter' | 'viewer') {
  const sent: StreamClientFrame[] = [];
  let party: StreamParty | undefined;
  let ref = -1;
  const link: StreamLink = {
    rtc: {},
    ready: true,
    session: 1,
    whenReady: async () => {},
    send: (frame) => {
      sent.push(frame);
      return true;
    },
    nextRef: () => ref--,
    claim: () => {},
    release: () => {},
    live: (_name, p, on) => {
      if (on) party = p;
    },
  };
  const stream = new LiveStream('keynote', { grant: 'grant', role, media: new MediaStream() }, link);
  await vi.waitFor(() =>
    expect(sent.some((f) => f.t === `stream.${role === 'viewer' ? 'watch' : 'present'}`)).toBe(true),
  );
  const entered = sent.find((f) => 'ref' in f) as { ref: number };
  if (!party) throw new Error('no party');
  if (role === 'viewer')
    party.entered({ t: 'stream.watching', ref: entered.ref, stream: 'keynote', live: true, ice: [] });
  else party.entered({ t: 'stream.presenting', ref: entered.ref, stream: 'keynote', ice: [] });
  const video = () => sent.flatMap((f) => (f.t === 'stream.signal' && 'video' in f.data ? [f.data.video] : []));
  /** Leaves, the service answering at once. */
  const leave = async () => {
    const left = stream.leave();
    party?.leftAnswer();
    expect(await left).toEqual({});
  };
  return { stream, party, video, sent, leave };
}

beforeEach(() => {
  fakeWebRtc();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe("a stream viewer's video wants (adaptive stream)", () => {
  it('are sent once the unit has a session for the page, and again with each of its offers', async () => {
    const { stream, party, video, sent, leave } = await streamAs('viewer');
    stream.setVideoSize(1280, 720);
    expect(video()).toEqual([]); // no session yet: kept
    party.signal({ sdp: { type: 'offer', sdp: 'run 1' } });
    expect(video()).toEqual([{ maxWidth: 1280, maxHeight: 720 }]);
    await settle();
    expect(sent.at(-1)).toEqual({
      t: 'stream.signal',
      stream: 'keynote',
      data: { sdp: { type: 'answer', sdp: 'answer:run 1' } },
    });
    stream.pauseVideo();
    stream.resumeVideo();
    party.signal({ sdp: { type: 'offer', sdp: 'run 2' } });
    expect(video()).toEqual([
      { maxWidth: 1280, maxHeight: 720 },
      { maxWidth: 1280, maxHeight: 720, paused: true },
      { maxWidth: 1280, maxHeight: 720 },
      { maxWidth: 1280, maxHeight: 720 },
    ]);
    await leave();
    stream.pauseVideo();
    expect(video()).toHaveLength(4);
  });

  it('attach gives the element each run’s stream and its size', async () => {
    vi.useFakeTimers();
    const { stream, party, video, leave } = await streamAs('viewer');
    const element = fakeVideoElement();
    const detach = stream.attach(element);
    party.signal({ sdp: { type: 'offer', sdp: 'run 1' } });
    expect(element.srcObject).toBe(stream.remoteStream);
    const first = stream.remoteStream;
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    expect(video()).toEqual([{ maxWidth: 640, maxHeight: 360 }]);
    party.signal({ sdp: { type: 'offer', sdp: 'run 2' } });
    expect(element.srcObject).toBe(stream.remoteStream);
    expect(stream.remoteStream).not.toBe(first);
    expect(video()).toEqual([
      { maxWidth: 640, maxHeight: 360 },
      { maxWidth: 640, maxHeight: 360 },
    ]);
    detach();
    expect(element.srcObject).toBeNull();
    await leave();
  });

  it('a presenter sends none', async () => {
    const { stream, video, leave } = await streamAs('presenter');
    stream.setVideoSize(320, 180);
    stream.pauseVideo();
    expect(video()).toEqual([]);
    await leave();
  });
});
