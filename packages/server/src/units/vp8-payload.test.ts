import { describe, expect, it } from 'vitest';
import { readVp8 } from './vp8-payload.js';

/** A keyframe's VP8 payload header: frame tag (P=0), start code, width and height with scale bits. */
function keyframeHeader(width: number, height: number, scale = 0): number[] {
  const w = width | (scale << 14);
  const h = height | (scale << 14);
  return [0x50, 0x2e, 0x01, 0x9d, 0x01, 0x2a, w & 0xff, w >> 8, h & 0xff, h >> 8];
}
/** An interframe's VP8 payload header: frame tag with P=1, then compressed data. */
const INTERFRAME = [0x31, 0x12, 0x00, 0xaa, 0xbb];

describe('readVp8', () => {
  it('reads a keyframe with the minimal descriptor (S=1, PID=0) and its size', () => {
    const info = readVp8(Uint8Array.from([0x10, ...keyframeHeader(1280, 720), 0xff]));
    expect(info).toEqual({ startOfFrame: true, keyframe: true, width: 1280, height: 720 });
  });

  it('drops the scale bits of the sizes', () => {
    const info = readVp8(Uint8Array.from([0x10, ...keyframeHeader(320, 180, 3)]));
    expect(info).toMatchObject({ keyframe: true, width: 320, height: 180 });
  });

  it('reads an interframe as the start of a frame that is not a keyframe', () => {
    expect(readVp8(Uint8Array.from([0x10, ...INTERFRAME]))).toEqual({ startOfFrame: true, keyframe: false });
  });

  it('reads a 7-bit picture id', () => {
    // X=1, S=1; I=1; M=0, id 0x45
    const info = readVp8(Uint8Array.from([0x90, 0x80, 0x45, ...keyframeHeader(640, 360)]));
    expect(info).toEqual({ startOfFrame: true, keyframe: true, width: 640, height: 360, pictureId: 0x45 });
  });

  it('reads a 15-bit picture id with TL0PICIDX and TID/Y/KEYIDX after it', () => {
    // X=1, N=1, S=1; I, L, T, K; M=1 id 0x1234; TL0PICIDX; TID=1 Y=1 KEYIDX=5
    const info = readVp8(Uint8Array.from([0xb0, 0xf0, 0x80 | 0x12, 0x34, 0x07, 0x65, ...keyframeHeader(640, 360)]));
    expect(info).toEqual({ startOfFrame: true, keyframe: true, width: 640, height: 360, pictureId: 0x1234 });
  });

  it('skips TL0PICIDX alone, and the T/K byte when only K is set', () => {
    expect(readVp8(Uint8Array.from([0x90, 0x40, 0x07, ...keyframeHeader(320, 180)]))).toEqual({
      startOfFrame: true,
      keyframe: true,
      width: 320,
      height: 180,
    });
    expect(readVp8(Uint8Array.from([0x90, 0x10, 0x05, ...INTERFRAME]))).toEqual({
      startOfFrame: true,
      keyframe: false,
    });
  });

  it('does not read a keyframe in a packet that continues a frame (S=0) or starts a later partition (PID>0)', () => {
    // The bytes after the descriptor look like a keyframe header, but are mid-frame data.
    expect(readVp8(Uint8Array.from([0x00, ...keyframeHeader(1280, 720)]))).toEqual({
      startOfFrame: false,
      keyframe: false,
    });
    expect(readVp8(Uint8Array.from([0x11, ...keyframeHeader(1280, 720)]))).toEqual({
      startOfFrame: false,
      keyframe: false,
    });
    // A continuation still reports its picture id.
    expect(readVp8(Uint8Array.from([0x80, 0x80, 0x7f, 0x01]))).toEqual({
      startOfFrame: false,
      keyframe: false,
      pictureId: 0x7f,
    });
  });

  it('answers undefined for input too short for what its bits announce', () => {
    expect(readVp8(new Uint8Array(0))).toBeUndefined();
    // Descriptor only, no VP8 data.
    expect(readVp8(Uint8Array.from([0x10]))).toBeUndefined();
    expect(readVp8(Uint8Array.from([0x00]))).toBeUndefined();
    // X set, extension byte missing.
    expect(readVp8(Uint8Array.from([0x90]))).toBeUndefined();
    // I set, picture id missing; M set, its second byte missing.
    expect(readVp8(Uint8Array.from([0x90, 0x80]))).toBeUndefined();
    expect(readVp8(Uint8Array.from([0x90, 0x80, 0x81]))).toBeUndefined();
    // L and T announced, bytes missing.
    expect(readVp8(Uint8Array.from([0x90, 0x60, 0x01]))).toBeUndefined();
    // Start of a frame with less than the 3-byte frame tag.
    expect(readVp8(Uint8Array.from([0x10, 0x31, 0x00]))).toBeUndefined();
  });

  it('answers undefined for a keyframe cut short or without its start code', () => {
    const whole = [0x10, ...keyframeHeader(1280, 720)];
    for (let length = 4; length < whole.length; length++) {
      expect(readVp8(Uint8Array.from(whole.slice(0, length)))).toBeUndefined();
    }
    const badCode = [0x10, ...keyframeHeader(1280, 720)];
    badCode[5] = 0x02;
    expect(readVp8(Uint8Array.from(badCode))).toBeUndefined();
  });

  it('reads from a view into a larger buffer (an RTP packet payload subarray)', () => {
    const packet = Uint8Array.from([0xde, 0xad, 0x10, ...keyframeHeader(640, 360), 0x00]);
    expect(readVp8(packet.subarray(2))).toMatchObject({ keyframe: true, width: 640, height: 360 });
  });
});
