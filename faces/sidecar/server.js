// Lightbox's face provider: an HTTP service that finds faces in a JPEG and
// measures their eyes and head angles. It detects only; it never describes,
// recognises or matches a face.
//
//   POST /v1/faces   body: a JPEG (Content-Type: image/jpeg), or the pixels
//                    already decoded as a binary PPM (image/x-portable-pixmap),
//                    which saves decoding them again here
//                    → {width, height, faces: [...], model, tiles, tookMs}
//   GET  /healthz    → 200 once the models are loaded, 503 before
//
// Every route but /healthz needs the shared secret, `Authorization: Bearer
// <ML_SECRET>`, and answers 401 before reading any body without it.
//
// Errors are {code, message} with a matching status. A pool of threads
// (ML_WORKERS, one per core by default) each runs one detection at a time;
// ML_QUEUE more requests may wait, and the next one is refused with 503 and
// Retry-After, so memory stays bounded by the pool, not the load. A request
// takes its place only once its whole body has arrived, so a slow sender
// holds none, and it has ML_BODY_TIMEOUT_MS to send it all.
//
// Settings (environment):
//   ML_SECRET           the callers' shared secret (the workers' FACES_SECRET),
//                       32 characters or more; required unless ML_AUTH=off
//   ML_SECRET_FILE      a file holding it instead (a container's secret)
//   ML_AUTH             secret (default) or off, which serves without one:
//                       only for a sidecar nothing but its callers can reach
//   ML_HOST             127.0.0.1
//   ML_PORT             57080 (0 picks a free port; the port is printed)
//   ML_WORKERS          detection threads, default one per core
//   ML_QUEUE            requests that may wait for a thread, default 2 per thread
//   ML_MAX_BODY_MB      largest body accepted, default 20 (a 2048-pixel
//                       preview is 12.6 MB as a PPM)
//   ML_MAX_MEGAPIXELS   largest image decoded, default 16
//   ML_TILES            auto (default) or off: search large images in tiles too
//   ML_TIMEOUT_MS       longest one detection may run, default 60000
//   ML_BODY_TIMEOUT_MS  longest a request's headers and body may take to
//                       arrive, default 10000 (a 12.6 MB PPM takes
//                       milliseconds on loopback, a second at 100 Mbit/s)
//   ML_THREAD_MEMORY_MB a thread that holds more than this after a detection
//                       is replaced by a fresh one, default 384 (one that
//                       read a 2048-pixel preview holds about 250)
//   ML_THREAD_IDLE_MS   a thread idle this long that holds 64 MB more than
//                       it did fresh is replaced too, default 60000; 0 never

import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { MODEL, defaults } from './faces.js';

function env(name, fallback, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) {
    console.error(`faces: ${name}=${raw} is not a whole number from ${min} to ${max}`);
    process.exit(2);
  }
  return v;
}

const settings = {
  host: process.env.ML_HOST || '127.0.0.1',
  port: env('ML_PORT', 57080, { max: 65535 }),
  workers: env('ML_WORKERS', Math.max(1, os.availableParallelism()), { min: 1, max: 64 }),
  queue: env('ML_QUEUE', -1, { max: 10000 }),
  maxBody: env('ML_MAX_BODY_MB', 20, { min: 1, max: 1024 }) * 1024 * 1024,
  maxMegapixels: env('ML_MAX_MEGAPIXELS', defaults.maxMegapixels, { min: 1, max: 200 }),
  tiles: process.env.ML_TILES || 'auto',
  timeoutMs: env('ML_TIMEOUT_MS', 60000, { min: 100 }),
  bodyTimeoutMs: env('ML_BODY_TIMEOUT_MS', 10000, { min: 100, max: 3600000 }),
  threadMemory: env('ML_THREAD_MEMORY_MB', 384, { min: 64, max: 1 << 20 }) * 1024 * 1024,
  threadIdleMs: env('ML_THREAD_IDLE_MS', 60000),
  secret: process.env.ML_SECRET || '',
  auth: process.env.ML_AUTH || 'secret',
};
if (settings.queue < 0) settings.queue = 2 * settings.workers;
const problems = [];
const secretFile = process.env.ML_SECRET_FILE;
if (secretFile) {
  if (settings.secret) problems.push('ML_SECRET and ML_SECRET_FILE are both set: choose one');
  try {
    settings.secret = readFileSync(secretFile, 'utf8').trim();
    if (!settings.secret) problems.push(`ML_SECRET_FILE: ${secretFile} is empty`);
  } catch (err) {
    problems.push(`ML_SECRET_FILE: ${err.message}`);
  }
}
if (!['auto', 'off'].includes(settings.tiles)) problems.push(`ML_TILES=${settings.tiles} is neither auto nor off`);
if (!['secret', 'off'].includes(settings.auth)) problems.push(`ML_AUTH=${settings.auth} is neither secret nor off`);
if (settings.auth === 'off' && settings.secret) problems.push('ML_AUTH=off and ML_SECRET are both set: choose one');
if (settings.auth === 'secret' && !settings.secret && !secretFile) {
  problems.push('ML_SECRET is not set: give it the workers\' FACES_SECRET, or set ML_AUTH=off to serve without one');
}
if (settings.secret && (settings.secret.length < 32 || !/^[\x21-\x7e]+$/.test(settings.secret))) {
  problems.push('ML_SECRET must be 32 or more printable characters without spaces');
}
if (problems.length) {
  for (const p of problems) console.error(`faces: ${p}`);
  process.exit(2);
}

const log = (...a) => console.error('faces:', ...a);

class HTTPError extends Error {
  constructor(status, code, message, headers = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

// Pool runs detections on worker threads, one at a time per thread, and
// replaces a thread that dies, overruns its time, holds more than memoryCap
// bytes after a detection, or sits idleMs idle holding more than it did
// fresh: a thread's WASM memory only grows, and it is given back to the
// system only when the thread ends.
class Pool {
  constructor(size, workerData, { timeoutMs, memoryCap, idleMs }) {
    this.workerData = workerData;
    this.timeoutMs = timeoutMs;
    this.memoryCap = memoryCap;
    this.idleMs = idleMs;
    this.slots = [];
    this.waiting = [];
    this.nextID = 1;
    this.avgMs = 1000;
    this.loaded = false;
    for (let i = 0; i < size; i++) this.spawn(i);
  }

  ready() {
    return this.slots.filter((s) => s.ready).length;
  }

  busy() {
    return this.slots.filter((s) => s.job).length;
  }

  spawn(i) {
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: this.workerData });
    const slot = { worker, ready: false, job: null };
    this.slots[i] = slot;
    worker.on('message', (msg) => {
      if (msg.type === 'ready') {
        slot.ready = true;
        slot.fresh = msg.memory;
        if (!this.loaded) log(`models loaded: ${MODEL}`);
        this.loaded = true;
        this.dispatch();
      } else if (msg.type === 'failed') {
        // The models did not load: a broken install, not a passing fault.
        log(`a detection thread could not load the models: ${msg.message}`);
        process.exit(1);
      } else if (slot.job && msg.id === slot.job.id) {
        // Marked not ready before finish hands it the next job.
        if (msg.memory > this.memoryCap && !this.closing) this.replace(i, slot, msg.memory);
        this.finish(slot, msg);
        if (!slot.job && !slot.replacing && this.idleMs && msg.memory > slot.fresh + grownBy) {
          slot.idle = setTimeout(() => this.slots[i] === slot && !slot.job && !this.closing && this.replace(i, slot, msg.memory), this.idleMs);
          slot.idle.unref();
        }
      }
    });
    worker.on('error', (err) => log(`detection thread ${i} failed: ${(err && err.stack) || err}`));
    worker.on('exit', (code) => {
      slot.ready = false;
      if (this.closing || this.slots[i] !== slot) return;
      if (slot.replacing) {
        this.spawn(i);
        return;
      }
      if (slot.job) this.finish(slot, { error: { code: 'detection_failed', message: 'The detection thread stopped.' } });
      log(`detection thread ${i} exited (${code}); starting another`);
      setTimeout(() => this.closing || this.spawn(i), 500).unref();
    });
  }

  // replace ends the thread in slot i, which holds `memory` bytes, and
  // starts a fresh one once it has exited: then the new thread takes over
  // the old one's malloc arena rather than adding one.
  replace(i, slot, memory) {
    const mb = (b) => Math.round(b / 1024 / 1024);
    const why = memory > this.memoryCap ? `more than ${mb(this.memoryCap)}` : `${mb(slot.fresh)} fresh, idle`;
    log(`detection thread ${i} holds ${mb(memory)} MB (${why}): replacing it`);
    slot.ready = false;
    slot.replacing = true;
    slot.worker.terminate();
  }

  // run queues one image and resolves with the thread's answer.
  run(body, type, tiles) {
    return new Promise((resolve) => {
      this.waiting.push({ id: this.nextID++, body, type, tiles, resolve });
      this.dispatch();
    });
  }

  dispatch() {
    for (const slot of this.slots) {
      if (!this.waiting.length) return;
      if (!slot.ready || slot.job) continue;
      const job = this.waiting.shift();
      clearTimeout(slot.idle);
      slot.job = job;
      job.started = performance.now();
      job.timer = setTimeout(() => {
        slot.ready = false;
        this.finish(slot, {
          error: { code: 'detection_timeout', message: `Detection took longer than ${this.timeoutMs} ms.` },
        });
        // A thread stuck in WASM cannot be interrupted: replace it.
        slot.worker.terminate();
      }, this.timeoutMs);
      slot.worker.postMessage({ id: job.id, body: job.body, type: job.type, tiles: job.tiles }, [job.body]);
    }
  }

  finish(slot, msg) {
    const job = slot.job;
    if (!job) return;
    clearTimeout(job.timer);
    slot.job = null;
    if (msg.result) this.avgMs = 0.8 * this.avgMs + 0.2 * (performance.now() - job.started);
    job.resolve(msg);
    this.dispatch();
  }

  // retryAfter is a guess, in seconds, of when a thread will be free.
  retryAfter() {
    return Math.max(1, Math.ceil((this.avgMs * (this.waiting.length + 1)) / this.slots.length / 1000));
  }

  async close() {
    this.closing = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}

// A thread that holds this much more than it did fresh is replaced once
// idle; less is not worth loading the models again.
const grownBy = 64 * 1024 * 1024;
const pool = new Pool(settings.workers, { detector: { maxMegapixels: settings.maxMegapixels } }, {
  timeoutMs: settings.timeoutMs,
  memoryCap: settings.threadMemory,
  idleMs: settings.threadIdleMs,
});
// Requests whose body has arrived, not yet answered: at most one per
// thread plus the queue.
let admitted = 0;
const capacity = settings.workers + settings.queue;
// Bytes of the bodies still arriving: at most as many as the admitted
// requests may hold, so that many senders at once cannot fill the memory
// the queue bounds.
let arriving = 0;
const arrivingCap = capacity * settings.maxBody;

function send(res, status, body, headers = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

function fail(res, err) {
  if (!(err instanceof HTTPError)) {
    log(`internal error: ${(err && err.stack) || err}`);
    err = new HTTPError(500, 'internal', 'The face service failed; see its log.');
  }
  send(res, err.status, { code: err.code, message: err.message }, err.headers);
}

// drainLimit is how many bytes of a body too large are read and dropped
// before the refusal is sent: a client still sending when the connection
// closes sees a reset, not the answer.
const drainLimit = 16 * 1024 * 1024;

// readBody reads at most max bytes into one ArrayBuffer of its own (it is
// handed to a thread, not copied). A larger body is read to its end and
// dropped, up to drainLimit more; beyond that the connection is closed.
// Its bytes count in `arriving` until it ends; one that would take that
// past arrivingCap is refused as busy.
function readBody(req, max) {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > max + drainLimit) {
      reject(tooLarge(max, true));
      return;
    }
    const chunks = [];
    let size = 0;
    let held = 0;
    const release = () => {
      arriving -= held;
      held = 0;
    };
    const stop = (err) => {
      req.removeAllListeners('data');
      req.removeAllListeners('end');
      release();
      reject(err);
    };
    req.on('data', (c) => {
      size += c.length;
      if (size <= max) {
        if (arriving + c.length > arrivingCap) {
          stop(busy({ Connection: 'close' }));
          return;
        }
        arriving += c.length;
        held += c.length;
        chunks.push(c);
      } else if (chunks.length) {
        chunks.length = 0;
        release();
      }
      if (size > max + drainLimit) stop(tooLarge(max, true));
    });
    req.on('end', () => {
      release();
      if (size > max) {
        reject(tooLarge(max, false));
        return;
      }
      const out = new Uint8Array(size);
      let at = 0;
      for (const c of chunks) {
        out.set(c, at);
        at += c.length;
      }
      resolve(out.buffer);
    });
    req.on('error', (err) => {
      release();
      reject(err);
    });
    // Cut off (ML_BODY_TIMEOUT_MS) or hung up before the end.
    req.on('close', () => {
      if (req.complete) return;
      release();
      reject(new HTTPError(400, 'incomplete_body', 'The connection closed before the body ended.'));
    });
  });
}

function tooLarge(max, close) {
  return new HTTPError(413, 'body_too_large', `The body is larger than ${max / 1024 / 1024} MB.`, close ? { Connection: 'close' } : {});
}

function busy(headers = {}) {
  return new HTTPError(503, 'busy', 'Every detection thread is busy and the queue is full; retry later.', {
    'Retry-After': String(pool.retryAfter()),
    ...headers,
  });
}

const statusOf = { bad_image: 422, too_many_pixels: 422, detection_timeout: 500, detection_failed: 500 };

async function detectFaces(req, res, url) {
  const type = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  if (type !== 'image/jpeg' && type !== 'image/x-portable-pixmap') {
    throw new HTTPError(
      415,
      'unsupported_media_type',
      'Send the image as a JPEG (Content-Type: image/jpeg) or a binary PPM (image/x-portable-pixmap).',
    );
  }
  const tiles = url.searchParams.get('tiles') || settings.tiles;
  if (!['auto', 'off'].includes(tiles)) throw new HTTPError(400, 'bad_parameter', 'tiles is auto or off.');
  if (!pool.loaded) {
    throw new HTTPError(503, 'starting', 'The face models are still loading.', { 'Retry-After': '2' });
  }
  const body = await readBody(req, settings.maxBody);
  if (body.byteLength === 0) throw new HTTPError(400, 'empty_body', 'The body is empty: send an image.');
  if (admitted >= capacity) throw busy();
  admitted++;
  try {
    const msg = await pool.run(body, type, tiles);
    if (msg.error) throw new HTTPError(statusOf[msg.error.code] || 500, msg.error.code, msg.error.message);
    send(res, 200, msg.result);
  } finally {
    admitted--;
  }
}

// The secret is compared as a SHA-256 digest, in constant time and
// whatever the length of what was sent.
const secretDigest = settings.secret && createHash('sha256').update(settings.secret).digest();

function authorized(req) {
  if (settings.auth === 'off') return true;
  const m = /^Bearer +(\S+) *$/i.exec(req.headers.authorization || '');
  return !!m && timingSafeEqual(createHash('sha256').update(m[1]).digest(), secretDigest);
}

// answering is the response in progress on each connection, for
// clientError to tell whether it may still answer on it.
const answering = new WeakMap();

// The whole request, headers and body, has ML_BODY_TIMEOUT_MS to arrive
// (Node's requestTimeout, checked every connectionsCheckingInterval; a
// request is done with it once its body has arrived). An idle connection
// is kept for a minute, longer than clients keep theirs (the Go client:
// 30 s), so the client is the one to close it, never a request racing the
// close.
const server = http.createServer(
  {
    requestTimeout: settings.bodyTimeoutMs,
    headersTimeout: settings.bodyTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, settings.bodyTimeoutMs >> 2)),
  },
  async (req, res) => {
    answering.set(req.socket, res);
    res.on('finish', () => answering.get(req.socket) === res && answering.delete(req.socket));
    const url = new URL(req.url, 'http://localhost');
    try {
      if (url.pathname === '/healthz') {
        if (req.method !== 'GET' && req.method !== 'HEAD') throw new HTTPError(405, 'method_not_allowed', 'Use GET.', { Allow: 'GET, HEAD' });
        const body = { status: pool.loaded ? 'ok' : 'starting', model: MODEL, workers: settings.workers, ready: pool.ready(), busy: pool.busy(), queued: pool.waiting.length };
        send(res, pool.loaded ? 200 : 503, pool.loaded ? body : { code: 'starting', message: 'The face models are still loading.', ...body });
        return;
      }
      if (!authorized(req)) {
        // Answered at once. A body of a size we would take is then read and
        // dropped, as any refused body is, so that a caller still sending
        // it reads this answer rather than a reset; any other is not read.
        const close = !(Number(req.headers['content-length']) <= settings.maxBody);
        throw new HTTPError(401, 'unauthorized', 'The secret is missing or wrong: send ML_SECRET (the workers\' FACES_SECRET) as Authorization: Bearer <secret>.', {
          'WWW-Authenticate': 'Bearer',
          ...(close && { Connection: 'close' }),
        });
      }
      if (url.pathname === '/v1/faces') {
        if (req.method !== 'POST') throw new HTTPError(405, 'method_not_allowed', 'Use POST with an image body.', { Allow: 'POST' });
        await detectFaces(req, res, url);
        return;
      }
      throw new HTTPError(404, 'not_found', `No route ${req.method} ${url.pathname}.`);
    } catch (err) {
      if (!res.headersSent && !res.destroyed) fail(res, err);
      // A refused body is not read: close the connection instead of draining it.
      if (err instanceof HTTPError && err.headers.Connection === 'close') res.on('finish', () => req.destroy());
    }
  },
);
server.keepAliveTimeout = 61000;

// clientError answers what Node refuses before or while a request arrives
// as Node would, but in the API's shape: 408 body_timeout for a request
// that took longer than ML_BODY_TIMEOUT_MS.
const clientErrors = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'body_timeout', `The request took longer than ${settings.bodyTimeoutMs} ms to arrive.`],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'headers_too_large', 'The request headers are too large.'],
};
server.on('clientError', (err, socket) => {
  const res = answering.get(socket);
  if (socket.writable && !(res && res.headersSent)) {
    const [status, text, code, message] = clientErrors[err.code] || [400, 'Bad Request', 'bad_request', 'The request is not valid HTTP/1.1.'];
    const body = JSON.stringify({ code, message });
    socket.write(
      `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
});

server.on('error', (err) => {
  log(`cannot listen on ${settings.host}:${settings.port}: ${err.message}`);
  process.exit(1);
});
server.listen(settings.port, settings.host, () => {
  const { port } = server.address();
  // The tests read the port from this line.
  console.log(`faces: listening on http://${settings.host}:${port} (${settings.workers} threads, queue ${settings.queue})`);
});

let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: finishing the requests in progress`);
  const deadline = setTimeout(() => process.exit(0), 10000);
  deadline.unref();
  server.close(async () => {
    await pool.close();
    process.exit(0);
  });
  server.closeIdleConnections();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
