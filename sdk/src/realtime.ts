// Live progress over Server-Sent Events: the seed's EventSource wrapper,
// and followEvents, which reads a project's or a batch's stream with
// fetch (Node and browsers alike), as an async iterator or callbacks,
// authenticates with a short-lived stream token, resumes with
// Last-Event-ID (the server answers a state_sync snapshot first when
// events were missed), reconnects with backoff and closes cleanly.
import { abortReason, backoffDelay, sleep, type BackoffOptions } from "./backoff.js";
import type { KiloClient } from "./client.js";
import { isKiloApiError } from "./errors.js";
import type { Batch, FaceSummary, Job, ProjectStats } from "./types.js";

export type RealtimeEvent =
  | { type: "job.progress"; jobId: string; assetId?: string; progress?: number; status?: string; jobType?: string; batchId?: string | null; attempt?: number; error?: { code: string; message: string } | null }
  | { type: "job.done"; jobId: string; status?: string; assetId?: string | null; progress?: number; jobType?: string; batchId?: string | null; attempt?: number; error?: { code: string; message: string } | null }
  | { type: "cluster.updated"; clusterId: string }
  // thumbnail: true when its thumbnail was made ahead of the rest (status unchanged);
  // faces and quality (judged again with them) after a face scan.
  | { type: "asset.updated"; assetId: string; status?: string; errorCode?: string | null; thumbnail?: boolean;
      faces?: FaceSummary; quality?: Record<string, unknown> }
  | { type: "export.updated"; exportId: string; status?: string; progress?: number }
  // Beyond the seed: a batch's counts as its jobs end, and the snapshot
  // a resumed stream starts with.
  | { type: "batch.updated" | "batch.completed"; id: string; status: string; total: number; completed: number; failed: number }
  | { type: "state_sync"; stats: ProjectStats; batches: Batch[]; jobs?: Job[] }
  | { type: "unknown"; raw: any };

export interface RealtimeOptions {
  baseUrl: string; // e.g. https://api.kilo.photo/v1
  projectId: string;
  accessToken?: string;
  lastEventId?: string;
  onEvent: (ev: RealtimeEvent) => void;
  onError?: (err: any) => void;
}

const eventNames = ["job.progress", "job.done", "cluster.updated", "asset.updated", "export.updated",
  "batch.updated", "batch.completed", "state_sync"] as const;

/**
 * Browser: use EventSource (cannot set headers), so pass token as query param or cookie session.
 * Desktop (Electron): can use fetch streaming with headers if you want.
 */
export function connectSSE(opts: RealtimeOptions): EventSource {
  if (typeof EventSource === "undefined") {
    throw new Error("connectSSE needs EventSource (a browser); use followEvents elsewhere");
  }
  const url = new URL(`${opts.baseUrl.replace(/\/+$/, "")}/realtime`);
  url.searchParams.set("projectId", opts.projectId);
  if (opts.lastEventId) url.searchParams.set("lastEventId", opts.lastEventId);
  if (opts.accessToken) url.searchParams.set("accessToken", opts.accessToken); // alternative: cookie auth

  const es = new EventSource(url.toString());
  for (const name of eventNames) {
    es.addEventListener(name, (e: MessageEvent) => opts.onEvent(toEvent(name, e.data)));
  }
  es.onerror = (err) => opts.onError?.(err);
  return es;
}

// ---- followEvents ----------------------------------------------------------

export interface FollowOptions {
  /** The project whose events to follow; or batchId. */
  projectId?: string;
  /** The batch whose events to follow (its jobs, its counts). */
  batchId?: string;
  /** Resume after this event id: events missed since come as one state_sync first. */
  lastEventId?: string;
  /**
   * Authenticate with a stream token from POST /v1/realtime/tokens in the
   * URL (default), as EventSource must; false sends the client's own
   * Authorization header.
   */
  streamToken?: boolean;
  /** Closes the stream for good. */
  signal?: AbortSignal;
  onEvent?: (ev: RealtimeEvent, meta: { id?: string }) => void;
  /** Each connection that opened. */
  onOpen?: (info: { connects: number; lastEventId?: string }) => void;
  /** Each connection that failed or ended; a reconnect follows unless the error is final. */
  onError?: (err: unknown) => void;
  /** Waits between reconnects (a Retry-After from the server wins). */
  backoff?: BackoffOptions;
  /** Reconnects in a row without an event before giving up (default: no limit). */
  maxReconnects?: number;
  /** Events kept for an iterator that reads slower than they come (default 10 000; the oldest go first). */
  buffer?: number;
}

/** A followed stream: iterate it, or pass onEvent; close() ends it. */
export class RealtimeStream implements AsyncIterable<RealtimeEvent> {
  /** The id of the last event received; a new connection resumes after it. */
  lastEventId: string | undefined;
  /** How many times a connection opened. */
  connects = 0;
  /** The error that stopped the stream for good, if one did. */
  error: unknown;
  /** Resolves once the stream has stopped (closed, or a final error). */
  readonly done: Promise<void>;

  private readonly controller = new AbortController();
  private readonly queue: RealtimeEvent[] = [];
  private readonly waiting: Array<() => void> = [];
  private stopped = false;

  constructor(private readonly client: KiloClient, private readonly opts: FollowOptions) {
    if (!opts.projectId === !opts.batchId) throw new Error("followEvents needs a projectId or a batchId");
    this.lastEventId = opts.lastEventId;
    opts.signal?.addEventListener("abort", () => this.close(), { once: true });
    this.done = this.run().finally(() => {
      this.stopped = true;
      this.wake();
    });
  }

  /** close ends the stream: the connection is dropped and iterators finish. */
  close(): void {
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RealtimeEvent> {
    for (;;) {
      const ev = this.queue.shift();
      if (ev) {
        yield ev;
        continue;
      }
      if (this.stopped) {
        if (this.error !== undefined) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private wake(): void {
    for (const w of this.waiting.splice(0)) w();
  }

  private deliver(ev: RealtimeEvent, id?: string): void {
    if (id) this.lastEventId = id;
    const max = this.opts.buffer ?? 10_000;
    this.queue.push(ev);
    if (this.queue.length > max) this.queue.shift();
    this.wake();
    this.opts.onEvent?.(ev, id ? { id } : {});
  }

  private path(token?: string): string {
    const q = new URLSearchParams();
    let path: string;
    if (this.opts.batchId) {
      path = `/batches/${encodeURIComponent(this.opts.batchId)}/events`;
    } else {
      path = "/realtime";
      q.set("projectId", this.opts.projectId!);
    }
    if (token) q.set("accessToken", token);
    const s = q.toString();
    return s ? `${path}?${s}` : path;
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    let failures = 0;
    while (!signal.aborted) {
      let retryAfter: number | undefined;
      try {
        const token = this.opts.streamToken === false ? undefined : (await this.client.createStreamToken({ signal })).token;
        const headers: Record<string, string> = {};
        if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
        const res = await this.client.stream(this.path(token), { headers, signal });
        this.connects++;
        this.opts.onOpen?.({ connects: this.connects, ...(this.lastEventId ? { lastEventId: this.lastEventId } : {}) });
        await readEvents(res, (name, data, id) => {
          failures = 0;
          this.deliver(toEvent(name, data), id);
        }, signal);
        if (signal.aborted) break;
        throw new Error("the event stream ended");
      } catch (err) {
        if (signal.aborted) break;
        if (isKiloApiError(err)) {
          // A refusal that waiting cannot change ends the stream; a stream
          // token that expired between asking and connecting gets one
          // more try with a new one.
          const staleToken = err.status === 401 && this.opts.streamToken !== false && failures === 0;
          if (!err.retryable && !staleToken) {
            this.error = err;
            this.opts.onError?.(err);
            return;
          }
          retryAfter = err.retryAfter;
        }
        this.opts.onError?.(err);
      }
      failures++;
      if (failures > (this.opts.maxReconnects ?? Infinity)) {
        this.error = new Error(`gave up after ${failures} failed connections`);
        return;
      }
      try {
        await sleep(backoffDelay(failures, this.opts.backoff ?? { baseMs: 250, maxMs: 15_000 }, retryAfter), signal);
      } catch {
        break;
      }
    }
  }
}

/**
 * followEvents follows a project's or a batch's events until closed:
 *
 *   const events = followEvents(client, { batchId });
 *   for await (const ev of events) if (ev.type === "batch.completed") events.close();
 */
export function followEvents(client: KiloClient, opts: FollowOptions): RealtimeStream {
  return new RealtimeStream(client, opts);
}

// readEvents parses an SSE body, calling emit for each event, until the
// body ends or signal aborts.
async function readEvents(res: Response, emit: (name: string, data: string, id?: string) => void, signal: AbortSignal): Promise<void> {
  if (!res.body) throw new Error("the event stream has no body");
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const onAbort = () => { reader.cancel(abortReason(signal)).catch(() => {}); };
  signal.addEventListener("abort", onAbort, { once: true });
  let buf = "";
  let name = "", data: string[] = [], id: string | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl: number;
      while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length || name) emit(name || "message", data.join("\n"), id);
          name = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue; // a heartbeat
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") name = val;
        else if (field === "data") data.push(val);
        else if (field === "id" && !val.includes("\0")) id = val;
      }
    }
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

function toEvent(name: string, raw: string): RealtimeEvent {
  const data = safeParse(raw);
  if ((eventNames as readonly string[]).includes(name) && data && typeof data === "object" && !Array.isArray(data)) {
    return { type: name, ...data } as RealtimeEvent;
  }
  return { type: "unknown", raw: { event: name, data } };
}

function safeParse(s: string): any {
  try { return JSON.parse(s); } catch { return { raw: s }; }
}
