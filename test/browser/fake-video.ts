/**
 * A video file for Chromium's fake camera (`launchChromium({ videoFile })`) whose picture costs a
 * real camera's bits. Chromium's own test pattern is so plain that VP8 codes it at QP 2 in about
 * 0.3-0.5 Mbit/s whatever the rate it may use (between two Chromium pages too), so the bytes it
 * sends can not show whether the sender ramps; a picture of fine grain makes the encoder fill its
 * target, as a camera does.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Writes a Y4M (I420, 30 fps) of `frames` frames, each fine grain of ±`grain` levels around mid
 * grey (a fixed sequence, so every run sends the same picture). Returns its path and its removal.
 */
export function writeGrainVideo(options: { width?: number; height?: number; frames?: number; grain?: number } = {}): {
  path: string;
  remove(): void;
} {
  const { width = 1280, height = 720, frames = 10, grain = 20 } = options;
  const path = join(tmpdir(), `grain-${process.pid}-${width}x${height}.y4m`);
  const size = (width * height * 3) / 2;
  const parts: Buffer[] = [Buffer.from(`YUV4MPEG2 W${width} H${height} F30:1 Ip A1:1 C420jpeg\n`)];
  let state = 0x2545f491; // xorshift32
  for (let f = 0; f < frames; f++) {
    const frame = Buffer.alloc(size);
    for (let i = 0; i < size; i++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      frame[i] = 128 - grain + ((state >>> 0) % (2 * grain + 1));
    }
    parts.push(Buffer.from('FRAME\n'), frame);
  }
  writeFileSync(path, Buffer.concat(parts));
  return { path, remove: () => rmSync(path, { force: true }) };
}
