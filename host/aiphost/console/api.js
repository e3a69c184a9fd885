// The host's HTTP API as the console calls it: the same public and admin routes the README
// documents, with the signed-in token as a bearer token. The token lives in sessionStorage
// (this tab only, gone when it closes), never in the URL.

const TOKEN = 'aiphost.token';

/** The signed-in token. */
export const auth = {
  get token() { return sessionStorage.getItem(TOKEN); },
  set(token) { sessionStorage.setItem(TOKEN, token); },
  clear() { sessionStorage.removeItem(TOKEN); },
};

/** A refused request: its status, the error's code and message as the host sent them. */
export class ApiError extends Error {
  constructor(status, body, text) {
    const error = body && typeof body === 'object' ? body.error : null;
    const message = (error && (error.message || error.reason)) || (typeof error === 'string' ? error : '') || text || `HTTP ${status}`;
    super(`${message}${error && error.code ? ` (${error.code})` : ''}`);
    this.status = status;
    this.code = error && error.code;
    this.body = body;
  }
}

/** Headers of a request: the token (unless `token` is null) and a JSON body's type. */
export function headers(token = auth.token, json = false) {
  const out = {};
  if (token) out.authorization = `Bearer ${token}`;
  if (json) out['content-type'] = 'application/json';
  return out;
}

/** Call `path`; its JSON answer (null for 204), or an ApiError. */
export async function api(path, { method = 'GET', body, token = auth.token, signal } = {}) {
  const response = await fetch(path, {
    method,
    headers: headers(token, body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (response.status === 204) return null;
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!response.ok) throw new ApiError(response.status, json, text);
  return json;
}

/** `/admin/...` path segments, escaped. */
export function path(...segments) {
  return segments.map((s, i) => (i === 0 ? s : encodeURIComponent(s))).join('/');
}
