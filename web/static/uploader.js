// The upload engine: hashes files in Web Workers, prepares them in chunks,
// PUTs the bytes straight to the signed URLs with adaptive concurrency and
// retries, and finalizes them in chunks. It writes each file's progress
// into the project's model; the page draws from there.
//
// Flow control, in short:
//   - concurrency starts at 4 parallel PUTs, halves on an error, and grows
//     by one after a window's worth of successes with no error for 5 s;
//   - transient errors (network, 5xx, 408, 429) are retried with
//     exponential backoff and jitter; a 429 waits Retry-After plus jitter
//     and holds every new request until then;
//   - a 403 url_expired (or a bucket's own 403) prepares the file again
//     for a fresh URL; a bucket's 412 means the bytes already arrived;
//   - files are prepared just in time (chunks sized to about two minutes of
//     uploading, at most 1,000), so URLs rarely expire unused.
//
// XMP sidecars chosen with the photos are paired with them by name, as
// `lightbox upload` pairs them (uploader/sidecars.go), and PUT to their
// photo's asset once its upload is finalized.

import { api, newKey, sleep, waitFor, ApiError } from './api.js';
import { announce, plural } from './ui.js';

// TYPES are the originals the service takes, by the content type recorded
// for each, with the other types browsers send for them and their
// extensions, as the server's format table serves them (formats.json).
// Browsers send an empty type or application/octet-stream for raws and
// often for HEIC, so the extension decides then.
const FORMATS = await fetch(new URL('./formats.json', import.meta.url)).then((r) => {
  if (!r.ok) throw new Error(`formats.json: ${r.status}`);
  return r.json();
});
const TYPES = Object.fromEntries(FORMATS.types.map((f) => [f.contentType, { exts: f.extensions, alias: f.aliases ?? [] }]));

// FORMAT_NAMES says which files are taken, for people.
export const FORMAT_NAMES = `${FORMATS.names}, with their XMP sidecars`;

// ACCEPT is the file picker's accept list: every type and extension, and
// the sidecars.
export const ACCEPT = Object.entries(TYPES)
  .flatMap(([t, { exts, alias = [] }]) => [t, ...alias, ...exts])
  .concat('.xmp')
  .join(',');

// MAX_SIDECAR is the largest XMP sidecar the server takes (xmp.MaxPacket).
const MAX_SIDECAR = 1 << 20;

// SIDECARS_AT_ONCE bounds the sidecar PUTs in flight: they are small, and
// share the API's rate budget with the page.
const SIDECARS_AT_ONCE = 2;

// isSidecar says whether a file is an XMP sidecar: NAME.xmp, as Lightroom
// and Bridge name it, or NAME.EXT.xmp, as darktable and digiKam do.
const isSidecar = (name) => /\.xmp$/i.test(name);

// folderOf is the folder part of a chosen file's path, '' for a file
// chosen on its own; stemOf is a name without its last extension.
const folderOf = (path) => path.slice(0, path.lastIndexOf('/') + 1);
function stemOf(name) {
  const dot = name.lastIndexOf('.');
  return dot >= 0 ? name.slice(0, dot) : name;
}

// BY_TYPE and BY_EXT find a file's content type by what the browser says
// it is, or else by its name's extension.
const BY_TYPE = new Map();
const BY_EXT = new Map();
for (const [t, { exts, alias = [] }] of Object.entries(TYPES)) {
  for (const x of [t, ...alias]) if (!BY_TYPE.has(x)) BY_TYPE.set(x, t);
  for (const e of exts) if (!BY_EXT.has(e.toLowerCase())) BY_EXT.set(e.toLowerCase(), t);
}

export function typeOf(file) {
  const t = BY_TYPE.get(file.type);
  if (t) return t;
  const name = file.name.toLowerCase();
  const dot = name.lastIndexOf('.');
  return (dot >= 0 && BY_EXT.get(name.slice(dot))) || '';
}

// SLICE_MS is the longest the uploader takes the page's thread for at a
// time while it reads the files chosen.
const SLICE_MS = 10;

// yieldToPage lets the page draw and answer input before going on.
function yieldToPage() {
  if (globalThis.scheduler && scheduler.yield) return scheduler.yield();
  return new Promise((resolve) => setTimeout(resolve, 0));
}

const MAX_ATTEMPTS = 8;
const MAX_CHUNK = 1000;
const STALL_MS = 60000;

// Window is the number of PUTs in flight: additive increase, multiplicative
// decrease, like TCP's congestion window.
class Window {
  constructor(start = 4, min = 1, max = 16) {
    this.size = start;
    this.min = min;
    this.max = max;
    this.streak = 0;
    this.lastCut = 0;
  }

  success() {
    this.streak++;
    if (this.streak >= this.size && Date.now() - this.lastCut > 5000 && this.size < this.max) {
      this.size++;
      this.streak = 0;
    }
  }

  failure() {
    this.size = Math.max(this.min, Math.floor(this.size / 2));
    this.streak = 0;
    this.lastCut = Date.now();
  }
}

// HashPool spreads SHA-256 work over a few Web Workers.
class HashPool {
  constructor(onDone) {
    this.onDone = onDone;
    const n = Math.max(1, Math.min(4, Math.floor((navigator.hardwareConcurrency || 2) / 2)));
    this.queue = [];
    this.head = 0;
    this.pending = new Map();
    this.idle = [];
    for (let i = 0; i < n; i++) {
      const w = new Worker(new URL('./hash-worker.js', import.meta.url), { type: 'module' });
      w.onmessage = (e) => this.done(w, e.data);
      w.onerror = (e) => {
        e.preventDefault();
        this.done(w, { id: w.busyWith, error: e.message || 'The hashing worker failed.' });
      };
      this.idle.push(w);
    }
  }

  add(row) {
    this.queue.push(row);
    this.next();
  }

  next() {
    while (this.idle.length && this.head < this.queue.length) {
      const row = this.queue[this.head++];
      if (row.sha || row.local === 'failed' || !row.file) continue;
      const w = this.idle.pop();
      w.busyWith = row.key;
      this.pending.set(row.key, row);
      w.postMessage({ id: row.key, file: row.file });
    }
    if (this.head > 1000 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  done(w, msg) {
    const row = this.pending.get(msg.id);
    this.pending.delete(msg.id);
    w.busyWith = null;
    this.idle.push(w);
    if (row) this.onDone(row, msg.sha, msg.error);
    this.next();
  }
}

export class Uploader extends EventTarget {
  constructor(model) {
    super();
    this.model = model;
    this.base = `/v1/projects/${model.projectId}/assets`;
    this.window = new Window();
    this.prepareQ = [];
    this.readyQ = [];
    this.finalizeQ = [];
    this.active = 0;
    this.preparing = false;
    this.finalizing = 0;
    this.holdUntil = 0;
    this.chunkCap = MAX_CHUNK; // lowered when one chunk is more than the rate budget holds
    this.seen = new Map(); // a chosen photo's path, size and time → its row
    this.seenSidecars = new Set(); // the same of the sidecars paired
    this.sidecarQ = []; // {s, assetId}: sidecars whose photo is uploaded
    this.sidecarsActive = 0;
    this.sidecarNotes = []; // what went wrong with sidecars, for people
    this.adding = 0; // add calls whose files are not all rows yet
    this.added = Promise.resolve(); // the last of them
    this.hasher = new HashPool((row, sha, error) => this.hashed(row, sha, error));
    this.stopped = '';
    this.flushTimer = null;
    this.soon = null; // pumpSoon's timer
  }

  // busy is true while any file is still on its way up.
  get busy() {
    return this.prepareQ.length + this.readyQ.length + this.finalizeQ.length + this.active + this.finalizing + this.adding +
      this.sidecarQ.length + this.sidecarsActive > 0 || this.preparing;
  }

  // add queues files ({file, path}); it resolves to what it skipped and
  // why. The files become rows a slice at a time, in the order chosen,
  // yielding to the page between slices: a browser answers the first
  // question about a chosen file's size with a synchronous call, about a
  // millisecond, so choosing thousands at once must not ask them all in
  // one task. The XMP sidecars among them are paired with the photos once
  // all are rows.
  add(entries) {
    const skipped = [];
    this.adding++;
    const added = this.added.then(async () => {
      const photos = new Map(); // folder → [{name, row}] of the photos chosen in it
      const sidecars = [];
      let i = 0;
      while (i < entries.length) {
        const until = performance.now() + SLICE_MS;
        for (; i < entries.length && performance.now() < until; i++) {
          const entry = entries[i];
          if (entry.file.name.startsWith('.')) continue; // .DS_Store, ._IMG_0001.xmp and the like
          if (isSidecar(entry.file.name)) {
            this.sidecarOne(entry, sidecars, skipped);
            continue;
          }
          const row = this.addOne(entry, skipped);
          if (!row) continue;
          const folder = folderOf(entry.path || entry.file.name);
          if (!photos.has(folder)) photos.set(folder, []);
          photos.get(folder).push({ name: entry.file.name, row });
        }
        this.model.changed();
        this.pump();
        if (i < entries.length) await yieldToPage();
      }
      this.pairSidecars(photos, sidecars, skipped);
    }).finally(() => {
      this.adding--;
      this.dispatchEvent(new Event('change'));
    });
    this.added = added.catch(() => {});
    return added.then(() => skipped);
  }

  // addOne makes a chosen photo a row, and returns it; a photo added
  // before returns its row, so a sidecar chosen with it again finds it.
  addOne({ file, path }, skipped) {
    const { size } = file;
    const id = `${path || file.name}|${size}|${file.lastModified}`;
    if (this.seen.has(id)) { skipped.push({ name: file.name, why: 'already added' }); return this.seen.get(id); }
    const type = typeOf(file);
    if (!type) { skipped.push({ name: file.name, why: `not one of ${FORMATS.names}` }); return null; }
    if (size === 0) { skipped.push({ name: file.name, why: 'empty' }); return null; }
    const row = this.model.addLocal(file, file.name);
    this.seen.set(id, row);
    row.type = type;
    this.prepareQ.push(row);
    this.hasher.add(row);
    return row;
  }

  // sidecarOne takes a chosen XMP sidecar to pair, unless it is one
  // already paired, empty or larger than the server takes.
  sidecarOne({ file, path }, sidecars, skipped) {
    const id = `${path || file.name}|${file.size}|${file.lastModified}`;
    if (this.seenSidecars.has(id)) { skipped.push({ name: file.name, why: 'already added' }); return; }
    if (file.size === 0) { skipped.push({ name: file.name, why: 'empty' }); return; }
    if (file.size > MAX_SIDECAR) { skipped.push({ name: file.name, why: 'larger than 1 MiB' }); return; }
    sidecars.push({ id, file, name: file.name, folder: folderOf(path || file.name), sentTo: new Set() });
  }

  // pairSidecars gives each sidecar to its photo in the same folder, as
  // `lightbox upload` does: NAME.EXT.xmp to NAME.EXT, then NAME.xmp to
  // every photo named NAME.* (a raw and its JPEG) that has no sidecar of
  // its own. Names match in any case. A sidecar left without a photo is
  // skipped, and said so.
  pairSidecars(photos, sidecars, skipped) {
    const loose = [];
    for (const s of sidecars) {
      const stem = stemOf(s.name).toLowerCase();
      let paired = false;
      for (const p of photos.get(s.folder) || []) {
        if (p.name.toLowerCase() === stem) {
          this.attachSidecar(p.row, s);
          paired = true;
        }
      }
      if (!paired) loose.push(s);
    }
    for (const s of loose) {
      const stem = stemOf(s.name).toLowerCase();
      let named = false;
      let paired = false;
      for (const p of photos.get(s.folder) || []) {
        if (stemOf(p.name).toLowerCase() !== stem) continue;
        named = true;
        if (!p.row.sidecar) {
          this.attachSidecar(p.row, s);
          paired = true;
        }
      }
      if (!paired) skipped.push({ name: s.name, why: named ? 'its photos have sidecars of their own' : 'no photo of that name' });
    }
  }

  // attachSidecar makes s the sidecar of row's photo, sent at once when
  // the photo is uploaded already, else when it is.
  attachSidecar(row, s) {
    row.sidecar = s;
    this.seenSidecars.add(s.id);
    if (row.local === 'done') this.queueSidecar(row);
  }

  // queueSidecar sends the sidecar of an uploaded photo to its asset: for
  // a duplicate, the asset it duplicates, as `lightbox upload` does. A
  // NAME.xmp goes to each photo of a raw and its JPEG, once to each.
  queueSidecar(row) {
    const s = row.sidecar;
    const assetId = row.status === 'duplicate' ? row.duplicateOf : row.assetId;
    if (!s || !assetId || s.sentTo.has(assetId)) return;
    s.sentTo.add(assetId);
    this.sidecarQ.push({ s, assetId });
    this.sendSidecars();
  }

  sendSidecars() {
    while (this.sidecarsActive < SIDECARS_AT_ONCE && this.sidecarQ.length) {
      const job = this.sidecarQ.shift();
      this.sidecarsActive++;
      this.putSidecar(job).finally(() => {
        this.sidecarsActive--;
        this.sendSidecars();
        this.dispatchEvent(new Event('change'));
      });
    }
  }

  // putSidecar PUTs one sidecar, retrying as the uploads do. A sidecar
  // that fails or is refused is said so, and fails nothing else.
  async putSidecar({ s, assetId }) {
    let body;
    try {
      body = await s.file.arrayBuffer();
    } catch (err) {
      this.sidecarNote(s.name, `not sent: it could not be read (${err.message})`);
      return;
    }
    if (body.byteLength > MAX_SIDECAR) {
      this.sidecarNote(s.name, 'not sent: larger than 1 MiB');
      return;
    }
    for (let attempt = 1; ; attempt++) {
      const wait = this.holdUntil - Date.now();
      if (wait > 0) await sleep(wait);
      try {
        this.sidecarAnswered(s, assetId, await putXMP(assetId, body));
        return;
      } catch (err) {
        if (err instanceof ApiError && err.transient && attempt < MAX_ATTEMPTS) {
          await sleep(this.hold(err, attempt));
          continue;
        }
        this.sidecarNote(s.name, `not sent: ${err.message}`);
        return;
      }
    }
  }

  // sidecarAnswered shows what the server did with a sidecar: a refusal
  // or a warning is said; decisions it applied show on the photo's tile
  // at once (the server's event of a sidecar names no rating).
  sidecarAnswered(s, assetId, ans) {
    const why = (ans.warnings || []).join('; ');
    if (!ans.applied) {
      this.sidecarNote(s.name, `not applied: ${why || 'the server refused it'}`);
      return;
    }
    if (why) this.sidecarNote(s.name, `applied, but ${why}`);
    const d = ans.decisions;
    if (ans.handDecisionKept || !d || !(d.rating || d.picked || d.rejected || d.colorLabel)) return;
    // As the server keeps them: a pick wins over a reject, and the star
    // mark (not a rating) stays as it was.
    const held = this.model.byAsset.get(assetId)?.rating;
    this.model.handle('asset.updated', {
      assetId,
      myRating: { rating: d.rating || null, picked: !!d.picked, rejected: !!d.rejected && !d.picked, colorLabel: d.colorLabel || null,
        starred: !!(held && held.starred) },
    });
  }

  // sidecarNote tells of a sidecar not sent or not applied, beside the
  // ones before it in this tab.
  sidecarNote(name, what) {
    this.sidecarNotes.push(`${name} ${what}`);
    const n = this.sidecarNotes.length;
    announce(n === 1 ? `XMP sidecar ${this.sidecarNotes[0]}`
      : `${plural(n, 'XMP sidecar')} with a problem: ${this.sidecarNotes.slice(-3).join(' · ')}${n > 3 ? ' · …' : ''}`, 'warn');
  }

  pump() {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      this.step();
    });
  }

  // pumpSoon steps in a task of its own, after the page has had its turn.
  pumpSoon() {
    if (this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = null;
      this.pump();
    }, 0);
  }

  step() {
    if (this.stopped) return;
    const wait = this.holdUntil - Date.now();
    if (wait > 0) {
      clearTimeout(this.holdTimer);
      this.holdTimer = setTimeout(() => this.pump(), wait);
      return;
    }
    const lowWater = Math.max(this.window.size * 4, 20);
    if (!this.preparing && this.prepareQ.length && this.readyQ.length < lowWater) this.prepare();
    // Sending a file holds the page's thread 8 to 20 ms on a busy machine
    // (XMLHttpRequest.send): a window's worth at once would be one long
    // task, so those past SLICE_MS start in a task of their own.
    const until = performance.now() + SLICE_MS;
    while (this.active < this.window.size && this.readyQ.length) {
      if (performance.now() > until) {
        this.pumpSoon();
        break;
      }
      const row = this.readyQ.shift();
      if (row.local !== 'ready') continue;
      if (row.upload.expiresAt - Date.now() < row.upload.margin) {
        this.reprepare(row);
        continue;
      }
      this.put(row);
    }
    const uploadsLeft = this.prepareQ.length + this.readyQ.length + this.active > 0 || this.preparing;
    if (this.finalizeQ.length && this.finalizing < 2 && (this.finalizeQ.length >= 200 || !uploadsLeft)) {
      this.finalize();
    } else if (this.finalizeQ.length && !this.flushTimer) {
      // Finalize what is ready at least every 1.5 s, so processing starts early.
      this.flushTimer = setTimeout(() => {
        this.flushTimer = null;
        if (this.finalizeQ.length && this.finalizing < 2) this.finalize();
      }, 1500);
    }
    this.dispatchEvent(new Event('change'));
  }

  hold(err, attempt) {
    const ms = waitFor(err, attempt);
    if (err.status === 429) this.holdUntil = Math.max(this.holdUntil, Date.now() + ms);
    return ms;
  }

  // chunkSize is about two minutes of uploading at the current pace, so
  // the URLs of a chunk are used well before they expire.
  chunkSize() {
    const perSecond = this.model.rates.uploaded.perSecond();
    const size = perSecond > 0 ? Math.round(perSecond * 120) : 100;
    return Math.max(1, Math.min(this.chunkCap, Math.max(20, size)));
  }

  async prepare() {
    this.preparing = true;
    const rows = this.prepareQ.splice(0, this.chunkSize()).filter((r) => r.local === 'waiting');
    for (const r of rows) r.local = 'preparing';
    this.model.changed();
    let key = newKey();
    let res = null;
    try {
      for (let attempt = 1; rows.length; attempt++) {
        try {
          const files = rows.map((r) => ({ clientFileId: r.key, filename: r.name, byteSize: r.size, contentType: r.type }));
          res = await api('POST', `${this.base}:prepareUpload`, { files }, { 'Idempotency-Key': key });
          break;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          if (err.code === 'validation_failed' || err.code === 'unsupported_media_type') {
            // One answer names every bad file: fail those, send the rest.
            const bad = badFiles(err, rows);
            if (!bad.size) { this.failRows(rows, err, false); return; }
            for (const [i, msg] of bad) this.fail(rows[i], { code: err.code, message: msg }, false);
            const rest = rows.filter((_, i) => !bad.has(i));
            rows.length = 0;
            rows.push(...rest);
            key = newKey();
            attempt = 0;
            continue;
          }
          if (err.code === 'project_not_active') { this.stop(err.message, rows); return; }
          if (err.status === 429) {
            key = newKey(); // a refusal is kept under its key: the next try needs a new one
            const most = err.limit || (err.details && err.details.retryAfter === null ? Math.floor(rows.length / 2) : 0);
            if (most && rows.length > most) {
              // More than the budget ever holds at once: send fewer, and
              // the rest in later chunks.
              this.chunkCap = Math.max(1, most);
              const back = rows.splice(this.chunkCap);
              for (const r of back) r.local = 'waiting';
              this.prepareQ.unshift(...back);
              this.model.changed();
            }
          }
          if (err.transient && attempt < MAX_ATTEMPTS) {
            const ms = this.hold(err, attempt);
            for (const r of rows) r.note = `Preparing again in ${Math.round(ms / 1000)} s (${err.code})`;
            this.model.changed();
            await sleep(ms);
            continue;
          }
          this.failRows(rows, err, true);
          return;
        }
      }
      if (!res) return;
      const byKey = new Map(rows.map((r) => [r.key, r]));
      for (const u of res.uploads) {
        const row = byKey.get(u.clientFileId);
        if (!row) continue;
        this.model.bindAsset(row, u.assetId);
        row.status = 'pending_upload';
        // The URL's lifetime by this clock, which may be off from the
        // server's; a PUT is not started this close to the end (20 s, or a
        // quarter of a short lifetime): the file is prepared again instead.
        const life = Math.min(86400000, Math.max(10000, Date.parse(u.expiresAt) - Date.now()));
        row.upload = { url: u.uploadUrl, headers: u.headers || {}, expiresAt: Date.now() + life, margin: Math.min(20000, life / 4) };
        row.local = 'ready';
        row.note = '';
        this.readyQ.push(row);
      }
    } finally {
      this.preparing = false;
      this.model.changed();
      this.pump();
    }
  }

  reprepare(row) {
    this.model.abandon(row);
    row.upload = null;
    row.local = 'waiting';
    this.prepareQ.unshift(row);
    this.pump();
  }

  put(row) {
    this.active++;
    row.local = 'uploading';
    row.sent = 0;
    row.note = '';
    this.model.changed();
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', row.upload.url);
    for (const [k, v] of Object.entries(row.upload.headers)) xhr.setRequestHeader(k, v);
    let lastProgress = Date.now();
    const stall = setInterval(() => {
      if (Date.now() - lastProgress > STALL_MS) xhr.abort();
    }, 5000);
    xhr.upload.onprogress = (e) => {
      lastProgress = Date.now();
      row.sent = e.loaded;
      this.model.changed();
    };
    const end = (status, body) => {
      clearInterval(stall);
      this.active--;
      this.putDone(row, status, body);
    };
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      const ra = Number(xhr.getResponseHeader('Retry-After'));
      end(xhr.status, body && { ...body, retryAfter: ra > 0 ? ra : undefined });
    };
    xhr.onerror = () => end(0, null);
    xhr.onabort = () => end(0, { code: 'stalled', message: 'The upload stopped making progress.' });
    xhr.send(row.file);
  }

  putDone(row, status, body) {
    // 201 from the server's own /blobs route, 200 from an S3 bucket; a
    // bucket answers 412 to a second PUT, as when the first arrived but its
    // answer was lost: finalize checks the bytes either way.
    if ((status >= 200 && status < 300) || status === 412 || (status === 409 && body && body.code === 'already_finalized')) {
      this.window.success();
      row.local = 'sent';
      row.sent = row.size;
      row.attempt = 0;
      if (row.sha) this.finalizeQ.push(row);
      this.model.changed();
      this.pump();
      return;
    }
    const err = new ApiError(status, body, body && body.retryAfter);
    // A bucket refuses an expired URL with a 403 of its own, not JSON.
    const bucketRefused = status === 403 && !body;
    if (err.code === 'url_expired' || bucketRefused || (status === 404 && err.code === 'not_found')) {
      row.expiries = (row.expiries || 0) + 1;
      if (row.expiries <= 3) {
        this.reprepare(row);
        return;
      }
    }
    if (err.transient || err.code === 'upload_interrupted' || err.code === 'stalled') {
      this.window.failure();
      row.attempt++;
      if (row.attempt < MAX_ATTEMPTS) {
        const ms = this.hold(err, row.attempt);
        row.local = 'ready';
        row.sent = 0;
        row.note = `Retrying in ${Math.round(ms / 1000)} s (${err.code}, try ${row.attempt + 1} of ${MAX_ATTEMPTS})`;
        this.model.changed();
        setTimeout(() => {
          if (row.local !== 'ready') return;
          this.readyQ.unshift(row);
          this.pump();
        }, ms);
        this.pump();
        return;
      }
    }
    this.fail(row, { code: err.code, message: err.message }, true);
    this.pump();
  }

  hashed(row, sha, error) {
    if (error) {
      this.fail(row, { code: 'unreadable', message: `The file could not be read: ${error}` }, false);
      return;
    }
    row.sha = sha;
    if (row.local === 'sent') {
      this.finalizeQ.push(row);
      this.pump();
    }
  }

  async finalize() {
    this.finalizing++;
    const rows = this.finalizeQ.splice(0, MAX_CHUNK).filter((r) => r.local === 'sent');
    for (const r of rows) r.local = 'finalizing';
    this.model.changed();
    let key = newKey();
    try {
      let res = null;
      for (let attempt = 1; rows.length; attempt++) {
        try {
          const assets = rows.map((r) => ({ assetId: r.assetId, checksumSha256: r.sha }));
          res = await api('POST', `${this.base}:finalizeUpload`, { assets }, { 'Idempotency-Key': key });
          break;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          if (err.code === 'project_not_active') { this.stop(err.message, rows); return; }
          if (err.status === 429) key = newKey();
          if (err.transient && attempt < MAX_ATTEMPTS) {
            await sleep(this.hold(err, attempt));
            continue;
          }
          this.failRows(rows, err, true);
          return;
        }
      }
      if (!res) return;
      const byAsset = new Map(rows.map((r) => [r.assetId, r]));
      for (const a of res.assets) {
        const row = byAsset.get(a.assetId);
        if (!row) continue;
        row.batchId = res.batchId;
        switch (a.status) {
          case 'uploaded': case 'duplicate':
            row.local = 'done';
            if (a.duplicateOf) row.duplicateOf = a.duplicateOf;
            // An event may have moved the asset on already.
            if (a.status === 'uploaded' && row.early) this.model.setStatus(row, row.early.status, row.early.error);
            else this.model.setStatus(row, a.status, null);
            row.early = null;
            this.queueSidecar(row);
            break;
          case 'pending_upload': // the bytes never arrived: send them again
            row.local = 'ready';
            this.readyQ.push(row);
            break;
          default:
            if (a.error && a.error.code === 'not_found') {
              this.reprepare(row);
            } else {
              // The server failed the asset itself (a checksum that did not
              // match): a retry sends the file again as a new one.
              row.status = a.status;
              this.fail(row, a.error || { code: 'failed', message: 'The server refused the file.' }, true);
            }
        }
      }
    } finally {
      this.finalizing--;
      this.model.changed();
      this.pump();
    }
  }

  fail(row, error, retryable) {
    row.local = 'failed';
    row.error = error;
    row.retryable = retryable && !!row.file;
    row.note = '';
    this.model.changed();
  }

  failRows(rows, err, retryable) {
    for (const r of rows) this.fail(r, { code: err.code, message: err.message }, retryable);
  }

  // stop ends the run when the project takes no more files.
  stop(message, rows) {
    this.stopped = message;
    for (const r of [...rows, ...this.prepareQ, ...this.readyQ]) this.fail(r, { code: 'project_not_active', message }, false);
    this.prepareQ = [];
    this.readyQ = [];
    this.dispatchEvent(new Event('change'));
  }

  // retryLocal sends a file that failed on its way up again.
  retryLocal(row) {
    if (!row.file || row.local !== 'failed') return false;
    // Hashed again when reading failed, or when the bytes sent were not
    // the ones hashed (the file changed meanwhile).
    if (row.error && (row.error.code === 'unreadable' || row.error.code === 'checksum_mismatch')) row.sha = null;
    row.error = null;
    row.attempt = 0;
    row.expiries = 0;
    row.note = '';
    if (!row.sha) this.hasher.add(row);
    if (row.assetId && row.upload && row.upload.expiresAt - Date.now() > row.upload.margin && row.status === 'pending_upload') {
      row.local = 'ready';
      this.readyQ.push(row);
    } else {
      if (row.assetId) this.model.abandon(row);
      row.local = 'waiting';
      this.prepareQ.push(row);
    }
    this.stopped = '';
    this.model.changed();
    this.pump();
    return true;
  }
}

// putXMP sends a sidecar's bytes as they are, and answers what the server
// did with them ({applied, decisions, handDecisionKept, warnings}).
async function putXMP(assetId, body) {
  let res;
  try {
    res = await fetch(`/v1/assets/${encodeURIComponent(assetId)}/sidecar`, {
      method: 'PUT', body, credentials: 'same-origin', headers: { Accept: 'application/json', 'Content-Type': 'application/rdf+xml' },
    });
  } catch {
    throw new ApiError(0, { code: 'network_error', message: 'The server cannot be reached.' });
  }
  let data = null;
  try { data = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) {
    const ra = Number(res.headers.get('Retry-After'));
    throw new ApiError(res.status, data, ra > 0 ? ra : undefined);
  }
  return data || {};
}

// badFiles maps the index of each file a validation error names to its problem.
function badFiles(err, rows) {
  const bad = new Map();
  const fields = (err.details && err.details.fields) || {};
  for (const [field, msg] of Object.entries(fields)) {
    const m = /^files\[(\d+)\]\.(\w+)/.exec(field);
    if (m && Number(m[1]) < rows.length) bad.set(Number(m[1]), `${m[2]} ${msg}`);
  }
  return bad;
}
