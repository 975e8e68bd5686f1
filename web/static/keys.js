// The culling views' keyboard: one keydown listener that hands each key to
// what cull.js has registered for the view on top (grid, loupe or
// compare, group review) unless a focused control uses it, the keys every
// view shares (flags, stars, colour labels, undo), and the `?` help that
// says what each key does in each view, with the culling settings.

import * as cull from './cull.js';
import { h, clear, announce, plural } from './ui.js';

const MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

// keyOf names a key press as registerKey names keys: 'p', 'shift+p',
// 'mod+z' (Ctrl, or Cmd on a Mac), 'arrowright', 'space', '?'. Shift is
// named only where it does not already make the character.
export function keyOf(e) {
  let k = e.key === ' ' ? 'space' : (e.key || '').toLowerCase();
  const parts = [];
  if (e.ctrlKey || e.metaKey) parts.push('mod');
  if (e.altKey) parts.push('alt');
  if (e.shiftKey && (k.length > 1 || /^[a-z]$/.test(k))) parts.push('shift');
  parts.push(k);
  return parts.join('+');
}

const NAMES = {
  arrowleft: '←', arrowright: '→', arrowup: '↑', arrowdown: '↓', space: 'Space', enter: 'Enter',
  escape: 'Esc', home: 'Home', end: 'End', pageup: 'Page Up', pagedown: 'Page Down',
};

// keyLabel writes a key as people read it: Ctrl+Z (⌘Z on a Mac), Shift+→.
export function keyLabel(key) {
  return key.split('+').map((p) => {
    if (p === 'mod') return MAC ? '⌘' : 'Ctrl';
    if (p === 'shift') return 'Shift';
    if (p === 'alt') return MAC ? '⌥' : 'Alt';
    return NAMES[p] || p.toUpperCase();
  }).join(MAC ? '' : '+');
}

const MOVES = new Set(['arrowleft', 'arrowright', 'arrowup', 'arrowdown', 'home', 'end', 'pageup', 'pagedown']);

// controlTakes reports whether the focused control t uses key itself: a
// text field or a menu every key, a slider its arrows, a check box its
// Space, a button, a link or a summary their Enter and Space. Every other
// key goes to the photos, so that a click on a bar leaves them the arrows.
function controlTakes(t, key) {
  if (t.closest('textarea, select, [contenteditable]:not([contenteditable="false"])')) return true;
  const input = t.closest('input');
  if (input) {
    switch (input.type) {
      case 'checkbox': return key === 'space';
      case 'radio': return key === 'space' || MOVES.has(key);
      case 'range': return MOVES.has(key);
      case 'button': case 'submit': case 'reset': return key === 'enter' || key === 'space';
      default: return true; // text, search, date, …
    }
  }
  return !!t.closest('button, a[href], summary') && (key === 'enter' || key === 'space');
}

function onKeyDown(e) {
  if (e.defaultPrevented || e.isComposing) return;
  const t = e.target instanceof Element ? e.target : document.body;
  // Another dialog (a photo's details) on top: not ours.
  const dlg = t.closest('dialog');
  if (dlg && !dlg.hasAttribute('data-cull-keys')) return;
  const scope = cull.activeScope();
  if (!scope) return;
  const key = keyOf(e);
  if (controlTakes(t, key)) return;
  const entry = cull.keyFor(key, scope.name);
  if (!entry) return;
  e.preventDefault();
  taken = e.key;
  entry.fn({ scope: scope.name, targets: scope.targets(), event: e });
}
document.addEventListener('keydown', onKeyDown);
// A key taken above has no other effect, even when its character comes
// as an event of its own (as from some input methods and automation):
// Space would scroll the page.
let taken = null;
document.addEventListener('keypress', (e) => { if (e.key === taken) e.preventDefault(); });
document.addEventListener('keyup', () => { taken = null; });

// mark applies a flag or stars to the photos the keys act on, says so,
// and after a flag moves on when the setting asks and there was one photo.
function mark(change, label) {
  const flag = 'picked' in change;
  return (ctx) => {
    const ids = ctx.targets;
    if (!ids.length) {
      announce('No photo is selected.');
      return;
    }
    const one = ids.length === 1 && cull.rowOf(ids[0]);
    cull.apply(ids, change, { label: `${label}: ${one ? one.name : plural(ids.length, 'photo')}` });
    announce(`${label}: ${one ? one.name : plural(ids.length, 'photo')}.`);
    const scope = cull.activeScope();
    if (flag && cull.settings.advance && ids.length === 1 && scope && scope.advance) scope.advance();
  };
}

const STARS = ['No stars', '1 star', '2 stars', '3 stars', '4 stars', '5 stars'];

cull.registerKey('p', 'Pick', mark({ picked: true, rejected: false }, 'Picked'));
cull.registerKey('x', 'Reject', mark({ picked: false, rejected: true }, 'Rejected'));
cull.registerKey('u', 'Clear the pick or reject flag', mark({ picked: false, rejected: false }, 'Flag cleared'));
for (let n = 0; n <= 5; n++) {
  cull.registerKey(String(n), n ? `${STARS[n]}` : 'Clear the stars', mark({ rating: n || null }, STARS[n]));
}

// labelPhotos gives photos a colour label (null: none). Toggling, as
// Lightroom's keys do, takes the label off instead when every one of them
// has it already.
export function labelPhotos(ids, color, { toggle = false } = {}) {
  if (!ids.length) {
    announce('No photo is selected.');
    return;
  }
  const to = toggle && color && ids.every((id) => cull.marksOf(id).colorLabel === color) ? null : color;
  const one = ids.length === 1 && cull.rowOf(ids[0]);
  const what = `${to ? `${cull.LABEL_NAMES[to]} label` : 'Label cleared'}: ${one ? one.name : plural(ids.length, 'photo')}`;
  cull.apply(ids, { colorLabel: to }, { label: what });
  announce(`${what}.`);
}

// labelMenu is a menu of the colour labels, for pointer and touch and for
// purple, which has no key: it labels the photos targets() names.
export function labelMenu(id, targets) {
  const menu = h('select', { id, 'aria-label': 'Colour label' },
    h('option', { value: '' }, 'Label…'),
    cull.COLOR_LABELS.map((c, i) => h('option', { value: c }, i < 4 ? `${cull.LABEL_NAMES[c]} (${6 + i})` : cull.LABEL_NAMES[c])),
    h('option', { value: 'none' }, 'No label'));
  menu.addEventListener('change', () => {
    if (menu.value) labelPhotos(targets(), menu.value === 'none' ? null : menu.value);
    menu.value = '';
  });
  return menu;
}

// Keys 6 to 9 as in Lightroom; purple has no key there, and here is on
// the Label menus of the grid and the loupe.
cull.COLOR_LABELS.slice(0, 4).forEach((color, i) => {
  cull.registerKey(String(6 + i), `${cull.LABEL_NAMES[color]} label (again: none)`, (ctx) => labelPhotos(ctx.targets, color, { toggle: true }));
});
cull.registerKey('c', 'Compare the selected photos (2 to 4), or the photo with the next one', (ctx) => {
  let ids = ctx.targets;
  if (ids.length === 1) {
    const i = cull.indexOf(ids[0]);
    const next = cull.viewRows()[i + 1];
    if (next) ids = [ids[0], next.assetId];
  }
  cull.openCompare(ids);
}, { scopes: ['grid', 'loupe'] });
cull.registerKey('mod+z', 'Undo the last change of flags, stars or labels', () => cull.undo());
cull.registerKey('?', 'Show these keys', () => showHelp());

const VIEW_NAMES = [['grid', 'In the grid'], ['loupe', 'In the loupe'], ['compare', 'In compare'], ['group review', 'In group review']];

// keysOf lists what each key does in view, as keyFor resolves it (a
// view's own key over a shared one): one meaning per key, keys with the
// same meaning together, the view's own before those every view shares.
function keysOf(view) {
  const out = [];
  const seen = new Set();
  for (const k of cull.keyTable()) {
    if (!k.scopes.includes(view) || seen.has(k.key)) continue;
    seen.add(k.key);
    const { description, scopes } = cull.keyFor(k.key, view);
    const same = out.find((x) => x.description === description);
    if (same) same.keys.push(k.key);
    else out.push({ keys: [k.key], description, shared: scopes.length === cull.SCOPES.length });
  }
  return [...out.filter((k) => !k.shared), ...out.filter((k) => k.shared)];
}

// settingsForm is the culling settings as checkboxes, for the help and
// the grid's bar.
export function settingBox(name, label) {
  const id = `setting-${name}`;
  const box = h('input', { type: 'checkbox', id, checked: cull.settings[name] || null });
  box.addEventListener('change', () => cull.setSetting(name, box.checked));
  const off = cull.onSettingsChange((n, v) => { if (n === name) box.checked = v; });
  const el = h('span', { class: 'check' }, box, h('label', { for: id }, label));
  el.detach = off;
  return el;
}

// showHelp lists what every key does in each view open now, and in the
// loupe and compare from the grid, with the culling settings.
export function showHelp() {
  let dlg = document.getElementById('keys-help');
  if (!dlg) {
    dlg = h('dialog', { id: 'keys-help', 'aria-labelledby': 'keys-help-h' });
    document.body.append(dlg);
  }
  // The views open, and the loupe and compare the grid opens.
  const open = cull.openScopes();
  if (open.includes('grid')) open.push('loupe', 'compare');
  const views = VIEW_NAMES.filter(([v]) => open.includes(v));
  const close = h('button', { type: 'button', class: 'close', onclick: () => dlg.close() }, 'Close');
  const boxes = [settingBox('advance', 'Move to the next photo after a flag (P, X or U)'),
    settingBox('preload', 'Load the next and previous photos ahead in the loupe'),
    settingBox('acceptFlags', 'In group review, accepting the best shot picks it and rejects the rest')];
  dlg.addEventListener('close', () => boxes.forEach((b) => b.detach()), { once: true });
  clear(dlg,
    h('div', { class: 'dialog-head' }, h('h2', { id: 'keys-help-h' }, 'Keys'), close),
    h('div', { class: 'details-body' },
      h('div', { class: 'keys-views' }, views.map(([view, title]) => h('section', { 'data-view': view, 'aria-label': title },
        h('h3', {}, title),
        h('dl', { class: 'facts keys-list' }, keysOf(view).map((k) => [
          h('dt', {}, k.keys.map((key, i) => [i ? ' ' : '', h('kbd', {}, keyLabel(key))])),
          h('dd', {}, k.description)]))))),
      h('p', { class: 'muted' }, 'Purple, or no label, from the Label menu on the grid’s bar or the loupe’s.'),
      h('h3', {}, 'Settings'), h('div', { class: 'settings' }, boxes)));
  if (!dlg.open) dlg.showModal();
  close.focus();
}
