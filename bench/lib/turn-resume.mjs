// The turn suite's stream measurements: how long a reconnect waits for its first replayed
// event (against a bare SSE replay), and turns whose connection drops at a random event and
// resume with Last-Event-ID, checked for gaps, duplicates and their text.
import { openSse } from "./sse-client.mjs";

/** `<turn_id>:<seq>` of an SSE id. */
export function position(id) {
  const m = /^(.+):(\d+)$/.exec(id ?? "");
  return m ? { turnId: m[1], seq: Number(m[2]) } : null;
}

const chunkOf = (event) => {
  try {
    return JSON.parse(event.data);
  } catch {
    return null;
  }
};

/** The text of a UI message stream's events: its text deltas, in the order they came. */
export const textOf = (events) =>
  events
    .map(chunkOf)
    .filter((c) => c?.type === "text-delta")
    .map((c) => c.delta)
    .join("");

/** Events read until one with an id satisfies `until` (or the stream ends); the connection is then dropped. */
export async function readUntil(sse, until) {
  const seen = [];
  for (let e = await sse.next(); e && e.data !== "[DONE]"; e = await sse.next()) {
    seen.push(e);
    if (until(e, seen)) break;
  }
  sse.drop();
  return seen;
}

/** The events as an SSE body, as the service sent them. */
export const sseBody = (events) => events.map((e) => `id: ${e.id}\ndata: ${e.data}\n\n`).join("");

/**
 * Milliseconds from sending a GET to the arrival of its first event with an id, on a new
 * connection; the rest is then read to its end, or the connection dropped (`drop`, for a stream
 * that stays open).
 */
async function firstEventMs(url, headers, drop) {
  const sse = await openSse(url, { headers });
  if (sse.status !== 200) throw new Error(`GET ${url} answered ${sse.status}: ${(await sse.text()).slice(0, 300)}`);
  const first = await sse.next();
  if (!first?.id) throw new Error(`GET ${url}: the stream's first event has no id (${first?.data})`);
  const ms = first.at - sse.started;
  if (drop) sse.drop();
  else await sse.rest();
  return ms;
}

const quantiles = (list) => {
  const s = Float64Array.from(list).sort();
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p99: at(0.99), n: s.length };
};

/**
 * Interleaved sequential samples of each series (`{ name: { url, headers, drop } }`), after a
 * warm-up of a tenth of them, so machine noise lands on every series alike. Answers p50 and p99
 * per series, in ms.
 */
export async function measureFirstEvent(series, samples) {
  const names = Object.keys(series);
  const out = Object.fromEntries(names.map((n) => [n, []]));
  const warmup = Math.ceil(samples / 10);
  for (let i = 0; i < warmup + samples; i++)
    for (const n of names) {
      const { url, headers, drop } = series[n];
      const ms = await firstEventMs(url, headers, drop);
      if (i >= warmup) out[n].push(ms);
    }
  return Object.fromEntries(names.map((n) => [n, quantiles(out[n])]));
}

/**
 * One turn streamed, its connection dropped after a random number (1 to `events`) of events,
 * then resumed with the Last-Event-ID of the last event seen and read to its end. The model's
 * answer ends only on `finish(content)`: before it, `held` events can come. A cut within them
 * resumes while the turn runs for certain (the answer ends once the resume has answered); a
 * later cut lets the answer end first. Answers the turn's id, both parts of its stream, whether
 * it was resumed while running, and what went wrong with the requests (null if nothing).
 */
async function droppedTurn({ serviceUrl, token, conversationId, content, events, held, finish, busy }) {
  const auth = { authorization: `Bearer ${token}` };
  const post = () =>
    openSse(new URL(`/v1/api/conversations/${conversationId}/messages`, serviceUrl), {
      method: "POST",
      headers: { ...auth, accept: "text/event-stream" },
      body: { content },
    });
  let posted = await post();
  // The previous turn's stream can end (its `finish` sent) a moment before the room has stored
  // and billed it and lets the next turn in: that 409 is the API's rule, so wait and post again.
  for (let tries = 0; posted.status === 409 && tries < 100; tries++) {
    busy.count++;
    await posted.text();
    await new Promise((resolve) => setTimeout(resolve, 10));
    posted = await post();
  }
  if (posted.status !== 200) {
    finish(content);
    return { error: `POST answered ${posted.status}: ${(await posted.text()).slice(0, 300)}` };
  }
  const cut = 1 + Math.floor(Math.random() * events);
  const whileRunning = cut <= held;
  if (!whileRunning) finish(content);
  const before = await readUntil(posted, (_, seen) => seen.length >= cut);
  const last = before.at(-1);
  if (!last?.id) {
    if (whileRunning) finish(content);
    return { error: `no event with an id before the drop (${last?.data})` };
  }
  const resumed = await openSse(new URL(`/v1/api/conversations/${conversationId}/stream`, serviceUrl), {
    headers: { ...auth, "last-event-id": last.id },
  });
  if (whileRunning) finish(content);
  if (resumed.status !== 200 && resumed.status !== 204)
    return { error: `the resume answered ${resumed.status}: ${(await resumed.text()).slice(0, 300)}` };
  const after = resumed.status === 200 ? await resumed.rest() : [];
  return { turnId: position(last.id).turnId, before, after, whileRunning, error: null };
}

/**
 * What a dropped-and-resumed turn's events show: seqs missing (before its `finish`, or the
 * whole tail when no `finish` came), seqs seen more than once, events of another turn, and
 * whether the text is `reply`.
 */
export function judge({ turnId, before, after }, reply) {
  const events = [...before, ...after].filter((e) => e.data !== "[DONE]");
  const seen = new Map();
  let foreign = 0;
  let finishSeq = null;
  for (const e of events) {
    const p = position(e.id);
    if (!p || p.turnId !== turnId) {
      foreign++;
      continue;
    }
    seen.set(p.seq, (seen.get(p.seq) ?? 0) + 1);
    if (chunkOf(e)?.type === "finish") finishSeq = p.seq;
  }
  let gaps = finishSeq === null ? 1 : 0;
  for (let seq = 1; seq <= (finishSeq ?? Math.max(0, ...seen.keys())); seq++) if (!seen.has(seq)) gaps++;
  const duplicates = [...seen.values()].reduce((n, count) => n + count - 1, 0);
  return { gaps, duplicates, foreign, textOk: textOf(events) === reply, events: events.length };
}

/**
 * `turns` dropped-and-resumed turns, `parallel` at a time, each lane in conversations of its
 * own (a fresh one every `perConversation` turns, from `newConversation()`), the i-th posting
 * `content(i)` and ending its answer with `finish(content)`. Answers every turn's id, verdict
 * and whether it was resumed while running, the errors of
 * requests that did not answer as a stream should, and how many posts met the previous turn
 * still settling (409, posted again).
 */
export async function dropAndResume({
  serviceUrl,
  token,
  newConversation,
  turns,
  parallel,
  perConversation,
  events,
  held,
  content,
  finish,
  reply,
}) {
  const results = [];
  const errors = [];
  const busy = { count: 0 };
  let next = 0;
  const lane = async () => {
    let conversationId = null;
    let used = 0;
    while (next < turns) {
      const text = content(next++);
      if (conversationId === null || used >= perConversation) {
        conversationId = await newConversation();
        used = 0;
      }
      used++;
      const turn = await droppedTurn({ serviceUrl, token, conversationId, content: text, events, held, finish, busy });
      if (turn.error) errors.push(turn.error);
      else results.push({ turnId: turn.turnId, whileRunning: turn.whileRunning, ...judge(turn, reply) });
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return { results, errors, busy: busy.count };
}
