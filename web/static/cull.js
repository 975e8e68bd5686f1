// Culling state for the open project: the one module the photo grid, the
// loupe, compare and any view built on them import, so that a pick made in
// one shows in all the others at once.
//
// The view: which photos, in which order
//   attach(model) → detach()      follow a ProjectModel (model.js); one project at a time (the
//                                  same one again keeps its filters, selection and undo)
//   projectId()                   the project followed, null when none
//   FILTER_DEFAULTS               {flag: 'any'|'picked'|'rejected'|'unflagged', ratingMin: 0..5 (at least),
//                                  label: 'any', one of COLOR_LABELS, or 'none' (without a colour label),
//                                  camera: '' or a camera's name, from, to: '' or 'YYYY-MM-DD' (local days,
//                                  both included), readiness: 'all'|'processing'|'cull'|'searchable'|'failed'|
//                                  'duplicate', q: '' or words to search for, faces: 'any'|'eyesClosed'|
//                                  'soft'|'good' (some face blinks, some face is soft, neither),
//                                  favorite: '' or 'any' or a gallery's id (the photos a client favourited,
//                                  in any gallery of the project or in that one, as GET …/assets?clientFavorite
//                                  lists them, read again on each gallery.updated event),
//                                  warning: 'any', 'warned' (some warning), 'none', 'exposure' (under or
//                                  over) or one of model.js's WARNINGS codes, as quality.warnings has them}
//   getFilter(), setFilter(patch) a q searches the server (POST /v1/projects/{id}/search with the same
//                                  filters) and shows its best 100 matches by relevance
//   SORTS, getSort() → {key, desc}, setSort(key, desc)   key: 'uploaded' | 'captured' | 'filename'
//   viewIds(), viewRows()         the photos in view, in order (rows are model.js's). A RAW+JPEG pair
//                                  (rows naming each other in row.pair) is one photo there, the raw's,
//                                  and counts once: its JPEG shows alone only where its raw is not
//                                  listed or the filters leave the raw out
//   indexOf(id)                   its place in the view, -1 when out of it
//   rowOf(id)                     the model's row of an asset
//   counts()                      {total, shown, flag: {any, picked, rejected, unflagged},
//                                  stars: [n with at least 0 … 5], label: {any, none, red, …}, cameras: [[name, n]], readiness:
//                                  {all, processing, cull, searchable, failed, duplicate}, warning: {any, warned, none,
//                                  exposure, blurry, …} (a photo counts under each of its warnings)}: each option
//                                  counts the photos it would show with the other filters as they are
//   searchState()                 {q, busy, error, tookMs} of the text search
//   onViewChange(fn) → off        the view is worked out again after each change (of filter,
//                                  sort, marks or photos): at once for a small project, in slices
//                                  of a few ms for a large one, so read it when this says
//
// Selection and focus
//   selectedIds()                 in view order; isSelected(id), selectionSize(), anchorId()
//   select(ids, mode)             mode: 'replace' (default) | 'add' | 'remove' | 'toggle'
//   selectRange(fromId, toId, add), selectAll() (the whole view), clearSelection()
//   onSelectionChange(fn) → off
//   focusedId(), setFocus(id), onFocusChange(fn) → off
//
// Flags, stars and colour labels, sent at once and undoable
//   marksOf(id) → {picked, rejected, rating, colorLabel, edited, eyesClosed, softFace}, as shown (waiting
//                                  changes included); marksText(marks) says them in words, starText(n)
//                                  draws ★★★☆☆; COLOR_LABELS, LABEL_NAMES: the labels and their names
//   apply(ids, change, {label})   change: any of {picked, rejected, rating: 1..5 | null, colorLabel: one of
//                                  COLOR_LABELS | null}. Shown at once, sent at once through POST
//                                  /v1/projects/{id}/cull:applyAction (1,000 a request), rolled back with a
//                                  message when refused. The server gives the other half of a pair the
//                                  same change, shown here at once, never sent twice
//   applyEach(actions, {label, leftAlone})   [{assetId, picked?, rejected?, rating?, colorLabel?, assisted?}]:
//                                  one change per photo, undone as one step (compare's keeper uses it). Actions
//                                  marked assisted (the assistant's, as cull:suggest gives them) are undone as
//                                  assisted too; the server leaves alone a photo decided by hand, which then
//                                  shows as it was, and leftAlone(ids) hears which
//   undo(), canUndo()             Ctrl/Cmd-Z
//   onMarksChange(fn(ids)) → off  a change made here, rolled back, or made in another tab
//   settled() → Promise           resolves once nothing waits to be sent
//
// Keys, scopes, loupe panels
//   registerKey(key, description, fn(ctx), {scopes, button}) → off
//                                 key: 'p', 'shift+arrowright', 'mod+z' (Ctrl or Cmd), '?', …;
//                                  scopes: any of SCOPES, 'grid', 'loupe', 'compare', 'group review'
//                                  (all four by default), or a view's own. ctx: {scope, targets, event}. The `?`
//                                  help lists them. button: {id, label} puts a button doing the
//                                  same on the grid's bar, for pointer and touch (a 'grid' key).
//   keyTable()                    what is registered, for the help
//   pushScope({name, targets(), advance()}) → pop   the view that has the keys (last pushed wins)
//   activeScope(), targets()      the scope on top; the photos its keys act on
//   openScopes()                  the names of the scopes pushed, the first first
//   registerLoupePanel({id, title, mount(el, {assetId, row, stage}) → {show(assetId)?, destroy()?}}) → off
//                                 stage: the element the photo is drawn in, for a panel that draws on it
//   loupePanels()
//   openLoupe(id), closeLoupe(), loupeId(), onLoupeChange(fn(id or null)) → off
//   openCompare(ids)
//   provide(name, impl)           how loupe.js ('loupe') and compare.js ('compare') plug in
//
// Settings (kept in the browser)
//   settings.advance: move to the next photo after a flag (P, X, U); settings.preload: load the
//   next and previous photos ahead in the loupe; settings.acceptFlags: accepting a group's best
//   shot in group review picks it and rejects the group's other photos; settings.tileSize: the
//   grid's least tile width in px (0: as the screen's size suits). setSetting(name, value),
//   onSettingsChange(fn).

import { api, ApiError, newKey, sleep, waitFor } from './api.js';
import { announce } from './ui.js';
import { CAMERAS, WARNING_BITS, liveEvents } from './model.js';

// ---- small helpers ---------------------------------------------------------

function listeners() {
  const fns = new Set();
  return {
    on(fn) { fns.add(fn); return () => fns.delete(fn); },
    emit(...args) {
      for (const fn of [...fns]) {
        try { fn(...args); } catch (err) { console.error(err); }
      }
    },
  };
}

// afterPaint runs fn once the browser has drawn what is on the page now, so
// the work it does never holds back the frame that shows a key's effect.
function afterPaint(fn) {
  requestAnimationFrame(() => setTimeout(fn, 0));
}

// sortChunked sorts rows by cmp without a long task: runs of a few
// thousand sorted natively, then merged, yielding whenever a slice of
// time is spent. A project of 100,000 photos sorts by name in ~100 ms of
// work, which at a slow phone's pace would freeze the page for half a
// second in one go. stale() stops it early when its answer is no longer
// wanted.
async function sortChunked(rows, cmp, stale) {
  const budget = 8;
  let start = performance.now();
  const pause = async () => {
    if (performance.now() - start < budget) return false;
    await sleep(0);
    start = performance.now();
    return stale();
  };
  let a = rows.slice();
  const run = 2048;
  for (let i = 0; i < a.length; i += run) {
    const part = a.slice(i, i + run).sort(cmp);
    for (let k = 0; k < part.length; k++) a[i + k] = part[k];
    if (await pause()) return null;
  }
  let b = new Array(a.length);
  for (let width = run; width < a.length; width *= 2) {
    for (let lo = 0; lo < a.length; lo += 2 * width) {
      const mid = Math.min(lo + width, a.length);
      const hi = Math.min(lo + 2 * width, a.length);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        b[k++] = cmp(a[j], a[i]) < 0 ? a[j++] : a[i++];
        if ((k & 1023) === 0 && await pause()) return null;
      }
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    [a, b] = [b, a];
    if (await pause()) return null;
  }
  return a;
}

// ---- marks in words ---------------------------------------------------------

const STAR_TEXT = ['no stars', '1 star', '2 stars', '3 stars', '4 stars', '5 stars'];

// The colour labels in Lightroom's order, its keys 6 to 9 the first four.
export const COLOR_LABELS = ['red', 'yellow', 'green', 'blue', 'purple'];
export const LABEL_NAMES = { red: 'Red', yellow: 'Yellow', green: 'Green', blue: 'Blue', purple: 'Purple' };

// starText draws n stars of five; none as nothing.
export const starText = (n) => (n ? '★'.repeat(n) + '☆'.repeat(5 - n) : '');

// marksText says a photo's flag, stars and edit (marksOf's answer) in
// words, for labels and screen readers.
export function marksText(m) {
  const bits = [];
  if (m.picked) bits.push('picked');
  if (m.rejected) bits.push('rejected');
  if (m.rating) bits.push(STAR_TEXT[m.rating]);
  if (m.colorLabel) bits.push(`${m.colorLabel} label`);
  if (m.edited) bits.push('edited');
  if (m.eyesClosed) bits.push('eyes closed');
  if (m.softFace) bits.push('a face out of focus');
  return bits.join(', ');
}

// ---- settings --------------------------------------------------------------

const SETTINGS_KEY = 'lightbox.cull';
export const settings = { advance: false, preload: true, acceptFlags: false, tileSize: 0 };
try {
  Object.assign(settings, JSON.parse(localStorage.getItem(SETTINGS_KEY) || '{}'));
} catch { /* defaults */ }
const settingsChanged = listeners();
export const onSettingsChange = settingsChanged.on;

export function setSetting(name, value) {
  if (!(name in settings)) throw new Error(`no setting ${name}`);
  settings[name] = value;
  try { localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings)); } catch { /* not kept */ }
  settingsChanged.emit(name, value);
}

// ---- the view ---------------------------------------------------------------

export const FILTER_DEFAULTS = Object.freeze({
  flag: 'any', ratingMin: 0, label: 'any', camera: '', from: '', to: '', readiness: 'all', q: '', faces: 'any', favorite: '', warning: 'any',
});
export const SORTS = [['uploaded', 'Upload order'], ['captured', 'Capture time'], ['filename', 'File name']];

// The options of the flag and readiness filters as numbers, the first
// being "any"; and each of the model's stages' readiness option.
const FLAG_CODES = ['any', 'unflagged', 'picked', 'rejected'];
const READY_CODES = ['all', 'processing', 'cull', 'searchable', 'failed', 'duplicate'];
const READY_OF = { cull: 1, searchable: 2, failed: 3, duplicate: 4 }; // the rest: processing (0)
const NO_MARKS = Object.freeze({ picked: false, rejected: false, rating: null, colorLabel: null });
// The warning filter's options beyond the codes, as bits of a row's warn.
const ALL_WARNINGS = Object.values(WARNING_BITS).reduce((a, b) => a | b, 0);
const WARNING_MASKS = { ...WARNING_BITS, warned: ALL_WARNINGS, exposure: WARNING_BITS.underexposed | WARNING_BITS.overexposed };

let model = null;
let lastProject = null;
let filter = { ...FILTER_DEFAULTS };
let sort = { key: 'uploaded', desc: false };
let asc = []; // the rows in the sort's order, ascending, before the filter
let ascFor = ''; // the version and sort asc was made for
let base = []; // asc in the sort's direction
let baseOf = null; // the asc base was made from
let baseDesc = false;
let sorting = null; // the sort under way: {for}
let view = [];
let gen = 0; // stamps rows with their place in view (see pass), so indexOf is O(1)
let tally = emptyCounts();
let search = { q: '', busy: false, error: null, tookMs: 0, rows: null, key: '' };
let favs = { key: '', ids: null }; // the client favourites the filter keeps, once read
let queued = false;
const viewChanged = listeners();
export const onViewChange = viewChanged.on;

function emptyCounts() {
  return {
    total: 0, shown: 0, flag: { any: 0, picked: 0, rejected: 0, unflagged: 0 }, stars: [0, 0, 0, 0, 0, 0],
    label: { any: 0, none: 0, red: 0, yellow: 0, green: 0, blue: 0, purple: 0 },
    cameras: [], readiness: { all: 0, processing: 0, cull: 0, searchable: 0, failed: 0, duplicate: 0 },
    warning: { any: 0, warned: 0, none: 0, ...Object.fromEntries(Object.keys(WARNING_MASKS).map((k) => [k, 0])) },
  };
}

let teardown = [];

// attach follows model's rows and the marks its events bring; the view
// starts with every photo, in upload order, nothing selected.
export function attach(m) {
  detach();
  // Back on the same project, the filters, sort, selection and undo are
  // as they were.
  if (m.projectId !== lastProject) {
    filter = { ...FILTER_DEFAULTS };
    sort = { key: 'uploaded', desc: false };
    selection.clear();
    anchor = null;
    focus = null;
    undoStack.length = 0;
  }
  lastProject = m.projectId;
  model = m;
  asc = [];
  ascFor = '';
  base = [];
  baseOf = null;
  search = { q: '', busy: false, error: null, tookMs: 0, rows: null, key: '' };
  if (filter.q) runSearch();
  favs = { key: '', ids: null };
  loadFavorites();
  // Rows change by the hundred while a project uploads or loads: a big
  // one is filtered again at most once a second for them.
  let last = 0;
  let timer = null;
  const onChange = () => {
    if (m.rows.length <= 2000) return schedule();
    if (timer) return;
    timer = setTimeout(() => { timer = null; last = Date.now(); schedule(); }, Math.max(0, 1000 - (Date.now() - last)));
  };
  const onMarks = (e) => {
    for (const id of e.detail.ids) remark(id);
    marksChanged.emit(e.detail.ids);
    schedule();
  };
  const onFavorite = (e) => {
    if (e.detail.projectId === m.projectId && filter.favorite) loadFavorites(true);
  };
  m.addEventListener('change', onChange);
  m.addEventListener('marks', onMarks);
  liveEvents.addEventListener('gallery.updated', onFavorite);
  teardown = [() => m.removeEventListener('change', onChange), () => m.removeEventListener('marks', onMarks), () => clearTimeout(timer),
    () => liveEvents.removeEventListener('gallery.updated', onFavorite)];
  recompute();
  return detach;
}

export function detach() {
  for (const fn of teardown) fn();
  teardown = [];
  model = null;
}

export const projectId = () => (model ? model.projectId : null);
export const getFilter = () => ({ ...filter });
export const getSort = () => ({ ...sort });
export const viewRows = () => view;
export const viewIds = () => view.map((r) => r.assetId);
export const counts = () => tally;
export const rowOf = (id) => (model && model.byAsset.get(id)) || null;
export const searchState = () => ({ q: search.q, busy: search.busy, error: search.error, tookMs: search.tookMs });

export function indexOf(id) {
  const r = rowOf(id);
  if (!r) return -1;
  if (gen & 1) return r.g1 === gen ? r.i1 : -1;
  return r.g0 === gen ? r.i0 : -1;
}

export function setFilter(patch) {
  const next = { ...filter, ...patch };
  next.ratingMin = Math.max(0, Math.min(5, Number(next.ratingMin) || 0));
  if (next.label !== 'none' && !COLOR_LABELS.includes(next.label)) next.label = 'any';
  if (next.warning !== 'none' && !(next.warning in WARNING_MASKS)) next.warning = 'any';
  next.q = String(next.q || '').trim();
  filter = next;
  if (filter.q) runSearch();
  else search = { q: '', busy: false, error: null, tookMs: 0, rows: null, key: '' };
  loadFavorites();
  recompute();
}

// loadFavorites reads the photos the favorite filter keeps, all pages of
// them, when the filter changed or again when a client chose.
async function loadFavorites(again = false) {
  const key = filter.favorite ? `${model.projectId}|${filter.favorite}` : '';
  if (!key) {
    favs = { key: '', ids: null };
    return;
  }
  if (favs.key === key && !again) return;
  if (favs.key !== key) favs = { key, ids: null };
  const ids = new Set();
  try {
    let cursor = '';
    do {
      const q = new URLSearchParams({ clientFavorite: filter.favorite, limit: '200' });
      if (cursor) q.set('cursor', cursor);
      const page = await api('GET', `/v1/projects/${model.projectId}/assets?${q}`);
      if (favs.key !== key) return;
      for (const a of page.items) ids.add(a.id);
      cursor = page.pageInfo.nextCursor || '';
    } while (cursor);
  } catch (err) {
    if (favs.key !== key) return;
    announce(`Could not read the client favourites: ${err.message}`);
  }
  if (favs.key !== key) return;
  favs = { key, ids };
  recompute();
}

export function setSort(key, desc = false) {
  if (!SORTS.some(([k]) => k === key)) throw new Error(`no sort ${key}`);
  sort = { key, desc: !!desc };
  recompute();
}

// schedule recomputes the view after the next paint, once however often
// it is asked: events come by the hundred, and a key's own effect is drawn
// before the view is worked out again.
function schedule() {
  if (queued) return;
  queued = true;
  afterPaint(() => {
    queued = false;
    recompute();
  });
}

function recompute() {
  if (!model) return;
  const c = model.counts(); // brings every row's stage up to date
  const want = `${model.version}/${sort.key}`;
  if (ascFor !== want) {
    const rows = c.visible.filter((r) => r.assetId);
    if (sort.key === 'uploaded') {
      asc = rows;
      ascFor = want;
    } else if (!sorting || sorting.for !== want) {
      // Until the sort ends, the view keeps the order it had (the new
      // photos at its end).
      asc = asc.length && ascFor.endsWith('/' + sort.key) ? mergeNew(asc, rows) : rows;
      const cmp = sort.key === 'captured' ? byTime : byName;
      const job = { for: want };
      sorting = job;
      sortChunked(rows, cmp, () => sorting !== job).then((sorted) => {
        if (!sorted || sorting !== job) return;
        sorting = null;
        asc = sorted;
        ascFor = want;
        recompute();
      });
    }
  }
  // Descending is ascending backwards, ties too, as the API has it.
  if (baseOf !== asc || baseDesc !== sort.desc) {
    base = sort.desc ? asc.slice().reverse() : asc;
    baseOf = asc;
    baseDesc = sort.desc;
  }
  pass();
}

// mergeNew is old's order with rows it did not hold at its end, and
// without the rows no longer there.
function mergeNew(old, rows) {
  const now = new Set(rows);
  const out = old.filter((r) => now.has(r));
  const had = new Set(out);
  for (const r of rows) if (!had.has(r)) out.push(r);
  return out;
}

// Ties go by asset id, as the API's list orders them.
function byTime(a, b) {
  return a.time - b.time || (a.assetId < b.assetId ? -1 : 1);
}
function byName(a, b) {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : a.assetId < b.assetId ? -1 : 1;
}

// dayStart and dayEnd are a local calendar day's first and last instant.
function dayStart(day) {
  const t = new Date(`${day}T00:00:00`).getTime();
  return Number.isNaN(t) ? -Infinity : t;
}
function dayEnd(day) {
  const t = new Date(`${day}T23:59:59.999`).getTime();
  return Number.isNaN(t) ? Infinity : t;
}

// pass filters the base into the view and counts every filter's options
// in one walk over the rows: an option counts the photos that pass every
// other filter and its own. It runs over every photo after each change of
// marks, so it works on small numbers (100,000 photos take a few ms) and
// yields every few ms, so that a slow device never spends one long task
// on it. The view it replaces stays whole meanwhile: rows carry their
// place in two pairs of fields, one for the view shown and one for the
// view being made. A pass asked for while one runs follows it.
let passing = false;
let passAgain = false;

async function pass() {
  if (passing) {
    passAgain = true;
    return;
  }
  passing = true;
  try {
    await walk();
  } finally {
    passing = false;
  }
  if (passAgain) {
    passAgain = false;
    recompute();
  }
}

async function walk() {
  const f = filter;
  const from = f.from ? dayStart(f.from) : -Infinity;
  const to = f.to ? dayEnd(f.to) : Infinity;
  const dated = from !== -Infinity || to !== Infinity;
  const wantFlag = FLAG_CODES.indexOf(f.flag) - 1; // -1: any
  const wantLabel = f.label === 'any' ? -1 : f.label === 'none' ? 0 : COLOR_LABELS.indexOf(f.label) + 1;
  const wantReady = READY_CODES.indexOf(f.readiness) - 1; // -1: all
  const wantCam = f.camera ? CAMERAS.indexOf(f.camera) : -1; // -1: any; a camera no photo has matches none
  const anyCam = !f.camera;
  const minStars = f.ratingMin;
  const wantFaces = f.faces || 'any';
  const favIds = f.favorite ? favs.ids || new Set() : null;
  const warnMask = WARNING_MASKS[f.warning] || 0; // 0: any, or none
  const noWarning = f.warning === 'none';
  const warned = new Int32Array(ALL_WARNINGS + 1); // photos per value of warn
  let unwarned = 0;
  const flags = new Int32Array(3);
  const stars = new Int32Array(6);
  const labels = new Int32Array(COLOR_LABELS.length + 1); // 0: none
  const ready = new Int32Array(READY_CODES.length - 1);
  const cams = new Int32Array(CAMERAS.length);
  const out = [];
  const rows = f.q ? search.rows || [] : base;
  // Where a raw is looked for beside its JPEG: among the matches of a
  // search (a hundred at most), else among every photo listed.
  const matched = f.q ? new Set(rows) : null;
  let paired = 0;
  // How often a JPEG counted under an option its raw counts under too
  // (the halves differ in some filter): the "any" options, the stars at
  // least as many as both have, and the warning options both match.
  const twice = { flag: 0, label: 0, ready: 0, stars: new Int32Array(6), warning: {} };
  const next = gen + 1;
  const odd = (next & 1) === 1;

  // judge reads what a row shows for each filter into s, and which
  // filters it misses (MISS bits; a row outside the faces or favourites
  // filter misses them all, and counts under none of the options).
  const judge = (r, s) => {
    if ((wantFaces !== 'any' && !facesMatch(r.faces, wantFaces)) || (favIds && !favIds.has(r.assetId))) {
      s.miss = MISS_ALL;
      s.misses = 9;
      return;
    }
    const m = (overlay.size && overlay.get(r.assetId)) || r.rating;
    s.flag = m ? (m.picked ? 1 : m.rejected ? 2 : 0) : 0;
    s.star = (m && m.rating) || 0;
    s.label = m && m.colorLabel ? COLOR_LABELS.indexOf(m.colorLabel) + 1 : 0;
    s.rd = READY_OF[r.stage] || 0;
    s.cam = r.cam || 0; // 0 too for a photo this tab is still uploading
    s.w = r.warn || 0;
    let miss = 0;
    let misses = 0;
    if (wantFlag >= 0 && wantFlag !== s.flag) { miss |= MISS_FLAG; misses++; }
    if (s.star < minStars) { miss |= MISS_STARS; misses++; }
    if (wantLabel >= 0 && wantLabel !== s.label) { miss |= MISS_LABEL; misses++; }
    if (!anyCam && s.cam !== wantCam) { miss |= MISS_CAMERA; misses++; }
    if (dated && (r.captured === null || r.captured < from || r.captured > to)) { miss |= MISS_DATE; misses++; }
    if (wantReady >= 0 && wantReady !== s.rd) { miss |= MISS_READY; misses++; }
    if (noWarning ? s.w !== 0 : warnMask && (s.w & warnMask) === 0) { miss |= MISS_WARN; misses++; }
    s.miss = miss;
    s.misses = misses;
  };
  const J = { flag: 0, star: 0, label: 0, rd: 0, cam: 0, w: 0, miss: 0, misses: 0 };
  const P = { ...J };

  let start = performance.now();
  for (let i = 0; i < rows.length; i++) {
    if ((i & 1023) === 1023 && performance.now() - start > 8) {
      await sleep(0);
      start = performance.now();
    }
    const r = rows[i];
    // The JPEG half of a RAW+JPEG pair is one photo with its raw: it
    // shows (and counts) only where its raw, listed, does not.
    let raw = null;
    if (r.pair && r.jpeg) {
      raw = model.byAsset.get(r.pair);
      if (raw && raw.pair === r.assetId && (matched ? matched.has(raw) : !raw.hidden)) {
        paired++;
        judge(raw, P);
      } else {
        raw = null;
      }
    }
    judge(r, J);
    if (J.misses > 1) continue;
    const covered = raw ? coveredBy(P, J) : 0;
    if (J.misses === 0 && !(raw && P.miss === 0)) {
      if (odd) { r.i1 = out.length; r.g1 = next; } else { r.i0 = out.length; r.g0 = next; }
      out.push(r);
    }
    // A photo shown counts under every filter's option; one that misses a
    // single filter, under that filter's option it has. The options under
    // which its raw would show instead are the raw's to count.
    const counts = (J.misses === 0 ? MISS_ALL : J.miss) & ~covered;
    if (counts & MISS_FLAG) flags[J.flag]++;
    if (counts & MISS_STARS) stars[J.star]++;
    if (counts & MISS_LABEL) labels[J.label]++;
    if (counts & MISS_CAMERA) cams[J.cam]++;
    if (counts & MISS_READY) ready[J.rd]++;
    if (counts & MISS_WARN) {
      if (J.w) warned[J.w]++;
      else unwarned++;
    }
    if (raw && counts) countedTwice(P, J, counts, twice);
  }
  const t = emptyCounts();
  t.flag.unflagged = flags[0];
  t.flag.picked = flags[1];
  t.flag.rejected = flags[2];
  t.flag.any = flags[0] + flags[1] + flags[2];
  for (let k = 5; k >= 0; k--) t.stars[k] = stars[k] + (k < 5 ? t.stars[k + 1] : 0);
  for (let k = 0; k < labels.length; k++) {
    t.label[k ? COLOR_LABELS[k - 1] : 'none'] = labels[k];
    t.label.any += labels[k];
  }
  for (let k = 0; k < ready.length; k++) {
    t.readiness[READY_CODES[k + 1]] = ready[k];
    t.readiness.all += ready[k];
  }
  for (let w = 0; w < warned.length; w++) {
    if (!warned[w]) continue;
    t.warning.any += warned[w];
    for (const [k, mask] of Object.entries(WARNING_MASKS)) if (w & mask) t.warning[k] += warned[w];
  }
  t.warning.none = unwarned;
  t.warning.any += unwarned;
  t.flag.any -= twice.flag;
  t.label.any -= twice.label;
  t.readiness.all -= twice.ready;
  for (let k = 5, n = 0; k >= 0; k--) {
    n += twice.stars[k];
    t.stars[k] -= n;
  }
  for (const [k, n] of Object.entries(twice.warning)) t.warning[k] -= n;
  for (let k = 1; k < cams.length; k++) if (cams[k]) t.cameras.push([CAMERAS[k], cams[k]]);
  t.cameras.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  t.total = rows.length - paired;
  t.shown = out.length;
  t.favoritesLoading = !!f.favorite && !favs.ids;
  tally = t;

  const focusAt = Math.max(0, focus ? indexOf(focus) : 0);
  view = out;
  gen = next;
  // The selection holds only photos in view; the focus stays in place
  // when its photo leaves (the next one takes its place).
  let dropped = false;
  for (const id of selection) {
    if (indexOf(id) < 0) {
      selection.delete(id);
      dropped = true;
    }
  }
  if (anchor && indexOf(anchor) < 0) anchor = null;
  if (focus && indexOf(focus) < 0) {
    focus = view.length ? view[Math.min(focusAt, view.length - 1)].assetId : null;
    focusChanged.emit(focus);
  }
  viewChanged.emit();
  if (dropped) selectionChanged.emit();
}

// facesMatch reports whether a row's faces (Asset.faces, null when not
// looked for) pass the faces filter, as the API's eyesClosed and
// faceOutOfFocus filters do.
function facesMatch(faces, want) {
  const closed = !!(faces && faces.eyesClosed);
  const soft = !!(faces && faces.outOfFocus);
  if (want === 'eyesClosed') return closed;
  if (want === 'soft') return soft;
  return !closed && !soft;
}

// The filters a row can miss, as bits.
const MISS_FLAG = 1;
const MISS_STARS = 2;
const MISS_LABEL = 4;
const MISS_CAMERA = 8;
const MISS_DATE = 16;
const MISS_READY = 32;
const MISS_WARN = 64;
const MISS_ALL = 127;

// coveredBy is, as MISS bits, the filters under whose option a JPEG (j, as
// judge read it) counts where its raw (p) would show in its place: p
// passes every other filter, and has the same option of this one (at
// least as many stars).
function coveredBy(p, j) {
  let out = 0;
  const only = (bit) => (p.miss & ~bit) === 0;
  if (only(MISS_FLAG) && p.flag === j.flag) out |= MISS_FLAG;
  if (only(MISS_STARS) && p.star >= j.star) out |= MISS_STARS;
  if (only(MISS_LABEL) && p.label === j.label) out |= MISS_LABEL;
  if (only(MISS_CAMERA) && p.cam === j.cam) out |= MISS_CAMERA;
  if (only(MISS_READY) && p.rd === j.rd) out |= MISS_READY;
  if (only(MISS_WARN) && p.w === j.w) out |= MISS_WARN;
  return out;
}

// countedTwice notes, for a JPEG counted under the options of the filters
// in counts (MISS bits), those its raw (p) counts under as well: where p
// passes every other filter, the options both halves match.
function countedTwice(p, j, counts, twice) {
  const only = (bit) => (counts & bit) !== 0 && (p.miss & ~bit) === 0;
  if (only(MISS_FLAG)) twice.flag++;
  if (only(MISS_LABEL)) twice.label++;
  if (only(MISS_READY)) twice.ready++;
  if (only(MISS_STARS)) twice.stars[Math.min(p.star, j.star)]++;
  if (only(MISS_WARN)) {
    for (const k of WARNING_OPTIONS) {
      if (warningMatches(p.w, k) && warningMatches(j.w, k)) twice.warning[k] = (twice.warning[k] || 0) + 1;
    }
  }
}

// The warning filter's options, and whether a row's warn bits match one.
const WARNING_OPTIONS = ['any', 'none', ...Object.keys(WARNING_MASKS)];
function warningMatches(w, k) {
  return k === 'any' || (k === 'none' ? w === 0 : (w & WARNING_MASKS[k]) !== 0);
}

// runSearch asks the server for the photos matching the words and the
// filters it knows, then the view filters them again, here, as marks change.
async function runSearch() {
  const f = filter;
  const body = { q: f.q, limit: 100, filters: {} };
  if (f.flag === 'picked') body.filters.picked = true;
  if (f.flag === 'rejected') body.filters.rejected = true;
  if (f.flag === 'unflagged') { body.filters.picked = false; body.filters.rejected = false; }
  if (f.ratingMin) body.filters.ratingMin = f.ratingMin;
  if (f.label !== 'any') body.filters.colorLabel = [f.label];
  if (f.camera) body.filters.camera = f.camera;
  if (f.from) body.filters.from = new Date(dayStart(f.from)).toISOString();
  if (f.to) body.filters.to = new Date(dayEnd(f.to)).toISOString();
  if (f.faces === 'eyesClosed') body.filters.eyesClosed = true;
  if (f.faces === 'soft') body.filters.faceOutOfFocus = true;
  if (f.faces === 'good') { body.filters.eyesClosed = false; body.filters.faceOutOfFocus = false; }
  const searchable = { cull: ['cull'], searchable: ['search', 'ai'] }[f.readiness];
  if (searchable) body.filters.readiness = searchable;
  const key = JSON.stringify(body);
  if (search.key === key && (search.busy || search.rows)) return;
  search = { q: f.q, busy: true, error: null, tookMs: 0, rows: search.rows, key };
  viewChanged.emit();
  if (f.readiness !== 'all' && !searchable) {
    // Search finds photos ready to cull or later only.
    search = { ...search, busy: false, rows: [] };
    recompute();
    return;
  }
  try {
    const res = await api('POST', `/v1/projects/${model.projectId}/search`, body);
    if (search.key !== key) return;
    search = { ...search, busy: false, tookMs: res.tookMs, rows: res.results.map((x) => rowOf(x.assetId)).filter(Boolean) };
  } catch (err) {
    if (search.key !== key) return;
    search = { ...search, busy: false, error: err.message, rows: [] };
  }
  recompute();
}

// ---- selection and focus -----------------------------------------------------

const selection = new Set();
let anchor = null;
let focus = null;
const selectionChanged = listeners();
const focusChanged = listeners();
export const onSelectionChange = selectionChanged.on;
export const onFocusChange = focusChanged.on;

export const isSelected = (id) => selection.has(id);
export const selectionSize = () => selection.size;
export const anchorId = () => anchor;
export const focusedId = () => focus;

export function selectedIds() {
  // Picked out of the view when that is the shorter walk.
  if (selection.size > view.length / 16) return view.filter((r) => selection.has(r.assetId)).map((r) => r.assetId);
  return [...selection].sort((a, b) => indexOf(a) - indexOf(b));
}

export function select(ids, mode = 'replace') {
  if (mode === 'replace') selection.clear();
  for (const id of ids) {
    if (indexOf(id) < 0) continue;
    if (mode === 'remove' || (mode === 'toggle' && selection.has(id))) selection.delete(id);
    else selection.add(id);
  }
  if (ids.length === 1 && mode !== 'remove') anchor = ids[0];
  selectionChanged.emit();
}

// selectRange selects the photos from one to the other in view order,
// instead of the selection or (add) beside it; the anchor stays.
export function selectRange(fromId, toId, add = false) {
  let a = indexOf(fromId);
  const b = indexOf(toId);
  if (b < 0) return;
  if (a < 0) a = b;
  if (!add) selection.clear();
  for (let i = Math.min(a, b); i <= Math.max(a, b); i++) selection.add(view[i].assetId);
  anchor = view[a].assetId;
  selectionChanged.emit();
}

export function selectAll() {
  for (const r of view) selection.add(r.assetId);
  selectionChanged.emit();
}

export function clearSelection() {
  if (!selection.size) return;
  selection.clear();
  selectionChanged.emit();
}

export function setFocus(id) {
  if (id === focus) return;
  focus = id;
  focusChanged.emit(id);
}

// ---- flags and stars -------------------------------------------------------------

// Changes shown but not yet confirmed: each op is one request's worth or
// less, in the order made. What a photo shows is the server's last word
// (row.rating) with the waiting changes laid over it, in order.
const pending = [];
const overlay = new Map(); // asset id → marks shown, for photos with changes waiting
const waiting = new Map(); // asset id → how many waiting changes are for it
let sending = false;
let opSeq = 0;
const undoStack = []; // {label, before: Map id → marks, ops: Set of op seqs}
const marksChanged = listeners();
export const onMarksChange = marksChanged.on;
let idle = [];

export function marksOf(id) {
  const r = rowOf(id);
  const m = overlay.get(id) || (r && r.rating) || NO_MARKS;
  const f = r && r.faces;
  return { picked: m.picked, rejected: m.rejected, rating: m.rating ?? null, colorLabel: m.colorLabel ?? null, edited: !!(r && r.edited),
    eyesClosed: !!(f && f.eyesClosed), softFace: !!(f && f.outOfFocus) };
}

function merge(m, change) {
  const out = { picked: m.picked, rejected: m.rejected, rating: m.rating ?? null, colorLabel: m.colorLabel ?? null };
  if ('picked' in change) out.picked = change.picked;
  if ('rejected' in change) out.rejected = change.rejected;
  if ('rating' in change) out.rating = change.rating;
  if ('colorLabel' in change) out.colorLabel = change.colorLabel;
  return out;
}

// remark works out what asset id shows from its confirmed marks and the
// changes waiting for it.
function remark(id) {
  if (!waiting.has(id)) {
    overlay.delete(id);
    return;
  }
  const r = rowOf(id);
  let m = (r && r.rating) || NO_MARKS;
  let any = false;
  for (const op of pending) {
    const ch = op.actions.get(id) || op.mirror.get(id);
    if (ch) { m = merge(m, ch); any = true; }
  }
  if (any) overlay.set(id, m);
  else overlay.delete(id);
}

export function apply(ids, change, opts = {}) {
  return applyEach(ids.map((assetId) => ({ assetId, ...change })), opts);
}

// pairOf is the other half of a photo's RAW+JPEG pair, when both are
// listed, else null.
function pairOf(id) {
  const r = rowOf(id);
  const p = r && r.pair ? rowOf(r.pair) : null;
  return p && p.pair === id ? p.assetId : null;
}

// onePerPair keeps, of actions on both halves of a pair, those on the
// raw, whose tile stands for the pair: the server gives the pair one
// decision, and the JPEG's own would split it.
function onePerPair(actions) {
  let ids = null;
  const keep = [];
  for (const a of actions) {
    const other = rowOf(a.assetId)?.jpeg ? pairOf(a.assetId) : null;
    if (other) {
      ids = ids || new Set(actions.map((x) => x.assetId));
      if (ids.has(other)) continue;
    }
    keep.push(a);
  }
  return keep;
}

// applyEach shows the changes at once, records how to undo them, and
// sends them. It resolves true once the server has them all, false when
// they were refused (and rolled back).
export function applyEach(actions, { label = '', undoable = true, leftAlone = null } = {}) {
  if (!model || !actions.length) return Promise.resolve(true);
  actions = onePerPair(actions);
  const before = new Map();
  for (const a of actions) {
    if (!before.has(a.assetId)) {
      const m = marksOf(a.assetId);
      before.set(a.assetId, { picked: m.picked, rejected: m.rejected, rating: m.rating, colorLabel: m.colorLabel });
    }
  }
  const entry = undoable ? { label, before, ops: new Set(), assisted: actions.every((a) => a.assisted) } : null;
  if (entry) {
    undoStack.push(entry);
    if (undoStack.length > 200) undoStack.shift();
  }
  const done = [];
  const ids = [];
  const ops = [];
  for (let i = 0; i < actions.length; i += 1000) {
    // mirror: the other halves of pairs, which the server changes with
    // their halves; shown changed at once too, never sent.
    const op = { seq: ++opSeq, actions: new Map(), mirror: new Map(), entry, label, project: model.projectId, left: [] };
    for (const { assetId, ...ch } of actions.slice(i, i + 1000)) {
      op.actions.set(assetId, { ...(op.actions.get(assetId) || {}), ...ch });
    }
    for (const [id, ch] of op.actions) {
      const other = pairOf(id);
      if (other && !op.actions.has(other)) op.mirror.set(other, ch);
    }
    op.done = new Promise((resolve) => { op.resolve = resolve; });
    if (entry) entry.ops.add(op.seq);
    pending.push(op);
    // The new change lands on what each photo shows now.
    for (const [id, ch] of [...op.actions, ...op.mirror]) {
      const r = rowOf(id);
      overlay.set(id, merge(overlay.get(id) || (r && r.rating) || NO_MARKS, ch));
      waiting.set(id, (waiting.get(id) || 0) + 1);
      ids.push(id);
    }
    done.push(op.done);
    ops.push(op);
  }
  marksChanged.emit(ids);
  schedule();
  send();
  return Promise.all(done).then((oks) => {
    if (leftAlone) leftAlone(ops.flatMap((op) => op.left));
    return oks.every(Boolean);
  });
}

export const canUndo = () => undoStack.length > 0;

// undo sets the photos of the last change back to what they showed
// before it.
export async function undo() {
  const entry = undoStack.pop();
  if (!entry) {
    announce('Nothing to undo.');
    return false;
  }
  const actions = [...entry.before].map(([assetId, m]) => ({
    assetId, picked: m.picked, rejected: m.rejected, rating: m.rating, colorLabel: m.colorLabel, ...(entry.assisted ? { assisted: true } : {}),
  }));
  announce(`Undone: ${entry.label || 'the last change'}.`);
  const ok = await applyEach(actions, { label: entry.label, undoable: false });
  if (!ok) undoStack.push(entry);
  return ok;
}

// settled resolves once every change made so far has been answered.
export function settled() {
  if (!pending.length && !sending) return Promise.resolve();
  return new Promise((resolve) => idle.push(resolve));
}

// send sends the waiting changes, one request at a time so that they
// reach the server in the order they were made; changes made while one
// is on its way go together in the next.
async function send() {
  if (sending) return;
  sending = true;
  try {
    for (;;) {
      const batch = [];
      let n = 0;
      for (const op of pending) {
        if (op.sent) continue;
        if (batch.length && (n + op.actions.size > 1000 || op.project !== batch[0].project)) break;
        batch.push(op);
        n += op.actions.size;
      }
      if (!batch.length) break;
      for (const op of batch) op.sent = true;
      const merged = new Map();
      for (const op of batch) {
        for (const [id, ch] of op.actions) {
          const m = { ...(merged.get(id) || {}), ...ch };
          if (!ch.assisted) delete m.assisted; // a change by hand after the assistant's is the hand's
          merged.set(id, m);
        }
      }
      const res = await post(batch[0].project, [...merged].map(([assetId, ch]) => ({ assetId, ...ch })));
      settle(batch, res);
    }
  } finally {
    sending = false;
    if (!pending.length) {
      const waiting = idle;
      idle = [];
      for (const fn of waiting) fn();
    } else if (pending.some((op) => !op.sent)) {
      send();
    }
  }
}

// post sends one cull:applyAction, again after a pause while the trouble
// is passing (the network, the server's rate budget), and returns the
// server's answer once taken, null when refused. A refusal is said to the
// user.
async function post(project, actions) {
  const key = newKey(); // the same for every try: the server applies it once
  for (let attempt = 1; ; attempt++) {
    try {
      return (await api('POST', `/v1/projects/${project}/cull:applyAction`, { actions }, { 'Idempotency-Key': key })) || {};
    } catch (err) {
      if (err instanceof ApiError && err.transient && attempt < 5) {
        await sleep(waitFor(err, attempt));
        continue;
      }
      announce(`Not saved, so undone on screen: ${err.message}`, 'error');
      return null;
    }
  }
}

// settle takes the server's answer to a batch (null: refused). The photos
// it left alone (decided by hand, which an assisted change never
// overrides) show what they showed before, and their undo leaves them be.
function settle(batch, res) {
  const ok = !!res;
  const left = new Set((res && res.leftAloneAssetIds) || []);
  const ids = new Set();
  const stale = [];
  for (const op of batch) {
    pending.splice(pending.indexOf(op), 1);
    for (const [id, ch] of [...op.actions, ...op.mirror]) {
      ids.add(id);
      const n = (waiting.get(id) || 1) - 1;
      if (n) waiting.set(id, n);
      else waiting.delete(id);
      const r = rowOf(id);
      if (!ok || !r) continue;
      if (left.has(id)) {
        op.left.push(id);
        if (op.entry) op.entry.before.delete(id);
        continue;
      }
      // The other half of a photo left alone is as the server says it is
      // (its event), not as this change would have made it.
      if (!op.actions.has(id) && left.has(r.pair)) {
        stale.push(id);
        continue;
      }
      // Taken: the server now holds it, as its event will say too. What
      // the photo shows is the same, unless nothing else waits for it.
      r.rating = { ...merge(r.rating || NO_MARKS, ch), starred: !!(r.rating && r.rating.starred) };
      if (!n) overlay.delete(id);
    }
    if (op.entry && (!ok || !op.entry.before.size)) {
      // A change that was not made cannot be undone.
      const at = undoStack.indexOf(op.entry);
      if (at >= 0) undoStack.splice(at, 1);
    }
    op.resolve(ok);
  }
  if (!ok) for (const id of ids) remark(id);
  for (const op of batch) for (const id of op.left) remark(id);
  for (const id of stale) remark(id);
  marksChanged.emit([...ids]);
  schedule();
}

// ---- keys, scopes and panels ---------------------------------------------------------

// The views where every shared key (flags, stars, labels, undo) works.
export const SCOPES = ['grid', 'loupe', 'compare', 'group review'];
const keys = [];
const scopes = [];
const keysChanged = listeners();
export const onKeysChange = keysChanged.on;

export function registerKey(key, description, fn, { scopes: where = SCOPES, button = null } = {}) {
  const entry = { key: key.toLowerCase(), description, fn, scopes: where, button };
  keys.push(entry);
  keysChanged.emit();
  return () => {
    const i = keys.indexOf(entry);
    if (i >= 0) keys.splice(i, 1);
    keysChanged.emit();
  };
}

export const keyTable = () => keys.map(({ key, description, scopes: s, button }) => ({ key, description, scopes: s, button }));

// keyFor is the entry that handles key in scope: the one registered last,
// so a view can take a key over while it is open.
export function keyFor(key, scope) {
  for (let i = keys.length - 1; i >= 0; i--) {
    if (keys[i].key === key && keys[i].scopes.includes(scope)) return keys[i];
  }
  return null;
}

export function pushScope(scope) {
  scopes.push(scope);
  return () => {
    const i = scopes.indexOf(scope);
    if (i >= 0) scopes.splice(i, 1);
  };
}

export const activeScope = () => scopes[scopes.length - 1] || null;
export const openScopes = () => scopes.map((s) => s.name);

export function targets() {
  const s = activeScope();
  return s ? s.targets() : [];
}

const panels = [];
export function registerLoupePanel(panel) {
  panels.push(panel);
  return () => {
    const i = panels.indexOf(panel);
    if (i >= 0) panels.splice(i, 1);
  };
}
export const loupePanels = () => [...panels];

const impls = {};
export function provide(name, impl) { impls[name] = impl; }

let loupeAt = null;
const loupeChanged = listeners();
export const onLoupeChange = loupeChanged.on;
export const loupeId = () => loupeAt;

// loupeShows is how the loupe says which photo it shows (null: closed).
export function loupeShows(id) {
  loupeAt = id;
  if (id) setFocus(id);
  loupeChanged.emit(id);
}

export function openLoupe(id) { if (impls.loupe) impls.loupe.open(id); }
export function closeLoupe() { if (impls.loupe) impls.loupe.close(); }

export function openCompare(ids) {
  if (!impls.compare) return;
  if (ids.length < 2 || ids.length > 4) {
    announce(`Compare takes two to four photos; ${ids.length.toLocaleString()} selected.`);
    return;
  }
  impls.compare.open(ids);
}
