// The Assist panel: the assistant suggests which photos to reject (and,
// in each burst or duplicate group, which to pick) from each photo's
// signals, under a strictness per criterion set on sliders. The counts
// follow the sliders as they move (cull:suggest, asked again after a
// short pause; an answer older than the one shown is dropped), nothing
// changes until Apply, which sends the suggestion's actions through
// cull.js's applyEach as one undo step, and photos decided by hand are
// never overridden. What the server learned from the photographer's own
// picks and rejects is said, with a reset. A on the grid (or Assist… on
// the bar, under More on a wide screen) opens and closes it; it sits
// beside the grid, under its bars, the grid narrowing to make room, and
// closes with it (close()).

import * as cull from './cull.js';
import { api } from './api.js';
import { h, clear, announce, plural, givesKeysBack } from './ui.js';
import { keyLabel } from './keys.js';

// The criteria, as the API names them, each with the warning codes it
// gives (counts.buckets) and what it looks for.
const CRITERIA = [
  ['blurry', 'Blurry', ['blurry'], 'Soft everywhere, nothing in focus'],
  ['motionBlur', 'Motion blur', ['motion_blur'], 'Smeared one way: the camera or the subject moved'],
  ['exposure', 'Exposure', ['underexposed', 'overexposed'], 'Too dark or too bright'],
  ['misfire', 'Misfires', ['misfire'], 'Nothing photographed: a lens cap, the ground'],
  ['eyesClosed', 'Eyes closed', ['eyes_closed'], 'Blinks, where faces were found'],
  ['faceSoft', 'Soft faces', ['face_soft'], 'A face out of focus, where faces were found'],
];
const MARKS = [['flags', 'Flags', 'reject and pick'], ['stars', 'Stars', 'one star for a reject, five for a pick'],
  ['labels', 'Labels', 'red for a reject, green for a pick']];

// How long the sliders rest before the counts are asked for again.
const PAUSE_MS = 150;

// What is kept in the browser: the choices that are not the server's.
const KEPT = 'lightbox.assist';
const kept = { keepPerGroup: 0, mark: 'flags' };
try {
  Object.assign(kept, JSON.parse(localStorage.getItem(KEPT) || '{}'));
} catch { /* defaults */ }
const keep = () => {
  try { localStorage.setItem(KEPT, JSON.stringify(kept)); } catch { /* for this page only */ }
};

let panel = null;
let el = {};
let project = null;
// The criteria moved here, sent as set; the others take the strictness the
// server has learned, shown from its answers.
const touched = new Map(); // criterion → number, or 'off'
let asked = 0; // the last question's number
let shown = 0; // the number of the question whose answer is shown
let answer = null; // that answer
let timer = 0;
let offMarks = null;
let marksTimer = 0;

function build() {
  if (panel) return;
  el.rows = {};
  const rows = CRITERIA.map(([c, name, , hint]) => {
    const on = h('input', { type: 'checkbox', id: `assist-on-${c}`, 'data-criterion': c });
    const range = h('input', {
      type: 'range', id: `assist-${c}`, min: 0, max: 1, step: 0.05, value: 0.5, 'data-criterion': c,
      'aria-label': `${name}: strictness`, 'aria-describedby': `assist-hint-${c}`,
    });
    const count = h('output', { class: 'assist-count', id: `assist-count-${c}`, for: `assist-${c}` });
    const value = h('output', { class: 'assist-value', id: `assist-value-${c}`, for: `assist-${c}` });
    on.addEventListener('change', () => set(c, on.checked ? Number(range.value) : 'off'));
    range.addEventListener('input', () => set(c, Number(range.value)));
    el.rows[c] = { on, range, count, value };
    return h('div', { class: 'assist-row', 'data-criterion': c, title: hint },
      h('span', { class: 'check' }, on, h('label', { for: `assist-on-${c}` }, name)), range, value, count,
      h('span', { class: 'visually-hidden', id: `assist-hint-${c}` }, hint));
  });
  el.keep = h('input', { type: 'range', id: 'assist-keep', min: 0, max: 5, step: 1, value: kept.keepPerGroup });
  el.keepValue = h('output', { class: 'assist-value', id: 'assist-keep-value', for: 'assist-keep' });
  el.keep.addEventListener('input', () => {
    kept.keepPerGroup = Number(el.keep.value);
    keep();
    paintKeep();
    ask();
  });
  el.marks = MARKS.map(([k, name, what]) => {
    const b = h('button', { type: 'button', class: 'small', id: `assist-mark-${k}`, 'aria-pressed': String(kept.mark === k), title: what }, name);
    b.addEventListener('click', () => {
      kept.mark = k;
      keep();
      for (const x of el.marks) x.setAttribute('aria-pressed', String(x === b));
      ask();
    });
    return b;
  });
  el.summary = h('p', { class: 'assist-summary', id: 'assist-summary', 'aria-live': 'polite' });
  el.apply = h('button', { type: 'button', class: 'primary', id: 'assist-apply', disabled: true, onclick: () => applyIt() }, 'Apply');
  el.result = h('p', { class: 'assist-result', id: 'assist-result', role: 'status' });
  el.judge = h('button', { type: 'button', class: 'small', id: 'assist-judge', hidden: true, onclick: () => judgeAll(),
    title: 'Read focus, motion and exposure from the previews of the photos uploaded before the assistant could' }, 'Judge them');
  el.learned = h('ul', { class: 'assist-learned', id: 'assist-adjustments' });
  el.since = h('p', { class: 'muted small', id: 'assist-since' });
  el.save = h('button', { type: 'button', class: 'small', id: 'assist-save', onclick: () => saveSettings() }, 'Keep these settings');
  el.reset = h('button', { type: 'button', class: 'small', id: 'assist-reset', onclick: () => resetSettings() }, 'Reset');
  el.close = h('button', { type: 'button', class: 'small', id: 'assist-close', onclick: () => close(), title: 'Close (Esc or A)' }, 'Close');
  panel = h('aside', { class: 'assist-panel', id: 'assist', 'aria-labelledby': 'assist-h', tabindex: '-1', hidden: true },
    h('div', { class: 'assist-head' }, h('h2', { id: 'assist-h' }, 'Assist'), el.close),
    h('p', { class: 'muted small assist-intro' }, 'Rejects from each photo’s focus, motion, exposure and faces. Nothing changes until Apply; what you decided by hand stays.'),
    h('div', { class: 'assist-criteria', role: 'group', 'aria-label': 'Strictness of each criterion' },
      h('div', { class: 'assist-row assist-scale', 'aria-hidden': 'true' }, h('span', {}),
        h('span', { class: 'assist-ends' }, h('span', {}, 'lenient'), h('span', {}, 'strict')), h('span', {}), h('span', { class: 'assist-count' }, 'photos')),
      rows),
    h('div', { class: 'assist-row assist-keep' },
      h('label', { for: 'assist-keep' }, 'Pick the best of each burst or duplicate group'), el.keepValue, el.keep),
    h('div', { class: 'assist-row assist-mark' }, h('span', { class: 'assist-label', id: 'assist-mark-h' }, 'Mark them with'),
      h('div', { class: 'segmented', role: 'group', 'aria-labelledby': 'assist-mark-h' }, el.marks)),
    // What Apply would do, and Apply, stay in sight as the panel scrolls.
    h('div', { class: 'assist-act' }, el.summary, el.judge, el.apply, el.result),
    h('section', { class: 'assist-learn', 'aria-labelledby': 'assist-learn-h' },
      h('h3', { id: 'assist-learn-h' }, 'Learned from your picks and rejects'), el.learned, el.since,
      h('div', { class: 'buttons' }, el.save, el.reset)));
  panel.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    e.stopPropagation();
    close();
  });
  // After a pointer used a control, the keys go back to the photos.
  givesKeysBack(panel, () => { if (document.activeElement instanceof HTMLElement) document.activeElement.blur(); });
  document.body.append(panel);
  paintKeep();
}

function paintKeep() {
  const n = kept.keepPerGroup;
  el.keep.value = String(n);
  el.keepValue.textContent = n ? `the best ${n}` : 'off';
  el.keep.setAttribute('aria-valuetext', n ? `the best ${n} of each group` : 'off');
}

// set takes a criterion's strictness (a number, or 'off') as moved here.
function set(c, v) {
  touched.set(c, v);
  paintCriterion(c, v === 'off' ? null : v);
  ask();
}

function paintCriterion(c, v) {
  const r = el.rows[c];
  const on = v !== null && v !== undefined;
  r.on.checked = on;
  r.range.disabled = !on;
  if (on) r.range.value = String(v);
  r.value.textContent = on ? Number(v).toFixed(2) : 'off';
  r.range.setAttribute('aria-valuetext', on ? `${Number(v).toFixed(2)}, from 0 lenient to 1 strict` : 'off');
}

export const isOpen = () => !!panel && !panel.hidden;

// place keeps the panel under the grid's bars, which stay at the
// window's top once the page scrolls; on a phone it is a drawer at the
// foot, placed by the CSS alone.
const narrow = window.matchMedia('(max-width: 640px)');
function place() {
  const head = document.getElementById('cull-head');
  const top = !narrow.matches && head && head.getClientRects().length ? Math.max(0, head.getBoundingClientRect().bottom) : null;
  panel.style.top = top === null ? '' : `${Math.round(top)}px`;
}

// pressed shows on the grid's bar whether the panel is open.
function pressed(on) {
  const b = document.getElementById('open-assist');
  if (b) b.setAttribute('aria-pressed', String(on));
}

export function open() {
  const p = cull.projectId();
  if (!p) return;
  build();
  if (p !== project) {
    project = p;
    touched.clear();
    answer = null;
    el.result.textContent = '';
  }
  panel.hidden = false;
  document.body.classList.add('assist-open');
  pressed(true);
  place();
  window.addEventListener('scroll', place, { passive: true });
  window.addEventListener('resize', place, { passive: true });
  panel.focus({ preventScroll: true });
  if (!offMarks) offMarks = cull.onMarksChange(marksChanged);
  loadPreferences();
  ask(0);
}

export function close() {
  if (!panel || panel.hidden) return;
  panel.hidden = true;
  document.body.classList.remove('assist-open');
  pressed(false);
  window.removeEventListener('scroll', place);
  window.removeEventListener('resize', place);
  clearTimeout(timer);
  clearTimeout(marksTimer);
  if (offMarks) offMarks();
  offMarks = null;
  asked++; // an answer on its way is no longer wanted
}

// marksChanged asks again once flags settle: a pick or reject by hand
// leaves that photo alone and may move what the server has learned. The
// answer shown is out of date meanwhile, and Apply waits.
function marksChanged() {
  asked++;
  paintBusy();
  clearTimeout(marksTimer);
  marksTimer = setTimeout(async () => {
    await cull.settled();
    if (!isOpen()) return;
    loadPreferences();
    ask(0);
  }, 800);
}

// ask asks for the suggestion under the sliders as they are, after a
// pause of wait ms in which they may move again.
function ask(wait = PAUSE_MS) {
  clearTimeout(timer);
  const n = ++asked;
  paintBusy();
  timer = setTimeout(() => suggest(n), wait);
}

async function suggest(n) {
  const strictness = Object.fromEntries(touched);
  const body = { strictness, keepPerGroup: kept.keepPerGroup, mark: kept.mark };
  const p = project;
  let res;
  try {
    res = await api('POST', `/v1/projects/${p}/cull:suggest`, body);
  } catch (err) {
    if (n !== asked || p !== project) return;
    shown = n;
    answer = null;
    el.summary.textContent = `The assistant could not answer: ${err.message}`;
    el.summary.dataset.state = 'error';
    paintBusy();
    return;
  }
  // An answer to an older position of the sliders than the one shown, or
  // to another project, is not shown.
  if (n <= shown || p !== project || !isOpen()) return;
  shown = n;
  answer = res;
  paint(res);
}

// paintBusy says whether the answer shown is the sliders' as they are:
// Apply waits for it.
function paintBusy() {
  const fresh = shown === asked;
  el.apply.disabled = !fresh || !answer || !answer.actions.length;
  panel.toggleAttribute('data-busy', !fresh);
  if (!fresh && answer) el.summary.dataset.state = 'busy';
}

// paint shows an answer: each criterion's count and strictness (those not
// moved here as the server has them), what would change, and Apply.
function paint(res) {
  const c = res.counts;
  const buckets = c.buckets || {};
  for (const [k, , codes] of CRITERIA) {
    const n = codes.reduce((sum, code) => sum + (buckets[code] || 0), 0);
    const r = el.rows[k];
    r.count.textContent = n.toLocaleString();
    r.count.dataset.n = String(n);
    r.count.setAttribute('aria-label', plural(n, 'photo'));
    if (!touched.has(k) && res.strictness) paintCriterion(k, res.strictness[k]);
  }
  const bits = [`Of ${plural(c.photos, 'photo')}: reject ${c.rejects.toLocaleString()}, pick ${c.picks.toLocaleString()}.`];
  if (c.leftAlone) bits.push(`${plural(c.leftAlone, 'photo')} you decided by hand ${c.leftAlone === 1 ? 'is' : 'are'} left alone.`);
  if (c.unjudged) bits.push(`${plural(c.unjudged, 'photo')} ${c.unjudged === 1 ? 'has' : 'have'} no signals yet.`);
  el.summary.textContent = bits.join(' ');
  el.summary.dataset.state = 'ready';
  el.summary.dataset.unjudged = String(c.unjudged || 0);
  el.judge.hidden = !c.unjudged;
  if (!c.unjudged && judging) {
    judging = false;
    clearTimeout(judgeTimer);
    el.judge.disabled = false;
    el.result.textContent = 'Every photo is judged.';
  }
  el.summary.dataset.rejects = String(c.rejects);
  el.summary.dataset.picks = String(c.picks);
  const n = res.actions.length;
  el.apply.textContent = n ? `Apply to ${plural(n, 'photo')}` : c.rejects + c.picks ? 'Applied' : 'Nothing to apply';
  paintBusy();
}

// judgeAll asks the server to judge the photos uploaded before the
// signals existed (a project:signals run reads their previews), then asks
// again every few seconds until none is left unjudged.
let judgeTimer = 0;
let judging = false;
async function judgeAll() {
  const p = project;
  el.judge.disabled = true;
  try {
    await api('POST', `/v1/projects/${p}/assets:judge`);
  } catch (err) {
    el.result.textContent = `Not judged: ${err.message}`;
    el.judge.disabled = false;
    return;
  }
  el.result.textContent = 'Judging them from their previews…';
  judging = true;
  const again = () => {
    if (p !== project || !isOpen() || !judging) {
      el.judge.disabled = false;
      judging = false;
      return;
    }
    ask(0);
    judgeTimer = setTimeout(again, JUDGE_POLL_MS);
  };
  judgeTimer = setTimeout(again, JUDGE_POLL_MS);
}
const JUDGE_POLL_MS = 3000;

// applyIt sends the suggestion shown, as it is, one undo step.
async function applyIt() {
  const res = answer;
  if (!res || shown !== asked || !res.actions.length) return;
  el.apply.disabled = true;
  let refused = [];
  const n = res.actions.length;
  el.result.textContent = `Applying to ${plural(n, 'photo')}…`;
  const ok = await cull.applyEach(res.actions, { label: 'Assist', leftAlone: (ids) => { refused = ids; } });
  if (!ok) {
    el.result.textContent = 'Not applied: the server refused it, so nothing changed.';
    paintBusy();
    return;
  }
  const left = refused.length + (res.counts.leftAlone || 0);
  const said = `Last Apply: ${plural(n - refused.length, 'photo')} changed; ${plural(left, 'photo')} you decided by hand ${left === 1 ? 'was' : 'were'} left alone ` +
    `(${keyLabel('mod+z')} undoes it).`;
  el.result.textContent = said;
  el.result.dataset.applied = String(n - refused.length);
  el.result.dataset.leftAlone = String(left);
  announce(said);
  ask(0);
}

// loadPreferences shows what the server has learned, and the strictness
// it now takes for the criteria not moved here.
async function loadPreferences() {
  const p = project;
  let prefs;
  try {
    prefs = await api('GET', '/v1/cull/preferences');
  } catch (err) {
    if (p === project) clear(el.learned, h('li', { class: 'error' }, `Not read: ${err.message}`));
    return;
  }
  if (p !== project) return;
  const adj = prefs.adjustments || [];
  clear(el.learned, adj.length
    ? adj.map((a) => h('li', { 'data-criterion': a.criterion }, a.message))
    : h('li', { class: 'muted' }, 'Nothing yet. Pick photos it calls blurry, or reject ones it let through, and each criterion follows you.'));
  el.since.textContent = prefs.learnSince ? `From your decisions since ${new Date(prefs.learnSince).toLocaleString()}.` : '';
  for (const [c] of CRITERIA) if (!touched.has(c) && prefs.strictness) paintCriterion(c, prefs.strictness[c]);
}

// saveSettings keeps the sliders as the photographer's own strictness,
// from which learning goes on.
async function saveSettings() {
  const strictness = {};
  for (const [c] of CRITERIA) {
    const r = el.rows[c];
    strictness[c] = r.on.checked ? Number(r.range.value) : null;
  }
  try {
    await api('PUT', '/v1/cull/preferences', { strictness });
  } catch (err) {
    announce(`The settings were not kept: ${err.message}`, 'error');
    return;
  }
  touched.clear();
  announce('These settings are now yours.');
  await loadPreferences();
  ask(0);
}

// resetSettings forgets the photographer's settings and what was learned.
async function resetSettings() {
  try {
    await api('DELETE', '/v1/cull/preferences');
  } catch (err) {
    announce(`Not reset: ${err.message}`, 'error');
    return;
  }
  touched.clear();
  announce('The assistant is back to its defaults.');
  await loadPreferences();
  ask(0);
}

cull.registerKey('a', 'Assist: suggest rejects and picks (again: close it)', () => (isOpen() ? close() : open()),
  { scopes: ['grid'], button: { id: 'open-assist', label: 'Assist…' } });
