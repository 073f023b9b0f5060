/**
 * What a page sends per video layer, as its own getStats tells it: for the shaped-link suites'
 * messages when a viewer stalls (a layer its sender stopped, frames its encoder dropped, and why).
 */
import type { Page } from 'playwright-core';

/** One layer (an `outbound-rtp`), or the sender's estimate of its uplink (the selected pair's). */
export type LayerSent =
  | {
      rid: unknown;
      framesEncoded: unknown;
      frameWidth: unknown;
      qualityLimitationReason: unknown;
      qualityLimitationDurations: unknown;
      bytesSent: unknown;
    }
  | { uplink: unknown };

/**
 * What `page` sends over the connection `connection` finds in it (run in the page: it may use only
 * the page's own globals).
 */
export async function layersSent(page: Page, connection: () => RTCPeerConnection | undefined): Promise<LayerSent[]> {
  const handle = await page.evaluateHandle(connection);
  try {
    return await handle.evaluate(async (pc) => {
      const out: LayerSent[] = [];
      (await pc?.getStats())?.forEach((s: Record<string, unknown>) => {
        if (s.type === 'outbound-rtp' && s.kind === 'video') {
          const { rid, framesEncoded, frameWidth, qualityLimitationReason, qualityLimitationDurations, bytesSent } = s;
          out.push({ rid, framesEncoded, frameWidth, qualityLimitationReason, qualityLimitationDurations, bytesSent });
        }
        // Under the layers' sum, the browser drops its top layer.
        if (s.type === 'candidate-pair' && s.nominated) out.push({ uplink: s.availableOutgoingBitrate });
      });
      return out;
    });
  } finally {
    await handle.dispose();
  }
}
