import { describe, expect, it } from 'vitest';
import { SPEAKER_START_LEVEL, SPEAKER_STOP_LEVEL, SPEAKER_WINDOW_MS, Speakers } from './speakers.js';

/** Feeds every id its level (a function of the time) every 200 ms from `from` to `to`; returns each change. */
function run(
  speakers: Speakers,
  levels: Record<string, (ms: number) => number>,
  from: number,
  to: number,
): { at: number; ids: string[] }[] {
  const changes: { at: number; ids: string[] }[] = [];
  for (let ms = from; ms <= to; ms += 200) {
    for (const [id, level] of Object.entries(levels)) speakers.feed(id, level(ms), ms);
    const changed = speakers.update(ms);
    if (changed) changes.push({ at: ms, ids: changed.map((s) => s.id) });
  }
  return changes;
}

const silent = () => 0;
/** Like the fake microphone as sampled: one loud sample in five, the rest silence. */
const beeping = (ms: number) => (ms % 1000 === 0 ? 0.3 : 0);

describe('speakers', () => {
  it('reports a beeping participant speaking and silent ones never, as one change', () => {
    const speakers = new Speakers();
    const changes = run(speakers, { beep: beeping, quiet: silent, mute: silent }, 0, 10_000);
    expect(changes).toEqual([{ at: 0, ids: ['beep'] }]);
    expect(speakers.current.map((s) => s.id)).toEqual(['beep']);
    // The mean over the window: 0.3 in one sample of five (or so, as the window slides).
    expect(speakers.current[0]?.level).toBeGreaterThan(0.03);
    expect(speakers.current[0]?.level).toBeLessThan(0.08);
  });

  it('orders loudest first, and reorders when the order changes clearly', () => {
    const speakers = new Speakers();
    let loud = 'a';
    const level = (id: string) => () => (id === loud ? 0.4 : 0.1);
    const changes = run(speakers, { a: level('a'), b: level('b') }, 0, 2000);
    expect(changes).toEqual([{ at: 0, ids: ['a', 'b'] }]);
    expect(speakers.current[0]?.level).toBeCloseTo(0.4);
    expect(speakers.current[1]?.level).toBeCloseTo(0.1);
    loud = 'b';
    const later = run(speakers, { a: level('a'), b: level('b') }, 2200, 6000);
    // Once b's mean is clearly above a's (the window mixes the old and the new), and only once.
    expect(later.map((c) => c.ids)).toEqual([['b', 'a']]);
    expect(later[0]?.at).toBeGreaterThan(2200);
    expect(later[0]?.at).toBeLessThan(2200 + SPEAKER_WINDOW_MS);
  });

  it('keeps the order of two speakers about as loud as each other', () => {
    const speakers = new Speakers();
    // a and b take turns being a little louder (within the 1.25 margin) at every sample.
    const a = (ms: number) => ((ms / 200) % 2 === 0 ? 0.11 : 0.1);
    const b = (ms: number) => ((ms / 200) % 2 === 0 ? 0.1 : 0.11);
    const changes = run(speakers, { a, b }, 0, 5000);
    expect(changes).toHaveLength(1);
    expect(changes[0]?.ids).toHaveLength(2);
  });

  it('a speaker hovering between the stop and start levels does not flicker', () => {
    const speakers = new Speakers();
    run(speakers, { x: () => 0.05 }, 0, 1000);
    expect(speakers.current.map((s) => s.id)).toEqual(['x']);
    // Between the two thresholds, swinging: still a speaker.
    const between = (SPEAKER_START_LEVEL + SPEAKER_STOP_LEVEL) / 2;
    const swing = (ms: number) => between * ((ms / 200) % 2 === 0 ? 1.15 : 0.85);
    expect(run(speakers, { x: swing }, 1200, 8000)).toEqual([]);
    // A newcomer at that level does not start.
    expect(run(speakers, { x: swing, y: swing }, 8200, 12_000)).toEqual([]);
    expect(speakers.current.map((s) => s.id)).toEqual(['x']);
  });

  it('a speaker who goes quiet leaves the list within the window, once', () => {
    const speakers = new Speakers();
    run(speakers, { x: () => 0.2 }, 0, 2000);
    const changes = run(speakers, { x: silent }, 2200, 8000);
    expect(changes).toHaveLength(1);
    expect(changes[0]?.ids).toEqual([]);
    expect(changes[0]?.at).toBeGreaterThan(2200);
    expect(changes[0]?.at).toBeLessThanOrEqual(2000 + SPEAKER_WINDOW_MS + 200);
  });

  it('forgets a participant removed, or not heard of for a window', () => {
    const speakers = new Speakers();
    run(speakers, { x: () => 0.2, y: () => 0.1 }, 0, 1000);
    expect(speakers.current.map((s) => s.id)).toEqual(['x', 'y']);
    speakers.remove('x');
    expect(speakers.update(1100)?.map((s) => s.id)).toEqual(['y']);
    // y's samples stop coming (its media went): once the window passes, it is gone.
    expect(speakers.update(1000 + SPEAKER_WINDOW_MS - 1)).toBeUndefined();
    expect(speakers.update(1000 + SPEAKER_WINDOW_MS)).toEqual([]);
  });

  it('takes a level out of range, or not a number, as silence or full scale', () => {
    const speakers = new Speakers();
    speakers.feed('nan', Number.NaN, 0);
    speakers.feed('big', 7, 0);
    speakers.feed('neg', -1, 0);
    expect(speakers.update(0)).toEqual([{ id: 'big', level: 1 }]);
  });

  it('a clock that goes back does not drop samples early', () => {
    const speakers = new Speakers();
    speakers.feed('x', 0.2, 5000);
    speakers.feed('x', 0.2, 1000);
    expect(speakers.update(5000 + SPEAKER_WINDOW_MS - 1)?.map((s) => s.id)).toEqual(['x']);
  });
});
