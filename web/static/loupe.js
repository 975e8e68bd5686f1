// The loupe: one photo full-window, its preview at once and its original
// at 100 % on Z (panned by dragging, touch or the arrow keys), ←/→ through
// cull.js's view with the neighbours' previews loaded and decoded ahead,
// a filmstrip of the view below it, the EXIF line and the photo's flags
// and colour label, its faces marked on it (F) and its quality signals
// over it (the assistant's warnings with their reasons, its keeper score), buttons for touch, a swipe to move on at a phone's width, and
// side panels other modules register (cull.registerLoupePanel). It plugs
// itself into cull.js as 'loupe'.

import * as cull from './cull.js';
import { api } from './api.js';
import { h, clear, announce, plural } from './ui.js';
import { previewUrl, fullSize, forget, onFilesChange, Thumbs } from './images.js';
import { cameraName, WARNINGS, WARNING_BITS } from './model.js';
import { labelMenu } from './keys.js';
import { shutterText, apertureText, isoText, focalText, capturedText } from './exif.js';

let dlg = null;
let el = {}; // the loupe's parts
let cur = null; // the asset shown
let lastIndex = 0; // its place in view when last seen there
let zoomed = false;
let popScope = null;
const cache = new Map(); // asset id → {img, ready}, most recent last
const mounted = new Map(); // panel id → {panel, section, api}

function build() {
  if (dlg) return;
  const button = (text, key, attrs = {}) => h('button', {
    type: 'button', class: 'small', onclick: () => run(key), 'aria-keyshortcuts': key.length === 1 ? key.toUpperCase() : null, ...attrs,
  }, text);
  el.name = h('h2', { id: 'loupe-name', class: 'loupe-name' });
  el.pos = h('span', { class: 'loupe-pos', id: 'loupe-pos' });
  el.pair = h('span', { class: 'badge loupe-pair', id: 'loupe-pair', title: 'A raw and its JPEG, culled as one photo' });
  el.marks = h('span', { class: 'loupe-marks', id: 'loupe-marks', 'aria-live': 'polite' });
  el.label = h('span', { class: 'label-chip', id: 'loupe-label', 'aria-hidden': 'true' }); // said by el.marks
  el.exif = h('p', { class: 'loupe-exif', id: 'loupe-exif' });
  el.zoom = button('100 %', 'z', { id: 'loupe-zoom', 'aria-pressed': 'false', title: 'Zoom to 100 % (Z)' });
  el.msg = h('p', { class: 'loupe-msg', role: 'status' });
  // The stage takes the focus on opening: a button would take the Enter
  // that opened the loupe, and close it again.
  el.stage = h('div', { class: 'loupe-stage', id: 'loupe-stage', tabindex: '-1', 'aria-label': 'Photo' });
  el.zimg = h('img', { alt: '', class: 'zoom-img', draggable: 'false' });
  el.faces = h('div', { class: 'face-layer', id: 'loupe-faces', 'aria-hidden': 'true' });
  el.signals = h('div', { class: 'loupe-signals', id: 'loupe-signals' });
  el.panels = h('aside', { class: 'loupe-panels', hidden: true, 'aria-label': 'Panels' });
  el.toggles = h('span', { class: 'loupe-toggles' });
  el.close = h('button', { type: 'button', class: 'small', id: 'loupe-close', onclick: () => close() }, 'Close', h('kbd', { 'aria-hidden': 'true' }, 'Esc'));
  const stars = h('select', { 'aria-label': 'Stars', id: 'loupe-stars' },
    h('option', { value: '' }, 'Stars…'), [0, 1, 2, 3, 4, 5].map((n) => h('option', { value: String(n) }, n ? '★'.repeat(n) : 'No stars')));
  stars.addEventListener('change', () => { if (stars.value !== '') run(stars.value); stars.value = ''; });
  dlg = h('dialog', { id: 'loupe', class: 'loupe', 'aria-labelledby': 'loupe-name', 'data-cull-keys': '' },
    h('div', { class: 'loupe-bar' },
      h('div', { class: 'loupe-title' }, el.name, el.pair, el.pos, el.marks, el.label),
      h('div', { class: 'loupe-tools', role: 'toolbar', 'aria-label': 'Photo' },
        button('← Previous', 'arrowleft', { id: 'loupe-prev', onclick: () => step(-1) }),
        button('Next →', 'arrowright', { id: 'loupe-next', onclick: () => step(1) }),
        button('Pick', 'p', { id: 'loupe-pick' }), button('Reject', 'x', { id: 'loupe-reject' }), button('Clear flag', 'u'), stars,
        labelMenu('loupe-set-label', () => (cur ? [cur] : [])),
        el.zoom, button('Details', 'i'), el.toggles, el.close)),
    h('div', { class: 'loupe-main' }, h('div', { class: 'loupe-view' }, el.stage, el.signals), el.panels),
    el.exif, buildStrip());
  dlg.addEventListener('close', closed);
  // Esc is the loupe's key (back from 100 % first); the dialog's own
  // cancel comes after it for the same press.
  dlg.addEventListener('cancel', (e) => { if (escTaken) e.preventDefault(); });
  wireStage();
  new ResizeObserver(() => placeFaces()).observe(el.stage);
  document.body.append(dlg);
}

// run does what a key does in the loupe, for its buttons.
function run(key) {
  const entry = cull.keyFor(key, 'loupe');
  if (entry) entry.fn({ scope: 'loupe', targets: cur ? [cur] : [], event: null });
}

export function open(id) {
  if (!cull.rowOf(id)) return;
  build();
  if (!dlg.open) {
    dlg.showModal();
    popScope = cull.pushScope({ name: 'loupe', targets: () => (cur ? [cur] : []), advance: () => step(1) });
    toggles();
    strip.thumbs = new Thumbs();
  }
  show(id);
  el.stage.focus({ preventScroll: true });
}

// close closes the loupe and gives the keys back at once: the dialog's
// close event comes a task later, after keys that may already be waiting.
export function close() {
  if (dlg && dlg.open) dlg.close();
  closed();
}

function closed() {
  if (!cur && !popScope) return; // closed already
  if (popScope) popScope();
  popScope = null;
  setZoom(false);
  for (const m of mounted.values()) if (m.api && m.api.destroy) m.api.destroy();
  mounted.clear();
  clear(el.panels);
  el.panels.hidden = true;
  cur = null;
  cache.clear();
  clearTimeout(factsTimer);
  facts.clear();
  if (strip.thumbs) strip.thumbs.stop();
  strip.thumbs = null;
  strip.track.replaceChildren();
  strip.shown.clear();
  strip.spare = [];
  cull.loupeShows(null);
}

// show puts a photo on the stage: its decoded preview if it was loaded
// ahead, else as soon as it arrives.
function show(id) {
  const row = cull.rowOf(id);
  if (!row) return;
  cur = id;
  const i = cull.indexOf(id);
  if (i >= 0) lastIndex = i;
  setZoom(false);
  const e = entry(row);
  el.msg.textContent = '';
  clear(el.faces);
  el.stage.replaceChildren(e.img, el.faces, el.msg);
  e.ready.then((ok) => {
    if (cur !== id) return;
    if (!ok) el.msg.textContent = noPreview(row);
    placeFaces();
    if (cull.settings.preload) ahead();
  });
  if (!cull.settings.preload) {
    for (const k of [...cache.keys()]) if (k !== id) cache.delete(k);
  }
  describe(row);
  loadFacts(id);
  refreshStrip(true);
  cull.loupeShows(id);
  for (const m of mounted.values()) if (m.api && m.api.show) m.api.show(id);
}

function noPreview(row) {
  if (row.stage === 'failed') return `No preview: this photo failed${row.error ? ` (${row.error.code})` : ''}.`;
  if (row.stage === 'duplicate') return 'No preview: this file duplicates another photo of the project.';
  if (row.stage === 'cull' || row.stage === 'searchable') return 'The preview could not be loaded.';
  return 'No preview yet: this photo is still being processed.';
}

// entry is the photo's preview element, loaded and decoded, from the
// cache when it was loaded ahead.
function entry(row) {
  const id = row.assetId;
  let e = cache.get(id);
  if (e) {
    cache.delete(id);
    cache.set(id, e);
    return e;
  }
  const img = new Image();
  img.alt = `Preview of ${row.name}`;
  img.className = 'preview-img';
  img.decoding = 'async';
  img.draggable = false;
  img.dataset.asset = id;
  const load = async (again) => {
    const url = await previewUrl(row);
    if (!url) return false;
    img.src = url;
    try {
      await img.decode();
      return true;
    } catch {
      if (again) return false;
      forget(row); // an expired link: ask for a new one once
      return load(true);
    }
  };
  e = { img, ready: load(false).catch(() => false) };
  cache.set(id, e);
  // Keep the few around the photo shown: a decoded preview holds 16 MB.
  while (cache.size > 5) cache.delete(cache.keys().next().value);
  return e;
}

// neighbour is the photo d places from the one shown in the view; when
// that one has left the view (a filter it no longer matches), from the
// place it had.
function neighbour(d) {
  const rows = cull.viewRows();
  const i = cull.indexOf(cur);
  const at = i >= 0 ? i + d : d > 0 ? lastIndex + d - 1 : lastIndex + d;
  return at >= 0 && at < rows.length ? rows[at] : null;
}

function ahead() {
  for (const d of [1, -1, 2]) {
    const r = neighbour(d);
    if (r) entry(r);
  }
}

function step(d) {
  const r = neighbour(d);
  if (!r) {
    announce(d > 0 ? 'This is the last photo.' : 'This is the first photo.');
    return;
  }
  show(r.assetId);
}

function jump(to) {
  const rows = cull.viewRows();
  const r = to < 0 ? rows[0] : rows[rows.length - 1];
  if (r) show(r.assetId);
}

// describe writes the photo's name, place, flags and EXIF line.
function describe(row) {
  const a = row.asset || {};
  el.name.textContent = row.name || 'Photo';
  el.pair.textContent = row.pair && !row.jpeg ? 'RAW+JPEG' : '';
  const i = cull.indexOf(row.assetId);
  const n = cull.viewRows().length;
  el.pos.textContent = i >= 0 ? `${(i + 1).toLocaleString()} of ${n.toLocaleString()}` : 'no longer in this view';
  marks();
  // The capture time needs the offset the list leaves out: it comes with
  // the photo's own answer (loadFacts).
  const full = facts.get(row.assetId);
  const bits = [
    shutterText(a.shutterSpeed), apertureText(a.aperture), isoText(a.iso), focalText(a.focalLengthMm), a.lensModel,
    cameraName(a.cameraMake, a.cameraModel), full && full.asset ? capturedText(full.asset.capturedAt, full.asset.capturedOffset) : '',
    a.widthPx ? `${a.widthPx} × ${a.heightPx}` : '',
  ].filter(Boolean);
  el.exif.textContent = bits.length ? bits.join(' · ') : 'No camera data.';
}

function marks() {
  if (!cur) return;
  const m = cull.marksOf(cur);
  const bits = [m.picked ? '✓ Picked' : m.rejected ? '✕ Rejected' : '', cull.starText(m.rating || 0), m.edited ? '✎ Edited' : ''];
  el.marks.textContent = bits.filter(Boolean).join(' · ');
  el.marks.dataset.flag = m.picked ? 'picked' : m.rejected ? 'rejected' : '';
  el.marks.setAttribute('aria-label', cull.marksText(m) || 'no flag, no stars');
  el.label.dataset.label = m.colorLabel || '';
  el.label.textContent = m.colorLabel ? cull.LABEL_NAMES[m.colorLabel] : '';
}

cull.onMarksChange((ids) => {
  if (!cur) return;
  if (ids.includes(cur)) {
    marks();
    // The faces found since the photo was shown (asset:faces ended).
    const f = facts.get(cur);
    if (f && f.facesKey !== facesKey(cull.rowOf(cur))) {
      facts.delete(cur);
      loadFacts(cur);
    }
  }
  repaintStrip(ids);
});

// A photo whose files changed (its edit rendered) is loaded again; the
// one shown changes once the new preview is decoded.
onFilesChange((ids) => {
  for (const id of ids) cache.delete(id);
  if (!cur || !ids.includes(cur)) return;
  const id = cur;
  const e = entry(cull.rowOf(id));
  e.ready.then((ok) => {
    const old = el.stage.querySelector('img.preview-img');
    if (ok && cur === id && !zoomed && old && old !== e.img) old.replaceWith(e.img);
    if (cur === id) paintFaces();
  });
});
cull.onViewChange(() => {
  if (!cur) return;
  const row = cull.rowOf(cur);
  if (row) describe(row);
  refreshStrip(false);
});

// ---- 100 % and pan --------------------------------------------------------------

// setZoom shows the photo at 100 % (one of its pixels a screen pixel),
// centred on the point at fractions (fx, fy) of it: the preview at once,
// scaled up, then the original once it has arrived when a browser can draw
// it.
async function setZoom(on, fx = 0.5, fy = 0.5) {
  if (!dlg) return;
  zoomed = on;
  el.stage.classList.toggle('zoomed', on);
  el.zoom.setAttribute('aria-pressed', String(on));
  if (!on) {
    const e = cur && cache.get(cur);
    if (e && el.zimg.isConnected) {
      el.stage.replaceChildren(e.img, el.faces, el.msg);
      placeFaces();
    }
    el.zimg.removeAttribute('src');
    return;
  }
  const id = cur;
  const row = cull.rowOf(id);
  const shown = cache.get(id);
  if (!row || !shown || !shown.img.naturalWidth) {
    zoomed = false;
    el.stage.classList.remove('zoomed');
    el.zoom.setAttribute('aria-pressed', 'false');
    return;
  }
  const dpr = window.devicePixelRatio || 1;
  const w = (row.asset && row.asset.widthPx) || shown.img.naturalWidth;
  const hgt = (row.asset && row.asset.heightPx) || shown.img.naturalHeight;
  el.zimg.style.width = `${w / dpr}px`;
  el.zimg.style.height = `${hgt / dpr}px`;
  el.zimg.alt = `${row.name} at 100 %`;
  el.zimg.src = shown.img.src;
  delete el.zimg.dataset.original;
  el.stage.replaceChildren(el.zimg, el.msg);
  el.stage.scrollLeft = fx * (w / dpr) - el.stage.clientWidth / 2;
  el.stage.scrollTop = fy * (hgt / dpr) - el.stage.clientHeight / 2;
  el.msg.textContent = '100 %: loading the original…';
  let full = null;
  try {
    full = await fullSize(row);
    if (full) {
      const o = new Image();
      o.src = full.url;
      await o.decode();
    }
  } catch { full = null; }
  if (!zoomed || cur !== id) return;
  if (!full) {
    el.msg.textContent = '100 % of the preview: the original could not be loaded.';
    return;
  }
  el.zimg.src = full.url;
  el.zimg.dataset.original = String(full.original);
  el.msg.textContent = full.original ? '' : '100 % of the preview: browsers cannot draw this original’s format.';
}

function pan(dx, dy) {
  el.stage.scrollLeft += dx * el.stage.clientWidth * 0.2;
  el.stage.scrollTop += dy * el.stage.clientHeight * 0.2;
}

// wireStage: a mouse drags the photo at 100 %, a click zooms in at its
// point; a swipe sideways moves on (touch has its own pan at 100 %).
function wireStage() {
  let down = null;
  el.stage.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    down = { x: e.clientX, y: e.clientY, left: el.stage.scrollLeft, top: el.stage.scrollTop, type: e.pointerType, moved: false };
    if (zoomed && e.pointerType !== 'touch') el.stage.setPointerCapture(e.pointerId);
  });
  el.stage.addEventListener('pointermove', (e) => {
    if (!down) return;
    const dx = e.clientX - down.x;
    const dy = e.clientY - down.y;
    if (Math.abs(dx) + Math.abs(dy) > 6) down.moved = true;
    if (zoomed && down.type !== 'touch') {
      el.stage.scrollLeft = down.left - dx;
      el.stage.scrollTop = down.top - dy;
    }
  });
  const up = (e) => {
    if (!down) return;
    const d = down;
    down = null;
    const dx = e.clientX - d.x;
    const dy = e.clientY - d.y;
    if (!zoomed && Math.abs(dx) > 50 && Math.abs(dx) > 2 * Math.abs(dy)) {
      step(dx < 0 ? 1 : -1);
      return;
    }
    if (!d.moved && d.type === 'mouse' && e.type === 'pointerup') {
      const img = zoomed ? el.zimg : e.target.closest('img');
      if (zoomed) setZoom(false);
      else if (img) {
        const r = img.getBoundingClientRect();
        setZoom(true, (e.clientX - r.left) / r.width, (e.clientY - r.top) / r.height);
      }
    }
  };
  el.stage.addEventListener('pointerup', up);
  el.stage.addEventListener('pointercancel', up);
}

// ---- panels ------------------------------------------------------------------------

// toggles puts a button on the bar for each registered panel.
function toggles() {
  clear(el.toggles, cull.loupePanels().map((p) => {
    const b = h('button', { type: 'button', class: 'small', 'aria-expanded': 'false', 'data-panel': p.id }, p.title);
    b.addEventListener('click', () => {
      const m = mounted.get(p.id);
      const open = b.getAttribute('aria-expanded') !== 'true';
      b.setAttribute('aria-expanded', String(open));
      if (open && !m) {
        const section = h('section', { class: 'loupe-panel', 'aria-label': p.title, 'data-panel': p.id });
        el.panels.append(section);
        const api = p.mount(section, { assetId: cur, row: cull.rowOf(cur), stage: el.stage }) || {};
        mounted.set(p.id, { panel: p, section, api });
      } else if (m) {
        m.section.hidden = !open;
        if (open && m.api.show) m.api.show(cur);
      }
      el.panels.hidden = ![...mounted.values()].some((x) => !x.section.hidden);
    });
    return b;
  }));
}

// ---- filmstrip -------------------------------------------------------------------

// The filmstrip is one row of thumbnails of the whole view, virtualised:
// a track as wide as every thumbnail would be, and elements only for those
// in sight and a few either side, kept per photo so that a step moves the
// strip rather than redraws it. Thousands of photos cost a few dozen
// elements.
const strip = { el: null, track: null, shown: new Map(), spare: [], thumbs: null, queued: false, follow: false, pitch: 0 };
const STRIP_AROUND = 8; // thumbnails drawn beyond each side of those in sight

function buildStrip() {
  strip.track = h('div', { class: 'filmstrip-track' });
  strip.el = h('nav', { class: 'filmstrip', id: 'filmstrip', 'aria-label': 'Filmstrip' }, strip.track);
  strip.el.addEventListener('scroll', () => refreshStrip(false), { passive: true });
  strip.el.addEventListener('click', (e) => {
    const b = e.target.closest('.fthumb');
    if (!b || !b.dataset.asset) return;
    show(b.dataset.asset);
    el.stage.focus({ preventScroll: true });
  });
  new ResizeObserver(() => {
    strip.pitch = 0;
    refreshStrip(true);
  }).observe(strip.el);
  return strip.el;
}

// pitch is a thumbnail's width and the gap after it, as the CSS sets it
// (read again when the strip's size changes).
function pitch() {
  if (!strip.pitch) strip.pitch = parseFloat(getComputedStyle(strip.el).getPropertyValue('--fs-pitch')) || 76;
  return strip.pitch;
}

// refreshStrip draws the strip at the next frame; follow: with the photo
// shown kept in sight (after a resize).
function refreshStrip(follow) {
  strip.follow = strip.follow || follow;
  if (strip.queued) return;
  strip.queued = true;
  requestAnimationFrame(() => {
    strip.queued = false;
    drawStrip(strip.follow);
    strip.follow = false;
  });
}

// drawStrip draws the thumbnails in sight; follow scrolls the photo shown
// into the middle first when it is not well inside the strip. It runs once
// a frame at most (refreshStrip): a held arrow key lays the strip out once
// per frame, not once per photo.
function drawStrip(follow) {
  if (!dlg || !dlg.open || !cur) return;
  const rows = cull.viewRows();
  const n = rows.length;
  const p = pitch();
  const width = strip.el.clientWidth;
  strip.track.style.width = `${n * p}px`;
  const at = cull.indexOf(cur);
  if (follow && at >= 0) {
    const x = at * p;
    const left = strip.el.scrollLeft;
    if (x < left + p / 2 || x + p > left + width - p / 2) strip.el.scrollLeft = Math.max(0, x - (width - p) / 2);
  }
  const left = strip.el.scrollLeft;
  const first = Math.max(0, Math.floor(left / p) - STRIP_AROUND);
  const last = Math.min(n, Math.ceil((left + width) / p) + STRIP_AROUND);
  const want = new Set();
  for (let i = first; i < last; i++) want.add(rows[i].assetId);
  for (const [id, b] of strip.shown) {
    if (want.has(id)) continue;
    strip.shown.delete(id);
    b.hidden = true;
    strip.spare.push(b);
  }
  for (let i = first; i < last; i++) {
    const row = rows[i];
    let b = strip.shown.get(row.assetId);
    if (!b) {
      b = strip.spare.pop() || makeThumb();
      b.hidden = false;
      strip.shown.set(row.assetId, b);
    }
    paintThumb(b, row, i, n, p);
  }
  // Spares beyond a screenful are of no further use.
  while (strip.spare.length > 2 * STRIP_AROUND) strip.spare.pop().remove();
}

function makeThumb() {
  const img = h('img', { alt: '', draggable: 'false', decoding: 'async' });
  const flag = h('span', { class: 'fthumb-flag', 'aria-hidden': 'true' });
  const b = h('button', { type: 'button', class: 'fthumb' }, img, flag);
  b.parts = { img, flag };
  strip.track.append(b);
  return b;
}

function paintThumb(b, row, i, n, p) {
  const m = cull.marksOf(row.assetId);
  const flag = m.picked ? 'picked' : m.rejected ? 'rejected' : '';
  const current = row.assetId === cur;
  const state = `${row.assetId}|${i}|${n}|${p}|${flag}|${current}|${row.name}`;
  if (b.state === state) return;
  b.state = state;
  b.dataset.asset = row.assetId;
  b.dataset.flag = flag;
  b.style.transform = `translateX(${i * p}px)`;
  b.tabIndex = current ? 0 : -1;
  if (current) b.setAttribute('aria-current', 'true');
  else b.removeAttribute('aria-current');
  b.parts.flag.textContent = m.picked ? '✓' : m.rejected ? '✕' : '';
  b.setAttribute('aria-label', `${row.name || 'Photo'}, ${(i + 1).toLocaleString()} of ${n.toLocaleString()}${m.picked ? ', picked' : m.rejected ? ', rejected' : ''}`);
  b.title = row.name || '';
  if (strip.thumbs) strip.thumbs.watch(b.parts.img, row);
}

// repaintStrip redraws the thumbnails of photos whose flags changed.
function repaintStrip(ids) {
  const n = cull.viewRows().length;
  const p = pitch();
  for (const id of ids) {
    const b = strip.shown.get(id);
    const i = cull.indexOf(id);
    if (b && i >= 0) paintThumb(b, cull.rowOf(id), i, n, p);
  }
}

// ---- faces and signals -----------------------------------------------------------

// What the list does not carry, asked for once the photo has been on
// screen a moment (a held arrow key asks for none of the photos it passes):
// the photo's own answer (its quality signals, the capture time's offset)
// and, when faces were found in it, their boxes.
const facts = new Map(); // asset id → {asset, faces, facesKey}, most recent last
let factsTimer = 0;
let faceMarks = localStorage.getItem('lightbox.loupe.faceMarks') !== 'off';

const facesKey = (row) => JSON.stringify((row && row.faces) || null);

function loadFacts(id) {
  clearTimeout(factsTimer);
  paintSignals();
  paintFaces();
  if (facts.has(id)) return;
  factsTimer = setTimeout(async () => {
    const row = cull.rowOf(id);
    if (cur !== id || !row) return;
    const key = facesKey(row);
    const [asset, faces] = await Promise.allSettled([
      api('GET', `/v1/assets/${id}`),
      row.faces && row.faces.count > 0 ? api('GET', `/v1/assets/${id}/faces`) : Promise.resolve(null),
    ]);
    facts.set(id, { asset: asset.status === 'fulfilled' ? asset.value : null, faces: faces.status === 'fulfilled' ? faces.value : null, facesKey: key });
    while (facts.size > 50) facts.delete(facts.keys().next().value);
    if (cur !== id) return;
    describe(row);
    paintSignals();
    paintFaces();
  }, 150);
}

const WARNING_NAMES = Object.fromEntries(WARNINGS);

// rowQuality is the judgement the project's list gave a row, as the
// photo's own answer gives it (quality.warnings, reasons, score), or null
// when the list had none.
function rowQuality(row) {
  if (!row.warn && row.score === null) return null;
  return { warnings: WARNINGS.map(([code]) => code).filter((code) => row.warn & WARNING_BITS[code]), reasons: row.reasons || [], score: row.score };
}

// qualityWarnings is what the photo's quality signals say, as
// [{key, text, title}]: the API's own judgements when it gives them, each
// with its reason in words, else
// read from its measures: a sharpness (variance of the Laplacian at 1024
// px) below 50 is usually a blurred photo (imaging.Quality), though a
// smooth subject measures low too, hence "maybe"; a mean luminance below
// 0.2 or a fifth of the pixels black is dark, above 0.85 or a tenth white
// is bright.
function qualityWarnings(q) {
  if (!q) return [];
  if (Array.isArray(q.warnings)) {
    const said = new Map((q.reasons || []).map((r) => [r.code, r.message]));
    return q.warnings.map((w) => {
      const name = WARNING_NAMES[w] || w.replace(/_/g, ' ');
      return { key: w, name, text: said.has(w) ? `${name} · ${said.get(w)}` : name, title: '', reason: said.get(w) || '' };
    });
  }
  const out = [];
  const pct = (v) => `${Math.round(v * 100)} %`;
  if (typeof q.sharpness === 'number' && q.sharpness < 50) {
    out.push({ key: 'blurry', text: 'Maybe blurred', title: `Sharpness ${Math.round(q.sharpness)}: below 50 is usually blurred` });
  }
  if ((typeof q.meanLuminance === 'number' && q.meanLuminance < 0.2) || q.shadowsClipped > 0.2) {
    out.push({ key: 'underexposed', text: 'Dark', title: `Mean brightness ${pct(q.meanLuminance || 0)}, ${pct(q.shadowsClipped || 0)} of pixels black` });
  }
  if (q.meanLuminance > 0.85 || q.highlightsClipped > 0.1) {
    out.push({ key: 'overexposed', text: 'Bright', title: `Mean brightness ${pct(q.meanLuminance || 0)}, ${pct(q.highlightsClipped || 0)} of pixels white` });
  }
  return out;
}

// paintSignals writes the line over the photo: its warnings, its faces,
// and the switch for the face marks.
function paintSignals() {
  const row = cur && cull.rowOf(cur);
  if (!row) return;
  const f = facts.get(cur);
  const q = (f && f.asset && f.asset.quality) || rowQuality(row);
  // A face's warning says how many of the faces: the reason on hover.
  const fs = row.faces;
  const ofFaces = { eyes_closed: fs && fs.eyesClosed, face_soft: fs && fs.outOfFocus };
  const chips = qualityWarnings(q).map((w) => {
    const n = fs && fs.count > 0 ? ofFaces[w.key] : 0;
    return h('span', { class: 'signal', 'data-signal': w.key, title: (n ? w.reason : w.title) || null },
      n ? `${w.name}: ${n} of ${fs.count}` : w.text);
  });
  const score = q && typeof q.score === 'number' ? h('span', {
    class: 'signal', 'data-signal': 'score', id: 'loupe-score',
    title: 'The assistant’s keeper score, 0 to 100: focus, steadiness, exposure, and faces where found',
  }, `Score ${q.score}`) : null;
  if (fs && fs.count > 0) {
    if (fs.eyesClosed && !chips.some((c) => c.dataset.signal === 'eyes_closed')) {
      chips.push(h('span', { class: 'signal', 'data-signal': 'eyes_closed' }, `Eyes closed: ${fs.eyesClosed} of ${fs.count}`));
    }
    if (fs.outOfFocus && !chips.some((c) => c.dataset.signal === 'face_soft')) {
      chips.push(h('span', { class: 'signal', 'data-signal': 'face_soft' }, `Soft face: ${fs.outOfFocus} of ${fs.count}`));
    }
  }
  const quiet = !chips.length && q ? h('span', { class: 'signal', 'data-signal': 'none' }, 'No blur or exposure flagged') : null;
  const faces = fs && fs.count > 0 ? [
    h('span', { class: 'signal', 'data-signal': 'faces' }, plural(fs.count, 'face')),
    h('button', {
      type: 'button', class: 'small', id: 'loupe-face-marks', 'aria-pressed': String(faceMarks), 'aria-keyshortcuts': 'F',
      title: 'Show or hide the face marks (F)', onclick: () => toggleFaceMarks(),
    }, 'Face marks', h('kbd', { 'aria-hidden': 'true' }, 'F')),
  ] : null;
  clear(el.signals, score, chips, quiet, faces);
  el.signals.dataset.facts = f ? cur : ''; // the photo whose own answer the line has read
}

// paintFaces draws a box over each face found, marked when its eyes are
// closed or it is soft. The boxes are fractions of the preview the faces
// were found in, which is the one shown unless the photo has an edit.
function paintFaces() {
  clear(el.faces);
  const row = cur && cull.rowOf(cur);
  const f = row && facts.get(cur);
  const found = f && f.faces;
  el.faces.hidden = !faceMarks;
  if (!found || found.status !== 'done' || !found.faces.length || row.edited) return;
  el.faces.dataset.asset = cur;
  for (const face of found.faces) {
    const b = face.box;
    const eyes = face.eyesClosed ? 'closed' : face.eyeOpenness ? 'open' : '';
    const labels = [face.eyesClosed ? 'Eyes closed' : '', face.outOfFocus ? 'Soft' : ''].filter(Boolean);
    const open = face.eyeOpenness ? `eyes ${Math.round(face.eyeOpenness.left * 100)} % and ${Math.round(face.eyeOpenness.right * 100)} % open` : '';
    const box = h('div', {
      class: 'face-box', 'data-eyes': eyes, 'data-soft': face.outOfFocus ? 'true' : null,
      title: [labels.join(', '), open, `sharpness ${Math.round(face.sharpness)}`].filter(Boolean).join('; '),
    }, labels.length ? h('span', { class: 'face-label' }, labels.join(' · ')) : null);
    // Through the CSSOM: the page's content policy refuses style attributes.
    Object.assign(box.style, { left: `${b.x * 100}%`, top: `${b.y * 100}%`, width: `${b.w * 100}%`, height: `${b.h * 100}%` });
    el.faces.append(box);
  }
  placeFaces();
}

// placeFaces lays the faces' layer exactly over the photo as drawn.
function placeFaces() {
  if (!dlg || zoomed) return;
  const img = el.stage.querySelector('img.preview-img');
  if (!img || !img.naturalWidth || !el.faces.isConnected) return;
  const s = el.stage.getBoundingClientRect();
  const r = img.getBoundingClientRect();
  const st = el.faces.style;
  st.left = `${r.left - s.left - el.stage.clientLeft}px`;
  st.top = `${r.top - s.top - el.stage.clientTop}px`;
  st.width = `${r.width}px`;
  st.height = `${r.height}px`;
}

function toggleFaceMarks() {
  faceMarks = !faceMarks;
  localStorage.setItem('lightbox.loupe.faceMarks', faceMarks ? 'on' : 'off');
  el.faces.hidden = !faceMarks;
  const b = el.signals.querySelector('#loupe-face-marks');
  if (b) b.setAttribute('aria-pressed', String(faceMarks));
  announce(faceMarks ? 'Face marks shown.' : 'Face marks hidden.');
}

// ---- keys ------------------------------------------------------------------------------

const LOUPE = { scopes: ['loupe'] };
cull.registerKey('arrowright', 'Next photo (at 100 %: pan)', () => (zoomed ? pan(1, 0) : step(1)), LOUPE);
cull.registerKey('arrowleft', 'Previous photo (at 100 %: pan)', () => (zoomed ? pan(-1, 0) : step(-1)), LOUPE);
cull.registerKey('arrowdown', 'At 100 %: pan', () => zoomed && pan(0, 1), LOUPE);
cull.registerKey('arrowup', 'At 100 %: pan', () => zoomed && pan(0, -1), LOUPE);
cull.registerKey('pagedown', 'Next photo', () => step(1), LOUPE);
cull.registerKey('pageup', 'Previous photo', () => step(-1), LOUPE);
cull.registerKey('home', 'First photo', () => jump(-1), LOUPE);
cull.registerKey('end', 'Last photo', () => jump(1), LOUPE);
cull.registerKey('z', 'Zoom to 100 % and back', () => setZoom(!zoomed), LOUPE);
cull.registerKey('f', 'Show or hide the face marks', () => toggleFaceMarks(), LOUPE);
let escTaken = false;
cull.registerKey('escape', 'Back from 100 %, or close the loupe', () => {
  escTaken = true;
  setTimeout(() => { escTaken = false; });
  if (zoomed) setZoom(false);
  else close();
}, LOUPE);

cull.provide('loupe', { open, close });
