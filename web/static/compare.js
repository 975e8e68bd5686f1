// Compare: two to four photos side by side, each at full brightness
// whatever its flag, zoomed to 100 % and panned together (by dragging,
// ↑/↓ and Shift+←/→). ←/→ choose one; the shared keys (flags, 1–5 stars,
// labels) mark the one chosen, and K or its Keep button keeps it, picked,
// and rejects the others, as one change that Ctrl/Cmd-Z undoes. It plugs
// itself into cull.js as 'compare'.

import * as cull from './cull.js';
import { h, clear, announce, plural, givesKeysBack } from './ui.js';
import { previewUrl, fullSize } from './images.js';
import { keyLabel } from './keys.js';

let dlg = null;
let el = {};
let panes = [];
let focusAt = 0;
let zoomed = false;
let popScope = null;

function build() {
  if (dlg) return;
  el.zoom = h('button', { type: 'button', class: 'small', id: 'compare-zoom', 'aria-pressed': 'false', onclick: () => setZoom(!zoomed) },
    '100 %', h('kbd', { 'aria-hidden': 'true' }, 'Z'));
  el.panes = h('div', { class: 'compare-panes', id: 'compare-panes' });
  el.title = h('h2', { id: 'compare-h' }, 'Compare');
  dlg = h('dialog', { id: 'compare', class: 'compare', 'aria-labelledby': 'compare-h', 'aria-describedby': 'compare-help', 'data-cull-keys': '' },
    h('div', { class: 'loupe-bar' },
      h('div', { class: 'loupe-title' }, el.title,
        h('span', { id: 'compare-help', class: 'muted small' },
          '←/→ choose a photo; K keeps it and rejects the others; P, X, U, 0 to 5 and 6 to 9 mark it.')),
      h('div', { class: 'loupe-tools' }, el.zoom,
        h('button', { type: 'button', class: 'small', id: 'compare-close', onclick: () => close() }, 'Close', h('kbd', { 'aria-hidden': 'true' }, 'Esc')))),
    el.panes);
  dlg.addEventListener('close', closed);
  givesKeysBack(dlg, () => focusPane(focusAt, true));
  document.body.append(dlg);
}

// close closes compare and gives the keys back at once, not a task later
// with the dialog's close event.
function close() {
  if (dlg.open) dlg.close();
  closed();
}

function closed() {
  if (popScope) popScope();
  popScope = null;
  panes = [];
  clear(el.panes);
}

export function open(ids) {
  build();
  zoomed = false;
  el.zoom.setAttribute('aria-pressed', 'false');
  panes = ids.slice(0, 4).map((id, k) => pane(id, k)).filter(Boolean);
  el.panes.dataset.n = String(panes.length);
  el.title.textContent = `Compare ${panes.length} photos`;
  clear(el.panes, panes.map((p) => p.el));
  if (!dlg.open) {
    dlg.showModal();
    popScope = cull.pushScope({ name: 'compare', targets: () => (panes[focusAt] ? [panes[focusAt].id] : []), advance: () => focusPane(focusAt + 1) });
  }
  focusPane(0);
}

function pane(id, k) {
  const row = cull.rowOf(id);
  if (!row) return null;
  const img = h('img', { alt: `Preview of ${row.name}`, draggable: 'false' });
  const msg = h('p', { class: 'loupe-msg' });
  // The flag as a mark over the photo, never by dimming it: a rejected
  // frame's exposure is still judged beside the others.
  const badge = h('span', { class: 'pane-badge', 'aria-hidden': 'true' });
  const stage = h('div', { class: 'pane-stage' }, img, badge, msg);
  const marks = h('span', { class: 'pane-marks' });
  const label = h('span', { class: 'label-chip' });
  const keep = h('button', {
    type: 'button', class: 'small primary', 'data-keep': String(k + 1), onclick: () => keepOne(k),
    'aria-label': `Keep photo ${k + 1}, ${row.name}, and reject the others`,
  },
    'Keep this one', h('kbd', { 'aria-hidden': 'true' }, 'K'));
  const figure = h('figure', { class: 'pane', tabindex: '-1', 'data-asset': id, 'aria-label': `Photo ${k + 1}: ${row.name}` },
    h('figcaption', {}, h('span', { class: 'pane-num' }, String(k + 1)), ' ', h('span', { class: 'pane-name' }, row.name), ' ', marks, ' ', label),
    stage, keep);
  const p = { id, row, el: figure, img, stage, marks, label, msg, badge };
  previewUrl(row).then((url) => {
    if (url) img.src = url;
    else msg.textContent = 'No preview.';
  }).catch(() => { msg.textContent = 'The preview could not be loaded.'; });
  figure.addEventListener('focusin', () => focusPane(k, false));
  figure.addEventListener('pointerdown', () => focusPane(k));
  stage.addEventListener('scroll', () => sync(p));
  drag(p);
  paintMarks(p);
  return p;
}

function paintMarks(p) {
  const m = cull.marksOf(p.id);
  p.marks.textContent = [m.picked ? '✓ Picked' : m.rejected ? '✕ Rejected' : '', cull.starText(m.rating || 0)].filter(Boolean).join(' · ');
  p.el.dataset.flag = m.picked ? 'picked' : m.rejected ? 'rejected' : '';
  p.badge.textContent = m.picked ? '✓' : m.rejected ? '✕' : '';
  p.label.dataset.label = m.colorLabel || '';
  p.label.textContent = m.colorLabel ? cull.LABEL_NAMES[m.colorLabel] : '';
}

cull.onMarksChange((ids) => {
  for (const p of panes) if (ids.includes(p.id)) paintMarks(p);
});

function focusPane(k, move = true) {
  if (!panes.length) return;
  focusAt = Math.max(0, Math.min(panes.length - 1, k));
  panes.forEach((p, i) => p.el.classList.toggle('current', i === focusAt));
  if (move && !panes[focusAt].el.contains(document.activeElement)) panes[focusAt].el.focus({ preventScroll: true });
}

// keepOne picks photo k and rejects the others, in one undoable change.
function keepOne(k) {
  const keeper = panes[k];
  if (!keeper) return;
  const actions = panes.map((p) => (p === keeper
    ? { assetId: p.id, picked: true, rejected: false }
    : { assetId: p.id, picked: false, rejected: true }));
  cull.applyEach(actions, { label: `kept ${keeper.row.name} over ${plural(panes.length - 1, 'other')}` });
  announce(`Kept ${keeper.row.name}; ${plural(panes.length - 1, 'other')} rejected. ${keyLabel('mod+z')} undoes it.`);
  close();
  if (cull.indexOf(keeper.id) >= 0) {
    cull.select([keeper.id]);
    cull.setFocus(keeper.id);
  }
}

// setZoom shows every photo at 100 %, each centred, then their originals
// where a browser can draw them; their pans stay together from then on.
async function setZoom(on) {
  zoomed = on;
  el.zoom.setAttribute('aria-pressed', String(on));
  el.panes.classList.toggle('zoomed', on);
  const dpr = window.devicePixelRatio || 1;
  for (const p of panes) {
    if (!on) {
      p.img.style.width = '';
      p.img.style.height = '';
      continue;
    }
    const a = p.row.asset || {};
    const w = a.widthPx || p.img.naturalWidth;
    const hgt = a.heightPx || p.img.naturalHeight;
    p.img.style.width = `${w / dpr}px`;
    p.img.style.height = `${hgt / dpr}px`;
  }
  if (!on) return;
  for (const p of panes) scrollTo(p, 0.5, 0.5);
  await Promise.all(panes.map(async (p) => {
    try {
      const full = await fullSize(p.row);
      if (!full || !full.original) return;
      const o = new Image();
      o.src = full.url;
      await o.decode();
      if (zoomed && panes.includes(p)) p.img.src = full.url;
    } catch { /* the preview stays */ }
  }));
}

// scrollTo moves a pane to fractions (fx, fy) of its photo, noting where
// it put it, so that its scroll event is told from a person's.
function scrollTo(p, fx, fy) {
  const s = p.stage;
  s.scrollLeft = fx * (s.scrollWidth - s.clientWidth);
  s.scrollTop = fy * (s.scrollHeight - s.clientHeight);
  p.placed = { left: s.scrollLeft, top: s.scrollTop };
}

// sync moves the other photos to the same place, as fractions of their
// own size, when a person pans one.
function sync(from) {
  const s = from.stage;
  const mine = from.placed && Math.abs(from.placed.left - s.scrollLeft) < 1 && Math.abs(from.placed.top - s.scrollTop) < 1;
  from.placed = null;
  if (mine || !zoomed) return;
  const fx = s.scrollLeft / Math.max(1, s.scrollWidth - s.clientWidth);
  const fy = s.scrollTop / Math.max(1, s.scrollHeight - s.clientHeight);
  for (const p of panes) if (p !== from) scrollTo(p, fx, fy);
}

function drag(p) {
  let down = null;
  p.stage.addEventListener('pointerdown', (e) => {
    if (!zoomed || e.pointerType === 'touch' || e.button !== 0) return;
    down = { x: e.clientX, y: e.clientY, left: p.stage.scrollLeft, top: p.stage.scrollTop };
    p.stage.setPointerCapture(e.pointerId);
  });
  p.stage.addEventListener('pointermove', (e) => {
    if (!down) return;
    p.stage.scrollLeft = down.left - (e.clientX - down.x);
    p.stage.scrollTop = down.top - (e.clientY - down.y);
  });
  const up = () => { down = null; };
  p.stage.addEventListener('pointerup', up);
  p.stage.addEventListener('pointercancel', up);
}

function pan(dx, dy) {
  const p = panes[focusAt];
  if (!p) return;
  p.stage.scrollLeft += dx * p.stage.clientWidth * 0.2;
  p.stage.scrollTop += dy * p.stage.clientHeight * 0.2;
}

// 1 to 5 are the stars here too (keys.js): a photo is kept by K or its
// button, never by its number.
const COMPARE = { scopes: ['compare'] };
cull.registerKey('k', 'Keep the photo chosen, reject the others', () => keepOne(focusAt), COMPARE);
// ←/→ choose a photo at 100 % too, where all of them show the same place.
cull.registerKey('arrowright', 'Choose the next photo', () => focusPane(focusAt + 1), COMPARE);
cull.registerKey('arrowleft', 'Choose the previous photo', () => focusPane(focusAt - 1), COMPARE);
cull.registerKey('arrowdown', 'At 100 %: pan down', () => zoomed && pan(0, 1), COMPARE);
cull.registerKey('arrowup', 'At 100 %: pan up', () => zoomed && pan(0, -1), COMPARE);
cull.registerKey('shift+arrowright', 'At 100 %: pan right', () => zoomed && pan(1, 0), COMPARE);
cull.registerKey('shift+arrowleft', 'At 100 %: pan left', () => zoomed && pan(-1, 0), COMPARE);
cull.registerKey('z', 'Zoom all to 100 % and back, panned together', () => setZoom(!zoomed), COMPARE);
cull.registerKey('escape', 'Close compare', () => close(), COMPARE);

cull.provide('compare', { open });
