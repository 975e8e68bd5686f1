// Small DOM helpers, formatting, and the sign-in form both pages share.

import { session } from './api.js';

// h builds an element: h('button', {class: 'x', onclick: fn}, 'text', child).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// announce tells screen readers what just happened, and shows it.
export function announce(msg, kind = 'info') {
  const el = document.getElementById('status');
  if (!el) return;
  el.textContent = msg;
  el.dataset.kind = kind;
  clearTimeout(announce.timer);
  if (kind !== 'error') announce.timer = setTimeout(() => { if (el.textContent === msg) el.textContent = ''; }, 8000);
}

export function bytes(n) {
  if (n == null) return '';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

export function duration(sec) {
  if (!Number.isFinite(sec) || sec < 0) return '';
  if (sec < 60) return `${Math.max(1, Math.round(sec))} s`;
  if (sec < 3600) return `${Math.round(sec / 60)} min`;
  const hrs = Math.floor(sec / 3600);
  return `${hrs} h ${Math.round((sec - hrs * 3600) / 60)} min`;
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
}

export function plural(n, one, many = one + 's') {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

// signedInUser is the session's user, or null when there is none; when
// the server cannot be reached it says so in root and throws.
export async function signedInUser(root) {
  try {
    return (await session.get()).user;
  } catch (err) {
    if (err.status === 401) return null;
    clear(root, h('p', { class: 'error', role: 'alert' }, `Lightbox cannot be reached: ${err.message}`));
    throw err;
  }
}

// signInForm renders the sign-in forms into root and resolves with the
// session once one of them signs in: a person gives their email and the
// code mailed to it, with "keep me signed in"; scripts and operators may
// paste an API key instead. Neither is kept by this page: the session is
// an HttpOnly cookie.
export function signInForm(root, intro) {
  return new Promise((resolve) => {
    const done = (s) => resolve(s);
    clear(root, h('div', { class: 'signin-forms' }, codeForm(intro, done), keyForm(done)));
    document.getElementById('signin-email').focus();
  });
}

// codeForm signs in by a code mailed to the address given.
function codeForm(intro, done) {
  const error = h('p', { class: 'error', role: 'alert', id: 'signin-code-error' });
  const email = h('input', { id: 'signin-email', name: 'email', type: 'email', autocomplete: 'email', required: true });
  const code = h('input', {
    id: 'signin-code', name: 'code', inputmode: 'numeric', autocomplete: 'one-time-code', pattern: '[0-9]{6}', maxlength: '6',
  });
  const keep = h('input', { id: 'signin-keep', type: 'checkbox' });
  const codeRow = h('div', { class: 'signin-code', hidden: true },
    h('label', { for: 'signin-code' }, 'Code from the mail'), code,
    h('label', { class: 'check' }, keep, ' Keep me signed in on this device'));
  const button = h('button', { type: 'submit', class: 'primary', id: 'signin-send' }, 'Send me a code');
  let challenge = null;
  const form = h('form', { class: 'card narrow', id: 'signin' },
    h('h1', {}, 'Sign in'),
    h('p', { id: 'signin-help' }, intro || 'Enter your email address: we mail you a six-digit code to sign in with.'),
    h('label', { for: 'signin-email' }, 'Email'), email, codeRow, error, button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    button.disabled = true;
    try {
      if (!challenge) {
        challenge = (await session.sendCode(email.value.trim())).challengeId;
        codeRow.hidden = false;
        code.required = true;
        email.readOnly = true;
        button.textContent = 'Sign in';
        announce(`A code is on its way to ${email.value.trim()}.`);
        code.focus();
        return;
      }
      const s = await session.signInWithCode(challenge, code.value.trim(), keep.checked);
      code.value = '';
      done(s);
    } catch (err) {
      if (err.code === 'code_expired') {
        challenge = null;
        codeRow.hidden = true;
        code.required = false;
        email.readOnly = false;
        button.textContent = 'Send me a code';
      }
      error.textContent = err.code === 'invalid_code' ? 'That code is not right. Try again.' : err.message;
      (challenge ? code : email).focus();
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// keyForm signs in with an API key, as scripts and operators do.
function keyForm(done) {
  const error = h('p', { class: 'error', role: 'alert', id: 'signin-error' });
  const input = h('input', {
    id: 'api-key', name: 'apiKey', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, 'aria-describedby': 'signin-key-help signin-error',
  });
  const button = h('button', { type: 'submit' }, 'Sign in with the key');
  const form = h('form', { class: 'card narrow', id: 'signin-key' },
    h('h2', {}, 'Or use an API key'),
    h('p', { id: 'signin-key-help', class: 'muted' }, 'For scripts and operators: paste a Lightbox API key. It is exchanged for a session cookie and not kept by this page.'),
    h('label', { for: 'api-key' }, 'API key'),
    input, error, button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    button.disabled = true;
    try {
      const s = await session.signIn(input.value.trim());
      input.value = '';
      done(s);
    } catch (err) {
      error.textContent = err.code === 'invalid_credentials'
        ? 'That key is unknown or revoked.' : err.message;
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// The app's colours: a neutral dark grey, or light when chosen, whatever
// the system prefers; theme.js applies the choice kept here before the
// page is drawn. A page that does not load theme.js follows the system.
const THEME_KEY = 'lightbox.theme';
export const theme = () => (document.documentElement.dataset.theme === 'light' ? 'light' : 'dark');

export function setTheme(name) {
  document.documentElement.dataset.theme = name;
  try { localStorage.setItem(THEME_KEY, name); } catch { /* for this page only */ }
}

// themeButton switches the light theme on and off, on pages with themes.
function themeButton() {
  if (!document.documentElement.dataset.theme) return null;
  const b = h('button', {
    type: 'button', class: 'small', id: 'theme-light', 'aria-pressed': String(theme() === 'light'), 'aria-label': 'Light theme', title: 'Light or dark colours',
  }, h('span', { 'aria-hidden': 'true' }, '◐'), h('span', { class: 'theme-word', 'aria-hidden': 'true' }, ' Light'));
  b.addEventListener('click', () => {
    setTheme(theme() === 'light' ? 'dark' : 'light');
    b.setAttribute('aria-pressed', String(theme() === 'light'));
  });
  return b;
}

// toggled makes button show and hide panel (aria-expanded on the one,
// data-open on the other). A press outside both, or Esc, hides it again.
// It returns set(open) and detach().
export function toggled(button, panel) {
  button.setAttribute('aria-expanded', 'false');
  if (panel.id) button.setAttribute('aria-controls', panel.id);
  const set = (open) => {
    if (open === (button.getAttribute('aria-expanded') === 'true')) return;
    button.setAttribute('aria-expanded', String(open));
    panel.toggleAttribute('data-open', open);
  };
  button.addEventListener('click', () => set(button.getAttribute('aria-expanded') !== 'true'));
  const outside = (e) => {
    if (!button.contains(e.target) && !panel.contains(e.target)) set(false);
  };
  document.addEventListener('pointerdown', outside, true);
  panel.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || button.getAttribute('aria-expanded') !== 'true') return;
    e.preventDefault();
    e.stopPropagation();
    set(false);
    button.focus();
  });
  return { set, detach: () => document.removeEventListener('pointerdown', outside, true) };
}

// givesKeysBack hands the keyboard back (back()) after a pointer has used
// a control in root: a click on a button or a check box, a choice in a
// menu or on a slider. The keys then go to the photos at once, not to the
// control, which would take Space, Enter and the arrows for itself. What
// was used by keyboard keeps the focus, and so do text fields and what
// opens a panel. It returns how to stop.
export function givesKeysBack(root, back) {
  let pointer = false;
  const done = (e) => {
    const t = e.target;
    if (!pointer || !(t instanceof Element) || !t.closest('button, input, select, label') || t.closest('[aria-expanded]')) return;
    if (t.matches('input:not([type=checkbox], [type=radio], [type=range], [type=button]), textarea')) return;
    // A select takes its choice with change; its click only opens it.
    if (e.type === 'click' && t.closest('select')) return;
    pointer = false;
    back();
  };
  const down = () => { pointer = true; };
  const key = () => { pointer = false; };
  root.addEventListener('pointerdown', down, true);
  root.addEventListener('keydown', key, true);
  root.addEventListener('click', done);
  root.addEventListener('change', done);
  return () => {
    for (const [type, fn, capture] of [['pointerdown', down, true], ['keydown', key, true], ['click', done, false], ['change', done, false]]) {
      root.removeEventListener(type, fn, capture);
    }
  };
}

// userBar shows who is signed in, the light theme's switch and a sign-out
// button in the header.
export function userBar(el, user, onSignOut) {
  clear(el,
    h('span', { class: 'who', title: user.email }, user.email, user.isAdmin ? ' (admin)' : ''),
    themeButton(),
    h('button', {
      type: 'button', class: 'link', id: 'sign-out',
      onclick: async () => {
        try { await session.signOut(); } catch { /* signed out either way */ }
        onSignOut();
      },
    }, 'Sign out'));
}

// table renders rows of cells under a header, scrolling sideways on narrow screens.
export function table(head, rows) {
  return h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, head.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((x) => h('td', {}, x)))))));
}
