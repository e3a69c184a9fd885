// One task: what it is now, and its timeline live over SSE — every status, product, reasoning
// delta, tool call and result, form — each with its door-neutral JSON and, on demand, the raw
// event of any door (`wire=`). Cancel from here. From
// `GET /admin/agents/{id}/tasks/{task}`, `GET …/events` and `POST …/cancel`.

import { api, path, headers } from '../api.js';
import { follow } from '../sse.js';
import { h, stateBadge, time, pretty, link, replace } from '../dom.js';

const WIRES = ['', 'aip', 'a2a', 'agent_api', 'aiflowy', 'mcp'];
const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

export async function render(root, { args, query, signal }) {
  const [agent, id] = args;
  const leader = query.get('leader') || '';
  const wire = query.get('wire') || '';
  const at = path('/admin/agents', agent, 'tasks', id);
  const leaderQuery = leader ? `leader=${encodeURIComponent(leader)}` : '';
  const summary = h('div', { class: 'card', id: 'task-summary' });
  const wireSelect = h('select', { id: 'wire', onchange: () => { location.hash = link(`/task/${agent}/${id}`, { leader, wire: wireSelect.value }); } },
    WIRES.map((w) => h('option', { value: w, selected: w === wire }, w ? `raw ${w} events` : 'no raw wire events')));
  const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel-task' }, 'Cancel task');
  const streamState = h('span', { class: 'muted', id: 'stream-state' }, 'connecting…');
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  root.append(
    h('p', {}, h('a', { href: link('/tasks', { agent }) }, `← ${agent}'s tasks`)),
    h('h1', {}, 'Task ', h('code', {}, id)),
    summary,
    h('div', { class: 'row' }, h('h2', {}, 'Timeline'), wireSelect, streamState, cancel),
    timeline);

  async function refresh() {
    const { task } = await api(`${at}${leaderQuery ? `?${leaderQuery}` : ''}`, { signal });
    replace(summary, h('dl', { class: 'kv' },
      h('dt', {}, 'partner'), h('dd', {}, agent),
      h('dt', {}, 'Leader'), h('dd', { class: 'mono' }, task.leader || '—'),
      h('dt', {}, 'session'), h('dd', { class: 'mono' }, task.session || '—'),
      h('dt', {}, 'state'), h('dd', {}, stateBadge(task.state), task.stuck ? h('span', { class: 'badge stuck-badge', style: 'margin-left:4px' }, task.stuck) : null),
      h('dt', {}, 'created'), h('dd', {}, time(task.created)),
      h('dt', {}, 'updated'), h('dd', {}, time(task.updated))),
      task.products && task.products.length ? h('details', {}, h('summary', {}, `Products (${task.products.length})`), h('pre', {}, pretty(task.products))) : null);
    cancel.hidden = TERMINAL.has(task.state);
  }
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      await api(`${at}/cancel${leaderQuery ? `?${leaderQuery}` : ''}`, { method: 'POST', signal });
    } catch (e) { streamState.textContent = e.message; }
    cancel.disabled = false;
    refresh().catch(() => {});
  });
  await refresh();

  const params = new URLSearchParams(leaderQuery);
  if (wire) params.set('wire', wire);
  follow(`${at}/events?${params}`, {
    headers: headers(),
    signal,
    onState: (state, detail) => { streamState.textContent = detail ? `${state}: ${detail}` : state; },
    until: (event) => event.event === 'end',
    onEvent: (event) => {
      if (event.event === 'end') { refresh().catch(() => {}); return; }
      let data;
      try { data = JSON.parse(event.data); } catch { return; }
      timeline.append(entry(data));
      if (data.kind === 'status') refresh().catch(() => {});
    },
  });
}

/** One timeline line: kind, time, a short text, the JSON on demand. */
function entry(data) {
  const event = data.event || {};
  return h('li', { class: data.kind, 'data-kind': data.kind, 'data-seq': data.seq },
    h('span', { class: 'kind' }, data.kind), ' ',
    h('span', { class: 'muted' }, `#${data.seq} · ${time(data.time)}`), ' ',
    h('span', { class: 'said' }, said(data.kind, event)),
    h('details', {}, h('summary', {}, 'event'), h('pre', {}, pretty(event))),
    // The door's own frames for this event (none, one or several: a chat door may send more
    // than one for one event).
    Array.isArray(data.wire) && data.wire.length ? h('details', { class: 'wire', open: true }, h('summary', {}, `wire (${data.wire.length})`), h('pre', {}, pretty(data.wire.length === 1 ? data.wire[0] : data.wire))) : null);
}

/** What an event says, in a few words: the engine's event as `GET …/events` sends it. */
function said(kind, event) {
  const short = (text) => (text.length > 160 ? `${text.slice(0, 160)}…` : text);
  const activity = event.activity || {};
  const texts = (product) => ((product && product.dataItems) || []).map((d) => d.text || '').join('');
  switch (kind) {
    case 'status': return short([event.status && event.status.state, event.kind === 'created' ? '(created)' : ''].filter(Boolean).join(' '));
    case 'tool_call': return short(`${activity.name}(${JSON.stringify(activity.arguments ?? {})})`);
    case 'tool_result': return short(`${activity.callId} → ${JSON.stringify(activity.output && 'json' in activity.output ? activity.output.json : activity.output)}${activity.isError ? ' (error)' : ''}`);
    case 'text':
    case 'reasoning': return short(JSON.stringify(texts(event.chunk && event.chunk.product)));
    case 'product': return short(`${(event.product && (event.product.name || event.product.id)) || ''} ${texts(event.product)}`.trim());
    default: return short(JSON.stringify(event));
  }
}
