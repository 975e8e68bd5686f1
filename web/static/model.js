// One project's files as the pages show them: a row per asset (from the
// API's assets list) or per local file still on its way, with the stage
// each is in, the counts of the three phases and their ETA. Live updates
// come over Server-Sent Events; when the stream is down the model polls the
// project's stats and reloads the list when they disagree.

import { api, pages, backoff, sleep, ApiError } from './api.js';

// Display stages, in pipeline order.
export const STAGES = {
  uploading: 'Uploading',
  incomplete: 'Upload incomplete',
  uploaded: 'Uploaded',
  processing: 'Processing',
  cull: 'Thumbnail ready',
  searchable: 'Searchable',
  failed: 'Failed',
  duplicate: 'Duplicate',
};

// A mark beside each stage's name, so colour is not its only sign.
export const ICONS = { uploading: '↑', incomplete: '!', uploaded: '↑', processing: '⟳', cull: '◐', searchable: '✓', failed: '✕', duplicate: '=' };

// Failures that happened before the server had the file; the others come
// from processing it.
export const UPLOAD_ERRORS = new Set(['upload_expired', 'checksum_mismatch', 'upload_missing', 'not_found', 'invalid_signature']);

const STATUS_RANK = { pending_upload: 0, uploaded: 1, cull: 2, search: 3, ai: 4 };

// PROCESSED are the statuses of a photo ingest has read.
const PROCESSED = new Set(['cull', 'search', 'ai']);

// baseName is a file name without its extension, lower-cased: a camera
// raw and a JPEG of one shot share it, and the server pairs them by it
// (store/pairs.go).
const baseName = (name) => (name || '').replace(/\.[^.]*$/, '').toLowerCase();

// jpegFile says whether a row's file is a JPEG, the one half of a
// RAW+JPEG pair that is not a raw: by its type as the server or the
// uploader has it, else by its extension.
function jpegFile(row) {
  const type = (row.asset && row.asset.contentType) || row.type;
  return type ? type === 'image/jpeg' : /\.jpe?g$/i.test(row.name || '');
}

// settled is whether a row's asset is the server's alone: listed, or
// uploaded by this tab to the end, not one the uploader is still at.
function settled(row) {
  return !row.local || row.local === 'done';
}

// stageOf is where a row stands, from its local upload state and the
// server's status.
export function stageOf(row) {
  switch (row.local) {
    case 'waiting': case 'preparing': case 'ready': case 'uploading':
      return 'uploading';
    case 'sent': case 'finalizing':
      return 'uploaded';
    case 'failed':
      return 'failed';
  }
  switch (row.status) {
    case 'pending_upload': return 'incomplete';
    case 'uploaded': return 'processing';
    case 'cull': return 'cull';
    case 'search': case 'ai': return 'searchable';
    case 'failed': return 'failed';
    case 'duplicate': return 'duplicate';
  }
  return 'uploading';
}

// Rate estimates a count's growth per second over a sliding window.
class Rate {
  constructor(windowMs = 30000) {
    this.windowMs = windowMs;
    this.samples = [];
  }

  add(value, now = Date.now()) {
    const s = this.samples;
    if (s.length && s[s.length - 1][1] === value && now - s[s.length - 1][0] < 1000) return;
    s.push([now, value]);
    while (s.length > 2 && now - s[0][0] > this.windowMs) s.shift();
  }

  perSecond() {
    const s = this.samples;
    if (s.length < 2) return 0;
    const [t0, v0] = s[0];
    const [t1, v1] = s[s.length - 1];
    return t1 > t0 && v1 > v0 ? ((v1 - v0) * 1000) / (t1 - t0) : 0;
  }

  reset() { this.samples = []; }
}

let localSeq = 0;

// liveEvents hears every event of the open projects' streams, as
// CustomEvent(name, {detail: {projectId, data}}): the views that follow
// more than the rows (renders, batches, exports) listen here.
export const liveEvents = new EventTarget();

// CAMERAS are the cameras' names seen so far, each row's by its place
// (row.cam), so that counting photos per camera adds numbers; 0 is none.
export const CAMERAS = [''];
const cameraAt = new Map([['', 0]]);

function cameraIndex(name) {
  let i = cameraAt.get(name);
  if (i === undefined) {
    i = CAMERAS.length;
    CAMERAS.push(name);
    cameraAt.set(name, i);
  }
  return i;
}

// WARNINGS are the judgements the API may give in an asset's
// quality.warnings (package assist), in the order they are shown, each
// with its name and the bit it has in a row's warn: the culling views
// filter and count 100,000 rows by these bits rather than by lists.
export const WARNINGS = [
  ['blurry', 'Blurred'], ['motion_blur', 'Motion blur'], ['underexposed', 'Dark'], ['overexposed', 'Bright'],
  ['misfire', 'Misfire'], ['eyes_closed', 'Eyes closed'], ['face_soft', 'Soft face'],
];
export const WARNING_BITS = Object.fromEntries(WARNINGS.map(([code], i) => [code, 1 << i]));

// judged reads what a row keeps of an asset's quality: the bits of its
// warnings, its keeper score (0–100, or null) and the reasons in words
// ([{code, message}], or null when there are none).
function judged(q) {
  let warn = 0;
  for (const code of (q && Array.isArray(q.warnings) && q.warnings) || []) warn |= WARNING_BITS[code] || 0;
  const reasons = q && Array.isArray(q.reasons) && q.reasons.length ? q.reasons : null;
  return { warn, score: q && typeof q.score === 'number' ? q.score : null, reasons };
}

// cameraName names a camera once: many models already start with the make.
export function cameraName(make, model) {
  if (make && model && model.toLowerCase().startsWith(make.toLowerCase())) return model;
  return [make, model].filter(Boolean).join(' ');
}

// setRating keeps the caller's rating of a row's asset as the API last
// said it ({picked, rejected, rating, starred, colorLabel, updatedAt}, or
// null), and reports whether it changed. An older answer than the one held
// (an event that waited while the list loaded) is not taken.
function setRating(row, r) {
  if (r === undefined) return false;
  const held = row.rating;
  if (held && r && held.updatedAt && r.updatedAt && Date.parse(r.updatedAt) < Date.parse(held.updatedAt)) return false;
  const next = r ? {
    picked: !!r.picked, rejected: !!r.rejected, rating: r.rating ?? null, starred: !!r.starred, colorLabel: r.colorLabel ?? null,
    updatedAt: r.updatedAt,
  } : null;
  if (held && next && held.picked === next.picked && held.rejected === next.rejected && held.rating === next.rating &&
    held.starred === next.starred && held.colorLabel === next.colorLabel) {
    held.updatedAt = next.updatedAt;
    return false;
  }
  if (!held && !next) return false;
  row.rating = next;
  return true;
}

export class ProjectModel extends EventTarget {
  constructor(projectId) {
    super();
    this.projectId = projectId;
    this.rows = []; // in upload order
    this.byAsset = new Map();
    this.byBase = new Map(); // base name → row, or rows when several share it
    this.loaded = false;
    this.loading = null;
    this.live = 'off'; // off | connecting | live | polling
    this.lastEventId = '';
    this.rates = { bytes: new Rate(), uploaded: new Rate(), processed: new Rate(), searchable: new Rate() };
    this.dirty = true;
    this.cache = null;
    this.queued = false;
    this.missing = new Set(); // asset ids seen in events, to fetch
    this.lastHydrate = 0;
    this.buffer = null; // events that arrive while the list loads
    this.version = 0; // moves whenever rows come, go or change what they are sorted by
  }

  // changed recomputes and tells listeners once per frame, or four times a
  // second for big projects: a recount walks every row.
  changed() {
    this.dirty = true;
    if (this.queued) return;
    this.queued = true;
    const fire = () => requestAnimationFrame(() => {
      this.queued = false;
      this.dispatchEvent(new Event('change'));
    });
    if (this.rows.length > 2000) setTimeout(fire, 250);
    else fire();
  }

  addLocal(file, name) {
    const row = {
      key: 'local-' + ++localSeq, name, size: file.size, type: '', file, assetId: null,
      status: null, local: 'waiting', sent: 0, sha: null, error: null, note: '', attempt: 0, pair: null, jpeg: false,
    };
    this.rows.push(row);
    this.index(row);
    return row;
  }

  // index files a row under its base name, where the other half of a
  // RAW+JPEG pair is looked for (seekPair).
  index(row) {
    const base = baseName(row.name);
    const had = this.byBase.get(base);
    if (!had) this.byBase.set(base, row);
    else if (Array.isArray(had)) had.push(row);
    else this.byBase.set(base, [had, row]);
  }

  unindex(row) {
    const base = baseName(row.name);
    const had = this.byBase.get(base);
    if (had === row) this.byBase.delete(base);
    else if (Array.isArray(had)) {
      const rest = had.filter((r) => r !== row);
      this.byBase.set(base, rest.length === 1 ? rest[0] : rest);
    }
  }

  // seekPair asks the server about a photo just processed when a photo of
  // the opposite kind (raw or JPEG) under the same base name is processed
  // too: ingest may have made them a pair, which the status event does
  // not say. One request a pair, none for photos without a namesake.
  seekPair(row) {
    if (row.pair || !row.assetId || !PROCESSED.has(row.status)) return;
    const had = this.byBase.get(baseName(row.name));
    if (!had || had === row) return;
    const jpeg = jpegFile(row);
    for (const other of Array.isArray(had) ? had : [had]) {
      if (other !== row && other.assetId && !other.hidden && !other.pair && PROCESSED.has(other.status) && jpegFile(other) !== jpeg) {
        this.fetchMissing(row.assetId);
        return;
      }
    }
  }

  // setPair records that a row is half of a RAW+JPEG pair with the asset
  // pair names (null: of none), on both halves: the server says so on
  // both, but this tab may hold the other half's answer from before.
  setPair(row, pair) {
    if (row.pair === pair) return;
    const old = row.pair && this.byAsset.get(row.pair);
    if (old && old.pair === row.assetId) old.pair = null;
    row.pair = pair;
    const other = pair && this.byAsset.get(pair);
    if (other) {
      other.pair = row.assetId;
      other.jpeg = !row.jpeg; // a pair is a raw and a JPEG
    }
    this.version++;
  }

  bindAsset(row, assetId) {
    if (row.assetId) this.byAsset.delete(row.assetId);
    row.assetId = assetId;
    this.byAsset.set(assetId, row);
  }

  // abandon forgets an asset whose upload URL expired: the file goes up
  // again as a new asset, and the old one expires on the server.
  abandon(row) {
    if (!row.assetId) return;
    this.byAsset.delete(row.assetId);
    this.rows.push({ key: row.assetId, assetId: row.assetId, hidden: true, status: row.status || 'pending_upload', local: 'done', name: row.name, size: row.size });
    this.byAsset.set(row.assetId, this.rows[this.rows.length - 1]);
    row.assetId = null;
  }

  visibleRows() {
    return this.counts().visible;
  }

  // counts are the phase counts, the ETA and the rows to show.
  counts() {
    if (!this.dirty && this.cache) return this.cache;
    const c = {
      total: 0, uploaded: 0, processed: 0, searchable: 0, failed: 0, uploadFailed: 0, duplicate: 0, incomplete: 0,
      bytesTotal: 0, bytesSent: 0, localActive: 0, byStage: {}, visible: [], server: {},
    };
    for (const row of this.rows) {
      if (row.assetId && row.status) c.server[row.status] = (c.server[row.status] || 0) + 1;
      if (row.hidden) continue;
      c.visible.push(row);
      const st = stageOf(row);
      row.stage = st;
      c.byStage[st] = (c.byStage[st] || 0) + 1;
      if (st === 'duplicate') { c.duplicate++; continue; }
      c.total++;
      if (row.file && row.local !== 'failed') {
        // Bytes this tab sends, for the upload's pace and ETA.
        const sending = st === 'uploading';
        c.bytesTotal += row.size;
        c.bytesSent += sending ? row.sent || 0 : row.size;
        if (sending || st === 'uploaded') c.localActive++;
      }
      switch (st) {
        case 'searchable': c.searchable++; // falls through
        case 'cull': c.processed++; // falls through
        case 'processing': case 'uploaded': c.uploaded++; break;
        case 'failed':
          // A failure in processing came after a whole upload.
          c.failed++;
          if (row.processingFailure) c.uploaded++;
          else c.uploadFailed++;
          break;
        case 'incomplete': c.incomplete++; break;
      }
    }
    if (!this.loaded && this.stats) this.addUnlisted(c, this.stats);
    const now = Date.now();
    // Rows arriving a page at a time are not progress: rates start once
    // the list is whole.
    if (this.loaded) {
      this.rates.bytes.add(c.bytesSent, now);
      this.rates.uploaded.add(c.uploaded, now);
      this.rates.processed.add(c.processed, now);
      this.rates.searchable.add(c.searchable, now);
    }
    const eta = (remaining, rate) => (remaining <= 0 ? 0 : rate > 0 ? remaining / rate : Infinity);
    const upRemaining = c.total - c.uploaded - c.uploadFailed;
    c.eta = {
      uploading: c.bytesTotal > c.bytesSent
        ? eta(c.bytesTotal - c.bytesSent, this.rates.bytes.perSecond())
        : eta(upRemaining - c.incomplete, this.rates.uploaded.perSecond()),
      processing: eta(c.total - c.processed - c.failed - c.incomplete, this.rates.processed.perSecond()),
      searchable: eta(c.total - c.searchable - c.failed - c.incomplete, this.rates.searchable.perSecond()),
    };
    // The whole run ends when its slowest phase does, never before an
    // earlier phase.
    c.eta.all = Math.max(c.eta.uploading, c.eta.processing, c.eta.searchable);
    this.cache = c;
    this.dirty = false;
    return c;
  }

  // addUnlisted counts, while the list loads, the assets the project's
  // stats hold that no row shows yet, so a large project's counts are
  // whole at once rather than growing a page at a time. The stats do not
  // say whether a failure came before or after the upload; such failures
  // are counted as the commoner kind, in processing.
  addUnlisted(c, stats) {
    const rest = (n, ...statuses) => Math.max(0, n - statuses.reduce((sum, k) => sum + (c.server[k] || 0), 0));
    const incomplete = rest(stats.uploading, 'pending_upload');
    const processing = rest(stats.processing, 'uploaded');
    const cull = rest(stats.embedding, 'cull');
    const ready = rest(stats.ready, 'search', 'ai');
    const failed = rest(stats.failed, 'failed');
    c.total += incomplete + processing + cull + ready + failed;
    c.incomplete += incomplete;
    c.failed += failed;
    c.searchable += ready;
    c.processed += ready + cull;
    c.uploaded += ready + cull + processing + failed;
  }

  // applyAsset takes an asset as the API shows it.
  applyAsset(a) {
    let row = this.byAsset.get(a.id);
    const fresh = !row;
    if (fresh) {
      // Every field a listed row will have, from the start: rows of one
      // shape are read fast when the culling views walk 100,000 of them.
      row = {
        key: a.id, assetId: a.id, local: 'done', sent: 0, note: '', name: '', size: 0, asset: null, status: null, error: null,
        processingFailure: false, stage: null, signedAt: 0, camera: '', cam: 0, time: 0, captured: null, edited: false, faces: null,
        rating: null, warn: 0, score: null, reasons: null, i0: -1, g0: -1, i1: -1, g1: -1, pair: null, jpeg: false,
      };
      this.byAsset.set(a.id, row);
      this.rows.push(row);
    }
    row.name = a.filename;
    if (fresh) this.index(row);
    row.size = a.byteSize;
    row.asset = {
      id: a.id, filename: a.filename, capturedAt: a.capturedAt, widthPx: a.widthPx, heightPx: a.heightPx,
      bestPreviewUrl: a.bestPreviewUrl, readiness: a.flags && a.flags.readiness, contentType: a.contentType,
      cameraMake: a.cameraMake, cameraModel: a.cameraModel, lensModel: a.lensModel, focalLengthMm: a.focalLengthMm,
      shutterSpeed: a.shutterSpeed, aperture: a.aperture, iso: a.iso, createdAt: a.createdAt,
    };
    // What the culling views sort and filter on, read once here rather
    // than per row on every pass over 100,000 of them.
    row.signedAt = Date.now(); // bestPreviewUrl's signature is fresh from here
    row.camera = cameraName(a.cameraMake, a.cameraModel);
    row.cam = cameraIndex(row.camera);
    const t = Date.parse(a.capturedAt || a.createdAt);
    row.time = Number.isNaN(t) ? 0 : t;
    row.captured = a.capturedAt ? row.time : null;
    row.edited = !!(a.flags && a.flags.edited);
    row.thumbnail = !!(a.flags && a.flags.thumbnail);
    row.faces = a.faces || null; // {count, eyesClosed, outOfFocus, minFaceSharpness} once looked for
    Object.assign(row, judged(a.quality));
    setRating(row, a.myRating);
    row.jpeg = a.contentType === 'image/jpeg';
    this.setPair(row, a.pairAssetId || null);
    this.version++;
    if (row.local && row.local !== 'done' && a.flags.status === 'pending_upload') return row; // still on its way up
    if (row.local !== 'failed' || a.flags.status !== 'pending_upload') row.local = 'done';
    this.setStatus(row, a.flags.status, a.flags.errorCode ? { code: a.flags.errorCode, message: a.flags.errorMessage || '' } : null, false);
    if (a.flags.duplicateOf) row.duplicateOf = a.flags.duplicateOf;
    return row;
  }

  // setStatus moves a row to status. Unless told not to (the asset's own
  // answer, which names its pair, sets it), a row just processed looks for
  // the other half of a pair.
  setStatus(row, status, error, seek = true) {
    const was = row.status;
    row.status = status;
    if (status === 'failed') {
      row.error = error || row.error || { code: 'failed', message: '' };
      row.processingFailure = !UPLOAD_ERRORS.has(row.error.code);
    } else {
      row.error = null;
      row.processingFailure = false;
    }
    if (status !== 'uploaded') row.note = '';
    if (seek && !PROCESSED.has(was)) this.seekPair(row);
    this.changed();
  }

  // load fills the rows from the API: every asset, the most a page holds
  // at a time. Pages come one after another (each needs the cursor of the
  // one before), so fewer, larger pages list a large project sooner.
  load() {
    if (this.loading) return this.loading;
    // Events that come while the list loads wait for it, then only move
    // assets forward: a page may have been read before them. A reload
    // needs this as much as the first load.
    if (!this.buffer) this.buffer = [];
    this.loading = (async () => {
      try {
        // The list runs in upload order, so every asset the server held
        // when it began comes back unless it was deleted meanwhile (its
        // event missed while the stream was down).
        const held = [];
        for (const row of this.rows) if (row.assetId && settled(row)) held.push(row.assetId);
        const seen = new Set();
        await pages(`/v1/projects/${this.projectId}/assets`, async (items) => {
          // A slice at a time, yielding between (and after the page's
          // parse), so a slow device never spends one long task on a
          // whole page.
          for (let i = 0; i < items.length; i += 200) {
            await sleep(0);
            for (const a of items.slice(i, i + 200)) {
              seen.add(a.id);
              this.applyAsset(a);
            }
            this.changed();
          }
        }, { limit: 1000 });
        this.remove(held.filter((id) => !seen.has(id)));
        this.loaded = true;
        this.lastHydrate = Date.now();
        this.changed();
      } finally {
        this.loading = null;
        this.flush();
      }
    })();
    return this.loading;
  }

  // flush applies the events held back while the list loaded.
  flush() {
    const held = this.buffer;
    this.buffer = null;
    for (const [name, data] of held || []) this.handle(name, data, true);
  }

  // handle applies one live event. A buffered event (it arrived while the
  // list loaded) only moves an asset forward, so it cannot undo what the
  // load read later.
  handle(name, data, buffered = false) {
    if (this.buffer && !buffered && name !== 'state_sync') {
      this.buffer.push([name, data]);
      return;
    }
    switch (name) {
      case 'asset.updated': {
        if (data.deleted) {
          this.remove([data.assetId]);
          return;
        }
        if (data.myRating !== undefined || data.edited !== undefined || data.faces !== undefined) {
          // A person's rating, an edit, or the faces found: the culling views' marks.
          const row = this.byAsset.get(data.assetId);
          if (!row) return;
          const rated = data.myRating !== undefined && setRating(row, data.myRating);
          const edited = data.edited !== undefined && row.edited !== !!data.edited;
          if (edited) row.edited = !!data.edited;
          if (data.faces !== undefined) row.faces = data.faces;
          if (rated || edited || data.faces !== undefined) this.marked(data.assetId);
        }
        if (data.quality !== undefined) {
          // Judged again. After a face scan, with the faces: the whole
          // judgement. After a project:signals run, without them: the
          // row keeps the faces' warnings it has.
          const row = this.byAsset.get(data.assetId);
          if (!row) return;
          const faceBits = data.faces !== undefined ? 0 : WARNING_BITS.eyes_closed | WARNING_BITS.face_soft;
          const j = judged(data.quality);
          const faceReasons = (row.reasons || []).filter((r) => WARNING_BITS[r.code] & faceBits);
          row.warn = (j.warn & ~faceBits) | (row.warn & faceBits);
          row.score = j.score;
          row.reasons = [...(j.reasons || []), ...faceReasons];
          if (!row.reasons.length) row.reasons = null;
          this.marked(data.assetId);
        }
        if (data.thumbnail) {
          // Made ahead of the rest: the tile can show it while the photo is processed.
          const row = this.byAsset.get(data.assetId);
          if (!row) {
            this.fetchMissing(data.assetId); // uploaded by another client
          } else if (!row.thumbnail) {
            row.thumbnail = true;
            this.marked(data.assetId);
          }
        }
        if (!data.status) return; // nothing the upload list shows
        const row = this.byAsset.get(data.assetId);
        if (!row) {
          this.fetchMissing(data.assetId);
          return;
        }
        if (row.local === 'sent' || row.local === 'finalizing') {
          // Processing began before the finalize answer came back; the
          // uploader applies this once it has.
          row.early = { status: data.status, error: data.status === 'failed' ? row.pendingError : null };
          return;
        }
        if (row.local && row.local !== 'done' && row.local !== 'failed') return;
        if (buffered && (STATUS_RANK[data.status] ?? 9) < (STATUS_RANK[row.status] ?? 9)) return;
        const err = data.status === 'failed'
          ? (row.pendingError || { code: data.errorCode || 'failed', message: '' }) : null;
        row.local = 'done';
        this.setStatus(row, data.status, err);
        if (row.asset) row.asset.readiness = undefined; // the grid fetches files again
        break;
      }
      case 'job.progress': case 'job.done': {
        const row = data.assetId && this.byAsset.get(data.assetId);
        if (!row) return;
        if (data.error) {
          row.pendingError = data.error;
          // A stopping worker hands its tasks back without spending an attempt.
          if (data.status === 'queued') row.note = data.error.code === 'interrupted'
            ? 'Waiting to run again (its worker stopped)'
            : `Retrying (attempt ${data.attempt} failed: ${data.error.code})`;
        } else if (data.status === 'running' && data.attempt > 1) {
          row.note = `Attempt ${data.attempt}`;
        }
        if (data.status === 'failed' && row.status === 'failed') this.setStatus(row, 'failed', data.error);
        this.changed();
        break;
      }
      case 'state_sync':
        this.compare(data.stats, true);
        break;
      case 'cluster.updated':
        this.dispatchEvent(new Event('clusters'));
        break;
    }
  }

  // marked tells the culling views of new marks, the photos of all the
  // events that came together at once: a bulk change elsewhere arrives as
  // a thousand events.
  marked(id) {
    if (!this.marks) {
      this.marks = new Set();
      setTimeout(() => {
        const ids = [...this.marks];
        this.marks = null;
        this.dispatchEvent(new CustomEvent('marks', { detail: { ids } }));
      }, 0);
    }
    this.marks.add(id);
  }

  // remove forgets deleted assets, leaving any this tab is still
  // uploading to the uploader.
  remove(ids) {
    const gone = new Set();
    for (const id of ids) {
      const row = this.byAsset.get(id);
      if (!row || !settled(row)) continue;
      this.byAsset.delete(id);
      this.unindex(row);
      // The server leaves the other half of a pair alone, unpaired.
      this.setPair(row, null);
      gone.add(row);
    }
    if (!gone.size) return;
    this.rows = this.rows.filter((row) => !gone.has(row));
    this.version++;
    this.changed();
  }

  // fetchMissing reads assets the rows do not hold (uploaded by another
  // client) or hold only in part (seekPair), a few at a time.
  fetchMissing(id) {
    if (!this.loaded || this.missing.has(id)) return;
    this.missing.add(id);
    if (this.missingTimer) return;
    this.missingTimer = setTimeout(async () => {
      this.missingTimer = null;
      const ids = [...this.missing].slice(0, 50);
      for (const id of ids) {
        try {
          this.applyAsset(await api('GET', `/v1/assets/${id}`));
        } catch { /* it may be gone */ }
        this.missing.delete(id);
      }
      if (this.missing.size) this.fetchMissing([...this.missing][0]);
      this.changed();
    }, 300);
  }

  // compare checks server stats against the rows and reloads the list
  // when they disagree because events were missed: at once after a
  // state_sync; after two polls without a stream (rows then only change by
  // reloading); with a stream, only when the stats have settled and still
  // disagree. The stats are cached for a few seconds, so while work moves
  // they trail the events, and that alone is no reason to reload thousands
  // of rows.
  compare(stats, missed = false) {
    if (!stats || !this.loaded || this.loading) return;
    const c = this.counts();
    const s = c.server;
    const n = (k) => s[k] || 0;
    const same = stats.uploading === n('pending_upload') && stats.processing === n('uploaded') &&
      stats.embedding === n('cull') && stats.ready === n('search') + n('ai') && stats.failed === n('failed');
    const key = JSON.stringify(stats);
    const settled = key === this.lastStats;
    this.lastStats = key;
    if (same) {
      this.mismatches = 0;
      return;
    }
    if (missed) this.mismatches = 2;
    else if (this.live !== 'live' || (settled && !c.localActive)) this.mismatches = (this.mismatches || 0) + 1;
    else this.mismatches = 0;
    const gap = Math.max(10000, Math.min(60000, this.rows.length * 2));
    if (this.mismatches >= 2 && Date.now() - this.lastHydrate > gap) {
      this.mismatches = 0;
      this.load().catch(() => {});
    }
  }

  // start keeps the model live until stop: SSE with a stream token, and
  // polling of the stats as the fallback and as a check.
  start() {
    if (this.running) return;
    this.running = true;
    if (!this.loaded && !this.buffer) this.buffer = [];
    this.connect();
    this.poll();
  }

  stop() {
    this.running = false;
    if (this.es) this.es.close();
    this.es = null;
    clearTimeout(this.pollTimer);
    clearTimeout(this.reconnectTimer);
    this.live = 'off';
  }

  async connect() {
    if (!this.running) return;
    this.live = this.live === 'live' ? 'polling' : 'connecting';
    this.dispatchEvent(new Event('live'));
    let token;
    try {
      token = await api('POST', '/v1/realtime/tokens');
    } catch (err) {
      this.live = 'polling';
      this.dispatchEvent(new Event('live'));
      if (err instanceof ApiError && err.status === 401) return;
      this.retryConnect();
      return;
    }
    if (!this.running) return;
    let url = `/v1/realtime?projectId=${encodeURIComponent(this.projectId)}&accessToken=${encodeURIComponent(token.token || token.accessToken)}`;
    if (this.lastEventId) url += `&lastEventId=${encodeURIComponent(this.lastEventId)}`;
    const es = new EventSource(url);
    this.es = es;
    es.onopen = () => {
      this.connectAttempt = 0;
      this.live = 'live';
      this.dispatchEvent(new Event('live'));
    };
    es.onerror = () => {
      // Reconnect ourselves: the token in the URL is short-lived.
      es.close();
      if (this.es !== es) return;
      this.es = null;
      this.live = 'polling';
      this.dispatchEvent(new Event('live'));
      this.retryConnect();
    };
    for (const name of ['asset.updated', 'job.progress', 'job.done', 'batch.updated', 'batch.completed', 'cluster.updated',
      'export.updated', 'gallery.updated', 'state_sync']) {
      es.addEventListener(name, (e) => {
        if (e.lastEventId) this.lastEventId = e.lastEventId;
        let data;
        try { data = JSON.parse(e.data); } catch { return; }
        this.handle(name, data);
        liveEvents.dispatchEvent(new CustomEvent(name, { detail: { projectId: this.projectId, data } }));
      });
    }
  }

  retryConnect() {
    if (!this.running) return;
    this.connectAttempt = (this.connectAttempt || 0) + 1;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => this.connect(), backoff(this.connectAttempt, 1000, 30000));
  }

  // poll reads the stats every 3 s without a stream, every 20 s with one.
  async poll() {
    if (!this.running) return;
    try {
      const stats = await api('GET', `/v1/projects/${this.projectId}/stats`);
      this.stats = stats;
      if (!this.loaded) this.changed();
      this.compare(stats);
    } catch { /* the next poll tries again */ }
    this.pollTimer = setTimeout(() => this.poll(), this.live === 'live' ? 20000 : 3000);
  }
}
