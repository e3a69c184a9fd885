// Server-sent events read over fetch(): EventSource cannot send an Authorization header, and
// the chat door answers a POST with its stream, so the console reads `text/event-stream`
// itself — the parsing rules of the HTML standard's "event stream interpretation": lines end
// in CR, LF or CRLF; `event`, `data` (joined with LF), `id`; a line from ':' is a comment; an
// empty line dispatches; a frame without data is not dispatched.

/** Each event of a `text/event-stream` response, as `{event, data, id}`. */
export async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let frame = { event: '', data: [], id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (;;) {
      const end = buffer.search(/[\r\n]/);
      if (end < 0) break;
      // A CR at the buffer's end may be the first half of a CRLF: wait for the next chunk.
      if (buffer[end] === '\r' && end === buffer.length - 1) break;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer[end] === '\r' && buffer[end + 1] === '\n' ? 2 : 1));
      if (line === '') {
        if (frame.data.length) yield { event: frame.event || 'message', data: frame.data.join('\n'), id: frame.id };
        frame = { event: '', data: [], id: frame.id };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? '' : line.slice(colon + 1);
      if (text.startsWith(' ')) text = text.slice(1);
      if (field === 'event') frame.event = text;
      else if (field === 'data') frame.data.push(text);
      else if (field === 'id' && !text.includes('\0')) frame.id = text;
    }
  }
}

/**
 * Follow a GET event stream until `signal` aborts: reconnects after a dropped connection with
 * `Last-Event-ID`, so nothing is shown twice or lost. `onEvent({event, data, id})` for each;
 * `onState('open'|'retrying'|'closed'|'error', detail)`. A refusal (4xx) ends it; the stream
 * ending on its own (the host said all: `end`) too, when `until(event)` says so.
 */
export async function follow(url, { headers = {}, signal, onEvent, onState = () => {}, until = () => false }) {
  let lastId = null;
  let delay = 500;
  while (!signal.aborted) {
    try {
      const response = await fetch(url, {
        headers: { ...headers, accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
        signal,
      });
      if (!response.ok) {
        let message = `HTTP ${response.status}`;
        try { const body = await response.json(); message = body.error?.message || message; } catch { /* not JSON */ }
        onState('error', message);
        if (response.status < 500 && response.status !== 429) return;
      } else {
        onState('open');
        delay = 500;
        for await (const event of events(response)) {
          if (event.id !== null) lastId = event.id;
          onEvent(event);
          if (until(event)) { onState('closed'); return; }
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      onState('retrying', error.message);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 8000);
    if (!signal.aborted) onState('retrying');
  }
}
