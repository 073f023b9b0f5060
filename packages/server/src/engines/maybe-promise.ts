/** What a store call answers: at once (embedded) or later (networked). */
export type MaybePromise<T> = T | Promise<T>;
