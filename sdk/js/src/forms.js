// Forms: a partner asks for structured input with a JSON Schema, and reads the answer on the next
// continue. The host checks the schema when the partner asks and the answer before the partner
// sees it; the SDK only shapes the request and finds the answer again.

import { DataItem, checkItem, describe, isPlainObject } from "./items.js";

/** The metadata kind that marks a form answer among a continue's items. */
const INPUT_ANSWER = "input-answer";

/**
 * A form: the partner asks for structured input and waits. `schema` is a JSON Schema of an object
 * (top level `"type": "object"`); the host refuses any other with `invalid-data`. Return
 * `Outcome.ask({form})` to ask with it.
 */
export class Form {
  /**
   * @param {{requestId: string, title: string, description?: string|null,
   *          schema: Record<string, unknown>}} init
   */
  constructor({ requestId, title, description = null, schema } = {}) {
    if (typeof requestId !== "string") throw new TypeError(`a Form's requestId is a string, got ${describe(requestId)}`);
    if (typeof title !== "string") throw new TypeError(`a Form's title is a string, got ${describe(title)}`);
    if (description !== null && typeof description !== "string") {
      throw new TypeError(`a Form's description is a string, got ${describe(description)}`);
    }
    // An object, not JSON text: a schema given as text is one JSON.parse away, and an object lets
    // TypeScript check the top-level `"type": "object"`.
    if (!isPlainObject(schema)) throw new TypeError(`a Form's schema is a JSON Schema object, got ${describe(schema)}`);
    /** Names the answer: 1-128 characters of `A-Z a-z 0-9 . _ -`. */ this.requestId = requestId;
    /** 1-256 bytes. */ this.title = title;
    /** At most 4 KiB, or null. */ this.description = description;
    /** The JSON Schema of the answer (an object). */ this.schema = schema;
  }
}

/** A Form from a Form or from its fields. */
export function toForm(form) {
  if (form instanceof Form) return form;
  if (!isPlainObject(form)) throw new TypeError(`expected a Form (new Form({requestId, title, schema})), got ${describe(form)}`);
  return new Form(form);
}

/** A Form as the partner world's `input-request` record. */
export function formToWit(form) {
  let schema;
  try {
    schema = JSON.stringify(form.schema);
  } catch (e) {
    throw new TypeError(`the schema of form ${form.requestId} has no JSON form: ${e.message}`);
  }
  return { requestId: form.requestId, title: form.title, description: form.description, schema };
}

/**
 * The answer to the form `requestId` among a continue's `items`: the object of the `data` item
 * whose metadata is `{"aiphost.kind": "input-answer", "requestId": requestId}`, or null when the
 * continue carries none (the Leader sent text instead, or answered another form). The host has
 * checked it against the form's schema before the partner is invoked.
 * @param {DataItem[]} items
 * @param {string} requestId
 * @returns {Record<string, unknown>|null}
 */
export function formAnswer(items, requestId) {
  for (const item of items) {
    checkItem(item);
    const meta = item.metadata;
    if (item.kind === "data" && meta?.["aiphost.kind"] === INPUT_ANSWER && meta.requestId === requestId) {
      return item.data;
    }
  }
  return null;
}

/**
 * A data item answering the form `requestId` with `values`, tagged the way the host tags it: what
 * a test sends to a partner that asked (`MockHost.answer` builds it too).
 * @param {string} requestId
 * @param {Record<string, unknown>} values
 */
export function formAnswerItem(requestId, values) {
  if (!isPlainObject(values)) throw new TypeError(`a form answer is a plain object, got ${describe(values)}`);
  return DataItem.data(values).withMetadata({ "aiphost.kind": INPUT_ANSWER, requestId: String(requestId) });
}
