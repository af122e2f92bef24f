/**
 * The README's "Conversations" walkthrough, verbatim, against `wrangler dev` with a slow fake
 * model: a stream dropped after two seconds and resumed with Last-Event-ID, an idempotent
 * retry, and a stop — the rooms running in wrangler's own Durable Objects.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shBlocks } from "./readme";
import { type DevServer, readBody, startDevServer } from "./server";

const PORT = Number(process.env.E2E_CONVERSATIONS_PORT ?? 8798);
/** The fake model's answer, streamed a word every 100 ms (about four seconds). */
const RIVERS = Array.from({ length: 40 }, (_, i) => `river${i + 1}`).join(" ");
const COUNTING = Array.from({ length: 100 }, (_, i) => `${i + 1}`).join(" ");

/** Streams its answer word by word, as a slow model does. */
function slowModel(): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { model: string; messages: { role: string; content: string }[] };
    const question = body.messages.at(-1)?.content ?? "";
    const words = (question.includes("Count") ? COUNTING : RIVERS).split(" ");
    const base = { id: "chatcmpl-e2e", object: "chat.completion.chunk", created: 0, model: body.model };
    const send = (delta: object, finish: string | null, extra: object = {}) =>
      res.write(
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
      );
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    let closed = false;
    res.on("close", () => (closed = true));
    for (const [i, word] of words.entries()) {
      if (closed) return;
      send(i === 0 ? { role: "assistant", content: word } : { content: ` ${word}` }, null);
      await new Promise((r) => setTimeout(r, 100));
    }
    send({}, "stop", {
      usage: { prompt_tokens: 20, completion_tokens: words.length, total_tokens: 20 + words.length },
    });
    res.end("data: [DONE]\n\n");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

let dev: DevServer;
let model: Server;
let work: string;

/** Runs README shell text with bash, asynchronously: the fake model answers from this same process meanwhile. */
function bash(script: string): Promise<string> {
  const child = spawn("bash", ["-euo", "pipefail", "-c", script.replaceAll("http://localhost:8787", dev.origin)], {
    cwd: work,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve, reject) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`bash failed (${code}):\n${script}\n${stdout}\n${stderr}`));
    }),
  );
}

type Event = { seq: number; chunk: { type: string; delta?: string } };
const events = (sse: string): Event[] =>
  sse
    .split("\n\n")
    .map((block) => ({
      id: block.match(/^id: .*:(\d+)$/m)?.[1],
      data: block.match(/^data: (.*)$/m)?.[1],
    }))
    .filter((e) => e.id && e.data)
    .map((e) => ({ seq: Number(e.id), chunk: JSON.parse(e.data!) as Event["chunk"] }));
const textOf = (list: Event[]) =>
  list
    .filter((e) => e.chunk.type === "text-delta")
    .map((e) => e.chunk.delta)
    .join("");

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "readme-conversations-"));
  const fake = await slowModel();
  model = fake.server;
  dev = await startDevServer(PORT, { LLM_BASE_URL: fake.baseUrl, LLM_MODEL: "slow-e2e", LLM_API_KEY: "fake" });
});

afterAll(async () => {
  await dev?.stop();
  model?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("the README's Conversations walkthrough, verbatim", () => {
  it("resumes a dropped stream without gap or repeat, answers a retry from the same turn, and stops a turn", async () => {
    const [tryIt = ""] = shBlocks("## Try it");
    const [conversations = ""] = shBlocks("## Conversations");
    const out = await bash(`${tryIt}\n${conversations}`);

    const first = events(readFileSync(path.join(work, "first.sse"), "utf8"));
    const rest = events(readFileSync(path.join(work, "rest.sse"), "utf8"));
    expect(first.length).toBeGreaterThan(0);
    expect(rest.length).toBeGreaterThan(0);
    const seqs = [...first, ...rest].map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(textOf([...first, ...rest])).toBe(RIVERS);

    // Step 3 printed the stored reply of the same turn; step 4 printed the stop's answer.
    const retry = JSON.parse(out.slice(out.indexOf('{"user_message"'), out.indexOf('{"turn_id"'))) as {
      reply: { content: string };
    };
    expect(retry.reply.content).toBe(RIVERS);
    const stopped = JSON.parse(out.slice(out.indexOf('{"turn_id"'))) as { turn_id: string; state: string };
    expect(stopped.state).toBe("stopped");
    const counted = textOf(events(readFileSync(path.join(work, "counting.sse"), "utf8")));
    expect(COUNTING.startsWith(counted)).toBe(true);
    expect(counted.length).toBeLessThan(COUNTING.length);
  });
});
