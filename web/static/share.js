// A client's view of a gallery at /s/{slug}: who is choosing (a name, an
// email if they like) and the password when it has one, then the photos in
// rows that keep each one's shape, each with a heart and comments on
// demand; an enlarged view (arrow keys, swipe, Escape) and a slideshow
// (space pauses, Escape ends). The viewer token lives in the browser's
// localStorage, so a client who closes the tab and comes back finds their
// hearts, and goes out as a Bearer header.

import { api } from './api.js';
import { h, clear, announce, plural } from './ui.js';

const slug = decodeURIComponent(location.pathname.split('/')[2] || '');
const base = `/v1/share/${encodeURIComponent(slug)}`;
const tokenKey = `lightbox-viewer:${slug}`;
const main = document.getElementById('main');

// How long the slideshow shows each photo.
const slideMs = 4000;

let token = localStorage.getItem(tokenKey);
let refresh; // timer while watermarked previews are being made

function auth() { return token ? { Authorization: `Bearer ${token}` } : {}; }

function keepToken(t) {
  token = t;
  if (t) localStorage.setItem(tokenKey, t);
  else localStorage.removeItem(tokenKey);
}

// call sends a request as this viewer; a token the gallery no longer
// takes is dropped and the page shown again.
async function call(method, path, body) {
  try {
    return await api(method, base + path, body, auth());
  } catch (err) {
    if (err.code === 'invalid_viewer_token') {
      keepToken(null);
      load();
    }
    throw err;
  }
}

// named is whether the viewer has said who they are; until then a gallery
// without a password shows its photos, and asks when they choose.
let named = false;

// viewerToken makes sure the viewer has named themself before they
// favourite or comment: the photographer reads who chose what.
function viewerToken() {
  if (named) return Promise.resolve();
  viewer.close();
  const form = document.getElementById('who-form');
  form?.scrollIntoView({ block: 'center' });
  document.getElementById('who-name')?.focus();
  return Promise.reject(new Error('Tell the photographer who is choosing first: your name, above the photos.'));
}

// whoFields are the name and email inputs a visitor fills in once.
function whoFields() {
  const name = h('input', { id: 'who-name', name: 'name', autocomplete: 'name', required: true, maxlength: '100' });
  const email = h('input', { id: 'who-email', name: 'email', type: 'email', autocomplete: 'email', maxlength: '254' });
  return { name, email, fields: [h('label', { for: 'who-name' }, 'Your name'), name,
    h('label', { for: 'who-email' }, 'Email (optional)'), email] };
}

function whoBody(who) {
  const body = { name: who.name.value.trim() };
  if (who.email.value.trim()) body.email = who.email.value.trim();
  return body;
}

// selectionLine says how many photos may still be chosen, when the
// gallery has a limit.
function selectionLine(g) {
  if (g.selectionLimit == null) return null;
  const left = Math.max(0, g.selectionLimit - g.chosen);
  return h('p', { id: 'selection', class: 'muted' },
    `Choose up to ${plural(g.selectionLimit, 'photo')} · ${left} left`);
}

// state is the gallery as last loaded, its photos by id in byId: the
// buttons find their photo there when pressed, so that a button drawn
// before a reload acts on the photo as it is now. sent holds the comments
// this page sent, by photo, shown under the photo's comment box.
let state;
let byId = new Map();
const sent = new Map();

async function load() {
  clearTimeout(refresh);
  let g;
  try {
    g = await call('GET', '');
  } catch (err) {
    if (err.code === 'invalid_viewer_token') return;
    const msg = err.status === 404 ? 'There is no gallery at this address.'
      : err.code === 'gallery_expired' ? 'This gallery has expired. Ask the photographer for a new link.'
      : `The gallery cannot be shown: ${err.message}`;
    viewer.close();
    clear(main, h('p', { class: 'card narrow', id: 'message', role: 'alert' }, msg));
    return;
  }
  document.title = g.title;
  if (g.token) keepToken(g.token);
  if (!g.assets) {
    viewer.close();
    passwordForm(g);
    return;
  }
  named = !!g.visitor;
  state = g;
  g.assets.forEach((a, i) => { a.label = a.fileName || `Photo ${i + 1}`; });
  byId = new Map(g.assets.map((a) => [a.assetId, a]));
  const n = g.assets.length;
  clear(main,
    h('div', { class: 'title-row' }, h('h1', { id: 'title' }, g.title),
      g.expiresAt ? h('p', { class: 'muted' }, `Open until ${new Date(g.expiresAt).toLocaleDateString()}`) : null),
    g.visitor ? h('p', { class: 'muted', id: 'visitor' }, `Choosing as ${g.visitor.name}`) : whoForm(),
    h('div', { class: 'gallery-tools' }, selectionLine(g),
      n ? h('p', { class: 'muted', id: 'count' }, plural(n, 'photo')) : null,
      n ? h('button', { type: 'button', id: 'slideshow', onclick: () => viewer.open(0, true) }, '▶ Slideshow') : null),
    n ? null : h('p', { class: 'muted', id: 'message' }, 'There are no photos in this gallery yet.'),
    h('ul', { class: 'gallery-grid', id: 'grid' }, g.assets.map(photo)));
  viewer.reload();
  if (g.assets.some((a) => a.pending)) refresh = setTimeout(load, 5000);
}

function updateSelection(chosen) {
  if (!state) return;
  state.chosen = chosen;
  document.getElementById('selection')?.replaceWith(selectionLine(state));
}

// whoForm asks a viewer of a gallery without a password who is choosing.
function whoForm() {
  const who = whoFields();
  const error = h('p', { class: 'error', id: 'who-error', role: 'alert' });
  return h('form', { class: 'card who', id: 'who-form', onsubmit: async (e) => {
    e.preventDefault();
    try {
      keepToken((await call('POST', '/auth', whoBody(who))).token);
      load();
    } catch (err) {
      error.textContent = err.message;
    }
  } },
  h('p', {}, 'Tell the photographer who is choosing: your favourites and comments go to them under your name.'),
  ...who.fields, error, h('div', { class: 'buttons' }, h('button', { class: 'primary', type: 'submit' }, 'Start choosing')));
}

function passwordForm(g) {
  const who = whoFields();
  const input = h('input', { id: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const error = h('p', { class: 'error', id: 'auth-error', role: 'alert' });
  const submit = h('button', { class: 'primary', type: 'submit' }, 'View the photos');
  // A gallery tried too often hands out turns (slow_down) and a busy
  // server asks for a second (busy): the page waits and sends the same
  // password again by itself, rather than losing the viewer's turn.
  const send = async () => {
    try {
      keepToken((await call('POST', '/auth', { ...whoBody(who), password: input.value })).token);
      load();
    } catch (err) {
      if ((err.code === 'slow_down' || err.code === 'busy') && err.retryAfter) {
        error.textContent = `Checking the password, in ${err.retryAfter} s…`;
        setTimeout(send, err.retryAfter * 1000);
        return;
      }
      submit.disabled = false;
      error.textContent = err.code === 'wrong_password' ? 'That password is not right. Try again.' : err.message;
      input.select();
    }
  };
  const form = h('form', { class: 'card narrow', id: 'auth-form', onsubmit: (e) => {
    e.preventDefault();
    error.textContent = '';
    submit.disabled = true;
    send();
  } },
  h('h1', { id: 'title' }, g.title),
  h('p', {}, 'This gallery is protected. Say who is choosing and enter the password you were given.'),
  ...who.fields, h('label', { for: 'password' }, 'Password'), input, error,
  h('div', { class: 'buttons' }, submit));
  clear(main, form);
  who.name.focus();
}

// label is what a photo is called on the page: its file name when the
// photographer shows them, else its place (set by load).
const label = (a) => a.label;

// ratio is a photo's width over its height, from the answer until the
// image itself says.
function ratio(a) {
  return a.width && a.height ? a.width / a.height : 3 / 2;
}

// say tells the viewer what happened, in the enlarged view when it is
// open (the page behind it is out of reach) and on the page.
function say(msg, kind = 'info') {
  announce(msg, kind);
  viewer.say(msg, kind);
}

// favourite sets whether the visitor chose a, then shows it wherever a is.
async function favourite(a, on) {
  try {
    await viewerToken();
    const res = await call('POST', '/favorite', { assetId: a.assetId, favorite: on });
    a.favorited = res.favorite;
    a.favoriteCount = res.favoriteCount;
    updateSelection(res.chosen);
    say(res.favorite ? `${label(a)} is a favourite.` : `${label(a)} is no longer a favourite.`);
  } catch (err) {
    say(err.message, 'error');
  }
  shown(a);
}

// heart is photo id's favourite toggle and count, kept by shown(). A
// click while one is on its way does nothing; the button stays enabled,
// so the keyboard's focus stays on it.
function heart(id, attrs = {}) {
  const count = h('span', { class: 'fav-count' });
  let busy = false;
  const button = h('button', { type: 'button', class: 'fav', ...attrs, onclick: async () => {
    if (busy) return;
    busy = true;
    await favourite(byId.get(id), button.getAttribute('aria-pressed') !== 'true');
    busy = false;
  } }, h('span', { class: 'glyph', 'aria-hidden': 'true' }, '♡'), ' ', count);
  return button;
}

// bubble is a speech bubble, drawn in the text's colour.
function bubble() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M4 4h16v12H10l-5 4v-4H4z');
  svg.append(path);
  return svg;
}

// comments is photo asset's comment button and the box it opens (its
// text box's id is id), with what this page sent; a short button says it
// with a bubble alone.
function comments(asset, id, short = false) {
  const text = h('textarea', { class: 'comment-text', id, maxlength: '2000', rows: '3' });
  const mine = h('ul', { class: 'mine' });
  const send = h('button', { type: 'submit', class: 'small primary comment-send' }, 'Send');
  let busy = false;
  const form = h('form', { class: 'comment-box', hidden: true, onsubmit: async (e) => {
    e.preventDefault();
    if (!text.value.trim() || busy) return;
    busy = true;
    const a = byId.get(asset);
    try {
      await viewerToken();
      const res = await call('POST', '/comment', { assetId: a.assetId, text: text.value });
      a.commentsCount = res.commentsCount;
      sent.set(a.assetId, [...(sent.get(a.assetId) || []), res.comment.text]);
      text.value = '';
      say('Your comment was sent.');
    } catch (err) {
      say(err.message, 'error');
    }
    busy = false;
    shown(a);
  } },
  h('label', { for: id, class: 'visually-hidden' }, 'Your comment'), text, mine,
  h('div', { class: 'buttons' }, send,
    h('button', { type: 'button', class: 'small', onclick: () => toggle(false) }, 'Close')));
  const count = h('span', { class: 'comments-count' });
  const open = h('button', { type: 'button', class: 'comment-open', 'aria-expanded': 'false', onclick: () => toggle(form.hidden) },
    bubble(), short ? null : ' Comment', count);
  const toggle = (on) => {
    form.hidden = !on;
    open.setAttribute('aria-expanded', String(on));
    if (on) text.focus();
  };
  return { open, form };
}

// shown makes every place a shows its hearts and comments as they are.
function shown(a) {
  for (const el of document.querySelectorAll(`[data-asset="${a.assetId}"]`)) paint(el, a);
}

// paint shows a's hearts and comments in el.
function paint(el, a) {
  for (const fav of el.querySelectorAll('.fav')) {
    fav.setAttribute('aria-pressed', String(!!a.favorited));
    fav.querySelector('.glyph').textContent = a.favorited ? '♥' : '♡';
    fav.setAttribute('aria-label', `Favourite ${label(a)}: ${plural(a.favoriteCount, 'heart')}`);
    fav.querySelector('.fav-count').textContent = String(a.favoriteCount);
  }
  for (const c of el.querySelectorAll('.comments-count')) {
    c.textContent = a.commentsCount ? String(a.commentsCount) : '';
    c.closest('button').setAttribute('aria-label', `Comment on ${label(a)}: ${plural(a.commentsCount, 'comment')} so far`);
  }
  for (const mine of el.querySelectorAll('.mine')) {
    mine.replaceChildren(...(sent.get(a.assetId) || []).map((t) => h('li', {}, t)));
  }
}

// photo is a's place in the rows: as wide as its shape makes it at the
// row's height (share.css), opening the enlarged view.
function photo(a, i) {
  const name = label(a);
  const open = h('button', { type: 'button', class: 'open', 'aria-label': `Open ${name}`, onclick: () => viewer.open(i) },
    a.pending ? h('span', { class: 'pending' }, 'Preparing this photo…')
      : h('img', { src: a.previewUrl, alt: name, loading: 'lazy', decoding: 'async', width: a.width, height: a.height,
        onload: (e) => fitShape(e.target.closest('li'), e.target) }));
  const c = comments(a.assetId, `comment-${a.assetId}`, true);
  const li = h('li', { class: 'photo', 'data-asset': a.assetId }, open,
    h('div', { class: 'acts' }, h('span', { class: 'name', title: name }, name), heart(a.assetId), c.open,
      a.originalUrl ? h('a', { href: a.originalUrl, download: '', class: 'download', 'aria-label': `Download ${name}` }, '↓') : null),
    c.form);
  // Through the CSSOM: the page's policy refuses style attributes.
  li.style.setProperty('--r', String(ratio(a)));
  paint(li, a);
  return li;
}

// fitShape corrects a photo's place to the shape of the image that came,
// should the answer not have known it.
function fitShape(li, img) {
  if (!img.naturalWidth || !img.naturalHeight) return;
  const r = img.naturalWidth / img.naturalHeight;
  if (Math.abs(r / parseFloat(li.style.getPropertyValue('--r')) - 1) > 0.005) li.style.setProperty('--r', String(r));
}

// viewer is the enlarged view: one photo on the whole window, with its
// heart and comments; a slideshow is the same view, moving by itself.
const viewer = (() => {
  let index = -1;
  let playing = false;
  let timer;
  let current; // the asset shown
  const img = h('img', { class: 'shown', alt: '' });
  const pending = h('p', { class: 'pending', hidden: true }, 'Preparing this photo…');
  const pos = h('span', { class: 'pos', id: 'viewer-pos' });
  const name = h('h2', { class: 'name', id: 'viewer-name' });
  const play = h('button', { type: 'button', class: 'play', id: 'viewer-play', onclick: () => setPlaying(!playing) });
  const close = h('button', { type: 'button', class: 'close', id: 'viewer-close', 'aria-label': 'Close', onclick: () => end() }, '✕');
  const prev = h('button', { type: 'button', class: 'step prev', 'aria-label': 'Previous photo', onclick: () => step(-1) }, '‹');
  const next = h('button', { type: 'button', class: 'step next', 'aria-label': 'Next photo', onclick: () => step(1) }, '›');
  const progress = h('div', { class: 'progress', 'aria-hidden': 'true' });
  const status = h('p', { class: 'viewer-status', role: 'status', 'aria-live': 'polite' });
  const stage = h('div', { class: 'stage' }, img, pending, prev, next);
  const acts = h('div', { class: 'viewer-acts' });
  const dlg = h('dialog', { class: 'viewer', id: 'viewer', 'aria-labelledby': 'viewer-name', tabindex: '-1' },
    h('div', { class: 'viewer-bar' }, pos, name, play, close), progress, stage, acts, status);
  document.body.append(dlg);

  img.addEventListener('load', () => schedule());
  img.addEventListener('error', () => schedule());

  // Swipe: a touch (or pen) that moves mostly sideways by a sixth of the
  // width, or 60 px, goes to the next or the previous photo.
  let start = null;
  stage.addEventListener('pointerdown', (e) => {
    if (e.pointerType === 'mouse' || e.target.closest('button')) return;
    start = { x: e.clientX, y: e.clientY, id: e.pointerId };
  });
  stage.addEventListener('pointerup', (e) => {
    if (!start || e.pointerId !== start.id) return;
    const dx = e.clientX - start.x, dy = e.clientY - start.y;
    start = null;
    if (Math.abs(dx) > Math.min(60, stage.clientWidth / 6) && Math.abs(dx) > 1.5 * Math.abs(dy)) step(dx < 0 ? 1 : -1);
  });
  stage.addEventListener('pointercancel', () => { start = null; });

  // On the document: a key goes to the view wherever the focus is.
  document.addEventListener('keydown', (e) => {
    if (!dlg.open || e.target.closest?.('textarea, input') || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'ArrowRight') step(1);
    else if (e.key === 'ArrowLeft') step(-1);
    else if (e.key === ' ' && !e.target.closest?.('button, a')) setPlaying(!playing);
    else return;
    e.preventDefault();
  });
  // Escape (the dialog's cancel) ends the view, or the slideshow.
  dlg.addEventListener('close', () => {
    clearTimeout(timer);
    playing = false;
    index = -1;
    current = null;
    dlg.removeAttribute('data-show');
    delete dlg.dataset.asset;
    delete dlg.dataset.index;
    document.documentElement.classList.remove('viewing');
  });

  function end() { if (dlg.open) dlg.close(); }

  function step(by) {
    const n = state?.assets.length || 0;
    if (!n || index < 0) return;
    show((index + by + n) % n);
  }

  function setPlaying(on) {
    playing = on;
    dlg.dataset.playing = String(on);
    play.textContent = on ? '❚❚ Pause' : '▶ Play';
    play.setAttribute('aria-label', on ? 'Pause the slideshow' : 'Play the slideshow');
    progress.classList.remove('run');
    clearTimeout(timer);
    if (on) schedule();
  }

  // schedule starts the slideshow's clock once the photo shown is in.
  function schedule() {
    clearTimeout(timer);
    if (!playing || !dlg.open || (!img.complete && !current?.pending)) return;
    progress.classList.remove('run');
    void progress.offsetWidth; // restart the bar's animation
    progress.style.animationDuration = `${slideMs}ms`;
    progress.classList.add('run');
    timer = setTimeout(() => step(1), slideMs);
  }

  // place makes photo i the one shown, and says where it is.
  function place(i) {
    const a = state.assets[i];
    index = i;
    current = a;
    dlg.dataset.index = String(i);
    dlg.dataset.asset = a.assetId;
    pos.textContent = `${i + 1} / ${state.assets.length}`;
    name.textContent = label(a);
    return a;
  }

  // picture shows a's image, or that it is being made.
  function picture(a) {
    pending.hidden = !a.pending;
    img.hidden = a.pending;
    if (!a.pending) {
      img.alt = label(a);
      if (img.getAttribute('src') !== a.previewUrl) img.src = a.previewUrl;
    }
  }

  function show(i) {
    const a = place(i);
    picture(a);
    const c = comments(a.assetId, 'viewer-comment');
    const hadFocus = acts.contains(document.activeElement);
    acts.replaceChildren(h('div', { class: 'viewer-tools' }, heart(a.assetId, { id: 'viewer-fav' }), c.open,
      a.originalUrl ? h('a', { href: a.originalUrl, download: '', class: 'download' }, 'Download') : null, c.form));
    c.open.id = 'viewer-comment-open';
    if (hadFocus) dlg.focus();
    shown(a);
    status.textContent = '';
    // The next photo arrives before it is asked for.
    const after = state.assets[(i + 1) % state.assets.length];
    if (!after.pending) new Image().src = after.previewUrl;
    schedule();
  }

  return {
    open(i, slideshow = false) {
      if (!state?.assets.length) return;
      if (!dlg.open) dlg.showModal();
      document.documentElement.classList.add('viewing');
      if (slideshow) dlg.dataset.show = '';
      else dlg.removeAttribute('data-show');
      setPlaying(slideshow);
      show(i);
      // The keys go to the view: arrows, space, Escape.
      dlg.focus();
    },
    close: end,
    // reload shows the same photo from the gallery as loaded again.
    // reload follows the gallery as loaded again: the same photo, its
    // image once it is made; its tools stay, with what is being written.
    reload() {
      if (!dlg.open || !current) return;
      const was = current;
      const i = state.assets.findIndex((a) => a.assetId === was.assetId);
      if (i < 0) {
        end();
        return;
      }
      const a = place(i);
      if (was.pending && !a.pending) picture(a);
      shown(a);
    },
    say(msg, kind) {
      if (!dlg.open) return;
      status.textContent = msg;
      status.dataset.kind = kind;
    },
  };
})();

load();
