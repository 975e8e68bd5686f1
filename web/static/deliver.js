// Delivering a shoot: exports of the selection, the picks or every photo
// with any preset, followed to a download link; client galleries made
// from the selection or the picks, their link copied or opened; and the
// project's galleries with what their viewers left (favourites,
// comments), each changed or deleted here. The grid's Shift+E and Shift+G
// bring its selection here.

import { api, pages, ApiError } from './api.js';
import { h, clear, announce, when, plural, bytes } from './ui.js';
import * as cull from './cull.js';
import { liveEvents } from './model.js';

export const PRESETS = [
  ['full_res', 'Full resolution', 'the originals, as uploaded'],
  ['web', 'Web', 'JPEG, 2048 px on the long edge'],
  ['instagram_carousel', 'Instagram carousel', '1080 × 1350 JPEG, centre-cropped'],
  ['story_9x16', 'Story 9:16', '1080 × 1920 JPEG, centre-cropped'],
  ['contact_sheet_pdf', 'Contact sheet (PDF)', 'A4 pages of thumbnails with names and capture times'],
];
// XMP_SETTINGS are the XMP settings each preset takes (render/preset.go's
// Allowed): a sidecar beside each original, or the packet inside each
// rendered JPEG; a contact sheet carries none.
const XMP_SETTINGS = {
  full_res: ['xmp', 'xmpNaming', 'picked'],
  web: ['xmp', 'picked'],
  instagram_carousel: ['xmp', 'picked'],
  story_9x16: ['xmp', 'picked'],
};
// PICKS are the ways a pick can be written (settings.picked): an editor
// that reads no pick flag sees stars or a colour label instead.
const PICKS = [['none', 'No stars or label (digiKam’s pick label only)'],
  ...[1, 2, 3, 4, 5].map((n) => [`rating:${n}`, `${'★'.repeat(n)} or more`]),
  ...['red', 'yellow', 'green', 'blue', 'purple'].map((c) => [`label:${c}`, `${c[0].toUpperCase()}${c.slice(1)} label`])];
// PAIRS are the files of RAW+JPEG pairs an export takes (settings.pairs).
const PAIRS = [['both', 'Both files'], ['raw', 'The raw only'], ['jpeg', 'The JPEG only']];
const STATUS = { queued: 'Waiting', running: 'Building', done: 'Ready', failed: 'Failed', canceled: 'Cancelled', expired: 'Expired' };
// The most photos one export or gallery takes.
const MAX_PHOTOS = 10000;

// What the grid asked for on the way here: the form to focus and the
// photos to use.
let asked = null;

function projectFromHash() {
  const m = location.hash.match(/^#\/projects\/([^/]+)/);
  return m ? m[1] : null;
}

function bring(form) {
  const p = projectFromHash();
  if (!p) return;
  if (!cull.selectionSize()) {
    announce('Select photos first, or choose the picks on the Deliver page.');
  }
  asked = { form, source: cull.selectionSize() ? 'selection' : 'picks' };
  location.hash = `#/projects/${p}/deliver`;
}

cull.registerKey('shift+e', 'Export the selected photos', () => bring('export'),
  { scopes: ['grid'], button: { id: 'open-export', label: 'Export…' } });
cull.registerKey('shift+g', 'Make a client gallery of the selected photos', () => bring('gallery'),
  { scopes: ['grid'], button: { id: 'open-gallery', label: 'Client gallery…' } });

// ---- which photos --------------------------------------------------------------

// pickIds is the ids of the caller's picks, once every flag sent is taken:
// from the rows when the list is whole, else from the API.
async function pickIds(model) {
  await cull.settled();
  if (model.loaded) {
    return model.rows.filter((r) => !r.hidden && r.assetId && r.rating && r.rating.picked).map((r) => r.assetId);
  }
  const ids = [];
  await pages(`/v1/projects/${model.projectId}/assets?picked=true`, (items) => { for (const a of items) ids.push(a.id); },
    { limit: 1000, max: MAX_PHOTOS + 1 });
  return ids;
}

function pickCount(model) {
  let n = 0;
  for (const r of model.rows) if (!r.hidden && r.assetId && r.rating && r.rating.picked) n++;
  return n;
}

// sourceBox is a choice of photos: the selection, the picks and (for an
// export) every photo, each with its count.
function sourceBox(name, model, { all = false, initial = 'picks' } = {}) {
  const options = [['selection', 'The selected photos'], ['picks', 'The picks']];
  if (all) options.push(['all', 'Every photo of the project']);
  const inputs = {};
  const labels = {};
  const box = h('fieldset', { class: 'source' }, h('legend', {}, 'Photos'),
    options.map(([k, text]) => {
      const id = `${name}-source-${k}`;
      inputs[k] = h('input', { type: 'radio', name: `${name}-source`, id, value: k, checked: k === initial || null });
      labels[k] = h('label', { for: id }, text);
      return h('span', { class: 'check' }, inputs[k], labels[k]);
    }));
  const counts = () => {
    const sel = cull.selectionSize();
    labels.selection.textContent = `The selected photos (${sel.toLocaleString()})`;
    inputs.selection.disabled = sel === 0;
    if (!sel && inputs.selection.checked) inputs.picks.checked = true;
    labels.picks.textContent = model.loaded ? `The picks (${pickCount(model).toLocaleString()})` : 'The picks';
  };
  counts();
  return {
    box,
    counts,
    value: () => Object.keys(inputs).find((k) => inputs[k].checked),
    // ids resolves to the photos chosen; null for every photo.
    async ids() {
      const v = this.value();
      if (v === 'all') return null;
      const ids = v === 'selection' ? cull.selectedIds() : await pickIds(model);
      if (!ids.length) throw new Error(v === 'selection' ? 'No photo is selected.' : 'There are no picks yet: pick photos with P in Photos.');
      if (ids.length > MAX_PHOTOS) throw new Error(`That is ${ids.length.toLocaleString()} photos; ${MAX_PHOTOS.toLocaleString()} at most go at once.`);
      return ids;
    },
  };
}

// ---- the page ----------------------------------------------------------------------

// deliverView fills root with the export and gallery forms and lists;
// teardown collects what to undo on leaving.
export function deliverView(root, model, teardown) {
  const ask = asked;
  asked = null;
  const offs = [];
  const exportsPart = exportsSection(model, offs, ask && ask.form === 'export' ? ask.source : null);
  const galleriesPart = galleriesSection(model, offs, ask && ask.form === 'gallery' ? ask.source : null);
  clear(root, exportsPart.el, galleriesPart.el);
  // A flag set elsewhere arrives as marks, not as a change of the rows.
  const onChange = () => { exportsPart.counts(); galleriesPart.counts(); };
  model.addEventListener('change', onChange);
  model.addEventListener('marks', onChange);
  offs.push(() => {
    model.removeEventListener('change', onChange);
    model.removeEventListener('marks', onChange);
  });
  teardown.push(() => { for (const off of offs) off(); });
  if (ask) (ask.form === 'export' ? exportsPart : galleriesPart).focus();
}

// ---- exports ----------------------------------------------------------------------------

// The exports started in this browser, per project, newest first: the API
// lists no exports, and a person comes back for a download.
const KEPT = 20;
function keptExports(project) {
  try { return JSON.parse(localStorage.getItem(`lightbox.exports.${project}`) || '[]'); } catch { return []; }
}
function keepExport(project, id) {
  const ids = [id, ...keptExports(project).filter((x) => x !== id)].slice(0, KEPT);
  try { localStorage.setItem(`lightbox.exports.${project}`, JSON.stringify(ids)); } catch { /* not kept */ }
}
function forgetExport(project, id) {
  try { localStorage.setItem(`lightbox.exports.${project}`, JSON.stringify(keptExports(project).filter((x) => x !== id))); } catch { /* not kept */ }
}

function exportsSection(model, offs, source) {
  const project = model.projectId;
  const src = sourceBox('export', model, { all: true, initial: source || 'picks' });
  const preset = h('select', { id: 'export-preset' }, PRESETS.map(([k, label, what]) => h('option', { value: k }, `${label}: ${what}`)));
  const pairs = h('select', { id: 'export-pairs' }, PAIRS.map(([k, label]) => h('option', { value: k }, label)));
  const xmp = xmpFields();
  preset.addEventListener('change', () => xmp.show(preset.value));
  xmp.show(preset.value);
  const error = h('p', { class: 'error', role: 'alert', id: 'export-error' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'export-start' }, 'Export');
  const form = h('form', { id: 'export-form', class: 'deliver-form' }, src.box,
    h('div', { class: 'preset-field' }, h('label', { for: 'export-preset' }, 'Preset'), preset),
    h('div', { class: 'preset-field' }, h('label', { for: 'export-pairs' }, 'RAW+JPEG pairs'), pairs), xmp.el, error, submit);
  const list = h('ul', { class: 'exports', id: 'exports', 'aria-live': 'polite' });
  const rows = new Map(); // export id → its row

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    submit.disabled = true;
    try {
      const ids = await src.ids();
      const body = { preset: preset.value };
      if (ids) body.assetIds = ids;
      const settings = xmp.settings(preset.value) || {};
      if (pairs.value !== 'both') settings.pairs = pairs.value;
      if (Object.keys(settings).length) body.settings = settings;
      const ex = await api('POST', `/v1/projects/${project}/exports`, body);
      keepExport(project, ex.id);
      const row = exportRow(ex);
      list.prepend(row.el);
      announce(`Exporting ${ids ? plural(ids.length, 'photo') : 'every photo'} as ${PRESETS.find(([k]) => k === ex.preset)[1]}.`);
      row.el.querySelector('.export-status').focus();
    } catch (err) {
      error.textContent = err.message;
    } finally {
      submit.disabled = false;
    }
  });

  // exportRow is one export's line: its state, progress and, once built,
  // its download link.
  function exportRow(ex) {
    const status = h('span', { class: 'export-status', tabindex: '-1' });
    const bar = h('progress', { max: 1, value: 0, 'aria-label': 'Progress' });
    const link = h('a', { class: 'export-download', hidden: true, download: '' }, 'Download');
    const cancel = h('button', { type: 'button', class: 'small', hidden: true }, 'Cancel');
    const forget = h('button', { type: 'button', class: 'small link', hidden: true }, 'Remove from this list');
    const el = h('li', { class: 'export', id: `export-${ex.id}`, 'data-export': ex.id },
      h('span', { class: 'export-name' }, PRESETS.find(([k]) => k === ex.preset)?.[1] || ex.preset,
        ex.settings && ex.settings.xmp ? ' with XMP' : ''), ' ',
      h('span', { class: 'muted small' }, when(ex.createdAt)), status, bar, link, cancel, forget);
    const row = { el, ex, status, bar, link, cancel, forget, expires: 0 };
    rows.set(ex.id, row);
    cancel.addEventListener('click', async () => {
      cancel.disabled = true;
      try {
        paint(row, await api('POST', `/v1/exports/${ex.id}/cancel`));
        announce('The export is cancelled.');
      } catch (err) {
        announce(`The export could not be cancelled: ${err.message}`, 'error');
      } finally {
        cancel.disabled = false;
      }
    });
    forget.addEventListener('click', () => {
      forgetExport(project, ex.id);
      rows.delete(ex.id);
      el.remove();
    });
    // A link lives 15 minutes: an old one is asked for again on the click.
    link.addEventListener('click', async (e) => {
      if (Date.now() < row.expires - 30000) return;
      e.preventDefault();
      if (await linkFor(row)) link.click();
    });
    paint(row, ex);
    return row;
  }

  async function linkFor(row) {
    try {
      const d = await api('GET', `/v1/exports/${row.ex.id}/download`);
      row.link.href = d.url;
      row.expires = Date.parse(d.expiresAt);
      row.link.textContent = `Download${d.byteSize ? ` (${bytes(d.byteSize)})` : ''}`;
      row.link.hidden = false;
      return true;
    } catch (err) {
      if (err.code === 'export_expired') paint(row, { ...row.ex, status: 'expired' });
      else announce(`The download link could not be made: ${err.message}`, 'error');
      return false;
    }
  }

  function paint(row, ex) {
    const was = row.ex.status;
    row.ex = { ...row.ex, ...ex };
    const x = row.ex;
    const pct = Math.round((x.progress || 0) * 100);
    let text = STATUS[x.status] || x.status;
    if (x.status === 'running') text += ` ${pct} %`;
    if (x.status === 'failed' && x.error) text += `: ${x.error.message || x.error.code}`;
    const skipped = Array.isArray(x.skipped) ? x.skipped.length : x.skipped || 0;
    if (skipped && x.status === 'done') text += ` (${plural(skipped, 'photo')} left out)`;
    row.status.textContent = text;
    row.el.dataset.status = x.status;
    row.bar.value = x.status === 'done' ? 1 : x.progress || 0;
    row.bar.hidden = x.status !== 'queued' && x.status !== 'running';
    row.cancel.hidden = row.bar.hidden;
    row.forget.hidden = !row.bar.hidden;
    if (x.status !== 'done') row.link.hidden = true;
    if (x.status === 'done' && (was !== 'done' || row.link.hidden)) {
      linkFor(row).then((ok) => { if (ok && was && was !== 'done') announce('The export is ready to download.'); });
    }
  }

  // Progress comes as export.updated. Without the stream, unfinished
  // exports are asked after every few seconds; after events were missed
  // (state_sync), at once.
  const onEvent = (e) => {
    const d = e.detail.data;
    const row = d && rows.get(d.exportId);
    if (row) paint(row, { status: d.status, progress: d.progress, error: d.error, skipped: d.skipped });
  };
  const ask = async () => {
    const open = [...rows.values()].filter((r) => r.ex.status === 'queued' || r.ex.status === 'running');
    for (const r of open) {
      try { paint(r, await api('GET', `/v1/exports/${r.ex.id}`)); } catch { /* the next round asks again */ }
    }
  };
  const onSync = (e) => { if (e.detail.projectId === project) ask(); };
  liveEvents.addEventListener('export.updated', onEvent);
  liveEvents.addEventListener('state_sync', onSync);
  offs.push(() => {
    liveEvents.removeEventListener('export.updated', onEvent);
    liveEvents.removeEventListener('state_sync', onSync);
  });
  let timer = null;
  const poll = async () => {
    if (model.live !== 'live') await ask();
    timer = setTimeout(poll, 3000);
  };
  timer = setTimeout(poll, 3000);
  offs.push(() => clearTimeout(timer));

  (async () => {
    for (const id of keptExports(project)) {
      try {
        list.append(exportRow(await api('GET', `/v1/exports/${id}`)).el);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) forgetExport(project, id);
      }
    }
  })();

  const el = h('section', { class: 'card', 'aria-labelledby': 'export-h', id: 'deliver-export' },
    h('h2', { id: 'export-h' }, 'Export'), form,
    h('h3', {}, 'Exports from this browser'), list);
  return { el, counts: () => src.counts(), focus: () => preset.focus() };
}

// xmpFields are the export's XMP settings: on or off, the sidecars' names
// and how picks are written, each shown for the presets that take it.
function xmpFields() {
  const on = h('input', { type: 'checkbox', id: 'export-xmp' });
  const onLabel = h('label', { for: 'export-xmp' });
  const what = h('p', { class: 'muted small', id: 'export-xmp-what' });
  const naming = h('select', { id: 'export-xmp-naming' },
    h('option', { value: 'adobe' }, 'NAME.xmp, as Lightroom and Bridge name them'),
    h('option', { value: 'darktable' }, 'NAME.EXT.xmp, as darktable and digiKam name them'));
  const namingField = h('div', {}, h('label', { for: 'export-xmp-naming' }, 'Sidecar names'), naming);
  const picked = h('select', { id: 'export-picked', 'aria-describedby': 'export-picked-hint' },
    PICKS.map(([v, text]) => h('option', { value: v }, text)));
  const pickedField = h('div', {}, h('label', { for: 'export-picked' }, 'Picks written as'), picked,
    h('p', { class: 'muted small', id: 'export-picked-hint' }, 'Lightroom reads no pick flag from XMP: to see your picks there, write them as stars or a label.'));
  const el = h('fieldset', { class: 'xmp-fields', id: 'export-xmp-fields' }, h('legend', {}, 'For editors'),
    h('div', { class: 'xmp-switch' }, h('span', { class: 'check' }, on, onLabel), what), namingField, pickedField);
  let shown = '';
  const sync = () => {
    const keys = XMP_SETTINGS[shown] || [];
    el.hidden = !keys.length;
    namingField.hidden = !keys.includes('xmpNaming');
    naming.disabled = picked.disabled = !on.checked;
  };
  on.addEventListener('change', sync);
  return {
    el,
    // show fits the fields to a preset.
    show(p) {
      shown = p;
      const sidecars = p === 'full_res';
      onLabel.textContent = sidecars ? 'XMP sidecars' : 'XMP in each JPEG';
      what.textContent = `Your stars, rejects, colour labels, keywords and captions, ${sidecars
        ? 'in a sidecar beside each original (a sidecar uploaded with a photo comes back with them added)'
        : 'inside each photo'}.`;
      sync();
    },
    // settings are the XMP settings to send for preset p, only those it
    // takes; none when XMP is off.
    settings(p) {
      const keys = XMP_SETTINGS[p] || [];
      if (!keys.includes('xmp') || !on.checked) return null;
      const out = { xmp: true, picked: picked.value };
      if (keys.includes('xmpNaming')) out.xmpNaming = naming.value;
      return out;
    },
  };
}

// ---- galleries ------------------------------------------------------------------------------

// galleryFields are a gallery's settings as form fields, filled from g
// when changing one; values() is what to send (a PATCH sends only what
// changed).
function galleryFields(prefix, g = null) {
  const id = (n) => `${prefix}-${n}`;
  const title = h('input', { id: id('title'), required: true, maxlength: 200, autocomplete: 'off', value: g ? g.title : null });
  const password = h('input', { id: id('password'), type: 'password', autocomplete: 'new-password', minlength: 4, maxlength: 256 });
  const dropPassword = h('input', { type: 'checkbox', id: id('no-password') });
  const expiry = h('input', { id: id('expires'), type: 'date', value: g && g.expiresAt ? localDay(g.expiresAt) : null });
  const watermark = h('input', { type: 'checkbox', id: id('watermark'), checked: (g && g.watermark) || null });
  const markText = h('input', { id: id('watermark-text'), maxlength: 100, autocomplete: 'off', value: g && g.watermarkText ? g.watermarkText : null,
    placeholder: 'The gallery’s title' });
  const markPlace = h('select', { id: id('watermark-position') },
    h('option', { value: 'corner', selected: !g || g.watermarkPosition !== 'center' || null }, 'In the corner'),
    h('option', { value: 'center', selected: (g && g.watermarkPosition === 'center') || null }, 'In the centre'));
  const markOpacity = h('input', { id: id('watermark-opacity'), type: 'range', min: 5, max: 100, step: 5,
    value: String(Math.round(100 * (g && g.watermarkOpacity != null ? g.watermarkOpacity : 0.3))) });
  const downloads = h('input', { type: 'checkbox', id: id('downloads'), checked: (g && g.allowDownloads) || null });
  const names = h('input', { type: 'checkbox', id: id('file-names'), checked: (g && g.showFileNames) || null });
  const limit = h('input', { id: id('selection-limit'), type: 'number', min: 1, max: 10000, step: 1, inputmode: 'numeric',
    placeholder: 'No limit', value: g && g.selectionLimit != null ? String(g.selectionLimit) : null });
  const sync = () => {
    markText.disabled = markPlace.disabled = markOpacity.disabled = !watermark.checked;
    password.disabled = dropPassword.checked;
  };
  watermark.addEventListener('change', sync);
  dropPassword.addEventListener('change', sync);
  sync();
  const el = h('div', { class: 'fields gallery-fields' },
    h('div', {}, h('label', { for: id('title') }, 'Title'), title),
    h('div', {}, h('label', { for: id('password') }, g ? (g.requiresPassword ? 'New password (blank keeps it)' : 'Password (optional)') : 'Password (optional)'),
      password,
      g && g.requiresPassword ? h('span', { class: 'check' }, dropPassword, h('label', { for: id('no-password') }, 'No password')) : null),
    h('div', {}, h('label', { for: id('expires') }, 'Open until (optional)'), expiry),
    h('div', {},
      h('span', { class: 'check' }, watermark, h('label', { for: id('watermark') }, 'Watermark the photos')),
      h('label', { for: id('watermark-text') }, 'Watermark text'), markText,
      h('label', { for: id('watermark-position') }, 'Where'), markPlace,
      h('label', { for: id('watermark-opacity') }, 'How strong'), markOpacity),
    h('div', {}, h('label', { for: id('selection-limit') }, 'Clients may choose up to (optional)'), limit),
    h('div', {},
      h('span', { class: 'check' }, names, h('label', { for: id('file-names') }, 'Show file names')),
      h('span', { class: 'check' }, downloads, h('label', { for: id('downloads') }, 'Clients may download the originals'))));
  return {
    el,
    title,
    values() {
      const v = {
        title: title.value.trim(),
        expiresAt: expiry.value ? new Date(`${expiry.value}T23:59:59`).toISOString() : null,
        watermark: watermark.checked,
        watermarkText: watermark.checked && markText.value.trim() ? markText.value.trim() : null,
        allowDownloads: downloads.checked,
        showFileNames: names.checked,
        selectionLimit: limit.value ? Number(limit.value) : null,
      };
      if (watermark.checked) {
        v.watermarkPosition = markPlace.value;
        v.watermarkOpacity = Number(markOpacity.value) / 100;
      }
      if (dropPassword.checked) v.password = null;
      else if (password.value) v.password = password.value;
      if (!g) return v;
      const out = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === 'password') out[k] = x;
        else if (k === 'expiresAt' ? localDay(x) !== localDay(g.expiresAt) : x !== (g[k] ?? null)) out[k] = x;
      }
      // The text is kept while the watermark is off, so turning it off
      // does not lose it.
      if (!watermark.checked) delete out.watermarkText;
      return out;
    },
  };
}

function localDay(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

function fieldMessage(err) {
  const f = err.details && err.details.fields;
  return f ? Object.entries(f).map(([k, v]) => `${k} ${v}`).join('; ') : err.message;
}

// copyLink puts a link on the clipboard, by the API when the page may use
// it, else through a selected field.
async function copyLink(url) {
  if (await copyText(url)) announce('The link is copied.');
  else announce(`Copy this link: ${url}`);
}

// copyText puts text on the clipboard, through a selected textarea where
// the page may not use the clipboard API, and says whether it could.
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const t = h('textarea', { class: 'visually-hidden', readonly: true }, text);
    document.body.append(t);
    t.select();
    const ok = document.execCommand('copy');
    t.remove();
    return ok;
  }
}

// fileNameList is what Lightroom Classic's Library filter takes (Text,
// Filename, Contains): the names without their extensions, so a raw and
// its JPEG both match, each once, separated by commas.
export function fileNameList(names) {
  return [...fileBases(names)].join(', ');
}

const fileBases = (names) => new Set(names.map((n) => n.replace(/\.[^.]*$/, '')));

async function copyFileNames(names, whose) {
  const list = fileNameList(names);
  if (await copyText(list)) announce(`${whose} file names are copied: paste them in Lightroom's Library filter (Text, Filename, Contains).`);
  else announce(`Copy these file names: ${list}`);
}

function galleriesSection(model, offs, source) {
  const project = model.projectId;
  const src = sourceBox('gallery', model, { initial: source || 'picks' });
  const fields = galleryFields('gallery');
  const error = h('p', { class: 'error', role: 'alert', id: 'gallery-error' });
  const made = h('div', { id: 'gallery-made', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'gallery-create' }, 'Make the gallery');
  const form = h('form', { id: 'gallery-form', class: 'deliver-form' }, src.box, fields.el, error, submit);
  const list = h('ul', { class: 'galleries', id: 'galleries' });
  const moreButton = h('button', { type: 'button', class: 'small', id: 'galleries-more', hidden: true }, 'More galleries');
  let cursor = '';
  // Every change of a gallery, here, in another tab or by a client,
  // arrives as gallery.updated: a listed gallery's row reads it again (its
  // counts, who chose what), a new one is listed, a deleted one leaves.
  // After events were missed (state_sync), every row reads its gallery
  // again and the newest are listed.
  const shown = new Map(); // gallery id → {li, refresh}
  const onGallery = (e) => {
    if (e.detail.projectId !== project) return;
    const { galleryId, deleted } = e.detail.data;
    if (deleted) unlist(galleryId);
    else if (shown.has(galleryId)) shown.get(galleryId).refresh();
    else api('GET', `/v1/galleries/${galleryId}`).then(upsert, () => {});
  };
  const onSync = (e) => {
    if (e.detail.projectId !== project) return;
    for (const { refresh } of shown.values()) refresh();
    api('GET', `/v1/projects/${project}/galleries?limit=20`).then((page) => {
      for (const g of page.items.reverse()) if (!shown.has(g.id)) upsert(g);
    }, () => {});
  };
  liveEvents.addEventListener('gallery.updated', onGallery);
  liveEvents.addEventListener('state_sync', onSync);
  offs.push(() => {
    liveEvents.removeEventListener('gallery.updated', onGallery);
    liveEvents.removeEventListener('state_sync', onSync);
  });
  // upsert shows g: its row drawn again, or a new row at the top.
  const upsert = (g) => {
    if (shown.has(g.id)) shown.get(g.id).refresh(g);
    else list.prepend(galleryRow(g));
  };
  const unlist = (id) => {
    shown.get(id)?.li.remove();
    shown.delete(id);
    if (!list.children.length && !cursor) list.append(h('li', { class: 'muted', id: 'no-galleries' }, 'No galleries yet.'));
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    submit.disabled = true;
    try {
      const assetIds = await src.ids();
      const body = { ...fields.values(), assetIds };
      if (body.password === null) delete body.password;
      const g = await api('POST', `/v1/projects/${project}/galleries`, body);
      upsert(g);
      clear(made, h('p', {}, `“${g.title}” is made with ${plural(g.assetCount, 'photo')}: `,
        h('a', { href: g.shareUrl, target: '_blank', rel: 'noopener', id: 'gallery-made-link' }, g.shareUrl), ' ',
        h('button', { type: 'button', class: 'small', id: 'gallery-made-copy', onclick: () => copyLink(g.shareUrl) }, 'Copy link')));
      announce(`The gallery “${g.title}” is made.`);
      made.querySelector('button').focus();
    } catch (err) {
      error.textContent = fieldMessage(err);
    } finally {
      submit.disabled = false;
    }
  });

  // galleryRow is one gallery: its link, what it shows and what viewers
  // left, and the buttons that change it.
  function galleryRow(g) {
    const li = h('li', { class: 'gallery', 'data-gallery': g.id });
    // Who chose what: "Kim Lee chose 3: a.jpg, b.jpg, c.jpg".
    const choices = h('ul', { class: 'choices muted small', 'aria-label': `Who chose what in ${g.title}` });
    const loadChoices = async () => {
      if (!g.favoriteCount) return clear(choices);
      try {
        const res = await api('GET', `/v1/galleries/${g.id}/favorites`);
        const rows = res.visitors.map((v) => {
          const who = v.name || v.email || 'A visitor who gave no name';
          const names = v.fileNames.slice(0, 5).join(', ') + (v.fileNames.length > 5 ? '…' : '');
          return h('li', {}, `${who} chose ${v.assetIds.length.toLocaleString()}: ${names} `,
            h('button', { type: 'button', class: 'small link', 'data-act': 'copy-names', 'aria-label': `Copy the file names ${who} chose`,
              onclick: () => copyFileNames(v.fileNames, `${who}’s`) }, 'Copy file names'));
        });
        if (res.visitors.length > 1) {
          const all = res.visitors.flatMap((v) => v.fileNames);
          rows.push(h('li', {}, h('button', { type: 'button', class: 'small link', 'data-act': 'copy-all-names',
            onclick: () => copyFileNames(all, 'All the visitors’') }, `Copy all ${fileBases(all).size.toLocaleString()} file names`)));
        }
        clear(choices, rows);
      } catch { /* the counts still say how many */ }
    };
    // refresh draws the gallery again, as given or as the API has it now.
    const refresh = async (fresh) => {
      try {
        g = fresh || await api('GET', `/v1/galleries/${g.id}`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) unlist(g.id);
        return;
      }
      loadChoices();
      if (li.querySelector('form, .confirm')) return; // under a change being made
      // Drawn again as it was: the comments open (read afresh), the focus kept.
      const open = li.querySelector('[data-act="comments"]')?.getAttribute('aria-expanded') === 'true';
      const focused = li.contains(document.activeElement) ? document.activeElement.dataset.act : '';
      draw();
      if (open) li.querySelector('[data-act="comments"]').click();
      if (focused) focusAct(focused);
    };
    shown.set(g.id, { li, refresh });
    loadChoices();
    const draw = () => {
      const facts = [plural(g.assetCount, 'photo'), g.requiresPassword ? 'password protected' : 'no password',
        g.expiresAt ? `open until ${new Date(g.expiresAt).toLocaleDateString()}` : 'no expiry',
        g.watermark ? `watermarked${g.watermarkText ? ` “${g.watermarkText}”` : ''}` : null,
        g.allowDownloads ? 'downloads allowed' : null, g.showFileNames ? 'file names shown' : null,
        g.selectionLimit != null ? `choose up to ${g.selectionLimit}` : null].filter(Boolean).join(' · ');
      const comments = h('div', { class: 'comments', hidden: true });
      const toggle = h('button', { type: 'button', class: 'small', 'aria-expanded': 'false', 'data-act': 'comments' },
        `Comments (${g.commentsCount.toLocaleString()})`);
      toggle.addEventListener('click', () => {
        const open = toggle.getAttribute('aria-expanded') !== 'true';
        toggle.setAttribute('aria-expanded', String(open));
        comments.hidden = !open;
        if (open && !comments.dataset.loaded) loadComments(g, comments);
      });
      clear(li,
        h('div', { class: 'gallery-head' },
          h('h3', {}, g.title),
          h('span', { class: 'gallery-counts', 'aria-label': `${plural(g.favoriteCount, 'favourite')}, ${plural(g.commentsCount, 'comment')}` },
            h('span', { class: 'fav-count', 'aria-hidden': 'true' }, `♥ ${g.favoriteCount.toLocaleString()}`), ' ',
            h('span', { class: 'comment-count', 'aria-hidden': 'true' }, plural(g.commentsCount, 'comment')))),
        h('p', { class: 'muted small' }, facts),
        h('p', { class: 'gallery-link' }, h('a', { href: g.shareUrl, target: '_blank', rel: 'noopener' }, g.shareUrl)),
        h('div', { class: 'buttons' },
          h('button', { type: 'button', class: 'small', 'data-act': 'copy', onclick: () => copyLink(g.shareUrl), 'aria-label': `Copy the link of ${g.title}` }, 'Copy link'),
          h('a', { class: 'button small', href: `/s/${encodeURIComponent(g.shareSlug)}`, target: '_blank', rel: 'noopener', 'data-act': 'open' }, 'Open'),
          toggle,
          h('button', { type: 'button', class: 'small', 'data-act': 'change', onclick: () => changeForm() }, 'Change'),
          h('button', { type: 'button', class: 'small danger', 'data-act': 'delete', onclick: () => remove() }, 'Delete')),
        choices, comments);
    };
    const changeForm = () => {
      const f = galleryFields(`gallery-${g.id}`, g);
      const err = h('p', { class: 'error', role: 'alert' });
      const save = h('button', { type: 'submit', class: 'primary small' }, 'Save');
      const form_ = h('form', { class: 'gallery-change' }, f.el, err,
        h('div', { class: 'buttons' }, save, h('button', { type: 'button', class: 'small', onclick: () => { draw(); focusAct('change'); } }, 'Cancel')));
      form_.addEventListener('submit', async (e) => {
        e.preventDefault();
        err.textContent = '';
        const patch = f.values();
        if (!Object.keys(patch).length) {
          draw();
          focusAct('change');
          return;
        }
        save.disabled = true;
        try {
          g = await api('PATCH', `/v1/galleries/${g.id}`, patch);
          announce(`“${g.title}” is changed.`);
          draw();
          focusAct('change');
        } catch (e2) {
          err.textContent = fieldMessage(e2);
          save.disabled = false;
        }
      });
      clear(li, h('h3', {}, `Change “${g.title}”`), form_);
      f.title.focus();
    };
    const focusAct = (act) => { const b = li.querySelector(`[data-act="${act}"]`); if (b) b.focus(); };
    // remove asks on the row itself, then deletes.
    const remove = () => {
      const yes = h('button', { type: 'button', class: 'small danger', 'data-act': 'delete-yes', onclick: () => removeNow() }, 'Delete it');
      const no = h('button', { type: 'button', class: 'small', onclick: () => { draw(); focusAct('delete'); } }, 'Keep it');
      const buttons = li.querySelector('.buttons');
      buttons.replaceWith(h('div', { class: 'buttons confirm', role: 'group', 'aria-label': 'Confirm' },
        h('span', {}, `Delete “${g.title}”? Its link stops working at once.`), yes, no));
      no.focus();
    };
    const removeNow = async () => {
      try {
        await api('DELETE', `/v1/galleries/${g.id}`);
        const next = li.nextElementSibling || li.previousElementSibling;
        unlist(g.id);
        announce(`“${g.title}” is deleted.`);
        const b = next && next.querySelector('[data-act="copy"]');
        if (b) b.focus();
      } catch (err) {
        announce(`The gallery could not be deleted: ${err.message}`, 'error');
      }
    };
    draw();
    return li;
  }

  // loadComments reads a gallery's comments a page at a time, oldest first.
  async function loadComments(g, box, after = '') {
    box.dataset.loaded = 'true';
    const ul = box.querySelector('ul') || box.appendChild(h('ul', { class: 'comment-list' }));
    box.querySelector('.comments-more')?.remove();
    try {
      const page = await api('GET', `/v1/galleries/${g.id}/comments?limit=20${after ? '&cursor=' + encodeURIComponent(after) : ''}`);
      for (const c of page.items) {
        const row = model.byAsset.get(c.assetId);
        ul.append(h('li', {}, h('span', { class: 'muted small' }, `${row ? row.name : 'A photo'} · ${when(c.createdAt)}`), h('p', {}, c.text)));
      }
      if (!ul.children.length) ul.append(h('li', { class: 'muted' }, 'No comments yet.'));
      const next = page.pageInfo && page.pageInfo.nextCursor;
      if (next) {
        box.append(h('button', { type: 'button', class: 'small comments-more', onclick: () => loadComments(g, box, next) }, 'More comments'));
      }
    } catch (err) {
      box.append(h('p', { class: 'error' }, `The comments could not be loaded: ${err.message}`));
    }
  }

  async function loadGalleries() {
    moreButton.hidden = true;
    try {
      const page = await api('GET', `/v1/projects/${project}/galleries?limit=20${cursor ? '&cursor=' + encodeURIComponent(cursor) : ''}`);
      for (const g of page.items) if (!shown.has(g.id)) list.append(galleryRow(g));
      cursor = (page.pageInfo && page.pageInfo.nextCursor) || '';
      moreButton.hidden = !cursor;
      if (!list.children.length) list.append(h('li', { class: 'muted', id: 'no-galleries' }, 'No galleries yet.'));
    } catch (err) {
      list.append(h('li', { class: 'error' }, `The galleries could not be loaded: ${err.message}`));
    }
  }
  moreButton.addEventListener('click', loadGalleries);
  loadGalleries();
  const observer = new MutationObserver(() => {
    const empty = list.querySelector('#no-galleries');
    if (empty && list.children.length > 1) empty.remove();
  });
  observer.observe(list, { childList: true });
  offs.push(() => observer.disconnect());

  const el = h('section', { class: 'card', 'aria-labelledby': 'gallery-h', id: 'deliver-gallery' },
    h('h2', { id: 'gallery-h' }, 'Client galleries'), form, made,
    h('h3', {}, 'This project’s galleries'), list, moreButton);
  return { el, counts: () => src.counts(), focus: () => fields.title.focus() };
}
