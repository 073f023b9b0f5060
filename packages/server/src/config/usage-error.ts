/** A bad flag, argument or config file: the CLI prints its message on one line and exits 2. */
export class UsageError extends Error {}
