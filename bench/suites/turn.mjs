// The overhead of a conversation turn. The service's POST /v1/api/conversations/{id}/messages
// runs against a mock OpenAI-compatible endpoint that answers at once, beside
// baselines/turn-baseline-worker.mjs, which calls the same mock and writes the same two
// message rows with raw D1, in its own workerd and in alternating rounds.
import http from "node:http";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { serviceConfig } from "../lib/config.mjs";
import { baselineModules, DIRECT, envNumber, ROOT, SERVICE, serviceWorker } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { applyMigrations, signup } from "../lib/seed.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 16);
const BASELINE = "bench-turn-baseline";
const MODEL = "bench-mock-model";
const REPLY = "Noted. This is the mock model's instant answer to your message.";
const USAGE = { prompt_tokens: 120, completion_tokens: 14, total_tokens: 134 };
/** A message with this marker makes the mock hold its answer back, for the 409 check. */
const SLOW = "[slow]";

/**
 * The mock model: OpenAI chat completions on loopback, answering at once. With `stream: true`
 * it streams `chat.completion.chunk` SSE (the text in three deltas, the usage on the last
 * chunk, then `data: [DONE]`), as test/support/scripted-llm.ts does. Answers the server, its
 * base URL and its counts.
 */
async function startMockModel() {
  const counts = { calls: 0, streamed: 0, bad: 0 };
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
      if (typeof last?.content === "string" && last.content.includes(SLOW))
        await new Promise((r) => setTimeout(r, 300));
      const id = `chatcmpl-${counts.calls}`;
      if (body.stream) {
        counts.streamed++;
        const chunk = (delta, finish, extra = {}) =>
          `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
        const third = Math.ceil(REPLY.length / 3);
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.end(
          chunk({ role: "assistant", content: REPLY.slice(0, third) }, null) +
            chunk({ content: REPLY.slice(third, 2 * third) }, null) +
            chunk({ content: REPLY.slice(2 * third) }, null) +
            chunk({}, "stop", { usage: USAGE }) +
            "data: [DONE]\n\n",
        );
        return;
      }
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
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, counts, baseUrl: `http://127.0.0.1:${server.address().port}/v1` };
}

async function api(url, token, method, body) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** `n` new conversations with the workspace's default agent, through the API, a few at a time. */
async function createConversations(serviceUrl, token, n) {
  const ids = [];
  const url = new URL("/v1/api/conversations", serviceUrl).href;
  for (let done = 0; done < n; done += 8) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(8, n - done) }, () => api(url, token, "POST", { title: "bench" })),
    );
    for (const r of batch) {
      if (r.status !== 201) throw new Error(`creating a conversation: ${r.status} ${JSON.stringify(r.body)}`);
      ids.push(r.body.id);
    }
  }
  return ids;
}

const turnBodyOk = (b, content) =>
  b?.user_message?.role === "user" &&
  b.user_message.content === content &&
  b.reply?.role === "assistant" &&
  b.reply.content === REPLY &&
  b.reply.usage?.input_tokens === USAGE.prompt_tokens &&
  b.reply.usage?.output_tokens === USAGE.completion_tokens;

/**
 * An autocannon target for `measureAlternating` that posts messages to `url`'s conversations.
 * Every run gets `connections` fresh conversations (created through the API before the
 * timed part), so history stays short and alike in every round. A conversation is taken
 * from the free list when a request is built and given back when its answer arrives, and
 * each connection has one request in flight: no two requests ever hit the same conversation.
 * Each run makes a fixed number of requests (sized from the previous rate), so no turn is
 * left half-done at the end of a run; it is timed from its start to its last response.
 * Every 200 adds one to `turns[name]`.
 */
function turnTarget({ name, url, serviceUrl, token, connections, turns }) {
  let free = [];
  let rate = null;
  let runStart = 0;
  let lastResponse = 0;
  let sent = 0;
  const stats = { sent: 0, ok: 0, statuses: {}, badBodies: 0, firstError: null };
  return {
    name,
    url,
    connections,
    stats,
    async prepare(seconds) {
      const amount = Math.max(connections * 4, Math.round(rate === null ? connections * 8 : rate * seconds));
      free = await createConversations(serviceUrl, token, connections);
      runStart = performance.now();
      return {
        amount,
        requests: [
          {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            setupRequest: (req, context) => {
              const conversation = free.pop();
              if (conversation === undefined) throw new Error(`${name}: two requests on one conversation`);
              context.conversation = conversation;
              context.content = `Question ${++sent} for the agent: what is on the agenda today?`;
              stats.sent++;
              return {
                ...req,
                path: `/v1/api/conversations/${conversation}/messages`,
                body: JSON.stringify({ content: context.content }),
              };
            },
            onResponse: (status, body, context) => {
              lastResponse = performance.now();
              free.push(context.conversation);
              stats.statuses[status] = (stats.statuses[status] ?? 0) + 1;
              if (status !== 200) {
                stats.firstError ??= `${status} ${body.slice(0, 300)}`;
                return;
              }
              stats.ok++;
              turns[name]++;
              let parsed = null;
              try {
                parsed = JSON.parse(body);
              } catch {}
              if (!turnBodyOk(parsed, context.content)) stats.badBodies++;
            },
          },
        ],
      };
    },
    after(result) {
      const duration = (lastResponse - runStart) / 1000;
      rate = result.requests.total / duration;
      return { ...result, duration };
    },
  };
}

export default {
  name: "turn",
  description: "a conversation turn on a mock model vs a raw D1 Worker calling the same mock",
  byDefault: false,
  async run(ctx) {
    const { check, step } = ctx;
    const bundle = ctx.bundle();
    const { server, counts: mock, baseUrl } = await startMockModel();
    try {
      const llmVars = { LLM_BASE_URL: baseUrl, LLM_API_KEY: "sk-bench", LLM_MODEL: MODEL };
      const config = serviceConfig(ROOT);
      const d1Id = config.d1Databases?.DB?.id ?? config.d1Databases?.DB;
      const mf = await ctx.start([
        serviceWorker(bundle, config, llmVars),
        {
          name: BASELINE,
          compatibilityDate: config.compatibilityDate,
          compatibilityFlags: config.compatibilityFlags,
          ...baselineModules("turn-baseline-worker.mjs"),
          d1Databases: { DB: d1Id },
          bindings: llmVars,
          unsafeDirectSockets: DIRECT,
        },
      ]);
      /** Turns answered 200 per target, warm-up and checks included: each must have stored two rows. */
      const turns = { ours: 0, baseline: 0 };
      const urls = {
        ours: (await mf.unsafeGetDirectURL(SERVICE)).href,
        baseline: (await mf.unsafeGetDirectURL(BASELINE)).href,
      };
      const db = await mf.getD1Database("DB", SERVICE);
      await applyMigrations(db, path.join(ROOT, "migrations"));
      // One workspace per target, so neither reads the other's rows; each has credits for every turn.
      const ws = { ours: await signup(urls.ours, "Turn Bench"), baseline: await signup(urls.ours, "Turn Baseline") };
      const now = new Date().toISOString();
      for (const w of Object.values(ws))
        await db
          .prepare(
            "INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at) VALUES (?, ?, 1000000000, 'adjustment', 'bench', ?)",
          )
          .bind(crypto.randomUUID(), w.workspaceId, now)
          .run();
      const messagesUrl = (base, id) => new URL(`/v1/api/conversations/${id}/messages`, base).href;

      // Each target answers a turn with the mock's text.
      for (const name of ["ours", "baseline"]) {
        const [id] = await createConversations(urls.ours, ws[name].token, 1);
        const content = "Hello, is anyone there?";
        const r = await api(messagesUrl(urls[name], id), ws[name].token, "POST", { content });
        if (
          check(
            r.status === 200 && turnBodyOk(r.body, content),
            `${name}: a turn answered ${r.status} ${JSON.stringify(r.body)}`,
          )
        )
          turns[name]++;
      }
      // Two messages at once in one conversation: one turn, one 409. The load below avoids this.
      const [busy] = await createConversations(urls.ours, ws.ours.token, 1);
      const post = (content) =>
        api(messagesUrl(urls.ours, busy), ws.ours.token, "POST", { content }).then((r) => r.status);
      const slow = post(`first ${SLOW}`);
      await new Promise((resolve) => setTimeout(resolve, 150)); // the first has claimed and waits on the mock
      const pair = [await post("second"), await slow];
      turns.ours += pair.filter((s) => s === 200).length;
      check(
        pair.join(",") === "409,200",
        `two messages at once in one conversation answered ${pair.join(", ")} (expected 200 and 409)`,
      );
      step(
        `both targets answer a turn with the mock's text; two messages at once in one conversation: ${pair.join(", ")}`,
      );

      step(
        `turn: ${ROUNDS} alternating rounds of about ${SECONDS} s, ${CONNECTIONS} connections, one conversation per connection (fresh ones every run)`,
      );
      const targets = ["ours", "baseline"].map((name) =>
        turnTarget({
          name,
          url: urls[name],
          serviceUrl: urls.ours,
          token: ws[name].token,
          connections: CONNECTIONS,
          turns,
        }),
      );
      const r = await measureAlternating(targets, { rounds: ROUNDS, seconds: SECONDS });

      // Every request answered 200 with the mock's reply; every 200 stored exactly two rows.
      for (const t of targets) {
        const s = t.stats;
        check(r[t.name].failures === 0, `${t.name}: ${r[t.name].failures} failed requests`);
        check(
          s.ok === s.sent,
          `${t.name}: ${s.sent} requests sent, ${s.ok} answered 200 (first other: ${s.firstError})`,
        );
        check(
          s.badBodies === 0,
          `${t.name}: ${s.badBodies} 200 bodies were not the stored message and the mock's reply`,
        );
        const rows = await db
          .prepare(
            `SELECT sum(role = 'user') AS user, sum(role = 'assistant') AS assistant, sum(role = 'assistant' AND content = ?2) AS replies
             FROM messages WHERE workspace_id = ?1`,
          )
          .bind(ws[t.name].workspaceId, REPLY)
          .first();
        check(
          rows.user === turns[t.name] && rows.assistant === turns[t.name] && rows.replies === turns[t.name],
          `${t.name}: ${turns[t.name]} turns answered 200 but D1 holds ${rows.user} user and ${rows.assistant} assistant messages (${rows.replies} with the mock's text)`,
        );
        step(
          `  ${t.name}: ${Math.round(r[t.name].rps)} req/s, p50 ${r[t.name].p50} ms, p99 ${r[t.name].p99} ms; statuses ${JSON.stringify(s.statuses)}; ` +
            `${turns[t.name]} turns in all, D1: ${rows.user} user + ${rows.assistant} assistant messages`,
        );
      }
      const debits = await db
        .prepare("SELECT count(*) AS n FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'usage'")
        .bind(ws.ours.workspaceId)
        .first();
      check(debits.n === turns.ours, `ours: ${turns.ours} turns but ${debits.n} debits in the ledger`);
      const expectedCalls = turns.ours + turns.baseline;
      check(
        mock.calls === expectedCalls && mock.streamed === mock.calls && mock.bad === 0,
        `the mock model had ${mock.calls} calls (${mock.streamed} streamed, ${mock.bad} refused) for ${expectedCalls} turns`,
      );
      step(`  mock model: ${mock.calls} streamed calls for ${expectedCalls} turns; ours: ${debits.n} ledger debits`);

      const ours = r.ours;
      const base = r.baseline;
      const sound = ctx.failures.length === 0;
      return [
        {
          figure: "turn, mock model (req/s)",
          ours: ours.rps,
          baseline: base.rps,
          baselineName: "raw D1 worker, same mock",
          unit: "/s",
          ratio: ours.rps / base.rps,
          target: "≥ 0.70",
          pass: ours.rps / base.rps >= 0.7,
        },
        {
          figure: "turn: our cost per request",
          ours: `${Math.round(1e6 / ours.rps - 1e6 / base.rps)} µs`,
          baseline: `${Math.round(1e6 / base.rps)} µs`,
          baselineName: "baseline's whole request",
          ratio: null,
        },
        {
          figure: "turn latency p50 (last round)",
          ours: ours.p50,
          baseline: base.p50,
          unit: "ms",
          ratio: ours.p50 / base.p50,
        },
        {
          figure: "turn latency p99 (last round)",
          ours: ours.p99,
          baseline: base.p99,
          unit: "ms",
          ratio: ours.p99 / base.p99,
        },
        {
          figure: "every turn 200, two rows each",
          ours: `${(turns.ours + turns.baseline).toLocaleString("en-US")} ok=${sound}`,
          baseline: null,
          ratio: null,
          target: "ok",
          pass: sound,
        },
      ];
    } finally {
      server.closeAllConnections();
      server.close();
    }
  },
};
