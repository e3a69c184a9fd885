// The aiphost console: sign-in, the navigation, and one page module per view. Every view is
// made from the host's documented HTTP API (README: "Admin API" and the doors), as a script
// would call it; the console has no route of its own beyond its files.
//
// Sign-in: `aiphost serve` prints `/console#token=TOKEN`. A URL fragment never reaches the
// server (nor its access log); the token moves to sessionStorage and leaves the address bar at
// once. Without one, the page asks for the operator's or a tenant's admin token.

import { api, auth, ApiError } from './api.js';
import { h, errorBox, replace } from './dom.js';
import * as partners from './pages/partners.js';
import * as tasks from './pages/tasks.js';
import * as task from './pages/task.js';
import * as chat from './pages/chat.js';
import * as logs from './pages/logs.js';
import * as admin from './pages/admin.js';

const PAGES = { partners, tasks, task, chat, logs, admin };
const main = document.getElementById('main');
let me = null;
let current = null;

function signIn(message) {
  document.getElementById('nav').hidden = true;
  document.getElementById('sign-out').hidden = true;
  document.getElementById('who').textContent = '';
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', placeholder: 'admin token', size: 48 });
  const form = h('form', { class: 'card', id: 'sign-in' },
    h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'The operator token (printed by `aiphost serve`, kept in DATA/operator-token) or a tenant\'s admin token.'),
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
    h('div', { class: 'row' }, input, h('button', { type: 'submit', class: 'primary' }, 'Sign in')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    auth.set(input.value.trim());
    start();
  });
  replace(main, form);
  input.focus();
}

async function start() {
  try {
    me = await api('/admin/me');
  } catch (error) {
    auth.clear();
    signIn(error instanceof ApiError && error.status === 401 ? 'That token is not accepted here.' : error.message);
    return;
  }
  document.getElementById('who').textContent = me.principal === 'operator' ? 'operator' : `tenant ${me.tenant}`;
  document.getElementById('nav').hidden = false;
  document.getElementById('sign-out').hidden = false;
  if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/partners');
  route();
}

/** Show the page the hash names: `#/page/arg/…?query`. The previous page's streams stop. */
async function route() {
  if (!me) return;
  const hash = location.hash.slice(1) || '/partners';
  const [pathPart, queryPart = ''] = hash.split('?');
  const [name, ...args] = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  const page = PAGES[name] || partners;
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.page === (name === 'task' ? 'tasks' : name));
  }
  if (current) current.abort();
  current = new AbortController();
  const root = h('section', { id: `page-${name || 'partners'}` });
  replace(main, root);
  try {
    await page.render(root, { me, args, query: new URLSearchParams(queryPart), signal: current.signal });
  } catch (error) {
    if (current.signal.aborted) return;
    if (error instanceof ApiError && error.status === 401) { auth.clear(); signIn('Signed out: the token is no longer accepted.'); return; }
    root.append(errorBox(error));
  }
}

function boot() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get('token');
  if (token) {
    auth.set(token);
    history.replaceState(null, '', `${location.pathname}#/partners`);
  }
  document.getElementById('sign-out').addEventListener('click', () => {
    auth.clear();
    me = null;
    if (current) current.abort();
    history.replaceState(null, '', location.pathname);
    signIn('Signed out.');
  });
  window.addEventListener('hashchange', route);
  if (auth.token) start(); else signIn();
}

boot();
