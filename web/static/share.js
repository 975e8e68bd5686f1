// A client's view of a gallery at /s/{slug}: who is choosing (a name, an
// email if they like) and the password when it has one, then the photos,
// each with a favourite toggle and comments, and how many may be chosen.
// The viewer token lives in the browser's localStorage, so a client who
// closes the tab and comes back finds their hearts, and goes out as a
// Bearer header.

import { api } from './api.js';
import { h, clear, announce, plural } from './ui.js';

const slug = decodeURIComponent(location.pathname.split('/')[2] || '');
const base = `/v1/share/${encodeURIComponent(slug)}`;
const tokenKey = `lightbox-viewer:${slug}`;
const main = document.getElementById('main');

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
    clear(main, h('p', { class: 'card narrow', id: 'message', role: 'alert' }, msg));
    return;
  }
  document.title = g.title;
  if (g.token) keepToken(g.token);
  if (!g.assets) {
    passwordForm(g);
    return;
  }
  named = !!g.visitor;
  state = g;
  clear(main,
    h('div', { class: 'title-row' }, h('h1', { id: 'title' }, g.title),
      g.expiresAt ? h('p', { class: 'muted' }, `Open until ${new Date(g.expiresAt).toLocaleDateString()}`) : null),
    g.visitor ? h('p', { class: 'muted', id: 'visitor' }, `Choosing as ${g.visitor.name}`) : whoForm(),
    selectionLine(g),
    g.assets.length ? null : h('p', { class: 'muted', id: 'message' }, 'There are no photos in this gallery yet.'),
    h('ul', { class: 'gallery-grid', id: 'grid' }, g.assets.map(photo)));
  if (g.assets.some((a) => a.pending)) refresh = setTimeout(load, 5000);
}

// state is the gallery as last loaded, for the selection line.
let state;

function updateSelection(chosen) {
  if (!state) return;
  state.chosen = chosen;
  const line = selectionLine(state);
  document.getElementById('selection')?.replaceWith(line);
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

function photo(a, i) {
  const label = `Photo ${i + 1}`;
  const picture = !a.pending
    ? h('img', { src: a.previewUrl, alt: label, loading: 'lazy' })
    : h('div', { class: 'pending' }, 'Preparing this photo…');
  const favCount = h('span', { class: 'fav-count' }, String(a.favoriteCount));
  const fav = h('button', { type: 'button', class: 'fav small', 'aria-pressed': String(!!a.favorited),
    'aria-label': `Favourite ${label.toLowerCase()}` }, '♥ Favourite');
  fav.addEventListener('click', async () => {
    const on = fav.getAttribute('aria-pressed') !== 'true';
    fav.disabled = true;
    try {
      await viewerToken();
      const res = await call('POST', '/favorite', { assetId: a.assetId, favorite: on });
      fav.setAttribute('aria-pressed', String(res.favorite));
      favCount.textContent = String(res.favoriteCount);
      updateSelection(res.chosen);
      announce(res.favorite ? `${label} is a favourite.` : `${label} is no longer a favourite.`);
    } catch (err) {
      announce(err.message, 'error');
    } finally {
      fav.disabled = false;
    }
  });
  const comments = h('span', { class: 'comments-count' }, plural(a.commentsCount, 'comment'));
  const mine = h('ul', { class: 'mine' });
  const text = h('textarea', { class: 'comment-text', maxlength: '2000', 'aria-label': `Comment on ${label.toLowerCase()}` });
  const form = h('form', { onsubmit: async (e) => {
    e.preventDefault();
    if (!text.value.trim()) return;
    try {
      await viewerToken();
      const res = await call('POST', '/comment', { assetId: a.assetId, text: text.value });
      comments.textContent = plural(res.commentsCount, 'comment');
      mine.append(h('li', {}, res.comment.text));
      text.value = '';
      announce('Your comment was sent.');
    } catch (err) {
      announce(err.message, 'error');
    }
  } }, text, h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'small comment-send' }, 'Comment')));
  return h('li', { class: 'photo', 'data-asset': a.assetId }, picture,
    h('div', { class: 'acts' }, fav, favCount, comments,
      a.originalUrl ? h('a', { href: a.originalUrl, download: '' }, 'Download') : null),
    mine, form);
}

load();
