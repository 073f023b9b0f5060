import { CallError } from './errors.js';
import type { CallMediaSource } from './types.js';

/** A call's local media, and whether the SDK got it (then it stops the tracks when the call ends). */
export interface LocalMedia {
  stream: MediaStream;
  owned: boolean;
}

/** True when this page can make calls: WebRTC and media capture. */
export function webRtcHere(): boolean {
  return typeof RTCPeerConnection === 'function' && typeof MediaStream === 'function';
}

/** The stream given, or one from `getUserMedia` with the constraints given. */
export async function localMedia(source: CallMediaSource): Promise<LocalMedia> {
  if (source instanceof MediaStream) return { stream: source, owned: false };
  const devices = (globalThis.navigator as Navigator | undefined)?.mediaDevices;
  if (!devices?.getUserMedia) {
    throw new CallError('media_failed', 'no getUserMedia here (a page must be served over https or from localhost)');
  }
  try {
    return { stream: await devices.getUserMedia(source), owned: true };
  } catch (cause) {
    const what = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    throw new CallError('media_failed', `getUserMedia failed (${what})`, { cause });
  }
}

/** Stops the tracks of media the SDK got; a stream the page gave is the page's to stop. */
export function releaseMedia(media: LocalMedia | undefined): void {
  if (!media?.owned) return;
  for (const track of media.stream.getTracks()) track.stop();
}
