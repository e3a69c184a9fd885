// Admin: the operator's tenants (create — its admin token shown once —, remove); a tenant's
// publishing (a partner.toml and its component, `POST /admin/agents`); for any principal its
// partners' versions (roll back) and API keys (issue — shown once —, revoke). From
// `/admin/tenants`, `/admin/agents`, `/admin/agents/{id}/versions`, `…/rollback` and `…/keys`.

import { api, path } from '../api.js';
import { h, time, link, errorBox, replace } from '../dom.js';

export async function render(root, { me, args, signal }) {
  root.append(h('h1', {}, 'Admin'));
  if (me.principal === 'operator') root.append(await tenants(signal));
  // After a publish the listings below are drawn again (a new partner, or a new current version).
  const redraw = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
  if (me.principal === 'tenant') root.append(publishing(redraw));
  const published = (await api('/admin/agents', { signal })).agents;
  const agent = args[0] || (published[0] && published[0].id);
  const picker = h('select', { id: 'admin-agent', onchange: () => { location.hash = link(`/admin/${picker.value}`); } },
    published.map((a) => h('option', { value: a.id, selected: a.id === agent }, `${a.id}${me.principal === 'operator' ? ` (${a.tenant})` : ''}`)));
  root.append(h('h2', {}, 'Published partners'));
  if (!published.length) { root.append(h('p', { class: 'muted' }, 'No published partners. Publish with `aiphost publish` or `POST /admin/agents`.')); return; }
  root.append(h('div', { class: 'row' }, picker));
  if (agent) root.append(await versions(agent, signal), await keys(agent, signal));
}

async function tenants(signal) {
  const section = h('section', { class: 'card', id: 'tenants' });
  const draw = async () => {
    const list = (await api('/admin/tenants', { signal })).tenants;
    const id = h('input', { name: 'tenant', placeholder: 'new tenant id', required: true });
    const shown = h('div');
    const form = h('form', { class: 'row' }, id, h('button', { type: 'submit', class: 'primary' }, 'Create tenant'));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      try {
        const made = await api('/admin/tenants', { method: 'POST', body: { id: id.value.trim() } });
        await draw();
        section.append(h('div', { class: 'secret', id: 'tenant-token' }, `Tenant ${made.tenant} created. Its admin token (shown once): `, h('code', {}, made.adminToken)));
      } catch (e) { replace(shown, errorBox(e)); }
    });
    replace(section, h('h2', { style: 'margin-top:0' }, 'Tenants'),
      h('table', {}, h('thead', {}, h('tr', {}, ['tenant', 'state', 'partners', 'created', ''].map((c) => h('th', {}, c)))),
        h('tbody', {}, list.map((t) => h('tr', { 'data-tenant': t.id },
          h('td', {}, t.id), h('td', {}, t.state), h('td', {}, (t.agents || []).join(', ') || '—'),
          h('td', {}, time(t.createdMs)),
          h('td', {}, t.state === 'active' ? h('button', {
            type: 'button', class: 'danger',
            onclick: async () => {
              if (!window.confirm(`Remove tenant ${t.id}, its partners, tasks, keys and secrets?`)) return;
              try { await api(path('/admin/tenants', t.id), { method: 'DELETE' }); await draw(); } catch (e) { replace(shown, errorBox(e)); }
            },
          }, 'Remove') : null))))),
      form, shown);
  };
  await draw();
  return section;
}

async function versions(agent, signal) {
  const section = h('section', { class: 'card', id: 'versions' });
  const draw = async () => {
    const record = await api(path('/admin/agents', agent, 'versions'), { signal });
    const problem = h('div');
    replace(section, h('h2', { style: 'margin-top:0' }, `Versions of ${agent}`),
      h('table', {}, h('thead', {}, h('tr', {}, ['version', 'label', 'published', 'size', ''].map((c) => h('th', {}, c)))),
        h('tbody', {}, record.versions.map((v) => h('tr', { 'data-version': v.version },
          h('td', {}, `v${v.version}`), h('td', {}, v.label), h('td', {}, time(v.publishedMs ?? v.published_ms)),
          h('td', {}, `${Math.round((v.componentBytes ?? v.component_bytes ?? 0) / 1024)} KiB`),
          h('td', {}, v.version === record.current ? h('span', { class: 'badge ready' }, 'serves new tasks')
            : h('button', {
              type: 'button',
              onclick: async () => {
                try { await api(path('/admin/agents', agent, 'rollback'), { method: 'POST', body: { version: v.version } }); await draw(); } catch (e) { replace(problem, errorBox(e)); }
              },
            }, `Serve v${v.version}`)))))),
      problem);
  };
  await draw();
  return section;
}

async function keys(agent, signal) {
  const section = h('section', { class: 'card', id: 'keys' });
  const draw = async (message) => {
    let list;
    try { list = (await api(path('/admin/agents', agent, 'keys'), { signal })).keys; } catch (e) {
      replace(section, h('h2', { style: 'margin-top:0' }, 'API keys'), errorBox(e));
      return;
    }
    const leader = h('input', { name: 'leader', placeholder: 'Leader id (AIC)', required: true, size: 40 });
    const ttl = h('input', { name: 'ttl', type: 'number', min: 1, placeholder: 'ttl seconds (optional)' });
    const problem = h('div');
    const form = h('form', { class: 'row' }, leader, ttl, h('button', { type: 'submit', class: 'primary' }, 'Issue key'));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body = { leader: leader.value.trim() };
      if (ttl.value) body.ttlSeconds = Number(ttl.value);
      try {
        const issued = await api(path('/admin/agents', agent, 'keys'), { method: 'POST', body });
        await draw(h('div', { class: 'secret', id: 'issued-key' }, `Key ${issued.id} for ${issued.leader} (shown once): `, h('code', {}, issued.key)));
      } catch (e) { replace(problem, errorBox(e)); }
    });
    replace(section, h('h2', { style: 'margin-top:0' }, `API keys of ${agent}`),
      h('table', {}, h('thead', {}, h('tr', {}, ['key', 'Leader', 'created', 'expires', ''].map((c) => h('th', {}, c)))),
        h('tbody', {}, list.map((k) => h('tr', { 'data-key': k.id },
          h('td', { class: 'mono' }, k.id), h('td', { class: 'mono' }, k.leader), h('td', {}, time(k.createdMs)),
          h('td', {}, k.expiresMs ? time(k.expiresMs) : 'never'),
          h('td', {}, h('button', {
            type: 'button', class: 'danger',
            onclick: async () => {
              try { await api(path('/admin/agents', agent, 'keys', k.id), { method: 'DELETE' }); await draw(); } catch (e) { replace(problem, errorBox(e)); }
            },
          }, 'Revoke')))))),
      form, message || null, problem);
  };
  await draw();
  return section;
}

/** A tenant publishes a partner (a new one, or a new version that then serves new tasks). */
function publishing(onPublished) {
  const manifest = h('input', { type: 'file', id: 'publish-manifest', accept: '.toml,text/plain', required: true });
  const component = h('input', { type: 'file', id: 'publish-component', accept: '.wasm,application/wasm', required: true });
  const shown = h('div', { id: 'published' });
  const form = h('form', { class: 'card', id: 'publish' },
    h('h2', { style: 'margin-top:0' }, 'Publish'),
    h('div', { class: 'row' }, h('label', {}, 'partner.toml ', manifest), h('label', {}, 'component (.wasm) ', component),
      h('button', { type: 'submit', class: 'primary' }, 'Publish')),
    shown);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const [toml, wasm] = [manifest.files[0], component.files[0]];
    if (!toml || !wasm) { replace(shown, errorBox('Choose the partner.toml and its component.')); return; }
    replace(shown, h('p', { class: 'muted' }, 'Publishing…'));
    try {
      const body = { manifest: await toml.text(), component: base64(new Uint8Array(await wasm.arrayBuffer())) };
      const { published } = await api('/admin/agents', { method: 'POST', body });
      replace(shown, h('p', { class: 'secret', 'data-version': published.version },
        `Published version ${published.version} (${published.label}); it serves new tasks once compiled.`));
      onPublished();
    } catch (e) { replace(shown, errorBox(e)); }
  });
  return form;
}

/** Bytes as base64, a chunk at a time (a component is megabytes). */
function base64(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
