// DataItems and products: the content a partner receives and produces.

/** A file carried by a DataItem: inline bytes or a URI, with an optional name and MIME type. */
export class File {
  /**
   * @param {{uri?: string, bytes?: Uint8Array, name?: string|null, mimeType?: string|null}} init
   */
  constructor({ uri, bytes, name = null, mimeType = null }) {
    if ((uri === undefined) === (bytes === undefined)) {
      throw new TypeError("a File has either a uri or bytes");
    }
    /** @type {string|null} */ this.uri = uri ?? null;
    /** @type {Uint8Array|null} */ this.bytes = bytes === undefined ? null : toBytes(bytes, "File bytes");
    /** @type {string|null} */ this.name = name;
    /** @type {string|null} */ this.mimeType = mimeType;
  }

  /** A file whose content is at `uri`. */
  static uri(uri) {
    return new File({ uri: String(uri) });
  }

  /** A file carrying `bytes` (a Uint8Array, an array of bytes, or a string encoded as UTF-8). */
  static bytes(bytes) {
    return new File({ bytes });
  }

  /** Sets the file name. */
  named(name) {
    this.name = String(name);
    return this;
  }

  /** Sets the MIME type. */
  withMimeType(mimeType) {
    this.mimeType = String(mimeType);
    return this;
  }
}

/**
 * One AIP DataItem: text, a file or a JSON object, with optional metadata (a JSON object).
 * Build one with `DataItem.text`, `DataItem.data`, `DataItem.file`, `DataItem.fileUri` or
 * `DataItem.fileBytes`.
 */
export class DataItem {
  /** @private */
  constructor(kind, value, metadata = null) {
    /** @type {"text"|"data"|"file"} */ this.kind = kind;
    /** @type {string|undefined} */ this.text = kind === "text" ? value : undefined;
    /** @type {Record<string, unknown>|undefined} */ this.data = kind === "data" ? value : undefined;
    /** @type {File|undefined} */ this.file = kind === "file" ? value : undefined;
    /** @type {Record<string, unknown>|null} */ this.metadata = metadata;
  }

  /** A text item. */
  static text(text) {
    return new DataItem("text", String(text));
  }

  /**
   * A structured data item. A plain object is used as it is; any other value `v` is wrapped as
   * `{value: v}`, because AIP data items are always objects.
   */
  static data(value) {
    return new DataItem("data", isPlainObject(value) ? value : { value });
  }

  /** A file item. */
  static file(file) {
    if (!(file instanceof File)) throw new TypeError("DataItem.file takes a File");
    return new DataItem("file", file);
  }

  /** A file item whose content is at `uri`. */
  static fileUri(uri) {
    return DataItem.file(File.uri(uri));
  }

  /** A file item carrying `bytes` inline. */
  static fileBytes(bytes) {
    return DataItem.file(File.bytes(bytes));
  }

  /** Sets the item's metadata (a plain object). */
  withMetadata(metadata) {
    if (!isPlainObject(metadata)) throw new TypeError("DataItem metadata must be a plain object");
    this.metadata = metadata;
    return this;
  }

  /** The text, if this is a text item; otherwise null. */
  asText() {
    return this.kind === "text" ? this.text : null;
  }

  /** The object, if this is a data item; otherwise null. */
  asData() {
    return this.kind === "data" ? this.data : null;
  }

  /** The file, if this is a file item; otherwise null. */
  asFile() {
    return this.kind === "file" ? this.file : null;
  }

  /**
   * The bytes this item counts for against `maxProductsBytes`, the way the host counts them: text
   * as UTF-8, file bytes as they are (a URI by its length), data as compact JSON.
   */
  contentBytes() {
    switch (this.kind) {
      case "text":
        return utf8Length(this.text);
      case "data":
        return utf8Length(JSON.stringify(this.data));
      default:
        return this.file.bytes ? this.file.bytes.length : utf8Length(this.file.uri);
    }
  }
}

/** A product (an AIP artifact): the result of a task, made of DataItems. */
export class Product {
  /** An empty product with this id; a chunk with the same id appends to or replaces it. */
  constructor(id) {
    if (typeof id !== "string" || id === "") throw new TypeError("a Product needs a non-empty string id");
    /** @type {string} */ this.id = id;
    /** @type {string|null} */ this.name = null;
    /** @type {string|null} */ this.description = null;
    /** @type {DataItem[]} */ this.dataItems = [];
  }

  /** Sets the name. */
  named(name) {
    this.name = String(name);
    return this;
  }

  /** Sets the description. */
  described(description) {
    this.description = String(description);
    return this;
  }

  /** Adds one item. */
  withItem(item) {
    this.dataItems.push(checkItem(item));
    return this;
  }

  /** Adds several items. */
  withItems(items) {
    for (const item of items) this.withItem(item);
    return this;
  }
}

/** Throws unless `item` is a DataItem; returns it. */
export function checkItem(item) {
  if (!(item instanceof DataItem)) {
    throw new TypeError(`expected a DataItem (DataItem.text(...), DataItem.data(...)), got ${describe(item)}`);
  }
  return item;
}

/** A short description of a value for error messages. */
export function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return `an object (${value.constructor?.name ?? "no prototype"})`;
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Whether `value` is a plain object (a JSON object's shape: no array, no class instance). */
export function isPlainObject(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function utf8Length(text) {
  return utf8Encode(text).length;
}

// UTF-8 by hand: QuickJS has no TextEncoder / TextDecoder.

/** The UTF-8 bytes of `text` (lone surrogates become U+FFFD). */
export function utf8Encode(text) {
  const out = [];
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(out);
}

/** `bytes` decoded as UTF-8 (malformed sequences become U+FFFD). */
export function utf8Decode(bytes) {
  let out = "";
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    let c = 0xfffd;
    let n = 1;
    const cont = (k) => i + k < bytes.length && (bytes[i + k] & 0xc0) === 0x80;
    if (b < 0x80) c = b;
    else if (b >= 0xc2 && b < 0xe0 && cont(1)) {
      c = ((b & 31) << 6) | (bytes[i + 1] & 63);
      n = 2;
    } else if (b >= 0xe0 && b < 0xf0 && cont(1) && cont(2)) {
      c = ((b & 15) << 12) | ((bytes[i + 1] & 63) << 6) | (bytes[i + 2] & 63);
      n = 3;
      if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
    } else if (b >= 0xf0 && b < 0xf5 && cont(1) && cont(2) && cont(3)) {
      c = ((b & 7) << 18) | ((bytes[i + 1] & 63) << 12) | ((bytes[i + 2] & 63) << 6) | (bytes[i + 3] & 63);
      n = 4;
      if (c < 0x10000 || c > 0x10ffff) c = 0xfffd;
    }
    out += String.fromCodePoint(c);
    i += n;
  }
  return out;
}

/** Bytes from a Uint8Array, an array of numbers, or a string (UTF-8). */
export function toBytes(value, what) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === "string") return utf8Encode(value);
  if (Array.isArray(value) || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return new Uint8Array(value);
  }
  throw new TypeError(`${what} must be a Uint8Array or a string, got ${describe(value)}`);
}

// ---- the WIT shapes (only the runtime and the testing host use these) ----

/** A DataItem as the partner world's `data-item` record. */
export function itemToWit(item) {
  checkItem(item);
  let kind;
  if (item.kind === "text") kind = { tag: "text", val: item.text };
  else if (item.kind === "data") kind = { tag: "data", val: JSON.stringify(item.data) };
  else {
    const f = item.file;
    kind = {
      tag: "file",
      val: {
        name: f.name ?? null,
        mimeType: f.mimeType ?? null,
        content: f.bytes ? { tag: "bytes", val: f.bytes } : { tag: "uri", val: f.uri },
      },
    };
  }
  return { kind, metadata: item.metadata === null ? null : JSON.stringify(item.metadata) };
}

/** A partner world `data-item` as a DataItem; throws a message when the host sent bad JSON. */
export function itemFromWit(wit) {
  const { tag, val } = wit.kind;
  let item;
  if (tag === "text") item = DataItem.text(val);
  else if (tag === "data") item = new DataItem("data", parseObject(val, "a data item"));
  else if (tag === "file") {
    const c = val.content;
    const file =
      c.tag === "bytes" ? new File({ bytes: toBytes(c.val, "file bytes") }) : new File({ uri: c.val });
    file.name = val.name ?? null;
    file.mimeType = val.mimeType ?? null;
    item = DataItem.file(file);
  } else throw new Error(`aiphost-sdk: the host sent a data item of unknown kind ${tag}`);
  if (wit.metadata !== undefined && wit.metadata !== null) {
    item.metadata = parseObject(wit.metadata, "DataItem metadata");
  }
  return item;
}

/** A Product as the partner world's `product` record. */
export function productToWit(product) {
  if (!(product instanceof Product)) {
    throw new TypeError(`expected a Product (new Product(id)), got ${describe(product)}`);
  }
  return {
    id: product.id,
    name: product.name ?? null,
    description: product.description ?? null,
    dataItems: product.dataItems.map(itemToWit),
  };
}

/** A partner world `product` as a Product (the testing host shows emitted products this way). */
export function productFromWit(wit) {
  const product = new Product(wit.id);
  product.name = wit.name ?? null;
  product.description = wit.description ?? null;
  product.dataItems = wit.dataItems.map(itemFromWit);
  return product;
}

/** Parses JSON text the host sent where the contract promises an object. */
export function parseObject(json, what) {
  let value;
  try {
    value = JSON.parse(json);
  } catch (e) {
    throw new Error(`aiphost-sdk: the host sent ${what} that is not valid JSON: ${e.message}`);
  }
  if (!isPlainObject(value)) throw new Error(`aiphost-sdk: the host sent ${what} that is not a JSON object`);
  return value;
}
