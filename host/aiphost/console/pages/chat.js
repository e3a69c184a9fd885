// The chat playground: talk to a partner through its AIFlowy chat door, as any chat front end
// would (`POST /agents/{id}/aiflowy/chat`, `…/aiflowy/form`, `…/aiflowy/chat/stop`). Answers and
// reasoning stream as they come, tool activity shows as collapsible steps, a form request is a
// form made from its JSON Schema whose submit resumes the conversation, and Stop cancels.
//
// A partner that takes API keys gets one key for the Leader `console`, issued once through the
// admin API (`POST /admin/agents/{id}/keys`) and listed with the partner's other keys.

import { api, path, ApiError } from '../api.js';
import { events } from '../sse.js';
import { h, link, pretty, errorBox, replace } from '../dom.js';
import { schemaForm } from '../schema-form.js';

const CONSOLE_LEADER = 'console';

export async function render(root, { me, args, signal }) {
  const agent = args[0];
  const index = await api('/agents', { signal });
  let agents = index.agents.map((a) => a.id);
  if (me.principal !== 'operator') {
    const own = new Set((await api('/admin/agents', { signal })).agents.map((a) => a.id));
    agents = agents.filter((a) => own.has(a));
  }
  const picker = h('select', { id: 'chat-agent', onchange: () => { location.hash = link(`/chat/${picker.value}`); } },
    h('option', { value: '' }, 'choose a partner'), agents.map((a) => h('option', { value: a, selected: a === agent }, a)));
  root.append(h('div', { class: 'row' }, h('h1', {}, 'Playground'), picker));
  if (!agent) { root.append(h('p', { class: 'muted' }, 'Choose a partner to talk to.')); return; }
  if (!agents.includes(agent)) { root.append(errorBox(`No partner ${agent} here.`)); return; }
  new Conversation(root, agent, signal);
}

class Conversation {
  constructor(root, agent, signal) {
    this.agent = agent;
    this.signal = signal;
    this.id = newId();
    this.base = `/agents/${encodeURIComponent(agent)}/aiflowy`;
    this.messages = h('div', { class: 'messages', id: 'messages', 'aria-live': 'polite' });
    this.input = h('input', { id: 'prompt', placeholder: `Say something to ${agent}…`, autocomplete: 'off' });
    this.send = h('button', { type: 'submit', class: 'primary', id: 'send' }, 'Send');
    this.stop = h('button', { type: 'button', class: 'danger', id: 'stop', disabled: true, onclick: () => this.stopTurn() }, 'Stop');
    const fresh = h('button', { type: 'button', id: 'new-conversation', onclick: () => { this.id = newId(); replace(this.messages); this.conversationLabel.textContent = this.id; } }, 'New conversation');
    this.conversationLabel = h('code', { id: 'conversation' }, this.id);
    const composer = h('form', { class: 'composer' }, this.input, this.send, this.stop);
    composer.addEventListener('submit', (event) => {
      event.preventDefault();
      const prompt = this.input.value.trim();
      if (!prompt || this.busy) return;
      this.input.value = '';
      this.messages.append(h('div', { class: 'msg user' }, prompt));
      this.run(`${this.base}/chat`, { conversation_id: this.id, prompt });
    });
    root.append(h('p', { class: 'muted' }, 'conversation ', this.conversationLabel, ' ', fresh),
      h('div', { class: 'chat' }, this.messages, composer));
    this.input.focus();
  }

  /** The headers for the partner's door: none for an open partner, the console's key else. */
  async doorHeaders(refresh = false) {
    const stored = sessionStorage.getItem(`aiphost.key.${this.agent}`);
    if (stored && !refresh) return { authorization: `Bearer ${stored}` };
    if (!refresh) return {};
    const issued = await api(path('/admin/agents', this.agent, 'keys'), { method: 'POST', body: { leader: CONSOLE_LEADER } });
    sessionStorage.setItem(`aiphost.key.${this.agent}`, issued.key);
    return { authorization: `Bearer ${issued.key}` };
  }

  async post(url, body) {
    const send = async (auth) => fetch(url, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
      signal: this.signal,
    });
    let response = await send(await this.doorHeaders());
    if (response.status === 401) response = await send(await this.doorHeaders(true));
    return response;
  }

  /** One turn (a prompt, or a form's submit): its stream shown as it comes. */
  async run(url, body, form) {
    this.setBusy(true);
    const reply = new Reply(this);
    try {
      const response = await this.post(url, body);
      const type = response.headers.get('content-type') || '';
      if (!type.startsWith('text/event-stream')) {
        const json = await response.json().catch(() => null);
        const error = new ApiError(response.status, json);
        if (form && error.code === 'FORM_INVALID') { form.showErrors(json.error.errors); reply.remove(); return; }
        reply.fail(error.message);
        return;
      }
      if (form) form.close('Answered.');
      this.messages.append(reply.element);
      for await (const event of events(response)) {
        let envelope;
        try { envelope = JSON.parse(event.data); } catch { continue; }
        reply.show(event.event, envelope);
      }
    } catch (error) {
      if (!this.signal.aborted) reply.fail(error.message);
    } finally {
      this.setBusy(false);
      reply.end();
    }
  }

  async stopTurn() {
    this.stop.disabled = true;
    try {
      const response = await this.post(`${this.base}/chat/stop`, { conversation_id: this.id });
      if (!response.ok) {
        const json = await response.json().catch(() => null);
        this.messages.append(h('div', { class: 'msg error-msg' }, new ApiError(response.status, json).message));
      }
    } catch (error) {
      this.messages.append(h('div', { class: 'msg error-msg' }, error.message));
    }
  }

  setBusy(busy) {
    this.busy = busy;
    this.send.disabled = busy;
    this.stop.disabled = !busy;
  }

  scroll() { this.messages.scrollTop = this.messages.scrollHeight; }
}

/** The partner's side of one turn. */
class Reply {
  constructor(conversation) {
    this.conversation = conversation;
    this.status = h('div', { class: 'status' }, 'sending…');
    this.answer = h('div', { class: 'answer' });
    this.element = h('div', { class: 'msg agent', 'data-turn': 'open' }, this.status, this.answer);
    this.steps = new Map();
    this.reasoning = null;
  }

  show(name, envelope) {
    const kind = `${String(envelope.domain).toLowerCase()}/${String(envelope.type).toLowerCase()}`;
    const payload = envelope.payload || {};
    if (envelope.message_id || envelope.messageId) this.element.dataset.task = envelope.message_id || envelope.messageId;
    if (name === 'error' || kind === 'system/error') {
      const code = (payload.detail && payload.detail.code) || payload.code;
      this.element.append(h('div', { class: 'msg error-msg', 'data-error': code }, `${payload.message || 'failed'} (${code})`));
    } else if (kind === 'system/status') {
      const words = { running: 'working…', suspended: 'waiting for your answer', resumed: 'resumed', canceled: 'stopped' };
      this.status.textContent = words[payload.state] || payload.state;
      this.element.dataset.state = payload.state;
    } else if (kind === 'llm/thinking') {
      if (!this.reasoning) {
        this.reasoningText = h('div', {});
        this.reasoning = h('details', { class: 'reasoning', open: true }, h('summary', {}, 'Reasoning'), this.reasoningText);
        this.element.insertBefore(this.reasoning, this.answer);
      }
      if (payload.delta !== undefined) this.reasoningText.append(payload.delta); else if (payload.content !== undefined) this.reasoningText.textContent = payload.content;
    } else if (kind === 'llm/message') {
      if (payload.delta !== undefined) this.answer.append(payload.delta); else if (payload.content !== undefined) this.answer.textContent = payload.content;
    } else if (kind === 'tool/tool_call') {
      const result = h('pre', { class: 'result' }, '…');
      const step = h('details', { class: 'step', 'data-tool': payload.name },
        h('summary', {}, `Tool ${payload.name}`),
        h('div', { class: 'muted' }, 'arguments'), h('pre', {}, pretty(parseMaybe(payload.arguments))),
        h('div', { class: 'muted' }, 'result'), result);
      this.steps.set(payload.tool_call_id, result);
      this.element.insertBefore(step, this.answer);
    } else if (kind === 'tool/tool_result') {
      const result = this.steps.get(payload.tool_call_id);
      if (result) result.textContent = pretty(parseMaybe(payload.result));
    } else if (kind === 'interaction/form_request') {
      this.ask(payload);
    } else if (kind === 'interaction/form_cancel' && this.form) {
      this.form.close(`Withdrawn (${payload.reason}).`);
    } else if (name === 'done' || kind === 'system/done') {
      const meta = envelope.meta || {};
      if (meta.latency_ms !== undefined) this.element.append(h('div', { class: 'meta' }, `${meta.latency_ms} ms`));
    }
    this.conversation.scroll();
  }

  /** A form request: a form from its schema; a valid submit resumes the conversation. */
  ask(payload) {
    const formId = payload.form_id || payload.formId;
    const ui = payload.ui || {};
    const form = schemaForm(payload.schema || {}, {
      title: payload.title,
      description: payload.description,
      submitText: ui.submit_text || 'Submit',
      onSubmit: (values) => this.conversation.run(`${this.conversation.base}/form`, { conversation_id: this.conversation.id, form_id: formId, values }, form),
    });
    form.element.dataset.form = formId;
    this.form = form;
    this.element.append(form.element);
  }

  fail(message) {
    this.conversation.messages.append(this.element);
    this.element.append(h('div', { class: 'msg error-msg' }, message));
  }

  remove() { this.element.remove(); }

  end() {
    this.element.dataset.turn = 'closed';
    if (this.status.textContent === 'sending…' || this.status.textContent === 'working…') this.status.textContent = '';
  }
}

function parseMaybe(value) {
  if (typeof value !== 'string') return value;
  try { return JSON.parse(value); } catch { return value; }
}

function newId() {
  // getRandomValues, not randomUUID: the latter needs a secure context, and a console may be
  // reached over plain HTTP on a private network.
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}
