import { describe, expect, it } from 'vitest';
import { Vp8Munger } from './vp8-munger.js';

/** A VP8 payload: descriptor with X, I (15-bit unless `narrow`), L and T, then two bytes of VP8 data. */
function vp8(pictureId: number, tl0: number, options: { narrow?: boolean; tid?: number } = {}): Buffer {
  const id = options.narrow ? [pictureId & 0x7f] : [0x80 | ((pictureId >> 8) & 0x7f), pictureId & 0xff];
  return Buffer.from([0x90, 0xe0, ...id, tl0, (options.tid ?? 0) << 6, 0xaa, 0xbb]);
}

/** The picture id and TL0PICIDX a payload from `vp8` carries. */
function fields(payload: Buffer, narrow = false): { pictureId: number; tl0: number } {
  if (narrow) return { pictureId: (payload[2] as number) & 0x7f, tl0: payload[3] as number };
  return { pictureId: (((payload[2] as number) & 0x7f) << 8) | (payload[3] as number), tl0: payload[4] as number };
}

describe('Vp8Munger', () => {
  it('leaves the first source its own numbers, without copying', () => {
    const munger = new Vp8Munger();
    munger.switchTo();
    const payload = vp8(1234, 17);
    expect(munger.rewrite(payload)).toBe(payload);
    const next = vp8(1235, 17, { tid: 2 });
    expect(munger.rewrite(next)).toBe(next);
  });

  it('numbers a new source on from the last picture sent, and offsets its later packets alike', () => {
    const munger = new Vp8Munger();
    munger.switchTo();
    munger.rewrite(vp8(1000, 40));
    munger.rewrite(vp8(1001, 40, { tid: 2 }));
    munger.rewrite(vp8(1002, 41));
    // A layer whose own count is elsewhere: its keyframe follows 1002 / 41.
    munger.switchTo();
    const key = vp8(20_000, 200);
    const out = munger.rewrite(key);
    expect(fields(out)).toEqual({ pictureId: 1003, tl0: 42 });
    // A copy: the source's payload is every viewer's, and stays as it came.
    expect(out).not.toBe(key);
    expect(fields(key)).toEqual({ pictureId: 20_000, tl0: 200 });
    expect(out.subarray(5)).toEqual(key.subarray(5));
    // The keyframe's second packet (same picture), then the next pictures.
    expect(fields(munger.rewrite(vp8(20_000, 200)))).toEqual({ pictureId: 1003, tl0: 42 });
    expect(fields(munger.rewrite(vp8(20_001, 200, { tid: 2 })))).toEqual({ pictureId: 1004, tl0: 42 });
    expect(fields(munger.rewrite(vp8(20_002, 201)))).toEqual({ pictureId: 1005, tl0: 43 });
  });

  it('wraps the picture id at 15 bits and TL0PICIDX at 8', () => {
    const munger = new Vp8Munger();
    munger.switchTo();
    munger.rewrite(vp8(0x7ffe, 254));
    munger.switchTo();
    expect(fields(munger.rewrite(vp8(5, 9)))).toEqual({ pictureId: 0x7fff, tl0: 255 });
    expect(fields(munger.rewrite(vp8(6, 10)))).toEqual({ pictureId: 0, tl0: 0 });
    // And a later switch follows the wrapped count.
    munger.switchTo();
    expect(fields(munger.rewrite(vp8(300, 3)))).toEqual({ pictureId: 1, tl0: 1 });
  });

  it('does not pull the count back for a late packet of an earlier picture', () => {
    const munger = new Vp8Munger();
    munger.switchTo();
    munger.rewrite(vp8(500, 5));
    munger.switchTo();
    munger.rewrite(vp8(100, 60));
    munger.rewrite(vp8(101, 61));
    // A retransmitted packet of picture 100 comes late: same numbers as before, count unchanged.
    expect(fields(munger.rewrite(vp8(100, 60)))).toEqual({ pictureId: 501, tl0: 6 });
    munger.switchTo();
    expect(fields(munger.rewrite(vp8(9000, 90)))).toEqual({ pictureId: 503, tl0: 8 });
  });

  it('rewrites a 7-bit picture id in its own width', () => {
    const munger = new Vp8Munger();
    munger.switchTo();
    munger.rewrite(vp8(126, 1, { narrow: true }));
    munger.switchTo();
    const out = munger.rewrite(vp8(10, 50, { narrow: true }));
    expect(out).toHaveLength(7);
    expect(fields(out, true)).toEqual({ pictureId: 127, tl0: 2 });
    expect(fields(munger.rewrite(vp8(11, 50, { narrow: true })), true)).toEqual({ pictureId: 0, tl0: 2 });
  });

  it('leaves a payload with neither field (or too short to hold them) as it is', () => {
    const munger = new Vp8Munger();
    munger.switchTo();
    munger.rewrite(vp8(100, 1));
    munger.switchTo();
    const plain = Buffer.from([0x10, 0xaa, 0xbb]);
    expect(munger.rewrite(plain)).toBe(plain);
    const cut = Buffer.from([0x90, 0xc0, 0x80]);
    expect(munger.rewrite(cut)).toBe(cut);
  });
});
