// Waiting between tries: exponential backoff with full jitter, a wait the
// server names (Retry-After) taking its place, and sleeps an AbortSignal
// ends at once.

export interface BackoffOptions {
  /** The first wait, in ms (default 500). */
  baseMs?: number;
  /** The longest wait, in ms (default 30 000). */
  maxMs?: number;
}

/** backoffDelay is how long to wait before try number `attempt` + 1 (attempt counts from 1). */
export function backoffDelay(attempt: number, opts: BackoffOptions = {}, retryAfterSeconds?: number): number {
  if (retryAfterSeconds !== undefined) {
    // The server's word, and a little jitter so waiting clients do not return at once.
    return retryAfterSeconds * 1000 + Math.random() * Math.min(1000, retryAfterSeconds * 100 + 100);
  }
  const base = opts.baseMs ?? 500;
  const cap = opts.maxMs ?? 30_000;
  const ceiling = Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** sleep resolves after ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(abortReason(signal!));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}
