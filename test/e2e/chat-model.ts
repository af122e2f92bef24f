/**
 * A fake OpenAI-compatible model for the chat e2e tests, served from the test process. It never
 * blocks the event loop (wrangler dev's requests are answered by this same process):
 * - a question with "slowly" is answered a word every 100 ms (`SLOW`, about three seconds);
 * - a question with "remember" first calls the `remember` tool, then answers slowly;
 * - any other question gets `Answer <n>`, n counting the model calls that answered in words.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, startDevServer } from "./server";

export const SLOW = Array.from({ length: 30 }, (_, i) => `word${i + 1}`).join(" ");
export const FACT = "The user likes rivers.";

type Body = { model: string; messages: { role: string; content: unknown }[] };

export function chatModel(): Promise<{ server: Server; baseUrl: string }> {
  let answered = 0;
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as Body;
    const question = String(body.messages.findLast((m) => m.role === "user")?.content ?? "");
    const toolRan = body.messages.at(-1)?.role === "tool";
    const base = { id: "chatcmpl-e2e", object: "chat.completion.chunk", created: 0, model: body.model };
    const send = (delta: object, finish: string | null = null, extra: object = {}) =>
      res.write(
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
      );
    const usage = { usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 } };
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    let closed = false;
    res.on("close", () => (closed = true));

    if (question.includes("remember") && !toolRan) {
      const call = { index: 0, id: "call_remember", type: "function" };
      send({
        role: "assistant",
        tool_calls: [{ ...call, function: { name: "remember", arguments: JSON.stringify({ content: FACT }) } }],
      });
      send({}, "tool_calls", usage);
      res.end("data: [DONE]\n\n");
      return;
    }
    const words = question.includes("slowly") || question.includes("remember") ? SLOW.split(" ") : null;
    if (!words) {
      answered += 1;
      send({ role: "assistant", content: `Answer ${answered}` });
    } else {
      for (const [i, word] of words.entries()) {
        if (closed) return;
        send(i === 0 ? { role: "assistant", content: word } : { content: ` ${word}` });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    send({}, "stop", usage);
    res.end("data: [DONE]\n\n");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

/** `wrangler dev` on `port` with the fake model as its LLM (named `modelName`), `pageOrigin` allowed by CORS. */
export async function startChatDev(port: number, modelName: string, pageOrigin: string) {
  const fake = await chatModel();
  const dev = await startDevServer(port, {
    LLM_BASE_URL: fake.baseUrl,
    LLM_MODEL: modelName,
    LLM_API_KEY: "fake",
    CORS_ORIGINS: pageOrigin,
  });
  return { dev, model: fake.server };
}
