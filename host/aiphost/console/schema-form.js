// A form from the JSON Schema a partner asks with: the subset forms use — an object's
// `properties` and `required`; strings (`enum` as a select, `format` email/uri/date/date-time as
// the input's type, `minLength`/`maxLength`/`pattern`), numbers and integers
// (`minimum`/`maximum`/`exclusive*`/`multipleOf`), booleans, arrays of an `enum` (a multiple
// select), one nested object as a fieldset; `title`/`description` as label and help, `default`
// as the first value. Anything else is a JSON text field. Messages are phrased from the schema;
// the host checks the values again and its FORM_INVALID errors (JSON Pointer paths) are shown
// on the fields they name.

import { h } from './dom.js';

const INPUT_FORMATS = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

/** The form: `{element, showErrors(errors), close(reason)}`; `onSubmit(values)` on a valid submit. */
export function schemaForm(schema, { title, description, submitText = 'Submit', cancelText, onSubmit, onCancel }) {
  const fields = [];
  const body = fieldsOf(schema, '', fields);
  const status = h('p', { class: 'field-error form-status', role: 'alert' });
  const submit = h('button', { type: 'submit', class: 'primary' }, submitText);
  const cancel = cancelText && onCancel ? h('button', { type: 'button', onclick: () => onCancel() }, cancelText) : null;
  const element = h('form', { class: 'schema-form', novalidate: true },
    title ? h('strong', {}, title) : null,
    description ? h('p', { class: 'help' }, description) : null,
    body, status, h('div', { class: 'row' }, submit, cancel));
  element.addEventListener('submit', async (event) => {
    event.preventDefault();
    status.textContent = '';
    let ok = true;
    const values = {};
    for (const field of fields) {
      const { value, error } = field.read();
      field.error.textContent = error || '';
      field.input.setAttribute('aria-invalid', error ? 'true' : 'false');
      if (error) ok = false;
      else if (value !== undefined) put(values, field.path, value);
    }
    if (!ok) { status.textContent = 'Some values do not fit the form.'; return; }
    submit.disabled = true;
    try { await onSubmit(values); } finally { submit.disabled = false; }
  });
  return {
    element,
    /** Show the host's `[{path, message}]` on the fields they name (the rest above the button). */
    showErrors(errors) {
      const rest = [];
      for (const { path, message } of errors || []) {
        const field = fields.find((f) => f.path === path) || fields.find((f) => path && path.startsWith(`${f.path}/`));
        if (field) { field.error.textContent = message; field.input.setAttribute('aria-invalid', 'true'); }
        else rest.push(`${path || '(form)'}: ${message}`);
      }
      status.textContent = rest.length ? rest.join('; ') : 'The host refused these values.';
    },
    /** The form no longer takes an answer (answered, withdrawn). */
    close(reason) {
      element.classList.add('closed');
      for (const control of element.querySelectorAll('input, select, textarea, button')) control.disabled = true;
      status.textContent = reason || '';
    },
  };
}

/** The fields of an object schema at JSON Pointer `base`. */
function fieldsOf(schema, base, fields) {
  const properties = (schema && typeof schema === 'object' && schema.properties) || {};
  const required = new Set(Array.isArray(schema && schema.required) ? schema.required : []);
  const names = Object.keys(properties);
  if (!names.length) {
    // Not an object with properties: the whole answer as JSON.
    return field(schema || {}, base, 'answer', true, fields, true);
  }
  return names.map((name) => field(properties[name] || {}, `${base}/${pointer(name)}`, name, required.has(name), fields, false));
}

function field(schema, path, name, required, fields, whole) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  const label = `${schema.title || name}${required ? ' *' : ''}`;
  const id = `f${Math.random().toString(36).slice(2)}${path.replace(/[^a-z0-9]/gi, '-')}`;
  if (type === 'object' && schema.properties && !whole && path.split('/').length <= 2) {
    return h('fieldset', { class: 'field' }, h('legend', {}, label),
      schema.description ? h('div', { class: 'help' }, schema.description) : null,
      fieldsOf(schema, path, fields));
  }
  let input;
  let read;
  const error = h('div', { class: 'field-error', 'data-error-for': path });
  const text = (value) => (value === undefined ? '' : String(value));
  if (Array.isArray(schema.enum) || (type === 'array' && schema.items && Array.isArray(schema.items.enum))) {
    const multiple = type === 'array';
    const options = multiple ? schema.items.enum : schema.enum;
    input = h('select', { id, name: path, multiple },
      !multiple && !required ? h('option', { value: '' }, '—') : null,
      options.map((o, i) => h('option', { value: String(i), selected: multiple ? (schema.default || []).includes(o) : schema.default === o }, String(o))));
    read = () => {
      const chosen = [...input.selectedOptions].filter((o) => o.value !== '').map((o) => options[Number(o.value)]);
      if (multiple) return check(schema, chosen, required, true);
      return check(schema, chosen.length ? chosen[0] : undefined, required);
    };
  } else if (type === 'boolean') {
    input = h('input', { id, name: path, type: 'checkbox', checked: schema.default === true });
    read = () => ({ value: input.checked });
  } else if (type === 'integer' || type === 'number') {
    const step = schema.multipleOf || (type === 'integer' ? 1 : 'any');
    input = h('input', { id, name: path, type: 'number', step, min: schema.minimum, max: schema.maximum, value: text(schema.default), inputmode: type === 'integer' ? 'numeric' : 'decimal' });
    read = () => {
      if (input.validity.badInput) return { error: `must be ${type === 'integer' ? 'a whole number' : 'a number'}` };
      const raw = input.value.trim();
      if (raw === '') return check(schema, undefined, required);
      const number = Number(raw);
      if (!Number.isFinite(number)) return { error: 'must be a number' };
      if (type === 'integer' && !Number.isInteger(number)) return { error: 'must be a whole number' };
      return check(schema, number, required);
    };
  } else if (type === 'string' || (type === undefined && !schema.properties && !whole)) {
    const long = (schema.maxLength || 0) > 200 || schema.format === 'textarea';
    const attrs = { id, name: path, value: text(schema.default), minlength: schema.minLength, maxlength: schema.maxLength, pattern: schema.pattern };
    input = long ? h('textarea', attrs) : h('input', { ...attrs, type: INPUT_FORMATS[schema.format] || 'text' });
    read = () => {
      const raw = input.value;
      if (raw === '') return check(schema, undefined, required);
      const value = schema.format === 'date-time' && raw && !raw.endsWith('Z') ? new Date(raw).toISOString() : raw;
      return check(schema, value, required);
    };
  } else {
    input = h('textarea', { id, name: path, class: 'mono', placeholder: 'JSON', value: schema.default === undefined ? '' : JSON.stringify(schema.default, null, 2) });
    read = () => {
      const raw = input.value.trim();
      if (raw === '') return check(schema, undefined, required);
      try { return { value: JSON.parse(raw) }; } catch (e) { return { error: `is not JSON: ${e.message}` }; }
    };
  }
  fields.push({ path, input, error, read });
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    input,
    schema.description ? h('div', { class: 'help' }, schema.description) : null,
    error);
}

/** The schema's rules on one value: `{value}` or `{error}` (a message phrased from the rule). */
function check(schema, value, required, multiple = false) {
  if (value === undefined || (multiple && value.length === 0 && required)) {
    return required ? { error: 'is required' } : { value: undefined };
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return { error: `must be at least ${schema.minimum}` };
    if (schema.maximum !== undefined && value > schema.maximum) return { error: `must be at most ${schema.maximum}` };
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return { error: `must be more than ${schema.exclusiveMinimum}` };
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return { error: `must be less than ${schema.exclusiveMaximum}` };
    if (schema.multipleOf && Math.abs(value / schema.multipleOf - Math.round(value / schema.multipleOf)) > 1e-9) return { error: `must be a multiple of ${schema.multipleOf}` };
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) return { error: `must be at least ${schema.minLength} characters` };
    if (schema.maxLength !== undefined && length > schema.maxLength) return { error: `must be at most ${schema.maxLength} characters` };
    if (schema.pattern) {
      let matches = true;
      try { matches = new RegExp(schema.pattern, 'u').test(value); } catch { /* the host checks it */ }
      if (!matches) return { error: `must match ${schema.pattern}` };
    }
  }
  if (multiple) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return { error: `choose at least ${schema.minItems}` };
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return { error: `choose at most ${schema.maxItems}` };
  }
  return { value };
}

/** A property name as a JSON Pointer token. */
function pointer(name) {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Put `value` at JSON Pointer `path` into `target`. */
function put(target, path, value) {
  const tokens = path.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (!tokens.length) { Object.assign(target, value); return; }
  let at = target;
  for (const token of tokens.slice(0, -1)) {
    if (typeof at[token] !== 'object' || at[token] === null) at[token] = {};
    at = at[token];
  }
  at[tokens[tokens.length - 1]] = value;
}
