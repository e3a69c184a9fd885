// Building the page: elements made with `h`, text always set as text (never parsed as HTML), so
// nothing a partner, a tenant or a client sent can run in the console.

/** An element: `attrs` are attributes (`class`, `on*` listeners, `value`/`checked` as properties). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'value' || key === 'checked' || key === 'selected') {
      el[key] = value;
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key === 'className' ? 'class' : key, value === true ? '' : String(value));
    }
  }
  add(el, children);
  return el;
}

/** Append children: nodes, or anything else as text; arrays flattened, null left out. */
export function add(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** A time as the reader's clock shows it (from RFC 3339 text or Unix ms). */
export function time(value) {
  if (value === null || value === undefined || value === '') return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

/** Seconds as ms or s, for latencies. */
export function seconds(value) {
  if (value === null || value === undefined) return '—';
  return value < 1 ? `${(value * 1000).toFixed(value < 0.01 ? 2 : 1)} ms` : `${value.toFixed(2)} s`;
}

/** JSON, indented, for a <pre>. */
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** A badge showing a task's state. */
export function stateBadge(state) {
  return h('span', { class: `badge state-${state}`, 'data-state': state }, state);
}

/** An error shown where a page would be. */
export function errorBox(error) {
  return h('p', { class: 'error', role: 'alert' }, error && error.message ? error.message : String(error));
}

/** `#/page/…?query` with its query from a plain object (empty values left out). */
export function link(path, query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '' && value !== false) params.set(key, value);
  }
  const text = params.toString();
  return `#${path}${text ? `?${text}` : ''}`;
}

/** Replace `el`'s children with `children` (as `add` takes them: null left out, which the DOM's
 * own replaceChildren would show as the text "null"). */
export function replace(el, ...children) {
  el.replaceChildren();
  return add(el, children);
}
