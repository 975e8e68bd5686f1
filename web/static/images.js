// Photos' files as the pages show them: thumbnails loaded as tiles scroll
// into view, and the signed URLs of a photo's preview and original, asked
// for again once they are about to expire. A photo with an edit shows its
// edit's render (edit_thumbnail, edit_preview) once there is one, and
// again each time a render of it ends.

import { api, ApiError, sleep, waitFor } from './api.js';
import { stageOf, liveEvents } from './model.js';

// The kinds of file drawn for a tile and for a full view, best first.
const THUMB_KINDS = ['edit_thumbnail', 'thumbnail', 'edit_preview', 'preview'];
const PREVIEW_KINDS = ['edit_preview', 'preview', 'edit_thumbnail', 'thumbnail'];

// pick is the first file of list whose kind is in kinds, in their order.
export function pick(list, kinds) {
  for (const k of kinds) {
    const f = list.find((x) => x.kind === k);
    if (f) return f;
  }
  return null;
}

const filesChangedFns = new Set();

// onFilesChange calls fn(ids) when photos' files have changed (a render
// of an edit ended); it returns how to stop.
export function onFilesChange(fn) {
  filesChangedFns.add(fn);
  return () => filesChangedFns.delete(fn);
}

// filesChanged forgets what is known of the photos' links and has every
// view that shows them draw them again.
export function filesChanged(ids) {
  for (const id of ids) fileCache.delete(id);
  for (const fn of [...filesChangedFns]) {
    try { fn(ids); } catch (err) { console.error(err); }
  }
}

// An edit's render ends in a job of the project's stream, in this tab or
// another.
liveEvents.addEventListener('job.done', (e) => {
  const d = e.detail.data;
  if (d && d.jobType === 'edit:apply' && d.status === 'done' && d.assetId) filesChanged([d.assetId]);
});

// Thumbs loads thumbnails of tiles as they scroll into view, through a few
// requests at a time, and remembers the signed URLs until they expire.
export class Thumbs {
  constructor() {
    this.urls = new Map();
    this.queue = [];
    this.running = 0;
    this.imgs = new Set(); // every img watched, to draw again when its photo's files change
    this.offFiles = onFilesChange((ids) => {
      const changed = new Set(ids);
      for (const id of ids) this.urls.delete(id);
      for (const img of this.imgs) {
        if (!img.isConnected) this.imgs.delete(img);
        else if (img.row && changed.has(img.row.assetId) && img.dataset.loaded) {
          delete img.dataset.loaded;
          this.watch(img, img.row);
        }
      }
    });
    this.io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        this.io.unobserve(e.target);
        this.queue.push(e.target);
      }
      this.next();
    }, { rootMargin: '200px' });
  }

  watch(img, row) {
    img.row = row;
    this.imgs.add(img);
    if (this.imgs.size > 4000) for (const x of this.imgs) if (!x.isConnected) this.imgs.delete(x);
    if (img.dataset.loaded === row.assetId) return;
    if (img.dataset.loaded) {
      // A reused tile: not the last photo's thumbnail under this one's name.
      img.removeAttribute('src');
      delete img.dataset.loaded;
    }
    // A row counts() has not seen yet (a group's photo before the list
    // has it) has no stage of its own.
    const stage = row.stage || stageOf(row);
    const ready = stage === 'cull' || stage === 'searchable' || (row.thumbnail && stage === 'processing');
    if (!ready) return;
    const hit = this.urls.get(row.assetId);
    if (hit && hit.expires > Date.now() + 30000) {
      img.src = hit.url;
      img.dataset.loaded = row.assetId;
      return;
    }
    this.io.observe(img);
  }

  async next() {
    while (this.running < 4 && this.queue.length && !this.paused) {
      const img = this.queue.shift();
      // Gone, or a reused tile that scrolled on to another photo (which
      // watch has asked for again) or already has its thumbnail.
      if (!img.isConnected || img.hidden || img.closest('[hidden]') || img.dataset.loaded === img.row.assetId) continue;
      this.running++;
      const id = img.row.assetId;
      try {
        const { files } = await api('GET', `/v1/assets/${id}/files`);
        const f = pick(files, THUMB_KINDS);
        if (f) {
          this.urls.set(id, { url: f.url, expires: Date.parse(f.expiresAt) });
          if (img.row.assetId === id) {
            img.src = f.url;
            img.dataset.loaded = id;
          }
        }
      } catch (err) {
        if (err instanceof ApiError && err.status === 429) {
          // Over the rate budget: ask again once the server says it has room.
          this.queue.push(img);
          this.pause(waitFor(err, 1));
        }
      } finally {
        this.running--;
      }
    }
  }

  async pause(ms) {
    if (this.paused) return;
    this.paused = true;
    await sleep(ms);
    this.paused = false;
    this.next();
  }

  stop() { this.io.disconnect(); this.queue = []; this.offFiles(); this.imgs.clear(); }
}

// Types a browser draws: an original of another kind (a camera raw, HEIC)
// is shown at 100 % through its preview.
const DRAWABLE = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/avif']);

// A signed link is used until this long before it expires.
const MARGIN = 60 * 1000;
// The preview link in an asset's answer lasts at least this long.
const PREVIEW_LINK = 14 * 60 * 1000;

const fileCache = new Map(); // asset id → {at, files} or a promise of it

// files lists an asset's files with signed links, from a short cache.
async function files(id) {
  let hit = fileCache.get(id);
  if (hit && !(hit instanceof Promise) && hit.expires - MARGIN > Date.now()) return hit.files;
  if (hit instanceof Promise) return (await hit).files;
  const p = api('GET', `/v1/assets/${id}/files`).then(({ files: list }) => {
    const expires = Math.min(...list.map((f) => Date.parse(f.expiresAt)).filter(Number.isFinite), Date.now() + PREVIEW_LINK);
    const entry = { files: list, expires };
    fileCache.set(id, entry);
    if (fileCache.size > 500) fileCache.delete(fileCache.keys().next().value);
    return entry;
  });
  fileCache.set(id, p);
  try {
    return (await p).files;
  } catch (err) {
    fileCache.delete(id);
    throw err;
  }
}

// previewUrl is a link to the photo's preview (its edit's render when it
// has one), or null when it has none: the one its row came with while
// that is fresh, else a new one.
export async function previewUrl(row) {
  const st = row.stage || stageOf(row);
  if (st !== 'cull' && st !== 'searchable') return null;
  const a = row.asset || {};
  if (a.bestPreviewUrl && !row.edited && Date.now() - (row.signedAt || 0) < PREVIEW_LINK - MARGIN) return a.bestPreviewUrl;
  const list = await files(row.assetId);
  const f = pick(list, PREVIEW_KINDS);
  return f ? f.url : null;
}

// assetFiles lists a photo's files with signed links, from a short cache.
export const assetFiles = (id) => files(id);

// fullSize is what to draw at 100 %: the original when a browser can draw
// it, else the preview; with the original's size in pixels.
export async function fullSize(row) {
  const list = await files(row.assetId);
  const orig = list.find((x) => x.kind === 'original');
  const a = row.asset || {};
  const size = { width: a.widthPx || (orig && orig.widthPx) || 0, height: a.heightPx || (orig && orig.heightPx) || 0 };
  if (orig && DRAWABLE.has(orig.contentType)) return { url: orig.url, original: true, ...size };
  const f = list.find((x) => x.kind === 'preview');
  return f ? { url: f.url, original: false, ...size } : null;
}

// forget drops what is known of an asset's links, after one failed to load.
export function forget(row) {
  fileCache.delete(row.assetId);
  row.signedAt = 0;
}
