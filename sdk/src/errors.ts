// Typed API errors: every answer that is not 2xx becomes a KiloApiError
// holding the server's {code, message, details, requestId}.
import type { ApiError } from "./types.js";

export class KiloApiError extends Error {
  public readonly status: number;
  public readonly body?: ApiError;
  /** Seconds the server asked to wait (Retry-After), when it did. */
  public readonly retryAfter?: number;

  constructor(status: number, body?: ApiError, retryAfter?: number) {
    super(body?.message ?? `API Error (${status})`);
    this.name = "KiloApiError";
    this.status = status;
    this.body = body;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }

  /** The stable snake_case code, or one made from the status when the answer had none. */
  get code(): string {
    return this.body?.code ?? statusCode(this.status);
  }

  /** The request id to quote when asking what went wrong. */
  get requestId(): string | undefined {
    return this.body?.requestId;
  }

  get details(): Record<string, unknown> | undefined {
    return this.body?.details;
  }

  /** Whether the same request may succeed later: rate limits, outages, a lost answer. */
  get retryable(): boolean {
    return this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

export function isKiloApiError(e: unknown): e is KiloApiError {
  return e instanceof KiloApiError;
}

function statusCode(status: number): string {
  if (status === 0) return "network_error";
  if (status === 404) return "not_found";
  if (status === 429) return "rate_limited";
  if (status >= 500) return "server_error";
  return `http_${status}`;
}

/** parseRetryAfter reads a Retry-After header (seconds or an HTTP date) as seconds. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const n = Number(value);
  if (Number.isFinite(n) && n >= 0) return n;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
