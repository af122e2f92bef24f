/**
 * The official `openai` SDK, unmodified, against `wrangler dev` with a fake OpenAI-compatible
 * model served from this process: the models list, a completion plain and streamed with its
 * usage, an unknown model (the SDK's NotFoundError) and an out-of-credits workspace (402). Then
 * the script of docs/conversations.md "From the OpenAI SDK", verbatim.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fenced, section } from "./readme";
import { type DevServer, readBody, startDevServer } from "./server";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PORT = Number(process.env.E2E_OPENAI_PORT ?? 8804);
const PASSWORD = "correct horse battery";
const ANSWER = "Hello from the fake model, streamed word by word.";
/** A prompt the fake model bills a million tokens for: one turn spends a free workspace's credits. */
const EXPENSIVE = "Write me the longest essay you can.";

let dev: DevServer;
let model: Server;

/** An OpenAI-compatible model: answers `ANSWER`, streamed in words when asked, with its usage. */
function fakeModel(): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as {
      model: string;
      stream?: boolean;
      messages: { role: string; content: unknown }[];
    };
    const expensive = JSON.stringify(body.messages).includes(EXPENSIVE);
    const usage = expensive
      ? { prompt_tokens: 1_000_000, completion_tokens: 10, total_tokens: 1_000_010 }
      : { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 };
    const base = { id: "chatcmpl-fake", created: Math.floor(Date.now() / 1000), model: body.model };
    if (!body.stream) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(
        JSON.stringify({
          ...base,
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: ANSWER }, finish_reason: "stop" }],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    const send = (delta: object, finish: string | null, extra: object = {}) =>
      res.write(
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
      );
    for (const [i, word] of ANSWER.split(/(?<= )/).entries()) {
      send(i === 0 ? { role: "assistant", content: word } : { content: word }, null);
      await new Promise((r) => setTimeout(r, 10));
    }
    send({}, "stop", { usage });
    res.end("data: [DONE]\n\n");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

async function signup(name: string): Promise<string> {
  const res = await fetch(`${dev.origin}/v1/api/signup`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      workspace_name: name,
      email: `openai-${crypto.randomUUID()}@example.com`,
      password: PASSWORD,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

/** The SDK as its README shows it, pointed at this service. */
const clientFor = (apiKey: string) => new OpenAI({ baseURL: `${dev.origin}/v1`, apiKey });

beforeAll(async () => {
  const fake = await fakeModel();
  model = fake.server;
  dev = await startDevServer(PORT, { LLM_BASE_URL: fake.baseUrl, LLM_MODEL: "fake-e2e", LLM_API_KEY: "fake" });
});

afterAll(async () => {
  await dev?.stop();
  await new Promise((resolve) => model?.close(resolve));
});

describe("the openai SDK, unmodified", () => {
  it("lists the agents as models and completes a chat, plain and streamed with its usage", async () => {
    const client = clientFor(await signup("OpenAI SDK"));
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain("assistant");
    expect(models.data[0]).toMatchObject({ object: "model", owned_by: expect.any(String) });

    const plain = await client.chat.completions.create({
      model: "assistant",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hello!" },
      ],
    });
    expect(plain.object).toBe("chat.completion");
    expect(plain.choices[0]!.message).toMatchObject({ role: "assistant", content: ANSWER });
    expect(plain.choices[0]!.finish_reason).toBe("stop");
    expect(plain.usage).toEqual({ prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 });
    const conversationId = (plain as unknown as { conversation_id: string }).conversation_id;
    expect(conversationId).toMatch(/^[0-9a-f-]{36}$/);

    const stream = await client.chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "Hello again!" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let deltas = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) {
        text += choice.delta.content;
        deltas++;
      }
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(ANSWER);
    expect(deltas).toBeGreaterThan(1);
    expect(finish).toBe("stop");
    expect(usage).toEqual({ prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 });

    // The SDK's own way to send a header continues the conversation.
    const next = await client.chat.completions.create(
      { model: "assistant", messages: [{ role: "user", content: "And once more." }] },
      { headers: { "X-Conversation-Id": conversationId } },
    );
    expect((next as unknown as { conversation_id: string }).conversation_id).toBe(conversationId);
  });

  it("raises its NotFoundError for an unknown model, with OpenAI's error fields", async () => {
    const client = clientFor(await signup("OpenAI SDK unknown model"));
    const error = await client.chat.completions
      .create({ model: "gpt-4o", messages: [{ role: "user", content: "Hello!" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ status: 404, code: "model_not_found", type: "invalid_request_error" });
  });

  it("gets status 402 insufficient_credits once the workspace has spent its credits", async () => {
    const client = clientFor(await signup("OpenAI SDK out of credits"));
    await client.chat.completions.create({ model: "assistant", messages: [{ role: "user", content: EXPENSIVE }] });
    const error = await client.chat.completions
      .create({ model: "assistant", messages: [{ role: "user", content: "Hello!" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: 402, code: "insufficient_credits", type: "insufficient_quota" });
  });

  it("answers a wrong API key with its AuthenticationError", async () => {
    const error = await clientFor(`svc_pat_${"x".repeat(43)}`)
      .models.list()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: "invalid_api_key" });
  });
});

describe("Talk to an agent's From the OpenAI SDK, verbatim", () => {
  const text = section("### From the OpenAI SDK", "docs/conversations.md");

  it("runs the script the docs show with a new workspace's token and prints the agents and the answer", async () => {
    const [install = "", run = ""] = fenced(text, "sh");
    const [script = ""] = fenced(text, "js");
    expect(install.trim()).toBe("npm install openai");
    const file = /^\/\/ (\S+\.mjs)\n/.exec(script)?.[1];
    expect(file).toBe("ask.mjs");

    const work = mkdtempSync(path.join(tmpdir(), "readme-openai-"));
    try {
      // `npm install openai` is the one step not run: the test links the copy this repository
      // pins (a devDependency), so it needs no registry.
      symlinkSync(path.join(ROOT, "node_modules"), path.join(work, "node_modules"), "dir");
      writeFileSync(path.join(work, file!), script.replaceAll("http://localhost:8787", dev.origin));
      const token = await signup("README OpenAI");
      // Run asynchronously: the fake model answers from this same process meanwhile.
      const out = await new Promise<string>((resolve, reject) => {
        const child = spawn("bash", ["-euo", "pipefail", "-c", `TOKEN='${token}'\n${run}`], { cwd: work });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d) => (stderr += d));
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.once("close", (code) => {
          clearTimeout(timer);
          if (code === 0) resolve(stdout);
          else reject(new Error(`bash failed (${code}):\n${run}\n${stdout}\n${stderr}`));
        });
      });
      expect(out).toContain("'assistant'");
      expect(out).toContain(ANSWER);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
