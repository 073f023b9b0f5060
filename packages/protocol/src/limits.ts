/** Limits of section 8 and decisions.md. Byte sizes are of UTF-8 text. */
export const LIMITS = {
  /** `data` of emit, batch and ask: its JSON text as sent. */
  dataBytes: 1_048_576,
  /** Any request body; refused before parsing. */
  bodyBytes: 2 * 1_048_576,
  /** Rooms plus users of one event. */
  targetsPerEvent: 1000,
  eventsPerBatch: 100,
  clockSkewSeconds: 300,
  roomNameBytes: 200,
  userIdBytes: 200,
  eventNameBytes: 100,
  historyMaxEvents: 1000,
  historyMaxHours: 168,
  askTimeoutMinMs: 1,
  askTimeoutMaxMs: 30_000,
  askTimeoutDefaultMs: 5000,
  onlineIdsPerRequest: 1000,
  webhookEventsPerRequest: 100,
  webhookWindowMs: 1000,
  webhookAnswerMs: 10_000,
  /** Delay before each retry, counted from the end of the previous try. */
  webhookRetryDelaysMs: [30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000],
  webhookGiveUpMs: 24 * 3_600_000,
  webhookResendWindowMs: 3 * 24 * 3_600_000,
  webhookDeliveriesListed: 100,
  offlineDelayMs: 10_000,
  tokenMaxLifetimeSeconds: 24 * 3600,
  tokenLeewaySeconds: 300,
  identityInfoBytes: 1024,
  /** `Idempotency-Key`: 1 to 200 printable ASCII characters. */
  idempotencyKeyMaxLength: 200,
  /** How long an emit's answer is kept for a retry with the same Idempotency-Key. */
  idempotencyWindowMs: 5 * 60_000,
  /** User revocations in force per app (each lasts until no token issued before it can be valid). */
  revokedUsersPerApp: 10_000,
} as const;
