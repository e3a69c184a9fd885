// Logs: a partner's own log lines (its `log` calls) with the Leader's task id and the fields as
// the partner gave them, live. From `GET /admin/agents/{id}/logs` (a page of the partner's
// bounded history) and the same with `follow=1` (SSE, resumed with Last-Event-ID).

import { api, path, headers } from '../api.js';
import { follow } from '../sse.js';
import { h, link, time } from '../dom.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];
const MAX_SHOWN = 2000;

export async function render(root, { me, args, query, signal }) {
  const agent = args[0];
  const index = await api('/admin/agents', { signal });
  const everyone = me.principal === 'operator' ? (await api('/agents', { signal })).agents.map((a) => a.id) : [];
  const agents = [...new Set([...everyone, ...index.agents.map((a) => a.id)])].sort();
  const level = query.get('level') || '';
  const task = query.get('task') || '';
  const picker = h('select', { id: 'logs-agent' }, h('option', { value: '' }, 'choose a partner'), agents.map((a) => h('option', { value: a, selected: a === agent }, a)));
  const levelSelect = h('select', { name: 'level' }, h('option', { value: '' }, 'all'), LEVELS.map((l) => h('option', { value: l, selected: l === level }, `${l} and up`)));
  const taskInput = h('input', { name: 'task', value: task, placeholder: 'task id' });
  const form = h('form', { class: 'filters' }, h('label', {}, 'partner', picker), h('label', {}, 'level', levelSelect), h('label', {}, 'task', taskInput), h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = link(`/logs/${picker.value}`, { level: levelSelect.value, task: taskInput.value.trim() });
  });
  picker.addEventListener('change', () => form.requestSubmit());
  const state = h('span', { class: 'muted', id: 'logs-state' });
  const lines = h('div', { class: 'logs', id: 'logs' });
  root.append(h('div', { class: 'row' }, h('h1', {}, 'Logs'), state), form, lines);
  if (!agent) { lines.append(h('div', { class: 'line' }, 'Choose a partner.')); return; }

  const params = new URLSearchParams({ follow: '1' });
  if (level) params.set('level', level);
  if (task) params.set('task', task);
  follow(`${path('/admin/agents', agent, 'logs')}?${params}`, {
    headers: headers(),
    signal,
    onState: (s, detail) => { state.textContent = detail ? `${s}: ${detail}` : (s === 'open' ? 'live' : s); },
    onEvent: (event) => {
      let record;
      try { record = JSON.parse(event.data); } catch { return; }
      const atBottom = lines.scrollTop + lines.clientHeight >= lines.scrollHeight - 4;
      lines.append(line(event.event, record));
      while (lines.children.length > MAX_SHOWN) lines.firstChild.remove();
      if (atBottom) lines.scrollTop = lines.scrollHeight;
    },
  });
}

function line(name, record) {
  if (name === 'lagged') {
    return h('div', { class: 'line gap' }, `— ${record.missed} lines no longer kept, after #${record.after} —`);
  }
  const fields = Object.entries(record.fields || {}).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
  const where = [record.leader ? `leader=${record.leader}` : '', record.task ? `task=${record.task}` : ''].filter(Boolean).join(' ');
  return h('div', { class: `line lvl-${record.level}`, 'data-seq': record.seq, 'data-task': record.task || '' },
    `${time(record.time)} ${String(record.level).toUpperCase().padEnd(5)} `,
    where ? `[${where}] ` : '', record.message, fields ? `  ${fields}` : '');
}
