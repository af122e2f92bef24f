// The turn suite's mock model: OpenAI chat completions on loopback, as
// test/support/scripted-llm.ts answers them. A marker in the last user message picks how:
//   (none)    at once: with `stream: true`, `chat.completion.chunk` SSE with the text in three
//             deltas, the usage on the last chunk, then `data: [DONE]`;
//   [slow]    the same, 300 ms late (a turn that is still running when a second message comes);
//   [drip]    a word a chunk, DRIP_MS apart, then the end (the usage, `[DONE]`) only once
//             `finish(content)` is called for the message, or after 10 s (a turn that runs
//             while its client drops and resumes);
//   [hold]    the first word, then nothing until `release()` (a turn that stays running).
import http from "node:http";

export const MODEL = "bench-mock-model";
export const REPLY = "Noted. This is the mock model's instant answer to your message.";
export const USAGE = { prompt_tokens: 120, completion_tokens: 14, total_tokens: 134 };
export const SLOW = "[slow]";
export const DRIP = "[drip]";
export const HOLD = "[hold]";
const DRIP_MS = 5;
const DRIP_END_TIMEOUT_MS = 10_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The body's deltas: the text in three pieces, or a word a piece. */
function deltas(words) {
  if (words) return REPLY.split(/(?<= )/);
  const third = Math.ceil(REPLY.length / 3);
  return [REPLY.slice(0, third), REPLY.slice(third, 2 * third), REPLY.slice(2 * third)];
}

/**
 * Starts the mock. Answers `{ server, counts, baseUrl, release, finish, close }`: `counts` has
 * the calls, the streamed ones and the refused ones; `release()` lets the held answers finish;
 * `finish(content)` lets the drip answer to that message end (also before it has started).
 */
export async function startMockModel() {
  const counts = { calls: 0, streamed: 0, bad: 0 };
  let released = Promise.withResolvers();
  /** The drip answers' ends, by the message's content. */
  const ends = new Map();
  const endOf = (content) => {
    if (!ends.has(content)) ends.set(content, Promise.withResolvers());
    return ends.get(content);
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        body = null;
      }
      if (req.method !== "POST" || req.url !== "/v1/chat/completions" || !Array.isArray(body?.messages)) {
        counts.bad++;
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
        return;
      }
      counts.calls++;
      const last = body.messages.at(-1);
      const said = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
      if (said.includes(SLOW)) await sleep(300);
      const id = `chatcmpl-${counts.calls}`;
      if (!body.stream) {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            id,
            object: "chat.completion",
            created: 0,
            model: body.model,
            choices: [{ index: 0, message: { role: "assistant", content: REPLY }, finish_reason: "stop" }],
            usage: USAGE,
          }),
        );
        return;
      }
      counts.streamed++;
      const chunk = (delta, finish, extra = {}) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      const pieces = deltas(said.includes(DRIP) || said.includes(HOLD)).map((content, i) =>
        chunk(i === 0 ? { role: "assistant", content } : { content }, null),
      );
      const end = chunk({}, "stop", { usage: USAGE }) + "data: [DONE]\n\n";
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      if (said.includes(HOLD)) {
        res.write(pieces[0]);
        await released.promise;
        res.end(pieces.slice(1).join("") + end);
      } else if (said.includes(DRIP)) {
        for (const piece of pieces) {
          if (res.destroyed) return;
          res.write(piece);
          await sleep(DRIP_MS);
        }
        await Promise.race([endOf(said).promise, sleep(DRIP_END_TIMEOUT_MS)]);
        ends.delete(said);
        res.end(end);
      } else {
        res.end(pieces.join("") + end);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    counts,
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    release() {
      released.resolve();
      released = Promise.withResolvers();
    },
    finish(content) {
      endOf(content).resolve();
    },
    close() {
      released.resolve();
      for (const end of ends.values()) end.resolve();
      server.closeAllConnections();
      server.close();
    },
  };
}
