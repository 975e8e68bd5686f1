// Group review: a project's moments, bursts and duplicate groups one at a
// time, the best shot large beside the photo with the focus and the
// reasons it won, the group's photos in a strip under them. The best shot
// is accepted (the group marked reviewed) or another chosen, the group
// titled; each change is shown at once, sent at once and rolled back with
// a message when refused. The flag, star and label keys work on the photo
// with the focus as in the grid, the strip shows each photo's marks, and
// accepting can pick the best shot and reject the rest in one undoable
// step (the acceptFlags setting). The server keeps a person's choices
// through every later grouping run, under the group's same id, so the view
// follows cluster.updated by reading its groups again. Groups are read a
// page at a time as the review reaches them: a project of 100,000 photos
// has tens of thousands.

import { api, ApiError } from './api.js';
import { h, clear, announce, when, plural, givesKeysBack } from './ui.js';
import * as cull from './cull.js';
import { liveEvents } from './model.js';
import { Thumbs, previewUrl } from './images.js';
import { keyLabel, settingBox } from './keys.js';

export const KINDS = [['moment', 'Moments'], ['burst', 'Bursts'], ['duplicate_group', 'Duplicate groups']];
const KIND_ONE = { moment: 'Moment', burst: 'Burst', duplicate_group: 'Duplicate group' };
const ROLES = { winner: '★ Best shot', alt: 'Alternate', candidate: 'Candidate' };
const SCOPE = 'group review';
const PAGE = 50;

// The group to open next time the review is shown, when asked from
// elsewhere (a group's Review link).
let wanted = null;

// reviewGroup asks the review to open at a group of kind.
export function reviewGroup(kind, id) {
  wanted = { kind, id };
}

// whyText says a winner's reasons in words.
export function whyText(why) {
  return (why || []).map((w) => (w === 'chosen' ? 'chosen by you' : w)).join(', ');
}

// reviewView fills root with the review of model's groups; teardown
// collects what to undo on leaving.
export function reviewView(root, model, teardown) {
  cull.attach(model);
  const thumbs = new Thumbs();
  const st = {
    kind: (wanted && wanted.kind) || 'burst',
    unreviewed: false,
    items: [], // the groups read so far, in the list's order
    cursor: '', // the next page's, '' before the first, null after the last
    at: -1, // the group shown, in items
    focus: 0, // the member with the focus, in the group's order
    loading: null,
  };
  let want = wanted && wanted.id;
  wanted = null;

  // ---- the parts ------------------------------------------------------------
  const kindBox = h('div', { class: 'segmented', role: 'group', 'aria-label': 'Kind of group' });
  const kindButtons = KINDS.map(([k, label]) => {
    const b = h('button', { type: 'button', 'aria-pressed': String(k === st.kind), 'data-kind': k, id: `review-kind-${k}` }, label);
    b.addEventListener('click', () => setKind(k));
    kindBox.append(b);
    return b;
  });
  const onlyBox = h('input', { type: 'checkbox', id: 'review-unreviewed' });
  onlyBox.addEventListener('change', () => {
    st.unreviewed = onlyBox.checked;
    if (st.unreviewed && current() && current().reviewed) next(1);
  });
  const prevButton = h('button', { type: 'button', class: 'small', id: 'group-prev', onclick: () => next(-1), title: `Previous group (${keyLabel('arrowup')})` }, '← Previous group');
  const nextButton = h('button', { type: 'button', class: 'small', id: 'group-next', onclick: () => next(1), title: `Next group (${keyLabel('arrowdown')})` }, 'Next group →');
  const pos = h('span', { class: 'group-pos', id: 'group-pos', 'aria-live': 'polite' });
  const title = h('h3', { id: 'group-title', class: 'group-title' });
  const reviewedBadge = h('span', { class: 'badge reviewed', id: 'group-reviewed' });
  const dates = h('p', { class: 'muted small', id: 'group-when' });
  const winnerFig = figure('group-winner');
  const focusFig = figure('group-focus');
  const members = h('ul', {
    class: 'group-members', id: 'group-members', role: 'listbox', 'aria-label': 'Photos of this group',
    'aria-describedby': 'group-help', 'data-cull-keys': '',
  });
  const acceptButton = h('button', { type: 'button', class: 'primary', id: 'group-accept', onclick: () => accept(), 'aria-keyshortcuts': 'A' },
    'Accept the best shot', h('kbd', { 'aria-hidden': 'true' }, 'A'));
  const chooseButton = h('button', { type: 'button', id: 'group-choose', onclick: () => choose(), 'aria-keyshortcuts': 'W' },
    'Make this the best shot', h('kbd', { 'aria-hidden': 'true' }, 'W'));
  const reviewedButton = h('button', { type: 'button', id: 'group-mark', 'aria-pressed': 'false', onclick: () => toggleReviewed(), 'aria-keyshortcuts': 'R' },
    'Reviewed', h('kbd', { 'aria-hidden': 'true' }, 'R'));
  const titleInput = h('input', { id: 'group-title-input', maxlength: 200, autocomplete: 'off' });
  const titleForm = h('form', { class: 'inline group-title-form', id: 'group-title-form' },
    h('label', { for: 'group-title-input' }, 'Title'), titleInput, h('button', { type: 'submit', class: 'small' }, 'Save title'));
  titleForm.addEventListener('submit', (e) => {
    e.preventDefault();
    saveTitle();
  });
  titleInput.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      titleInput.value = current() ? current().title : '';
      focusMembers();
    }
  });
  const acceptFlags = settingBox('acceptFlags', 'Accepting picks the best shot and rejects the rest');
  acceptFlags.id = 'group-accept-flags';
  const note = h('p', { class: 'muted', id: 'group-note' });
  const group = h('article', { class: 'group-review', id: 'group', 'aria-labelledby': 'group-title', hidden: true },
    h('div', { class: 'title-row' }, h('div', {}, title, dates), reviewedBadge),
    h('div', { class: 'group-stage' }, winnerFig.el, focusFig.el),
    members,
    h('div', { class: 'group-actions' }, acceptButton, chooseButton, reviewedButton, titleForm),
    h('div', { class: 'group-actions' }, acceptFlags));

  const section = h('section', { class: 'card', 'aria-labelledby': 'review-h' },
    h('div', { class: 'title-row' }, h('h2', { id: 'review-h' }, 'Review groups'), kindBox),
    h('p', { class: 'muted small keys-help', id: 'group-help' },
      '←/→ move through the group’s photos; W or Enter makes the one with the focus the best shot; A accepts the best shot and ' +
      'goes on; R marks the group reviewed or not; T titles it; ↑/↓ go to the previous or next group; P picks, X rejects and U ' +
      'clears the flag of the photo with the focus, 0 to 5 set its stars, 6 to 9 its colour label, Ctrl+Z undoes; ? lists every key.'),
    h('div', { class: 'review-nav', role: 'toolbar', 'aria-label': 'Groups' }, prevButton, pos, nextButton,
      h('span', { class: 'check' }, onlyBox, h('label', { for: 'review-unreviewed' }, 'Only groups not reviewed'))),
    note, group);
  clear(root, section);
  // After a click on a button the keys go on to the group's photos.
  givesKeysBack(section, () => { if (!group.hidden) focusMembers(); });

  // ---- reading the groups -----------------------------------------------------
  const current = () => st.items[st.at] || null;

  // more reads the next page of the kind's groups; false at the end.
  async function more() {
    if (st.cursor === null) return false;
    if (st.loading) return st.loading;
    const kind = st.kind;
    st.loading = (async () => {
      try {
        const url = `/v1/projects/${model.projectId}/clusters?kind=${kind}&limit=${PAGE}${st.cursor ? '&cursor=' + encodeURIComponent(st.cursor) : ''}`;
        const page = await api('GET', url);
        if (st.kind !== kind) return false;
        st.items.push(...page.items);
        st.cursor = (page.pageInfo && page.pageInfo.nextCursor) || null;
        return page.items.length > 0;
      } finally {
        st.loading = null;
      }
    })();
    return st.loading;
  }

  // start reads the kind's groups from the first and shows the wanted
  // one, or the one at index at (clamped), or the first.
  let loads = 0; // how many times the groups were read, for tests to wait on
  async function start(at = 0, id = null) {
    st.items = [];
    st.cursor = '';
    st.at = -1;
    note.textContent = 'Loading the groups…';
    try {
      await more();
      if (id) {
        while (!st.items.some((c) => c.id === id) && await more());
        const i = st.items.findIndex((c) => c.id === id);
        if (i >= 0) at = i;
      }
      while (st.items.length <= at && await more());
    } catch (err) {
      group.dataset.loads = String(++loads);
      note.textContent = `The groups could not be loaded: ${err.message}`;
      return;
    }
    group.dataset.loads = String(++loads);
    if (!st.items.length) {
      note.textContent = `No ${KINDS.find(([k]) => k === st.kind)[1].toLowerCase()} yet: groups are made shortly after photos become ready.`;
      group.hidden = true;
      position();
      return;
    }
    note.textContent = '';
    show(Math.min(at, st.items.length - 1), 0);
  }

  function setKind(k) {
    if (k === st.kind) return;
    st.kind = k;
    for (const b of kindButtons) b.setAttribute('aria-pressed', String(b.dataset.kind === k));
    start();
  }

  // next moves d groups on (±1), past reviewed ones when only those not
  // reviewed are wanted, reading pages as it goes.
  async function next(d) {
    let i = st.at;
    for (;;) {
      i += d;
      if (i < 0) {
        announce('This is the first group.');
        return;
      }
      if (i >= st.items.length) {
        let hasMore = false;
        try { hasMore = await more(); } catch (err) { announce(`The groups could not be loaded: ${err.message}`, 'error'); return; }
        if (!hasMore && i >= st.items.length) {
          announce(st.unreviewed ? 'No group after this one is left to review.' : 'This is the last group.');
          return;
        }
      }
      if (!st.unreviewed || !st.items[i].reviewed) break;
    }
    show(i, 0);
  }

  // ---- drawing -------------------------------------------------------------------
  function figure(id) {
    const img = h('img', { alt: '', class: 'group-img', draggable: 'false' });
    const cap = h('figcaption', {});
    const why = h('p', { class: 'why small' });
    const el = h('figure', { class: 'group-fig', id }, h('div', { class: 'group-fig-stage' }, img), cap, why);
    return { el, img, cap, why, showing: null };
  }

  function rowOf(id) {
    return model.byAsset.get(id) || { assetId: id, name: id.slice(0, 8), status: 'ai', local: 'done' };
  }

  const sorted = (c) => (Array.isArray(c.assets) ? [...c.assets].sort((a, b) => a.rank - b.rank) : []);

  function signalsText(sig) {
    return ['sharpness', 'exposure', 'resolution', 'fidelity'].filter((k) => typeof (sig || {})[k] === 'number')
      .map((k) => `${k} ${sig[k].toFixed(2)}`).join(' · ');
  }

  async function paintFig(fig, m, role) {
    const row = rowOf(m.assetId);
    fig.el.dataset.asset = m.assetId;
    fig.cap.textContent = `${ROLES[role] || role}: ${row.name}`;
    fig.img.alt = `${ROLES[role] || role}: ${row.name}`;
    if (fig.showing === m.assetId) return;
    fig.showing = m.assetId;
    fig.img.removeAttribute('src');
    try {
      const url = await previewUrl(row);
      if (fig.showing === m.assetId && url) fig.img.src = url;
    } catch { /* the strip still shows its thumbnail */ }
  }

  // show draws group i with the focus on its member f.
  function show(i, f) {
    st.at = i;
    const c = current();
    const list = sorted(c);
    st.focus = Math.max(0, Math.min(f, list.length - 1));
    group.hidden = false;
    group.dataset.cluster = c.id;
    group.dataset.kind = c.kind;
    const range = c.startTime ? `${when(c.startTime)}${c.endTime && c.endTime !== c.startTime ? ' – ' + when(c.endTime) : ''}` : '';
    title.textContent = c.title || `${KIND_ONE[c.kind]}, ${plural(list.length, 'photo')}`;
    dates.textContent = [KIND_ONE[c.kind], plural(list.length, 'photo'), range].filter(Boolean).join(' · ');
    if (document.activeElement !== titleInput) titleInput.value = c.title || '';
    paintReviewed(c);
    st.unlisted = list.filter((m) => !model.byAsset.has(m.assetId)).length;
    const heldFocus = members.contains(document.activeElement);
    clear(members, list.map((m, k) => {
      const row = rowOf(m.assetId);
      const img = h('img', { alt: '', loading: 'lazy', width: 160, height: 120, draggable: 'false' });
      const li = h('li', {
        role: 'option', class: 'gtile', tabindex: '-1', 'data-asset': m.assetId, 'data-role': m.role,
        'aria-selected': String(k === st.focus),
        'aria-label': `${row.name}, ${ROLES[m.role] || m.role}${signalsText(m.signals) ? ', ' + signalsText(m.signals) : ''}`,
      }, img, h('span', { class: 'caption' }, row.name), h('span', { class: 'role' }, ROLES[m.role] || m.role),
      h('span', { class: 'marks', 'aria-hidden': 'true' }, h('span', { class: 'label-mark' }), h('span', { class: 'flag' }), h('span', { class: 'stars' })));
      li.baseLabel = li.getAttribute('aria-label');
      li.addEventListener('click', () => setFocus(k, true));
      li.addEventListener('dblclick', () => { setFocus(k, true); choose(); });
      thumbs.watch(img, row);
      return li;
    }));
    paintMarks();
    paintFocus(heldFocus);
    position();
  }

  // paintMarks shows each photo's flag, stars and colour label on its tile
  // in the strip.
  function paintMarks() {
    for (const li of members.children) {
      const m = cull.marksOf(li.dataset.asset);
      const [label, flag, stars] = li.querySelector('.marks').children;
      li.dataset.flag = m.picked ? 'picked' : m.rejected ? 'rejected' : '';
      li.dataset.stars = String(m.rating || 0);
      flag.textContent = m.picked ? '✓ Pick' : m.rejected ? '✕ Reject' : '';
      stars.textContent = m.rating ? cull.starText(m.rating) : '';
      label.dataset.label = m.colorLabel || '';
      label.title = m.colorLabel ? `${cull.LABEL_NAMES[m.colorLabel]} label` : '';
      const marks = cull.marksText(m);
      li.setAttribute('aria-label', marks ? `${li.baseLabel}, ${marks}` : li.baseLabel);
    }
  }

  function paintReviewed(c) {
    reviewedBadge.textContent = c.reviewed ? '✓ Reviewed' : 'Not reviewed';
    reviewedBadge.dataset.reviewed = String(!!c.reviewed);
    reviewedButton.setAttribute('aria-pressed', String(!!c.reviewed));
  }

  // paintFocus marks the member with the focus, shows it large beside the
  // winner, and (take) gives it the keyboard's focus.
  function paintFocus(take) {
    const c = current();
    const list = sorted(c);
    const tiles = [...members.children];
    tiles.forEach((li, k) => {
      li.setAttribute('aria-selected', String(k === st.focus));
      li.tabIndex = k === st.focus ? 0 : -1;
    });
    const winner = list.find((m) => m.role === 'winner') || list[0];
    const focused = list[st.focus];
    if (winner) {
      paintFig(winnerFig, winner, 'winner');
      winnerFig.why.textContent = c.whyWinner && c.whyWinner.length ? `Why it won: ${whyText(c.whyWinner)}` : '';
    }
    const other = focused && winner && focused.assetId !== winner.assetId;
    focusFig.el.hidden = !other;
    if (other) {
      paintFig(focusFig, focused, focused.role);
      focusFig.why.textContent = signalsText(focused.signals);
    }
    chooseButton.disabled = !other;
    if (take && tiles[st.focus]) tiles[st.focus].focus({ preventScroll: false });
  }

  function setFocus(k, take) {
    const n = members.children.length;
    if (!n) return;
    st.focus = Math.max(0, Math.min(n - 1, k));
    paintFocus(take);
  }

  function focusMembers() {
    const li = members.children[st.focus];
    if (li) li.focus();
  }

  function position() {
    const hasMore = st.cursor !== null;
    const n = st.items.length;
    pos.textContent = st.at < 0 ? '' : `${KIND_ONE[st.kind]} ${(st.at + 1).toLocaleString()} of ${n.toLocaleString()}${hasMore ? '+' : ''}`;
    prevButton.disabled = st.at <= 0;
    nextButton.disabled = !hasMore && st.at >= n - 1;
  }

  // ---- changes -----------------------------------------------------------------------
  // change shows what a change does at once, sends it, and takes the
  // server's group (or puts the old one back, saying why).
  async function change(c, local, send, label) {
    const i = st.items.indexOf(c);
    const before = structuredClone(c);
    Object.assign(c, local(structuredClone(c)));
    if (current() === c) show(i, st.focus);
    try {
      const got = await send();
      const j = st.items.findIndex((x) => x.id === c.id);
      if (j >= 0) {
        st.items[j] = got;
        if (st.at === j) show(j, st.focus);
      }
      return true;
    } catch (err) {
      const j = st.items.findIndex((x) => x.id === c.id);
      if (j >= 0) {
        st.items[j] = before;
        if (st.at === j) show(j, st.focus);
      }
      announce(`${label} was not saved, so undone on screen: ${err.message}`, 'error');
      return false;
    }
  }

  function choose() {
    const c = current();
    if (!c) return;
    const list = sorted(c);
    const m = list[st.focus];
    if (!m || m.role === 'winner') {
      announce('That photo is already the best shot.');
      return;
    }
    const name = rowOf(m.assetId).name;
    announce(`${name} is the best shot of this group.`);
    change(c, (x) => {
      for (const a of x.assets) {
        if (a.role === 'winner') a.role = 'alt';
        if (a.assetId === m.assetId) a.role = 'winner';
      }
      x.winnerAssetId = m.assetId;
      x.whyWinner = ['chosen'];
      return x;
    }, () => api('POST', `/v1/clusters/${c.id}/winner`, { winnerAssetId: m.assetId }), 'The best shot');
  }

  function setReviewed(c, on) {
    return change(c, (x) => ({ ...x, reviewed: on }), () => api('PATCH', `/v1/clusters/${c.id}`, { reviewed: on }), 'The review');
  }

  function toggleReviewed() {
    const c = current();
    if (!c) return;
    announce(c.reviewed ? 'Marked not reviewed.' : 'Marked reviewed.');
    setReviewed(c, !c.reviewed);
  }

  function accept() {
    const c = current();
    if (!c) return;
    const list = sorted(c);
    const w = list.find((m) => m.role === 'winner');
    const name = w && rowOf(w.assetId).name;
    if (w && cull.settings.acceptFlags) {
      // One change, so one undo puts every photo of the group back.
      cull.applyEach(list.map((m) => ({ assetId: m.assetId, picked: m === w, rejected: m !== w })),
        { label: `Picked ${name}, rejected ${plural(list.length - 1, 'photo')}` });
      announce(`Accepted ${name} as the best shot: picked it, rejected ${plural(list.length - 1, 'other photo')}; the group is reviewed.`);
    } else {
      announce(`Accepted${w ? ` ${name} as the best shot` : ''}; the group is reviewed.`);
    }
    if (!c.reviewed) setReviewed(c, true);
    const keep = members.contains(document.activeElement);
    next(1).then(() => { if (keep) focusMembers(); });
  }

  function saveTitle() {
    const c = current();
    if (!c) return;
    const t = titleInput.value.trim();
    if (!t) {
      announce('A group’s title cannot be empty.', 'error');
      titleInput.value = c.title || '';
      return;
    }
    if (t === c.title) return;
    announce(`Titled “${t}”.`);
    change(c, (x) => ({ ...x, title: t }), () => api('PATCH', `/v1/clusters/${c.id}`, { title: t }), 'The title');
  }

  // ---- keys ------------------------------------------------------------------------------
  const offs = [];
  const key = (k, what, fn) => offs.push(cull.registerKey(k, what, fn, { scopes: [SCOPE] }));
  key('arrowright', 'The next photo of the group', () => setFocus(st.focus + 1, true));
  key('arrowleft', 'The previous photo of the group', () => setFocus(st.focus - 1, true));
  key('home', 'The group’s first photo', () => setFocus(0, true));
  key('end', 'The group’s last photo', () => setFocus(1e9, true));
  for (const k of ['arrowdown', 'pagedown', 'j']) key(k, 'The next group', () => next(1));
  for (const k of ['arrowup', 'pageup', 'k']) key(k, 'The previous group', () => next(-1));
  for (const k of ['w', 'enter']) key(k, 'Make the photo with the focus the best shot', () => choose());
  key('a', 'Accept the best shot: mark the group reviewed and go to the next', () => accept());
  key('r', 'Mark the group reviewed, or not reviewed', () => toggleReviewed());
  key('t', 'Title the group', () => { titleInput.focus(); titleInput.select(); });
  // Flags, stars, labels, undo and ? are the shared keys (keys.js), on
  // the photo with the focus; after a flag, when the setting asks, the
  // focus moves to the group's next photo.
  const focusedIds = () => {
    const m = current() && sorted(current())[st.focus];
    return m ? [m.assetId] : [];
  };
  const popScope = cull.pushScope({ name: SCOPE, targets: focusedIds, advance: () => setFocus(st.focus + 1, true) });
  const offMarks = cull.onMarksChange(() => paintMarks());

  // ---- keeping up with grouping runs -------------------------------------------------
  let timer = null;
  const onClusters = (e) => {
    if (e.detail.projectId !== model.projectId) return;
    clearTimeout(timer);
    // A run's groups replace the old ones all at once; the same group keeps
    // its id and a person's choices.
    timer = setTimeout(() => {
      const c = current();
      start(Math.max(0, st.at), c && c.id).then(() => {
        const now = current();
        if (c && now && now.id !== c.id) announce('The group shown changed in the last grouping run.');
      });
    }, 500);
  };
  liveEvents.addEventListener('cluster.updated', onClusters);
  // A group's photos the list had not reached yet are named once it has.
  const onRows = () => {
    const c = current();
    if (!c || !st.unlisted) return;
    if (sorted(c).filter((m) => !model.byAsset.has(m.assetId)).length < st.unlisted) show(st.at, st.focus);
  };
  model.addEventListener('change', onRows);

  teardown.push(() => {
    for (const off of offs) off();
    popScope();
    offMarks();
    acceptFlags.detach();
    cull.detach();
    liveEvents.removeEventListener('cluster.updated', onClusters);
    model.removeEventListener('change', onRows);
    clearTimeout(timer);
    thumbs.stop();
  });

  start(0, want);
}
