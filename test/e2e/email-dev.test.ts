/**
 * Mail to a fresh workspace's `team` mailbox through `wrangler dev`'s local email endpoint
 * (`POST /cdn-cgi/handler/email?from=…&to=…` with the raw message), triaged on the local
 * queue with a fake OpenAI-compatible model, until the draft waits in the review queue.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, readBody, signupToken, startDevServer } from "./server";

const PORT = Number(process.env.E2E_EMAIL_PORT ?? 8797);
const DRAFT = "Thank you, your order ships on Friday.";

let dev: DevServer;
let model: Server;

/** Triage requests ask for a JSON schema (`response_format`): they get a verdict; the draft gets text. */
function fakeModel(): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { model: string; stream?: boolean; response_format?: unknown };
    const content = body.response_format
      ? JSON.stringify({ category: "question", summary: "Asks about an order", language: "en", spam_score: 0.01 })
      : DRAFT;
    const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
    const base = { id: "chatcmpl-e2e", created: Math.floor(Date.now() / 1000), model: body.model };
    if (body.stream) {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content }, finish_reason: null }] })}\n\n`,
      );
      res.write(
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage })}\n\n`,
      );
      res.end("data: [DONE]\n\n");
      return;
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage,
      }),
    );
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

beforeAll(async () => {
  const fake = await fakeModel();
  model = fake.server;
  dev = await startDevServer(PORT, { LLM_BASE_URL: fake.baseUrl, LLM_MODEL: "fake-e2e", LLM_API_KEY: "fake" });
}, 150_000);

afterAll(async () => {
  await dev?.stop();
  model?.close();
});

describe("email through wrangler dev", () => {
  it("mails the team mailbox of a fresh workspace and finds the draft in the review queue", async () => {
    const token = await signupToken(dev.origin, "Mail Co");
    const auth = { Authorization: `Bearer ${token}` };
    const list = (await (await fetch(`${dev.origin}/v1/api/email/endpoints`, { headers: auth })).json()) as {
      endpoints: { address: string; is_system: boolean }[];
    };
    const to = list.endpoints.find((e) => e.is_system)!.address;

    const raw = [
      "From: Ada <ada@customer.test>",
      `To: ${to}`,
      "Subject: Order 1042",
      `Message-ID: <e2e-${Date.now()}@customer.test>`,
      "Content-Type: text/plain; charset=utf-8",
      "",
      "When will order 1042 ship?",
    ].join("\r\n");
    const res = await fetch(
      `${dev.origin}/cdn-cgi/handler/email?${new URLSearchParams({ from: "ada@customer.test", to })}`,
      { method: "POST", body: raw },
    );
    expect(res.status, dev.output()).toBeLessThan(300);

    const deadline = Date.now() + 60_000;
    let rows: { handling_state: string; body?: string; subject?: string }[] = [];
    while (Date.now() < deadline) {
      const replies = await fetch(`${dev.origin}/v1/api/email/replies`, { headers: auth });
      rows = ((await replies.json()) as { rows: typeof rows }).rows;
      if (rows.length) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(rows, dev.output()).toHaveLength(1);
    expect(rows[0]).toMatchObject({ handling_state: "awaiting_review", body: DRAFT, subject: "Order 1042" });
  }, 120_000);
});
