import { createHmac, hash } from 'node:crypto';
import { KEY_LABELS } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';
import type { App, StoredBatch } from '../engines/types.js';
import type { Deliverer } from './deliver.js';
import { signedTry } from './signed-try.js';

const NOW = 1_700_000_000_000;
const BODY = '{"events":[{"id":"w1","at":1700000000000,"type":"webhook.test"}]}';

const app: App = {
  key: 'app1',
  secret: 'the-new-secret-0123456789',
  name: 'App',
  webhook: 'https://hooks.example.com/in?x=1',
  features: ['webhooks'],
  rateLimit: { perSecond: 1, burst: 1 },
};

const batch = { id: 'b1', app: 'app1', body: BODY } as StoredBatch;

/** The signature of section 5.5 under a secret's webhook key, computed here from its parts. */
function signatureUnder(secret: string): string {
  const key = createHmac('sha256', secret).update(KEY_LABELS.webhook).digest();
  const message = `${NOW / 1000}\nPOST\n/in?x=1\n${hash('sha256', BODY, 'hex')}`;
  return createHmac('sha256', key).update(message).digest('hex');
}

async function headersOf(target: App, now = NOW): Promise<Record<string, string>> {
  let sent: Record<string, string> = {};
  const deliverer: Deliverer = {
    deliver: async (_url, _body, headers) => {
      sent = headers;
      return { status: 204 };
    },
    close: async () => {},
  };
  expect(await signedTry(deliverer, target, batch, now)).toEqual({ status: 204 });
  return sent;
}

describe('signedTry: the signature headers', () => {
  it('outside a rotation: X-Service-Signature under the secret, no second header', async () => {
    const headers = await headersOf(app);
    expect(headers['X-Service-Signature']).toBe(signatureUnder(app.secret));
    expect(headers).not.toHaveProperty('X-Service-Signature-Other');
    expect(headers['X-Service-Batch']).toBe('b1');
  });

  it('during a rotation: the chosen secret signs X-Service-Signature, the other X-Service-Signature-Other', async () => {
    const rotation = { oldSecret: 'the-old-secret-0123456789', retiresAt: NOW + 1, signer: 'new' as const };
    const byNew = await headersOf({ ...app, rotation });
    expect(byNew['X-Service-Signature']).toBe(signatureUnder(app.secret));
    expect(byNew['X-Service-Signature-Other']).toBe(signatureUnder(rotation.oldSecret));
    const byOld = await headersOf({ ...app, rotation: { ...rotation, signer: 'old' } });
    expect(byOld['X-Service-Signature']).toBe(signatureUnder(rotation.oldSecret));
    expect(byOld['X-Service-Signature-Other']).toBe(signatureUnder(app.secret));
  });

  it('once the window is over: the current secret alone, whichever signed before', async () => {
    const rotation = { oldSecret: 'the-old-secret-0123456789', retiresAt: NOW, signer: 'old' as const };
    const headers = await headersOf({ ...app, rotation });
    expect(headers['X-Service-Signature']).toBe(signatureUnder(app.secret));
    expect(headers).not.toHaveProperty('X-Service-Signature-Other');
  });
});
