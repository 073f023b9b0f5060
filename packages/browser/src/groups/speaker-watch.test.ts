import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../test/fake-service.js';
import {
  type ConnectionLike,
  type ReceiverLike,
  type SenderLike,
  SPEAKER_POLL_MS,
  type SpeakerSource,
  SpeakerWatch,
  type StatsLike,
} from './speaker-watch.js';
import type { SpeakerLevel } from './speakers.js';

/** Audio whose level the test sets; its energy totals grow with each poll as WebRTC's do. */
class FakeAudio {
  level = 0;
  energy = 0;
  duration = 0;
  /** Adds `seconds` of audio at the current level. */
  play(seconds: number): void {
    this.energy += this.level * this.level * seconds;
    this.duration += seconds;
  }
  report(type: string, totals: boolean): StatsLike {
    const report: Record<string, unknown> = { type, kind: 'audio', audioLevel: this.level };
    if (totals) Object.assign(report, { totalAudioEnergy: this.energy, totalSamplesDuration: this.duration });
    return new Map([['r', report]]);
  }
}

/** A connection receiving `audio` (energy totals unless `totals` is false, the extension's level if `extension`). */
function receiving(audio: FakeAudio, options: { totals?: boolean; extension?: () => number | undefined } = {}) {
  let stamp = 0;
  const receiver: ReceiverLike = {
    track: { kind: 'audio' },
    getSynchronizationSources: () => {
      const level = options.extension?.();
      if (level === undefined) return [];
      return [{ source: 1, audioLevel: level, rtpTimestamp: stamp }];
    },
    getStats: async () => audio.report('inbound-rtp', options.totals ?? true),
  };
  const video: ReceiverLike = {
    track: { kind: 'video' },
    getSynchronizationSources: () => [],
    getStats: async () => new Map(),
  };
  const connection: ConnectionLike = { getReceivers: () => [video, receiver], getSenders: () => [] };
  return { connection, nextPacket: () => stamp++ };
}

function sending(audio: FakeAudio, track = { kind: 'audio', enabled: true, muted: false }): ConnectionLike {
  const sender: SenderLike = { track, getStats: async () => audio.report('media-source', true) };
  return { getReceivers: () => [], getSenders: () => [sender] };
}

function setup(sources: { remotes: () => SpeakerSource[]; local?: () => SpeakerSource | undefined }) {
  const clock = new ManualClock();
  const changes: string[][] = [];
  const watch = new SpeakerWatch(
    { remotes: sources.remotes, local: sources.local ?? (() => undefined) },
    (speakers: SpeakerLevel[]) => changes.push(speakers.map((s) => s.id)),
    clock,
  );
  /** `n` polls, each after its audio played. */
  const polls = async (n: number, audios: FakeAudio[], each?: () => void) => {
    for (let i = 0; i < n; i++) {
      for (const audio of audios) audio.play(SPEAKER_POLL_MS / 1000);
      each?.();
      clock.advance(SPEAKER_POLL_MS);
      // The poll awaits the stats: let it finish (and schedule the next) before time moves on.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { clock, changes, watch, polls };
}

describe('speaker watch', () => {
  it('reports the remote and local participants whose audio has energy, loudest first, on change only', async () => {
    const [a, b, me] = [new FakeAudio(), new FakeAudio(), new FakeAudio()];
    const ra = receiving(a);
    const rb = receiving(b);
    const { changes, watch, polls } = setup({
      remotes: () => [
        { id: 'a', connection: ra.connection },
        { id: 'b', connection: rb.connection },
      ],
      local: () => ({ id: 'me', connection: sending(me) }),
    });
    watch.start();
    a.level = 0.3;
    me.level = 0.1;
    await polls(20, [a, b, me]);
    expect(changes).toEqual([['a', 'me']]);
    expect(watch.current.map((s) => s.id)).toEqual(['a', 'me']);
    expect(watch.current[0]?.level).toBeCloseTo(0.3);
    a.level = 0;
    await polls(20, [a, b, me]);
    // a fades over the window: first quieter than this page, then gone.
    expect(changes).toEqual([['a', 'me'], ['me', 'a'], ['me']]);
    watch.stop();
  });

  it('takes the energy between polls, so a beep between two polls counts', async () => {
    const a = new FakeAudio();
    const ra = receiving(a);
    const { changes, watch, polls } = setup({ remotes: () => [{ id: 'a', connection: ra.connection }] });
    watch.start();
    // 40 ms of beep in every 500, as Chromium's fake microphone: at each poll the level of the moment is 0.
    let ms = 0;
    await polls(30, [], () => {
      for (let t = 0; t < SPEAKER_POLL_MS; t += 20, ms += 20) {
        a.level = ms % 500 < 40 ? 0.4 : 0;
        a.play(0.02);
      }
      a.level = 0;
    });
    expect(changes).toEqual([['a']]);
  });

  it('without energy totals, takes the audio level extension of packets that came since the last poll', async () => {
    const a = new FakeAudio();
    let extension = 0.2;
    const ra = receiving(a, { totals: false, extension: () => extension });
    const { changes, watch, polls } = setup({ remotes: () => [{ id: 'a', connection: ra.connection }] });
    watch.start();
    await polls(10, [], ra.nextPacket);
    expect(changes).toEqual([['a']]);
    // No packet any more: the source stays listed with its last (loud) level, which no longer counts.
    await polls(15, []);
    expect(changes).toEqual([['a'], []]);
    extension = 0;
    await polls(10, [], ra.nextPacket);
    expect(changes).toEqual([['a'], []]);
  });

  it('this page is silent while its track is disabled', async () => {
    const me = new FakeAudio();
    const track = { kind: 'audio', enabled: false, muted: false };
    const { changes, watch, polls } = setup({
      remotes: () => [],
      local: () => ({ id: 'me', connection: sending(me, track) }),
    });
    watch.start();
    me.level = 0.5;
    await polls(10, [me]);
    expect(changes).toEqual([]);
    track.enabled = true;
    await polls(10, [me]);
    expect(changes).toEqual([['me']]);
  });

  it('a participant gone is out of the list at the next poll', async () => {
    const a = new FakeAudio();
    const ra = receiving(a);
    let here = true;
    const { changes, watch, polls } = setup({
      remotes: () => (here ? [{ id: 'a', connection: ra.connection }] : []),
    });
    watch.start();
    a.level = 0.3;
    await polls(5, [a]);
    here = false;
    await polls(1, [a]);
    expect(changes).toEqual([['a'], []]);
  });

  it('stops polling and telling once stopped', async () => {
    const a = new FakeAudio();
    const ra = receiving(a);
    const { clock, changes, watch, polls } = setup({ remotes: () => [{ id: 'a', connection: ra.connection }] });
    watch.start();
    watch.start();
    expect(clock.pendingTimers).toBe(1);
    watch.stop();
    expect(clock.pendingTimers).toBe(0);
    a.level = 0.3;
    await polls(10, [a]);
    expect(changes).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});
