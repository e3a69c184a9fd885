// Partners: every partner the signed-in principal may see (the operator all, a tenant its own),
// with its versions (which one serves new tasks), skills, the URL of every door, readiness,
// invocations and p50/p99 invocation time. From `GET /agents` (door URLs, readiness),
// `GET /admin/agents` (whose partner), `GET /admin/agents/{id}/versions`,
// `GET /admin/agents/{id}/stats` and the partner's A2A card (skills).

import { api, path } from '../api.js';
import { h, seconds, time, link, replace } from '../dom.js';

const DOORS = [
  ['AIP', (a) => a.aip && a.aip.rpc],
  ['A2A card', (a) => a.a2aCard],
  ['Agent API', (a) => a.agentApi && a.agentApi.process],
  ['AIFlowy chat', (a) => a.aiflowy && a.aiflowy.chat],
  ['MCP', (a) => a.mcp && a.mcp.endpoint],
];

export async function render(root, { me, signal }) {
  root.append(h('h1', {}, 'Partners'));
  const [index, published] = await Promise.all([api('/agents', { signal }), api('/admin/agents', { signal })]);
  const owned = new Map(published.agents.map((a) => [a.id, a]));
  const agents = me.principal === 'operator' ? index.agents : index.agents.filter((a) => owned.has(a.id));
  if (!agents.length) {
    root.append(h('p', { class: 'muted' }, 'No partners yet. Publish one with `aiphost publish` or `POST /admin/agents`.'));
    return;
  }
  const grid = h('div', { class: 'grid' });
  root.append(grid);
  for (const agent of agents) grid.append(card(agent, owned.get(agent.id), signal));
}

function card(agent, record, signal) {
  const stats = h('dl', { class: 'kv stats' }, h('dt', {}, 'invocations'), h('dd', {}, '…'));
  const skills = h('dd', { class: 'skills' }, '…');
  const versions = h('dd', { class: 'versions' }, record ? '…' : `${agent.version} (operator's, from --agents)`);
  const doors = h('dl', { class: 'kv doors' }, DOORS.map(([name, url]) => {
    const href = url(agent);
    return href ? [h('dt', {}, name), h('dd', {}, h('code', {}, href))] : null;
  }));
  const el = h('article', { class: 'card partner', 'data-agent': agent.id },
    h('div', { class: 'row' },
      h('h2', { style: 'margin:0' }, agent.name || agent.id),
      h('span', { class: `badge ${agent.readiness}`, 'data-readiness': agent.readiness }, agent.readiness)),
    h('p', { class: 'muted' }, agent.description || ''),
    h('dl', { class: 'kv' },
      h('dt', {}, 'id'), h('dd', {}, h('code', {}, agent.id)),
      h('dt', {}, 'tenant'), h('dd', {}, record ? record.tenant : '— (operator)'),
      h('dt', {}, 'versions'), versions,
      h('dt', {}, 'skills'), skills),
    agent.cause ? h('p', { class: 'error' }, agent.cause) : null,
    stats,
    h('details', {}, h('summary', {}, 'Doors'), doors),
    h('div', { class: 'row' },
      h('a', { class: 'button', href: link(`/chat/${agent.id}`) }, 'Chat'),
      h('a', { class: 'button', href: link('/tasks', { agent: agent.id }) }, 'Tasks'),
      h('a', { class: 'button', href: link(`/logs/${agent.id}`) }, 'Logs')));
  fill(agent, record, { stats, skills, versions }, signal);
  return el;
}

async function fill(agent, record, cells, signal) {
  api(path('/admin/agents', agent.id, 'stats'), { signal }).then((s) => {
    replace(cells.stats, 
      h('dt', {}, 'invocations'), h('dd', { 'data-stat': 'invocations' }, String(s.invocations)),
      h('dt', {}, 'failed'), h('dd', { 'data-stat': 'failures' }, String(s.failures)),
      h('dt', {}, 'p50 / p99'), h('dd', { 'data-stat': 'latency' }, `${seconds(s.p50_seconds)} / ${seconds(s.p99_seconds)}`));
  }, (e) => replace(cells.stats, h('dt', {}, 'stats'), h('dd', { class: 'error' }, e.message)));
  fetch(agent.a2aCard, { signal }).then((r) => (r.ok ? r.json() : null)).then((card) => {
    const names = ((card && card.skills) || []).map((s) => s.name || s.id);
    cells.skills.textContent = names.length ? names.join(', ') : '—';
  }, () => { cells.skills.textContent = '—'; });
  if (record) {
    api(path('/admin/agents', agent.id, 'versions'), { signal }).then((v) => {
      replace(cells.versions, ...v.versions.map((version) => h('div', {},
        `v${version.version} ${version.label} · ${time(version.publishedMs ?? version.published_ms)}`,
        version.version === v.current ? h('span', { class: 'badge ready', style: 'margin-left:6px' }, 'serves new tasks') : null)));
    }, (e) => { cells.versions.textContent = e.message; });
  }
}
