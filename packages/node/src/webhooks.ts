import type { DeliveryRecord } from '@realtime/protocol';
import { field, isBoolean, isNumber, isRecordArray } from './answers.js';
import { apiPath } from './paths.js';
import type { ApiAnswer, Transport } from './request.js';

/** Outcome of one immediate webhook try (test or resend). */
export interface WebhookTry {
  /** True when the customer's server answered 2xx in time. */
  delivered: boolean;
  /** The HTTP status it answered; 0 when nothing answered. */
  status: number;
}

/**
 * The webhook endpoints of the API (sections 4.5 to 4.7), reached as `realtime.webhooks`.
 *
 * @example
 * const { delivered, status } = await realtime.webhooks.test();
 * for (const d of await realtime.webhooks.list()) if (d.resendable) await realtime.webhooks.resend(d.id);
 */
export class Webhooks {
  readonly #transport: Transport;

  /** Made by {@link Realtime}; not meant to be built directly. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Asks the service to send a `webhook.test` event to the app's webhook address now.
   * Fails with `no_webhook` when the app has no address, `not_included` when the plan lacks webhooks.
   *
   * @example
   * const { delivered, status } = await realtime.webhooks.test();
   */
  async test(): Promise<WebhookTry> {
    return tryAnswer(await this.#transport.signedRequest('POST', apiPath('webhooks', 'test')));
  }

  /**
   * The last 100 deliveries, newest first.
   *
   * @example
   * const failed = (await realtime.webhooks.list()).filter((d) => d.state === 'given_up');
   */
  async list(): Promise<DeliveryRecord[]> {
    const answer = await this.#transport.signedRequest('GET', apiPath('webhooks'));
    // Records are passed on as the service gives them; only their container is checked.
    return field(answer, 'deliveries', isRecordArray, 'an array of delivery records') as unknown as DeliveryRecord[];
  }

  /**
   * Sends a batch again at once (same events, same ids). Fails with `not_found` for an unknown batch,
   * `not_resendable` for one that was taken or is out of its window.
   *
   * @example
   * await realtime.webhooks.resend('b_01HV…');
   */
  async resend(batchId: string): Promise<WebhookTry> {
    return tryAnswer(await this.#transport.signedRequest('POST', apiPath('webhooks', batchId, 'resend')));
  }
}

function tryAnswer(answer: ApiAnswer): WebhookTry {
  return {
    delivered: field(answer, 'delivered', isBoolean, 'a boolean'),
    status: field(answer, 'status', isNumber, 'a number'),
  };
}
