// A client's view of a gallery at /s/{slug}: the password when it has one,
// then the photos, each with a favourite toggle and comments. The viewer
// token lives in this tab's sessionStorage and goes out as a Bearer header.

import { api } from './api.js';
import { h, clear, announce, plural } from './ui.js';

const slug = decodeURIComponent(location.pathname.split('/')[2] || '');
const base = `/v1/share/${encodeURIComponent(slug)}`;
const tokenKey = `lightbox-viewer:${slug}`;
const main = document.getElementById('main');

let token = sessionStorage.getItem(tokenKey);
let refresh; // timer while watermarked previews are being made

function auth() { return token ? { Authorization: `Bearer ${token}` } : {}; }

function keepToken(t) {
  token = t;
  if (t) sessionStorage.setItem(tokenKey, t);
  else sessionStorage.removeItem(tokenKey);
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

// viewerToken gets a token for a gallery without a password, whose photos
// are shown without one, the first time the viewer favourites or comments.
async function viewerToken() {
  if (!token) keepToken((await call('POST', '/auth', {})).token);
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
  clear(main,
    h('div', { class: 'title-row' }, h('h1', { id: 'title' }, g.title),
      g.expiresAt ? h('p', { class: 'muted' }, `Open until ${new Date(g.expiresAt).toLocaleDateString()}`) : null),
    g.assets.length ? null : h('p', { class: 'muted', id: 'message' }, 'There are no photos in this gallery yet.'),
    h('ul', { class: 'gallery-grid', id: 'grid' }, g.assets.map(photo)));
  if (g.assets.some((a) => a.pending)) refresh = setTimeout(load, 5000);
}

function passwordForm(g) {
  const input = h('input', { id: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const error = h('p', { class: 'error', id: 'auth-error', role: 'alert' });
  const submit = h('button', { class: 'primary', type: 'submit' }, 'View the photos');
  // A gallery tried too often hands out turns (slow_down) and a busy
  // server asks for a second (busy): the page waits and sends the same
  // password again by itself, rather than losing the viewer's turn.
  const send = async () => {
    try {
      keepToken((await call('POST', '/auth', { password: input.value })).token);
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
  h('p', {}, 'This gallery is protected. Enter the password you were given.'),
  h('label', { for: 'password' }, 'Password'), input, error,
  h('div', { class: 'buttons' }, submit));
  clear(main, form);
  input.focus();
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
