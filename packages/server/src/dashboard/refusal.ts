/** A refusal of the dashboard: its codes are its own, in the API's error shape (docs/dashboard.md). */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}
