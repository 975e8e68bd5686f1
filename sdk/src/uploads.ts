// Uploads straight to storage on signed URLs. The seed's two helpers PUT
// prepared files; uploadFiles does the whole flow for many files: SHA-256
// of each (Web Crypto), prepare in chunks, PUT with bounded concurrency,
// retries with jittered backoff and Retry-After, a new URL when one
// expired, finalize, progress in bytes and files, an AbortSignal, and a
// result that names each failed file with its code.
import { backoffDelay, sleep, type BackoffOptions } from "./backoff.js";
import type { KiloClient } from "./client.js";
import { isKiloApiError, KiloApiError, parseRetryAfter } from "./errors.js";
import type { FinalizeUploadResponse, UploadInstruction, UUID } from "./types.js";

export interface UploadResult {
  assetId: UUID;
  ok: boolean;
  status: number;
}

export async function uploadToSignedUrl(
  instr: UploadInstruction,
  file: Blob,
  fetchImpl: typeof fetch = fetch
): Promise<UploadResult> {
  const res = await fetchImpl(instr.uploadUrl, {
    method: "PUT",
    headers: {
      ...(instr.headers ?? {}),
      // Some S3-style signed URLs require exact headers, so don't add extra unless needed.
    },
    body: file,
  });
  await res.body?.cancel();

  return { assetId: instr.assetId, ok: res.ok, status: res.status };
}

// Optional: concurrency-limited bulk uploader
export async function uploadMany(
  items: Array<{ instr: UploadInstruction; file: Blob }>,
  opts?: { concurrency?: number; fetchImpl?: typeof fetch; onProgress?: (done: number, total: number) => void }
): Promise<UploadResult[]> {
  const fetchImpl = opts?.fetchImpl ?? fetch;
  const total = items.length;
  let done = 0;
  const results: UploadResult[] = [];
  await pool(items, opts?.concurrency ?? 4, async (next) => {
    const r = await uploadToSignedUrl(next.instr, next.file, fetchImpl);
    results.push(r);
    done++;
    opts?.onProgress?.(done, total);
  });
  return results;
}

// ---- uploadFiles -----------------------------------------------------------

/** A file to upload: a browser File, or any Blob with its name. */
export type UploadSource = File | { name: string; blob: Blob; contentType?: string; capturedAt?: string | null };

export interface UploadProgress {
  bytesSent: number;
  bytesTotal: number;
  /** Files finalized (uploaded, or found to be duplicates). */
  filesDone: number;
  filesFailed: number;
  filesTotal: number;
}

export interface UploadedFile {
  name: string;
  assetId: UUID;
  status: "uploaded" | "duplicate";
  /** The asset that already holds the same bytes, for a duplicate. */
  duplicateOf?: UUID;
  batchId?: UUID | null;
  checksumSha256: string;
}

export type UploadStage = "read" | "prepare" | "upload" | "finalize";

export interface FailedFile {
  name: string;
  /** The server's snake_case code, or network_error, read_failed, url_expired. */
  code: string;
  message: string;
  stage: UploadStage;
  assetId?: UUID;
  requestId?: string;
}

export interface UploadFilesResult {
  uploaded: UploadedFile[];
  failed: FailedFile[];
  /**
   * The XMP sidecars among the sources (NAME.xmp or NAME.EXT.xmp), each put
   * to its photo's asset once the photo is uploaded, or skipped with why
   * (no photo, too large, refused). They are never uploaded as photos.
   */
  sidecars: SidecarOutcome[];
  /** The batches the finalize calls started, one per chunk. */
  batchIds: UUID[];
  queuedJobs: UUID[];
}

export interface SidecarOutcome {
  name: string;
  /** The photo it went with. */
  photo?: string;
  assetId?: UUID;
  applied: boolean;
  /** The server's warnings, or why it was skipped. */
  warnings: string[];
}

export interface UploadFilesOptions {
  /** PUTs at once (default 4). */
  concurrency?: number;
  /** Files per prepare and finalize call (default 100; the server takes up to 1,000). */
  chunkSize?: number;
  /** Tries of one PUT before its file fails (default 5). */
  maxAttempts?: number;
  /** New URLs for one file when its URL expired before the bytes went (default 3). */
  maxReprepares?: number;
  backoff?: BackoffOptions;
  signal?: AbortSignal;
  onProgress?: (p: UploadProgress) => void;
  /** Each file as it ends, uploaded or failed. */
  onFile?: (f: UploadedFile | FailedFile) => void;
  /** Each chunk's finalize answer, as soon as it comes: its batchId can be followed at once. */
  onBatch?: (answer: FinalizeUploadResponse) => void;
  /** For the PUTs to storage (the API calls use the client's). */
  fetchImpl?: typeof fetch;
}

interface Entry {
  name: string;
  blob: Blob;
  contentType?: string;
  capturedAt?: string | null;
  sha?: string;
  instr?: UploadInstruction;
  reprepares: number;
}

/**
 * uploadFiles uploads files into a project and finalizes them. It resolves
 * with what became of every file once all have ended, and rejects only when
 * the signal aborts (with its reason) or the project cannot take files at
 * all (a KiloApiError).
 */
export async function uploadFiles(client: KiloClient, projectId: UUID, sources: Iterable<UploadSource>, opts: UploadFilesOptions = {}): Promise<UploadFilesResult> {
  const signal = opts.signal;
  const all: Entry[] = [...sources].map((s) => (isBlobWithName(s)
    ? { name: s.name, blob: s, ...(s.type ? { contentType: s.type } : {}), reprepares: 0 }
    : { name: s.name, blob: s.blob, ...(s.contentType ?? s.blob.type ? { contentType: s.contentType ?? s.blob.type } : {}), capturedAt: s.capturedAt ?? null, reprepares: 0 }));
  const sidecars = all.filter((e) => isSidecar(e.name));
  const entries = all.filter((e) => !isSidecar(e.name));
  const result: UploadFilesResult = { uploaded: [], failed: [], sidecars: [], batchIds: [], queuedJobs: [] };
  const progress: UploadProgress = {
    bytesSent: 0, bytesTotal: entries.reduce((n, e) => n + e.blob.size, 0),
    filesDone: 0, filesFailed: 0, filesTotal: entries.length,
  };
  const tell = () => opts.onProgress?.({ ...progress });
  const fail = (e: Entry, stage: UploadStage, err: unknown) => {
    const f: FailedFile = { name: e.name, stage, ...describe(err) };
    if (e.instr) f.assetId = e.instr.assetId;
    result.failed.push(f);
    progress.filesFailed++;
    opts.onFile?.(f);
    tell();
  };
  const put = new Putter(opts);
  let chunkSize = Math.max(1, Math.min(opts.chunkSize ?? 100, 1000));

  tell();
  for (let start = 0; start < entries.length;) {
    signal?.throwIfAborted();
    const chunk = entries.slice(start, start + chunkSize);
    // 1. Checksums, a few files at a time (each is read whole).
    const readable: Entry[] = [];
    await pool(chunk, opts.concurrency ?? 4, async (e) => {
      try {
        e.sha = await sha256Hex(e.blob);
        readable.push(e);
      } catch (err) {
        signal?.throwIfAborted();
        fail(e, "read", Object.assign(new Error(`the file cannot be read: ${String(err)}`), { code: "read_failed" }));
      }
    });
    readable.sort((a, b) => chunk.indexOf(a) - chunk.indexOf(b));
    // 2. Upload URLs.
    let prepared: Entry[];
    try {
      prepared = await prepare(client, projectId, readable, signal, fail);
    } catch (err) {
      if (isKiloApiError(err) && err.status === 429 && err.details?.maxAtOnce && chunkSize > 1) {
        chunkSize = Math.max(1, Math.min(chunkSize - 1, Number(err.details.maxAtOnce)));
        continue; // the same files again, fewer at a time
      }
      throw err;
    }
    start += chunk.length;
    // 3. The bytes.
    const sent: Entry[] = [];
    await pool(prepared, opts.concurrency ?? 4, async (e) => {
      const err = await put.send(e, () => prepareAgain(client, projectId, e, opts.maxReprepares ?? 3, signal));
      if (err) {
        signal?.throwIfAborted();
        fail(e, "upload", err);
        return;
      }
      progress.bytesSent += e.blob.size;
      sent.push(e);
      tell();
    });
    if (!sent.length) continue;
    sent.sort((a, b) => chunk.indexOf(a) - chunk.indexOf(b));
    // 4. Finalize.
    let answer: FinalizeUploadResponse;
    try {
      answer = await client.finalizeUpload(projectId, {
        assets: sent.map((e) => ({ assetId: e.instr!.assetId, checksumSha256: e.sha!, ...(e.contentType ? { contentType: e.contentType } : {}) })),
      }, { idempotencyKey: randomKey(), ...(signal ? { signal } : {}) });
    } catch (err) {
      signal?.throwIfAborted();
      for (const e of sent) fail(e, "finalize", err);
      continue;
    }
    opts.onBatch?.(answer);
    if (answer.batchId) result.batchIds.push(answer.batchId);
    result.queuedJobs.push(...answer.queuedJobs);
    const byAsset = new Map((answer.assets ?? []).map((a) => [a.assetId, a]));
    for (const e of sent) {
      const a = byAsset.get(e.instr!.assetId);
      if (a && (a.status === "uploaded" || a.status === "duplicate")) {
        const done: UploadedFile = { name: e.name, assetId: a.assetId, status: a.status, batchId: answer.batchId ?? null, checksumSha256: e.sha! };
        if (a.duplicateOf) done.duplicateOf = a.duplicateOf;
        result.uploaded.push(done);
        progress.filesDone++;
        opts.onFile?.(done);
        tell();
      } else {
        const why = a?.error ?? { code: a ? a.status : "not_finalized", message: "The server did not accept the file." };
        fail(e, "finalize", Object.assign(new Error(why.message), { code: why.code }));
      }
    }
  }
  await putSidecars(client, sidecars, result, signal);
  return result;
}

/** The largest sidecar the server takes, in bytes. */
const maxSidecar = 1 << 20;

function isSidecar(name: string): boolean {
  return /\.xmp$/i.test(name);
}

function stem(name: string): string {
  const dot = name.lastIndexOf(".");
  return (dot > 0 ? name.slice(0, dot) : name).toLowerCase();
}

// putSidecars pairs each sidecar with the uploaded photos it belongs to,
// as the command-line upload does: NAME.EXT.xmp with NAME.EXT, NAME.xmp
// with every photo named NAME.* (a raw and its JPEG) that has no
// NAME.EXT.xmp of its own; names match in any case. A duplicate's sidecar
// goes to the asset that holds its bytes.
async function putSidecars(client: KiloClient, sidecars: Entry[], result: UploadFilesResult, signal?: AbortSignal): Promise<void> {
  const byPhoto = new Map<UploadedFile, Entry>();
  const loose: Entry[] = [];
  for (const s of sidecars) {
    const own = result.uploaded.filter((u) => u.name.toLowerCase() === stem(s.name));
    for (const u of own) byPhoto.set(u, s);
    if (!own.length) loose.push(s);
  }
  const unpaired = new Set(loose);
  for (const s of loose) {
    for (const u of result.uploaded) {
      if (stem(u.name) === stem(s.name) && !byPhoto.has(u)) {
        byPhoto.set(u, s);
        unpaired.delete(s);
      }
    }
  }
  for (const s of unpaired) result.sidecars.push({ name: s.name, applied: false, warnings: ["no photo"] });
  for (const [u, s] of byPhoto) {
    signal?.throwIfAborted();
    const assetId = u.duplicateOf ?? u.assetId;
    const out: SidecarOutcome = { name: s.name, photo: u.name, assetId, applied: false, warnings: [] };
    if (s.blob.size > maxSidecar) {
      out.warnings.push(`larger than ${maxSidecar} bytes`);
    } else {
      try {
        const ans = await client.putSidecar(assetId, s.blob, signal ? { signal } : undefined);
        out.applied = ans.applied;
        out.warnings = ans.warnings;
      } catch (err) {
        signal?.throwIfAborted();
        out.warnings.push(describe(err).message);
      }
    }
    result.sidecars.push(out);
  }
}

// prepare asks for URLs for entries. A file the server refuses alone (its
// name, size or type: details.fields names files[i]) fails, and the rest
// are asked for again.
async function prepare(client: KiloClient, projectId: UUID, entries: Entry[], signal: AbortSignal | undefined,
  fail: (e: Entry, stage: UploadStage, err: unknown) => void): Promise<Entry[]> {
  let left = entries;
  while (left.length) {
    try {
      const ans = await client.prepareUpload(projectId, {
        files: left.map((e, i) => ({
          clientFileId: String(i), filename: e.name, byteSize: e.blob.size,
          ...(e.contentType ? { contentType: e.contentType } : {}),
          ...(e.capturedAt ? { capturedAt: e.capturedAt } : {}),
        })),
      }, { idempotencyKey: randomKey(), ...(signal ? { signal } : {}) });
      for (const u of ans.uploads) {
        const e = left[Number(u.clientFileId)];
        if (!e) throw new Error(`prepareUpload answered an unknown clientFileId ${u.clientFileId}`);
        e.instr = u;
      }
      return left.filter((e) => e.instr);
    } catch (err) {
      const bad = isKiloApiError(err) && (err.status === 400 || err.status === 415) ? fileFields(err) : new Map<number, string>();
      if (!bad.size) throw err;
      for (const [i, msg] of bad) {
        const e = left[i];
        if (e) fail(e, "prepare", Object.assign(new Error(msg), { code: (err as KiloApiError).code, requestId: (err as KiloApiError).requestId }));
      }
      left = left.filter((_, i) => !bad.has(i));
    }
  }
  return [];
}

// prepareAgain gives an entry a new URL (and a new asset: the server drops
// the old one once its URL has expired).
async function prepareAgain(client: KiloClient, projectId: UUID, e: Entry, max: number, signal?: AbortSignal): Promise<void> {
  if (++e.reprepares > max) {
    throw Object.assign(new Error(`the upload URL expired ${max} times before the file could be sent`), { code: "url_expired" });
  }
  delete e.instr;
  let refused: unknown;
  const [again] = await prepare(client, projectId, [e], signal, (_e, _stage, err) => { refused = err; });
  if (!again) throw refused ?? new Error("prepareUpload gave no URL");
}

function fileFields(err: KiloApiError): Map<number, string> {
  const out = new Map<number, string>();
  const fields = (err.details?.fields ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(fields)) {
    const m = /^files\[(\d+)\]\.(\w+)$/.exec(k);
    if (m) out.set(Number(m[1]), `${out.get(Number(m[1])) ?? ""}${m[2]} ${String(v)}. `.trim());
  }
  return out;
}

// Putter sends bytes to signed URLs. A 429 holds every PUT until its
// Retry-After has passed, since the budget is the user's, not the file's.
class Putter {
  private heldUntil = 0;
  constructor(private readonly opts: UploadFilesOptions) {}

  /** send PUTs e's bytes; it answers the error that failed the file, or undefined. */
  async send(e: Entry, renew: () => Promise<void>): Promise<unknown> {
    const signal = this.opts.signal;
    const fetchImpl = this.opts.fetchImpl ?? ((input, init) => fetch(input, init));
    const max = this.opts.maxAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const hold = this.heldUntil - Date.now();
      if (hold > 0) await sleep(hold, signal);
      try {
        // A URL this close to its end is not worth starting on.
        const expires = e.instr?.expiresAt ? Date.parse(e.instr.expiresAt) : NaN;
        if (!e.instr || expires - Date.now() < 5_000) await renew();
      } catch (err) {
        signal?.throwIfAborted();
        return err;
      }
      let err: unknown;
      try {
        const res = await fetchImpl(e.instr!.uploadUrl, { method: "PUT", headers: { ...(e.instr!.headers ?? {}) }, body: e.blob, ...(signal ? { signal } : {}) });
        if (res.ok) {
          await res.body?.cancel();
          return undefined;
        }
        err = await storageError(res);
      } catch (caught) {
        signal?.throwIfAborted();
        err = Object.assign(new Error(String((caught as Error)?.message ?? caught)), { code: "network_error" });
      }
      const code = (err as { code?: string }).code;
      const status = (err as KiloApiError).status ?? 0;
      if (code === "already_finalized") return undefined;
      if (code === "url_expired" || status === 404) {
        delete e.instr; // a new URL on the next turn
        attempt--;
        continue;
      }
      const retryable = status === 0 || status === 408 || status === 429 || status >= 500;
      if (!retryable || attempt >= max) return err;
      const retryAfter = (err as KiloApiError).retryAfter;
      const pause = backoffDelay(attempt, this.opts.backoff, retryAfter);
      if (status === 429) this.heldUntil = Math.max(this.heldUntil, Date.now() + pause);
      await sleep(pause, signal);
    }
  }
}

// storageError reads a refused PUT: Lightbox's own JSON error, or an S3
// XML one.
async function storageError(res: Response): Promise<KiloApiError> {
  const text = await res.text().catch(() => "");
  const retryAfter = parseRetryAfter(res.headers.get("Retry-After"));
  try {
    const body = JSON.parse(text);
    if (body && typeof body.code === "string") return new KiloApiError(res.status, body, retryAfter);
  } catch { /* not JSON */ }
  const s3 = /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]+)<\/Message>/.exec(text)?.[1] ?? (text.slice(0, 200) || `storage answered ${res.status}`);
  let code = s3 ? s3.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase() : `http_${res.status}`;
  if (res.status === 403 && /expired/i.test(message)) code = "url_expired";
  return new KiloApiError(res.status, { code, message }, retryAfter);
}

function describe(err: unknown): { code: string; message: string; requestId?: string } {
  if (isKiloApiError(err)) return { code: err.code, message: err.message, ...(err.requestId ? { requestId: err.requestId } : {}) };
  const e = err as { code?: unknown; message?: unknown; requestId?: unknown };
  return {
    code: typeof e?.code === "string" ? e.code : "failed",
    message: typeof e?.message === "string" ? e.message : String(err),
    ...(typeof e?.requestId === "string" ? { requestId: e.requestId } : {}),
  };
}

function isBlobWithName(s: UploadSource): s is File {
  return typeof Blob !== "undefined" && s instanceof Blob;
}

/** sha256Hex is the SHA-256 of a file's bytes in lowercase hex, by Web Crypto. */
export async function sha256Hex(blob: Blob): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function randomKey(): string {
  return crypto.randomUUID();
}

// pool runs work on every item, at most n at once; the first error stops
// new work and is thrown once the running work has ended.
async function pool<T>(items: T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const runners = Array.from({ length: Math.max(1, Math.min(n, items.length)) }, async () => {
    while (!failure && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  });
  await Promise.all(runners);
  if (failure) throw failure.err;
}

