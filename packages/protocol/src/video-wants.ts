/**
 * Adaptive stream (docs/calls.md): what a page receiving a forwarding unit's video asks of it. A
 * live stream's viewer sends it as `stream.signal` data, a member of a group call in unit mode as
 * `group.signal` data to the page whose video it is: `{ "video": { "maxWidth": 640, "maxHeight":
 * 360 } }`, or `{ "video": { "paused": true } }` while the video is hidden. Each replaces the last
 * one the page sent for that video: a field left out is no bound (sizes) or not paused.
 */
export interface VideoSignalData {
  video: VideoWantsData;
}

export interface VideoWantsData {
  /** The width the page shows the video at, in device pixels (CSS px times devicePixelRatio): no larger layer is sent. */
  maxWidth?: number;
  /** The height, likewise. */
  maxHeight?: number;
  /** No video while true (the element is hidden, off screen, or the tab is in the background); audio goes on. */
  paused?: boolean;
}

/** The largest `maxWidth` or `maxHeight` (whole pixels, from 1): larger than any camera sends. */
export const VIDEO_SIZE_MAX = 16_384;

/** Why `video` is not a {@link VideoWantsData}, or undefined when it is one (unknown fields are ignored). */
export function videoWantsProblem(video: unknown): string | undefined {
  const shape = `{ "maxWidth"?: <whole number 1..${VIDEO_SIZE_MAX}>, "maxHeight"?: <the same>, "paused"?: <boolean> }`;
  if (typeof video !== 'object' || video === null || Array.isArray(video)) return `data.video must be ${shape}`;
  const { maxWidth, maxHeight, paused } = video as Record<string, unknown>;
  for (const [name, size] of [
    ['maxWidth', maxWidth],
    ['maxHeight', maxHeight],
  ] as const) {
    if (
      size !== undefined &&
      !(Number.isInteger(size) && (size as number) >= 1 && (size as number) <= VIDEO_SIZE_MAX)
    ) {
      return `data.video.${name} must be a whole number of pixels from 1 to ${VIDEO_SIZE_MAX}`;
    }
  }
  if (paused !== undefined && typeof paused !== 'boolean') return 'data.video.paused must be true or false';
  return undefined;
}
