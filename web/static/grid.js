// The photo grid of a project: filters that combine, sorts, text search
// and live counts over cull.js's view; tiles that show each whole photo in
// a square, letterboxed, with its flag, stars, colour label, edit mark and
// the assistant's warnings (their reasons on hover), a RAW+JPEG pair as
// one tile (its raw's, marked so), at a size the user sets; selection by
// click, Shift-click, Ctrl/Cmd-click and keys; a bar of the culling
// actions for pointer and touch. The bars stay compact (one line each on a
// laptop, one scrolling line on a phone, the filters used less in a
// drawer) and hide at F, leaving the photos alone. Only the tiles in view
// exist (vlist.js), so 100,000 photos scroll as 100 do.

import * as cull from './cull.js';
import { h, clear, announce, plural, toggled, givesKeysBack } from './ui.js';
import { STAGES, ICONS, WARNINGS, WARNING_BITS, liveEvents } from './model.js';
import { api } from './api.js';
import { Thumbs } from './images.js';
import { VirtualGrid } from './vlist.js';
import { settingBox, keyLabel, showHelp, labelMenu } from './keys.js';
import './loupe.js';
import './compare.js';
import { close as closeAssist } from './assist.js';

const READINESS = [['all', 'All'], ['processing', 'Processing'], ['cull', 'Ready to cull'], ['searchable', 'Searchable'],
  ['failed', 'Failed'], ['duplicate', 'Duplicates']];
const FLAGS = [['any', 'Any'], ['picked', 'Picked'], ['rejected', 'Rejected'], ['unflagged', 'Unflagged']];
const FACES = [['any', 'Any faces'], ['eyesClosed', 'Eyes closed'], ['soft', 'Soft faces'], ['good', 'Eyes open, faces sharp']];
// The assistant's buckets (quality.warnings), as the warning filter offers them.
const BUCKETS = [['any', 'Any quality'], ['warned', 'Any warning'], ['blurry', 'Blurry'], ['motion_blur', 'Motion blur'],
  ['exposure', 'Exposure'], ['misfire', 'Misfires'], ['eyes_closed', 'Eyes closed'], ['face_soft', 'Soft faces'], ['none', 'No warning']];

// photosView fills root with the grid of model's photos. onDetails(row)
// opens a photo's details; teardown collects what to undo on leaving;
// extras are the project's own controls to show among the filters.
export function photosView(root, model, { onDetails, teardown, extras = [] }) {
  cull.attach(model);
  const thumbs = new Thumbs();
  const f0 = cull.getFilter();
  const s0 = cull.getSort();

  // ---- the filters --------------------------------------------------------
  const segmented = (label, options, attr, current, onPick) => {
    const box = h('div', { class: 'segmented', role: 'group', 'aria-label': label });
    const buttons = options.map(([k, text]) => {
      const b = h('button', { type: 'button', 'aria-pressed': String(k === current), [`data-${attr}`]: k }, text);
      b.addEventListener('click', () => {
        for (const x of buttons) x.setAttribute('aria-pressed', String(x === b));
        onPick(k);
      });
      box.append(b);
      return b;
    });
    return { box, buttons };
  };
  const ready = segmented('Show photos', READINESS, 'filter', f0.readiness, (k) => change({ readiness: k }));
  const flags = segmented('Flag', FLAGS, 'flag', f0.flag, (k) => change({ flag: k }));
  const stars = h('select', { id: 'filter-stars' },
    [0, 1, 2, 3, 4, 5].map((n) => h('option', { value: String(n), selected: n === f0.ratingMin || null }, n ? `${'★'.repeat(n)} or more` : 'Any rating')));
  stars.addEventListener('change', () => change({ ratingMin: Number(stars.value) }));
  const labelOptions = [['any', 'Any label'], ...cull.COLOR_LABELS.map((c) => [c, cull.LABEL_NAMES[c]]), ['none', 'No label']];
  const labelled = h('select', { id: 'filter-label' },
    labelOptions.map(([k, text]) => h('option', { value: k, selected: k === f0.label || null }, text)));
  labelled.addEventListener('change', () => change({ label: labelled.value }));
  const bucket = h('select', { id: 'filter-warning' },
    BUCKETS.map(([k, text]) => h('option', { value: k, selected: k === f0.warning || null }, text)));
  bucket.addEventListener('change', () => change({ warning: bucket.value }));
  // Client favourites: in any gallery of the project, or in one, each
  // gallery with how many favourites its visitors left.
  const favorite = h('select', { id: 'filter-client' },
    h('option', { value: '' }, 'Anyone’s or none'), h('option', { value: 'any', selected: f0.favorite === 'any' || null }, 'In any gallery'));
  favorite.addEventListener('change', () => change({ favorite: favorite.value }));
  const galleryOptions = async () => {
    const res = await api('GET', `/v1/projects/${model.projectId}/galleries?limit=100`).catch(() => null);
    if (!res) return;
    const want = cull.getFilter().favorite;
    clear(favorite, h('option', { value: '' }, 'Anyone’s or none'), h('option', { value: 'any' }, 'In any gallery'),
      res.items.map((g) => h('option', { value: g.id }, `${g.title} (${plural(g.favoriteCount, 'favourite')})`)));
    favorite.value = want;
  };
  galleryOptions();
  const onGallery = (e) => { if (e.detail.projectId === model.projectId) galleryOptions(); };
  liveEvents.addEventListener('gallery.updated', onGallery);
  teardown.push(() => liveEvents.removeEventListener('gallery.updated', onGallery));
  // What the favourites filter shows, picked or labelled in one step (one undo).
  const pickThese = h('button', {
    type: 'button', class: 'small', id: 'pick-favorites',
    onclick: () => cull.apply(cull.viewIds(), { picked: true, rejected: false }, { label: 'pick the client favourites' }),
  }, 'Pick these');
  const labelThese = labelMenu('label-favorites', () => cull.viewIds());
  labelThese.setAttribute('aria-label', 'Label the client favourites shown');
  labelThese.options[0].textContent = 'Label these…';
  const favoriteActions = h('span', { class: 'field', id: 'favorite-actions', hidden: !f0.favorite || null }, pickThese, labelThese);
  const camera = h('select', { id: 'filter-camera' }, h('option', { value: '' }, 'Any camera'));
  camera.addEventListener('change', () => change({ camera: camera.value }));
  const from = h('input', { type: 'date', id: 'filter-from', value: f0.from || null });
  const to = h('input', { type: 'date', id: 'filter-to', value: f0.to || null });
  from.addEventListener('change', () => change({ from: from.value }));
  to.addEventListener('change', () => change({ to: to.value }));
  // Faces are found only in projects that detect them.
  const faces = h('select', { id: 'filter-faces' }, FACES.map(([k, text]) => h('option', { value: k, selected: k === f0.faces || null }, text)));
  faces.addEventListener('change', () => change({ faces: faces.value }));
  const sortBy = h('select', { id: 'sort' }, cull.SORTS.map(([k, text]) => h('option', { value: k, selected: k === s0.key || null }, text)));
  const order = h('button', { type: 'button', id: 'sort-order', 'aria-pressed': String(s0.desc), class: 'small', title: 'Reverse order' },
    h('span', { 'aria-hidden': 'true' }, '⇅'), h('span', { class: 'visually-hidden' }, 'Reverse order'));
  sortBy.addEventListener('change', () => { cull.setSort(sortBy.value, order.getAttribute('aria-pressed') === 'true'); toTop(); });
  order.addEventListener('click', () => {
    const desc = order.getAttribute('aria-pressed') !== 'true';
    order.setAttribute('aria-pressed', String(desc));
    cull.setSort(sortBy.value, desc);
    toTop();
  });
  const q = h('input', { type: 'search', id: 'photo-search', value: f0.q || null, placeholder: 'File name, camera, lens, date…', autocomplete: 'off' });
  let typing = null;
  q.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => change({ q: q.value }), 400);
  });
  const searchForm = h('form', { role: 'search', class: 'photo-search inline', 'aria-label': 'Search the photos' },
    h('label', { for: 'photo-search', class: 'visually-hidden' }, 'Search'), q,
    h('button', { type: 'submit', class: 'small', 'aria-label': 'Search' }, h('span', { 'aria-hidden': 'true' }, '⌕')));
  searchForm.addEventListener('submit', (e) => {
    e.preventDefault();
    clearTimeout(typing);
    change({ q: q.value });
  });
  const reset = h('button', { type: 'button', id: 'filter-reset', class: 'small' }, 'Reset filters');
  reset.addEventListener('click', () => {
    q.value = '';
    from.value = '';
    to.value = '';
    stars.value = '0';
    labelled.value = 'any';
    bucket.value = 'any';
    favorite.value = '';
    camera.value = '';
    faces.value = 'any';
    for (const b of ready.buttons) b.setAttribute('aria-pressed', String(b.dataset.filter === 'all'));
    for (const b of flags.buttons) b.setAttribute('aria-pressed', String(b.dataset.flag === 'any'));
    change({ ...cull.FILTER_DEFAULTS });
  });
  const field = (label, id, el, hide) => h('span', { class: 'field' }, h('label', { for: id, class: hide ? 'visually-hidden' : null }, label), el);

  // The filters used most stay in sight on a wide screen, on one line; the
  // others open in a panel under it. On a phone all of them open in one
  // drawer. The button says how many of those folded away are on.
  const moreOn = h('span', {});
  const allOn = h('span', {});
  const filtersToggle = h('button', { type: 'button', class: 'small', id: 'filters-toggle' },
    h('span', { class: 'wide-only' }, 'More filters', moreOn), h('span', { class: 'narrow-only' }, 'Filters', allOn));
  const filtersDone = h('button', { type: 'button', class: 'small narrow-only', id: 'filters-done' }, 'Done');
  const filterPanel = h('div', { class: 'filter-panel', id: 'filter-panel', role: 'group', 'aria-label': 'Filters' },
    h('div', { class: 'filters-main' }, flags.box, field('Stars', 'filter-stars', stars, true),
      field('Label', 'filter-label', labelled, true), field('Sort by', 'sort', sortBy, true), order, searchForm, favoriteActions),
    h('div', { class: 'filters-more' }, ready.box,
      field('Client favourites', 'filter-client', favorite),
      field('Camera', 'filter-camera', camera), field('Captured from', 'filter-from', from), field('to', 'filter-to', to),
      field('Faces', 'filter-faces', faces), field('Assist’s warnings', 'filter-warning', bucket), extras,
      h('span', { class: 'buttons' }, reset, filtersDone)));
  const filters = toggled(filtersToggle, filterPanel);
  filtersDone.addEventListener('click', () => filters.set(false));

  const status = h('span', { class: 'view-status', id: 'view-status' });

  // ---- the bar of actions -------------------------------------------------
  const selStatus = h('span', { id: 'selection-status', class: 'sel-status', 'aria-live': 'polite' });
  const act = (key) => () => {
    const entry = cull.keyFor(key, 'grid');
    if (entry) entry.fn({ scope: 'grid', targets: cull.targets(), event: null });
  };
  const barButton = (text, key, id) => h('button', {
    type: 'button', class: 'small', id, onclick: act(key), title: `${text} (${keyLabel(key)})`,
    'aria-keyshortcuts': key.length === 1 ? key.toUpperCase() : null,
  }, text);
  const setStars = h('select', { id: 'set-stars', 'aria-label': 'Set stars of the selected photos' },
    h('option', { value: '' }, 'Stars…'), [0, 1, 2, 3, 4, 5].map((n) => h('option', { value: String(n) }, n ? '★'.repeat(n) : 'No stars')));
  setStars.addEventListener('change', () => {
    if (setStars.value !== '') act(setStars.value)();
    setStars.value = '';
  });
  // Touch has no Ctrl: with this on, a tap adds a photo to the selection
  // or takes it out.
  const several = h('button', { type: 'button', class: 'small', id: 'select-several', 'aria-pressed': 'false' }, 'Select several');
  several.addEventListener('click', () => several.setAttribute('aria-pressed', String(several.getAttribute('aria-pressed') !== 'true')));
  const selectAllButton = h('button', { type: 'button', class: 'small', id: 'select-all', onclick: () => cull.selectAll() }, 'Select all');
  const clearButton = h('button', { type: 'button', class: 'small', id: 'select-none', onclick: () => cull.clearSelection() }, 'Select none');
  const advance = settingBox('advance', 'Next photo after a flag');
  // What is used less waits under More on a wide screen; a phone's bar
  // scrolls, and shows it in line.
  const moreToggle = h('button', { type: 'button', class: 'small menu-toggle', id: 'more-actions' }, 'More', h('span', { 'aria-hidden': 'true' }, ' ▾'));
  const morePanel = h('div', { class: 'menu-panel', id: 'more-actions-panel', role: 'group', 'aria-label': 'More actions' },
    barButton('Details', 'i', 'show-details'),
    // What other views register for the grid (edit, export, share).
    cull.keyTable().filter((k) => k.button && k.scopes.includes('grid')).map((k) => barButton(k.button.label, k.key, k.button.id)),
    several, selectAllButton, clearButton, advance);
  const moreMenu = toggled(moreToggle, morePanel);
  morePanel.addEventListener('click', (e) => { if (e.target.closest('button, input')) moreMenu.set(false); });
  const bar = h('div', { class: 'cullbar', role: 'toolbar', 'aria-label': 'Culling' },
    selStatus,
    barButton('Open', 'enter', 'open-loupe'), barButton('Pick', 'p', 'pick'), barButton('Reject', 'x', 'reject'),
    barButton('Clear flag', 'u', 'unflag'), setStars, labelMenu('set-label', () => cull.targets()), barButton('Compare', 'c', 'compare'),
    h('button', { type: 'button', class: 'small', id: 'undo', onclick: () => cull.undo(), title: `Undo (${keyLabel('mod+z')})` }, 'Undo'),
    h('span', { class: 'menu' }, moreToggle, morePanel));

  // The grid's own controls: the tiles' size, the photos alone, the keys.
  const size = h('input', { type: 'range', id: 'tile-size', min: 80, max: 400, step: 10, title: 'Size of the photos (- and =)' });
  const full = h('button', { type: 'button', class: 'small', id: 'full-grid', 'aria-pressed': 'false', title: 'Only the photos, without the bars (F)' },
    'Photos only');
  const fullExit = h('button', { type: 'button', class: 'small', id: 'full-grid-exit', title: 'Show the bars again (F)' },
    'Show the bars', h('kbd', { 'aria-hidden': 'true' }, 'F'));
  const tools = h('div', { class: 'grid-tools', id: 'grid-tools' }, status,
    h('label', { for: 'tile-size', class: 'visually-hidden' }, 'Size of the photos'), size, full,
    h('button', { type: 'button', class: 'small', id: 'show-keys', onclick: () => showHelp(), title: 'Every key (?)' }, 'Keys', h('kbd', { 'aria-hidden': 'true' }, '?')));
  bar.append(tools);
  const filterBar = h('div', { class: 'filterbar' }, filterPanel, filtersToggle);
  const head = h('div', { class: 'cull-head', id: 'cull-head' }, bar, filterBar);

  // ---- the grid -------------------------------------------------------------
  const grid = h('ul', {
    class: 'grid vgrid', id: 'grid', role: 'listbox', 'aria-multiselectable': 'true', 'aria-label': 'Photos',
    'aria-describedby': 'grid-help', 'data-cull-keys': '',
  });
  const note = h('p', { class: 'muted', id: 'grid-note' });
  const view = new VirtualGrid(grid, {
    count: () => cull.viewRows().length,
    make: makeTile,
    render: (i, el) => paint(el, cull.viewRows()[i], thumbs),
  });

  // Which tile takes Tab: the focused photo's, or the first one drawn.
  const roving = () => {
    const focus = cull.focusedId();
    const drawn = view.pool.filter((el) => !el.hidden);
    const mine = drawn.find((el) => el.dataset.asset === focus);
    for (const el of drawn) el.tabIndex = el === (mine || drawn[0]) ? 0 : -1;
  };
  const draw = view.draw.bind(view);
  view.draw = () => { draw(); roving(); };

  // The bars stay at the window's top as the page scrolls.
  const inset = () => head.getBoundingClientRect().height + 6;
  // focusTile brings a photo's tile into view and gives it the focus.
  function focusTile(id) {
    const i = cull.indexOf(id);
    if (i < 0) return;
    cull.setFocus(id);
    view.reveal(i, inset());
    const el = view.elementAt(i);
    if (el) el.focus({ preventScroll: true });
  }

  function move(delta, mode) {
    const rows = cull.viewRows();
    if (!rows.length) return;
    const i = cull.indexOf(cull.focusedId());
    const at = i < 0 ? 0 : Math.max(0, Math.min(rows.length - 1, i + delta));
    const id = rows[at].assetId;
    if (mode === 'extend') cull.selectRange(cull.anchorId() || cull.focusedId() || id, id);
    else if (mode === 'select') cull.select([id]);
    focusTile(id);
  }

  grid.addEventListener('click', (e) => {
    const li = e.target.closest('li[data-asset]');
    if (!li) return;
    const id = li.dataset.asset;
    if (e.shiftKey) cull.selectRange(cull.anchorId() || cull.focusedId() || id, id, e.ctrlKey || e.metaKey);
    else if (e.ctrlKey || e.metaKey || several.getAttribute('aria-pressed') === 'true') cull.select([id], 'toggle');
    else cull.select([id]);
    focusTile(id);
  });
  grid.addEventListener('dblclick', (e) => {
    const li = e.target.closest('li[data-asset]');
    if (li) cull.openLoupe(li.dataset.asset);
  });
  grid.addEventListener('focusin', (e) => {
    const li = e.target.closest('li[data-asset]');
    if (li) cull.setFocus(li.dataset.asset);
  });
  // Shift-click selects a range, not the page's text.
  grid.addEventListener('mousedown', (e) => { if (e.shiftKey) e.preventDefault(); });

  // ---- keys ---------------------------------------------------------------------
  const perScreen = () => Math.max(1, Math.floor(window.innerHeight / (view.rowHeight || 200))) * (view.cols || 1);
  const steps = {
    arrowright: () => 1, arrowleft: () => -1, arrowdown: () => view.cols || 1, arrowup: () => -(view.cols || 1),
    pagedown: perScreen, pageup: () => -perScreen(), home: () => -Infinity, end: () => Infinity,
  };
  const offs = [];
  const key = (k, what, fn) => offs.push(cull.registerKey(k, what, fn, { scopes: ['grid'] }));
  for (const [k, step] of Object.entries(steps)) {
    const d = () => { const n = step(); return Number.isFinite(n) ? n : n > 0 ? 1e9 : -1e9; };
    key(k, 'Move through the photos', () => move(d(), 'select'));
    key(`shift+${k}`, 'Select from the first selected photo to the next', () => move(d(), 'extend'));
    key(`mod+${k}`, 'Move without changing the selection', () => move(d(), 'focus'));
  }
  key('space', 'Select or deselect the photo', () => {
    const id = cull.focusedId();
    if (id) cull.select([id], 'toggle');
  });
  key('mod+a', 'Select every photo the filters show', () => cull.selectAll());
  key('escape', 'Select none', () => cull.clearSelection());
  key('enter', 'Open the photo full-window (the loupe)', () => {
    const id = cull.focusedId() || (cull.viewRows()[0] && cull.viewRows()[0].assetId);
    if (id) cull.openLoupe(id);
  });
  offs.push(cull.registerKey('i', 'Show the photo’s details', () => {
    const id = cull.loupeId() || cull.focusedId();
    const row = id && cull.rowOf(id);
    if (row) onDetails(row);
  }, { scopes: ['grid', 'loupe'] }));
  const popScope = cull.pushScope({
    name: 'grid',
    targets: () => {
      if (cull.selectionSize()) return cull.selectedIds();
      const id = cull.focusedId();
      return id && cull.indexOf(id) >= 0 ? [id] : [];
    },
    advance: () => move(1, 'select'),
  });

  // ---- keeping it all up to date -----------------------------------------------
  let cameras = '';
  function counts() {
    const c = cull.counts();
    const f = cull.getFilter();
    ready.buttons.forEach((b, i) => { b.textContent = `${READINESS[i][1]} (${c.readiness[READINESS[i][0]].toLocaleString()})`; });
    flags.buttons.forEach((b, i) => { b.textContent = `${FLAGS[i][1]} (${c.flag[FLAGS[i][0]].toLocaleString()})`; });
    [...stars.options].forEach((o, n) => { o.textContent = `${n ? `${'★'.repeat(n)} or more` : 'Any rating'} (${c.stars[n].toLocaleString()})`; });
    [...labelled.options].forEach((o, i) => { o.textContent = `${labelOptions[i][1]} (${c.label[o.value].toLocaleString()})`; });
    [...bucket.options].forEach((o, i) => { o.textContent = `${BUCKETS[i][1]} (${c.warning[o.value].toLocaleString()})`; });
    const names = c.cameras.map(([n]) => n);
    if (f.camera && !names.includes(f.camera)) names.push(f.camera);
    if (names.join('\n') !== cameras) {
      cameras = names.join('\n');
      clear(camera, h('option', { value: '' }, 'Any camera'), names.map((n) => h('option', { value: n }, n)));
      camera.value = f.camera;
    }
    const byName = new Map(c.cameras);
    [...camera.options].forEach((o) => {
      o.textContent = o.value ? `${o.value} (${(byName.get(o.value) || 0).toLocaleString()})` : `Any camera (${c.stars[0].toLocaleString()})`;
    });
    favoriteActions.hidden = !f.favorite;
    pickThese.disabled = !c.shown || c.favoritesLoading;
    pickThese.textContent = f.favorite && !c.favoritesLoading ? `Pick these ${c.shown.toLocaleString()}` : 'Pick these';
    // Those folded away on a wide screen; on a phone, every one.
    const more = ['camera', 'from', 'to', 'favorite'].filter((k) => f[k]).length + (f.readiness !== 'all' ? 1 : 0) + (f.faces !== 'any' ? 1 : 0) +
      (f.warning !== 'any' ? 1 : 0);
    const main = (f.flag !== 'any' ? 1 : 0) + (f.ratingMin ? 1 : 0) + (f.label !== 'any' ? 1 : 0) + (f.q ? 1 : 0);
    moreOn.textContent = more ? ` (${more} on)` : '';
    allOn.textContent = more + main ? ` (${more + main} on)` : '';
    const s = cull.searchState();
    status.textContent = s.q
      ? (s.busy ? `Searching for “${s.q}”…` : s.error ? `The search failed: ${s.error}`
        : `${plural(c.shown, 'photo')} match “${s.q}”${c.shown >= 100 ? ' (the best 100)' : ''}`)
      : c.shown === c.total ? `${plural(c.total, 'photo')}` : `${c.shown.toLocaleString()} of ${plural(c.total, 'photo')} shown`;
    note.textContent = !model.loaded && !c.total ? 'Loading the photos…' : c.shown || s.busy ? '' : 'No photos match these filters.';
    selection();
  }
  function selection() {
    const n = cull.selectionSize();
    selStatus.textContent = n ? `${n.toLocaleString()} selected` : 'None selected';
    selectAllButton.textContent = `Select all ${cull.viewRows().length.toLocaleString()}`;
    clearButton.disabled = !n;
  }
  const offView = cull.onViewChange(() => {
    counts();
    view.refresh();
    if (cull.counts().favoritesLoading) return; // told once the favourites are read
    if (tell && !cull.getFilter().q) announce(`${plural(cull.counts().shown, 'photo')} shown.`);
    tell = false;
  });
  const offSel = cull.onSelectionChange(() => {
    selection();
    for (const el of view.pool) if (!el.hidden) paint(el, el.row, thumbs);
  });
  // A change of marks shows on its tile in the same frame as its key.
  const offMarks = cull.onMarksChange((ids) => {
    const set = new Set(ids);
    for (const el of view.pool) if (!el.hidden && set.has(el.dataset.asset)) paint(el, el.row, thumbs);
  });
  const offLoupe = cull.onLoupeChange((id) => { if (!id && cull.focusedId()) focusTile(cull.focusedId()); });

  function toTop() {
    // Back to the first photos if the page was further down the grid.
    const top = root.getBoundingClientRect().top + window.scrollY;
    if (window.scrollY > top) window.scrollTo(0, top);
  }

  // ---- the tiles' size, the photos alone ----------------------------------------
  const sizeNow = () => view.minWidth || parseFloat(getComputedStyle(grid).getPropertyValue('--tile-min')) || 180;
  function setSize(px, keep) {
    px = Math.max(Number(size.min), Math.min(Number(size.max), Math.round(px)));
    grid.style.setProperty('--tile-min', `${px}px`);
    size.value = String(px);
    view.relayout();
    if (keep) cull.setSetting('tileSize', px);
  }
  size.addEventListener('input', () => setSize(Number(size.value), false));
  size.addEventListener('change', () => setSize(Number(size.value), true));
  const sizeBy = (d) => () => setSize(sizeNow() + d * Number(size.step) * 2, true);
  key('=', 'Bigger photos', sizeBy(1));
  key('+', 'Bigger photos', sizeBy(1));
  key('-', 'Smaller photos', sizeBy(-1));

  const setFull = (on) => {
    document.body.classList.toggle('full-grid', on);
    full.setAttribute('aria-pressed', String(on));
    view.refresh();
  };
  full.addEventListener('click', () => setFull(true));
  fullExit.addEventListener('click', () => setFull(false));
  key('f', 'Only the photos, without the bars (F again shows them)', () => setFull(!document.body.classList.contains('full-grid')));

  // After a click on a bar the keys go on to the photos: to the photo
  // with the focus when it is in sight, else to the page.
  const giveBack = () => {
    const el = view.elementAt(cull.indexOf(cull.focusedId())) || view.pool.find((x) => !x.hidden && x.tabIndex === 0);
    const r = el && el.getBoundingClientRect();
    if (r && r.bottom > inset() && r.top < window.innerHeight) el.focus({ preventScroll: true });
    else if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
  };
  const keysBack = [head, fullExit, document.querySelector('header.top')].filter(Boolean).map((el) => givesKeysBack(el, giveBack));
  // A filter's outcome is said once the view has been worked out again.
  let tell = false;
  function change(patch) {
    tell = true;
    cull.setFilter(patch);
    toTop();
  }

  teardown.push(() => {
    for (const off of [...offs, ...keysBack, popScope, offView, offSel, offMarks, offLoupe]) off();
    advance.detach();
    filters.detach();
    moreMenu.detach();
    document.body.classList.remove('full-grid');
    closeAssist();
    clearTimeout(typing);
    cull.closeLoupe();
    view.destroy();
    thumbs.stop();
    cull.detach();
  });

  clear(root, h('section', { class: 'photos', 'aria-labelledby': 'photos-h' },
    h('h2', { id: 'photos-h', class: 'visually-hidden' }, 'Photos'),
    head,
    h('p', { class: 'visually-hidden', id: 'grid-help' },
      'Arrow keys move; Shift with an arrow selects; Space selects; Enter opens; P picks, X rejects, 0 to 5 set stars, 6 to 9 colour labels; ' +
      'F shows only the photos; question mark lists every key.'),
    note, grid, fullExit));
  if (cull.settings.tileSize) setSize(cull.settings.tileSize, false);
  else size.value = String(sizeNow());
  counts();
}

// makeTile is a tile: the photo whole in a square frame (letterboxed, as
// Lightroom's grid draws it), and under it one line of its marks and name.
function makeTile() {
  const img = h('img', { alt: '', loading: 'lazy', draggable: 'false' });
  const flag = h('span', { class: 'flag' });
  const stars = h('span', { class: 'stars' });
  const label = h('span', { class: 'label-mark' });
  const edit = h('span', { class: 'edit-mark' });
  const face = h('span', { class: 'face-mark' });
  const warn = h('span', { class: 'warn-mark' });
  const caption = h('span', { class: 'caption' });
  const badge = h('span', { class: 'badge' });
  // A RAW+JPEG pair's mark, over the photo's corner: the line under it
  // has no room to spare at a phone's width.
  const pair = h('span', { class: 'badge pair-mark', 'aria-hidden': 'true' });
  const li = h('li', { role: 'option', class: 'ptile', tabindex: '-1', 'aria-selected': 'false' },
    h('span', { class: 'frame' }, img, pair),
    h('span', { class: 'marks', 'aria-hidden': 'true' }, label, flag, stars, edit, warn, face, caption, badge));
  li.parts = { img, flag, stars, label, edit, face, warn, caption, badge, pair };
  return li;
}

// paint shows row's photo in a tile, as it is now. A tile that already
// shows the photo as it is is left alone: a redraw of the grid after each
// key then writes to the few tiles that changed.
function paint(li, row, thumbs) {
  if (!row) return;
  const m = cull.marksOf(row.assetId);
  const st = row.stage;
  const sel = cull.isSelected(row.assetId);
  const paired = !!row.pair && !row.jpeg; // the raw's tile stands for the pair
  const state = `${row.assetId}|${st}|${m.picked}|${m.rejected}|${m.rating}|${m.colorLabel}|${m.edited}|${m.eyesClosed}|${m.softFace}|${sel}|${row.name}|${row.warn}|${row.score}|${paired}`;
  if (li.painted === state) return;
  li.painted = state;
  const { img, flag, stars, label, edit, face, warn, caption, badge, pair } = li.parts;
  li.row = row;
  li.dataset.asset = row.assetId;
  li.dataset.stage = st;
  li.dataset.flag = m.picked ? 'picked' : m.rejected ? 'rejected' : '';
  li.dataset.rating = String(m.rating || 0);
  li.setAttribute('aria-selected', String(sel));
  flag.textContent = m.picked ? '✓ Pick' : m.rejected ? '✕ Reject' : '';
  stars.textContent = cull.starText(m.rating || 0);
  li.dataset.label = m.colorLabel || '';
  label.dataset.label = m.colorLabel || '';
  label.title = m.colorLabel ? `${cull.LABEL_NAMES[m.colorLabel]} label` : '';
  edit.textContent = m.edited ? '✎ Edited' : '';
  // What the assistant warns of, its reasons on hover; a blink or a soft
  // face as asset:faces found them, unless a warning says so already.
  const why = warnings(row);
  warn.textContent = why.length ? `⚠ ${why[0][1]}${why.length > 1 ? ` +${why.length - 1}` : ''}` : '';
  warn.title = why.map(([, name, message]) => (message ? `${name}: ${message}` : name)).join('\n');
  li.dataset.warnings = why.map(([code]) => code).join(' ');
  const blink = m.eyesClosed && !(row.warn & WARNING_BITS.eyes_closed);
  const soft = m.softFace && !(row.warn & WARNING_BITS.face_soft);
  face.textContent = [blink ? '◡ Blink' : '', soft ? '◌ Soft face' : ''].filter(Boolean).join(' ');
  li.dataset.faces = m.eyesClosed ? 'eyes-closed' : m.softFace ? 'soft' : '';
  caption.textContent = row.name;
  caption.title = row.name || '';
  pair.textContent = paired ? 'RAW+JPEG' : '';
  pair.title = paired ? 'A raw and its JPEG, culled as one photo' : '';
  li.dataset.pair = paired ? 'raw+jpeg' : '';
  badge.textContent = st === 'searchable' || st === 'cull' ? '' : `${ICONS[st] || ''} ${STAGES[st]}`;
  const marks = cull.marksText(m);
  const warned = why.length ? `, warned: ${why.map(([, name, message]) => message || name).join('; ')}` : '';
  li.setAttribute('aria-label', `${row.name}${paired ? ' (RAW+JPEG)' : ''}${marks ? ', ' + marks : ''}${warned}, ${STAGES[st] || st}`);
  thumbs.watch(img, row);
}

// warnings are a row's warnings as [code, name, message], in WARNINGS'
// order, each with its reason's message when the API gave one.
function warnings(row) {
  if (!row.warn) return [];
  const said = new Map((row.reasons || []).map((r) => [r.code, r.message]));
  return WARNINGS.filter(([code]) => row.warn & WARNING_BITS[code]).map(([code, name]) => [code, name, said.get(code) || '']);
}
