// Editing in the loupe: a panel (cull.registerLoupePanel) with the crop,
// drawn on the photo (free or at a fixed aspect ratio), the quarter turns,
// straightening, and the light and colour sliders of the API's edit
// params. Every change is drawn at once over the photo, approximately, from
// its preview: the same steps as the server's render (crop, turn,
// straighten, then the tone curve and colour in render/edit.go), on a
// canvas the size of the screen. Saved, the edit is a version the server
// renders; its render then replaces the approximation. The photo's versions
// are listed, and the edit is applied to the grid's selection as a batch
// whose progress is followed, its failures retried.

import * as cull from './cull.js';
import { api } from './api.js';
import { h, clear, announce, when, plural } from './ui.js';
import { liveEvents } from './model.js';
import { assetFiles, pick, onFilesChange } from './images.js';

const pct = (v) => `${v > 0 ? '+' : ''}${Math.round(v * 100)}`;
// [param, label, min, max, step, how its value reads]
export const SLIDERS = [
  ['exposure', 'Exposure', -5, 5, 0.05, (v) => `${v > 0 ? '+' : ''}${v.toFixed(2)} EV`],
  ['contrast', 'Contrast', -1, 1, 0.01, pct],
  ['saturation', 'Saturation', -1, 1, 0.01, pct],
  ['vibrance', 'Vibrance', -1, 1, 0.01, pct],
  ['temperature', 'Temperature', -2000, 2000, 50, (v) => `${v > 0 ? '+' : ''}${v} K`],
  ['tint', 'Tint', -1, 1, 0.01, pct],
  ['straighten', 'Straighten', -45, 45, 0.1, (v) => `${v > 0 ? '+' : ''}${v.toFixed(1)}°`],
];
const RATIOS = [['free', 'Free'], ['original', 'Original'], ['1:1', '1:1'], ['3:2', '3:2'], ['2:3', '2:3'], ['4:3', '4:3'],
  ['3:4', '3:4'], ['4:5', '4:5'], ['5:4', '5:4'], ['16:9', '16:9'], ['9:16', '9:16']];
const NEUTRAL = Object.freeze({ exposure: 0, contrast: 0, saturation: 0, vibrance: 0, temperature: 0, tint: 0, straighten: 0, rotate: 0, crop: null });
const FULL = Object.freeze({ x: 0, y: 0, w: 1, h: 1 });
const MODES = [['create_versions', 'as a new version of each'], ['overwrite_latest', 'replacing each one’s latest version']];

// ---- the edit's params ----------------------------------------------------------

// normal is params as the panel holds them: every field, numbers in range.
export function normal(p) {
  const out = { ...NEUTRAL };
  for (const [k, , lo, hi] of SLIDERS) {
    const v = Number(p && p[k]);
    if (Number.isFinite(v)) out[k] = Math.max(lo, Math.min(hi, v));
  }
  const r = Number(p && p.rotate);
  if ([90, 180, 270].includes(r)) out.rotate = r;
  if (p && p.crop && !isFull(p.crop)) {
    out.crop = { x: p.crop.x, y: p.crop.y, w: p.crop.w, h: p.crop.h };
    if (p.crop.ratio > 0) out.crop.ratio = p.crop.ratio;
  }
  return out;
}

// cropOn is crop c (fractions) on a photo of w × h pixels, as the server
// renders it: a crop drawn at a fixed ratio keeps its ratio on every
// photo, as wide as its fractions say where that fits and centred where
// they put it (render.Crop's pixels).
export function cropOn(c, w, h) {
  if (!(c.ratio > 0)) return c;
  let cw = c.w * w;
  let ch = cw / c.ratio;
  if (ch > h) { ch = h; cw = h * c.ratio; }
  if (cw > w) { cw = w; ch = w / c.ratio; }
  const x = Math.min(Math.max((c.x + c.w / 2) * w - cw / 2, 0), w - cw);
  const y = Math.min(Math.max((c.y + c.h / 2) * h - ch / 2, 0), h - ch);
  return { x: x / w, y: y / h, w: cw / w, h: ch / h, ratio: c.ratio };
}

const isFull = (c) => !c || (c.x <= 1e-6 && c.y <= 1e-6 && c.w >= 1 - 1e-6 && c.h >= 1 - 1e-6);

// forApi is params as the API takes them: what is not neutral.
export function forApi(p) {
  const out = {};
  for (const [k] of SLIDERS) if (p[k]) out[k] = p[k];
  if (p.rotate) out.rotate = p.rotate;
  if (p.crop) {
    const r = (v) => Math.round(v * 1e6) / 1e6;
    const x = Math.max(0, r(p.crop.x));
    const y = Math.max(0, r(p.crop.y));
    out.crop = { x, y, w: Math.min(1 - x, r(p.crop.w)), h: Math.min(1 - y, r(p.crop.h)) };
    if (p.crop.ratio > 0) out.crop.ratio = r(p.crop.ratio);
  }
  return out;
}

const same = (a, b) => JSON.stringify(forApi(normal(a))) === JSON.stringify(forApi(normal(b)));

// describe says params in a few words, for versions and the batch.
export function describe(p) {
  const n = normal(p);
  const bits = [];
  for (const [k, label, , , , fmt] of SLIDERS) if (n[k]) bits.push(`${label.toLowerCase()} ${fmt(n[k])}`);
  if (n.rotate) bits.push(`turned ${n.rotate}°`);
  if (n.crop) bits.push(`cropped to ${Math.round(n.crop.w * 100)} × ${Math.round(n.crop.h * 100)} %`);
  return bits.length ? bits.join(', ') : 'no changes';
}

// Crops are kept in fractions of the photo as shown before it is turned
// (the API's); the crop is drawn on the photo turned. toShown and
// fromShown convert between the two for a quarter turn r.
export function toShown(c, r) {
  switch (r) {
    case 90: return { x: 1 - c.y - c.h, y: c.x, w: c.h, h: c.w };
    case 180: return { x: 1 - c.x - c.w, y: 1 - c.y - c.h, w: c.w, h: c.h };
    case 270: return { x: c.y, y: 1 - c.x - c.w, w: c.h, h: c.w };
    default: return { ...c };
  }
}
export function fromShown(d, r) {
  switch (r) {
    case 90: return { x: d.y, y: 1 - d.x - d.w, w: d.h, h: d.w };
    case 180: return { x: 1 - d.x - d.w, y: 1 - d.y - d.h, w: d.w, h: d.h };
    case 270: return { x: 1 - d.y - d.h, y: d.x, w: d.h, h: d.w };
    default: return { ...d };
  }
}

// ---- drawing ----------------------------------------------------------------------

const toLinear = (v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
const toSRGB = (v) => (v <= 0.0031308 ? v * 12.92 : 1.055 * v ** (1 / 2.4) - 0.055);

// adjust applies the tone and colour of p to RGBA pixels in place, as
// render/edit.go's adjust does.
export function adjust(px, p) {
  if (!p.exposure && !p.contrast && !p.saturation && !p.vibrance && !p.temperature && !p.tint) return;
  const gain = 2 ** p.exposure;
  const warm = (p.temperature / 2000) * 0.12;
  const gains = [1 + warm, 1 - p.tint * 0.1, 1 - warm];
  const luts = gains.map(() => new Float32Array(256));
  for (let i = 0; i < 256; i++) {
    const v = (toSRGB(toLinear(i / 255) * gain) - 0.5) * (1 + p.contrast) + 0.5;
    for (let c = 0; c < 3; c++) luts[c][i] = v * gains[c];
  }
  const [lr, lg, lb] = luts;
  const colour = p.saturation || p.vibrance;
  for (let i = 0; i < px.length; i += 4) {
    let r = lr[px[i]];
    let g = lg[px[i + 1]];
    let b = lb[px[i + 2]];
    if (colour) {
      const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
      const sat = Math.max(r, g, b) - Math.min(r, g, b);
      const k = 1 + p.saturation + p.vibrance * (1 - Math.min(1, sat));
      r = lum + (r - lum) * k;
      g = lum + (g - lum) * k;
      b = lum + (b - lum) * k;
    }
    px[i] = r * 255 + 0.5; // a Uint8ClampedArray clamps
    px[i + 1] = g * 255 + 0.5;
    px[i + 2] = b * 255 + 0.5;
  }
}

// cssFilter is the nearest CSS filter to p's tone and colour, for an
// image the page may not read the pixels of (another origin's).
function cssFilter(p) {
  const f = [`brightness(${2 ** (p.exposure / 2.2)})`, `contrast(${1 + p.contrast})`, `saturate(${Math.max(0, 1 + p.saturation + p.vibrance / 2)})`];
  if (p.temperature > 0) f.push(`sepia(${Math.min(0.5, p.temperature / 4000)})`);
  if (p.temperature < 0 || p.tint) f.push(`hue-rotate(${-p.temperature / 100 + p.tint * 20}deg)`);
  return f.join(' ');
}

// geometry is where the edit puts the preview's pixels: the region of the
// source (w × h) shown, its centre, the turn in radians and the size of
// what comes out, in source pixels. cropping draws the whole photo turned
// by quarters only, for the crop to be drawn on.
export function geometry(w, h, p, cropping) {
  const c = cropping || !p.crop ? FULL : cropOn(p.crop, w, h);
  const rw = c.w * w;
  const rh = c.h * h;
  const cx = (c.x + c.w / 2) * w;
  const cy = (c.y + c.h / 2) * h;
  const quarter = p.rotate === 90 || p.rotate === 270;
  const qw = quarter ? rh : rw;
  const qh = quarter ? rw : rh;
  const th = cropping ? 0 : (p.straighten * Math.PI) / 180;
  // Straightening keeps the largest centred region of the same shape that
  // holds no corner of the turned frame.
  const cos = Math.cos(th);
  const sin = Math.abs(Math.sin(th));
  const f = Math.min(qw / (qw * cos + qh * sin), qh / (qw * sin + qh * cos));
  return { cx, cy, angle: (p.rotate * Math.PI) / 180 + th, width: qw * f, height: qh * f };
}

// draw renders p from src onto canvas, fitted in a box of boxW × boxH CSS
// pixels, and answers where the photo lies in the canvas (CSS pixels).
function draw(canvas, src, p, cropping, boxW, boxH) {
  const w = src.naturalWidth;
  const hh = src.naturalHeight;
  const g = geometry(w, hh, p, cropping);
  const fit = Math.min(boxW / g.width, boxH / g.height);
  const cssW = Math.max(1, Math.floor(g.width * fit));
  const cssH = Math.max(1, Math.floor(g.height * fit));
  const dpr = Math.min(2, window.devicePixelRatio || 1);
  // Never finer than the preview's own pixels: no detail to gain.
  const scale = Math.min(dpr * fit, 1);
  canvas.width = Math.max(1, Math.round(g.width * scale));
  canvas.height = Math.max(1, Math.round(g.height * scale));
  canvas.style.width = `${cssW}px`;
  canvas.style.height = `${cssH}px`;
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const paint = (filter) => {
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.filter = filter;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.translate(canvas.width / 2, canvas.height / 2);
    ctx.scale(scale, scale);
    ctx.rotate(g.angle);
    ctx.translate(-g.cx, -g.cy);
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(src, 0, 0, w, hh);
  };
  paint('none');
  try {
    const data = ctx.getImageData(0, 0, canvas.width, canvas.height);
    adjust(data.data, p);
    ctx.putImageData(data, 0, 0);
  } catch {
    paint(cssFilter(p)); // pixels of another origin cannot be read
  }
  return { width: cssW, height: cssH };
}

// ---- the panel ------------------------------------------------------------------------

// One batch of applyTo is followed at a time, whichever photo is shown.
let batchView = null;
// Unsaved edits of the photos moved away from, by asset id, until the
// loupe closes: coming back finds them as they were.
const drafts = new Map();

function mount(section, { assetId, stage }) {
  const st = {
    id: null, // the photo edited
    src: null, // its preview, decoded, unedited
    params: { ...NEUTRAL },
    versions: [],
    base: null, // the version the params started from
    shown: { ...NEUTRAL }, // what the server's render on screen holds
    cropping: false,
    ratio: 'free',
    rendering: null, // the version whose render is awaited
    gen: 0,
  };
  const ids = (n) => `edit-${n}`;
  const offs = []; // what to undo when the panel goes

  // ---- the overlay on the photo ----
  const canvas = h('canvas', { class: 'edit-canvas', 'aria-hidden': 'true' });
  const cropBox = h('div', {
    class: 'crop-box', tabindex: '0', role: 'group', id: ids('crop-box'), hidden: true,
    'aria-roledescription': 'crop area', 'aria-describedby': ids('crop-help'),
  }, ['nw', 'n', 'ne', 'e', 'se', 's', 'sw', 'w'].map((k) => h('span', { class: `crop-handle ${k}`, 'data-handle': k })));
  const frame = h('div', { class: 'edit-frame' }, canvas, cropBox);
  const badge = h('span', { class: 'edit-badge', id: ids('badge') });
  const overlay = h('div', { class: 'edit-overlay', id: ids('overlay') }, frame, badge);

  // ---- the panel's parts ----
  const status = h('p', { class: 'edit-status small', id: ids('status'), role: 'status' });
  const cropButton = h('button', { type: 'button', class: 'small', id: ids('crop'), 'aria-pressed': 'false' }, 'Crop');
  const ratio = h('select', { id: ids('ratio') }, RATIOS.map(([k, label]) => h('option', { value: k }, label)));
  const noCrop = h('button', { type: 'button', class: 'small', id: ids('no-crop') }, 'No crop');
  const left = h('button', { type: 'button', class: 'small', id: ids('rotate-left'), 'aria-label': 'Turn left a quarter' }, '↺ Left');
  const right = h('button', { type: 'button', class: 'small', id: ids('rotate-right'), 'aria-label': 'Turn right a quarter' }, '↻ Right');
  const sliders = {};
  const sliderRows = SLIDERS.map(([k, label, lo, hi, step, fmt]) => {
    const input = h('input', { type: 'range', id: ids(k), min: lo, max: hi, step, value: 0 });
    const out = h('output', { for: ids(k), id: ids(`${k}-value`) }, fmt(0));
    input.addEventListener('input', () => {
      st.params[k] = Number(input.value);
      out.textContent = fmt(st.params[k]);
      input.setAttribute('aria-valuetext', fmt(st.params[k]));
      changed();
    });
    // A double click sets it back to none, as editors do.
    input.addEventListener('dblclick', () => {
      input.value = '0';
      input.dispatchEvent(new Event('input'));
    });
    sliders[k] = { input, out, fmt };
    return h('div', { class: 'slider' }, h('label', { for: ids(k) }, label), out, input);
  });
  const resetAll = h('button', { type: 'button', class: 'small', id: ids('reset') }, 'Reset all');
  const revert = h('button', { type: 'button', class: 'small', id: ids('revert') }, 'Back to the saved version');
  const name = h('input', { id: ids('name'), maxlength: 200, autocomplete: 'off', placeholder: 'e.g. Warm, square' });
  const save = h('button', { type: 'submit', class: 'primary small', id: ids('save') }, 'Save version');
  const saveForm = h('form', { class: 'edit-save', id: ids('save-form') },
    h('label', { for: ids('name') }, 'Version name (optional)'), h('div', { class: 'inline' }, name, save));
  const versions = h('ol', { class: 'edit-versions', id: ids('versions') });
  const mode = h('select', { id: ids('mode') }, MODES.map(([k, label]) => h('option', { value: k }, label)));
  const apply = h('button', { type: 'button', class: 'small', id: ids('apply') }, 'Apply to the selection');
  const batchBox = h('div', { class: 'edit-batch', id: ids('batch'), 'aria-live': 'polite' });

  clear(section,
    h('h3', { class: 'panel-title' }, 'Edit'),
    status,
    h('div', { class: 'edit-row', role: 'group', 'aria-label': 'Crop' }, cropButton,
      h('label', { for: ids('ratio'), class: 'inline-label' }, 'Aspect'), ratio, noCrop),
    h('p', { class: 'visually-hidden', id: ids('crop-help') },
      'Arrow keys move the crop; Shift with an arrow moves its right or bottom edge; plus and minus make it larger or smaller. Drag its corners or edges with a pointer.'),
    h('div', { class: 'edit-row', role: 'group', 'aria-label': 'Turn' }, left, right),
    sliderRows,
    h('div', { class: 'edit-row' }, resetAll, revert),
    saveForm,
    h('h4', {}, 'Versions'), versions,
    h('h4', {}, 'Apply to the selection'),
    h('div', { class: 'edit-row' }, h('label', { for: ids('mode'), class: 'inline-label' }, 'Apply'), mode), apply, batchBox);
  if (batchView) batchView.attach(batchBox);

  // ---- state to screen ----
  const dirty = () => !same(st.params, st.base ? st.base.params : NEUTRAL);

  function paintControls() {
    for (const [k] of SLIDERS) {
      const s = sliders[k];
      s.input.value = String(st.params[k]);
      s.out.textContent = s.fmt(st.params[k]);
      s.input.setAttribute('aria-valuetext', s.fmt(st.params[k]));
    }
    cropButton.setAttribute('aria-pressed', String(st.cropping));
    cropButton.textContent = st.cropping ? 'Done cropping' : 'Crop';
    revert.disabled = !dirty();
    paintApply();
  }

  function paintApply() {
    const n = cull.selectionSize() - (st.id && cull.isSelected(st.id) ? 1 : 0);
    apply.textContent = n ? `Apply to the ${plural(n, 'other selected photo')}` : 'Apply to the selection';
    apply.disabled = !n || !st.src;
    apply.title = n ? '' : 'Select photos in the grid first';
  }

  function paintStatus() {
    if (!st.src) return;
    const bits = [];
    if (st.cropping) bits.push('Cropping: drag the frame or its corners, or use the arrow keys.');
    else if (!same(st.params, st.shown)) bits.push('Approximate preview.');
    else if (st.rendering) bits.push('Rendering…');
    else if (st.base && st.base.failure) bits.push('The render failed.');
    else bits.push(st.versions.length ? 'Showing the server’s render.' : 'No edits yet.');
    if (dirty()) bits.push('Not saved.');
    else if (st.base) bits.push(`Saved as ${versionName(st.base)}.`);
    status.textContent = bits.join(' ');
    badge.textContent = st.cropping ? 'Crop' : 'Approximate preview';
  }

  const versionName = (v) => v.name || `version ${st.versions.indexOf(v) + 1}`;

  function paintVersions() {
    const state = (v) => (v.appliedAt ? 'rendered' : v.failure ? `its render failed: ${v.failure}` : 'rendering…');
    clear(versions, st.versions.length ? st.versions.map((v, i) => h('li', { 'data-version': v.id, 'aria-current': v === st.base ? 'true' : null },
      h('span', { class: 'v-name' }, v.name || `Version ${i + 1}`), ' ',
      h('span', { class: 'muted small' }, `${when(v.createdAt)} · ${describe(v.params)} · ${state(v)}`), ' ',
      h('button', { type: 'button', class: 'small link', 'aria-label': `Use ${v.name || `version ${i + 1}`}`, onclick: () => use(v) }, 'Use'),
      v.failure && v.batchId ? h('button', { type: 'button', class: 'small link', onclick: () => renderAgain(v) }, 'Render again') : null))
      : h('li', { class: 'muted' }, 'None yet.'));
  }

  // ---- the overlay ----
  let queued = false;
  function changed() {
    paintControls();
    sync();
  }

  // sync shows the overlay when what it draws differs from the photo on
  // screen, and draws it once a frame.
  function sync() {
    paintStatus();
    const want = !!st.src && !section.hidden && !stage.classList.contains('zoomed') && (st.cropping || !same(st.params, st.shown));
    stage.classList.toggle('edit-preview', want);
    if (!want) {
      if (overlay.isConnected) overlay.remove();
      return;
    }
    if (overlay.parentNode !== stage) stage.append(overlay);
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      if (!overlay.isConnected || !st.src) return;
      const box = stage.getBoundingClientRect();
      const at = draw(canvas, st.src, st.params, st.cropping, Math.max(1, box.width - 16), Math.max(1, box.height - 16));
      placeCrop(at);
    });
  }

  // The crop in fractions of the photo turned, as drawn.
  const shownCrop = () => toShown(st.params.crop && st.src
    ? cropOn(st.params.crop, st.src.naturalWidth, st.src.naturalHeight) : st.params.crop || FULL, st.params.rotate);
  function setShownCrop(d) {
    const c = clampCrop(d);
    st.params.crop = isFull(c) ? null : fromShown(c, st.params.rotate);
    // A fixed ratio goes with the crop, in the photo's own frame (before
    // the quarter turns), so it holds on photos of other shapes.
    const r = ratioValue();
    if (st.params.crop && r) st.params.crop.ratio = st.params.rotate === 90 || st.params.rotate === 270 ? 1 / r : r;
    changed();
  }

  function placeCrop(at) {
    cropBox.hidden = !st.cropping;
    if (!st.cropping) return;
    const d = shownCrop();
    cropBox.style.left = `${d.x * at.width}px`;
    cropBox.style.top = `${d.y * at.height}px`;
    cropBox.style.width = `${d.w * at.width}px`;
    cropBox.style.height = `${d.h * at.height}px`;
    cropBox.setAttribute('aria-label', `Crop: ${Math.round(d.w * 100)} % wide and ${Math.round(d.h * 100)} % high, from ${Math.round(d.x * 100)} % across and ${Math.round(d.y * 100)} % down`);
  }

  // The photo turned, in pixels, for aspect ratios.
  function shownSize() {
    const w = st.src.naturalWidth;
    const hh = st.src.naturalHeight;
    return st.params.rotate === 90 || st.params.rotate === 270 ? [hh, w] : [w, hh];
  }

  function ratioValue() {
    if (st.ratio === 'free') return 0;
    const [w, hh] = shownSize();
    if (st.ratio === 'original') return w / hh;
    const [a, b] = st.ratio.split(':').map(Number);
    return a / b;
  }

  // clampCrop keeps a crop inside the photo, at least 2 % of each side.
  function clampCrop(d) {
    const min = 0.02;
    const w = Math.max(min, Math.min(1, d.w));
    const hh = Math.max(min, Math.min(1, d.h));
    return { x: Math.max(0, Math.min(1 - w, d.x)), y: Math.max(0, Math.min(1 - hh, d.y)), w, h: hh };
  }

  // fitRatio is the largest crop of the ratio around d's centre that fits.
  function fitRatio(d, r) {
    const k = aspectK(r); // width over height, in fractions
    let w = d.w;
    let hh = w / k;
    if (hh > d.h) { hh = d.h; w = hh * k; }
    if (w > 1) { w = 1; hh = w / k; }
    if (hh > 1) { hh = 1; w = hh * k; }
    const cx = d.x + d.w / 2;
    const cy = d.y + d.h / 2;
    return clampCrop({ x: cx - w / 2, y: cy - hh / 2, w, h: hh });
  }

  // ---- crop by pointer ----
  let drag = null;
  cropBox.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    e.stopPropagation();
    e.preventDefault();
    cropBox.focus({ preventScroll: true });
    const rect = canvas.getBoundingClientRect();
    drag = { handle: e.target.dataset.handle || 'move', x: e.clientX, y: e.clientY, start: shownCrop(), w: rect.width, h: rect.height };
    cropBox.setPointerCapture(e.pointerId);
  });
  cropBox.addEventListener('pointermove', (e) => {
    if (!drag) return;
    e.stopPropagation();
    const dx = (e.clientX - drag.x) / drag.w;
    const dy = (e.clientY - drag.y) / drag.h;
    const s = drag.start;
    let x0 = s.x;
    let y0 = s.y;
    let x1 = s.x + s.w;
    let y1 = s.y + s.h;
    const hd = drag.handle;
    if (hd === 'move') {
      setShownCrop({ x: s.x + dx, y: s.y + dy, w: s.w, h: s.h });
      return;
    }
    if (hd.includes('w')) x0 = Math.min(x1 - 0.02, Math.max(0, s.x + dx));
    if (hd.includes('e')) x1 = Math.max(x0 + 0.02, Math.min(1, x1 + dx));
    if (hd.includes('n')) y0 = Math.min(y1 - 0.02, Math.max(0, s.y + dy));
    if (hd.includes('s')) y1 = Math.max(y0 + 0.02, Math.min(1, y1 + dy));
    let d = { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
    const r = ratioValue();
    if (r) {
      // Keep the ratio, anchored at the corner or edge opposite the handle.
      const k = aspectK(r);
      let w = d.w;
      let hh = d.h;
      if (hd === 'n' || hd === 's') w = hh * k;
      else if (hd === 'e' || hd === 'w') hh = w / k;
      else if (w / hh > k) w = hh * k;
      else hh = w / k;
      const ax = hd.includes('w') ? s.x + s.w : hd.includes('e') ? s.x : s.x + s.w / 2;
      const ay = hd.includes('n') ? s.y + s.h : hd.includes('s') ? s.y : s.y + s.h / 2;
      const nx = hd.includes('w') ? ax - w : hd.includes('e') ? ax : ax - w / 2;
      const ny = hd.includes('n') ? ay - hh : hd.includes('s') ? ay : ay - hh / 2;
      if (nx < -1e-9 || ny < -1e-9 || nx + w > 1 + 1e-9 || ny + hh > 1 + 1e-9) return; // no room at this ratio
      d = { x: nx, y: ny, w, h: hh };
    }
    setShownCrop(d);
  });
  const endDrag = (e) => {
    if (!drag) return;
    e.stopPropagation();
    drag = null;
  };
  cropBox.addEventListener('pointerup', endDrag);
  cropBox.addEventListener('pointercancel', endDrag);
  // The loupe moves on with a swipe and zooms with a click: not while the
  // overlay is in the way.
  for (const t of ['pointerdown', 'pointerup', 'click', 'dblclick']) overlay.addEventListener(t, (e) => e.stopPropagation());

  // ---- crop by keys ----
  // aspectK is a ratio of pixels as a ratio of the crop's fractions.
  const aspectK = (r) => r * (shownSize()[1] / shownSize()[0]);
  cropBox.addEventListener('keydown', (e) => {
    const d = shownCrop();
    const step = e.ctrlKey || e.metaKey ? 0.1 : 0.01;
    const r = ratioValue();
    const k = e.key;
    const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    let next = null;
    if (arrows[k] && !e.shiftKey) {
      next = { ...d, x: d.x + arrows[k][0] * step, y: d.y + arrows[k][1] * step };
    } else if (arrows[k]) {
      // The right or bottom edge moves; at a fixed ratio the other follows.
      let w = d.w + arrows[k][0] * step;
      let hh = d.h + arrows[k][1] * step;
      if (r) {
        if (arrows[k][0]) hh = w / aspectK(r);
        else w = hh * aspectK(r);
      }
      if (d.x + w <= 1 + 1e-9 && d.y + hh <= 1 + 1e-9) next = { ...d, w, h: hh };
    } else if (k === '+' || k === '=' || k === '-') {
      const g = (k === '-' ? -2 : 2) * step;
      const w = d.w + g;
      const hh = r ? w / aspectK(r) : d.h + g;
      if (w <= 1 + 1e-9 && hh <= 1 + 1e-9) next = { x: d.x + (d.w - w) / 2, y: d.y + (d.h - hh) / 2, w, h: hh };
    } else if (k === 'Enter' || k === 'Escape') {
      setCropping(false);
      cropButton.focus();
    } else {
      return;
    }
    e.preventDefault(); // the loupe's keys and the dialog's Esc leave it alone
    e.stopPropagation();
    if (next) setShownCrop(next);
  });

  // ---- controls ----
  function setCropping(on) {
    st.cropping = on;
    changed();
    if (on) requestAnimationFrame(() => { if (!cropBox.hidden) cropBox.focus({ preventScroll: true }); });
  }
  cropButton.addEventListener('click', () => setCropping(!st.cropping));
  ratio.addEventListener('change', () => {
    st.ratio = ratio.value;
    const r = ratioValue();
    if (r) setShownCrop(fitRatio({ ...FULL }, r));
    if (!st.cropping) setCropping(true);
    announce(`Aspect ${RATIOS.find(([k2]) => k2 === st.ratio)[1]}.`);
  });
  noCrop.addEventListener('click', () => {
    st.params.crop = null;
    st.ratio = 'free';
    ratio.value = 'free';
    changed();
    announce('No crop.');
  });
  const turn = (by) => {
    st.params.rotate = (st.params.rotate + by + 360) % 360;
    changed();
    announce(`Turned to ${st.params.rotate}°.`);
  };
  left.addEventListener('click', () => turn(-90));
  right.addEventListener('click', () => turn(90));
  resetAll.addEventListener('click', () => {
    st.params = { ...NEUTRAL };
    st.ratio = 'free';
    ratio.value = 'free';
    changed();
    announce('Every change is reset.');
  });
  revert.addEventListener('click', () => {
    st.params = normal(st.base ? st.base.params : NEUTRAL);
    changed();
  });
  function use(v) {
    st.base = v;
    st.params = normal(v.params);
    st.cropping = false;
    changed();
    paintVersions();
    announce(`Using ${versionName(v)}: ${describe(v.params)}.`);
  }

  // ---- saving and rendering ----
  // saveVersion records the params as a new version of the photo and
  // follows its render; it resolves to the version.
  async function saveVersion() {
    const id = st.id;
    const body = { params: forApi(normal(st.params)) };
    if (st.base) body.parentId = st.base.id;
    if (name.value.trim()) body.name = name.value.trim();
    const v = await api('POST', `/v1/assets/${id}/edits`, body);
    if (st.id !== id) return v;
    st.versions.push(v);
    st.base = v;
    st.rendering = v;
    st.cropping = false;
    name.value = '';
    changed();
    paintVersions();
    followRender(v);
    return v;
  }

  saveForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    save.disabled = true;
    try {
      const v = await saveVersion();
      announce(`Saved as ${versionName(v)}; the server renders it now.`);
    } catch (err) {
      announce(`The edit was not saved: ${err.message}`, 'error');
    } finally {
      save.disabled = false;
    }
  });

  // followRender waits for a version's render: its job's end on the
  // stream, or the version's appliedAt when there is no stream.
  function followRender(v) {
    const gen = st.gen;
    let timer = null;
    const stop = () => {
      liveEvents.removeEventListener('job.done', onDone);
      clearTimeout(timer);
    };
    const onDone = (e) => {
      const d = e.detail.data;
      if (!d || d.jobId !== v.jobId) return;
      stop();
      if (d.status === 'failed') {
        v.failure = d.error ? d.error.message || d.error.code : 'it failed';
        v.batchId = d.batchId;
        rendered(v, gen, v.failure);
      }
    };
    const poll = async () => {
      try {
        const got = await api('GET', `/v1/edits/${v.id}`);
        if (got.appliedAt) {
          stop();
          v.appliedAt = got.appliedAt;
          if (st.gen === gen) loadRender(gen);
          return;
        }
      } catch { /* asked again */ }
      timer = setTimeout(poll, 2000);
    };
    liveEvents.addEventListener('job.done', onDone);
    timer = setTimeout(poll, 2000);
    offs.push(stop);
  }

  // renderAgain runs a version's failed render again.
  async function renderAgain(v) {
    try {
      await api('POST', `/v1/batches/${v.batchId}/retry`);
      v.failure = null;
      st.rendering = v;
      paintVersions();
      paintStatus();
      followRender(v);
      announce(`Rendering ${versionName(v)} again.`);
    } catch (err) {
      announce(`The render could not run again: ${err.message}`, 'error');
    }
  }

  function rendered(v, gen, failure) {
    if (st.gen !== gen) return;
    if (st.rendering === v) st.rendering = null;
    if (failure) announce(`The render of ${versionName(v)} failed: ${failure}`, 'error');
    paintVersions();
    sync();
  }

  // loadRender shows the server's render of the photo's newest version:
  // the approximation steps aside once it is decoded (the loupe swaps its
  // own photo for it at the same time).
  async function loadRender(gen) {
    const id = st.id;
    const [list, got] = await Promise.all([assetFiles(id).catch(() => []), api('GET', `/v1/assets/${id}/edits`).catch(() => null)]);
    const f = pick(list, ['edit_preview']);
    if (f) {
      const img = new Image();
      img.src = f.url;
      await img.decode().catch(() => {});
    }
    if (st.gen !== gen) return;
    if (got) {
      // The same versions, with when each was rendered.
      const at = new Map(got.items.map((v) => [v.id, v.appliedAt]));
      for (const v of st.versions) if (at.get(v.id)) v.appliedAt = at.get(v.id);
    }
    const applied = [...st.versions].reverse().find((x) => x.appliedAt);
    st.shown = normal(applied ? applied.params : NEUTRAL);
    const done = st.rendering && st.rendering.appliedAt ? st.rendering : null;
    if (done) st.rendering = null;
    rendered(done || applied, gen);
  }

  const offFiles = onFilesChange((changedIds) => {
    if (st.id && changedIds.includes(st.id)) loadRender(st.gen);
  });

  // ---- applying to the selection ----
  apply.addEventListener('click', async () => {
    const targets = cull.selectedIds().filter((x) => x !== st.id);
    if (!targets.length) return;
    if (targets.length > 1000) {
      announce(`An edit goes to 1,000 photos at a time; ${targets.length.toLocaleString()} are selected.`, 'error');
      return;
    }
    apply.disabled = true;
    try {
      const v = dirty() || !st.base ? await saveVersion() : st.base;
      const res = await api('POST', `/v1/edits/${v.id}/applyTo`, { assetIds: targets, mode: mode.value });
      if (batchView) batchView.stop();
      batchView = followBatch(res.batchId, targets.length, describe(v.params));
      batchView.attach(batchBox);
      announce(`Applying the edit to ${plural(targets.length, 'photo')}.`);
    } catch (err) {
      announce(`The edit was not applied: ${err.message}`, 'error');
    } finally {
      paintApply();
    }
  });
  const offSel = cull.onSelectionChange(paintApply);

  // ---- the photo ----
  async function show(id) {
    if (id === st.id) return;
    if (st.id && st.src && dirty()) {
      drafts.set(st.id, { ...st.params });
      announce('The unsaved edit is kept until the loupe closes; come back to save it.');
    }
    const gen = ++st.gen;
    st.id = id;
    st.src = null;
    st.params = { ...NEUTRAL };
    st.versions = [];
    st.base = null;
    st.shown = { ...NEUTRAL };
    st.cropping = false;
    st.rendering = null;
    st.ratio = 'free';
    ratio.value = 'free';
    status.textContent = 'Loading the photo’s edits…';
    paintControls();
    paintVersions();
    sync();
    try {
      const [list, files] = await Promise.all([api('GET', `/v1/assets/${id}/edits`), assetFiles(id)]);
      if (st.gen !== gen) return;
      const f = pick(files, ['preview', 'thumbnail']);
      if (!f) {
        status.textContent = 'This photo cannot be edited until it is processed.';
        return;
      }
      const img = new Image();
      img.src = f.url;
      await img.decode();
      if (st.gen !== gen) return;
      st.src = img;
      st.versions = list.items;
      const newest = st.versions[st.versions.length - 1] || null;
      const applied = [...st.versions].reverse().find((v) => v.appliedAt);
      st.base = newest;
      st.params = normal(drafts.get(id) || (newest ? newest.params : NEUTRAL));
      drafts.delete(id);
      st.shown = normal(applied ? applied.params : NEUTRAL);
      if (newest && !newest.appliedAt) {
        st.rendering = newest;
        followRender(newest);
      }
      paintControls();
      paintVersions();
      sync();
    } catch (err) {
      if (st.gen === gen) status.textContent = `The photo’s edits could not be loaded: ${err.message}`;
    }
  }

  // The overlay follows the stage: the loupe redraws it for each photo,
  // for 100 % and back, and the panel may be folded away.
  const watch = new MutationObserver(() => sync());
  watch.observe(stage, { childList: true, attributes: true, attributeFilter: ['class'] });
  watch.observe(section, { attributes: true, attributeFilter: ['hidden'] });
  const resize = new ResizeObserver(() => { if (overlay.isConnected) sync(); });
  resize.observe(stage);

  show(assetId);
  return {
    show,
    destroy() {
      st.gen++;
      drafts.clear();
      watch.disconnect();
      resize.disconnect();
      offFiles();
      offSel();
      for (const off of offs) off();
      overlay.remove();
      stage.classList.remove('edit-preview');
      if (batchView) batchView.detach();
    },
  };
}

// followBatch follows an applyTo batch: its counts from batch.updated and
// batch.completed, or from the API every few seconds without them; its
// failures can be run again.
function followBatch(batchId, total, what) {
  const bar = h('progress', { max: Math.max(1, total), value: 0, id: 'edit-batch-progress', 'aria-label': 'Applied' });
  const text = h('p', { class: 'small', id: 'edit-batch-text' });
  const retry = h('button', { type: 'button', class: 'small', id: 'edit-batch-retry', hidden: true }, 'Retry the failed');
  const el = h('div', { class: 'batch', 'data-batch': batchId }, text, bar, retry);
  let b = { status: 'running', total, completed: 0, failed: 0, completedAt: null };
  let timer = null;
  let stopped = false;

  const paint = () => {
    const done = b.completed + b.failed;
    bar.max = Math.max(1, b.total);
    bar.value = done;
    const finished = !!b.completedAt || done >= b.total;
    el.dataset.status = finished ? (b.failed ? 'failed' : 'done') : 'running';
    text.textContent = finished
      ? (b.failed ? `Applied to ${b.completed.toLocaleString()} of ${plural(b.total, 'photo')}; ${b.failed.toLocaleString()} failed.`
        : `Applied to ${plural(b.total, 'photo')}: ${what}.`)
      : `Applying to ${plural(b.total, 'photo')}: ${done.toLocaleString()} done${b.failed ? `, ${b.failed.toLocaleString()} failed` : ''}…`;
    retry.hidden = !(finished && b.failed);
  };
  const take = (x) => {
    const was = !!b.completedAt;
    b = { ...b, ...x };
    paint();
    if (!was && b.completedAt) announce(b.failed ? `The edit failed on ${plural(b.failed, 'photo')}.` : `The edit is applied to ${plural(b.total, 'photo')}.`);
  };
  const refresh = async () => {
    try {
      take((await api('GET', `/v1/batches/${batchId}`)).batch);
    } catch { /* asked again */ }
  };
  const poll = async () => {
    if (stopped) return;
    await refresh();
    if (!b.completedAt) timer = setTimeout(poll, 3000);
  };
  const onBatch = (e) => {
    const d = e.detail.data;
    if (!d || d.id !== batchId) return;
    take({ status: d.status, total: d.total, completed: d.completed, failed: d.failed,
      completedAt: e.type === 'batch.completed' ? (b.completedAt || new Date().toISOString()) : b.completedAt });
  };
  liveEvents.addEventListener('batch.updated', onBatch);
  liveEvents.addEventListener('batch.completed', onBatch);
  retry.addEventListener('click', async () => {
    retry.disabled = true;
    try {
      const res = await api('POST', `/v1/batches/${batchId}/retry`);
      announce(`Retrying ${plural(res.retriedJobs.length, 'photo')}.`);
      b = { ...b, failed: b.failed - res.retriedJobs.length, completedAt: null };
      paint();
      clearTimeout(timer);
      timer = setTimeout(poll, 3000);
    } catch (err) {
      announce(`Could not retry: ${err.message}`, 'error');
    } finally {
      retry.disabled = false;
    }
  });
  paint();
  poll();
  return {
    attach(box) { clear(box, el); },
    detach() { el.remove(); },
    stop() {
      stopped = true;
      clearTimeout(timer);
      liveEvents.removeEventListener('batch.updated', onBatch);
      liveEvents.removeEventListener('batch.completed', onBatch);
    },
  };
}

cull.registerLoupePanel({ id: 'edit', title: 'Edit', mount });

// openEditPanel opens the loupe's edit panel, or folds it away.
function toggleEditPanel(open) {
  const b = document.querySelector('#loupe .loupe-toggles button[data-panel="edit"]');
  if (b && (open === undefined || (b.getAttribute('aria-expanded') === 'true') !== open)) b.click();
}

cull.registerKey('e', 'Edit: open or close the edit panel', () => toggleEditPanel(), { scopes: ['loupe'] });
cull.registerKey('e', 'Edit the photo in the loupe', (ctx) => {
  const id = cull.focusedId() || ctx.targets[0];
  if (!id) {
    announce('No photo has the focus.');
    return;
  }
  cull.openLoupe(id);
  toggleEditPanel(true);
}, { scopes: ['grid'], button: { id: 'open-edit', label: `Edit` } });
