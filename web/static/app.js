// The app page: sign in, the projects list, and a project (see project.js).
// Routes live in the URL's hash (#/, #/projects/{id}/{tab}), so the server
// serves one page and the back button works.

import { api, pages, whenSignedOut } from './api.js';
import { h, clear, announce, signedInUser, signInForm, userBar, when, plural } from './ui.js';
import { showProject, leaveProject } from './project.js';

const main = document.getElementById('main');
let user = null;

async function boot() {
  whenSignedOut(() => {
    if (!user) return;
    user = null;
    leaveProject();
    announce('Your session has ended; sign in again.', 'error');
    signIn();
  });
  user = await signedInUser(main);
  if (!user) return signIn();
  started();
}

async function signIn() {
  clear(document.getElementById('user'));
  clear(document.getElementById('nav'));
  user = (await signInForm(main)).user;
  announce(`Signed in as ${user.email}.`);
  started();
}

function started() {
  userBar(document.getElementById('user'), user, () => {
    user = null;
    leaveProject();
    location.hash = '#/';
    announce('Signed out.');
    signIn();
  });
  const nav = document.getElementById('nav');
  clear(nav, h('a', { href: '#/' }, 'Projects'), user.isAdmin ? h('a', { href: '/admin' }, 'Admin') : null);
  route();
}

window.addEventListener('hashchange', () => { if (user) route(); });

function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  for (const a of document.querySelectorAll('#nav a')) {
    a.toggleAttribute('aria-current', a.getAttribute('href') === '#/' && parts[0] !== 'projects');
    if (a.hasAttribute('aria-current')) a.setAttribute('aria-current', 'page');
  }
  if (parts[0] === 'projects' && parts[1]) {
    showProject(main, parts[1], parts[2] || '');
    return;
  }
  leaveProject();
  projectsView();
}

async function projectsView() {
  document.title = 'Projects · Lightbox';
  const list = h('ul', { class: 'projects', 'aria-busy': 'true' });
  const title = h('input', { id: 'new-title', name: 'title', required: true, maxlength: 200, autocomplete: 'off' });
  const desc = h('input', { id: 'new-desc', name: 'description', maxlength: 2000, autocomplete: 'off' });
  const date = h('input', { id: 'new-date', name: 'shootDate', type: 'date' });
  const error = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'card', id: 'new-project' },
    h('h2', {}, 'New project'),
    h('div', { class: 'fields' },
      h('div', {}, h('label', { for: 'new-title' }, 'Title'), title),
      h('div', {}, h('label', { for: 'new-desc' }, 'Description (optional)'), desc),
      h('div', {}, h('label', { for: 'new-date' }, 'Shoot date (optional)'), date)),
    error,
    h('button', { type: 'submit', class: 'primary' }, 'Create project'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    const body = { title: title.value.trim() };
    if (desc.value.trim()) body.description = desc.value.trim();
    if (date.value) body.shootDate = date.value;
    try {
      const p = await api('POST', '/v1/projects', body);
      announce(`Created “${p.title}”.`);
      location.hash = `#/projects/${p.id}/upload`;
    } catch (err) {
      const fields = err.details && err.details.fields;
      error.textContent = fields ? Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ') : err.message;
    }
  });
  clear(main, h('h1', {}, 'Projects'), form, h('section', { 'aria-labelledby': 'your-projects' },
    h('h2', { id: 'your-projects' }, 'Your projects'), list));
  main.focus({ preventScroll: true });

  let n = 0;
  try {
    await pages('/v1/projects', (items) => {
      for (const p of items) {
        n++;
        const st = p.stats || {};
        list.append(h('li', {},
          h('a', { href: `#/projects/${p.id}`, class: 'project-link' }, p.title),
          p.status !== 'active' ? h('span', { class: 'badge' }, p.status) : null,
          h('span', { class: 'muted' }, ' · ', plural(st.total || 0, 'photo'), st.ready ? ` · ${st.ready.toLocaleString()} searchable` : '',
            st.failed ? ` · ${st.failed.toLocaleString()} failed` : '', ' · created ', when(p.createdAt))));
      }
    }, { limit: 100 });
    if (!n) list.append(h('li', { class: 'muted' }, 'No projects yet: create one above.'));
  } catch (err) {
    list.append(h('li', { class: 'error' }, `The projects could not be loaded: ${err.message}`));
  }
  list.removeAttribute('aria-busy');
}

boot().catch(() => {}); // signedInUser has said what went wrong
