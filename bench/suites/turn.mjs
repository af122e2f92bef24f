// A conversation turn in its ConversationRoom, on a mock model that answers at once
// (lib/mock-model.mjs), in a workerd of its own:
//   1. throughput of POST /v1/api/conversations/{id}/messages (JSON) against
//      baselines/turn-aisdk-baseline-worker.mjs (the same AI SDK streamText on the same mock,
//      the same D1 rows in one batch), target 0.8;
//   2. the same against baselines/turn-baseline-worker.mjs (raw fetch of the mock, raw D1),
//      target 0.5 (all three targets in alternating rounds);
//   3. a reconnect's wait for its first replayed event (GET …/stream with Last-Event-ID, on a
//      finished turn and on a running one) against a bare SSE replay from an object
//      (baselines/turn-replay-baseline-worker.mjs), target 5 ms more at p50;
//   4. turns whose connection drops at a random event and resume with Last-Event-ID
//      (lib/turn-resume.mjs): gaps, duplicates, their text and their debits, all checked.
import { performance } from "node:perf_hooks";
import { CPUPROFILE, inspectedWorker, samplesPer, startProfile } from "../lib/cpu-profile.mjs";
import {
  baselineModules,
  besideService,
  bundleDriver,
  d1IdOf,
  driverModules,
  envNumber,
  SERVICE,
  serviceWorker,
  wranglerConfig,
} from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { DRIP, HOLD, MODEL, REPLY, SLOW, startMockModel, USAGE } from "../lib/mock-model.mjs";
import { cpuRow, rateRow } from "../lib/report.mjs";
import { creditWorkspace, migratedDb, signup } from "../lib/seed.mjs";
import { openSse } from "../lib/sse-client.mjs";
import { dropAndResume, measureFirstEvent, position, readUntil, sseBody, textOf } from "../lib/turn-resume.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 16);
const RESUME_SAMPLES = envNumber("BENCH_RESUME_SAMPLES", 200);
const DROP_TURNS = envNumber("BENCH_DROP_TURNS", 1000);
/** Dropped turns running at a time, each lane in its own conversation, a fresh one every 20 turns. */
const DROP_PARALLEL = 8;
const DROP_PER_CONVERSATION = 20;
const AISDK = "bench-turn-aisdk-baseline";
const RAW = "bench-turn-baseline";
const REPLAY = "bench-turn-replay-baseline";
const NAMES = { ours: SERVICE, aisdk: AISDK, raw: RAW };
const TARGETS = Object.keys(NAMES);
/** The target whose isolate BENCH_CPUPROFILE profiles. */
const PROFILED = process.env.BENCH_CPUPROFILE_TARGET === "aisdk" ? "aisdk" : "ours";
/**
 * The targets the timed rounds load (`BENCH_TURN_TARGETS=ours`, a comma list): one alone, so
 * that a profile of the whole workerd process (`perf record -p <pid>`) sees only its work.
 */
const TIMED = (process.env.BENCH_TURN_TARGETS?.split(",") ?? TARGETS).filter((t) => TARGETS.includes(t));
const inspected = (target, worker) => (target === PROFILED ? inspectedWorker(worker) : worker);

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

/** What a workspace holds in D1 after its turns. */
async function rowsOf(db, workspaceId) {
  const one = (sql, ...binds) =>
    db
      .prepare(sql)
      .bind(workspaceId, ...binds)
      .first();
  const counted = await one(
    "SELECT coalesce(sum(message_count), 0) AS n, count(*) AS conversations FROM conversations WHERE workspace_id = ?1",
  );
  const d1 = await one(
    `SELECT coalesce(sum(role = 'user'), 0) AS user, coalesce(sum(role = 'assistant'), 0) AS assistant,
       coalesce(sum(role = 'assistant' AND content = ?2), 0) AS replies FROM messages WHERE workspace_id = ?1`,
    REPLY,
  );
  const debits = await one("SELECT count(*) AS n FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'usage'");
  return { messageCount: counted.n, ...d1, debits: debits.n };
}

/**
 * The rows each target must have written for `t` turns: ours counts two messages per turn in
 * the directory (the messages are in the rooms) and debits each; the AI SDK baseline writes
 * both messages, the count and the debit; the raw baseline only the messages. The audit
 * outbox rows are not counted: the service's audit delivery moves them on, the baseline's too.
 */
const EXPECTED_ROWS = {
  ours: (r, t) => r.messageCount === 2 * t && r.debits === t,
  aisdk: (r, t) => r.messageCount === 2 * t && r.user === t && r.assistant === t && r.replies === t && r.debits === t,
  raw: (r, t) => r.user === t && r.assistant === t && r.replies === t,
};

/** Every usage debit of a workspace, by reference. */
async function debitsByReference(db, workspaceId) {
  const { results } = await db
    .prepare(
      "SELECT reference, count(*) AS n FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'usage' GROUP BY reference",
    )
    .bind(workspaceId)
    .all();
  return new Map(results.map((r) => [r.reference, r.n]));
}

const ms = (x) => `${x.toFixed(2)} ms`;
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));

/**
 * The workerd of the suite: the service, the two turn baselines and the replay baseline, all
 * on the mock; D1 migrated, and a workspace with credits per target and for the dropped
 * streams, so none reads another's rows.
 */
async function start(ctx, mock) {
  const bundle = ctx.bundle();
  ctx.step("bundling the AI SDK baseline (esbuild)");
  // With the `browser` condition, as wrangler bundles the service (the AI SDK's gateway
  // dependency reads files in its Node build).
  const aisdkFile = bundleDriver("turn-aisdk-baseline-worker.mjs", ["--conditions=workerd,worker,browser"]);
  const llmVars = { LLM_BASE_URL: mock.baseUrl, LLM_API_KEY: "sk-bench", LLM_MODEL: MODEL };
  const config = wranglerConfig();
  const d1Id = d1IdOf(config);
  const common = besideService(config);
  const mf = await ctx.start([
    inspected("ours", serviceWorker(bundle, config, llmVars)),
    inspected("aisdk", {
      ...common,
      name: AISDK,
      ...driverModules(aisdkFile),
      d1Databases: { DB: d1Id },
      bindings: llmVars,
    }),
    {
      ...common,
      name: RAW,
      ...baselineModules("turn-baseline-worker.mjs"),
      d1Databases: { DB: d1Id },
      bindings: llmVars,
    },
    {
      ...common,
      name: REPLAY,
      ...baselineModules("turn-replay-baseline-worker.mjs"),
      durableObjects: { REPLAY: { className: "SseReplay", useSQLite: true } },
    },
  ]);
  const urls = {};
  for (const [target, worker] of Object.entries(NAMES)) urls[target] = (await mf.unsafeGetDirectURL(worker)).href;
  const replayUrl = (await mf.unsafeGetDirectURL(REPLAY)).href;
  const db = await migratedDb(mf);
  const ws = {};
  for (const name of [...TARGETS, "drop"]) {
    ws[name] = await signup(urls.ours, `Turn bench (${name})`);
    await creditWorkspace(db, ws[name].workspaceId);
  }
  return {
    ctx,
    mock,
    db,
    urls,
    replayUrl,
    ws,
    auth: (name) => ({ authorization: `Bearer ${ws[name].token}` }),
    messagesUrl: (base, id) => new URL(`/v1/api/conversations/${id}/messages`, base).href,
    streamUrl: (id) => new URL(`/v1/api/conversations/${id}/stream`, urls.ours).href,
    conversation: async (name) => (await createConversations(urls.ours, ws[name].token, 1))[0],
    /** Turns answered 200 per target, checks included: each must have written its rows. */
    turns: { ours: 0, aisdk: 0, raw: 0 },
  };
}

/**
 * Each target answers a turn with the mock's text, and GET shows ours in its room; two
 * messages at once in one conversation get one turn and one 409 (the load avoids that).
 * Answers ours's finished turn.
 */
async function firstTurns(b) {
  const { check, step } = b.ctx;
  let finished = null;
  const content = "Hello, is anyone there?";
  for (const name of TARGETS) {
    const id = await b.conversation(name);
    const r = await api(b.messagesUrl(b.urls[name], id), b.ws[name].token, "POST", { content });
    const ok = r.status === 200 && turnBodyOk(r.body, content);
    if (check(ok, `${name}: a turn answered ${r.status} ${JSON.stringify(r.body)}`)) b.turns[name]++;
    if (name === "ours") finished = { conversationId: id, turnId: r.body?.reply?.id };
  }
  const read = await api(
    new URL(`/v1/api/conversations/${finished.conversationId}`, b.urls.ours),
    b.ws.ours.token,
    "GET",
  );
  const stored = (read.body?.messages ?? []).map((m) => `${m.role}: ${m.content}`);
  check(
    stored.join("\n") === `user: ${content}\nassistant: ${REPLY}`,
    `GET the conversation after one turn: ${read.status} ${JSON.stringify(stored)}`,
  );
  const busy = await b.conversation("ours");
  const post = (text) =>
    api(b.messagesUrl(b.urls.ours, busy), b.ws.ours.token, "POST", { content: text }).then((r) => r.status);
  const slow = post(`first ${SLOW}`);
  await sleep(150); // the first has claimed and waits on the mock
  const pair = [await post("second"), await slow];
  b.turns.ours += pair.filter((s) => s === 200).length;
  check(
    pair.join(",") === "409,200",
    `two messages at once in one conversation answered ${pair.join(", ")} (expected 200 and 409)`,
  );
  step(
    `every target answers a turn with the mock's text; GET shows the room's two messages; two messages at once in one conversation: ${pair.join(", ")}`,
  );
  return finished;
}

/** 1 and 2: the three targets in alternating rounds; then every request's answer and rows checked. */
async function throughput(b) {
  const { check, step } = b.ctx;
  step(
    `turn: ${ROUNDS} alternating rounds of about ${SECONDS} s, ${CONNECTIONS} connections, one conversation per connection (fresh ones every run)`,
  );
  const targets = TIMED.map((name) =>
    turnTarget({
      name,
      url: b.urls[name],
      serviceUrl: b.urls.ours,
      token: b.ws[name].token,
      connections: CONNECTIONS,
      turns: b.turns,
    }),
  );
  // BENCH_CPUPROFILE: a V8 profile of the service's isolate (its rooms included), or of the AI
  // SDK Worker's with BENCH_CPUPROFILE_TARGET=aisdk, over the rounds.
  const stopProfile = await startProfile(NAMES[PROFILED]);
  const r = await measureAlternating(targets, { rounds: ROUNDS, seconds: SECONDS });
  if (CPUPROFILE) {
    const profile = await stopProfile();
    step(`  CPU profile of ${PROFILED}'s isolate in ${CPUPROFILE}: ${samplesPer(profile, b.turns[PROFILED])}`);
  }
  for (const t of targets) {
    const s = t.stats;
    check(r[t.name].failures === 0, `${t.name}: ${r[t.name].failures} failed requests`);
    check(s.ok === s.sent, `${t.name}: ${s.sent} requests sent, ${s.ok} answered 200 (first other: ${s.firstError})`);
    check(s.badBodies === 0, `${t.name}: ${s.badBodies} 200 bodies were not the user message and the mock's reply`);
    const rows = await rowsOf(b.db, b.ws[t.name].workspaceId);
    const n = b.turns[t.name];
    check(EXPECTED_ROWS[t.name](rows, n), `${t.name}: ${n} turns answered 200 but D1 holds ${JSON.stringify(rows)}`);
    step(
      `  ${t.name}: ${Math.round(r[t.name].rps)} req/s, p50 ${r[t.name].p50} ms, p99 ${r[t.name].p99} ms, ${Math.round(r[t.name].cpuUs ?? 0)} µs CPU a turn; statuses ${JSON.stringify(s.statuses)}; ` +
        `${n} turns in all; D1: message_count ${rows.messageCount}, messages ${rows.user} + ${rows.assistant}, ${rows.debits} debits`,
    );
  }
  const { calls, streamed, bad } = b.mock.counts;
  const expected = b.turns.ours + b.turns.aisdk + b.turns.raw;
  check(
    calls === expected && streamed === calls && bad === 0,
    `the mock model had ${calls} calls (${streamed} streamed, ${bad} refused) for ${expected} turns`,
  );
  step(`  mock model: ${calls} streamed calls for ${expected} turns`);
  return r;
}

/**
 * 3: a reconnect's wait for its first replayed event, on `finished` and on a turn the mock
 * holds running, each against the bare replay of the same events (copied from ours).
 */
async function resumeLatency(b, finished) {
  const { check, step } = b.ctx;
  const ours = b.auth("ours");
  const all = await openSse(b.streamUrl(finished.conversationId), {
    headers: { ...ours, "last-event-id": `${finished.turnId}:0` },
  });
  const finishedEvents = (await all.rest()).filter((e) => e.id);
  const last = finishedEvents.at(-1);
  check(
    textOf(finishedEvents) === REPLY && last && JSON.parse(last.data).type === "finish",
    `the finished turn's replay from its start: ${finishedEvents.length} events, text ${JSON.stringify(textOf(finishedEvents))}`,
  );

  const heldConversation = await b.conversation("ours");
  const held = await openSse(b.messagesUrl(b.urls.ours, heldConversation), {
    method: "POST",
    headers: { ...ours, accept: "text/event-stream" },
    body: { content: `Hold on ${HOLD}` },
  });
  const firstDelta = (e) => JSON.parse(e.data).type === "text-delta";
  const heldStart = await readUntil(held, firstDelta);
  const heldTurn = position(heldStart[0]?.id)?.turnId;
  const soFar = await readUntil(
    await openSse(b.streamUrl(heldConversation), { headers: { ...ours, "last-event-id": `${heldTurn}:0` } }),
    firstDelta,
  );
  check(
    held.status === 200 && heldTurn && soFar.length >= 2 && soFar.length === heldStart.length,
    `the held turn: POST ${held.status}, ${heldStart.length} events up to its first delta, ${soFar.length} replayed`,
  );
  for (const [name, events] of [
    ["finished", finishedEvents],
    ["running", soFar],
  ]) {
    const put = await fetch(new URL(`/replay/${name}`, b.replayUrl), { method: "PUT", body: sseBody(events) });
    check(put.status === 204, `storing the ${name} turn's events in the replay baseline: ${put.status}`);
  }

  step(
    `resume: ${RESUME_SAMPLES} interleaved samples each, a new connection per reconnect, Last-Event-ID <turn>:1 ` +
      `(finished turn: ${finishedEvents.length - 1} events to replay; running turn: ${soFar.length - 1}, then it waits)`,
  );
  const series = (url, turnId, headers, drop) => ({
    url,
    headers: { ...headers, "last-event-id": `${turnId}:1` },
    drop,
  });
  const resume = await measureFirstEvent(
    {
      finished: series(b.streamUrl(finished.conversationId), finished.turnId, ours, false),
      finishedBaseline: series(new URL("/replay/finished", b.replayUrl), finished.turnId, {}, false),
      running: series(b.streamUrl(heldConversation), heldTurn, ours, true),
      runningBaseline: series(new URL("/replay/running", b.replayUrl), heldTurn, {}, true),
    },
    RESUME_SAMPLES,
  );
  for (const name of ["finished", "running"]) {
    const [o, base] = [resume[name], resume[`${name}Baseline`]];
    step(
      `  ${name} turn: first replayed event p50 ${ms(o.p50)} (p99 ${ms(o.p99)}), bare replay p50 ${ms(base.p50)} (p99 ${ms(base.p99)})`,
    );
  }

  // The held turn ends once the mock lets go: a resume from its first event gets the rest.
  b.mock.release();
  const rest = await openSse(b.streamUrl(heldConversation), {
    headers: { ...ours, "last-event-id": heldStart[0].id },
  });
  const heldText = textOf([heldStart[0], ...(await rest.rest())]);
  check(heldText === REPLY, `the held turn, resumed after its release: ${JSON.stringify(heldText)}`);
  return resume;
}

/**
 * 4: DROP_TURNS turns on a mock that streams word by word, each dropped at a random event and
 * resumed with Last-Event-ID; any gap, duplicate, wrong text, or debit count other than one
 * per turn fails the run.
 */
async function droppedStreams(b) {
  const { check, step } = b.ctx;
  const content = (i) => `Word by word ${DRIP} (turn ${i})`;
  b.mock.finish(content("whole"));
  const whole = await openSse(b.messagesUrl(b.urls.ours, await b.conversation("drop")), {
    method: "POST",
    headers: { ...b.auth("drop"), accept: "text/event-stream" },
    body: { content: content("whole") },
  });
  const wholeEvents = (await whole.rest()).filter((e) => e.id);
  check(
    whole.status === 200 && textOf(wholeEvents) === REPLY,
    `a word-by-word turn streamed whole: ${whole.status}, ${JSON.stringify(textOf(wholeEvents))}`,
  );
  // The events before the model's answer ends: up to its last text delta.
  const held = wholeEvents.findLastIndex((e) => JSON.parse(e.data).type === "text-delta") + 1;
  step(
    `dropped streams: ${DROP_TURNS} turns, ${DROP_PARALLEL} at a time, each cut after 1 to ${wholeEvents.length} of its events (at random) ` +
      `and resumed with Last-Event-ID; a cut within the first ${held} resumes while the turn runs`,
  );
  const started = performance.now();
  const dropped = await dropAndResume({
    serviceUrl: b.urls.ours,
    token: b.ws.drop.token,
    newConversation: () => b.conversation("drop"),
    turns: DROP_TURNS,
    parallel: DROP_PARALLEL,
    perConversation: DROP_PER_CONVERSATION,
    events: wholeEvents.length,
    held,
    content,
    finish: b.mock.finish,
    reply: REPLY,
  });
  const seconds = (performance.now() - started) / 1000;

  const turnIds = new Set([position(wholeEvents[0]?.id)?.turnId, ...dropped.results.map((t) => t.turnId)]);
  const workspaceId = b.ws.drop.workspaceId;
  // A turn is billed when it is stored, which can come after its stream's last event.
  let debits = await debitsByReference(b.db, workspaceId);
  for (let waited = 0; waited < 15_000 && [...turnIds].some((id) => !debits.has(id)); waited += 250) {
    await sleep(250);
    debits = await debitsByReference(b.db, workspaceId);
  }
  const sum = (key) => dropped.results.reduce((n, t) => n + t[key], 0);
  const ids = [...turnIds];
  const counts = {
    turns: dropped.results.length,
    gaps: sum("gaps"),
    duplicates: sum("duplicates"),
    foreign: sum("foreign"),
    wrongTexts: dropped.results.filter((t) => !t.textOk).length,
    whileRunning: dropped.results.filter((t) => t.whileRunning).length,
    debited: ids.length,
    oneDebit: ids.filter((id) => debits.get(id) === 1).length,
    noDebit: ids.filter((id) => !debits.has(id)).length,
    extraDebits: ids.filter((id) => debits.get(id) > 1).length,
    strayDebits: [...debits.keys()].filter((ref) => !turnIds.has(ref)).length,
  };
  counts.ok =
    counts.gaps + counts.duplicates + counts.foreign + counts.wrongTexts + counts.strayDebits === 0 &&
    counts.oneDebit === counts.debited;
  const rows = await rowsOf(b.db, workspaceId);

  check(
    dropped.errors.length === 0,
    `dropped streams: ${dropped.errors.length} requests failed, first: ${dropped.errors[0]}`,
  );
  check(counts.turns === DROP_TURNS, `dropped streams: ${counts.turns} of ${DROP_TURNS} turns checked`);
  check(counts.gaps === 0, `dropped streams: ${counts.gaps} missing events`);
  check(counts.duplicates === 0, `dropped streams: ${counts.duplicates} events seen twice`);
  check(counts.foreign === 0, `dropped streams: ${counts.foreign} events without the turn's id`);
  check(counts.wrongTexts === 0, `dropped streams: ${counts.wrongTexts} texts differ from the mock's reply`);
  check(
    counts.oneDebit === counts.debited && counts.strayDebits === 0,
    `dropped streams: of ${counts.debited} turns ${counts.oneDebit} have one debit, ${counts.noDebit} none, ` +
      `${counts.extraDebits} more than one; ${counts.strayDebits} debits of no turn`,
  );
  check(
    rows.messageCount === 2 * counts.debited,
    `dropped streams: ${counts.debited} turns but message_count ${rows.messageCount}`,
  );
  step(
    `  ${counts.turns} turns in ${seconds.toFixed(1)} s, ${counts.whileRunning} of them resumed while running: ${counts.gaps} gaps, ${counts.duplicates} duplicates, ` +
      `${counts.wrongTexts} wrong texts, ${counts.foreign} foreign events; debits: ${counts.oneDebit} turns with one, ` +
      `${counts.noDebit} with none, ${counts.extraDebits} with more, ${counts.strayDebits} stray; ` +
      `message_count ${rows.messageCount}; ${dropped.busy} posts met the previous turn still settling (409, posted again)`,
  );
  return counts;
}

/** The table's rows. */
function figures({ r, resume, dropped, turns, sound }) {
  const ours = r.ours;
  const versus = (base, baselineName, target) => [
    rateRow(`turn vs ${baselineName} (req/s)`, ours, base, baselineName, target),
    {
      figure: `turn p50 vs ${baselineName} (its p50 / ours)`,
      ours: ours.p50,
      baseline: base.p50,
      unit: "ms",
      ratio: base.p50 / ours.p50,
      target: `≥ ${target.toFixed(2)}`,
      pass: base.p50 / ours.p50 >= target,
    },
    // The workerd process's CPU per turn moves far less with other processes' load than req/s.
    cpuRow(`turn CPU vs ${baselineName} (its CPU / ours)`, ours, base, baselineName, target),
  ];
  const resumeRow = (name) => {
    const [o, base] = [resume[name], resume[`${name}Baseline`]];
    return {
      figure: `resume, ${name} turn: first event p50 overhead`,
      ours: `${ms(o.p50 - base.p50)} (p50 ${ms(o.p50)})`,
      baseline: base.p50,
      baselineName: "bare SSE replay from an object",
      unit: "ms",
      ratio: o.p50 / base.p50,
      target: "≤ 5 ms",
      pass: o.p50 - base.p50 <= 5,
    };
  };
  return [
    ...(ours && r.aisdk ? versus(r.aisdk, "AI SDK worker", 0.8) : []),
    ...(ours && r.raw ? versus(r.raw, "raw-fetch worker", 0.5) : []),
    ours &&
      r.aisdk && {
        figure: "turn: our cost per request",
        ours: `${Math.round(1e6 / ours.rps - 1e6 / r.aisdk.rps)} µs`,
        baseline: `${Math.round(1e6 / r.aisdk.rps)} µs`,
        baselineName: "AI SDK worker's whole request",
        ratio: null,
      },
    resumeRow("finished"),
    resumeRow("running"),
    {
      figure: `dropped + resumed streams (${dropped.turns} turns)`,
      ours: `${dropped.gaps} gaps, ${dropped.duplicates} dup, ${dropped.wrongTexts} wrong text, ${dropped.oneDebit}/${dropped.debited} one debit`,
      baseline: null,
      ratio: null,
      target: "none; 1 debit each",
      pass: dropped.ok,
    },
    {
      figure: "every turn 200, its rows written",
      ours: `${(turns.ours + turns.aisdk + turns.raw).toLocaleString("en-US")} ok=${sound}`,
      baseline: null,
      ratio: null,
      target: "ok",
      pass: sound,
    },
  ].filter(Boolean);
}

export default {
  name: "turn",
  description: "a turn in its room vs AI SDK and raw Workers on the same mock; resume latency; dropped streams",
  byDefault: false,
  async run(ctx) {
    const mock = await startMockModel();
    try {
      const b = await start(ctx, mock);
      const finished = await firstTurns(b);
      const r = await throughput(b);
      const resume = await resumeLatency(b, finished);
      const dropped = await droppedStreams(b);
      return figures({ r, resume, dropped, turns: b.turns, sound: ctx.failures.length === 0 });
    } finally {
      mock.close();
    }
  },
};
