// Tasks: live and recent tasks of the principal's partners, newest change first, with filters
// (partner, state, Leader, session, stuck only) and stuck ones highlighted — working for longer
// than the partner's invocation limit, or awaiting input near its timeout. Refreshes every few
// seconds; a live task can be canceled here. From `GET /admin/tasks` and
// `POST /admin/agents/{id}/tasks/{task}/cancel`.

import { api, path } from '../api.js';
import { h, stateBadge, time, link, errorBox, replace } from '../dom.js';

const STATES = ['accepted', 'working', 'awaiting-input', 'awaiting-completion', 'completed', 'failed', 'canceled', 'rejected'];
const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);
const REFRESH_MS = 3000;

export async function render(root, { me, query, signal }) {
  const index = await api('/admin/agents', { signal });
  const everyone = me.principal === 'operator' ? (await api('/agents', { signal })).agents.map((a) => a.id) : [];
  const agents = [...new Set([...everyone, ...index.agents.map((a) => a.id)])].sort();
  const filter = Object.fromEntries(['agent', 'state', 'leader', 'session', 'stuck'].map((k) => [k, query.get(k) || '']));

  const agentSelect = h('select', { name: 'agent' }, h('option', { value: '' }, 'all'), agents.map((a) => h('option', { value: a, selected: a === filter.agent }, a)));
  const stateSelect = h('select', { name: 'state' }, h('option', { value: '' }, 'all'), STATES.map((s) => h('option', { value: s, selected: s === filter.state }, s)));
  const leader = h('input', { name: 'leader', value: filter.leader, placeholder: 'Leader id' });
  const session = h('input', { name: 'session', value: filter.session, placeholder: 'session id' });
  const stuck = h('input', { type: 'checkbox', name: 'stuck', checked: filter.stuck === 'true' });
  const form = h('form', { class: 'filters' },
    h('label', {}, 'partner', agentSelect), h('label', {}, 'state', stateSelect),
    h('label', {}, 'Leader', leader), h('label', {}, 'session', session),
    h('label', {}, 'stuck only', stuck),
    h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = link('/tasks', { agent: agentSelect.value, state: stateSelect.value, leader: leader.value.trim(), session: session.value.trim(), stuck: stuck.checked ? 'true' : '' });
  });
  const body = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'More');
  const problem = h('div');
  root.append(h('h1', {}, 'Tasks'), form, problem,
    h('table', { id: 'tasks' }, h('thead', {}, h('tr', {}, ['partner', 'task', 'Leader', 'session', 'state', 'updated', ''].map((c) => h('th', {}, c)))), body),
    h('div', { class: 'row', style: 'margin-top:8px' }, more));

  const params = () => {
    const p = new URLSearchParams();
    for (const [key, value] of Object.entries(filter)) if (value) p.set(key, value);
    p.set('limit', '50');
    return p;
  };
  let cursor = null;
  async function load(append) {
    const p = params();
    if (append && cursor) p.set('cursor', cursor);
    const page = await api(`/admin/tasks?${p}`, { signal });
    replace(problem);
    const rows = page.tasks.map((t) => row(t, () => load(false).catch(show)));
    if (append) body.append(...rows); else replace(body, ...rows);
    if (!append || cursor) cursor = page.next_cursor;
    more.hidden = !page.next_cursor;
    if (!body.children.length) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No tasks match.')));
  }
  const show = (e) => { if (!signal.aborted) replace(problem, errorBox(e)); };
  more.addEventListener('click', () => load(true).catch(show));
  await load(false);
  // Refresh the first page while nobody has paged further.
  const timer = setInterval(() => { if (more.dataset.paged !== 'yes') load(false).catch(show); }, REFRESH_MS);
  more.addEventListener('click', () => { more.dataset.paged = 'yes'; });
  signal.addEventListener('abort', () => clearInterval(timer));
}

function row(task, reload) {
  const target = link(`/task/${task.agent}/${task.id}`, { leader: task.leader });
  const cancel = TERMINAL.has(task.state) ? null : h('button', {
    type: 'button', class: 'danger cancel',
    onclick: async (event) => {
      event.target.disabled = true;
      try {
        await api(`${path('/admin/agents', task.agent, 'tasks', task.id, 'cancel')}${task.leader ? `?leader=${encodeURIComponent(task.leader)}` : ''}`, { method: 'POST' });
      } catch (e) { event.target.replaceWith(h('span', { class: 'error' }, e.message)); return; }
      reload();
    },
  }, 'Cancel');
  return h('tr', { class: task.stuck ? 'stuck' : '', 'data-task': task.id, 'data-agent': task.agent },
    h('td', {}, task.agent),
    h('td', {}, h('a', { href: target, class: 'mono' }, task.id)),
    h('td', { class: 'mono' }, task.leader || '—'),
    h('td', { class: 'mono' }, task.session || '—'),
    h('td', {}, stateBadge(task.state), task.stuck ? h('span', { class: 'badge stuck-badge', style: 'margin-left:4px', title: task.stuck }, task.stuck === 'working_too_long' ? 'stuck: working too long' : 'stuck: input timeout near') : null),
    h('td', {}, time(task.updated)),
    h('td', {}, cancel));
}
